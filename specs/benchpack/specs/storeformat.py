"""The store's format, defined once: the runtime writes it (`runtime/store.py`,
`runtime/calltexts.py`) and the reports read it (`reports/views.py`, `reports/calltexts.py`,
`reports/api.py`); the reports never import the runtime, so the definition lives here, below
both.

- `SCHEMA_VERSION` and `DDL`: the tables and their columns. A change bumps the version and adds
  a migration (`runtime/storeschema.py`); reports refuse a store newer than they read.
- `SESSION_TABLES`: the child tables keyed by (run_id, session_id, repeat), replaced when a
  session is rerun.
- `EXPORTED_TABLES`: what `bench export` writes, in its order.
- Blobs (`blobs.hash` = sha256 of `data`): snapshot parts (`runtime/snapblobs.py`), and each
  model call's prompt and reply (`llm_call_texts`). A prompt blob is
  `{"base": blob|null, "messages": [...], "skip": k, "tools": blob|null}`: its messages are
  those after the first `k`, which are the base prompt's; a chain of bases is at most
  `CHAIN_MAX` long (a longer one is a damaged store).
"""

from __future__ import annotations

import re
from collections import namedtuple
from functools import cache
from typing import Any

SCHEMA_VERSION = 7

DDL = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY,
    created_at DOUBLE,
    updated_at DOUBLE,
    plan_path VARCHAR,
    plan_hash VARCHAR,
    pack_name VARCHAR,
    pack_version VARCHAR,
    benchpack_version VARCHAR,
    agent VARCHAR,
    simulator VARCHAR,
    judge VARCHAR,
    repeats INTEGER,
    config JSON,
    status VARCHAR
);
CREATE TABLE IF NOT EXISTS sessions (
    run_id VARCHAR, session_id VARCHAR, repeat INTEGER, fingerprint VARCHAR,
    episode VARCHAR, name VARCHAR, protocol VARCHAR, persona VARCHAR, style VARCHAR,
    ablation VARCHAR, base_session VARCHAR, group_id VARCHAR,
    category VARCHAR, domain VARCHAR, difficulty VARCHAR, language VARCHAR,
    agent VARCHAR, status VARCHAR, termination VARCHAR, error VARCHAR,
    turns INTEGER, user_turns INTEGER, assistant_turns INTEGER, tool_calls INTEGER,
    compactions INTEGER,
    intents INTEGER, completed INTEGER, inferred INTEGER, provided INTEGER, unresolved INTEGER,
    proc DOUBLE, proc_group DOUBLE, comp DOUBLE, score DOUBLE, passed BOOLEAN,
    recall DOUBLE, "precision" DOUBLE, f1 DOUBLE, triples_gt INTEGER, triples_predicted INTEGER,
    kg_status VARCHAR, stages INTEGER, stages_disclosed INTEGER,
    trigger_mode VARCHAR, triggers INTEGER, trigger_pass_rate DOUBLE, trigger_score DOUBLE,
    heartbeats INTEGER,
    judge_errors INTEGER, grader_errors INTEGER,
    prompt_tokens BIGINT, completion_tokens BIGINT, cost DOUBLE,
    started_at DOUBLE, finished_at DOUBLE, duration_s DOUBLE,
    extra JSON,
    error_kind VARCHAR,
    PRIMARY KEY (run_id, session_id, repeat)
);
CREATE TABLE IF NOT EXISTS turns (
    run_id VARCHAR, session_id VARCHAR, repeat INTEGER, turn INTEGER,
    user_message VARCHAR, assistant_message VARCHAR, steps INTEGER, tool_calls INTEGER,
    stop_reason VARCHAR, started_at DOUBLE, duration_s DOUBLE
);
CREATE TABLE IF NOT EXISTS messages (
    run_id VARCHAR, session_id VARCHAR, repeat INTEGER, seq INTEGER, turn INTEGER,
    role VARCHAR, content VARCHAR, tool_calls JSON, tool_call_id VARCHAR, name VARCHAR
);
CREATE TABLE IF NOT EXISTS tool_calls (
    run_id VARCHAR, session_id VARCHAR, repeat INTEGER, seq INTEGER, turn INTEGER,
    step INTEGER, call_id VARCHAR, tool_name VARCHAR, effect VARCHAR, call JSON, result JSON,
    error VARCHAR, started_at DOUBLE, duration_s DOUBLE,
    tool_group VARCHAR, side VARCHAR
);
CREATE TABLE IF NOT EXISTS intent_status (
    run_id VARCHAR, session_id VARCHAR, repeat INTEGER, intent_id VARCHAR, text VARCHAR,
    scope VARCHAR, status VARCHAR, turn INTEGER, judge_error VARCHAR, pooled_from VARCHAR
);
CREATE TABLE IF NOT EXISTS checklist_results (
    run_id VARCHAR, session_id VARCHAR, repeat INTEGER, item_id VARCHAR, text VARCHAR,
    grader VARCHAR, score DOUBLE, weight DOUBLE, aspect VARCHAR, detail VARCHAR,
    error VARCHAR
);
CREATE TABLE IF NOT EXISTS llm_calls (
    run_id VARCHAR, session_id VARCHAR, repeat INTEGER, seq INTEGER, role VARCHAR,
    purpose VARCHAR, model VARCHAR, prompt_hash VARCHAR, prompt_tokens BIGINT,
    completion_tokens BIGINT, cost DOUBLE, latency_s DOUBLE, cache_hit BOOLEAN, error VARCHAR,
    attempts INTEGER, turn INTEGER, started_at DOUBLE
);
CREATE TABLE IF NOT EXISTS stage_events (
    run_id VARCHAR, session_id VARCHAR, repeat INTEGER, turn INTEGER, stage_id VARCHAR,
    stage_index INTEGER, kind VARCHAR, event VARCHAR, detail VARCHAR
);
CREATE TABLE IF NOT EXISTS triples (
    run_id VARCHAR, session_id VARCHAR, repeat INTEGER, side VARCHAR, idx INTEGER,
    head VARCHAR, relation VARCHAR, tail VARCHAR, dimension VARCHAR, matched BOOLEAN,
    coverage VARCHAR, judge_error VARCHAR
);
CREATE TABLE IF NOT EXISTS triple_support (
    run_id VARCHAR, session_id VARCHAR, repeat INTEGER, gt_idx INTEGER, pred_idx INTEGER
);
CREATE TABLE IF NOT EXISTS triggers (
    run_id VARCHAR, session_id VARCHAR, repeat INTEGER, trigger_id VARCHAR, type VARCHAR,
    turn INTEGER, mode VARCHAR, origin VARCHAR, anchors JSON, pass_criteria VARCHAR,
    partial_criteria VARCHAR, fail_criteria VARCHAR, response VARCHAR, label VARCHAR,
    score DOUBLE, rationale VARCHAR, evidence VARCHAR, quote_found BOOLEAN, judge_error VARCHAR
);
CREATE TABLE IF NOT EXISTS snapshots (
    run_id VARCHAR, episode VARCHAR, repeat INTEGER, session_id VARCHAR, state JSON,
    PRIMARY KEY (run_id, episode, repeat, session_id)
);
CREATE TABLE IF NOT EXISTS blobs (hash VARCHAR, data VARCHAR);
CREATE TABLE IF NOT EXISTS llm_call_texts (
    run_id VARCHAR, session_id VARCHAR, repeat INTEGER, seq INTEGER, prompt VARCHAR,
    reply VARCHAR
);
CREATE TABLE IF NOT EXISTS intent_checks (
    run_id VARCHAR, session_id VARCHAR, repeat INTEGER, turn INTEGER, intent_id VARCHAR,
    kind VARCHAR, original BOOLEAN, decision BOOLEAN, judge_error VARCHAR
);
CREATE TABLE IF NOT EXISTS score_components (
    run_id VARCHAR, session_id VARCHAR, repeat INTEGER, name VARCHAR, kind VARCHAR,
    value DOUBLE, detail JSON
);
CREATE TABLE IF NOT EXISTS human_ratings (
    run_id VARCHAR, session_id VARCHAR, repeat INTEGER, kind VARCHAR, item_id VARCHAR,
    rater VARCHAR, label VARCHAR, score DOUBLE, rationale VARCHAR, confidence DOUBLE,
    source VARCHAR, imported_at DOUBLE
);
"""

# child tables keyed by (run_id, session_id, repeat), replaced when a session is rerun
SESSION_TABLES = ("turns", "messages", "tool_calls", "intent_status", "checklist_results",
                  "llm_calls", "stage_events", "triples", "triple_support", "triggers",
                  "intent_checks", "score_components", "llm_call_texts")


EXPORTED_TABLES = ("runs", "sessions", "turns", "messages", "tool_calls", "intent_status",
          "checklist_results", "llm_calls", "stage_events", "triples", "triple_support",
          "triggers", "snapshots", "blobs", "llm_call_texts", "intent_checks", "human_ratings")
"""`bench export`'s tables (`meta` and `score_components` are not exported)."""

CHAIN_MAX = 16
"""Most links from a prompt blob to the first prompt of its chain."""

SESSION_KEY = ("run_id", "session_id", "repeat")

# DuckDB sums DOUBLEs in whatever order its threads finish, so a float sum or mean of many
# calls moves in its last digits from one read to the next (6 reads of the 1 M-turn store:
# 4 different mean latencies, 2 different run costs). Summed as DECIMAL the sum is exact, so
# every read prints the same figure: costs to 1e-18 USD, latencies to the nanosecond.
EXACT_COST = "cost::DECIMAL(38, 18)"
EXACT_LATENCY = "latency_s::DECIMAL(18, 9)"
"""The columns every row of a `SESSION_TABLES` table starts with."""


@cache
def table_columns(table: str) -> tuple[str, ...]:
    """The columns of `table`, in the DDL's order (quotes dropped)."""
    found = re.search(rf"CREATE TABLE IF NOT EXISTS {table} \((.*?)\);", DDL, re.S)
    if found is None:
        raise KeyError(f"the store has no table `{table}`")
    body = re.sub(r",\s*PRIMARY KEY \([^)]*\)", "", found.group(1))
    return tuple(part.split()[0].strip('"') for part in re.split(r",\s*", body.strip()))


@cache
def row_type(table: str) -> type[Any]:
    """The named row a producer builds for a `SESSION_TABLES` table: its columns after
    `SESSION_KEY` (the session's writer puts those in front), so a field is set by name and a
    row with a column missing, extra or misnamed fails where it is built, not as a value in the
    wrong column. A tuple, so the writer and every reader by position take it unchanged."""
    if table not in SESSION_TABLES:
        raise KeyError(f"`{table}` is not a session table: {', '.join(SESSION_TABLES)}")
    cols = table_columns(table)
    assert cols[:3] == SESSION_KEY, (table, cols)
    kind = namedtuple(f"{table}_row", cols[3:])  # type: ignore[misc]
    globals()[kind.__name__] = kind  # found by name, so a row pickles (Ray, multiprocessing)
    return kind


__all__ = ["CHAIN_MAX", "DDL", "EXPORTED_TABLES", "SCHEMA_VERSION", "SESSION_KEY",
           "SESSION_TABLES", "row_type", "table_columns"]
