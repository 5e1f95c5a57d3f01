"""Evidence selected by field for rubric judges, and joins across tool records.

Spec: `benchpack.specs.scoring.FieldEvidence`, `RecordRef`, `Join`. A path into a record is a
dotted path (`customer.email`, `items.0.id`; keys of any script) or, when it is not one, a
JMESPath expression (`items[?status=='open'].id`). A path that leads nowhere selects nothing,
never an error: odd data must not take grading down. A JMESPath expression that does not parse
is reported in the evidence (the compiler refuses it first).

Joins answer "is the note updated the note created?": each side takes values from the records
of one tool (a list value counts element by element), and the join holds when some `b` value
relates to some `a` value (or, with `every`, when every `b` record relates to an `a` record).
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchpack.specs.text import fold

_DOTTED = re.compile(r"^[\w-]+(\.[\w-]+)*$")
_MISSING = object()
MAX_EVIDENCE_CHARS = 8000
"""Longest rendered evidence for one item; the judge's context is not a dump."""


class PathError(ValueError):
    """A JMESPath expression that does not parse."""


def lookup(obj: Any, path: str) -> Any:
    """The value at `path` in `obj`, or `_MISSING`. Raises `PathError` for a bad JMESPath."""
    if _DOTTED.match(path):
        for part in path.split("."):
            if isinstance(obj, dict) and part in obj:
                obj = obj[part]
            elif isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
                obj = obj[int(part)]
            else:
                return _MISSING
        return obj
    import jmespath
    from jmespath.exceptions import JMESPathError

    try:
        expr = jmespath.compile(path)
    except JMESPathError as exc:
        raise PathError(f"`{path}` is neither a dotted path nor JMESPath: {exc}") from None
    try:
        got = expr.search(obj)
    except JMESPathError:
        return _MISSING
    return _MISSING if got is None else got


def found(value: Any) -> bool:
    return value is not _MISSING


def _matches(record: Any, tool: str, successful: bool | None) -> bool:
    if not fnmatch.fnmatchcase(record.tool_name, tool):
        return False
    return successful is None or (record.error is None) == successful


# --------------------------------------------------------------------------- evidence


def select(selector: dict[str, Any], records: Sequence[Any]) -> list[dict[str, Any]]:
    """The chosen fields of the matching records (the last `limit`): `{tool, args, result}`
    with only the requested fields; `error` when the call failed."""
    picked = [r for r in records
              if _matches(r, selector["tool"], selector.get("successful", True))]
    picked = picked[-int(selector.get("limit") or 20):]
    out = []
    for r in picked:
        item: dict[str, Any] = {"tool": r.tool_name}
        names = selector.get("args")
        call = r.call if isinstance(r.call, dict) else {}
        if names is None:
            item["args"] = call
        else:
            item["args"] = {n: v for n in names if found(v := lookup(call, n))}
        paths = selector.get("result")
        if paths is None:
            item["result"] = r.result
        else:
            result: dict[str, Any] = {}
            for p in paths:
                try:
                    v = lookup(r.result, p)
                except PathError as exc:
                    result[p] = f"(bad path: {exc})"
                    continue
                if found(v):
                    result[p] = v
            item["result"] = result
        if r.error is not None:
            item["error"] = r.error
        out.append(item)
    return out


def render(selectors: Sequence[dict[str, Any]], records: Sequence[Any]) -> str:
    """The selected evidence as text for a judge prompt, bounded in size."""
    parts = []
    for sel in selectors:
        rows = select(sel, records)
        if not rows:
            parts.append(f"<tool name=\"{sel['tool']}\">(no matching calls)</tool>")
        for row in rows:
            body = json.dumps({k: v for k, v in row.items() if k != "tool"},
                              ensure_ascii=False, default=str, sort_keys=True)
            parts.append(f"<tool name=\"{row['tool']}\">{body}</tool>")
    text = "\n".join(parts)
    if len(text) > MAX_EVIDENCE_CHARS:
        text = text[:MAX_EVIDENCE_CHARS] + " [… truncated]"
    return text


# --------------------------------------------------------------------------- joins


@dataclass
class JoinResult:
    passed: bool
    pairs: list[tuple[int, int]] = field(default_factory=list)
    """(a record index, b record index) pairs that relate, indices into the records given."""
    detail: str = ""
    error: str | None = None
    """A path that cannot be read (the join is unscored, not failed)."""


def _values(record: Any, ref: dict[str, Any]) -> list[Any]:
    src = record.result if ref.get("result") is not None else record.call
    path = ref.get("result") if ref.get("result") is not None else ref.get("args")
    v = lookup(src, str(path))
    if not found(v) or v is None:
        return []
    return [x for x in v if x is not None] if isinstance(v, list) else [v]


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, str):
        try:
            f = float(v.strip())
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return None


def _text(v: Any) -> str:
    return fold(v.strip()) if isinstance(v, str) else fold(
        json.dumps(v, ensure_ascii=False, sort_keys=True, default=str))


def relate(op: str, a: Any, b: Any) -> bool:
    """Whether `b op a` holds (the `Join.op` semantics)."""
    if op == "equals":
        x, y = _num(a), _num(b)
        if x is not None and y is not None:
            return x == y
        return _text(a) == _text(b)
    if op == "contains":
        needle = _text(a)
        return bool(needle) and needle in _text(b)
    x, y = _num(a), _num(b)
    if x is None or y is None:
        return False
    return {"lt": y < x, "le": y <= x, "gt": y > x, "ge": y >= x}[op]


def join(spec: dict[str, Any], records: Sequence[Any]) -> JoinResult:
    """Evaluate a `Join` (as a dict) over the session's tool records."""
    a_ref, b_ref, op = spec["a"], spec["b"], spec.get("op") or "equals"
    try:
        a_side = [(i, _values(r, a_ref)) for i, r in enumerate(records)
                  if _matches(r, a_ref["tool"], a_ref.get("successful", True))]
        b_side = [(i, _values(r, b_ref)) for i, r in enumerate(records)
                  if _matches(r, b_ref["tool"], b_ref.get("successful", True))]
    except PathError as exc:
        return JoinResult(False, [], str(exc), error=str(exc))
    pairs = [(ai, bi) for bi, bvals in b_side for ai, avals in a_side
             if any(relate(op, a, b) for a in avals for b in bvals)]
    word = {"equals": "=", "contains": "contains", "lt": "<", "le": "≤", "gt": ">",
            "ge": "≥"}[op]
    label = f"{b_ref['tool']} {_side(b_ref)} {word} {a_ref['tool']} {_side(a_ref)}"
    if not a_side or not b_side:
        missing = a_ref["tool"] if not a_side else b_ref["tool"]
        return JoinResult(False, [], f"{label}: no calls of {missing}")
    if spec.get("every"):
        related = {bi for _, bi in pairs}
        loose = [bi for bi, _ in b_side if bi not in related]
        return JoinResult(not loose, pairs, f"{label}: every call relates" if not loose else
                          f"{label}: call #{loose[0] + 1} relates to none")
    return JoinResult(bool(pairs), pairs,
                      f"{label}: calls #{pairs[0][1] + 1} and #{pairs[0][0] + 1}" if pairs
                      else f"{label}: no pair relates")


def _side(ref: dict[str, Any]) -> str:
    return f"result.{ref['result']}" if ref.get("result") is not None else f"args.{ref['args']}"


__all__ = ["JoinResult", "PathError", "join", "lookup", "relate", "render", "select"]
