"""Trigger-rubric roles: the planner, the user agent and the judge, each in three modes.

- `llm`: our templates (`trigger_rubric.planner`, `.user`, `.judge`) with strict output; a
  malformed or rule-breaking answer is retried once with the problem shown.
- `rules`: deterministic stand-ins for tests, CI and demos (no API keys).
- `scripted`: decisions from a file (see `ScriptedPlanner`, `ScriptedUserAgent`,
  `ScriptedTriggerJudge`), to reproduce a published dialogue or judgement exactly.

What each role sees is the point of the protocol: the planner sees the persona and the scenario
but never the communication style; the user agent sees the persona, the style and the planner's
order but not the hidden goal; the judge sees the conversation up to the scored response and the
rubric, never the persona or the style.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from benchpack.specs.pack import STYLE_TRAITS
from benchpack.specs.plan import PlanScenario, PlanStyle

from .base import JudgeCall, JudgeError, ParseError, Templates, ask, extract_json, parse_tagged
from .intent import coverage, strip_echo

if TYPE_CHECKING:
    from ..roles import JudgeSite
    from ..session import SessionContext

T = TypeVar("T")

WINDOWS: dict[str, tuple[int, int]] = {"emergent": (1, 3), "critical": (4, 7), "recovery": (8, 10)}
"""Turns on which each trigger type may be declared (ProactBench table 1)."""
PER_WINDOW = (1, 2)
"""Triggers per window, at least and at most: three windows give 3–6 triggers a dialogue."""
MIN_ANCHORS = {"emergent": 1, "critical": 2, "recovery": 0}
"""Disclosed anchors a rubric must rely on: inference from one, synthesis of two or more."""
SCORES = {"PASS": 1.0, "PARTIAL": 0.5, "FAIL": 0.0}

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


def window_of(turn: int) -> str | None:
    return next((k for k, (lo, hi) in WINDOWS.items() if lo <= turn <= hi), None)


# --------------------------------------------------------------------------- shapes


@dataclass
class TriggerSpec:
    """A trigger point with its rubric, committed before the response exists."""

    id: str
    type: str
    turn: int
    anchors: list[str]
    pass_: str
    partial: str
    fail: str
    origin: str
    """`authored` (from the pack) or `planner` (committed during a live dialogue)."""

    def rubric(self) -> dict[str, str]:
        return {"pass": self.pass_, "partial": self.partial, "fail": self.fail}


@dataclass
class Order:
    """The planner's instruction for the next user message (what to say, never the wording)."""

    intent: str
    content: list[str] = field(default_factory=list)
    disclose: list[str] = field(default_factory=list)
    """Anchor ids this message reveals (at most one primary anchor not yet disclosed)."""
    directive: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"intent": self.intent, "content": self.content, "disclose": self.disclose,
                "directive": self.directive}


@dataclass
class Decision:
    order: Order
    trigger: TriggerSpec | None = None


@dataclass
class PlannerState:
    """What the planner knows before turn `turn`."""

    turn: int
    max_turns: int
    history: list[dict[str, str]]
    disclosed: list[str]
    committed: list[TriggerSpec]
    authored: dict[int, TriggerSpec] | None
    """The pack's trigger schedule; when set the planner only writes orders."""
    opening: str | None = None
    """Turn 1's message when the pack fixes it (the session's `request`)."""

    def window_count(self, kind: str) -> int:
        return sum(1 for c in self.committed if c.type == kind)


@dataclass
class Verdict:
    label: str | None
    """PASS | PARTIAL | FAIL, or None for a judge error."""
    rationale: str = ""
    evidence: str = ""
    quote_found: bool | None = None
    """True: the quote occurs in the response; None: no quote (FAIL only); False: not found."""
    error: str | None = None


# --------------------------------------------------------------------------- rules of play


class Scenario:
    """The scenario's anchors by id, plus the helpers every planner mode shares."""

    def __init__(self, scenario: PlanScenario | None) -> None:
        self.spec = scenario
        self.anchors = {a.id: a for a in (scenario.anchors if scenario else [])}

    def feasible(self, kind: str) -> bool:
        """Whether the scenario has enough anchors for this trigger type at all."""
        return len(self.anchors) >= MIN_ANCHORS[kind]

    def new_primary(self, disclose: Sequence[str], disclosed: Sequence[str]) -> list[str]:
        return [a for a in disclose
                if a in self.anchors and self.anchors[a].primary and a not in disclosed]

    def required(self, state: PlannerState) -> str | None:
        """The problem with declaring no trigger now: the window closes without one."""
        kind = window_of(state.turn)
        if kind is None or state.authored is not None or not self.feasible(kind):
            return None
        last = min(WINDOWS[kind][1], state.max_turns)
        if state.turn == last and state.window_count(kind) < PER_WINDOW[0]:
            lo, hi = WINDOWS[kind]
            return (f"turn {state.turn} is the last {kind} turn ({lo}–{hi}) and no {kind} trigger "
                    "has been declared: declare one now")
        return None

    def problems(self, d: Decision, state: PlannerState) -> list[str]:
        """Every way a planner decision breaks the protocol (empty when it is valid)."""
        out = []
        unknown = [a for a in d.order.disclose if a not in self.anchors]
        if unknown:
            out.append(f"`disclose` names unknown anchors {unknown} (known: {list(self.anchors)})")
        fresh = self.new_primary(d.order.disclose, state.disclosed)
        if len(fresh) > 1:
            out.append(f"`disclose` reveals {len(fresh)} new primary anchors {fresh}; at most one "
                       "per user message")
        if state.authored is not None:
            return out
        t = d.trigger
        if t is None:
            required = self.required(state)
            return [*out, required] if required else out
        lo, hi = WINDOWS[t.type]
        if not lo <= state.turn <= hi:
            out.append(f"a {t.type} trigger may only be declared on turns {lo}–{hi}; this is "
                       f"turn {state.turn}")
        elif state.window_count(t.type) >= PER_WINDOW[1]:
            out.append(f"{PER_WINDOW[1]} {t.type} triggers are already declared")
        available = set(state.disclosed) | set(d.order.disclose)
        missing = [a for a in t.anchors if a not in available]
        if missing:
            out.append(f"the rubric relies on anchors not disclosed by this turn: {missing}")
        need = MIN_ANCHORS[t.type]
        if self.feasible(t.type) and len(set(t.anchors) & available) < need:
            out.append(f"a {t.type} trigger must rely on at least {need} disclosed anchor(s) "
                       "(list them in `anchors`)")
        return out

    def sanitise(self, d: Decision, state: PlannerState) -> Decision:
        """The decision made valid the blunt way: unknown anchors and every new primary anchor
        but the first are not disclosed; a trigger that still breaks a rule is dropped."""
        fresh = self.new_primary(d.order.disclose, state.disclosed)
        keep = [a for a in d.order.disclose if a in self.anchors and (a not in fresh
                                                                     or a == fresh[0])]
        order = Order(d.order.intent, list(d.order.content), keep, d.order.directive)
        fixed = Decision(order, d.trigger)
        if fixed.trigger is not None and self.problems(fixed, state):
            fixed.trigger = None
        return fixed


# --------------------------------------------------------------------------- quotes


_CHARS = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"', "\u00ab": '"', "\u00bb": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",
    "*": None, "_": None, "`": None,
})
_ELLIPSIS = re.compile(r"\s*\[?\.\.\.+\]?\s*")
_EDGES = " \t\n\"'.,;:"


def normalise(text: str) -> str:
    """Lower case, NFKC, one kind of quote and dash, no Markdown emphasis, single spaces."""
    text = unicodedata.normalize("NFKC", text).translate(_CHARS).lower()
    return re.sub(r"\s+", " ", text).strip()


def quote_found(evidence: str, response: str) -> bool:
    """Whether `evidence` is a verbatim quote of `response`, after `normalise` on both sides.
    Passages joined by an ellipsis must each occur, in order; surrounding quote marks and
    edge punctuation are ignored. A quote shorter than three words counts only when it is the
    whole response (so "the" never verifies)."""
    hay = normalise(response)
    parts = [p.strip(_EDGES) for p in _ELLIPSIS.split(normalise(evidence))]
    parts = [p for p in parts if p]
    if not parts or not hay:
        return False
    pos = 0
    for p in parts:
        found = hay.find(p, pos)
        if found < 0:
            return False
        pos = found + len(p)
    words = sum(len(p.split()) for p in parts)
    return words >= 3 or " ".join(parts) == hay.strip(_EDGES)


class QuoteError(ParseError):
    """The judge's evidence does not occur in the response."""


def parse_verdict(text: str, response: str) -> Verdict:
    """`{"label": PASS|PARTIAL|FAIL, "rationale": str, "evidence": str}`. PASS and PARTIAL need
    a verbatim quote; FAIL may leave `evidence` empty (the absence is the finding) but a quote
    it gives must verify too."""
    data = extract_json(text)
    if not isinstance(data, dict):
        raise ParseError("the answer must be a JSON object")
    label = data.get("label")
    if not isinstance(label, str) or label.strip().upper() not in SCORES:
        raise ParseError(f"`label` must be PASS, PARTIAL or FAIL, got {label!r}")
    label = label.strip().upper()
    rationale = data.get("rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        raise ParseError("`rationale` must be a non-empty string")
    evidence = data.get("evidence")
    if evidence is None:
        evidence = ""
    if not isinstance(evidence, str):
        raise ParseError("`evidence` must be a string (a verbatim quote from the response)")
    evidence = evidence.strip()
    if not evidence:
        if label != "FAIL":
            raise QuoteError(f"a {label} needs `evidence`: a verbatim quote from the response")
        return Verdict(label, rationale.strip(), "", None)
    if not quote_found(evidence, response):
        raise QuoteError(f"the evidence {evidence[:200]!r} does not occur in the response; "
                         "quote the response word for word (join separate passages with …)")
    return Verdict(label, rationale.strip(), evidence, True)


_SENTENCE = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+|\n+")


def best_sentence(criterion: str, response: str) -> str:
    """The response's sentence sharing most content words with `criterion` (first on ties):
    a quote that always verifies."""
    sentences = [s.strip() for s in _SENTENCE.split(response) if s.strip()]
    if not sentences:
        return ""
    best = max(sentences, key=lambda s: (coverage(criterion, s), -sentences.index(s)))
    return best if word_count(best) >= 3 else response.strip()


def word_count(text: str) -> int:
    return len(text.split())


def length_problem(message: str, style: PlanStyle | None) -> str | None:
    if style is None:
        return None
    n = word_count(message)
    if style.min_words <= n <= style.max_words:
        return None
    return (f"the message has {n} words; this user writes {style.min_words}–{style.max_words} "
            "words a message")


async def _ask_keeping_last(call: JudgeCall, prompt: str, parse: Callable[[str], T],
                            check: Callable[[T], str | None], *, purpose: str, turn: int
                            ) -> tuple[T, str | None]:
    """`ask` with a rule check after parsing: a rule break is retried once like a parse error;
    if the retry breaks a rule too, the last well-formed answer comes back with its problem
    (the caller decides what to keep). Malformed twice raises JudgeError."""
    last: list[tuple[T, str]] = []

    def checked(text: str) -> T:
        value = parse(text)
        problem = check(value)
        if problem:
            last[:] = [(value, problem)]
            raise ParseError(problem)
        return value

    try:
        return await ask(call, prompt, checked, purpose=purpose, turn=turn), None
    except JudgeError:
        if last:
            return last[0]
        raise


# --------------------------------------------------------------------------- planner


class Planner(Protocol):
    async def decide(self, state: PlannerState) -> Decision:
        ...


def parse_decision(text: str, authored: bool) -> Decision:
    """`{"trigger": null | {type, anchors, pass, partial, fail}, "order": {intent, content,
    disclose, directive}}`; `trigger` is ignored when the pack fixes the schedule."""
    data = extract_json(text)
    if not isinstance(data, dict):
        raise ParseError("the answer must be a JSON object")
    order = _order(data.get("order"))
    if authored:
        return Decision(order)
    raw = data.get("trigger")
    if raw is None or raw is False:
        return Decision(order)
    if not isinstance(raw, dict):
        raise ParseError("`trigger` must be null or an object")
    kind = str(raw.get("type", "")).strip().lower()
    if kind not in WINDOWS:
        raise ParseError(f"`trigger.type` must be emergent, critical or recovery, got {kind!r}")
    anchors = raw.get("anchors") or []
    if not isinstance(anchors, list) or not all(isinstance(a, str) for a in anchors):
        raise ParseError("`trigger.anchors` must be a list of anchor ids")
    rubric = {}
    for key in ("pass", "partial", "fail"):
        value = raw.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ParseError(f"`trigger.{key}` must be a non-empty criterion")
        rubric[key] = value.strip()
    return Decision(order, TriggerSpec("", kind, 0, list(anchors), rubric["pass"],
                                       rubric["partial"], rubric["fail"], "planner"))


def _order(raw: Any) -> Order:
    if not isinstance(raw, dict):
        raise ParseError("`order` must be an object with `intent`, `content`, `disclose`")
    intent = raw.get("intent")
    if not isinstance(intent, str) or not intent.strip():
        raise ParseError("`order.intent` must be a non-empty string")
    content = raw.get("content") or []
    if isinstance(content, str):
        content = [content]
    disclose = raw.get("disclose") or []
    if isinstance(disclose, str):
        disclose = [disclose]
    if not all(isinstance(c, str) for c in [*content, *disclose]):
        raise ParseError("`order.content` and `order.disclose` must be lists of strings")
    return Order(intent.strip(), list(content), list(disclose), str(raw.get("directive") or ""))


class LLMPlanner:
    def __init__(self, call: JudgeCall, templates: Templates, persona: dict[str, Any],
                 scenario: Scenario) -> None:
        self.call = call
        self.templates = templates
        self.persona = persona
        self.scenario = scenario

    def prompt(self, state: PlannerState) -> str:
        spec = self.scenario.spec
        authored = None
        if state.authored is not None:
            here = state.authored.get(state.turn)
            authored = {
                "here": _trigger_view(here) if here else None,
                "upcoming": [_trigger_view(t) for k, t in sorted(state.authored.items())
                             if k > state.turn]}
        return self.templates.render(
            "trigger_rubric.planner", persona=self.persona,
            scenario={"hidden_goal": spec.hidden_goal if spec else "",
                      "anchors": [a.model_dump() for a in self.scenario.anchors.values()],
                      "proactive_subtasks": spec.proactive_subtasks if spec else []},
            turn=state.turn, max_turns=state.max_turns, opening=state.opening,
            history=state.history, disclosed=state.disclosed,
            committed=[_trigger_view(c) for c in state.committed], authored=authored,
            windows=WINDOWS, per_window=PER_WINDOW, min_anchors=MIN_ANCHORS,
            must=self.scenario.required(state))

    async def decide(self, state: PlannerState) -> Decision:
        authored = state.authored is not None

        def check(d: Decision) -> str | None:
            problems = self.scenario.problems(d, state)
            return ("the plan breaks the protocol: " + "; ".join(problems)) if problems else None

        decision, _ = await _ask_keeping_last(
            self.call, self.prompt(state), lambda t: parse_decision(t, authored), check,
            purpose="planner", turn=state.turn)
        return decision


def _trigger_view(t: TriggerSpec) -> dict[str, Any]:
    return {"id": t.id, "type": t.type, "turn": t.turn, "anchors": t.anchors}


class RulesPlanner:
    """Deterministic plans that satisfy every rule by construction.

    Disclosure: with an authored schedule, each trigger's anchors arrive just in time (one new
    primary anchor a turn, as late as the remaining turns allow); otherwise the next anchor in
    authored order every turn from turn 2. Triggers (planner-decided): one per window on the
    first turn its anchors allow, never right after another unless the window closes; a second
    recovery trigger on the final turn. Rubrics are built from the anchors' text."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario

    def _disclose(self, state: PlannerState) -> list[str]:
        order = list(self.scenario.anchors)
        pending = [a for a in order if a not in state.disclosed]
        if not pending or (state.turn == 1 and state.opening is not None):
            return []
        if state.authored is None:
            return [pending[0]] if state.turn <= WINDOWS["critical"][1] else []
        for turn, t in sorted(state.authored.items()):
            if turn < state.turn:
                continue
            need = [a for a in t.anchors if a in pending]
            primary = [a for a in need if self.scenario.anchors[a].primary]
            if primary and len(primary) >= turn - state.turn + 1:
                return [primary[0], *[a for a in need if a not in primary]]
            if need and not primary and turn == state.turn:
                return need
        return []

    def _trigger(self, state: PlannerState, disclose: list[str]) -> TriggerSpec | None:
        kind = window_of(state.turn)
        if kind is None or not self.scenario.feasible(kind):
            return None
        known = [a for a in self.scenario.anchors if a in state.disclosed or a in disclose]
        count = state.window_count(kind)
        closing = state.turn == min(WINDOWS[kind][1], state.max_turns)
        after_trigger = any(c.turn == state.turn - 1 for c in state.committed)
        first = count == 0 and (not after_trigger or closing)
        second = kind == "recovery" and count == 1 and closing and not after_trigger
        if len(known) < MIN_ANCHORS[kind] or not (first or second):
            return None
        anchors = known[-MIN_ANCHORS[kind]:] if kind != "recovery" else known
        texts = "; ".join(self.scenario.anchors[a].text.strip() for a in anchors) or \
            "the details the user gave"
        pass_, partial, fail = _RULES_RUBRIC[kind]
        return TriggerSpec("", kind, state.turn, anchors, pass_.format(texts), partial, fail,
                           "planner")

    def _order(self, state: PlannerState, disclose: list[str]) -> Order:
        kind = window_of(state.turn)
        if state.turn == 1 and state.opening is not None:
            return Order("open with the request", [state.opening])
        content = [f"By the way: {self.scenario.anchors[a].text.strip()}" for a in disclose]
        if kind == "recovery" and state.turn == state.max_turns:
            return Order("sign off", ["That's all, thanks."], disclose)
        if kind == "recovery" and state.turn == WINDOWS["recovery"][0]:
            return Order("say the task is finished", ["That's everything I needed, done.",
                                                      *content], disclose)
        if kind == "recovery":
            return Order("acknowledge", ["Thanks, that settles it.", *content], disclose)
        return Order("ask for a small revision", ["Can you tighten that up a bit?", *content],
                     disclose)

    async def decide(self, state: PlannerState) -> Decision:
        disclose = self._disclose(state)
        trigger = None if state.authored is not None else self._trigger(state, disclose)
        return Decision(self._order(state, disclose), trigger)


_RULES_RUBRIC = {
    "emergent": (
        "The response infers an unstated need from this detail and draws out a concrete "
        "implication the user did not raise: {}",
        "The response acknowledges the detail or asks about it without a concrete implication.",
        "The response only answers the literal request, repeats the detail or ignores it; "
        "generic offers of help fail."),
    "critical": (
        "The response connects these details into a new conclusion the user has not drawn: {}",
        "The response notices one of the details but does not connect them.",
        "The response only answers the literal request or repeats the details; generic offers "
        "of help fail."),
    "recovery": (
        "After the user says the task is done, the response adds a concrete next step tied to "
        "an earlier detail: {}",
        "The response points to a future step only vaguely.",
        "The response congratulates, recaps or closes politely; generic offers of help fail."),
}


class ScriptedPlanner:
    """Plans per turn from a script (see `roles.Script`):

    ```yaml
    sessions:
      <session name or plan id>:
        turns:
          2: {disclose: [drop-off], say: "…",           # `say` is the scripted user's line
              trigger: {type: emergent, anchors: [drop-off], pass: …, partial: …, fail: …}}
    ```
    Turns not listed: no trigger, no disclosure, a generic follow-up order."""

    def __init__(self, script: dict[str, Any]) -> None:
        self.turns = {int(k): v or {} for k, v in (script.get("turns") or {}).items()}

    async def decide(self, state: PlannerState) -> Decision:
        entry = self.turns.get(state.turn, {})
        disclose = entry.get("disclose") or []
        order = Order(str(entry.get("intent") or "continue the conversation"),
                      [str(entry["say"])] if entry.get("say") else [],
                      [disclose] if isinstance(disclose, str) else [str(a) for a in disclose])
        raw = entry.get("trigger")
        if state.authored is not None or not isinstance(raw, dict):
            return Decision(order)
        kind = str(raw.get("type", "")).lower()
        if kind not in WINDOWS:
            raise ValueError(f"scripted planner, turn {state.turn}: unknown trigger type {kind!r}")
        return Decision(order, TriggerSpec(
            str(raw.get("id") or ""), kind, state.turn, [str(a) for a in raw.get("anchors") or []],
            str(raw.get("pass", "")), str(raw.get("partial", "")), str(raw.get("fail", "")),
            "planner"))


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
        message, _ = await _ask_keeping_last(
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


# --------------------------------------------------------------------------- judge


class TriggerJudge(Protocol):
    async def judge(self, t: TriggerSpec, history: list[dict[str, str]], response: str
                    ) -> Verdict:
        """`history`: the conversation up to and including the trigger turn's user message.
        Judge errors come back as a Verdict with `error` set, never raised."""
        ...


class LLMTriggerJudge(TriggerJudge):
    def __init__(self, call: JudgeCall, templates: Templates) -> None:
        self.call = call
        self.templates = templates

    def prompt(self, t: TriggerSpec, history: list[dict[str, str]], response: str) -> str:
        return self.templates.render("trigger_rubric.judge", type=t.type, turn=t.turn,
                                     rubric=t.rubric(), history=history, response=response)

    async def judge(self, t: TriggerSpec, history: list[dict[str, str]], response: str
                    ) -> Verdict:
        last: list[Verdict] = []

        def parse(text: str) -> Verdict:
            try:
                return parse_verdict(text, response)
            except QuoteError:
                data = extract_json(text)  # well-formed: keep what it claimed, for the audit
                last[:] = [Verdict(str(data.get("label", "")).upper() or None,
                                   str(data.get("rationale") or ""),
                                   str(data.get("evidence") or ""), False)]
                raise

        try:
            return await ask(self.call, self.prompt(t, history, response), parse,
                             purpose="trigger_judge", turn=t.turn)
        except JudgeError as exc:
            if last:
                v = last[0]
                return Verdict(None, v.rationale, v.evidence, False, exc.message)
            return Verdict(None, error=exc.message)


class RulesTriggerJudge(TriggerJudge):
    """A deterministic stand-in. Rubrics are prose, so a response never repeats most of their
    words: PASS when it holds at least `PASS_AT` of the pass criterion's content words, PARTIAL
    at `PARTIAL_AT` of the pass or the partial criterion's, else FAIL. The evidence is the
    response sentence closest to that criterion (none for FAIL), so quotes always verify. On the
    reference pack's dialogue this passes the authored answers (0.22–0.27 of the pass words)
    and fails a literal-minded agent (≤ 0.02)."""

    PASS_AT = 0.2
    PARTIAL_AT = 0.1

    async def judge(self, t: TriggerSpec, history: list[dict[str, str]], response: str
                    ) -> Verdict:
        # words the response only echoes from the user are not the agent's answer
        own = strip_echo(response, [str(m.get("content") or "") for m in history
                                    if m.get("role") == "user"])
        on_pass, on_partial = coverage(t.pass_, own), coverage(t.partial, own)
        if on_pass >= self.PASS_AT:
            label, criterion = "PASS", t.pass_
        elif max(on_pass, on_partial) >= self.PARTIAL_AT:
            label, criterion = "PARTIAL", t.pass_ if on_pass >= on_partial else t.partial
        else:
            return Verdict("FAIL", f"rules: {on_pass:.0%} of the pass criterion's words", "",
                           None)
        quote = best_sentence(criterion, own)
        if not quote_found(quote, response):
            quote = best_sentence(criterion, response)
        return Verdict(label, f"rules: {on_pass:.0%} of the pass criterion's words, "
                       f"{on_partial:.0%} of the partial one's", quote,
                       quote_found(quote, response) if quote else None)


class ScriptedTriggerJudge(TriggerJudge):
    """Labels per trigger from a script (see `roles.Script`):

    ```yaml
    sessions:
      <session name or plan id>:
        triggers:
          e-dropoff: PASS                                   # by trigger id …
          5: {label: PARTIAL, rationale: …, evidence: …}    # … or by turn
    ```
    A scripted quote is verified like any other (a miss is a judge error); without one, PASS
    and PARTIAL quote the response sentence closest to the criterion. A trigger with no entry
    is a judge error."""

    def __init__(self, script: dict[str, Any]) -> None:
        self.labels = {str(k): v for k, v in (script.get("triggers") or {}).items()}

    async def judge(self, t: TriggerSpec, history: list[dict[str, str]], response: str
                    ) -> Verdict:
        entry = self.labels.get(t.id, self.labels.get(str(t.turn)))
        if entry is None:
            return Verdict(None, error=f"no scripted label for trigger `{t.id}` (turn {t.turn})")
        if not isinstance(entry, dict):
            entry = {"label": entry}
        label = str(entry.get("label", "")).upper()
        if label not in SCORES:
            return Verdict(None, error=f"scripted label {label!r} is not PASS/PARTIAL/FAIL")
        rationale = str(entry.get("rationale") or "scripted")
        evidence = entry.get("evidence")
        if evidence is None:
            criterion = t.pass_ if label == "PASS" else t.partial
            evidence = best_sentence(criterion, response) if label != "FAIL" else ""
        evidence = str(evidence)
        if not evidence:
            return Verdict(label, rationale, "", None)
        if not quote_found(evidence, response):
            return Verdict(None, rationale, evidence, False,
                           f"the evidence {evidence[:200]!r} does not occur in the response")
        return Verdict(label, rationale, evidence, True)


# --------------------------------------------------------------------------- roles


@dataclass
class LiveRoles:
    """Who writes a live dialogue, with the deterministic stand-ins used when they fail."""

    planner: Planner
    user: UserAgent
    scenario: Scenario
    fallback_planner: RulesPlanner
    fallback_user: RulesUserAgent


def live_roles(ctx: SessionContext) -> LiveRoles:
    """The planner (role `planner`: persona and scenario, never the style) and the user agent
    (role `simulator`) of a live trigger-rubric session."""
    roles = ctx.roles
    s = ctx.session
    scenario = Scenario(s.scenario)
    persona = {"name": ctx.persona.name, "profile": ctx.persona.profile.model_dump(mode="json")}
    planner: Planner = roles.build(
        ctx, "planner", rules=lambda: RulesPlanner(scenario), scripted=ScriptedPlanner,
        llm=lambda call: LLMPlanner(call, roles.templates, persona, scenario))
    user: UserAgent = roles.build(
        ctx, "simulator", rules=lambda: RulesUserAgent(s.style),
        scripted=lambda script: ScriptedUserAgent(s.style, script),
        llm=lambda call: LLMUserAgent(call, roles.templates, persona, s.style, scenario))
    return LiveRoles(planner, user, scenario, RulesPlanner(scenario), RulesUserAgent(s.style))


def trigger_judge(ctx: JudgeSite) -> TriggerJudge:
    """The judge (role `judge`): conversation and rubric only, never persona or style."""
    roles = ctx.roles
    judge: TriggerJudge = roles.build(
        ctx, "judge", rules=RulesTriggerJudge, scripted=ScriptedTriggerJudge,
        llm=lambda call: LLMTriggerJudge(call, roles.templates))
    return judge


__all__ = [
    "MIN_ANCHORS", "PER_WINDOW", "SCORES", "WINDOWS", "Decision", "LLMPlanner",
    "LLMTriggerJudge", "LLMUserAgent", "LiveRoles", "Order", "Planner", "PlannerState", "QuoteError",
    "RulesPlanner", "RulesTriggerJudge", "RulesUserAgent", "Scenario", "ScriptedPlanner",
    "ScriptedTriggerJudge", "ScriptedUserAgent", "TriggerJudge", "TriggerSpec",
    "UserAgent", "Verdict", "best_sentence", "fit", "length_problem", "live_roles", "normalise",
    "parse_decision", "parse_verdict", "quote_found", "trait_directives", "trigger_judge",
    "window_of", "word_count",
]
