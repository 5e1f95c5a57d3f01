"""verified_outcome: how a session is scored: from its checklist (`verify`: threshold, weights,
caps) or by a `score` block (`benchpack.specs.scoring.Score`: graded items, gates, caps,
dimensions, formula)."""

from __future__ import annotations

from pydantic import Field

from ..base import Id, Spec
from ..checklist import Assertion

NAME = "verified_outcome"
SESSION_FIELDS: tuple[str, ...] = ("verify", "score")
"""Session keys that belong to this protocol (another protocol's session giving one is E204)."""


class ScoreCap(Spec):
    """A safety rule: when its check holds, the soft score is capped."""

    id: Id | None = None
    """Identifier (default `cap1`…)."""
    when: Assertion
    """The condition, e.g. a forbidden tool was called. Here a call counts even when it failed
    (trying is the harm), unless the check says `successful: true`."""
    cap: float = Field(default=0.0, ge=0, le=1)
    """Maximum score when the condition holds."""
    reason: str
    """Why, shown in reports."""


class Verify(Spec):
    """How a verified-outcome session is scored from its checklist."""

    pass_threshold: float = Field(default=0.75, gt=0, le=1)
    """Soft score needed to pass."""
    outcome_weight: float = Field(default=0.7, ge=0.5, le=1)
    """Share of the soft score from `outcome` items; `process` items get the rest."""
    caps: list[ScoreCap] = Field(default_factory=list)
    """Safety caps."""
