"""SQL views over the run store: the building blocks of every report and of `bench query`.

The views are created as TEMP views on each connection `bench report` / `bench query` opens, so
they always match this benchpack version and work on read-only connections; `bench views
--install` writes them into a store for other tools (DuckDB CLI, notebooks). They are versioned
with the store schema (`STORE_SCHEMA`): a store written by a newer benchpack is refused.

Conventions: rates are fractions in [0, 1]; a NULL score means "unknown" (a judge error or a
session that errored) and is excluded from averages, never counted as 0. *micro* figures pool
the underlying items (intents, triggers) across sessions; *macro* figures average per-session
figures — they differ whenever sessions have different numbers of items, and every view says
which it is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

STORE_SCHEMA = 3
"""The store schema version these views read (the `meta.schema_version` the runtime writes)."""


@dataclass(frozen=True)
class View:
    name: str
    doc: str
    sql: str
    needs: tuple[str, ...] = ()
    """Tables added after the first store schema (`CREATE TABLE IF NOT EXISTS`): a store no
    newer benchpack has written to lacks them, and the view is left out there."""


FULL = "coalesce(json_extract_string(s.extra, '$.context'), '') <> 'alone'"
"""A session that ran with its dependencies (not `bench run --alone` without them)."""

VIEWS: tuple[View, ...] = (
    View("session_results", """One row per session attempt (session × repeat) that ran, with the
run's pack, simulator and judge. `agent` is the evaluated model. Skipped sessions (a dependency
failed) are left out; errored ones are kept with NULL scores. Sessions run with `bench run
--alone` without the sessions they depend on are left out too (`alone_results` has them): they
lacked their context and must not be averaged with full-context ones.""", """
SELECT s.*, r.pack_name, r.pack_version, r.simulator AS simulator_model, r.judge AS judge_model,
       CASE WHEN s.assistant_turns > 0 THEN s.user_turns / s.assistant_turns END
           AS user_per_assistant_turn
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
    View("intent_status_micro", """Terminal intent statuses pooled over every intent of a run
(micro). Group-pooled copies (`pooled_from` set) are not counted twice; ablation variants are
left out. A NULL status is undecided (the judge failed; `judge_error` says why): it has no
share, and the shares of the others are over decided intents.""", """
SELECT i.run_id, s.agent, i.status, count(*) AS intents,
       CASE WHEN i.status IS NOT NULL THEN count(*) / sum(CASE WHEN i.status IS NOT NULL
           THEN count(*) END) OVER (PARTITION BY i.run_id) END AS share
FROM intent_status i JOIN sessions s USING (run_id, session_id, repeat)
WHERE i.pooled_from IS NULL AND s.status = 'finished' AND s.ablation IS NULL AND {FULL}
GROUP BY i.run_id, s.agent, i.status
"""),
    View("intent_status_macro", """Terminal intent statuses as per-session shares averaged over
sessions (macro): every session weighs the same whatever its number of intents. Ablation
variants are left out. Shares are over a session's decided intents; `undecided` counts the
intents a failing judge left without a status, and a session with none decided has no
shares.""", """
WITH counted AS (
    SELECT run_id, session_id, repeat, agent, intents,
           coalesce(completed, 0) AS c, coalesce(inferred, 0) AS i,
           coalesce(provided, 0) AS p, coalesce(unresolved, 0) AS u
    FROM sessions s WHERE status = 'finished' AND intents > 0 AND ablation IS NULL AND {FULL}
), per AS (
    SELECT *, c + i + p + u AS decided, intents - (c + i + p + u) AS undecided,
           c / nullif(c + i + p + u, 0) AS completed, i / nullif(c + i + p + u, 0) AS inferred,
           p / nullif(c + i + p + u, 0) AS provided, u / nullif(c + i + p + u, 0) AS unresolved
    FROM counted
)
SELECT run_id, agent, count(*) FILTER (WHERE decided > 0) AS sessions,
       avg(completed) AS completed, avg(inferred) AS inferred, avg(provided) AS provided,
       avg(unresolved) AS unresolved, sum(undecided) AS undecided
FROM per GROUP BY run_id, agent
"""),
    View("dependency_ablation", """Each without-dependencies variant next to its full session,
same run and repeat: PROC and COMP with and without the prior sessions, and the deltas
(with − without).""", """
SELECT v.run_id, v.repeat, v.agent, b.session_id AS session_id, v.session_id AS variant_id,
       b.name, b.episode, b.domain, b.category,
       coalesce(b.proc_group, b.proc) AS proc_with, v.proc AS proc_without,
       b.comp AS comp_with, v.comp AS comp_without,
       coalesce(b.proc_group, b.proc) - v.proc AS proc_delta, b.comp - v.comp AS comp_delta
FROM sessions v JOIN sessions b
  ON b.run_id = v.run_id AND b.repeat = v.repeat AND b.session_id = v.base_session
WHERE v.ablation = 'without_dependencies' AND v.status = 'finished' AND b.status = 'finished'
"""),
    View("graph_results", """Knowledge-graph scores and interaction statistics of
staged-disclosure sessions (per session; macro when averaged).""", """
SELECT run_id, session_id, repeat, agent, name, category, domain, difficulty, style,
       recall, "precision", f1, triples_gt, triples_predicted, kg_status,
       stages, stages_disclosed, termination, turns, user_turns, assistant_turns,
       user_per_assistant_turn, tool_calls, compactions
FROM session_results WHERE protocol = 'staged_disclosure'
"""),
    View("trigger_results", """Every scored trigger point with its session's labels. `score` is
1 / 0.5 / 0 for PASS / PARTIAL / FAIL and NULL on a judge error.""", """
SELECT t.*, s.agent, s.name, s.persona, s.style, s.category, s.domain, s.difficulty,
       s.episode, s.base_session
FROM triggers t JOIN sessions s USING (run_id, session_id, repeat)
WHERE s.status = 'finished' AND {FULL}
"""),
    View("trigger_by_type", """Trigger outcomes per type, pooled over triggers (micro, as
ProactBench reports them): pass rate = PASS/N, partial rate = PARTIAL/N, weighted score =
(PASS + 0.5·PARTIAL)/N over judged triggers; judge errors are counted, not scored.""", """
SELECT run_id, agent, type,
       count(*) FILTER (WHERE label IS NOT NULL) AS n,
       count(*) FILTER (WHERE label = 'PASS') AS pass,
       count(*) FILTER (WHERE label = 'PARTIAL') AS partial,
       count(*) FILTER (WHERE label = 'FAIL') AS fail,
       count(*) FILTER (WHERE label IS NULL) AS judge_errors,
       avg(CASE WHEN label IS NOT NULL THEN (label = 'PASS')::INTEGER END) AS pass_rate,
       avg(CASE WHEN label IS NOT NULL THEN (label = 'PARTIAL')::INTEGER END) AS partial_rate,
       avg(score) AS weighted_score
FROM trigger_results GROUP BY run_id, agent, type
"""),
    View("verified_results", """Verified-outcome sessions: soft score and pass per repeat.""",
         """
SELECT run_id, session_id, repeat, agent, name, coalesce(base_session, session_id) AS task,
       category, domain, difficulty, score, passed, comp, heartbeats, termination, tool_calls,
       prompt_tokens, completion_tokens, cost
FROM session_results WHERE protocol = 'verified_outcome'
"""),
    View("verified_tasks", """Per task (session, style/ablation variants folded into their base):
n runs with a known outcome and c passes — the inputs of pass@k and pass^k.""", """
SELECT run_id, agent, task, count(passed) AS n, count(*) FILTER (WHERE passed) AS c,
       avg(score) AS mean_score
FROM verified_results GROUP BY run_id, agent, task
"""),
    View("llm_usage", """LLM calls by run, role (agent / simulator / planner / judge) and
model: calls, cache hits, errors, tokens, cost and latency (cache hits excluded from latency).""",
         """
SELECT run_id, role, model, count(*) AS calls,
       count(*) FILTER (WHERE cache_hit) AS cache_hits,
       count(*) FILTER (WHERE error IS NOT NULL) AS errors,
       sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens,
       sum(coalesce(cost, 0)) AS cost,
       avg(latency_s) FILTER (WHERE NOT cache_hit) AS mean_latency_s,
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
true; `raters` counts the ratings.""", """
WITH r AS (
    SELECT *, CASE label WHEN 'FAIL' THEN 0 WHEN 'PARTIAL' THEN 1 WHEN 'PASS' THEN 2
                         WHEN 'NO' THEN 0 WHEN 'YES' THEN 1 END AS rank
    FROM human_ratings
)
SELECT run_id AS source_run, session_id, repeat, kind, item_id, count(*) AS raters,
       CASE WHEN kind = 'trigger' THEN ['FAIL', 'PARTIAL', 'PASS'][quantile_disc(rank, 0.5) + 1]
            ELSE ['NO', 'YES'][quantile_disc(rank, 0.5) + 1] END AS label,
       median(rank) <> quantile_disc(rank, 0.5) AS tie
FROM r GROUP BY run_id, session_id, repeat, kind, item_id
""", needs=("human_ratings",)),
    View("human_pairs", """Judge against human consensus: every rated item next to the label
each run that judged those dialogues gave it (NULL on a judge error).""", """
SELECT j.run_id, j.judge, source_run, session_id, repeat, kind, item_id, j.type, h.raters,
       h.tie, h.label AS human_label, j.label AS judge_label
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
VIEWS = tuple(replace(v, sql=v.sql.replace("{FULL}", FULL)) for v in VIEWS)

VIEW_NAMES = tuple(v.name for v in VIEWS)


class StoreVersionError(Exception):
    """The store was written by a newer benchpack (or is not a benchpack store)."""


def store_schema(con: Any) -> int:
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except Exception as exc:
        raise StoreVersionError("not a benchpack store (no `meta` table); run `bench run` "
                                "to create one") from exc
    if row is None:
        raise StoreVersionError("not a benchpack store (no schema version)")
    return int(row[0])


def check_schema(con: Any) -> None:
    version = store_schema(con)
    if version > STORE_SCHEMA:
        raise StoreVersionError(f"the store has schema {version}, newer than this benchpack "
                                f"reads ({STORE_SCHEMA}); upgrade benchpack")


def install_views(con: Any, *, temporary: bool = True) -> list[str]:
    """Create every view on `con` (TEMP views unless `temporary=False`) whose tables the
    store has; the names of those created."""
    check_schema(con)
    kind = "TEMP VIEW" if temporary else "VIEW"
    tables = {str(r[0]) for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    created = []
    for view in VIEWS:
        if all(t in tables for t in view.needs):
            con.execute(f"CREATE OR REPLACE {kind} {view.name} AS {view.sql}")
            created.append(view.name)
    return created


def describe() -> str:
    """The views as Markdown, for documentation and `bench query --views`."""
    out = []
    for v in VIEWS:
        out.append(f"- `{v.name}` — {' '.join(v.doc.split())}")
    return "\n".join(out)
