"""The state check (τ²-bench's DB check): replay the gold actions on a fresh copy of the initial
state, then compare with the session's final state.

States are `service → table → rows` (what `Trace.state` and service snapshots hold). They compare
by a stable hash of their canonical JSON: keys sorted, integral floats written as integers (a
tool that stores `2.0` and one that stores `2` leave the same state), rows of a table sorted
(tables are keyed sets, their order means nothing). When the hashes differ, `diff` says how, row
by row and field by field, bounded in size so a wrecked database cannot flood the store.

`leave_out` drops tables the pack keeps out of the comparison (`environments[].state_ignores`:
bookkeeping a reference benchmark does not hash, such as τ²'s in-memory agent unlocks) from a
state before it is hashed or diffed; the stored snapshots keep them.

`replay_gold` is independent of tool kinds: the caller passes `call(state, tool, args)`, which
runs the real tool implementation (declarative, python or HTTP) on the working copy `state` and
leaves its changes there.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

State = dict[str, dict[str, list[dict[str, Any]]]]
ToolCall = Callable[[State, str, dict[str, Any]], Awaitable[Any]]

MAX_DIFFS = 50
"""Differences kept in a diff; the rest are counted."""
MAX_VALUE_CHARS = 200


def _canon(v: Any) -> Any:
    if isinstance(v, bool) or v is None or isinstance(v, (str, int)):
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            return repr(v)  # JSON has no NaN; the text keeps states with one comparable
        return int(v) if v.is_integer() and abs(v) < 2 ** 53 else v
    if isinstance(v, Mapping):
        return {str(k): _canon(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_canon(x) for x in v]
    return str(v)


def _dumps(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_ROW_TEXT: dict[int, tuple[Any, str]] = {}
"""id(row) → (row, its canonical text), for `frozen` states only. The row is kept so that its
id is not reused while the entry lives."""
ROW_TEXT_MAX = 200_000


def _row_text(row: Any) -> str:
    hit = _ROW_TEXT.get(id(row))
    if hit is not None and hit[0] is row:
        return hit[1]
    text = _dumps(_canon(row))
    if len(_ROW_TEXT) >= ROW_TEXT_MAX:
        _ROW_TEXT.clear()
    _ROW_TEXT[id(row)] = (row, text)
    return text


_TABLE_TEXT: dict[tuple[int, ...], tuple[tuple[Any, ...], str]] = {}
"""The ids of a `frozen` table's rows, in order → (those rows, the table's canonical text).
The entry holds the rows, so while it lives no other object has their ids: the same ids are
the same rows."""
TABLE_TEXT_MAX = 256


def _table_text(rows: Sequence[Any]) -> str:
    """A `frozen` table's canonical text, written once for a given list of row objects: the
    state check hashes the agent's and the gold's final states of every session, whose
    tables mostly hold the plan's rows untouched (the τ² retail gold run: ~1,500 rows a
    state; looking up, sorting and joining their texts was most of the event loop's grading
    time)."""
    held = tuple(rows)
    ids = tuple(map(id, held))
    hit = _TABLE_TEXT.get(ids)
    if hit is not None:
        return hit[1]
    text = "[" + ",".join(sorted(_row_text(r) for r in held)) + "]"
    if len(_TABLE_TEXT) >= TABLE_TEXT_MAX:
        _TABLE_TEXT.pop(next(iter(_TABLE_TEXT)))
    _TABLE_TEXT[ids] = (held, text)
    return text


def canonical(state: Mapping[str, Any], frozen: bool = False) -> str:
    """The canonical JSON text of a state (rows of each table sorted by their own JSON).
    `frozen`: the caller promises that no row of `state` is ever changed in place (a service's
    `live_rows()`), so each row's text is kept by identity and a row shared by many states
    (the plan's, in every episode that did not change it) is written out once per run."""
    # the text `_dumps` gives for {service: {table: sorted rows}}, built from each row's own
    # text: every row is canonicalised and dumped once (not once to sort, again to write)
    def key(k: Any) -> str:
        return json.dumps(str(k), ensure_ascii=False)

    services = []
    for svc, tables in sorted(((str(k), v) for k, v in state.items()), key=lambda kv: kv[0]):
        if isinstance(tables, Mapping):
            parts = []
            for t, rows in sorted(((str(k), v) for k, v in tables.items()),
                                  key=lambda kv: kv[0]):
                if not isinstance(rows, list):
                    text = _dumps(_canon(rows))
                elif frozen:
                    text = _table_text(rows)
                else:
                    text = "[" + ",".join(sorted(_dumps(_canon(r)) for r in rows)) + "]"
                parts.append(f"{key(t)}:{text}")
            services.append(f"{key(svc)}:{{{','.join(parts)}}}")
        else:
            services.append(f"{key(svc)}:{_dumps(_canon(tables))}")
    return "{" + ",".join(services) + "}"


def _canonical_before(state: Mapping[str, Any]) -> str:
    """`canonical` as it was written first (one `_dumps` of the sorted whole): kept as the
    reference the faster one is tested against."""
    out: dict[str, Any] = {}
    for svc, tables in _canon(state).items():
        if isinstance(tables, dict):
            out[svc] = {t: sorted(rows, key=_dumps) if isinstance(rows, list) else rows
                        for t, rows in tables.items()}
        else:
            out[svc] = tables
    return _dumps(out)


def state_hash(state: Mapping[str, Any], frozen: bool = False) -> str:
    """sha256 of the canonical JSON, hex (`frozen`: see `canonical`)."""
    return _digest(canonical(state, frozen))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def leave_out(state: Mapping[str, Any], tables: Sequence[str]) -> State:
    """`state` without the `service.table`s named (a new outer mapping; rows are shared, not
    copied, so a `frozen` state stays frozen)."""
    if not tables:
        return dict(state)
    drop: dict[str, set[str]] = {}
    for name in tables:
        svc, _, table = name.partition(".")
        drop.setdefault(svc, set()).add(table)
    return {svc: ({t: rows for t, rows in ts.items() if t not in drop[svc]}
                  if svc in drop and isinstance(ts, Mapping) else ts)
            for svc, ts in state.items()}


# --------------------------------------------------------------------------- diff


@dataclass
class Change:
    service: str
    table: str
    key: str
    """The row's key value (or its position when the table has no key)."""
    kind: str
    """`changed`, `added` (only in the session's state) or `removed` (only in the gold's)."""
    path: str = ""
    """Dotted path of the changed field (`address.zip`, `items.2`)."""
    expected: Any = None
    got: Any = None

    def text(self) -> str:
        where = f"{self.service}.{self.table}[{self.key}]"
        if self.kind == "changed":
            return f"{where}.{self.path}: expected {_clip(self.expected)}, got {_clip(self.got)}"
        row = self.got if self.kind == "added" else self.expected
        return f"{where}: {self.kind} row {_clip(row)}"


@dataclass
class StateDiff:
    changes: list[Change] = field(default_factory=list)
    more: int = 0
    """Differences found beyond `MAX_DIFFS`."""

    def text(self) -> str:
        lines = [c.text() for c in self.changes]
        if self.more:
            lines.append(f"… and {self.more} more differences")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"changes": [{"service": c.service, "table": c.table, "key": c.key,
                             "kind": c.kind, "path": c.path, "expected": _bound(c.expected),
                             "got": _bound(c.got)} for c in self.changes],
                "more": self.more}


def _clip(v: Any) -> str:
    s = json.dumps(v, ensure_ascii=False, default=str, sort_keys=True)
    return s if len(s) <= MAX_VALUE_CHARS else s[:MAX_VALUE_CHARS - 1] + "…"


def _bound(v: Any) -> Any:
    s = json.dumps(v, ensure_ascii=False, default=str)
    return v if len(s) <= MAX_VALUE_CHARS else _clip(v)


def _key_field(sides: tuple[list[Any], list[Any]], hint: str | None) -> str | None:
    """The field that names a row: the table's declared key, else `id`, `key` or the one
    `…_id`/`…id` field every row has, when it is distinct within each side."""
    if hint is not None:
        return hint
    rows = [r for side in sides for r in side]
    if not rows or not all(isinstance(r, dict) for r in rows):
        return None
    common = set.intersection(*(set(r) for r in rows))
    ids = sorted(f for f in common if f.lower().endswith("id") and f not in ("id",))
    for name in ["id", "key", *ids]:
        if name in common and all(
                len({_dumps(r[name]) for r in side}) == len(side) for side in sides):
            return str(name)
    return None


def diff(expected: Mapping[str, Any], got: Mapping[str, Any],
         keys: Mapping[str, str] | None = None) -> StateDiff:
    """How `got` (the session's final state) differs from `expected` (the gold replay's).
    `keys` maps `service.table` to its key field; otherwise `id` (or `key`) is used when every
    row has a distinct one, else whole rows are compared as a set."""
    out = StateDiff()

    def add(c: Change) -> None:
        if len(out.changes) < MAX_DIFFS:
            out.changes.append(c)
        else:
            out.more += 1

    e, g = _canon(expected), _canon(got)
    for svc in sorted(set(e) | set(g)):
        et, gt = e.get(svc) or {}, g.get(svc) or {}
        for table in sorted(set(et) | set(gt)):
            erows, grows = list(et.get(table) or []), list(gt.get(table) or [])
            name = _key_field((erows, grows), (keys or {}).get(f"{svc}.{table}"))
            if name is None:
                _diff_sets(svc, table, erows, grows, add)
                continue
            emap = {_key_text(r, name): r for r in erows}
            gmap = {_key_text(r, name): r for r in grows}
            for k in sorted(set(emap) | set(gmap)):
                if k not in gmap:
                    add(Change(svc, table, k, "removed", expected=emap[k]))
                elif k not in emap:
                    add(Change(svc, table, k, "added", got=gmap[k]))
                else:
                    for path, a, b in _fields(emap[k], gmap[k], ""):
                        add(Change(svc, table, k, "changed", path, a, b))
    return out


_ABSENT = "(absent)"


def _key_text(row: Any, name: str) -> str:
    v = row.get(name) if isinstance(row, dict) else None
    return v if isinstance(v, str) else _dumps(v)


def _fields(a: Any, b: Any, path: str) -> list[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            sub = f"{path}.{k}" if path else k
            out += _fields(a.get(k, _ABSENT), b.get(k, _ABSENT), sub)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            out += _fields(x, y, f"{path}.{i}" if path else str(i))
        return out
    return [] if _dumps(a) == _dumps(b) else [(path or "(row)", a, b)]


def _diff_sets(svc: str, table: str, erows: list[Any], grows: list[Any],
               add: Callable[[Change], None]) -> None:
    from collections import Counter

    ec, gc = Counter(map(_dumps, erows)), Counter(map(_dumps, grows))
    for text in sorted((ec - gc).elements()):
        add(Change(svc, table, "?", "removed", expected=json.loads(text)))
    for text in sorted((gc - ec).elements()):
        add(Change(svc, table, "?", "added", got=json.loads(text)))


# --------------------------------------------------------------------------- replay


class GoldReplayError(Exception):
    """A gold action failed on replay: the gold is wrong (or the tools changed), so the state
    check cannot be scored — it is unknown, never a failure of the agent."""

    def __init__(self, index: int, tool: str, message: str) -> None:
        super().__init__(f"gold action {index + 1} ({tool}) failed on replay: {message}")
        self.index = index
        self.tool = tool


async def replay_gold(actions: Sequence[Mapping[str, Any]], initial_state: Mapping[str, Any],
                      call: ToolCall, settled: Callable[[], State] | None = None) -> State:
    """The state after the gold actions (`{tool, args}`), run in order by `call` on a deep copy
    of `initial_state` (never changed). With `settled`, `call` keeps the state elsewhere (a
    replay environment): no copy is made, and `settled()` gives the state after the last
    action (once, not after every call)."""
    state: State = {} if settled is not None else copy.deepcopy(dict(initial_state))
    for i, action in enumerate(actions):
        try:
            await call(state, str(action["tool"]), dict(action.get("args") or {}))
        except Exception as exc:  # any failure of a gold call is the gold's problem
            raise GoldReplayError(i, str(action.get("tool")),
                                  f"{type(exc).__name__}: {exc}") from exc
    return settled() if settled is not None else state


@dataclass
class StateCheck:
    passed: bool | None
    """Equal (True), different (False), unknown (None: the gold could not be replayed)."""
    expected_hash: str | None
    got_hash: str
    diff: StateDiff
    error: str | None = None
    left_out: list[str] = field(default_factory=list)
    """The `service.table`s not compared (`ignore`): the hashes are of the rest."""

    def extra(self) -> dict[str, Any]:
        out: dict[str, Any] = {"passed": self.passed, "expected_hash": self.expected_hash,
                               "got_hash": self.got_hash, "diff": self.diff.as_dict(),
                               "error": self.error}
        if self.left_out:  # only when some, so other stored results stay as they were
            out["left_out"] = list(self.left_out)
        return out


async def check_state(actions: Sequence[Mapping[str, Any]], initial_state: Mapping[str, Any],
                      final_state: Mapping[str, Any], call: ToolCall,
                      keys: Mapping[str, str] | None = None,
                      settled: Callable[[], State] | None = None,
                      frozen: bool = False, ignore: Sequence[str] = ()) -> StateCheck:
    """Replay, hash both, and diff when they differ (`settled`: see `replay_gold`; `frozen`:
    both states are services' live rows, see `canonical`; `ignore`: `service.table`s left
    out of both before hashing, see `leave_out`)."""
    final_state = leave_out(final_state, ignore)
    got_text = canonical(final_state, frozen)
    got = _digest(got_text)
    try:
        expected = leave_out(await replay_gold(actions, initial_state, call, settled), ignore)
    except GoldReplayError as exc:
        return StateCheck(None, None, got, StateDiff(), str(exc), list(ignore))
    # the same text has the same hash: hashing a τ² retail state (1.4 MB of text) costs the
    # event loop ~2.5 ms, comparing the two texts a small part of that
    want_text = canonical(expected, frozen)
    want = got if want_text == got_text else _digest(want_text)
    if want == got:
        return StateCheck(True, want, got, StateDiff(), left_out=list(ignore))
    found = diff(expected, final_state, keys)
    if not found.changes:
        # the rows agree; what differs is the layout (a table or service on one side only)
        found.changes.append(Change("", "", "", "changed", "(tables)",
                                    sorted(f"{s}.{t}" for s, ts in expected.items() for t in ts),
                                    sorted(f"{s}.{t}" for s, ts in final_state.items()
                                           for t in ts)))
    return StateCheck(False, want, got, found, left_out=list(ignore))


__all__ = ["Change", "GoldReplayError", "StateCheck", "StateDiff", "canonical", "check_state",
           "diff", "leave_out", "replay_gold", "state_hash"]
