"""`bench report --format html`: one self-contained static page with every report's tables and
charts, and a per-session drill-down (transcript with what was judged at each turn).

Self-contained: Chart.js (vendored in `assets/`, see the README there), our CSS and our JS are
inlined, so the file opens offline and requests nothing. Every stored text is escaped; chart data
travels as JSON in a `<script type="application/json">` block with `<`, `>`, `&` escaped, so no
stored text can close a tag.

`Chart.data` by `Chart.kind` (values are fractions in [0, 1] unless said otherwise):

- `scatter`: `{"series": {name: [{"x", "y", "label"?}, …]}, "diagonal": bool?}`; an axis is
  drawn as 0–100 when its label is the title of a percentage column of the same report
  (`PROC`, `COMP`, …) or `data["x_pct"]` / `data["y_pct"]` is true; points of a series at the
  same spot are drawn as one marker whose area grows with their number;
- `bar`: `{"categories": [c, …], "series": {name: {c: value}}}`;
- `stacked_bar`: `{"categories": [c, …], "bars": {bar: {c: share}}}` — one bar per key, split
  into categories;
- `errorbar`: `{"categories": [c, …], "series": {name: {c: {"value", "low", "high", "n"?}}}}`
  — a bar per (category, series) with its CI drawn as a whisker (none when `n` < 2).
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from .access import open_store
from .model import Chart, Column, Estimate, ReportResult, Table
from .render import DASH, FEW, _num, _pct_note, cell_text, sample_text

SESSIONS_PER_RUN = 40
"""Drill-down cap: session attempts shown per run (the rest are reachable with `bench query`)."""
MESSAGES_PER_SESSION = 300
"""Messages of a session in the page (its first, by `seq`); the page says how many more it has."""
FOLD_AT = 1200
"""Characters of a message shown at once; the rest (up to TEXT_LIMIT) behind "show more"."""
TEXT_LIMIT = 6000
"""Characters of one message in the file at all; the rest is cut with a marker saying so."""
PAGE_BUDGET = 10_000_000
"""Characters of transcripts in one page, shared equally by the runs; past a run's share its
sessions keep only their summary line."""
ARGS_LIMIT = 400
RESULT_LIMIT = 1500

_GENERATED = "\x00generated\x00"
_DIGEST = "\x00digest\x00"


def esc(text: Any) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def _prose(text: str) -> str:
    """A report's own note: escaped, with `code` spans and its addresses (`bench compare`
    names `bench view`'s pages) as links."""
    return _links(re.sub(r"`([^`]+)`", r"<code>\1</code>", esc(text)))


_URL = re.compile(r"\bhttps?://[^\s<>\"']+")


def _links(escaped: str) -> str:
    """Addresses in already escaped text as links (an `&amp;` in one stays escaped, as an
    attribute wants it)."""
    return _URL.sub(lambda m: f'<a href="{m.group(0)}">{m.group(0)}</a>', escaped)


def _asset(name: str) -> str:
    return (resources.files(__package__) / "assets" / name).read_text(encoding="utf-8")


def chart_js() -> str:
    """The vendored Chart.js build, without its source-map comment (the map is not shipped and
    a viewer's dev tools would try to fetch it)."""
    return re.sub(r"\n//# sourceMappingURL=\S+\s*$", "\n", _asset("chart.umd.min.js"))


# --------------------------------------------------------------------------- drill-down data


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    agent: str
    pack: str | None = None
    pack_version: str | None = None
    simulator: str | None = None
    judge: str | None = None
    repeats: int | None = None
    status: str | None = None
    created_at: float | None = None


@dataclass
class SessionTrace:
    """One session attempt as the drill-down shows it; rows are the store's, as dicts."""

    session: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    intents: list[dict[str, Any]] = field(default_factory=list)
    triggers: list[dict[str, Any]] = field(default_factory=list)
    stages: list[dict[str, Any]] = field(default_factory=list)
    checklist: list[dict[str, Any]] = field(default_factory=list)
    messages_total: int = 0
    flagged: bool = False
    """The session errored or had judge or grader errors (`_CHOOSE`)."""

    @property
    def key(self) -> tuple[str, str, int]:
        s = self.session
        return str(s["run_id"]), str(s["session_id"]), int(s["repeat"])


@dataclass
class Drilldown:
    runs: list[RunInfo]
    sessions: list[SessionTrace]
    notes: dict[str, str] = field(default_factory=dict)
    """Run id → what was left out of its drill-down and how the shown sessions were chosen."""


def _dicts(cur: Any) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


_CHOOSE = """
WITH s AS (
    SELECT rowid AS row, list_position($runs, run_id) AS run, session_id, repeat,
           coalesce(started_at, 0.0) AS start, coalesce(episode, 'None') AS ep,
           status = 'error' OR coalesce(judge_errors, 0) <> 0
               OR coalesce(grader_errors, 0) <> 0 AS flagged,
           least(coalesce(proc_group, proc), comp, score, f1, trigger_score) AS headline
    FROM sessions WHERE list_contains($runs, run_id) AND status <> 'skipped'
), ordered AS (
    SELECT row, run, flagged, headline,
           row_number() OVER (PARTITION BY run ORDER BY ep_start, ep, repeat, start,
                                                        session_id) - 1 AS i,
           count(*) OVER (PARTITION BY run) AS n
    FROM s JOIN (SELECT run, ep, min(start) AS ep_start FROM s GROUP BY ALL) USING (run, ep)
), worst AS (
    SELECT *, n > $cap AND row_number() OVER (
               PARTITION BY run ORDER BY flagged DESC, headline ASC NULLS LAST, i
           ) <= $cap // 2 AS worst
    FROM ordered
), rest AS (
    SELECT *, row_number() OVER (PARTITION BY run, worst ORDER BY i) - 1 AS r,
           count(*) OVER (PARTITION BY run, worst) AS rest, $cap - $cap // 2 AS k
    FROM worst
), chosen AS (
    SELECT * FROM rest
    WHERE n <= $cap OR worst
       -- the rest spread evenly: the r-th is shown when r = ⌊j·rest / k⌋ for some j < k
       OR ((r * k + rest - 1) // rest < k AND (r * k + rest - 1) // rest * rest // k = r)
)
SELECT c.row, c.run AS run_pos, c.i, c.n, c.worst, c.flagged, s.run_id, s.session_id, s.repeat
FROM chosen c JOIN sessions s ON s.rowid = c.row
"""
"""The drill-down's session attempts of each run, in run order (episodes by their first start,
then repeat, then start time: dependency order), all of them up to the cap; above it half the
cap goes to the worst (errors or judge/grader errors first, then the lowest headline score —
the lowest of PROC, COMP, verified score, F1 and trigger score), the other half to the rest,
evenly spaced in run order. One row per chosen session: its row id, run-order index `i` among
the run's `n`, whether it is one of the `worst` and `flagged` (errors). Sessions are carried by
row id through the window sorts (their strings would be sorted along)."""


def _choice_note(chosen: Sequence[dict[str, Any]], cap: int) -> str | None:
    """How a run's shown sessions were chosen, when not all of them fit."""
    if not chosen or chosen[0]["_n"] <= cap:
        return None
    worst = [c for c in chosen if c["_worst"]]
    flagged = sum(1 for c in worst if c["_flagged"])
    parts = []
    if flagged:
        parts.append(f"{flagged} with errors or judge/grader errors")
    if len(worst) > flagged:
        parts.append(f"the {len(worst) - flagged} lowest-scoring")
    parts.append(f"{cap - len(worst)} others evenly spaced in run order")
    return (f"Showing {cap} of {chosen[0]['_n']} session attempts: {', '.join(parts)}. "
            "`bench query` reads every transcript (tables `messages`, `intent_status`, "
            "`triggers`, `checklist_results`).")


def load_drilldown(con: Any, runs: Sequence[str], *, per_run: int = SESSIONS_PER_RUN,
                   messages_per_session: int = MESSAGES_PER_SESSION) -> Drilldown:
    """Read the runs' descriptions and the drill-down's sessions (chosen in SQL, `_CHOOSE`)
    from an open store."""
    if not runs:
        return Drilldown([], [])
    marks = ", ".join("?" * len(runs))
    run_rows = {r["run_id"]: r for r in _dicts(con.execute(
        f"SELECT * FROM runs WHERE run_id IN ({marks})", list(runs)))}
    agents = dict(con.execute(
        f"SELECT run_id, any_value(agent) FROM sessions WHERE run_id IN ({marks}) "
        "GROUP BY run_id", list(runs)).fetchall())
    infos = []
    for run in runs:
        r = run_rows.get(run, {})
        infos.append(RunInfo(run, str(agents.get(run) or r.get("agent") or "?"),
                             r.get("pack_name"), r.get("pack_version"), r.get("simulator"),
                             r.get("judge"), r.get("repeats"), r.get("status"),
                             r.get("created_at")))
    cap = int(per_run)
    # the chosen keys go to a temporary table every read below joins (cheaper than binding
    # hundreds of keys again for each table)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {_KEYS} AS {_CHOOSE}",
                {"runs": list(runs), "cap": cap})
    try:
        return _drilldown(con, infos, cap, int(messages_per_session))
    finally:
        con.execute(f"DROP TABLE IF EXISTS {_KEYS}")


_KEYS = "temp.bp_drilldown_keys"


def _drilldown(con: Any, infos: list[RunInfo], cap: int, messages_per_session: int
               ) -> Drilldown:
    """The chosen sessions (`_KEYS`) with their child rows, and the notes on the choice."""
    chosen = _dicts(con.execute(
        f"SELECT k.i AS _i, k.n AS _n, k.worst AS _worst, k.flagged AS _flagged, s.* "
        f"FROM {_KEYS} k JOIN sessions s ON s.rowid = k.row ORDER BY k.run_pos, k.i"))
    notes = {}
    for info in infos:
        note = _choice_note([c for c in chosen if c["run_id"] == info.run_id], cap)
        if note:
            notes[info.run_id] = note
    traces = {}
    for row in chosen:
        flagged = bool(row["_flagged"])
        s = {k: v for k, v in row.items() if not k.startswith("_")}
        traces[(s["run_id"], s["session_id"], s["repeat"])] = SessionTrace(s, flagged=flagged)
    if not traces:
        return Drilldown(infos, [], notes)

    def rows(table: str, order: str) -> list[dict[str, Any]]:
        return _dicts(con.execute(
            f"SELECT t.* FROM {table} t JOIN {_KEYS} USING (run_id, session_id, repeat) "
            f"ORDER BY {order}"))

    # the first messages of each session and how many it has, in one pass over `messages`
    # (found by their keys, then read whole by row id: message texts are the bulk of the table)
    for r in _dicts(con.execute(
            "WITH hit AS (SELECT t.rowid AS row, row_number() OVER w AS n, "
            "count(*) OVER (PARTITION BY run_id, session_id, repeat) AS total "
            f"FROM messages t JOIN {_KEYS} USING (run_id, session_id, repeat) "
            "WINDOW w AS (PARTITION BY run_id, session_id, repeat ORDER BY seq)) "
            "SELECT t.*, hit.total AS _total FROM hit JOIN messages t ON t.rowid = hit.row "
            f"WHERE hit.n <= {messages_per_session} ORDER BY t.seq")):
        trace = traces[(r["run_id"], r["session_id"], r["repeat"])]
        trace.messages_total = int(r.pop("_total"))
        trace.messages.append(r)
    for table, attr, order in (("tool_calls", "tool_calls", "seq"),
                               ("intent_status", "intents", "turn NULLS LAST, intent_id"),
                               ("triggers", "triggers", "turn, trigger_id"),
                               ("stage_events", "stages", "turn, stage_index"),
                               ("checklist_results", "checklist", "item_id")):
        for r in rows(table, order):
            getattr(traces[(r["run_id"], r["session_id"], r["repeat"])], attr).append(r)
    return Drilldown(infos, list(traces.values()), notes)


# --------------------------------------------------------------------------- tables


def _estimate_html(value: Estimate, column: Column) -> str:
    if value.value is None:
        return DASH
    kind = column.kind if column.kind != "text" else "float"
    out = f'<span class="v">{esc(_num(value.value, kind))}</span>'
    if value.std is not None:
        out += f' <span class="sd">± {esc(_num(value.std, kind))}</span>'
    units = value.clusters or value.n
    if value.low is not None and value.high is not None and units > 1:
        out += (f'<span class="ci" title="{esc(value.method or "CI")} over {units} units">'
                f"[{esc(_num(value.low, kind))}, {esc(_num(value.high, kind))}]</span>")
    if value.se is not None:
        out += f' <span class="se">({esc(sample_text(value, kind))})</span>'
    if value.few:
        out += f'<span class="few" title="fewer than 10 independent units">{FEW}</span>'
    return out


def _table_html(table: Table, anchor: str) -> str:
    out = [f'<h3 id="{anchor}">{esc(table.title)}</h3>']
    if not table.rows:
        out.append('<p class="empty">No data in these runs.</p>')
    else:
        head = "".join(
            f'<th class="{"txt" if c.kind == "text" else "num"}"'
            + (f' title="{esc(c.doc)}"' if c.doc else "") + f">{esc(c.title)}</th>"
            for c in table.columns)
        body = []
        for row in table.rows:
            cells = []
            for value, col in zip(row, table.columns, strict=True):
                numeric = col.kind != "text" or isinstance(value, Estimate)
                text = (_estimate_html(value, col) if isinstance(value, Estimate)
                        else _links(esc(cell_text(value, col))))
                # short labels stay on one line; long ones (run ids, errors) may wrap
                cls = "num" if numeric else "txt" if len(text) > 24 else "txt nowrap"
                cells.append(f'<td class="{cls}">{text}</td>')
            body.append("<tr>" + "".join(cells) + "</tr>")
        out.append('<div class="table-wrap"><table><thead><tr>' + head + "</tr></thead><tbody>"
                   + "".join(body) + "</tbody></table></div>")
    notes = [*table.notes, *_pct_note(table)]
    if notes:
        out.append('<ul class="notes">' + "".join(f"<li>{_prose(n)}</li>" for n in notes)
                   + "</ul>")
    return "\n".join(out)


# --------------------------------------------------------------------------- charts


def _pct(v: Any) -> float | None:
    return None if v is None or not math.isfinite(float(v)) else round(100 * float(v), 4)


def _known(v: Any) -> bool:
    return v is not None and math.isfinite(float(v))


def chart_spec(result: ReportResult, chart: Chart) -> dict[str, Any] | None:
    """What `report.js` needs to draw `chart`; None when it has nothing to draw."""
    d = chart.data
    base: dict[str, Any] = {"title": chart.title, "x_label": chart.x_label,
                            "y_label": chart.y_label}
    if chart.kind == "scatter":
        # a column labelled as the rules judge's heuristic ("COMP (keyword …)") is still COMP
        pct_titles = {c.title.split(" (")[0] for t in result.tables for c in t.columns
                      if c.kind == "pct"}
        x_pct = bool(d.get("x_pct", chart.x_label in pct_titles))
        y_pct = bool(d.get("y_pct", chart.y_label in pct_titles))
        datasets = []
        for name, points in d.get("series", {}).items():
            # sessions at the same spot become one marker that counts them (its area grows)
            spots: dict[tuple[Any, Any], dict[str, Any]] = {}
            for p in points:
                if not (_known(p.get("x")) and _known(p.get("y"))):
                    continue
                x = _pct(p["x"]) if x_pct else p["x"]
                y = _pct(p["y"]) if y_pct else p["y"]
                spot = spots.setdefault((x, y), {"x": x, "y": y, "n": 0, "labels": []})
                spot["n"] += 1
                if p.get("label") is not None and len(spot["labels"]) < 5:
                    spot["labels"].append(str(p["label"]))
            if spots:
                datasets.append({"label": str(name), "points": list(spots.values())})
        if not datasets:
            return None
        return {**base, "kind": "scatter", "x_pct": x_pct, "y_pct": y_pct,
                "diagonal": bool(d.get("diagonal")), "datasets": datasets}
    categories = [str(c) for c in d.get("categories", [])]
    if chart.kind == "stacked_bar":
        bars = {str(k): v for k, v in d.get("bars", {}).items()}
        if not bars:
            return None
        return {**base, "kind": "stacked", "labels": list(bars),
                "datasets": [{"label": c, "values": [_pct(bars[b].get(c)) for b in bars]}
                             for c in categories]}
    series = {str(k): v for k, v in d.get("series", {}).items()}
    # drop categories no series has a value for (e.g. a trigger type that never occurred)
    used = [c for c in categories if any(_value(s.get(c)) is not None for s in series.values())]
    if not used:
        return None
    if chart.kind == "bar":
        return {**base, "kind": "bar", "labels": used,
                "datasets": [{"label": n, "values": [_pct(_value(s.get(c))) for c in used]}
                             for n, s in series.items()]}
    if chart.kind == "errorbar":
        return {**base, "kind": "errorbar", "labels": used, "datasets": [
            {"label": n, "values": [_pct(_value(s.get(c))) for c in used],
             "low": [_ci(s.get(c), "low") for c in used],
             "high": [_ci(s.get(c), "high") for c in used]}
            for n, s in series.items()]}
    raise ValueError(f"unknown chart kind `{chart.kind}`")


def _ci(cell: Any, end: str) -> float | None:
    """A CI bound in percent; none where the cell says it rests on fewer than two units (the
    tables print no CI there either)."""
    if not isinstance(cell, dict) or int(cell.get("n", 2)) < 2:
        return None
    return _pct(cell.get(end))


def _value(cell: Any) -> Any:
    return cell.get("value") if isinstance(cell, dict) else cell


def _json_script(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# --------------------------------------------------------------------------- transcripts


def _clip(text: str, limit: int) -> tuple[str, int]:
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def _more(hidden: int) -> str:
    return f'<span class="cut">… {hidden:,} more characters not shown</span>' if hidden else ""


def _highlight(text: str, quotes: Sequence[str]) -> str:
    """`text` escaped, with every occurrence of the (verbatim) quotes marked."""
    spans: list[tuple[int, int]] = []
    for q in quotes:
        start = text.find(q) if q else -1
        while start >= 0:
            spans.append((start, start + len(q)))
            start = text.find(q, start + len(q))
    out, pos = [], 0
    for a, b in sorted(spans):
        if a < pos:
            continue
        out += [esc(text[pos:a]), "<mark>", esc(text[a:b]), "</mark>"]
        pos = b
    out.append(esc(text[pos:]))
    return "".join(out)


def _text_block(text: str, quotes: Sequence[str]) -> str:
    """A message's text, escaped, quotes marked, long text folded and very long text cut."""
    text, hidden = _clip(text, TEXT_LIMIT)
    cut = FOLD_AT
    for q in quotes:  # never fold inside a marked quote
        start = text.find(q) if q else -1
        while start >= 0:
            if start < cut < start + len(q):
                cut = start + len(q)
            start = text.find(q, start + len(q))
    if len(text) <= cut + 200:  # folding a short tail is more noise than it saves
        return _highlight(text, quotes) + _more(hidden)
    return (_highlight(text[:cut], quotes) + f'<details class="more"><summary>show '
            f"{len(text) - cut + hidden:,} more characters</summary>"
            + _highlight(text[cut:], quotes) + _more(hidden) + "</details>")


def _json_text(raw: Any) -> str:
    if raw is None:
        return ""
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return raw
        return json.dumps(value, ensure_ascii=False, default=str)
    return json.dumps(raw, ensure_ascii=False, default=str)


def _tool_html(name: str, args: Any, result: Any, error: str | None) -> str:
    shown, hidden = _clip(_json_text(args), ARGS_LIMIT)
    out = (f'<div class="tool"><span class="tool-name">{esc(name)}</span>'
           f'<code class="args">{esc(shown)}</code>{_more(hidden)}')
    if error:
        out += f'<div class="tool-error">error: {esc(error)}</div>'
    elif result is not None:
        text = _json_text(result)
        shown, hidden = _clip(text, RESULT_LIMIT)
        out += (f"<details><summary>result · {len(text):,} characters</summary>"
                f"<pre>{esc(shown)}</pre>{_more(hidden)}</details>")
    return out + "</div>"


def _badge(kind: str, text: Any) -> str:
    cls = re.sub(r"[^a-z0-9]+", "-", str(text).lower())
    return f'<span class="badge {kind}-{cls}">{esc(text)}</span>'


def _intent_html(i: dict[str, Any]) -> str:
    warn = (f' <span class="warn">judge error: {esc(i["judge_error"])}</span>'
            if i.get("judge_error") else "")
    then = _THEN.get(str(i.get("status")), "")
    return (f'<div class="ann intent">{_badge("st", i.get("status"))} '
            f'<span class="what">intent</span> <code>{esc(i.get("intent_id"))}</code> '
            f'<span class="dim">({esc(i.get("scope"))})</span> {esc(i.get("text"))}'
            + (f' <span class="dim">{then}</span>' if then else "") + f"{warn}</div>")


_THEN = {"inferred": "— the agent asked about it; the user answers in the next message",
         "provided": "— the agent missed it; the user volunteers it in the next message"}


def _trigger_html(t: dict[str, Any], response_shown: bool) -> str:
    label = t.get("label")
    head = (f'{_badge("tr", label or "judge error")} <span class="what">trigger</span> '
            f'<code>{esc(t.get("trigger_id"))}</code> <span class="dim">{esc(t.get("type"))} · '
            f'{esc(t.get("mode"))}'
            + (f" · score {float(t['score']):g}" if t.get("score") is not None else "")
            + "</span>")
    body = ""
    if t.get("rationale"):
        body += f'<div class="rationale">{esc(t["rationale"])}</div>'
    evidence = t.get("evidence")
    if evidence:
        found = t.get("quote_found")
        body += (f'<blockquote class="evidence"><mark>{esc(evidence)}</mark></blockquote>'
                 + ("" if found else '<div class="warn">this quote does not occur in the '
                    "response</div>"))
    if t.get("judge_error"):
        body += f'<div class="warn">judge error: {esc(t["judge_error"])}</div>'
    if not response_shown and t.get("response"):
        quotes = [evidence] if evidence and t.get("quote_found") else []
        body += ('<details open><summary>response judged (regenerated for this trigger)'
                 f'</summary><div class="text">{_text_block(str(t["response"]), quotes)}'
                 "</div></details>")
    rubric = "".join(f"<dt>{name}</dt><dd>{esc(t.get(key))}</dd>"
                     for name, key in (("pass", "pass_criteria"), ("partial", "partial_criteria"),
                                       ("fail", "fail_criteria")) if t.get(key))
    if rubric:
        body += f'<details><summary>rubric</summary><dl class="rubric">{rubric}</dl></details>'
    return f'<div class="ann trigger">{head}{body}</div>'


def _stage_html(e: dict[str, Any]) -> str:
    idx = e.get("stage_index")
    return (f'<div class="ann stage">{_badge("sg", e.get("event") or "stage")} '
            f'<span class="what">stage{"" if idx is None else f" {int(idx) + 1}"}</span> '
            f'<code>{esc(e.get("stage_id"))}</code> <span class="dim">{esc(e.get("kind"))}</span>'
            + (f" {esc(e.get('detail'))}" if e.get("detail") else "") + "</div>")


def _checklist_html(items: list[dict[str, Any]]) -> str:
    rows = []
    for c in items:
        score = c.get("score")
        if c.get("error"):
            verdict = _badge("ck", "error")
        elif score is None:
            verdict = DASH
        else:
            verdict = _badge("ck", "yes" if score >= 1 else "no" if score <= 0 else f"{score:g}")
        detail = c.get("error") or c.get("detail") or ""
        shown, hidden = _clip(str(detail), 600)
        rows.append(f'<tr><td class="txt"><code>{esc(c.get("item_id"))}</code></td>'
                    f'<td class="txt">{esc(c.get("text"))}</td>'
                    f'<td class="txt">{esc(c.get("grader"))}'
                    + (f' <span class="dim">{esc(c.get("aspect"))}</span>'
                       if c.get("aspect") else "")
                    + f'</td><td class="num">{verdict}</td>'
                    f'<td class="num">{esc(_fmt_weight(c.get("weight")))}</td>'
                    f'<td class="txt detail">{esc(shown)}{_more(hidden)}</td></tr>')
    return ('<div class="table-wrap"><table class="checklist"><thead><tr><th class="txt">item</th>'
            '<th class="txt">criterion</th><th class="txt">grader</th><th class="num">passed</th>'
            '<th class="num">weight</th><th class="txt">detail</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table></div>")


def _fmt_weight(w: Any) -> str:
    return DASH if w is None else f"{float(w):g}"


def _message_html(m: dict[str, Any], quotes: Sequence[str],
                  calls: dict[tuple[int, str], dict[str, Any]],
                  shown_calls: set[tuple[int, str]]) -> str:
    role = str(m.get("role"))
    content = str(m.get("content") or "")
    turn = int(m.get("turn") or 0)
    if role == "tool" and (turn, str(m.get("tool_call_id"))) in shown_calls:
        return ""  # its result is shown under the call
    if role == "tool":
        return _tool_html(str(m.get("name") or "tool"), None, content, None)
    who, cls = role, role
    if role == "user" and m.get("name") == "environment":
        who, cls = "environment event", "env"
        content = _pretty(content)
    tool_calls = _json_list(m.get("tool_calls"))
    if content or not tool_calls:
        text = _text_block(content, quotes) if content else '<span class="dim">(no text)</span>'
        out = (f'<div class="msg {esc(cls)}"><div class="who">{esc(who)}</div>'
               f'<div class="text">{text}</div>')
    else:  # an agent step that only calls tools: no speech bubble
        out = '<div class="steps">'
    for call in tool_calls:
        cid = (turn, str(call.get("id") or ""))
        rec = calls.get(cid)
        shown_calls.add(cid)
        name = str(call.get("name") or (call.get("function") or {}).get("name") or "tool")
        args = call.get("arguments", (call.get("function") or {}).get("arguments"))
        if rec is not None:
            out += _tool_html(rec["tool_name"] or name, rec["call"] or args, rec["result"],
                              rec["error"])
        else:
            out += _tool_html(name, args, None, None)
    return out + "</div>"


def _pretty(text: str) -> str:
    try:
        return json.dumps(json.loads(text), ensure_ascii=False, indent=1)
    except ValueError:
        return text


def _json_list(raw: Any) -> list[dict[str, Any]]:
    if not raw:
        return []
    value = json.loads(raw) if isinstance(raw, str) else raw
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _metric_chips(s: dict[str, Any]) -> str:
    chips = []
    proc = s.get("proc_group") if s.get("proc_group") is not None else s.get("proc")
    for name, value in (("PROC", proc), ("COMP", s.get("comp")), ("score", s.get("score")),
                        ("F1", s.get("f1")), ("trigger score", s.get("trigger_score"))):
        if value is not None:
            chips.append(f"{name} {_num(float(value), 'pct')}")
    if s.get("passed") is not None:
        chips.append("passed" if s["passed"] else "failed")
    if s.get("turns") is not None:
        chips.append(f"{int(s['turns'])} turn{'s' * (int(s['turns']) != 1)}")
    errors = int(s.get("judge_errors") or 0) + int(s.get("grader_errors") or 0)
    if errors:
        chips.append(f'<span class="warn">{errors} judge/grader error{"s" * (errors != 1)}'
                     "</span>")
    return " · ".join(c if c.startswith("<") else esc(c) for c in chips)


def _session_id(key: tuple[str, str, int]) -> str:
    return "s-" + hashlib.sha1(json.dumps(key).encode()).hexdigest()[:12]


def session_html(trace: SessionTrace, *, transcript: bool = True, open_: bool = False,
                 extra: dict[int, list[str]] | None = None) -> str:
    """One session attempt: summary line, transcript by turn with the statuses, trigger scores
    and stage events of each turn, then the checklist (only the summary with
    `transcript=False`). `extra`: more HTML per turn (`bench view` adds tokens, latency and
    the judge and simulator calls); `open_`: unfolded."""
    s = trace.session
    if not transcript:
        return (f'<details class="session{" flagged" if trace.flagged else ""}" '
                f'id="{_session_id(trace.key)}"><summary>{_summary(s)}</summary>'
                '<div class="session-body"><p class="empty">Transcript left out: this run\'s '
                "share of the page's size budget is used up. <code>bench query</code> reads "
                "it.</p></div></details>")
    calls = {(int(r.get("turn") or 0), str(r["call_id"])): r for r in trace.tool_calls
             if r.get("call_id")}
    shown_calls: set[tuple[int, str]] = set()
    at_turn: dict[int | None, list[str]] = {}
    own_intents = [i for i in trace.intents if not i.get("pooled_from")]
    for turn_no, parts in (extra or {}).items():
        at_turn.setdefault(turn_no, []).extend(parts)
    for e in trace.stages:
        at_turn.setdefault(e.get("turn"), []).append(_stage_html(e))
    for i in own_intents:
        at_turn.setdefault(i.get("turn"), []).append(_intent_html(i))
    turns: dict[int, list[dict[str, Any]]] = {}
    for m in trace.messages:
        turns.setdefault(int(m.get("turn") or 0), []).append(m)
    quotes: dict[int | None, list[str]] = {}
    for t in trace.triggers:
        if t.get("evidence") and t.get("quote_found"):
            quotes.setdefault(t.get("turn"), []).append(str(t["evidence"]))
    for t in trace.triggers:
        said = [str(m.get("content") or "") for m in turns.get(int(t.get("turn") or 0), [])
                if m.get("role") == "assistant"]
        shown = bool(t.get("response")) and any(str(t["response"]).strip() == x.strip()
                                                for x in said)
        at_turn.setdefault(t.get("turn"), []).append(_trigger_html(t, shown))
    records_by_turn: dict[int, list[dict[str, Any]]] = {}
    for r in trace.tool_calls:
        records_by_turn.setdefault(int(r.get("turn") or 0), []).append(r)

    out = []
    for turn in sorted(set(turns) | {t for t in at_turn if t is not None}):
        msgs = [_message_html(m, quotes.get(turn, []), calls, shown_calls)
                for m in turns.get(turn, [])]
        # tool calls no message mentions (agents that report tools only through the toolbox)
        loose = [_tool_html(r["tool_name"], r["call"], r["result"], r["error"])
                 for r in records_by_turn.get(turn, [])
                 if (turn, str(r.get("call_id"))) not in shown_calls]
        if loose:
            last = max((k for k, m in enumerate(turns.get(turn, []))
                        if m.get("role") == "assistant"), default=len(msgs))
            msgs.insert(last, '<div class="loose-tools">' + "".join(loose) + "</div>")
        notes = at_turn.get(turn, [])
        out.append(f'<li class="turn" data-turn="{turn}"><div class="turn-no">turn {turn}</div>'
                   + "".join(msgs)
                   + (f'<div class="at-turn">{"".join(notes)}</div>' if notes else "")
                   + "</li>")
    end = []
    if at_turn.get(None):
        end.append('<h5>Without a turn</h5><div class="at-turn">' + "".join(at_turn[None])
                   + "</div>")
    pooled = [i for i in trace.intents if i.get("pooled_from")]
    if pooled:
        end.append("<h5>Pooled from earlier sessions of the group</h5>"
                   '<div class="at-turn">' + "".join(
                       _intent_html(i).replace("</div>", f' <span class="dim">from '
                                               f'{esc(i["pooled_from"])}</span></div>', 1)
                       for i in pooled) + "</div>")
    if trace.checklist:
        end.append("<h5>Checklist (graded at the end of the session)</h5>"
                   + _checklist_html(trace.checklist))
    cut = trace.messages_total - len(trace.messages)
    meta = [f"<code>{esc(s['session_id'])}</code>", f"episode {esc(s.get('episode'))}",
            f"repeat {esc(s.get('repeat'))}", esc(s.get("protocol"))]
    if s.get("style"):
        meta.append(f"style {esc(s['style'])}")
    if s.get("ablation"):
        meta.append(f"variant {esc(s['ablation'])}")
    if s.get("termination"):
        meta.append(f"ended: {esc(s['termination'])}")
    err = f'<p class="error">error: {esc(s["error"])}</p>' if s.get("error") else ""
    flag = " flagged" if trace.flagged else ""
    return (f'<details class="session{flag}" id="{_session_id(trace.key)}"{" open" * open_}>'
            f'<summary>{_summary(s)}</summary><div class="session-body">'
            f'<p class="meta">{" · ".join(meta)}</p>{err}'
            + (f'<ol class="transcript">{"".join(out)}</ol>' if out
               else '<p class="empty">No messages recorded.</p>')
            + (f'<p class="cut">{cut:,} later messages not shown.</p>' if cut > 0 else "")
            + "".join(end) + "</div></details>")


def _summary(s: dict[str, Any]) -> str:
    return (f"{_badge('ss', s.get('status'))} <b>{esc(s.get('name'))}</b>"
            f' <span class="dim">r{esc(s.get("repeat"))}</span>'
            f' <span class="chips">{_metric_chips(s)}</span>')


def _drilldown_html(d: Drilldown, labels: dict[str, str], budget: int) -> str:
    out = ['<section id="sessions" class="report"><h2>Sessions</h2>',
           '<p class="lede">Each session attempt: its transcript by turn; under each turn what '
           "was decided there — intent statuses, trigger-point scores with the judge's "
           "rationale and evidence quote (marked in the reply), stage events — and the checklist "
           "graded at the end. Sessions with errors are marked. A run shows at most "
           f"{SESSIONS_PER_RUN} session attempts and long texts are shortened, so the page stays "
           "quick to open.</p>"]
    share = budget // max(1, len(d.runs))
    by_run: dict[str, list[SessionTrace]] = {}
    for t in d.sessions:
        by_run.setdefault(t.key[0], []).append(t)
    for run in d.runs:
        traces = by_run.get(run.run_id, [])
        out.append(f'<h3 id="sessions-{_session_id((run.run_id, "", 0))}">'
                   f'{esc(labels.get(run.run_id, run.agent))} '
                   f'<span class="dim">{esc(run.run_id)}</span></h3>')
        if run.run_id in d.notes:
            out.append(f'<p class="note">{_prose(d.notes[run.run_id])}</p>')
        if not traces:
            out.append('<p class="empty">No sessions ran.</p>')
        episode = None
        used = 0
        for t in traces:
            ep = t.session.get("episode")
            if ep != episode:
                episode = ep
                out.append(f"<h4>episode {esc(ep)}</h4>" if ep is not None
                           else "<h4>no episode</h4>")
            block = session_html(t, transcript=used < share)
            used += len(block)
            out.append(block)
    out.append("</section>")
    return "\n".join(out)


# --------------------------------------------------------------------------- page


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def _when(ts: float | None) -> str:
    if ts is None:
        return DASH
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _labels(runs: list[RunInfo]) -> dict[str, str]:
    seen: dict[str, int] = {}
    for r in runs:
        seen[r.agent] = seen.get(r.agent, 0) + 1
    return {r.run_id: r.agent if seen[r.agent] == 1 else f"{r.agent} ({r.run_id})" for r in runs}


def _header_html(results: list[ReportResult], d: Drilldown | None) -> str:
    runs = d.runs if d else [RunInfo(r, r) for r in dict.fromkeys(
        run for res in results for run in res.runs)]
    packs = sorted({f"{r.pack} {r.pack_version or ''}".strip() for r in runs if r.pack})
    agents = sorted({r.agent for r in runs})
    title = f"benchpack report — {', '.join(packs)}" if packs else "benchpack report"
    facts = [f"{len(runs)} run{'s' * (len(runs) != 1)}"]
    if d:
        facts.append(f"{len(agents)} agent{'s' * (len(agents) != 1)}: "
                     + ", ".join(esc(a) for a in agents))
    facts.append(f"generated {_GENERATED}")
    out = [f"<header><h1>{esc(title)}</h1><p class=\"facts\">{' · '.join(facts)}</p>"]
    if d and runs:
        out.append('<div class="table-wrap"><table class="runs"><thead><tr>'
                   + "".join(f'<th class="txt">{h}</th>' for h in (
                       "run", "agent", "pack", "simulator", "judge", "repeats", "status",
                       "started"))
                   + "</tr></thead><tbody>")
        for r in runs:
            out.append("<tr>" + "".join(f'<td class="txt">{esc(v)}</td>' for v in (
                r.run_id, r.agent, f"{r.pack or DASH} {r.pack_version or ''}".strip(),
                r.simulator or DASH, r.judge or DASH,
                DASH if r.repeats is None else r.repeats, r.status or DASH,
                _when(r.created_at))) + "</tr>")
        out.append("</tbody></table></div>")
    out.append("</header>")
    return "\n".join(out)


def render_page(results: Sequence[ReportResult], con: Any = None, *,
                generated_at: datetime | None = None, budget: int = PAGE_BUDGET) -> str:
    """`bench report --format html` (and `render(result, "html")`): the reports with the
    drill-down of their runs, read from the store they were built from (`ReportResult.store`;
    `con`: a connection to it that is already open). Results made without a store give the
    page without drill-down."""
    stores = {r.store for r in results if r.store is not None}
    if len(stores) > 1:
        raise ValueError(f"one page shows one store, got {len(stores)}: {sorted(stores)}")
    drilldown = None
    if stores:
        runs = list(dict.fromkeys(run for r in results for run in r.runs))
        if con is not None:
            drilldown = load_drilldown(con, runs)
        else:
            with open_store(stores.pop()) as own:
                drilldown = load_drilldown(own, runs)
    return to_html(list(results), drilldown, generated_at=generated_at, budget=budget)


def to_html(results: list[ReportResult], drilldown: Drilldown | None = None, *,
            generated_at: datetime | None = None, budget: int = PAGE_BUDGET) -> str:
    """The reports (and, with `drilldown`, the sessions) as one self-contained HTML page.

    The page is a pure function of its inputs except for the generation time, which is left out
    of the content digest shown in the footer: same store, same digest. Transcripts stop (the
    sessions' summaries stay) once a run has used its share of `budget` characters."""
    labels = _labels(drilldown.runs) if drilldown else {}
    toc, sections, charts = [], [], []
    used: set[str] = set()
    for res in results:
        anchor = _slug(res.name)
        while anchor in used:
            anchor += "-x"
        used.add(anchor)
        empty = not any(t.rows for t in res.tables)
        toc.append(f'<li><a href="#{anchor}">{esc(res.title)}</a>'
                   + (' <span class="dim">no data</span>' if empty else "") + "</li>")
        body = [f'<section class="report{" empty-report" if empty else ""}" id="{anchor}">'
                f"<h2>{esc(res.title)}</h2><p class=\"lede\">{esc(res.description)}</p>"]
        body += [f'<p class="note">{_prose(n)}</p>' for n in res.notes]
        figures = []
        for chart in res.charts:
            spec = chart_spec(res, chart)
            cid = f"chart-{anchor}-{_slug(chart.id)}"
            if spec is None:
                figures.append(f'<figure class="chart no-data"><figcaption>{esc(chart.title)}'
                               '</figcaption><p class="empty">No data to plot.</p></figure>')
                continue
            charts.append({"canvas": cid, **spec})
            height = 90 + 44 * len(spec["labels"]) if spec["kind"] == "stacked" else 320
            stacked = spec["kind"] == "scatter" and any(
                p["n"] > 1 for ds in spec["datasets"] for p in ds["points"])
            figures.append(f'<figure class="chart"><figcaption>{esc(chart.title)}</figcaption>'
                           f'<div class="canvas-box" style="height:{height}px">'
                           f'<canvas id="{cid}" role="img" aria-label="{esc(chart.title)}">'
                           "</canvas></div>"
                           + ('<p class="chart-note">Sessions at the same spot share one '
                              "marker; its area grows with their number (hover for the "
                              "count).</p>" if stacked else "") + "</figure>")
        parts = ['<div class="charts">' + "".join(figures) + "</div>"] if figures else []
        parts += [_table_html(t, f"{anchor}-{k}") for k, t in enumerate(res.tables)]
        if empty:  # keep the notes (they say how to get data) but out of the way
            body.append(f'<details class="no-data"><summary>No data in these runs '
                        f'({len(res.tables)} empty table{"s" * (len(res.tables) != 1)})'
                        f"</summary>{''.join(parts)}</details>")
        else:
            body += parts
        body.append("</section>")
        sections.append("\n".join(body))
    if drilldown is not None:
        toc.append(f'<li><a href="#sessions">Sessions</a> <span class="dim">'
                   f"{len(drilldown.sessions)} transcripts</span></li>")
        sections.append(_drilldown_html(drilldown, labels, budget))
    page = "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        f"<title>{esc('benchpack report')}</title>",
        f"<style>{_asset('report.css')}</style></head><body>",
        '<div class="page">', _header_html(results, drilldown),
        '<nav class="toc"><h2>Contents</h2><ol>' + "".join(toc) + "</ol></nav>",
        "<main>", *sections, "</main>",
        f'<footer>benchpack report · content digest <code>{_DIGEST}</code> (sha256 of this '
        "page without its generation time) · charts by Chart.js (MIT)</footer></div>",
        f'<script type="application/json" id="bp-charts">{_json_script(charts)}</script>',
        f"<script>{chart_js()}</script>",
        f"<script>{_asset('report.js')}</script>",
        "</body></html>", ""])
    digest = hashlib.sha256(page.encode("utf-8")).hexdigest()
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    return page.replace(_DIGEST, digest[:16]).replace(_GENERATED, esc(when))
