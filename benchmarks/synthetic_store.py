"""The synthetic store `report_bench.py` and `view_bench.py` time reports over: 1 M turns by
default, generated with DuckDB SQL (no Python loops over rows), deterministic for its
parameters. Several runs (agents, one of them run twice), each repeat of each plan session, all
four protocols, with their child tables in realistic proportions; two agents' runs re-judged by
another judge as `bench rejudge` writes it, and a share of those runs' judged items rated by
humans as `bench ratings import` stores them (see `report_bench.py`'s docstring).

Kept apart from the timing so the benchmark reads as "build the store, then time each report"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

RUNS = 5
REPEATS = 3
AGENTS = ["litellm:gpt-4o", "litellm:claude-3-5-sonnet", "litellm:llama-3.1-70b",
          "scripted:baseline.yaml", "litellm:gpt-4o"]
"""One agent per run; the last run evaluates the first agent again (reports then label runs by
agent and run id)."""
QUALITY = [0.72, 0.62, 0.48, 0.3, 0.7]
"""Per run: how often things go well (a completed intent, a PASS, a matched triple…)."""
MEAN_TURNS = 10
JUDGE = "litellm:gpt-4o"
REJUDGED = [0, 1]
"""The runs (by index) `bench rejudge` re-judged with `REJUDGE_JUDGE`: two agents, so rank
stability has rankings to compare."""
REJUDGE_JUDGE = "litellm:claude-3-5-sonnet"
DISAGREE = {"trigger": 0.2, "checklist": 0.1, "triple": 0.08, "intent": 0.05}
"""How often the new judge decides an item otherwise than the original (a trigger point: one
step in 17 %, PASS ↔ FAIL in 3 %). Judge errors besides: about 1 % of trigger points, 0.5 % of
rubric items and intent checks, 0.3 % of triples."""
RATED = 0.15
"""Share of the judged items (scored trigger points, rubric checklist items, ground-truth
triples of sessions with a graph) of each re-judged run that humans rated."""
RATERS = 6
"""Raters in the pool; an item has 2, 3 (most often) or 4 of them."""


def run_id(r: int) -> str:
    return f"synth-{r + 1:02d}"


def rejudge_id(r: int) -> str:
    """The id `bench rejudge` gives run `r` re-judged by `REJUDGE_JUDGE` (`default_run_id`)."""
    return f"{run_id(r)}+rejudge-{REJUDGE_JUDGE.partition(':')[2]}"


def _sql_list(values: list[Any]) -> str:
    return "[" + ", ".join(repr(v) for v in values) + "]"


def generate(db: Path, turns: int = 1_000_000) -> dict[str, int]:
    """Write a synthetic store with exactly `turns` rows in `turns` to `db` (a new file);
    return the row count of every table."""
    from benchpack.runtime.store import connect

    if db.exists():
        raise FileExistsError(db)
    # plan sessions per run: at least one of each of the 20 slots (see `_generator_sql`)
    per_run = max(20, turns // (MEAN_TURNS * (RUNS + len(REJUDGED)) * REPEATS))
    con = connect(db)
    try:
        con.execute("SET enable_progress_bar = false")
        for sql in _generator_sql(turns, per_run, per_run * RUNS * REPEATS):
            con.execute(sql)
        con.execute("CHECKPOINT")
        return table_counts(con)
    finally:
        con.close()


def table_counts(con: Any) -> dict[str, int]:
    from benchpack.reports.api import TABLES

    return {t: int(con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]) for t in TABLES}


def _generator_sql(turns: int, per_run: int, total: int) -> list[str]:
    """The statements that fill the store. Plan session `p` of a run has slot `p % 20`:
    0–8 intent tracking (5–7 a dependency group, 8 the without-dependencies variant of 7; the
    group is one episode, every other session an episode of its own),
    9–12 staged disclosure, 13–16 trigger rubrics, 17–19 verified outcome (19 proactive).

    Session attempt `k` of run `r` (`gen_s`); a re-judged run's attempts get a copy `k` in its
    rejudge whose `sk` (source key) is the original's. What the agent and the user did (turns,
    messages, tool calls, stage events, agent and simulator calls, the predicted graph) is
    generated once per source key and copied; what a judge decided is drawn per key."""
    words = ["calendar", "invoice", "refill", "deadline", "itinerary", "contract", "budget",
             "reminder", "supplier", "agenda", "report", "prescription"]
    tools = ["calendar__list", "calendar__create", "mail__search", "mail__send", "files__read",
             "files__write", "todo__create", "crm__lookup"]
    block = per_run * REPEATS
    agents = _sql_list(AGENTS)
    rejudged = _sql_list(REJUDGED)
    d = DISAGREE
    judge_model = REJUDGE_JUDGE.partition(":")[2]
    return [
        "CREATE TEMP MACRO h(a, b) AS (hash(a, b) >> 1)::BIGINT",
        "CREATE TEMP MACRO h3(a, b, c) AS (hash(a, b, c) >> 1)::BIGINT",
        "CREATE TEMP MACRO u(a, b) AS (h(a, b) % 1000000) / 1000000.0",
        "CREATE TEMP MACRO u3(a, b, c) AS (h3(a, b, c) % 1000000) / 1000000.0",
        f"CREATE TEMP MACRO word(a, b) AS {_sql_list(words)}[1 + h(a, b) % {len(words)}]",
        # a label one step away on an ordinal scale 0..m (a coin `x` picks the side in the middle)
        "CREATE TEMP MACRO step(v, m, x) AS CASE WHEN v = 0 THEN 1 WHEN v = m THEN m - 1 "
        "WHEN x < 0.5 THEN v - 1 ELSE v + 1 END",
        # BY NAME everywhere: a column the store gains later stays NULL instead of breaking this
        f"""INSERT INTO runs BY NAME
        SELECT 'synth-' || lpad((r + 1)::VARCHAR, 2, '0') AS run_id,
               1.7e9 + r * 86400 AS created_at, 1.7e9 + r * 86400 + 3600 AS updated_at,
               'build/synth' AS plan_path, 'plan' || r AS plan_hash, 'synthetic' AS pack_name,
               '1.0' AS pack_version, '0.1.0' AS benchpack_version,
               {agents}[r + 1] AS agent, 'litellm:gpt-4o-mini' AS simulator,
               '{JUDGE}' AS judge, {REPEATS} AS repeats, '{{}}' AS config,
               'finished' AS status
        FROM range({RUNS}) t(r)""",
        # a rejudge: the source run's row with the new judge and its lineage in `config`
        f"""INSERT INTO runs BY NAME
        SELECT src || '+rejudge-{judge_model}' AS run_id,
               1.7e9 + ({RUNS} + j) * 86400 AS created_at,
               1.7e9 + ({RUNS} + j) * 86400 + 600 AS updated_at, 'build/synth' AS plan_path,
               'plan' || r AS plan_hash, 'synthetic' AS pack_name, '1.0' AS pack_version,
               '0.1.0' AS benchpack_version, {agents}[r + 1] AS agent,
               'litellm:gpt-4o-mini' AS simulator, '{REJUDGE_JUDGE}' AS judge,
               {REPEATS} AS repeats,
               json_object('run_id', src || '+rejudge-{judge_model}', 'judge',
                           '{REJUDGE_JUDGE}', 'rejudge_of', src, 'source_run', src) AS config,
               'finished' AS status
        FROM (SELECT j, {rejudged}[j + 1] AS r,
                     'synth-' || lpad(({rejudged}[j + 1] + 1)::VARCHAR, 2, '0') AS src
              FROM range({len(REJUDGED)}) t(j))""",
        # one row per session attempt: plan slot, outcome quality, status and its turn count;
        # turn counts are rescaled so that their total, copies included, is exactly `turns`:
        # an attempt of a re-judged run (counted twice) gets its floor share, the others share
        # the rest with the cumulative-floor trick
        f"""CREATE TEMP TABLE gen_s AS
        WITH b AS (
            SELECT k, (k // {block})::INTEGER AS r,
                   ((k // {per_run}) % {REPEATS})::INTEGER AS rep, (k % {per_run})::INTEGER AS p
            FROM range({total}) t(k)
        ), c AS (
            SELECT *, p % 20 AS slot, {_sql_list(QUALITY)}[r + 1] AS q,
                   CASE WHEN u(k, 'skip') < 0.005 THEN 'skipped'
                        WHEN u(k, 'error') < 0.01 THEN 'error' ELSE 'finished' END AS status,
                   list_position({rejudged}, r) AS copy
            FROM b
        ), d AS (
            SELECT *, CASE WHEN slot <= 8 THEN 'intent_tracking'
                           WHEN slot <= 12 THEN 'staged_disclosure'
                           WHEN slot <= 16 THEN 'trigger_rubric'
                           ELSE 'verified_outcome' END AS protocol,
                   CASE WHEN status = 'skipped' THEN 0
                        WHEN slot <= 8 THEN 4 + h(k, 'len') % 11
                        WHEN slot <= 12 THEN 6 + h(k, 'len') % 9
                        WHEN slot <= 16 THEN 10
                        ELSE 3 + h(k, 'len') % 11 END AS len0
            FROM c
        ), e AS (
            SELECT *, sum(CASE WHEN copy IS NULL THEN len0 ELSE 2 * len0 END) OVER ()::BIGINT
                          AS weighted,
                      sum(CASE WHEN copy IS NULL THEN len0 ELSE 0 END)
                          OVER (ORDER BY k ROWS UNBOUNDED PRECEDING)::BIGINT AS cum,
                      sum(CASE WHEN copy IS NULL THEN len0 ELSE 0 END) OVER ()::BIGINT AS single
            FROM d
        ), f AS (
            SELECT *, CASE WHEN copy IS NOT NULL THEN len0 * {turns} // weighted END AS twice
            FROM e
        ), g AS (
            SELECT *, {turns} - 2 * sum(twice) OVER ()::BIGINT AS rest FROM f
        ), base AS (
            SELECT k, k AS sk, r, r AS sr, rep, p, slot, q, status, protocol, copy,
                   'synth-' || lpad((r + 1)::VARCHAR, 2, '0') AS run_id,
                   {agents}[r + 1] AS agent,
                   CASE WHEN slot = 8 THEN 'ep' || (p // 10) || '.t' || (p - 1) || '~nodeps'
                        ELSE 'ep' || (p // 10) || '.t' || p END AS name,
                   'session.synthetic.' || name AS session_id,
                   CASE WHEN slot = 8 THEN 'session.synthetic.ep' || (p // 10) || '.t' || (p - 1)
                        END AS base_session,
                   coalesce(twice, cum * rest // single - (cum - len0) * rest // single
                           )::INTEGER AS nturns,
                   1.7e9 + r * 86400 + (k % {block}) * 2.0 AS t0
            FROM g
        )
        SELECT * EXCLUDE (copy), NULL::VARCHAR AS source_run FROM base
        UNION ALL BY NAME
        SELECT {total} + (copy - 1) * {block} + k % {block} AS k, sk, {RUNS} + copy - 1 AS r,
               * EXCLUDE (k, sk, r, copy, run_id),
               run_id || '+rejudge-{judge_model}' AS run_id, run_id AS source_run
        FROM base WHERE copy IS NOT NULL""",
        # one row per turn of an original dialogue (copies join it on `sk`): how many tool
        # calls the agent made in it
        """CREATE TEMP TABLE gen_t AS
        SELECT k, (i + 1)::INTEGER AS turn,
               (CASE WHEN u3(k, i, 'tc') < 0.6 THEN 0 WHEN u3(k, i, 'tc') < 0.9 THEN 1
                     ELSE 2 END)::INTEGER AS tc
        FROM gen_s, range(gen_s.nturns) t(i) WHERE k = sk""",
        """INSERT INTO turns BY NAME
        SELECT s.run_id, s.session_id, s.rep AS repeat, t.turn,
               CASE WHEN t.turn = 1 AND s.slot = 19 THEN NULL
                    ELSE 'Could you sort out the ' || word(t.k, t.turn) || ' for the '
                         || word(t.turn, t.k) || ' review (step ' || t.turn || ')?' END
                   AS user_message,
               'Done: I checked the ' || word(t.k, t.turn) || ' and updated the '
                   || word(t.turn, t.k) || '. ' || repeat('Details follow. ', 1 + t.turn % 6)
                   AS assistant_message,
               1 + (t.tc > 0)::INTEGER AS steps, t.tc AS tool_calls,
               CASE WHEN t.turn = s.nturns THEN 'final' ELSE 'reply' END AS stop_reason,
               s.t0 + t.turn * 20.0 AS started_at, 0.5 + u3(t.k, t.turn, 'dur') * 8 AS duration_s
        FROM gen_t t JOIN gen_s s ON s.sk = t.k ORDER BY s.k, t.turn""",
        # user message, assistant message with tool calls, tool results, final assistant reply
        f"""INSERT INTO messages BY NAME
        WITH m AS (
            SELECT k, turn, 0 AS j, 'user' AS role, NULL AS tc FROM gen_t
            UNION ALL SELECT k, turn, 1, 'assistant', tc FROM gen_t WHERE tc > 0
            UNION ALL SELECT k, turn, 2 + i, 'tool', NULL FROM gen_t, range(gen_t.tc) x(i)
            UNION ALL SELECT k, turn, 9, 'assistant', NULL FROM gen_t
        )
        SELECT s.run_id, s.session_id, s.rep AS repeat, m.turn * 10 + m.j AS seq, m.turn,
               m.role,
               CASE m.role WHEN 'user' THEN 'Please check the ' || word(m.k, m.turn) || '.'
                    WHEN 'tool' THEN '{{"ok": true, "items": ' || (h3(m.k, m.turn, m.j) % 9)
                                     || '}}'
                    ELSE CASE WHEN m.tc IS NULL THEN 'Here is the ' || word(m.turn, m.k)
                              || ' summary. ' || repeat('More detail. ', 1 + m.turn % 5) END
               END AS content,
               CASE WHEN m.tc IS NOT NULL
                    THEN '[{{"id": "call_' || m.turn || '", "name": "'
                         || {_sql_list(tools)}[1 + h(m.k, m.turn) % {len(tools)}] || '"}}]'
               END::JSON AS tool_calls,
               CASE WHEN m.role = 'tool' THEN 'call_' || m.turn END AS tool_call_id,
               CASE WHEN m.role = 'tool' THEN {_sql_list(tools)}[1 + h(m.k, m.turn)
                                                                   % {len(tools)}] END AS name
        FROM m JOIN gen_s s ON s.sk = m.k ORDER BY s.k, m.turn, m.j""",
        f"""INSERT INTO tool_calls BY NAME
        SELECT s.run_id, s.session_id, s.rep AS repeat, t.turn * 10 + i AS seq, t.turn,
               i + 1 AS step, 'call_' || t.turn || '_' || i AS call_id, tool AS tool_name,
               CASE WHEN tool LIKE '%create' OR tool LIKE '%send' OR tool LIKE '%write'
                    THEN 'write' ELSE 'read' END AS effect,
               ('{{"name": "' || tool || '", "arguments": {{"query": "'
                || word(t.k, t.turn) || '"}}}}')::JSON AS call,
               ('{{"ok": true, "count": ' || h3(t.k, t.turn, i) % 9 || '}}')::JSON AS result,
               CASE WHEN u3(t.k, t.turn, i) < 0.02 THEN 'timeout' END AS error,
               s.t0 + t.turn * 20.0 + i AS started_at,
               0.05 + u3(t.k, t.turn, i) * 0.5 AS duration_s,
               split_part(tool, '__', 1) AS tool_group
        FROM gen_t t JOIN gen_s s ON s.sk = t.k, range(t.tc) x(i),
             LATERAL (SELECT {_sql_list(tools)}[1 + h3(t.k, t.turn, i) % {len(tools)}]
                      AS tool)
        ORDER BY s.k, t.turn, i""",
        # intent tracking: 1–5 hidden intents per session, worse without the prior sessions;
        # a rejudge does not re-decide statuses (it leaves them out, and PROC NULL)
        """CREATE TEMP TABLE gen_i AS
        SELECT k, i, CASE WHEN x < 0.03 THEN 'unresolved'
                          WHEN x < 0.03 + q * 0.55 THEN 'completed'
                          WHEN x < 0.03 + q * 0.85 THEN 'inferred' ELSE 'provided' END AS status,
               greatest(1, least(nturns, 1 + i * 2))::INTEGER AS turn
        FROM (SELECT *, u3(k, i, 'intent') * CASE WHEN slot = 8 THEN 1.4 ELSE 1 END AS x
              FROM gen_s, range((1 + h(k, 'intents') % 5)::BIGINT) t(i)
              WHERE protocol = 'intent_tracking' AND status = 'finished' AND k = sk)""",
        """INSERT INTO intent_status BY NAME
        SELECT s.run_id, s.session_id, s.rep AS repeat, 'intent-' || i AS intent_id,
               'Hidden need about the ' || word(s.k, i) AS text,
               CASE WHEN i = 0 THEN 'persistent' ELSE 'session' END AS scope, g.status, g.turn,
               CASE WHEN u3(s.k, i, 'je') < 0.005 THEN 'malformed judge output twice' END
                   AS judge_error
        FROM gen_i g JOIN gen_s s USING (k) ORDER BY s.k, i""",
        # the rejudge's audit of the intent decisions: at every turn of the copied dialogue,
        # the completion check over the intents the original still had open (unresolved ones
        # stay open), then the clarification check over those not completed at that turn;
        # `original` is what the original decided there
        f"""CREATE TEMP TABLE gen_ic AS
        WITH o AS (
            SELECT s.k, t.turn, g.i, g.status = 'completed' AND g.turn = t.turn AS completed,
                   g.status = 'inferred' AND g.turn = t.turn AS inferred
            FROM gen_s s JOIN gen_t t ON t.k = s.sk JOIN gen_i g ON g.k = s.sk
            WHERE s.k <> s.sk AND (g.status = 'unresolved' OR g.turn >= t.turn)
        ), c AS (
            SELECT k, turn, i, 'completion' AS kind, completed AS original FROM o
            UNION ALL
            SELECT k, turn, i, 'clarification', inferred FROM o WHERE NOT completed
        )
        SELECT k, turn, i, kind, original,
               u3(k, turn, kind || ' error') < 0.005 AS failed,
               CASE WHEN u3(k, turn * 10 + i, kind) < {d["intent"]} THEN NOT original
                    ELSE original END AS decision
        FROM c""",
        """INSERT INTO intent_checks BY NAME
        SELECT s.run_id, s.session_id, s.rep AS repeat, c.turn, 'intent-' || c.i AS intent_id,
               c.kind, c.original, CASE WHEN NOT c.failed THEN c.decision END AS decision,
               CASE WHEN c.failed THEN 'malformed judge output twice' END AS judge_error
        FROM gen_ic c JOIN gen_s s USING (k) ORDER BY s.k, c.turn, c.kind, c.i""",
        # checklists: intent-tracking and verified-outcome sessions, 2–5 items; a rejudge keeps
        # the rule items' results and decides the rubric items anew
        """CREATE TEMP TABLE gen_c AS
        SELECT k, i, (u3(k, i, 'check') < q + 0.1)::INTEGER::DOUBLE AS score,
               CASE WHEN i % 3 = 0 THEN 'rule' ELSE 'rubric' END AS grader
        FROM gen_s, range((2 + h(k, 'items') % 4)::BIGINT) t(i)
        WHERE protocol IN ('intent_tracking', 'verified_outcome') AND status = 'finished'
              AND k = sk""",
        f"""INSERT INTO gen_c
        SELECT s.k, c.i,
               CASE WHEN c.grader = 'rule' THEN c.score
                    WHEN u3(s.k, c.i, 'check error') < 0.005 THEN NULL
                    WHEN u3(s.k, c.i, 'recheck') < {d["checklist"]} THEN 1 - c.score
                    ELSE c.score END, c.grader
        FROM gen_c c JOIN gen_s s ON s.sk = c.k AND s.k <> s.sk""",
        """INSERT INTO checklist_results BY NAME
        SELECT s.run_id, s.session_id, s.rep AS repeat, 'item-' || i AS item_id,
               'The ' || word(s.sk, i) || ' is handled.' AS text, grader, score,
               CASE WHEN i = 0 THEN 2.0 ELSE 1.0 END AS weight,
               CASE WHEN i = 0 THEN 'outcome' ELSE 'process' END AS aspect,
               CASE WHEN score IS NOT NULL THEN 'graded' END AS detail,
               CASE WHEN score IS NULL THEN 'malformed judge output twice' END AS error
        FROM gen_c c JOIN gen_s s USING (k) ORDER BY s.k, i""",
        # trigger rubrics: 3–6 trigger points at turns spread over the ten-turn dialogue; a
        # rejudge moves a label one step or (rarely) across the scale
        """CREATE TEMP TABLE gen_tr AS
        SELECT k, i, turn, CASE WHEN turn <= 3 THEN 'emergent' WHEN turn <= 7 THEN 'critical'
                                ELSE 'recovery' END AS type,
               CASE WHEN x < 0.01 THEN NULL WHEN x < 0.01 + q * 0.8 THEN 'PASS'
                    WHEN x < 0.01 + q * 0.8 + 0.2 THEN 'PARTIAL' ELSE 'FAIL' END AS label
        FROM (SELECT k, i, q, u3(k, i, 'label') AS x,
                     (1 + i * 9 // (3 + h(k, 'trig') % 4))::INTEGER AS turn
              FROM gen_s, range((3 + h(k, 'trig') % 4)::BIGINT) t(i)
              WHERE protocol = 'trigger_rubric' AND status = 'finished' AND k = sk)""",
        f"""INSERT INTO gen_tr
        SELECT k, i, turn, type,
               ['FAIL', 'PARTIAL', 'PASS'][1 + CASE
                   WHEN x < 0.01 THEN NULL
                   WHEN v IS NULL THEN (y < q * 0.8)::INTEGER + (y < q * 0.8 + 0.2)::INTEGER
                   WHEN x < 0.01 + {round(d["trigger"] - 0.03, 6)} THEN step(v, 2, y)
                   WHEN x < 0.01 + {d["trigger"]} THEN 2 - v
                   ELSE v END]
        FROM (SELECT s.k, g.i, g.turn, g.type, s.q, u3(s.k, g.i, 'relabel') AS x,
                     u3(s.k, g.i, 'side') AS y,
                     CASE g.label WHEN 'FAIL' THEN 0 WHEN 'PARTIAL' THEN 1 WHEN 'PASS' THEN 2
                     END AS v
              FROM gen_tr g JOIN gen_s s ON s.sk = g.k AND s.k <> s.sk)""",
        """INSERT INTO triggers BY NAME
        SELECT s.run_id, s.session_id, s.rep AS repeat, 'tp' || i AS trigger_id, type, turn,
               CASE WHEN s.sr % 2 = 0 THEN 'offline' ELSE 'live' END AS mode,
               'planner' AS origin, ('["' || word(s.sk, i) || '"]')::JSON AS anchors,
               'Mentions the ' || word(s.sk, i) AS pass_criteria,
               'Hints at it' AS partial_criteria, 'Misses it' AS fail_criteria,
               'A response about the ' || word(i, s.sk) || '.' AS response, label,
               CASE label WHEN 'PASS' THEN 1.0 WHEN 'PARTIAL' THEN 0.5
                          WHEN 'FAIL' THEN 0.0 END AS score,
               CASE WHEN label IS NOT NULL THEN 'The response ' || lower(label) || 'es.' END
                   AS rationale,
               CASE WHEN label IS NOT NULL THEN 'the ' || word(s.sk, i) END AS evidence,
               label IS NOT NULL AS quote_found,
               CASE WHEN label IS NULL THEN 'malformed output twice' END AS judge_error
        FROM gen_tr g JOIN gen_s s USING (k) ORDER BY s.k, i""",
        # staged disclosure: ground-truth and predicted triples (the agent's graph is copied,
        # its coverage re-judged), the stage events
        """CREATE TEMP TABLE gen_g AS
        SELECT *, CASE WHEN x < 0.03 THEN 'malformed' WHEN x < 0.05 THEN 'empty'
                       WHEN x < 0.10 THEN 'repaired' ELSE 'ok' END AS kg_status
        FROM (SELECT k, q, (5 + h(k, 'gt') % 11)::INTEGER AS n_gt,
                     (3 + h(k, 'pred') % 13)::INTEGER AS n_pred, u(k, 'kg') AS x
              FROM gen_s WHERE protocol = 'staged_disclosure' AND status = 'finished'
                               AND k = sk)""",
        """CREATE TEMP TABLE gen_tp AS
        SELECT k, 'ground_truth' AS side, i, kg_status IN ('ok', 'repaired')
               AND u3(k, i, 'gtm') < q AS matched
        FROM gen_g, range(gen_g.n_gt) t(i)
        UNION ALL
        SELECT k, 'predicted', i, u3(k, i, 'pm') < q + 0.15
        FROM gen_g, range(gen_g.n_pred) t(i) WHERE kg_status IN ('ok', 'repaired')""",
        f"""INSERT INTO gen_tp
        SELECT s.k, t.side, t.i,
               CASE WHEN g.kg_status NOT IN ('ok', 'repaired') THEN t.matched
                    WHEN t.side = 'ground_truth' AND u3(s.k, t.i, 'triple error') < 0.003
                        THEN NULL
                    WHEN u3(s.k, t.i, t.side) < {d["triple"]} THEN NOT t.matched
                    ELSE t.matched END
        FROM gen_tp t JOIN gen_g g USING (k) JOIN gen_s s ON s.sk = t.k AND s.k <> s.sk""",
        """INSERT INTO gen_g BY NAME
        SELECT s.k, g.* EXCLUDE (k) FROM gen_g g JOIN gen_s s ON s.sk = g.k AND s.k <> s.sk""",
        """INSERT INTO triples BY NAME
        SELECT s.run_id, s.session_id, s.rep AS repeat, side, i AS idx, word(s.sk, i) AS head,
               'prefers' AS relation, word(i, s.sk) AS tail, 'dim' || (i % 3) AS dimension,
               matched,
               CASE WHEN side = 'ground_truth' AND matched THEN 'direct' END AS coverage,
               CASE WHEN side = 'ground_truth' AND matched IS NULL
                    THEN 'malformed judge output twice' END AS judge_error
        FROM gen_tp g JOIN gen_s s USING (k) ORDER BY s.k, side, i""",
        """INSERT INTO triple_support BY NAME
        SELECT s.run_id, s.session_id, s.rep AS repeat, g.i AS gt_idx, g.i % n_pred AS pred_idx
        FROM gen_tp g JOIN gen_g USING (k) JOIN gen_s s USING (k)
        WHERE side = 'ground_truth' AND matched AND n_pred > 0 ORDER BY s.k, g.i""",
        """INSERT INTO stage_events BY NAME
        SELECT s.run_id, s.session_id, s.rep AS repeat, t.turn,
               'stage' || (t.turn % 5) AS stage_id, t.turn % 5 AS stage_index,
               'mentions' AS kind,
               CASE WHEN t.turn = s.nturns THEN 'done'
                    WHEN u3(t.k, t.turn, 'st') < 0.6 THEN 'disclosed' ELSE 'pushed' END AS event,
               'Stage line about the ' || word(t.k, t.turn) AS detail
        FROM gen_t t JOIN gen_s s ON s.sk = t.k WHERE s.protocol = 'staged_disclosure'
        ORDER BY s.k, t.turn""",
        # LLM calls: an agent call per step, a simulator call per user turn, an intent judge
        # call per turn, a judge call per checklist item, trigger and graph; a rejudge copies
        # the agent and simulator calls (`hk`: whose call it is) and makes its own judge calls
        """CREATE TEMP TABLE gen_l AS
        WITH c AS (
            SELECT s.k, t.k AS hk, turn, 'agent' AS role, 'agent_step' AS purpose, j,
                   turn * 10 + j AS seq
            FROM gen_t t JOIN gen_s s ON s.sk = t.k, range(1 + (t.tc > 0)::INTEGER) x(j)
            UNION ALL SELECT s.k, t.k, turn, 'simulator', 'user_turn', 0, turn * 10 + 5
            FROM gen_t t JOIN gen_s s ON s.sk = t.k WHERE s.protocol <> 'verified_outcome'
            UNION ALL SELECT s.k, s.k, turn, 'judge', 'completion_check', 0, turn * 10 + 6
            FROM gen_t t JOIN gen_s s ON s.sk = t.k WHERE s.protocol = 'intent_tracking'
            UNION ALL SELECT k, k, turn, 'judge', 'trigger', i, turn * 10 + 7 FROM gen_tr
            UNION ALL SELECT k, k, NULL, 'judge', 'rubric', i, 10000 + i FROM gen_c
            WHERE grader = 'rubric'
            UNION ALL SELECT k, k, NULL, 'judge', 'graph', 0, 10100 FROM gen_g
        )
        SELECT k, hk, turn, role, purpose, j, seq::INTEGER AS seq,
               CASE role WHEN 'agent' THEN 800 + h3(hk, seq, 'p') % 3000
                         ELSE 400 + h3(hk, seq, 'p') % 1200 END AS prompt_tokens,
               CASE role WHEN 'agent' THEN 60 + h3(hk, seq, 'c') % 400
                         ELSE 20 + h3(hk, seq, 'c') % 120 END AS completion_tokens,
               u3(hk, seq, 'x') AS x
        FROM c""",
        f"""INSERT INTO llm_calls BY NAME
        SELECT s.run_id, s.session_id, s.rep AS repeat, l.seq, l.role, l.purpose,
               CASE l.role WHEN 'agent' THEN {agents}[s.sr + 1]
                           WHEN 'simulator' THEN 'gpt-4o-mini'
                           WHEN 'judge' THEN CASE WHEN s.k = s.sk THEN 'gpt-4o'
                                                  ELSE '{judge_model}' END END AS model,
               printf('%016x', h(l.hk, l.seq)) AS prompt_hash, l.prompt_tokens,
               l.completion_tokens,
               CASE WHEN l.x < 0.05 THEN 0.0
                    ELSE (l.prompt_tokens * 2.5 + l.completion_tokens * 10) / 1e6 END AS cost,
               CASE WHEN l.x < 0.05 THEN 0.0 ELSE 0.3 + l.x * 4 END AS latency_s,
               l.x < 0.05 AS cache_hit,
               CASE WHEN l.role = 'judge' AND l.x > 0.995 THEN 'malformed output twice' END
                   AS error,
               CASE WHEN l.role = 'judge' AND l.x > 0.98 THEN 2 ELSE 1 END AS attempts, l.turn,
               s.t0 + coalesce(l.turn, s.nturns + 1) * 20.0 AS started_at
        FROM gen_l l JOIN gen_s s USING (k) ORDER BY s.k, l.seq""",
        # the session rows, consistent with their child rows
        """CREATE TEMP TABLE gen_agg AS
        SELECT s.k, t.n AS turns, t.tool_calls, t.steps,
               i.intents, i.completed, i.inferred, i.provided, i.unresolved,
               c.comp, tr.triggers, tr.pass_rate, tr.score AS trigger_score, tr.errors,
               l.prompt_tokens, l.completion_tokens, l.cost, l.judge_errors,
               gt.recall, pr.prec
        FROM gen_s s
        LEFT JOIN (SELECT k, count(*) AS n, sum(tc) AS tool_calls,
                          sum(1 + (tc > 0)::INTEGER) AS steps FROM gen_t GROUP BY k) t
            ON t.k = s.sk
        LEFT JOIN (SELECT k, count(*) AS intents,
                          count(*) FILTER (WHERE status = 'completed') AS completed,
                          count(*) FILTER (WHERE status = 'inferred') AS inferred,
                          count(*) FILTER (WHERE status = 'provided') AS provided,
                          count(*) FILTER (WHERE status = 'unresolved') AS unresolved
                   FROM gen_i GROUP BY k) i ON i.k = s.k
        LEFT JOIN (SELECT k, avg(score) AS comp FROM gen_c GROUP BY k) c ON c.k = s.k
        LEFT JOIN (SELECT k, count(*) AS triggers,
                          avg(CASE WHEN label IS NOT NULL THEN (label = 'PASS')::INTEGER END)
                              AS pass_rate,
                          avg(CASE label WHEN 'PASS' THEN 1.0 WHEN 'PARTIAL' THEN 0.5
                                         WHEN 'FAIL' THEN 0.0 END) AS score,
                          count(*) FILTER (WHERE label IS NULL) AS errors
                   FROM gen_tr GROUP BY k) tr ON tr.k = s.k
        LEFT JOIN (SELECT k, sum(prompt_tokens) AS prompt_tokens,
                          sum(completion_tokens) AS completion_tokens,
                          sum(CASE WHEN x < 0.05 THEN 0
                                   ELSE (prompt_tokens * 2.5 + completion_tokens * 10) / 1e6
                              END) AS cost,
                          count(*) FILTER (WHERE role = 'judge' AND x > 0.995) AS judge_errors
                   FROM gen_l GROUP BY k) l ON l.k = s.k
        LEFT JOIN (SELECT k, avg(matched::INTEGER) AS recall FROM gen_tp
                   WHERE side = 'ground_truth' GROUP BY k) gt ON gt.k = s.k
        LEFT JOIN (SELECT k, avg(matched::INTEGER) AS prec FROM gen_tp
                   WHERE side = 'predicted' GROUP BY k) pr ON pr.k = s.k""",
        f"""INSERT INTO sessions BY NAME
        WITH x AS (
            SELECT s.*, a.* EXCLUDE (k),
                   CASE WHEN s.status = 'finished' THEN
                       (a.completed + a.inferred) / a.intents END AS proc_,
                   coalesce(a.completed + a.inferred, 0) AS resolved
            FROM gen_s s JOIN gen_agg a USING (k)
        )
        SELECT run_id, session_id, rep AS repeat, 'fp' || h(p, 'fp') AS fingerprint,
               -- an episode per session, but the dependency group (slots 5–8) shares one
               'ep' || (p // 20) || CASE WHEN slot BETWEEN 5 AND 8 THEN '.group'
                                         ELSE '.s' || slot END AS episode, name, protocol,
               'persona-' || (p // 10) % 40 AS persona,
               CASE WHEN slot IN (13, 14, 15, 16) THEN
                   ['terse', 'chatty', 'precise', 'emotional'][1 + (p // 20) % 4] END AS style,
               CASE WHEN slot = 8 THEN 'without_dependencies' END AS ablation, base_session,
               CASE WHEN slot IN (5, 6, 7) THEN 'group.ep' || (p // 10) END AS group_id,
               ['scheduling', 'triage', 'shopping', 'travel', 'finance', 'health', 'legal',
                'marketing', 'household', 'research'][1 + h(p, 'cat') % 10] AS category,
               ['pharmacy', 'law', 'retail', 'education', 'logistics',
                'hospitality'][1 + h(p // 10, 'dom') % 6] AS domain,
               ['easy', 'medium', 'hard'][1 + h(p, 'diff') % 3] AS difficulty,
               CASE WHEN p % 7 = 0 THEN 'de' ELSE 'en' END AS language, agent,
               status,
               CASE WHEN status = 'error' THEN 'error'
                    WHEN status = 'skipped' THEN NULL
                    WHEN protocol = 'intent_tracking' THEN
                        CASE WHEN unresolved > 0 THEN 'turn_budget' ELSE 'all_resolved' END
                    WHEN protocol = 'staged_disclosure' THEN
                        ['done', 'done', 'done', 'agent_answer', 'round_budget'][1 + sk % 5]
                    WHEN protocol = 'trigger_rubric' THEN 'dialogue_end'
                    ELSE ['answered', 'answered', 'step_budget'][1 + sk % 3] END AS termination,
               CASE WHEN status = 'error' THEN 'agent failed: HTTP 500 from provider'
                    WHEN status = 'skipped' THEN 'a dependency failed' END AS error,
               coalesce(x.turns, 0) AS turns, coalesce(x.turns, 0) AS user_turns,
               coalesce(steps, 0) AS assistant_turns, coalesce(x.tool_calls, 0) AS tool_calls,
               CASE WHEN protocol = 'staged_disclosure' THEN (sk % 4 = 0)::INTEGER ELSE 0 END
                   AS compactions,
               intents, completed, inferred, provided, unresolved, proc_ AS proc,
               CASE WHEN slot = 7 AND status = 'finished' THEN
                   sum(CASE WHEN slot IN (5, 6, 7) THEN resolved END) OVER grp
                   / sum(CASE WHEN slot IN (5, 6, 7) THEN intents END) OVER grp END
                   AS proc_group,
               CASE WHEN status = 'finished' THEN comp END AS comp,
               CASE WHEN protocol = 'verified_outcome' AND status = 'finished'
                    THEN 0.7 * comp + 0.3 * u(sk, 'soft') END AS score,
               CASE WHEN protocol = 'verified_outcome' AND status = 'finished'
                    THEN 0.7 * comp + 0.3 * u(sk, 'soft') >= 0.7 END AS passed,
               recall, CASE WHEN protocol = 'staged_disclosure' AND status = 'finished'
                            THEN coalesce(prec, 0.0) END AS "precision",
               CASE WHEN recall + coalesce(prec, 0) > 0
                    THEN 2 * recall * prec / (recall + prec)
                    WHEN recall IS NOT NULL THEN 0.0 END AS f1,
               g.n_gt AS triples_gt,
               CASE WHEN g.kg_status IN ('ok', 'repaired') THEN g.n_pred
                    WHEN g.kg_status IS NOT NULL THEN 0 END AS triples_predicted,
               g.kg_status,
               CASE WHEN protocol = 'staged_disclosure' THEN 5 END AS stages,
               CASE WHEN protocol = 'staged_disclosure' THEN least(5, x.turns // 2) END
                   AS stages_disclosed,
               CASE WHEN protocol = 'trigger_rubric' THEN
                   CASE WHEN sr % 2 = 0 THEN 'offline' ELSE 'live' END END AS trigger_mode,
               x.triggers, pass_rate AS trigger_pass_rate, x.trigger_score,
               CASE WHEN slot = 19 THEN 1 + sk % 3 WHEN protocol = 'verified_outcome' THEN 0
                    END AS heartbeats,
               coalesce(x.judge_errors, 0) + coalesce(x.errors, 0) AS judge_errors,
               CASE WHEN protocol = 'verified_outcome' AND sk % 97 = 0 THEN 1 ELSE 0 END
                   AS grader_errors,
               coalesce(x.prompt_tokens, 0) AS prompt_tokens,
               coalesce(x.completion_tokens, 0) AS completion_tokens, coalesce(cost, 0) AS cost,
               t0 AS started_at, t0 + coalesce(x.turns, 0) * 20.0 AS finished_at,
               coalesce(x.turns, 0) * 20.0 AS duration_s,
               -- the runtime decides intent leaks once per session (`intent_leaks`); the
               -- generated user messages never give a hidden need away (a test checks)
               CASE WHEN status <> 'finished' THEN NULL
                    WHEN source_run IS NULL THEN json_merge_patch('{{"synthetic": true}}',
                        CASE WHEN protocol = 'intent_tracking'
                             THEN '{{"intent_leaks": 0}}' ELSE '{{}}' END)
                    ELSE json_object('synthetic', true, 'rejudge', json_object(
                        'of', source_run, 'source_run', source_run, 'judge',
                        '{REJUDGE_JUDGE}')) END::JSON AS extra
        FROM x LEFT JOIN gen_g g USING (k)
        WINDOW grp AS (PARTITION BY r, rep, p // 20)
        ORDER BY k""",
        # human ratings of a share of each re-judged run's judged items, stored under that run
        # as `bench ratings import` does: around a "true" label near the judge's, each rater
        # agreeing with it most of the time; labels are ordinal indexes 0..m here
        """CREATE TEMP TABLE gen_items AS
        SELECT k, 'trigger' AS kind, 'tp' || i AS item_id, 2 AS m,
               CASE label WHEN 'FAIL' THEN 0 WHEN 'PARTIAL' THEN 1 WHEN 'PASS' THEN 2 END AS v
        FROM gen_tr
        UNION ALL
        SELECT k, 'checklist', 'item-' || i, 1, score::INTEGER FROM gen_c WHERE grader = 'rubric'
        UNION ALL
        SELECT k, 'triple', i::VARCHAR, 1, matched::INTEGER FROM gen_tp JOIN gen_g USING (k)
        WHERE side = 'ground_truth' AND kg_status IN ('ok', 'repaired')""",
        f"""CREATE TEMP TABLE gen_h AS
        WITH rated AS (
            SELECT i.*, s.run_id, s.session_id, s.rep, h3(i.k, i.kind, i.item_id) AS hi,
                   CASE WHEN v IS NULL OR u3(i.k, i.item_id, i.kind) < 0.75 THEN coalesce(v, m)
                        ELSE step(v, m, u3(i.k, i.item_id, 'side')) END AS truth
            FROM gen_items i JOIN gen_s s USING (k)
            WHERE s.k = s.sk AND list_contains({rejudged}, s.r)
                  AND u3(i.k, i.item_id, i.kind || ' rated') < {RATED}
        )
        SELECT *, 'rater-' || (1 + (hi + j) % {RATERS}) AS rater,
               CASE WHEN u3(hi, j, 'rater') < 0.8 THEN truth
                    ELSE step(truth, m, u3(hi, j, 'rater side')) END AS label
        FROM rated, range((2 + [0, 1, 1, 1, 2][1 + hi % 5])::BIGINT) t(j)""",
        """INSERT INTO human_ratings BY NAME
        SELECT run_id, session_id, rep AS repeat, kind, item_id, rater,
               CASE WHEN kind = 'trigger' THEN ['FAIL', 'PARTIAL', 'PASS'][label + 1]
                    ELSE ['NO', 'YES'][label + 1] END AS label,
               label / m AS score,
               CASE WHEN hi % 4 = 0 THEN 'Judged from the reply at that turn.' END AS rationale,
               (1 + (hi + j) % 5)::DOUBLE AS confidence,
               'ratings-' || run_id || '.csv:'
                   || (1 + row_number() OVER (PARTITION BY run_id ORDER BY k, kind, item_id, j))
                   AS source,
               1.8e9 AS imported_at
        FROM gen_h ORDER BY k, kind, item_id, j""",
    ]
