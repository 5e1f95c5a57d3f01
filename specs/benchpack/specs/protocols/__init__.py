"""Protocol registry of the pack language: one module per protocol, same name as its compiler
step (`benchpack.compiler.protocols.<name>`) and its runtime interpreter
(`benchpack.runtime.protocols.<name>`).

A protocol module holds the author-facing models of its session material and declares
`NAME` and `SESSION_FIELDS` (the `Session` keys it owns). Adding a protocol: write the module,
list it in `_MODULES` below, add its keys to `Session` in `pack.py`; or install it as a plug-in
(`benchpack.specs.plugins`), which touches no file here.

`pack.py` takes the protocols' models and prompt names from here, so that the core of the
pack language names no protocol.
"""

from __future__ import annotations

from types import ModuleType

from . import (
    instructed_user,
    intent_tracking,
    staged_disclosure,
    trigger_rubric,
    verified_outcome,
)
from .instructed_user import Conversation, Gold, Instruction, UserScenario
from .intent_tracking import HiddenIntent
from .staged_disclosure import GroundTruthGraph, GroundTruthTriple, Stage, StageTrigger
from .trigger_rubric import Anchor, DialogueTurn, Rubric, Scenario, TriggerPoint
from .verified_outcome import ScoreCap, Verify

_MODULES: tuple[ModuleType, ...] = (intent_tracking, staged_disclosure, trigger_rubric,
                                    verified_outcome, instructed_user)

PROTOCOLS: tuple[str, ...] = tuple(m.NAME for m in _MODULES)
"""Protocol names, in the order the JSON Schema lists them."""
SESSION_FIELDS: dict[str, tuple[str, ...]] = {m.NAME: m.SESSION_FIELDS for m in _MODULES}
"""Protocol name → the session keys that belong to it."""

PROMPT_NAMES: tuple[str, ...] = (
    "intent_tracking.completion_check",
    "intent_tracking.clarification_check",
    "intent_tracking.user_turn",
    "staged_disclosure.user",
    "staged_disclosure.extract_graph",
    "staged_disclosure.graph_judge",
    "trigger_rubric.planner",
    "trigger_rubric.user",
    "trigger_rubric.judge",
    "checklist.rubric_judge",
    "verified_outcome.rubric_judge",
    "heartbeat.wake",
    "verified_outcome.score_judge",
    "instructed_user.user_turn",
    "instructed_user.user_system",
    "instructed_user.assertions_judge",
)
"""Prompt template names a pack may override (`prompts:`), in the order the JSON Schema lists
them (the order they were added in, hence the shared ones among the protocols')."""

__all__ = ["PROMPT_NAMES", "PROTOCOLS", "SESSION_FIELDS", "Anchor", "Conversation",
           "DialogueTurn", "Gold", "GroundTruthGraph", "GroundTruthTriple", "HiddenIntent",
           "Instruction", "Rubric", "Scenario", "ScoreCap", "Stage", "StageTrigger",
           "TriggerPoint", "UserScenario", "Verify"]
