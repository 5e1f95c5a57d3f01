"""Simulated users: personas, profiles and communication styles."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from .base import Id, Spec, StyleCode

# Communication style traits (Communication Styles Inventory), letter -> name.
STYLE_TRAITS: dict[str, str] = {
    "E": "expressiveness",
    "P": "preciseness",
    "V": "verbal_aggressiveness",
    "Q": "questioningness",
    "M": "emotionality",
    "I": "impression_manipulativeness",
}
TRAIT_ORDER = "EPVQMI"

# The 24 trait combinations that stay natural and distinguishable in short dialogues
# (ProactBench appendix C). Others combine conflicting registers: P with E, V or M.
COHERENT_STYLES: tuple[str, ...] = (
    "NONE", "I", "M", "Q", "Q+I", "Q+M", "V", "V+M", "V+Q", "V+Q+M",
    "P", "P+I", "P+Q", "P+Q+I",
    "E", "E+I", "E+M", "E+Q", "E+Q+I", "E+Q+M", "E+V", "E+V+M", "E+V+Q", "E+V+Q+M",
)  # fmt: skip


def normalise_style(code: str) -> str:
    """Canonical form of a style code: trait letters in E,P,V,Q,M,I order joined by '+'."""
    if code == "NONE":
        return code
    letters = {c for c in re.split(r"\++", code) if c}
    return "+".join(c for c in TRAIT_ORDER if c in letters) or "NONE"


# --------------------------------------------------------------------------- personas


class CommunicationStyle(Spec):
    """How the simulated user writes. Six binary traits from the Communication Styles Inventory:
    E expressiveness, P preciseness, V verbal aggressiveness, Q questioningness, M emotionality,
    I impression manipulativeness. Styles with E are chatty (40–100 words a message), others
    terse (5–25 words)."""

    code: StyleCode = "NONE"
    """Trait letters joined by `+`, e.g. `E+Q+M`, or `NONE` for a neutral style."""
    min_words: int | None = Field(default=None, ge=1, le=1000)
    """Override the lower word bound of the length rule."""
    max_words: int | None = Field(default=None, ge=1, le=2000)
    """Override the upper word bound of the length rule."""
    directives: list[str] = Field(default_factory=list)
    """Extra behaviour directives for the user simulator, added to the per-trait ones."""


class PersonaProfile(Spec):
    """The stable part of a persona."""

    role: str
    """Who the user is: occupation, situation, expertise (Markdown allowed)."""
    routines: list[str] = Field(default_factory=list)
    """Recurring activities and working habits."""
    preferences: list[str] = Field(default_factory=list)
    """Stable preferences (format, tone, conventions)."""
    constraints: list[str] = Field(default_factory=list)
    """Hard constraints: budget, professional limits, ethics."""
    long_term_goals: list[str] = Field(default_factory=list)
    """Goals that outlive a single session."""
    language: str = "en"
    """Language the user writes in."""


class Persona(Spec):
    """A simulated user."""

    id: Id
    """Identifier used by episodes (`persona: <id>`)."""
    name: str | None = None
    """Display name; available to templates as `persona.name`."""
    profile: PersonaProfile
    """Stable profile shown to the user simulator and planner, never to the agent."""
    style: StyleCode | CommunicationStyle | None = None
    """Communication style: a code such as `E+Q` or a full style object. Sessions may expand
    over several styles with `styles:`."""
    facts: dict[str, Any] = Field(default_factory=dict)
    """Named facts about the persona for templates (`persona.facts.<name>`)."""
