"""Compare what τ² and benchpack did with the same calls: success or error, the exact text the
agent reads, and the database rows each call changed, field by field.

A side's answer for one sequence is `{"calls": [{"content", "error", "changes"?}],
"changes": {table: {key: row | None}}}` (the driver's `apply` shape, `db` part only). Numbers
compare by type too (`0` is not `0.0`: τ²'s database hash tells them apart). A mismatch is
*declared* when a `Declared` difference covers it — its reason is shown beside the count — and
every later mismatch of the same sequence is then its consequence (the states have diverged
on purpose). Anything else is undeclared: the harness exits non-zero. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

KINDS = ("error", "content", "db")
END = "(end of sequence)"
FIXTURES = "(fixtures)"


@dataclass
class Mismatch:
    sequence: str
    index: int | None
    """The call's position in its sequence (None: the sequence's end, or the fixtures)."""
    tool: str
    kind: str
    """`error` (one side failed, the other not), `content` (other text), `db` (other rows)."""
    detail: list[str]
    call: dict[str, Any] | None = None
    declared: str | None = None


@dataclass
class Declared:
    """A difference we know of and accept, with its reason (shown in every table)."""

    id: str
    reason: str
    tools: frozenset[str] | None = None
    kinds: frozenset[str] = frozenset(KINDS)
    match: Callable[[Mismatch], bool] | None = None

    def covers(self, m: Mismatch) -> bool:
        return (self.tools is None or m.tool in self.tools) and m.kind in self.kinds and \
            (self.match is None or self.match(m))


@dataclass
class ToolRow:
    tool: str
    calls: int = 0
    error: int = 0
    content: int = 0
    db: int = 0
    declared: int = 0


@dataclass
class Report:
    domain: str
    sequences: int = 0
    calls: int = 0
    rows: dict[str, ToolRow] = field(default_factory=dict)
    mismatches: list[Mismatch] = field(default_factory=list)
    declared: list[Declared] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def undeclared(self) -> list[Mismatch]:
        return [m for m in self.mismatches if m.declared is None]

    def add(self, found: list[Mismatch], calls: Iterable[str]) -> None:
        self.sequences += 1
        for name in calls:
            self.row(name).calls += 1
            self.calls += 1
        for m in found:
            row = self.row(m.tool)
            setattr(row, m.kind, getattr(row, m.kind) + 1)
            row.declared += m.declared is not None
        self.mismatches.extend(found)

    def row(self, tool: str) -> ToolRow:
        if tool not in self.rows:
            self.rows[tool] = ToolRow(tool)
        return self.rows[tool]

    def as_json(self, examples: int = 200) -> dict[str, Any]:
        by_declared: dict[str, int] = {}
        for m in self.mismatches:
            if m.declared:
                key = m.declared.split(" ")[0]
                by_declared[key] = by_declared.get(key, 0) + 1
        return {"domain": self.domain, "sequences": self.sequences, "calls": self.calls,
                "tools": [asdict(r) for r in self.rows.values()],
                "undeclared": len(self.undeclared), "mismatches": len(self.mismatches),
                "declared": [{"id": d.id, "reason": d.reason, "mismatches":
                              by_declared.get(d.id, 0)} for d in self.declared],
                "examples": [asdict(m) for m in self.mismatches[:examples]],
                "notes": self.notes}


# ---------------------------------------------------------------------------- values


def same(a: Any, b: Any) -> bool:
    """Equal as JSON, with number types told apart (`1` ≠ `1.0` ≠ `True`)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _show(v: Any, limit: int = 80) -> str:
    text = json.dumps(v, ensure_ascii=False, default=str)
    if isinstance(v, float) and v == int(v) and "." not in text and "e" not in text:
        text += ".0"
    text = text if len(text) <= limit else text[:limit - 1] + "…"
    return text + (f" ({type(v).__name__})" if isinstance(v, int | float) and
                   not isinstance(v, bool) else "")


def diff(a: Any, b: Any, path: str = "", out: list[str] | None = None,
         limit: int = 20) -> list[str]:
    """`path: τ² <a> · ours <b>` for every field that differs (strict types; key order of
    objects ignored, as in τ²'s hash)."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in [*a, *(k for k in b if k not in a)]:
            sub = f"{path}[{json.dumps(k, ensure_ascii=False)}]" if not str(k).isidentifier() \
                else f"{path}.{k}" if path else str(k)
            if k not in b:
                out.append(f"{sub}: τ² {_show(a[k])} · ours (missing)")
            elif k not in a:
                out.append(f"{sub}: τ² (missing) · ours {_show(b[k])}")
            else:
                diff(a[k], b[k], sub, out, limit)
        return out
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            diff(x, y, f"{path}[{i}]", out, limit)
        if len(a) != len(b):
            out.append(f"{path}: τ² {len(a)} items · ours {len(b)} items")
        return out
    if not _same_scalar(a, b):
        out.append(f"{path or '(value)'}: τ² {_show(a)} · ours {_show(b)}")
    return out


def _same_scalar(a: Any, b: Any) -> bool:
    return type(a) is type(b) and (same(a, b) if isinstance(a, dict | list) else a == b)


def text_diff(a: str, b: str, context: int = 50) -> str:
    """Where two texts first differ, with a little context."""
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a),
                                                                                    len(b)))
    lo = max(0, i - context)

    def cut(s: str) -> str:
        return ("…" if lo else "") + s[lo:i + context] + ("…" if len(s) > i + context else "")

    return f"at {i}: τ² {json.dumps(cut(a), ensure_ascii=False)} · ours " \
           f"{json.dumps(cut(b), ensure_ascii=False)}"


# ---------------------------------------------------------------------------- sequences


def compare_sequence(seq_id: str, calls: list[dict[str, Any]], theirs: dict[str, Any],
                     ours: dict[str, Any]) -> list[Mismatch]:
    """Every mismatch of one sequence (undeclared; `declare` marks them)."""
    found: list[Mismatch] = []
    for i, call in enumerate(calls):
        t, o = theirs["calls"][i], ours["calls"][i]
        name = str(call["name"])

        def add(kind: str, detail: list[str], i: int = i, name: str = name,
                call: dict[str, Any] = call) -> None:
            found.append(Mismatch(seq_id, i, name, kind, detail, call))

        if bool(t["error"]) != bool(o["error"]):
            add("error", [f"τ² {'error' if t['error'] else 'success'}: "
                          f"{_short(t['content'])}",
                          f"ours {'error' if o['error'] else 'success'}: "
                          f"{_short(o['content'])}"])
        elif t["content"] != o["content"]:
            add("content", [text_diff(t["content"], o["content"])])
        if "changes" in t:
            tc, oc = (t.get("changes") or {}).get("db", {}), o.get("changes") or {}
            # the user's own database (dual control, issue 24) counts as the database
            tu, ou = (t.get("changes") or {}).get("user_db", {}), o.get("user_changes") or {}
            if not same_changes(tc, oc) or not same_changes(tu, ou):
                add("db", diff(*_aligned(tc, oc)) if not same_changes(tc, oc)
                    else diff(*_aligned(tu, ou)))
    tc, oc = (theirs.get("changes") or {}).get("db", {}), ours.get("changes") or {}
    tu, ou = (theirs.get("changes") or {}).get("user_db", {}), ours.get("user_changes") or {}
    if not any(m.kind == "db" for m in found):
        if not same_changes(tc, oc):
            found.append(Mismatch(seq_id, None, END, "db", diff(*_aligned(tc, oc))))
        elif not same_changes(tu, ou):
            found.append(Mismatch(seq_id, None, END, "db", diff(*_aligned(tu, ou))))
    return found


def _aligned(a: dict[str, Any], b: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both sides with every table either changed (so a diff names the row, not the table)."""
    tables = [*a, *(t for t in b if t not in a)]
    return {t: a.get(t) or {} for t in tables}, {t: b.get(t) or {} for t in tables}


def same_changes(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Changed rows equal, table by table (a table with no change may be absent)."""
    a = {t: rows for t, rows in a.items() if rows}
    b = {t: rows for t, rows in b.items() if rows}
    return set(a) == set(b) and all(
        set(a[t]) == set(b[t]) and all(_same_row(a[t][k], b[t][k]) for k in a[t]) for t in a)


def _same_row(a: Any, b: Any) -> bool:
    """Rows compare as τ²'s hash does: every value with its type, object keys unordered."""
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True,
                                                                     default=str)


BUILTIN: list[Declared] = [
    Declared("render-limit", "benchpack shows an agent at most 20,000 characters of a tool "
             "result (`render_result`, with a note saying so); τ² shows it all",
             kinds=frozenset({"content"}),
             match=lambda m: any("[… truncated: showing" in d for d in m.detail)),
]
"""Differences of benchpack's own that every parity run declares (shown only when they
occur)."""

DOMAIN_DECLARED: dict[str, list[Declared]] = {
    "telecom": [
        Declared("tau2-shared-vpn", "τ²'s break_vpn (a task's set-up) degrades in place the "
                 "VPN details object every phone of its process shares, so a later connect_vpn "
                 "connects to a poor server (the driver puts it back for each sequence, as in a "
                 "fresh process; within one it stays); ours connects each phone to its own "
                 "default (excellent) server",
                 kinds=frozenset({"db", "content"}),
                 match=lambda m: any("server_performance" in d or "PerformanceLevel" in d
                                     for d in m.detail)),
        Declared("draft-bill-id", "where τ² names a new draft bill with a random `B` + 8 hex "
                 "digits (refuel_data for a customer with no draft bill), ours derives them from "
                 "the customer and the number of bills, so that a gold replay and the agent's "
                 "run name it alike", tools=frozenset({"refuel_data"}),
                 kinds=frozenset({"db"}),
                 match=lambda m: all(d.startswith(("bills.", "customers.")) for d in m.detail)),
    ],
}
"""Differences of τ²'s own per domain, declared by every parity run of that domain."""


def declare(found: list[Mismatch], declared: list[Declared]) -> None:
    """Mark the mismatches a declared difference covers, and every later one of the same
    sequence as its consequence."""
    cause: dict[str, str] = {}
    for m in found:
        d = next((d for d in declared if d.covers(m)), None)
        if d is not None:
            m.declared = d.id
            cause.setdefault(m.sequence, d.id)
        elif m.sequence in cause:
            m.declared = f"{cause[m.sequence]} (consequence)"


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


# ---------------------------------------------------------------------------- output


def render(report: Report, examples: int = 10) -> str:
    head = ["tool", "calls", "errors≠", "content≠", "db≠", "declared"]
    rows = [[r.tool, r.calls, r.error, r.content, r.db, r.declared]
            for r in sorted(report.rows.values(), key=lambda r: r.tool)]
    total = ["total", report.calls, *(sum(r[i] for r in rows) for i in range(2, 6))]  # type: ignore[misc]
    width = max(len(head[0]), *(len(str(r[0])) for r in rows)) if rows else len(head[0])
    fmt = f"{{:<{width}}}  " + "  ".join(f"{{:>{len(h)}}}" for h in head[1:])
    lines = [f"τ² parity, {report.domain}: {report.sequences} sequences, {report.calls} calls",
             "", fmt.format(*head)]
    lines += [fmt.format(*r) for r in rows]
    lines.append(fmt.format(*total))
    lines += ["", "Declared differences:"]
    counts: dict[str, int] = {}
    for m in report.mismatches:
        if m.declared:
            counts[m.declared.split(" ")[0]] = counts.get(m.declared.split(" ")[0], 0) + 1
    shown = [d for d in report.declared if counts.get(d.id) or d not in BUILTIN]
    lines += [f"- {d.id} ({counts.get(d.id, 0)} mismatches): {d.reason}"
              for d in shown] or ["- none"]
    lines += [f"note: {n}" for n in report.notes]
    undeclared = report.undeclared
    if undeclared:
        lines += ["", f"First undeclared mismatches ({min(examples, len(undeclared))} of "
                      f"{len(undeclared)}):"]
        for m in undeclared[:examples]:
            where = f"{m.sequence} #{m.index}" if m.index is not None else m.sequence
            call = json.dumps(m.call["arguments"], ensure_ascii=False)[:200] if m.call else ""
            lines.append(f"  [{where}] {m.tool} {call}")
            lines += [f"      {m.kind}: {d}" for d in m.detail[:6]]
    lines += ["", f"✓ 0 undeclared mismatches ({len(report.mismatches)} declared)"
              if not undeclared else f"✗ {len(undeclared)} undeclared mismatches"]
    return "\n".join(lines)
