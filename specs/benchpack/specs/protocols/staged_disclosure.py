"""staged_disclosure: disclosure stages of the simulated user and the ground-truth graph."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..base import Id, Spec

NAME = "staged_disclosure"
SESSION_FIELDS: tuple[str, ...] = ("stages", "graph")
"""Session keys that belong to this protocol (another protocol's session giving one is E204)."""


class StageTrigger(Spec):
    """When a disclosure stage fires."""

    kind: Literal["start", "mentions", "asks", "milestone"]
    """`start` (the conversation begins), `mentions` (the assistant's reply mentions or
    contains X), `asks` (the assistant proactively asks about X), `milestone` (the assistant
    reaches milestone X)."""
    about: str | None = None
    """X: what must be mentioned, asked about, or achieved (required unless `start`)."""


class Stage(Spec):
    """One step of staged disclosure (VibeSearch-style simulator)."""

    id: Id | None = None
    """Identifier (default `st1`, `st2`…)."""
    title: str | None = None
    """Short label for reports."""
    when: StageTrigger
    """Trigger condition."""
    line: str
    """What the user says when the trigger is met (Jinja)."""
    otherwise: str | None = None
    """How the user pushes when the trigger is not met, without leaking the stage."""


class GroundTruthTriple(Spec):
    """A ground-truth fact."""

    head: str
    relation: str
    tail: str
    dimension: str | None = None
    """Optional grouping (theme, filtering layer)."""


class GroundTruthGraph(Spec):
    """The knowledge graph a search session should uncover."""

    triples: list[GroundTruthTriple | tuple[str, str, str]] = Field(default_factory=list)
    """Triples as objects or `[head, relation, tail]` lists."""
    file: str | None = None
    """Triples from a JSON file (`[{head, relation, tail}]` or `{triplets: [...]}`) or a TSV."""
    batch_size: int = Field(default=25, ge=1, le=500)
    """Ground-truth triples per judge call."""
