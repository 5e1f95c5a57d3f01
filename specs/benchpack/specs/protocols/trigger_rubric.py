"""trigger_rubric: the hidden scenario with its anchors, trigger points with prospective
rubrics, and authored dialogues for offline replay."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..base import Id, Spec

NAME = "trigger_rubric"
SESSION_FIELDS: tuple[str, ...] = ("scenario", "triggers", "request_discloses")
"""Session keys that belong to this protocol (another protocol's session giving one is E204)."""


class Rubric(Spec):
    """Prospective scoring criteria, written before any response exists."""

    pass_: str = Field(alias="pass")
    """What earns Pass (1.0)."""
    partial: str
    """What earns Partial (0.5)."""
    fail: str
    """What earns Fail (0.0)."""


class Anchor(Spec):
    """A factual detail the user discloses that creates an inferential opportunity."""

    id: Id
    """Identifier referenced by trigger points and dialogue turns."""
    text: str
    """The detail (Jinja)."""
    primary: bool = True
    """Primary anchors are disclosed at most one per user turn."""


class Scenario(Spec):
    """The hidden structure of a trigger-rubric dialogue."""

    hidden_goal: str
    """What the user ultimately wants; never disclosed to the assistant."""
    anchors: list[Anchor] = Field(default_factory=list)
    """Details the user drips into the conversation."""
    proactive_subtasks: list[str] = Field(default_factory=list)
    """What a fully proactive assistant would anticipate (guides the planner)."""


class TriggerPoint(Spec):
    """A turn whose assistant response is scored against a prospective rubric."""

    id: Id | None = None
    """Identifier (default `t<turn>`)."""
    type: Literal["emergent", "critical", "recovery"]
    """Emergent (turns 1–3: one anchor), Critical (4–7: synthesis of ≥ 2 anchors), Recovery
    (8–10: forward value after the user signals completion)."""
    turn: int = Field(ge=1, le=100)
    """The user turn whose response is scored."""
    anchors: list[str] = Field(default_factory=list)
    """Anchor ids disclosed by this turn that the rubric relies on."""
    rubric: Rubric
    """Pass / partial / fail criteria."""


class DialogueTurn(Spec):
    """One authored turn of a fixed dialogue, replayed offline."""

    turn: int = Field(ge=1)
    """Turn number, starting at 1."""
    user: str
    """The user message (Jinja)."""
    assistant: str | None = None
    """The reference assistant response (regenerated at trigger turns in offline mode)."""
    discloses: list[str] = Field(default_factory=list)
    """Anchor ids this user message discloses."""
