"""The SQL behind `bench view`'s pages: every query reads one page of rows (LIMIT/OFFSET) or
one session's rows, so a page costs the same on a store of 1 M turns as on the demo's.

Filters and sort keys come from the browser: values are always bound parameters, and a column
name is used only when it is one of the names listed here (`SESSION_SORTS`, `SESSION_FILTERS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

RUNS_PER_PAGE = 20
SESSIONS_PER_PAGE = 50
TURNS_PER_PAGE = 100
"""Turns of a transcript per page: a 500-turn session's page would otherwise be megabytes of
HTML the browser lays out at once."""

RUN_FILTERS = ("pack", "agent", "judge")
"""Runs page filters: equality on these `runs` columns (`pack` is `pack_name`)."""
_RUN_COLUMN = {"pack": "pack_name", "agent": "agent", "judge": "judge"}

SESSION_FILTERS = ("status", "error_kind", "category", "persona", "repeat", "protocol")
"""Sessions page filters: equality on these `sessions` columns."""
SCORES = ("proc", "comp", "f1", "score", "trigger_score", "trigger_pass_rate", "recall",
          "precision")
"""Per-session figures a sessions page sorts and filters by (0–1 in the store)."""
SESSION_SORTS = ("name", "repeat", "status", "error_kind", "category", "persona", "turns",
                 "duration_s", "prompt_tokens", "judge_errors", *SCORES)

SESSION_COLUMNS = ("session_id", "repeat", "name", "episode", "protocol", "persona", "category",
                   "style", "ablation", "status", "error_kind", "error", "turns", "tool_calls",
                   "proc", "proc_group", "comp", "f1", "score", "passed", "trigger_score",
                   "judge_errors", "grader_errors", "prompt_tokens", "completion_tokens",
                   "duration_s")


def dicts(cur: Any) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _quoted(name: str) -> str:
    return f'"{name}"'  # `precision` is a keyword


# --------------------------------------------------------------------------- runs


@dataclass
class RunsPage:
    runs: list[dict[str, Any]]
    total: int
    options: dict[str, list[str]]
    """Filter name → the values present in the store (for the drop-downs)."""


def runs_page(con: Any, filters: dict[str, str], *, since: float | None = None,
              until: float | None = None, page: int = 0) -> RunsPage:
    where: list[str] = ["TRUE"]
    params: list[Any] = []
    for key in RUN_FILTERS:
        if filters.get(key):
            where.append(f"r.{_RUN_COLUMN[key]} = ?")
            params.append(filters[key])
    if since is not None:
        where.append("r.created_at >= ?")
        params.append(since)
    if until is not None:
        where.append("r.created_at < ?")
        params.append(until)
    cond = " AND ".join(where)
    total = int(con.execute(f"SELECT count(*) FROM runs r WHERE {cond}", params).fetchone()[0])
    rows = dicts(con.execute(f"""
        WITH page AS (SELECT * FROM runs r WHERE {cond}
                      ORDER BY created_at DESC NULLS LAST, run_id LIMIT ? OFFSET ?)
        SELECT p.run_id, p.pack_name, p.pack_version, p.agent, p.simulator, p.judge, p.repeats,
               p.status, p.created_at, p.updated_at,
               count(s.session_id) AS sessions,
               count(*) FILTER (WHERE s.status = 'finished') AS finished,
               count(*) FILTER (WHERE s.status = 'error') AS errors,
               count(*) FILTER (WHERE s.status = 'skipped') AS skipped,
               coalesce(sum(s.turns), 0) AS turns, max(s.finished_at) AS last_finished
        FROM page p LEFT JOIN sessions s USING (run_id)
        GROUP BY ALL ORDER BY p.created_at DESC NULLS LAST, p.run_id""",
        [*params, RUNS_PER_PAGE, page * RUNS_PER_PAGE]))
    options = {key: [str(r[0]) for r in con.execute(
        f"SELECT DISTINCT {_RUN_COLUMN[key]} FROM runs WHERE {_RUN_COLUMN[key]} IS NOT NULL "
        "ORDER BY 1").fetchall()] for key in RUN_FILTERS}
    return RunsPage(rows, total, options)


def runs_by_age(con: Any, runs: list[str]) -> list[str]:
    """Those of `runs` in the store, oldest first (a comparison's baseline is the older)."""
    return [str(r[0]) for r in con.execute(
        "SELECT run_id FROM runs WHERE list_contains(?, run_id) ORDER BY created_at NULLS "
        "FIRST, run_id", [runs]).fetchall()]


def fingerprint(con: Any, runs: list[str]) -> tuple[Any, ...]:
    """What changes when a run records a session: keys the cache of computed headlines."""
    row = con.execute("SELECT count(*), max(finished_at), sum(hash(session_id, repeat, status)) "
                      "FROM sessions WHERE list_contains(?, run_id)", [runs]).fetchone()
    return (tuple(runs), *row)


# --------------------------------------------------------------------------- sessions


@dataclass
class SessionsPage:
    run: dict[str, Any] | None
    sessions: list[dict[str, Any]]
    total: int
    options: dict[str, list[str]] = field(default_factory=dict)


def sessions_page(con: Any, run_id: str, filters: dict[str, str], *, sort: str = "name",
                  desc: bool = False, metric: str | None = None, low: float | None = None,
                  high: float | None = None, page: int = 0) -> SessionsPage:
    run = dicts(con.execute("SELECT * FROM runs WHERE run_id = ?", [run_id]))
    if not run:
        return SessionsPage(None, [], 0)
    cond, params = _session_filter(run_id, filters, metric, low, high)
    order = _session_order(sort, desc)
    total = int(con.execute(f"SELECT count(*) FROM sessions WHERE {cond}", params)
                .fetchone()[0])
    cols = ", ".join(_quoted(c) for c in SESSION_COLUMNS)
    rows = dicts(con.execute(
        f"SELECT {cols} FROM sessions WHERE {cond} ORDER BY {order} LIMIT ? OFFSET ?",
        [*params, SESSIONS_PER_PAGE, page * SESSIONS_PER_PAGE]))
    # one scan for every drop-down's values
    opts = con.execute(
        "SELECT " + ", ".join(f"list(DISTINCT coalesce(CAST({k} AS VARCHAR), '(none)'))"
                              for k in SESSION_FILTERS)
        + " FROM sessions WHERE run_id = ?", [run_id]).fetchone()
    options = {k: sorted(v or [], key=_natural) for k, v in zip(SESSION_FILTERS, opts,
                                                                  strict=True)}
    return SessionsPage(run[0], rows, total, options)


def _session_order(sort: str, desc: bool) -> str:
    order = _quoted(sort if sort in SESSION_SORTS else "name")
    return f"{order} {'DESC' if desc else 'ASC'} NULLS LAST, name, session_id, repeat"


def _session_filter(run_id: str, filters: dict[str, str], metric: str | None,
                    low: float | None, high: float | None) -> tuple[str, list[Any]]:
    """The WHERE of a sessions list (column names only from the lists above)."""
    where: list[str] = ["run_id = ?"]
    params: list[Any] = [run_id]
    for key in SESSION_FILTERS:
        value = filters.get(key)
        if value:
            if value == "(none)":
                where.append(f"{key} IS NULL")
            else:
                where.append(f"CAST({key} AS VARCHAR) = ?")
                params.append(value)
    if metric in SCORES:
        if low is not None:
            where.append(f"{_quoted(metric)} >= ?")
            params.append(low)
        if high is not None:
            where.append(f"{_quoted(metric)} <= ?")
            params.append(high)
    return " AND ".join(where), params


@dataclass
class Neighbours:
    """Where a session run stands in a sessions list (filtered and sorted as that page)."""

    position: int
    """1-based; 0 when the list (its filters) does not hold this session run."""
    total: int
    previous: tuple[str, int] | None = None
    next: tuple[str, int] | None = None
    """(session id, repeat) of the session run before and after it."""


def neighbours(con: Any, run_id: str, session_id: str, repeat: int, filters: dict[str, str],
               *, sort: str = "name", desc: bool = False, metric: str | None = None,
               low: float | None = None, high: float | None = None) -> Neighbours:
    """The session runs before and after this one in the list the sessions page shows with
    these filters and this sort: one window over the run's sessions (rows, not turns)."""
    cond, params = _session_filter(run_id, filters, metric, low, high)
    order = _session_order(sort, desc)
    # one numbering (row_number alone: lag/lead beside it cost ~40 % more at 1 M turns), then
    # the rows either side of this one
    found = con.execute(f"""
        WITH l AS MATERIALIZED (SELECT session_id, repeat,
                                       row_number() OVER (ORDER BY {order}) AS pos
                                FROM sessions WHERE {cond}),
             me AS (SELECT pos FROM l WHERE session_id = ? AND repeat = ?)
        SELECT l.pos - me.pos, l.pos, l.session_id, l.repeat, (SELECT count(*) FROM l)
        FROM l, me WHERE l.pos BETWEEN me.pos - 1 AND me.pos + 1""",
        [*params, session_id, repeat]).fetchall()
    if not found:
        total = int(con.execute(f"SELECT count(*) FROM sessions WHERE {cond}", params)
                    .fetchone()[0])
        return Neighbours(0, total)
    at = {int(d): (int(pos), str(s), int(r), int(n)) for d, pos, s, r, n in found}
    pos, _, _, total = at[0]
    return Neighbours(pos, total, at[-1][1:3] if -1 in at else None,
                      at[1][1:3] if 1 in at else None)


SEARCH_HITS = 50
"""Messages a transcript search lists (the first, by turn)."""


def search_messages(con: Any, run_id: str, session_id: str, repeat: int, text: str
                    ) -> tuple[list[dict[str, Any]], int]:
    """Messages of one session containing `text` (case-insensitive, any script), the first
    `SEARCH_HITS` by position, and how many match in all."""
    key = [run_id, session_id, repeat]
    needle = text.lower()
    cond = ("run_id = ? AND session_id = ? AND repeat = ? "
            "AND strpos(lower(coalesce(content, '') || ' ' || coalesce(CAST(tool_calls AS "
            "VARCHAR), '')), ?) > 0")
    total = int(con.execute(f"SELECT count(*) FROM messages WHERE {cond}", [*key, needle])
                .fetchone()[0])
    hits = dicts(con.execute(f"SELECT seq, turn, role, name, content, "
                             f"CAST(tool_calls AS VARCHAR) AS calls FROM messages WHERE {cond} "
                             "ORDER BY seq LIMIT ?", [*key, needle, SEARCH_HITS]))
    return hits, total


def _natural(value: str) -> tuple[int, Any]:
    return (0, int(value)) if value.lstrip("-").isdigit() else (1, value)


# --------------------------------------------------------------------------- one session


@dataclass
class SessionRows:
    session: dict[str, Any]
    tables: dict[str, list[dict[str, Any]]]
    last_turn: int = 0
    """The session's last turn (of its messages), whatever part of it `tables` holds."""


CHILD_TABLES = {
    "messages": "seq",
    "tool_calls": "seq",
    "intent_status": "turn NULLS LAST, intent_id",
    "triggers": "turn, trigger_id",
    "stage_events": "turn, stage_index",
    "checklist_results": "item_id",
    "turns": "turn",
    "llm_calls": "seq",
}


def session_rows(con: Any, run_id: str, session_id: str, repeat: int,
                 page: int | None = None) -> SessionRows | None:
    """A session's rows; with `page`, only those of turns page·N+1 … (page+1)·N
    (N = `TURNS_PER_PAGE`; page 0 also holds the turns before the first, and every page the
    rows of no turn: the checklist, unresolved intents, the end-of-session judge)."""
    key = [run_id, session_id, repeat]
    found = dicts(con.execute("SELECT * FROM sessions WHERE run_id = ? AND session_id = ? "
                              "AND repeat = ?", key))
    if not found:
        return None
    last = con.execute("SELECT max(turn) FROM messages WHERE run_id = ? AND session_id = ? "
                       "AND repeat = ?", key).fetchone()[0]
    span, bounds = "", []
    if page is not None:
        low = -(2 ** 31) if page == 0 else page * TURNS_PER_PAGE + 1
        span, bounds = " AND (turn IS NULL OR turn BETWEEN ? AND ?)", \
            [low, (page + 1) * TURNS_PER_PAGE]
    tables = {t: dicts(con.execute(f"SELECT * FROM {t} WHERE run_id = ? AND session_id = ? "
                                   f"AND repeat = ?{span if t in TURN_TABLES else ''} "
                                   f"ORDER BY {order}",
                                   key + (bounds if t in TURN_TABLES else [])))
              for t, order in CHILD_TABLES.items()}
    return SessionRows(found[0], tables, int(last or 0))


TURN_TABLES = frozenset(CHILD_TABLES) - {"checklist_results"}


def repeats_of(con: Any, run_id: str, session_id: str) -> list[int]:
    return [int(r[0]) for r in con.execute(
        "SELECT repeat FROM sessions WHERE run_id = ? AND session_id = ? ORDER BY repeat",
        [run_id, session_id]).fetchall()]


def runs_with_session(con: Any, session_id: str) -> list[str]:
    """The runs that ran this session (by plan id): the candidates to compare with."""
    return [str(r[0]) for r in con.execute(
        "SELECT DISTINCT s.run_id, r.created_at FROM sessions s JOIN runs r USING (run_id) "
        "WHERE s.session_id = ? ORDER BY r.created_at, s.run_id", [session_id]).fetchall()]
