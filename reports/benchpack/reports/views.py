"""SQL views over the run store: the building blocks of every report and of `bench query`.

The views are created as TEMP views on each connection `bench report` / `bench query` opens, so
they always match this benchpack version and work on read-only connections; `bench views
--install` writes them into a store for other tools (DuckDB CLI, notebooks). They are versioned
with the store schema (`STORE_SCHEMA`): a store written by a newer benchpack is refused.

Conventions: rates are fractions in [0, 1]; a NULL score means "unknown" (a judge error, or a
session that errored outside the agent: infrastructure, simulator, judge) and is excluded from
averages, never counted as 0. A session the *agent* errored in (`error_kind = 'agent'`) is the
agent's failure: it is stored with the protocol's worst score and counted (`scored`). *micro* figures pool
the underlying items (intents, triggers) across sessions; *macro* figures average per-session
figures — they differ whenever sessions have different numbers of items, and every view says
which it is.

The views of one protocol are declared in its module (`protocols/<name>.py`, registered in
`protocols.PROTOCOL_REPORTS`); the generic ones here.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import replace
from typing import Any

from benchpack.specs.storeformat import EXACT_COST, EXACT_LATENCY, SCHEMA_VERSION

from .cost import UNPRICED
from .model import View
from .protocols import PROTOCOL_REPORTS, ProtocolReports

STORE_SCHEMA = SCHEMA_VERSION
"""The store schema version these views read (`benchpack.specs.storeformat`, which the runtime
writes)."""


FULL = "coalesce(json_extract_string(s.extra, '$.context'), '') <> 'alone'"
"""A session that ran with its dependencies (not `bench run --alone` without them)."""

MAYBE_ALONE = "(contains(s.extra::VARCHAR, 'alone') OR contains(s.extra::VARCHAR, '\\u'))"
"""A text pre-test for `NOT FULL`, without parsing `extra`: a session whose `extra` holds
neither `alone` nor a `\\u` escape (with which a JSON string could spell it) was not run
alone (~0.01 s a statement on 1 M turns against the JSON test)."""

RATING_RANK = ("CASE label WHEN 'FAIL' THEN 0 WHEN 'PARTIAL' THEN 1 WHEN 'PASS' THEN 2 "
               "WHEN 'NO' THEN 0 WHEN 'YES' THEN 1 END")
"""A human rating's rank on its scale (worst 0), NULL off every scale."""
MEDIAN_LABEL = ("CASE WHEN kind = 'trigger' THEN ['FAIL', 'PARTIAL', 'PASS'][quantile_disc(r.rank, "
                "0.5) + 1] ELSE ['NO', 'YES'][quantile_disc(r.rank, 0.5) + 1] END")
MEDIAN_TIE = "median(r.rank) <> quantile_disc(r.rank, 0.5)"
"""`human_consensus`' median label and tie over an item's ratings `r` (with their `rank`):
`agreement --humans` asks them alone when it needs no majority vote."""

GENERIC_VIEWS: tuple[View, ...] = (
    View("session_results", """One row per session attempt (session × repeat) that ran, with the
run's pack, simulator and judge. `agent` is the evaluated model. Skipped sessions (a dependency
failed) are left out; errored ones are kept, with `error_kind` saying whose error it was.
`scored` is true for finished sessions and those the agent errored in (stored with the
protocol's worst score: PROC 0, COMP 0, pass false, triggers FAIL); every headline figure
averages `scored` sessions, and the other errored ones (NULL scores) are counted beside it.
Sessions run with `bench run --alone` without the sessions they depend on are left out
(`alone_results` has them): they lacked their context and must not be averaged with
full-context ones.""", """
SELECT s.*, r.pack_name, r.pack_version, r.simulator AS simulator_model, r.judge AS judge_model,
       CASE WHEN s.assistant_turns > 0 THEN s.user_turns / s.assistant_turns END
           AS user_per_assistant_turn,
       s.status = 'finished' OR coalesce(s.error_kind = 'agent', false) AS scored
FROM sessions s JOIN runs r USING (run_id)
WHERE s.status <> 'skipped' AND {FULL}
"""),
    View("alone_results", """Sessions run with `bench run --session … --alone`: without the
sessions they depend on (`missing_dependencies`), so without their context; reported apart.""",
         """
SELECT s.*, r.pack_name, r.judge AS judge_model,
       json_extract(s.extra, '$.missing_dependencies') AS missing_dependencies
FROM sessions s JOIN runs r USING (run_id)
WHERE s.status <> 'skipped' AND NOT {FULL}
"""),
    View("headline_sessions", """The figures of the headline table (`bench report summary`),
one row per run and session (its repeats averaged; ablation variants left out): PROC as
π-Bench reports it (a group's final session counts the group's pooled PROC, so it differs from
`avg(proc)` over `sessions`), COMP, triple F1, verified score; `repeats` counts the repeats
averaged (`scored` ones: finished or errored by the agent), `excluded` the others.""", """
SELECT run_id, agent, session_id, any_value(protocol) AS protocol,
       count(*) FILTER (WHERE scored) AS repeats,
       count(*) FILTER (WHERE NOT scored) AS excluded,
       avg(coalesce(proc_group, proc)) FILTER (WHERE scored) AS proc,
       avg(comp) FILTER (WHERE scored) AS comp, avg(f1) FILTER (WHERE scored) AS f1,
       avg(score) FILTER (WHERE scored) AS score
FROM session_results WHERE ablation IS NULL
GROUP BY run_id, agent, session_id
"""),
    View("headline", """Per run, the headline figures exactly as `bench report summary` shows them
(macro: the mean over sessions of their repeats' mean, from `headline_sessions`) and the
trigger score as ProactBench defines it (weighted score pooled over judged triggers, from
`trigger_results`). `sessions` counts session runs (each repeat once) in the figures,
`ablation_variants` the variants left out of them, `excluded` the errored runs left out.""",
         """
WITH s AS (
    SELECT run_id, any_value(agent) AS agent, sum(repeats) AS sessions,
           sum(excluded) AS excluded, avg(proc) AS proc, avg(comp) AS comp, avg(f1) AS f1,
           avg(score) AS score
    FROM headline_sessions GROUP BY run_id
), v AS (
    SELECT run_id, count(*) FILTER (WHERE scored) AS ablation_variants FROM session_results
    WHERE ablation IS NOT NULL GROUP BY run_id
), t AS (
    SELECT run_id, avg(score) AS trigger_score, count(*) AS triggers FROM trigger_results
    WHERE ablation IS NULL AND label IN ('PASS', 'PARTIAL', 'FAIL') GROUP BY run_id
)
SELECT s.run_id, s.agent, s.sessions, coalesce(v.ablation_variants, 0) AS ablation_variants,
       s.excluded, s.proc, s.comp, s.f1, t.trigger_score, t.triggers, s.score
FROM s LEFT JOIN v USING (run_id) LEFT JOIN t USING (run_id)
"""),
    View("llm_usage", """LLM calls by run, role (agent / simulator / planner / judge) and
model: calls, cache hits, errors, tokens, cost and latency (cache hits excluded from latency).
`cost` is NULL (unknown, never 0) when one of the calls had no price (`unpriced_calls`: answered,
not cached, litellm knew no price); `priced_cost` is the known part.""",
         f"""
SELECT run_id, role, model, count(*) AS calls,
       count(*) FILTER (WHERE cache_hit) AS cache_hits,
       count(*) FILTER (WHERE error IS NOT NULL) AS errors,
       sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens,
       CASE WHEN count(*) FILTER (WHERE {UNPRICED}) = 0
            THEN coalesce(sum({EXACT_COST})::DOUBLE, 0) END AS cost,
       count(*) FILTER (WHERE {UNPRICED}) AS unpriced_calls,
       coalesce(sum({EXACT_COST})::DOUBLE, 0) AS priced_cost,
       avg({EXACT_LATENCY}) FILTER (WHERE NOT cache_hit) AS mean_latency_s,
       quantile_cont(latency_s, 0.95) FILTER (WHERE NOT cache_hit) AS p95_latency_s
FROM llm_calls GROUP BY run_id, role, model
"""),
    View("run_lineage", """Every run with what it re-judges: `rejudge_of` is the run `bench
rejudge` was given (NULL for a run that ran the agent), `source_run` the run whose transcripts
were judged (itself for an ordinary run). Runs sharing a `source_run` judged the same
dialogues.""", """
SELECT run_id, agent, judge, json_extract_string(config, '$.rejudge_of') AS rejudge_of,
       coalesce(json_extract_string(config, '$.source_run'), run_id) AS source_run
FROM runs
"""),
    View("judge_labels", """Every judged item of every finished session, as a label: kind
`trigger` (PASS / PARTIAL / FAIL; `type` is the trigger type; skipped triggers left out),
`checklist` (rubric items only: YES / NO), `triple` (ground-truth triple covered: YES / NO; only
sessions whose agent produced a graph, since an empty graph is uncovered without judging), and
the intent-check audit of re-judged intent-tracking sessions, `intent_completion` /
`intent_clarification` (item `<intent>@<turn>`; the original run's decisions are listed under
the source run). `label` is NULL on a judge error.""", """
SELECT l.run_id, l.source_run, l.judge, t.session_id, t.repeat, 'trigger' AS kind,
       t.trigger_id AS item_id, t.type, t.label, t.judge_error
FROM triggers t JOIN sessions s USING (run_id, session_id, repeat) JOIN run_lineage l USING (run_id)
WHERE s.status = 'finished' AND coalesce(t.label, '') <> 'SKIPPED'
UNION ALL
SELECT l.run_id, l.source_run, l.judge, c.session_id, c.repeat, 'checklist', c.item_id, NULL,
       CASE WHEN c.score IS NULL THEN NULL WHEN c.score >= 0.5 THEN 'YES' ELSE 'NO' END, c.error
FROM checklist_results c JOIN sessions s USING (run_id, session_id, repeat)
     JOIN run_lineage l USING (run_id)
WHERE s.status = 'finished' AND c.grader = 'rubric'
UNION ALL
SELECT l.run_id, l.source_run, l.judge, g.session_id, g.repeat, 'triple', CAST(g.idx AS VARCHAR),
       NULL, CASE WHEN g.judge_error IS NOT NULL OR g.matched IS NULL THEN NULL
                  WHEN g.matched THEN 'YES' ELSE 'NO' END, g.judge_error
FROM triples g JOIN sessions s USING (run_id, session_id, repeat) JOIN run_lineage l USING (run_id)
WHERE s.status = 'finished' AND g.side = 'ground_truth' AND s.triples_predicted > 0
UNION ALL
SELECT l.run_id, l.source_run, l.judge, i.session_id, i.repeat, 'intent_' || i.kind,
       i.intent_id || '@' || i.turn, NULL,
       CASE WHEN i.decision IS NULL THEN NULL WHEN i.decision THEN 'YES' ELSE 'NO' END,
       i.judge_error
FROM intent_checks i JOIN run_lineage l USING (run_id)
UNION ALL
SELECT DISTINCT o.run_id, o.source_run, o.judge, i.session_id, i.repeat, 'intent_' || i.kind,
       i.intent_id || '@' || i.turn, NULL,
       CASE WHEN i.original IS NULL THEN NULL WHEN i.original THEN 'YES' ELSE 'NO' END, NULL
FROM intent_checks i JOIN run_lineage l USING (run_id) JOIN run_lineage o
     ON o.run_id = l.source_run
""", needs=("intent_checks",)),
    View("judge_pairs", """Judge against judge: the items two runs both judged on the same
dialogues (same `source_run`), one row per item and ordered pair of runs (`run_a` ≠ `run_b`),
with both labels (NULL on a judge error).""", """
SELECT a.run_id AS run_a, b.run_id AS run_b, a.judge AS judge_a, b.judge AS judge_b,
       source_run, session_id, repeat, kind, item_id, a.type, a.label AS label_a,
       b.label AS label_b
FROM judge_labels a JOIN judge_labels b USING (source_run, session_id, repeat, kind, item_id)
WHERE a.run_id <> b.run_id
""", needs=("intent_checks",)),
    View("human_consensus", """Human consensus per rated item (`bench ratings import`): the
median of the raters' ordinal labels (FAIL < PARTIAL < PASS, NO < YES). With an even number of
raters whose two middle labels differ, the lower (worse) of the two is taken and `tie` is
true; `raters` counts the ratings. `majority` is the most frequent label instead, ties going to
the middle of the scale, then to the better label (PARTIAL, then PASS, then FAIL: ProactBench's
released analysis; YES before NO), with `majority_tie`.""", """
WITH r AS (
    SELECT *, {RATING_RANK} AS rank FROM human_ratings
), counted AS (
    SELECT run_id, session_id, repeat, kind, item_id, rank, count(*) AS n
    FROM r GROUP BY run_id, session_id, repeat, kind, item_id, rank
), votes AS (
    SELECT *, max(n) OVER (PARTITION BY run_id, session_id, repeat, kind, item_id) AS top
    FROM counted
), majority AS (
    -- most votes first; among equals the tie order: the middle (PARTIAL), then the better
    SELECT run_id, session_id, repeat, kind, item_id,
           arg_max(rank, n * 4 + CASE WHEN kind = 'trigger' THEN [0, 2, 1][rank + 1]
                                      ELSE rank END) AS rank,
           count(*) FILTER (WHERE n = top) > 1 AS tie
    FROM votes GROUP BY run_id, session_id, repeat, kind, item_id
)
SELECT run_id AS source_run, session_id, repeat, kind, item_id, count(*) AS raters,
       {MEDIAN_LABEL} AS label, {MEDIAN_TIE} AS tie,
       CASE WHEN kind = 'trigger' THEN ['FAIL', 'PARTIAL', 'PASS'][any_value(m.rank) + 1]
            ELSE ['NO', 'YES'][any_value(m.rank) + 1] END AS majority,
       any_value(m.tie) AS majority_tie
FROM r JOIN majority m USING (run_id, session_id, repeat, kind, item_id)
GROUP BY run_id, session_id, repeat, kind, item_id
""", needs=("human_ratings",)),
    View("human_pairs", """Judge against human consensus: every rated item next to the label
each run that judged those dialogues gave it (NULL on a judge error).""", """
SELECT j.run_id, j.judge, source_run, session_id, repeat, kind, item_id, j.type, h.raters,
       h.tie, h.label AS human_label, j.label AS judge_label, h.majority AS human_majority,
       h.majority_tie
FROM human_consensus h JOIN judge_labels j USING (source_run, session_id, repeat, kind, item_id)
-- the kinds humans rate (`bench ratings import`): naming them spares the intent-check audit
WHERE j.kind IN ('trigger', 'checklist', 'triple')
""", needs=("human_ratings", "intent_checks")),
    View("judge_errors", """Where judges failed (malformed output twice, or the provider): per
run, role and purpose. These items are excluded from scores.""", """
SELECT run_id, role, purpose, model, count(*) AS failed_calls, any_value(error) AS example
FROM llm_calls
WHERE error IS NOT NULL AND role <> 'agent'
GROUP BY run_id, role, purpose, model
"""),
)
"""The views of no one protocol (sessions, the headline over all of them, LLM calls, judge
audits); each protocol's are in `protocols/<name>.py`."""

VIEW_ORDER: tuple[str, ...] = (
    "session_results", "alone_results", "intent_status_micro", "intent_status_macro",
    "dependency_ablation", "graph_results", "trigger_results", "trigger_by_type",
    "headline_sessions", "headline", "verified_results", "verified_tasks", "llm_usage",
    "run_lineage", "judge_labels", "judge_pairs", "human_consensus", "human_pairs", "judge_errors")
"""The order `bench views` lists the views in and `install_views` creates them (each after the
views it reads), kept from before the protocols had modules; views not listed here (a new
protocol's) follow, in registry order."""


def assemble(protocols: dict[str, ProtocolReports]) -> tuple[View, ...]:
    """The generic views and those of `protocols`, in `VIEW_ORDER`, placeholders filled in."""
    rank = {name: i for i, name in enumerate(VIEW_ORDER)}
    found = (*GENERIC_VIEWS, *(v for p in protocols.values() for v in p.views))
    ordered = sorted(found, key=lambda v: rank.get(v.name, len(rank)))  # stable: rest in order
    return tuple(replace(v, sql=_filled(v.sql)) for v in ordered)


def _filled(sql: str) -> str:
    """A view's SQL with the shared pieces written in."""
    for name, text in (("{FULL}", FULL), ("{RATING_RANK}", RATING_RANK),
                       ("{MEDIAN_LABEL}", MEDIAN_LABEL), ("{MEDIAN_TIE}", MEDIAN_TIE)):
        sql = sql.replace(name, text)
    return sql


VIEWS: tuple[View, ...] = assemble(PROTOCOL_REPORTS)

VIEW_NAMES = tuple(v.name for v in VIEWS)


class StoreVersionError(Exception):
    """The store was written by a newer benchpack (or is not a benchpack store)."""


class ViewError(Exception):
    """A view the store's tables cannot hold (`LazyViews`; `access` names the store)."""


def store_schema(con: Any) -> int:
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except Exception as exc:
        raise StoreVersionError("not a benchpack store (no `meta` table); run `bench run` "
                                "to create one") from exc
    if row is None:
        raise StoreVersionError("not a benchpack store (no schema version)")
    return int(row[0])


def check_schema(con: Any) -> int:
    """The store's schema version; a store newer than this benchpack is refused."""
    version = store_schema(con)
    if version > STORE_SCHEMA:
        raise StoreVersionError(f"the store has schema {version}, newer than this benchpack "
                                f"reads ({STORE_SCHEMA}); upgrade benchpack")
    return version


def install_views(con: Any, *, temporary: bool = True,
                  only: Collection[str] | None = None) -> list[str]:
    """Create every view on `con` (TEMP views unless `temporary=False`) whose tables the
    store has — with `only`, just those named (they must name the views theirs read) — and
    return the names of those created. (A report's connection creates them as its
    statements name them instead: `LazyViews`.)"""
    version = check_schema(con)
    kind = "TEMP VIEW" if temporary else "VIEW"
    tables = _tables(con)
    created = []
    plugged = plugin_views(con) if only is None and "sessions" in tables else []
    # views written into the store keep the test of `FULL` (`alone_free`)
    full = FULL
    if temporary and only is None and "sessions" in tables and alone_free(con):
        full = "TRUE"
    for view in (*VIEWS, *plugged):
        if only is not None and view.name not in only:
            continue
        if all(t in tables for t in view.needs):
            _create(con, view, version, kind, full)
            created.append(view.name)
    return created


def _tables(con: Any) -> set[str]:
    return {str(r[0]) for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}


def _create(con: Any, view: View, version: int, kind: str, full: str) -> None:
    sql = view.sql if version >= 3 else _without_error_kind(view.sql)
    con.execute(f"CREATE OR REPLACE {kind} {view.name} AS {sql.replace(FULL, full)}")


def alone_free(con: Any, path: Any = None) -> bool:
    """Whether no session of the store can have run alone (`MAYBE_ALONE` finds none).

    `FULL` parses every session's `extra` in each statement over `session_results`. A store
    with no session `MAYBE_ALONE` has none run alone, so the TEMP views of a read-only
    connection — which live as long as it, during which no writer changes the file — test
    nothing. With the store's `path`, the answer is kept per state of the file
    (`benchpack.specs.storefile.store_facts`: the probe scans every session's `extra`, ~0.011
    s CPU on 1 M turns, once a report)."""
    from benchpack.specs.storefile import record_store_facts, store_facts, store_identity

    identity = store_identity(path) if path is not None else None
    known = store_facts(path, identity).get("alone_free") if identity is not None else None
    if isinstance(known, bool):
        return known
    free = not con.execute(f"SELECT 1 FROM sessions s WHERE {MAYBE_ALONE} LIMIT 1").fetchall()
    if identity is not None:
        record_store_facts(path, identity, {"alone_free": free})
    return free


_WORD = re.compile(r"[a-z_][a-z0-9_]*")

CATALOG_WORDS = frozenset((
    "duckdb_views", "duckdb_columns", "duckdb_dependencies", "information_schema",
    "sqlite_master", "pg_catalog", "show", "describe", "summarize", "show_tables",
    "show_tables_expanded", "pragma_show_tables", "pragma_show_tables_expanded"))
"""Words of a statement that may list the catalog: `LazyViews` creates every view first."""


def _words(sql: str) -> set[str]:
    return set(_WORD.findall(sql.lower()))


class LazyViews:
    """A read-only connection whose report views are created (TEMP) when a statement first
    names one, with the views it reads, rather than all when it opens: 21 statements, ~0.04
    s CPU a report on 1 M turns, where `cost` reads none and the summary four. Everything
    else is the connection's (`__getattr__`); a statement naming a catalog listing
    (`CATALOG_WORDS`) sees every view, and `readable` answers which tables and views a
    report can read without creating them. A plug-in protocol's views (`plugin_views`) are
    looked for when a statement names something the store lacks, as `bench query` does.

    Same views, same SQL, same results as `install_views` (tests/reports/test_lazy_views.py
    builds every report both ways); only fewer are created. `path`: the store's file, where
    `alone_free` keeps its answer."""

    def __init__(self, con: Any, version: int, path: Any = None) -> None:
        self._con, self._version, self._path = con, version, path
        self._views = {v.name: v for v in VIEWS}
        self._plugged: list[View] | None = None  # looked for once, when a name is missing
        self._made: set[str] = set()
        self._tables: set[str] | None = None
        self._full: str | None = None
        self.created: list[str] = []
        """The views created, in order (what the tests count)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def cursor(self) -> LazyViews:
        """A cursor of this connection (a connection of its own to the database: none of
        this one's TEMP views) that creates its views as this one does."""
        other = LazyViews(self._con.cursor(), self._version, self._path)
        other._tables, other._full = self._tables, self._full
        return other

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._con.execute, sql, *args, **kwargs)

    def sql(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._con.sql, sql, *args, **kwargs)

    def _run(self, call: Any, sql: str, *args: Any, **kwargs: Any) -> Any:
        words = _words(sql) if isinstance(sql, str) else set()
        self._need(words)
        try:
            return call(sql, *args, **kwargs)
        except Exception as exc:
            # a plug-in protocol's view (VIEW_NAMES cannot list it): looked for once
            from benchpack.specs.storefile import duckdb_core

            if (self._plugged is not None
                    or not isinstance(exc, duckdb_core().CatalogException)
                    or not words & {v.name for v in self._plug()}):
                raise
        self._need(words)
        return call(sql, *args, **kwargs)

    def _plug(self) -> list[View]:
        self._plugged = (plugin_views(self._con) if "sessions" in self._known_tables() else [])
        self._views.update({v.name: v for v in self._plugged})
        return self._plugged

    def _known_tables(self) -> set[str]:
        if self._tables is None:
            self._tables = _tables(self._con)
        return self._tables

    def readable(self) -> set[str]:
        """The store's tables and the views this connection has or would create."""
        if self._plugged is None:
            self._plug()
        tables = self._known_tables()
        return tables | {n for n, v in self._views.items() if all(t in tables for t in v.needs)}

    def _need(self, words: set[str]) -> None:
        if words & CATALOG_WORDS:
            if self._plugged is None:
                self._plug()
            wanted = set(self._views)
        else:
            wanted = words & self._views.keys()
        wanted -= self._made
        if not wanted:
            return
        # each view with those it reads (their SQL names them), created in `VIEWS` order
        todo = set()
        while wanted:
            name = wanted.pop()
            todo.add(name)
            wanted |= (_words(self._views[name].sql) & self._views.keys()) - todo - self._made
        for name in self._views:  # VIEWS, then plug-ins: each after those it reads
            if name not in todo:
                continue
            view = self._views[name]
            self._made.add(name)
            if view.needs and not all(t in self._known_tables() for t in view.needs):
                continue
            try:
                if self._full is None and FULL in view.sql:
                    self._full = "TRUE" if alone_free(self._con, self._path) else FULL
                _create(self._con, view, self._version, "TEMP VIEW", self._full or FULL)
            except Exception as exc:
                from benchpack.specs.storefile import damage_reason

                if damage_reason(exc):
                    raise
                # the store cannot have the view: said as when every view was created at
                # open (`access.open_store`: `<store>: why`), not as the report's mistake
                raise ViewError(str(exc)) from None
            self.created.append(name)


def readable(con: Any) -> set[str]:
    """The tables and views a report can read on `con`: a `LazyViews` connection answers
    without creating its views; another is asked its catalog."""
    if isinstance(con, LazyViews):
        return con.readable()
    return {str(r[0]) for r in con.execute(
        "SELECT table_name FROM duckdb_tables() UNION SELECT view_name FROM duckdb_views()"
    ).fetchall()}


def plugin_views(con: Any) -> list[View]:
    """The views of the plug-in protocols whose sessions the store holds, after every other
    (a name a built-in view has is not taken); entry points are read only for such a store."""
    names = sorted(str(r[0]) for r in con.execute("SELECT DISTINCT protocol FROM sessions")
                   .fetchall() if r[0] is not None and r[0] not in PROTOCOL_REPORTS)
    if not names:
        return []
    from .protocols import plugin_reports

    found = [v for p in map(plugin_reports, names) if p is not None for v in p.views]
    return [replace(v, sql=v.sql.replace("{FULL}", FULL)) for v in found
            if v.name not in VIEW_NAMES]


def _without_error_kind(sql: str) -> str:
    """`sql` for a store from before `sessions.error_kind` (schema < 3), opened read-only and
    so not migrated: its errors are unclassified (NULL), hence excluded and counted."""
    def sub(m: re.Match[str]) -> str:
        alias = (m.group(2) or " sessions").strip()
        return (f"{m.group(1)} (SELECT *, CAST(NULL AS VARCHAR) AS error_kind FROM sessions) "
                f"AS {alias}")
    return re.sub(r"\b(FROM|JOIN) sessions\b( [a-z]\b)?", sub, sql)


def describe() -> str:
    """The views as Markdown, for documentation and `bench query --views`."""
    out = []
    for v in VIEWS:
        out.append(f"- `{v.name}` — {' '.join(v.doc.split())}")
    return "\n".join(out)
