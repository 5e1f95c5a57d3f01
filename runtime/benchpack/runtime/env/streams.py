"""Reading event streams: the agent's view of an activity log.

Events come back oldest first, without the author annotations `noise` and `conflicts_with`
(those are for graders and reports; the agent must never see them).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from benchpack.specs.plan import PlanEvent, PlanEventStream

from .errors import ToolError

DEFAULT_LIMIT = 100
MAX_LIMIT = 500
HIDDEN_FIELDS = ("noise", "conflicts_with")
_TIME = re.compile(r"^\d{4}(-\d{2}(-\d{2}([T ]\d{2}(:\d{2}(:\d{2}(\.\d+)?)?)?)?)?)?")
_OFFSET = re.compile(r"(Z|[+-]\d{2}:?\d{2})$")


def normalise_time(value: str) -> str:
    """An ISO time in a form that compares lexically: `T` separator, no zone suffix."""
    s = value.strip()
    if len(s) > 10 and s[10] == " ":
        s = s[:10] + "T" + s[11:]
    if len(s) > 10:
        s = _OFFSET.sub("", s)
    return s


def _time_arg(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"`{name}` must be an ISO time such as 2026-04-06T09:00")
    s = normalise_time(value)
    m = _TIME.match(s)
    if m is None or m.end() != len(s):
        raise ToolError(f"`{name}` is not an ISO time: {value!r} (use e.g. 2026-04-06 or "
                        "2026-04-06T09:00)")
    return s


def public_event(event: PlanEvent) -> dict[str, Any]:
    """The event as the agent sees it (annotations removed)."""
    out = event.model_dump(mode="json")
    for f in HIDDEN_FIELDS:
        out.pop(f, None)
    return out


def _haystack(event: PlanEvent) -> str:
    parts = [event.action, event.ref or "", event.text or "",
             json.dumps(event.data, ensure_ascii=False, default=str) if event.data else ""]
    return "\n".join(parts).casefold()


def read_stream(stream: PlanEventStream, since: Any = None, until: Any = None,
                source: Any = None, query: Any = None, limit: Any = None) -> list[dict[str, Any]]:
    """Events in `[since, until)` (ISO times, compared lexically after normalising; a date
    alone works as a bound), from `source` (case-insensitive), whose action, ref, text or data
    contain `query` (case-insensitive), oldest first, at most `limit` (default 100, max 500)."""
    lo = _time_arg(since, "since")
    hi = _time_arg(until, "until")
    if source is not None and not isinstance(source, str):
        raise ToolError("`source` must be a string")
    if query is not None and not isinstance(query, str):
        raise ToolError("`query` must be a string")
    if limit is None:
        n = DEFAULT_LIMIT
    elif isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ToolError(f"`limit` must be a positive integer, got {limit!r}")
    else:
        n = min(limit, MAX_LIMIT)
    src = source.strip().casefold() if source else None
    needle = query.strip().casefold() if query and query.strip() else None
    out: list[dict[str, Any]] = []
    for ev in stream.events:
        at = normalise_time(ev.at)
        if lo is not None and at < lo:
            continue
        if hi is not None and at >= hi:
            continue
        if src is not None and ev.source.casefold() != src:
            continue
        if needle is not None and needle not in _haystack(ev):
            continue
        out.append(copy.deepcopy(public_event(ev)))
        if len(out) >= n:
            break
    return out
