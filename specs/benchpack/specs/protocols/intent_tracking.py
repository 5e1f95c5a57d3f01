"""intent_tracking: the hidden intents a user holds but never states up front."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..base import Id, Spec

NAME = "intent_tracking"
SESSION_FIELDS: tuple[str, ...] = ("hidden_intents",)
"""Session keys that belong to this protocol (another protocol's session giving one is E204)."""


class HiddenIntent(Spec):
    """A requirement the user holds but never states up front (intent tracking)."""

    id: Id | None = None
    """Identifier (default `i1`, `i2`… in order)."""
    text: str
    """The requirement, precise enough to judge completion against (Jinja)."""
    scope: Literal["session", "persistent"] = "session"
    """`persistent` intents carry across sessions; they need supporting evidence in earlier
    sessions or the workspace."""
    reveal: str | None = None
    """What the user says when they must provide it (default: the simulator phrases it)."""
    evidence: list[str] = Field(default_factory=list)
    """Where a persistent intent can be recovered from: earlier session ids of the episode or
    workspace file paths."""
