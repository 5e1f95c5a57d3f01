"""What the trigger-rubric roles share: the shapes they exchange (`TriggerSpec`, `Order`,
`Decision`, `PlannerState`, `Verdict`), the protocol's limits (`WINDOWS`, `PER_WINDOW`,
`MIN_ANCHORS`, `SCORES`) and the rules of play over them (`Scenario`).

Separate from the roles so that the planner, the user agent and the judge each depend on this
module and never on one another. `word_count` and `ask_keeping_last` live here for the same
reason: the first serves the user agent's length rule and the judge's quotes, the second the
planner's and the user agent's LLM mode.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from benchpack.specs.plan import PlanScenario

from .base import JudgeCall, JudgeError, ParseError, ask

T = TypeVar("T")

WINDOWS: dict[str, tuple[int, int]] = {"emergent": (1, 3), "critical": (4, 7), "recovery": (8, 10)}
"""Turns on which each trigger type may be declared (ProactBench table 1)."""
PER_WINDOW = (1, 2)
"""Triggers per window, at least and at most: three windows give 3–6 triggers a dialogue."""
MIN_ANCHORS = {"emergent": 1, "critical": 2, "recovery": 0}
"""Disclosed anchors a rubric must rely on: inference from one, synthesis of two or more."""
SCORES = {"PASS": 1.0, "PARTIAL": 0.5, "FAIL": 0.0}


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


def word_count(text: str) -> int:
    return len(text.split())


async def ask_keeping_last(call: JudgeCall, prompt: str, parse: Callable[[str], T],
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
