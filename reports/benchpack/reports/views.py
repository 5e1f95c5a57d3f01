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
"""

from __future__ import annotations

import re
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
    View("intent_status_micro", """Terminal intent statuses pooled over every intent of a run
(micro). Group-pooled copies (`pooled_from` set) are not counted twice; ablation variants are
left out. Every intent of a session the agent errored in counts as unresolved. A NULL status
is undecided (the judge failed; `judge_error` says why): it has no share, and the shares of the
others are over decided intents.""", """
WITH counted AS (
    SELECT i.run_id, s.agent,
           CASE WHEN s.status = 'error' THEN 'unresolved' ELSE i.status END AS status
    FROM intent_status i JOIN session_results s USING (run_id, session_id, repeat)
    WHERE i.pooled_from IS NULL AND s.scored AND s.ablation IS NULL
)
SELECT run_id, agent, status, count(*) AS intents,
       CASE WHEN status IS NOT NULL THEN count(*) / sum(CASE WHEN status IS NOT NULL
           THEN count(*) END) OVER (PARTITION BY run_id) END AS share
FROM counted
GROUP BY run_id, agent, status
"""),
    View("intent_status_macro", """Terminal intent statuses as per-session shares averaged over
sessions (macro): every session weighs the same whatever its number of intents. Ablation
variants are left out; a session the agent errored in is all unresolved. Shares are over a
session's decided intents; `undecided` counts the intents a failing judge left without a
status, and a session with none decided has no shares.""", """
WITH counted AS (
    SELECT run_id, session_id, repeat, agent, intents, status = 'finished' AS ok,
           coalesce(completed, 0) AS c, coalesce(inferred, 0) AS i,
           coalesce(provided, 0) AS p, coalesce(unresolved, 0) AS u
    FROM session_results WHERE scored AND intents > 0 AND ablation IS NULL
), per AS (
    SELECT *,
           CASE WHEN ok THEN c + i + p + u ELSE intents END AS decided,
           CASE WHEN ok THEN intents - (c + i + p + u) ELSE 0 END AS undecided,
           CASE WHEN ok THEN c / nullif(c + i + p + u, 0) ELSE 0 END AS completed,
           CASE WHEN ok THEN i / nullif(c + i + p + u, 0) ELSE 0 END AS inferred,
           CASE WHEN ok THEN p / nullif(c + i + p + u, 0) ELSE 0 END AS provided,
           CASE WHEN ok THEN u / nullif(c + i + p + u, 0) ELSE 1 END AS unresolved
    FROM counted
)
SELECT run_id, agent, count(*) FILTER (WHERE decided > 0) AS sessions,
       avg(completed) AS completed, avg(inferred) AS inferred, avg(provided) AS provided,
       avg(unresolved) AS unresolved, sum(undecided) AS undecided
FROM per GROUP BY run_id, agent
"""),
    View("dependency_ablation", """Each without-dependencies variant next to its full session,
same run and repeat: PROC and COMP with and without the prior sessions, and the deltas
(with − without). Both PROCs are over the final session's own intents (the variant has no
others); `proc_group_with` is the group's pooled PROC (π-Bench's figure for the final
session, over every member's intents), shown for reference and not part of the delta.""", """
SELECT v.run_id, v.repeat, v.agent, b.session_id AS session_id, v.session_id AS variant_id,
       b.name, b.episode, b.domain, b.category,
       b.proc AS proc_with, v.proc AS proc_without,
       b.comp AS comp_with, v.comp AS comp_without,
       b.proc - v.proc AS proc_delta, b.comp - v.comp AS comp_delta,
       b.proc_group AS proc_group_with
FROM sessions v JOIN sessions b
  ON b.run_id = v.run_id AND b.repeat = v.repeat AND b.session_id = v.base_session
WHERE v.ablation = 'without_dependencies' AND (v.status = 'finished' OR v.error_kind = 'agent')
  AND (b.status = 'finished' OR b.error_kind = 'agent')
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
1 / 0.5 / 0 for PASS / PARTIAL / FAIL and NULL on a judge error or a SKIPPED trigger (beyond
the end of the dialogue). The triggers of a session the agent errored in are FAIL, unjudged
(`error_kind` = 'agent').""", """
SELECT t.*, s.agent, s.name, s.persona, s.style, s.category, s.domain, s.difficulty,
       s.episode, s.base_session, s.ablation, s.error_kind
FROM triggers t JOIN session_results s USING (run_id, session_id, repeat)
WHERE s.scored
"""),
    View("trigger_by_type", """Trigger outcomes per type, pooled over triggers (micro, as
ProactBench reports them): pass rate = PASS/N, partial rate = PARTIAL/N, weighted score =
(PASS + 0.5·PARTIAL)/N over judged triggers; judge errors are counted, not scored; SKIPPED
triggers (beyond the end of the dialogue) are counted in `skipped` and are not in N.""", """
SELECT run_id, agent, type,
       count(*) FILTER (WHERE label IN ('PASS', 'PARTIAL', 'FAIL')) AS n,
       count(*) FILTER (WHERE label = 'PASS') AS pass,
       count(*) FILTER (WHERE label = 'PARTIAL') AS partial,
       count(*) FILTER (WHERE label = 'FAIL') AS fail,
       count(*) FILTER (WHERE label IS NULL) AS judge_errors,
       count(*) FILTER (WHERE label = 'SKIPPED') AS skipped,
       avg((label = 'PASS')::INTEGER) FILTER (WHERE label IN ('PASS', 'PARTIAL', 'FAIL'))
           AS pass_rate,
       avg((label = 'PARTIAL')::INTEGER) FILTER (WHERE label IN ('PASS', 'PARTIAL', 'FAIL'))
           AS partial_rate,
       avg(score) FILTER (WHERE label IN ('PASS', 'PARTIAL', 'FAIL')) AS weighted_score
FROM trigger_results
GROUP BY run_id, agent, type
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
    View("verified_results", """Pass/fail sessions (verified outcome, and instructed users whose
`score` is the τ² reward): score and pass per repeat.""",
         """
SELECT run_id, session_id, repeat, agent, name, coalesce(base_session, session_id) AS task,
       category, domain, difficulty, score, passed, comp, heartbeats, termination, tool_calls,
       prompt_tokens, completion_tokens, cost
FROM session_results WHERE protocol IN ('verified_outcome', 'instructed_user')
"""),
    # ---- instructed_user (issue 12 part 4); moves to reports/protocols/instructed_user.py
    # once the per-protocol reports layout lands
    View("instructed_results", """Instructed-user sessions: the stop signal that ended the
dialogue (`done`, `transfer`, `out_of_scope`; NULL at the turn budget), the τ² reward and each
component (1/0; NULL when not in the session's reward or undecided), and pass.""", """
SELECT run_id, session_id, repeat, agent, name, coalesce(base_session, session_id) AS task,
       termination, json_extract_string(extra, '$.stop_signal') AS stop_signal,
       score AS reward, passed,
       TRY_CAST(json_extract(extra, '$.reward.components.state') AS DOUBLE) AS state,
       TRY_CAST(json_extract(extra, '$.reward.components.actions') AS DOUBLE) AS actions,
       TRY_CAST(json_extract(extra, '$.reward.components.communicate') AS DOUBLE)
           AS communicate,
       TRY_CAST(json_extract(extra, '$.reward.components.assertions') AS DOUBLE) AS assertions,
       json_extract_string(extra, '$.reward.state.diff_text') AS state_diff,
       user_turns, turns, tool_calls, status, error_kind
FROM session_results WHERE protocol = 'instructed_user'
"""),
    # ---- end instructed_user
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


def check_schema(con: Any) -> int:
    """The store's schema version; a store newer than this benchpack is refused."""
    version = store_schema(con)
    if version > STORE_SCHEMA:
        raise StoreVersionError(f"the store has schema {version}, newer than this benchpack "
                                f"reads ({STORE_SCHEMA}); upgrade benchpack")
    return version


def install_views(con: Any, *, temporary: bool = True) -> list[str]:
    """Create every view on `con` (TEMP views unless `temporary=False`) whose tables the
    store has; the names of those created."""
    version = check_schema(con)
    kind = "TEMP VIEW" if temporary else "VIEW"
    tables = {str(r[0]) for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    created = []
    for view in VIEWS:
        if all(t in tables for t in view.needs):
            sql = view.sql if version >= 3 else _without_error_kind(view.sql)
            con.execute(f"CREATE OR REPLACE {kind} {view.name} AS {sql}")
            created.append(view.name)
    return created


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
