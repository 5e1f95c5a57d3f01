"""The trigger-rubric user agent: how a communication style becomes directives and word
bounds (`trait_directives`, `length_problem`, `fit`), and the agent in its three modes
(`LLMUserAgent`, `RulesUserAgent`, `ScriptedUserAgent`).

Separate from the planner because it is the only role that sees the style: keeping the style
code here makes it plain that the planner and the judge never do.
"""

from __future__ import annotations

from typing import Any, Protocol

from benchpack.specs.pack import STYLE_TRAITS
from benchpack.specs.plan import PlanStyle

from .base import JudgeCall, Templates, parse_tagged
from .trigger_shapes import Order, Scenario, ask_keeping_last, word_count

# Per-trait behaviour for the user agent (follow; avoid). A style gets the directives of each
# trait it has, then the pack's own `directives`.
TRAIT_DIRECTIVES: dict[str, tuple[str, str]] = {
    "expressiveness": (
        "talk freely and steer the conversation, with side remarks and small talk",
        "do not be brief or tightly organised"),
    "preciseness": (
        "be exact and structured: figures, names and one clear ask",
        "no small talk, no vague or hedged wording"),
    "verbal_aggressiveness": (
        "be blunt and impatient; say plainly when an answer misses the mark",
        "do not soften, thank or reassure"),
    "questioningness": (
        "probe: ask why, challenge the assistant's assumptions",
        "do not take answers at face value"),
    "emotionality": (
        "let feelings show: worry, irritation, relief",
        "do not stay detached"),
    "impression_manipulativeness": (
        "manage how you come across: play down difficulties, present yourself well",
        "do not admit struggles plainly"),
}
NEUTRAL_DIRECTIVE = "a neutral, cooperative register with no strong traits"


def trait_directives(style: PlanStyle) -> list[str]:
    out = []
    for trait in STYLE_TRAITS.values():
        if style.traits.get(trait):
            follow, avoid = TRAIT_DIRECTIVES[trait]
            out += [follow, avoid]
    return (out or [NEUTRAL_DIRECTIVE]) + list(style.directives)


def length_problem(message: str, style: PlanStyle | None) -> str | None:
    if style is None:
        return None
    n = word_count(message)
    if style.min_words <= n <= style.max_words:
        return None
    return (f"the message has {n} words; this user writes {style.min_words}–{style.max_words} "
            "words a message")


# --------------------------------------------------------------------------- user agent


class UserAgent(Protocol):
    async def say(self, order: Order, history: list[dict[str, str]], turn: int) -> str:
        """The next user message; `length_problem` is checked by the caller."""
        ...


def _style_view(style: PlanStyle | None) -> dict[str, Any] | None:
    if style is None:
        return None
    return {"length": style.length, "min_words": style.min_words, "max_words": style.max_words,
            "directives": trait_directives(style)}


class LLMUserAgent:
    def __init__(self, call: JudgeCall, templates: Templates, persona: dict[str, Any],
                 style: PlanStyle | None, scenario: Scenario) -> None:
        self.call = call
        self.templates = templates
        self.persona = persona
        self.style = style
        self.scenario = scenario

    def prompt(self, order: Order, history: list[dict[str, str]], turn: int) -> str:
        anchors = [self.scenario.anchors[a].text for a in order.disclose
                   if a in self.scenario.anchors]
        return self.templates.render(
            "trigger_rubric.user", persona=self.persona, style=_style_view(self.style),
            order=order.as_dict(), anchors=anchors, history=history[-20:], turn=turn)

    async def say(self, order: Order, history: list[dict[str, str]], turn: int) -> str:
        message, _ = await ask_keeping_last(
            self.call, self.prompt(order, history, turn), lambda t: parse_tagged(t, "message"),
            lambda m: length_problem(m, self.style), purpose="user", turn=turn)
        return message


_FILLERS = ("I've been going back and forth on this for a while now.",
            "Anyway, that's where things stand on my end at the moment.",
            "It has been a long week, so bear with me if I ramble a little here.",
            "I just want to get it right without making a big production of it.",
            "Let me know what you think when you get a chance.")


class RulesUserAgent:
    """The order's content, cut or padded (with fixed filler sentences) to the style's word
    bounds."""

    def __init__(self, style: PlanStyle | None) -> None:
        self.style = style

    async def say(self, order: Order, history: list[dict[str, str]], turn: int) -> str:
        return fit(" ".join(order.content) or order.intent, self.style)


def fit(text: str, style: PlanStyle | None) -> str:
    if style is None:
        return text
    words = text.split()
    k = 0
    while len(words) < style.min_words:
        words += _FILLERS[k % len(_FILLERS)].split()
        k += 1
    return " ".join(words[:style.max_words])


class ScriptedUserAgent(RulesUserAgent):
    """The `say` line of the turn's planner-script entry (same file shape as
    `ScriptedPlanner`), as written — its length is checked like any other; turns without one
    fall back to the rules rendering."""

    def __init__(self, style: PlanStyle | None, script: dict[str, Any]) -> None:
        super().__init__(style)
        self.turns = {int(k): v or {} for k, v in (script.get("turns") or {}).items()}

    async def say(self, order: Order, history: list[dict[str, str]], turn: int) -> str:
        line = self.turns.get(turn, {}).get("say")
        return str(line) if line else await super().say(order, history, turn)
