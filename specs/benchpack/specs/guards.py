"""Nothing for nothing (issue 25): which graded items hold when the agent does nothing, and the
rule that such items earn nothing on their own.

A **guard** is an item that holds on the session's *null trace*: no tool call, no message, an
empty reply, the workspace and services as the session found them. "No e-mail to Petra",
"EVT-317 stays confirmed", "the order avoids oxycodone" say that nothing bad happened; they are
worth something next to work done, not instead of it. Before this, an agent that only said
"OK." scored 20.4 on claw-lab-ops, 14.4 on claw-ops-desk and COMP 9.5 on pharmacist-week.

**The gate**: a session scores 0 on its checklist (COMP, the verified soft score) and on its
`score:` block unless it *achieved* something — an item that is not a guard, counts towards
the outcome (checklist `aspect: outcome`, or any item of a checklist without one; in a
`score:` block any item but a gate) and is met
(scores above 0). Guards, process items ("the log was read before the calendar changed") and
robustness items then count as written; without an achievement they are credit for doing
nothing, or for activity (an agent that calls every tool once meets "the rules were
consulted"). When no outcome item is met but one is unscored (a judge error), the gate cannot
tell and leaves the scores as they are.

Which items are guards is decided per session by evaluating their rules on the null trace of
the state the session started in (`bench run`), and at compile time on the state the plan
declares (the `do-nothing-credit` lint). Rubric items are judged on the whole trajectory and
are never guards here: the judge decides them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .rules import RuleMessage, RuleRecord, evaluate


@dataclass(frozen=True)
class NullTrace:
    """The trace of an agent that did nothing: what the session started with, and no more."""

    files: dict[str, str] = field(default_factory=dict)
    state: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    tool_records: tuple[RuleRecord, ...] = ()
    messages: tuple[RuleMessage, ...] = ()
    reply: str = ""

    def read_results_text(self) -> str:
        return ""


def guard_ids(rules: Iterable[tuple[str, dict[str, Any]]], null: NullTrace) -> list[str]:
    """The ids of the `(item id, rule)` items whose rule holds on `null`."""
    return [item for item, rule in rules if evaluate(rule, null).passed]


def achieved(items: Iterable[tuple[str, float | None, bool]], guards: Iterable[str]
             ) -> bool | None:
    """Whether a session achieved something: `(item id, score, counts towards the outcome)`
    per graded item. True when an outcome item that is not a guard scored above 0; False
    when every such item is scored and none did (or there is none); None when none did but
    one is unscored, so it cannot be told."""
    guard = set(guards)
    unknown = False
    for item, score, outcome in items:
        if not outcome or item in guard:
            continue
        if score is None:
            unknown = True
        elif score > 0:
            return True
    return None if unknown else False


NO_CREDIT = ("no credit: the session achieved no outcome beyond what doing nothing achieves "
             "(guards and process items count only beside an achieved outcome)")
"""What a graded item's detail says when the gate took its credit."""
