"""instructed_user (τ²-bench-style users): the scenario the user simulator follows, the gold
actions a correct agent makes, and how the session is scored (pass/fail reward)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..base import Spec
from ..scoring import Gold, Score

NAME = "instructed_user"
SESSION_FIELDS: tuple[str, ...] = ("user", "gold", "score")
"""Session keys that belong to this protocol (another protocol's session giving one is E204)."""

StopSignal = Literal["done", "transfer", "out_of_scope"]


class Instruction(Spec):
    """A conditional instruction the user follows (τ²'s `task_instructions`, made checkable by
    the deterministic `rules` simulator). Give `if` (words of the agent's message), `after_turn`,
    or both (either triggers it); each instruction is applied once."""

    if_: list[str] | None = Field(default=None, alias="if")
    """Words or phrases: the instruction applies when the agent's last message contains any of
    them (case-insensitive; Chinese works)."""
    after_turn: int | None = Field(default=None, ge=1)
    """Applies once the agent has answered this many times (a new request mid-dialogue)."""
    say: str
    """What the user says then (Jinja)."""
    stop: StopSignal | None = None
    """End the dialogue with this stop signal after saying it."""

    @model_validator(mode="after")
    def _condition(self) -> Instruction:
        if self.if_ is None and self.after_turn is None:
            raise ValueError("give `if: [words…]` or `after_turn: N` (or write the instruction "
                             "as plain text for the LLM simulator)")
        if self.if_ is not None and (not self.if_ or any(not w.strip() for w in self.if_)):
            raise ValueError("`if` needs non-empty words")
        return self


class UserScenario(Spec):
    """The scenario the user simulator follows (τ²'s `user_scenario.instructions`)."""

    reason: str = Field(min_length=1)
    """Why the user contacts the agent; the simulator opens the dialogue with it (Jinja)."""
    known: list[str] = Field(default_factory=list)
    """What the user knows and may tell when asked (Jinja)."""
    unknown: list[str] = Field(default_factory=list)
    """What the user does not know: asked about it, they say so (Jinja)."""
    instructions: list[str | Instruction] = Field(default_factory=list)
    """Conditional instructions in order: plain text (the LLM simulator follows it) or
    `{if: [words], say: …}` / `{after_turn: N, say: …, stop: done}` (every simulator)."""
    language: str | None = None
    """The user's language (BCP-47, e.g. `en`, `zh`); default: the session's metadata."""

    @field_validator("known", "unknown")
    @classmethod
    def _non_empty(cls, v: list[str]) -> list[str]:
        if any(not s.strip() for s in v):
            raise ValueError("entries cannot be empty")
        return v


__all__ = ["NAME", "SESSION_FIELDS", "Gold", "Instruction", "Score", "StopSignal",
           "UserScenario"]
