"""Protocol compile steps: one module per protocol, the same name as its pack-language models
(`benchpack.specs.protocols.<name>`) and its runtime interpreter
(`benchpack.runtime.protocols.<name>`). Each module defines `COMPILER`
(a `ProtocolCompiler`); the `Builder` consults `PROTOCOL_COMPILERS` for default limits, the
opening request, the session's plan material and checks that need the episode order."""

from __future__ import annotations

from benchpack.specs.protocols import SESSION_FIELDS

from . import (
    instructed_user,
    intent_tracking,
    staged_disclosure,
    trigger_rubric,
    verified_outcome,
)
from .base import ProtocolCompiler

PROTOCOL_COMPILERS: dict[str, ProtocolCompiler] = {
    c.name: c for c in (intent_tracking.COMPILER, staged_disclosure.COMPILER,
                        trigger_rubric.COMPILER, verified_outcome.COMPILER,
                        instructed_user.COMPILER)
}

SESSION_FIELD_OWNERS: dict[str, tuple[str, ...]] = {
    key: tuple(name for name, keys in SESSION_FIELDS.items() if key in keys)
    for key in dict.fromkeys(k for keys in SESSION_FIELDS.values() for k in keys)}
"""Session key → the protocols it belongs to (`score:` serves verified_outcome and
instructed_user alike)."""

SESSION_KEY_ORDER: tuple[str, ...] = (
    "hidden_intents", "stages", "scenario", "triggers", "dialogue", "checklist", "graph", "verify")
"""Where the existing protocols' keys sit in a compiled session (plans are written in insertion
order and must stay byte for byte); a new protocol's keys follow them."""

__all__ = ["PROTOCOL_COMPILERS", "SESSION_FIELD_OWNERS", "SESSION_KEY_ORDER", "ProtocolCompiler"]
