"""Gold-action matching (τ²-bench's action check): each gold action must appear among the
agent's tool calls.

Spec: `benchpack.specs.scoring.GoldAction` (`tool`, `args`, `match`) and `Gold.ordered`.
Arguments compare `exact` (equal JSON, 3 equals 3.0 but not `"3"` nor `true`), `normalised`
(strings case-folded with spaces, `-` and `_` dropped; numbers as numbers, so `"3"` equals 3)
or `subset` (only the keys the gold action lists, exactly). Each gold action needs its own call:
two identical gold actions need two calls. Order-free by default, the assignment of calls to
actions is a maximum bipartite matching, so a loose action cannot steal the only call a strict
one matches. With `ordered`, the matched calls must come in the gold order (a subsequence).
Only calls that succeeded count: a failed call did not do the action.

`match: tau2` is τ²-bench's `Action.compare_with_tool_call` instead: same tool name, then the
keys in `compare` (τ²'s `compare_args`; without it the keys of the agent's call, so a call with
no arguments matches) taken from both sides and compared as dicts with Python's `==` (3 equals
3.0, `true` equals 1, `"3"` does not equal 3; a key on one side only makes them differ). Any
call counts, failed ones too, and one call may match several such actions: each looks at every
call on its own, outside the matching above and never ordered.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchpack.specs.text import fold

_DROP = re.compile(r"[\s\-_]+")


@dataclass
class ActionResult:
    id: str
    tool: str
    passed: bool
    call: int | None
    """Index (in the records given) of the agent's call matched to this action."""
    detail: str


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            f = float(v.strip())
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return None


def _exact(want: Any, got: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(want, bool) and isinstance(got, bool) and want == got
    if isinstance(want, dict):
        return isinstance(got, dict) and want.keys() == got.keys() and \
            all(_exact(want[k], got[k]) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and \
            all(_exact(a, b) for a, b in zip(want, got, strict=False))
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return float(want) == float(got)
    return type(want) is type(got) and want == got


def _normal(want: Any, got: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and want.keys() == got.keys() and \
            all(_normal(want[k], got[k]) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and \
            all(_normal(a, b) for a, b in zip(want, got, strict=False))
    if isinstance(want, bool) or isinstance(got, bool):
        return _exact(want, got)
    a, b = _number(want), _number(got)
    if a is not None and b is not None and not (isinstance(want, str) and isinstance(got, str)):
        return a == b
    if isinstance(want, str) and isinstance(got, str):
        return _DROP.sub("", fold(want)) == _DROP.sub("", fold(got))
    return _exact(want, got)


def args_match(want: dict[str, Any], got: Any, match: str = "exact") -> bool:
    """Whether a call's arguments `got` match a gold action's `want` under `match`."""
    if not isinstance(got, dict):
        return False
    if match == "subset":
        return all(k in got and _exact(v, got[k]) for k, v in want.items())
    if match == "normalised":
        return _normal(want, got)
    return _exact(want, got)


def tau2_match(action: dict[str, Any], record: Any) -> bool:
    """τ²'s `compare_with_tool_call` of a gold action (`match: tau2`) and one call."""
    if record.tool_name != action["tool"]:
        return False
    got = record.call if isinstance(record.call, dict) else {}
    compare = action.get("compare")
    keys = list(got) if compare is None else list(compare)
    if not keys:
        return True
    want = action.get("args") or {}
    return bool({k: v for k, v in got.items() if k in keys} ==
                {k: v for k, v in want.items() if k in keys})


def _why_not(action: dict[str, Any], calls: Sequence[tuple[int, Any]]) -> str:
    same = [c for _, c in calls if c.tool_name == action["tool"]]
    if not same:
        return f"never called {action['tool']}"
    if action.get("match") == "tau2":
        compared = action.get("compare")
        return (f"{len(same)} call(s) of {action['tool']}, none with these arguments"
                + (f" (compared: {', '.join(compared)})" if compared else ""))
    got = same[-1].call if isinstance(same[-1].call, dict) else {}
    want = action.get("args") or {}
    match = action.get("match") or "exact"
    keys = sorted(want) if match == "subset" else sorted(set(want) | set(got))
    diff = [k for k in keys if k not in got or k not in want or not args_match(
        {k: want[k]}, {k: got[k]}, "exact" if match == "subset" else match)]
    return (f"{len(same)} call(s) of {action['tool']}, none with these arguments"
            + (f" (last differs in {', '.join(diff[:5])})" if diff else ""))


def _fit(action: dict[str, Any]) -> Callable[[Any], bool]:
    def fits(record: Any) -> bool:
        return bool(record.tool_name == action["tool"] and args_match(
            action.get("args") or {}, record.call, action.get("match") or "exact"))
    return fits


def match_actions(actions: Sequence[dict[str, Any]], records: Sequence[Any],
                  ordered: bool = False) -> list[ActionResult]:
    """Per gold action (dicts shaped like `GoldAction`), whether the agent made it and with
    which call. `records` are the session's tool records (`ToolRecord`: `tool_name`, `call`,
    `error`)."""
    calls = [(i, r) for i, r in enumerate(records) if r.error is None]
    fits = [_fit(a) for a in actions]
    chosen: dict[int, int] = {}  # action index → call index
    tau2 = {ai for ai, a in enumerate(actions) if a.get("match") == "tau2"}
    for ai in tau2:  # τ²: every call, failed ones too; the first that fits, shared freely
        hit = next((i for i, r in enumerate(records) if tau2_match(actions[ai], r)), None)
        if hit is not None:
            chosen[ai] = hit
    if ordered:
        pos = 0
        for ai, fit in enumerate(fits):
            if ai in tau2:
                continue
            while pos < len(calls) and not fit(calls[pos][1]):
                pos += 1
            if pos == len(calls):
                break
            chosen[ai] = calls[pos][0]
            pos += 1
    else:
        chosen.update(_matching([[] if ai in tau2 else [ci for ci, r in calls if fit(r)]
                                 for ai, fit in enumerate(fits)]))
    out = []
    for ai, a in enumerate(actions):
        aid = str(a.get("id") or f"a{ai + 1}")
        if ai in chosen:
            out.append(ActionResult(aid, a["tool"], True, chosen[ai],
                                    f"{a['tool']} matched call #{chosen[ai] + 1}"))
        elif ordered and ai not in tau2 and any(fits[ai](r) for _, r in calls):
            out.append(ActionResult(aid, a["tool"], False, None,
                                    f"{a['tool']} was called, but not after the earlier "
                                    "gold actions"))
        else:
            everyone = list(enumerate(records)) if ai in tau2 else calls
            out.append(ActionResult(aid, a["tool"], False, None, _why_not(a, everyone)))
    return out


def _matching(options: list[list[int]]) -> dict[int, int]:
    """A maximum matching of actions to distinct calls (Kuhn's augmenting paths; a session has
    tens of calls, not thousands). Earlier actions prefer earlier calls."""
    owner: dict[int, int] = {}

    def augment(ai: int, seen: set[int]) -> bool:
        for ci in options[ai]:
            if ci in seen:
                continue
            seen.add(ci)
            if ci not in owner or augment(owner[ci], seen):
                owner[ci] = ai
                return True
        return False

    for ai in range(len(options)):
        augment(ai, set())
    return {ai: ci for ci, ai in owner.items()}


def all_passed(results: Sequence[ActionResult]) -> float:
    """τ²'s actions component: 1 when every gold action was made, else 0."""
    return 1.0 if all(r.passed for r in results) else 0.0


__all__ = ["ActionResult", "all_passed", "args_match", "match_actions", "tau2_match"]
