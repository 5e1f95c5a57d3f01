"""The HTML report's drill-down data: which session attempts of each run the page shows
(chosen in SQL, `_CHOOSE`) and their rows from the store.

Separate from the HTML: it is store reading only, and its SQL is the part that has to stay
cheap on a store of any size. `SessionTrace` is also what `bench view` fills from its own
queries to render a transcript (`html_transcript.session_html`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

SESSIONS_PER_RUN = 40
"""Drill-down cap: session attempts shown per run (the rest are reachable with `bench query`)."""
MESSAGES_PER_SESSION = 300
"""Messages of a session in the page (its first, by `seq`); the page says how many more it has."""


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
    components: list[dict[str, Any]] = field(default_factory=list)
    triples: list[dict[str, Any]] = field(default_factory=list)
    support: list[dict[str, Any]] = field(default_factory=list)
    """`score_components`, `triples`, `triple_support`: what "why this score" reads
    (`explain.explain`)."""
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
    infos = load_runs(con, runs)
    cap = int(per_run)
    # the chosen keys go to a temporary table every read below joins (cheaper than binding
    # hundreds of keys again for each table)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {_KEYS} AS {_CHOOSE}",
                {"runs": list(runs), "cap": cap})
    try:
        return _drilldown(con, infos, cap, int(messages_per_session))
    finally:
        con.execute(f"DROP TABLE IF EXISTS {_KEYS}")


def load_runs(con: Any, runs: Sequence[str]) -> list[RunInfo]:
    """What the page's header says of each run, in the order of `runs`."""
    if not runs:
        return []
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
    return infos


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
    have = {str(r[0]) for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE NOT internal").fetchall()}
    for table, attr, order in (("tool_calls", "tool_calls", "seq"),
                               ("intent_status", "intents", "turn NULLS LAST, intent_id"),
                               ("triggers", "triggers", "turn, trigger_id"),
                               ("stage_events", "stages", "turn, stage_index"),
                               ("checklist_results", "checklist", "item_id"),
                               ("score_components", "components", "t.rowid"),
                               ("triples", "triples", "side, idx"),
                               ("triple_support", "support", "gt_idx, pred_idx")):
        if table not in have:  # a store older than the table (score_components: schema 4)
            continue
        for r in rows(table, order):
            getattr(traces[(r["run_id"], r["session_id"], r["repeat"])], attr).append(r)
    return Drilldown(infos, list(traces.values()), notes)
