"""Nothing for nothing, at run time (`benchpack.specs.guards` states the rule and why).

`session_guards` evaluates a session's deterministic items on its null trace — the workspace
files and service rows as the session found them, no call, no message, an empty reply — when
the session starts, before the agent acts; `sessions.extra.guards` records the ids, so `bench
rejudge` applies the same gate without the start state. `gate_checklist` gives the scores
COMP and the soft score count (the rows keep each item's verdict); `gate_items` zeroes a
`score:` block's items, which `bench rejudge` re-grades from the trace."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchpack.specs.guards import NO_CREDIT, achieved
from benchpack.specs.plan import PlanSession

from .graded import ItemScore, grade_item
from .rule import evaluate
from .trace import Trace

GUARDS_KEY = "guards"
"""`sessions.extra` key: ids of the session's guard items (absent when it has none)."""

JUDGED = ("rule", "keywords", "credits", "same", "compare")
"""A `score:` item with one of these is graded without a judge (`graders.verify`)."""


def needs_guards(s: PlanSession) -> bool:
    """Whether a session has deterministic graded items (only those can be guards)."""
    return any(item.rule is not None and item.grader != "python" for item in s.checklist) or (
        s.score is not None and bool(s.score.items))


def session_guards(s: PlanSession, files: dict[str, str],
                   state: dict[str, dict[str, list[dict[str, Any]]]]) -> list[str]:
    """Ids of the session's checklist rule items and deterministic `score:` items that hold
    (score above 0) with nothing done: `files` and `state` as the session starts."""
    null = Trace(tool_records=[], state=state, files=files, messages=[], reply="")
    out = [item.id for item in s.checklist
           if item.rule is not None and item.grader != "python" and evaluate(
               item.rule.model_dump(mode="json", by_alias=True, exclude_unset=True),
               null).passed]
    if s.score is not None:
        score = s.score.model_dump(mode="json", by_alias=True, exclude_none=True)
        for i, item in enumerate(score.get("items") or []):
            if any(item.get(k) is not None for k in JUDGED) and not item.get("gate"):
                graded = grade_item(item, i, null)
                if graded.score is not None and graded.score > 0:
                    out.append(graded.id)
    return out


def gate_checklist(s: PlanSession, results: dict[str, tuple[float | None, str, str | None]],
                   guards: Iterable[str]) -> dict[str, float | None]:
    """Item id → the score COMP and the soft score count: as graded, or 0 for every scored
    item when the session achieved no outcome (`specs.guards.achieved`, outcome = `aspect:
    outcome`, or every item of a checklist without one). The checklist rows keep each item's own verdict (`bench rejudge` re-decides
    the gate from them)."""
    scores = {item.id: results.get(item.id, (None, "", None))[0] for item in s.checklist}
    # a checklist of process items only: they are its outcome (as the soft score gives an
    # aspect without items its weight to the other)
    any_outcome = any(item.aspect == "outcome" for item in s.checklist)
    items = [(item.id, scores[item.id], item.aspect == "outcome" or not any_outcome)
             for item in s.checklist]
    if achieved(items, guards) is not False:
        return scores
    return {k: (0.0 if v is not None else None) for k, v in scores.items()}


def gate_items(items: list[ItemScore], guards: Iterable[str]) -> bool:
    """Zero a `score:` block's items (gates excepted: they multiply, never add) when the
    session achieved nothing (outcome = every item but a gate). True when it did so."""
    if achieved([(it.id, it.score, not it.gate) for it in items], guards) is not False:
        return False
    for it in items:
        if not it.gate and it.score:
            it.detail = f"{NO_CREDIT}; was {it.score:g}: {it.detail}"
            it.score = 0.0
    return True
