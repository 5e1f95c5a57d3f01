"""`bench report cost`: the cost ledger — tokens, calls, cache hits and cost by role, by session
(or a `--by` slice), with totals.

A call's price is *unknown* when it was answered by the provider (no error, not from the
cache) and litellm had no price for its model (`llm_calls.cost` NULL). Such a call makes the
cost of every row it falls in unknown (NULL, shown as "unknown") — never $0, which would pass
for a free run — and is counted (`unpriced_calls`); `priced_cost` keeps the part that is known.
Cache hits cost 0 (nothing was paid); failed calls have no answer and are not unpriced.

Calls of imported runs (`purpose = 'imported'`: counts from a released results file, without
prices or prompts) are a table of their own and never mix with measured ones. Agent calls that
came through the recording proxy (`cmd2:` harnesses) or that a `cmd:` harness reported itself
are shown as `agent (proxy)` and `agent (harness-reported)`.
"""

from __future__ import annotations

from typing import Any

from .model import Column, ReportResult, Table

UNPRICED = "cost IS NULL AND error IS NULL AND NOT coalesce(cache_hit, false)"
"""A call answered by the provider whose price litellm did not know."""

ROLE_LABEL = """CASE WHEN role = 'agent' AND purpose = 'proxy' THEN 'agent (proxy)'
    WHEN role = 'agent' AND purpose = 'harness' THEN 'agent (harness-reported)' ELSE role END"""

ROLE_ORDER = {"agent": 0, "agent (proxy)": 1, "agent (harness-reported)": 2, "simulator": 3,
              "planner": 4, "judge": 5}

LEDGER = f"""count(*) AS calls, count(*) FILTER (WHERE cache_hit) AS cache_hits,
    count(*) FILTER (WHERE error IS NOT NULL) AS errors,
    coalesce(sum(prompt_tokens), 0) AS prompt_tokens,
    coalesce(sum(completion_tokens), 0) AS completion_tokens,
    count(*) FILTER (WHERE {UNPRICED}) AS unpriced_calls,
    coalesce(sum(cost), 0) AS priced_cost"""
"""The ledger's aggregates over a group of `llm_calls` (the cost is derived from the last two)."""


def _ledger_columns(first: list[Column]) -> list[Column]:
    return [*first, Column("calls", "calls", "int"), Column("cache_hits", "cache hits", "int"),
            Column("errors", "errors", "int"), Column("prompt_tokens", "prompt tokens", "int"),
            Column("completion_tokens", "completion tokens", "int"),
            Column("cost", "cost", "money"), Column("unpriced_calls", "unknown-price calls", "int"),
            Column("priced_cost", "of it priced", "money")]


def _ledger_cells(r: tuple[Any, ...]) -> list[Any]:
    """(calls, cache hits, errors, prompt, completion, unpriced, priced) → the row's cells,
    the cost unknown (None) as soon as one call in it is unpriced."""
    calls, hits, errors, pt, ct, unpriced, priced = r
    return [calls, hits, errors, pt, ct, None if unpriced else float(priced), unpriced,
            float(priced)]


def cost(ctx: Any) -> ReportResult:
    labels = ctx.labels()
    res = ReportResult("cost", "Cost ledger: tokens, calls and cost by role and session",
                       "Every LLM call, by role (agent / simulator / planner / judge) and "
                       "model, by session (or `--by`), with totals; imported calls apart.",
                       ctx.runs)
    measured = "run_id IN $runs AND coalesce(purpose, '') <> 'imported'"
    rows = ctx.rows(f"""SELECT run_id, {ROLE_LABEL} AS r, model, {LEDGER},
        avg(latency_s) FILTER (WHERE NOT cache_hit),
        quantile_cont(latency_s, 0.95) FILTER (WHERE NOT cache_hit)
        FROM llm_calls WHERE {measured} GROUP BY ALL""")
    totals = {r[0]: r[1:] for r in ctx.rows(
        f"SELECT run_id, {LEDGER} FROM llm_calls WHERE {measured} GROUP BY run_id")}
    rows.sort(key=lambda r: (r[0], ROLE_ORDER.get(r[1], 9), r[1], r[2] or ""))
    t = Table("By role and model", [*_ledger_columns([
        Column("agent", "run (agent)"), Column("run", "run"), Column("role", "role"),
        Column("model", "model")]), Column("latency", "mean latency", "seconds"),
        Column("p95", "p95 latency", "seconds")])
    for run in dict.fromkeys(r[0] for r in rows):
        for r in (r for r in rows if r[0] == run):
            t.rows.append([labels[run], run, r[1], r[2], *_ledger_cells(r[3:10]), r[10], r[11]])
        t.rows.append([labels[run], run, "total", "", *_ledger_cells(totals[run]), None, None])
    t.notes.append("cost unknown: at least one call in the row was answered by a model "
                   "litellm has no price for (counted in `unknown-price calls`; `of it priced` "
                   "is the known part). Cache hits cost nothing and are left out of latencies; "
                   "failed calls are counted in `errors`.")
    if any(r[8] for r in rows):
        n = sum(r[8] for r in rows)
        t.notes.append(f"{n} call{'s' if n != 1 else ''} with an unknown price: the costs "
                       "they fall in are unknown, not $0.")
    res.tables.append(t)

    group = f"s.{ctx.by}" if ctx.by else "s.name"
    title = f"By {ctx.by}" if ctx.by else "By session"
    # each session's ledger first, then summed by group: joining 2.9 M calls to their
    # sessions and counting distinct sessions took 2.1 s of the report on 1 M turns (0.5 s)
    parts = ("calls", "cache_hits", "errors", "prompt_tokens", "completion_tokens",
             "unpriced_calls")
    summed = ", ".join(f"sum(c.{p})::BIGINT" for p in parts)
    srows = ctx.rows(f"""WITH c AS (SELECT run_id, session_id, repeat, {LEDGER}
            FROM llm_calls WHERE {measured} GROUP BY run_id, session_id, repeat)
        SELECT c.run_id, {group} AS grp, count(*), {summed}, sum(c.priced_cost)
        FROM c JOIN sessions s USING (run_id, session_id, repeat)
        GROUP BY ALL ORDER BY c.run_id, grp""")
    st = Table(title + " (all roles)", _ledger_columns([
        Column("agent", "run (agent)"), Column("run", "run"),
        Column("group", ctx.by or "session"), Column("sessions", "session runs", "int")]))
    st.rows = [[labels[r[0]], r[0], r[1], r[2], *_ledger_cells(r[3:10])] for r in srows]
    res.tables.append(st)

    imported = ctx.rows("""SELECT run_id, role, model, coalesce(sum(attempts), 0),
        coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
        CASE WHEN count(*) FILTER (WHERE cost IS NULL) = 0 THEN sum(cost) END
        FROM llm_calls WHERE run_id IN $runs AND purpose = 'imported'
        GROUP BY ALL ORDER BY ALL""")
    if imported:
        it = Table("Imported calls (from released results; not measured here)", [
            Column("agent", "run (agent)"), Column("run", "run"), Column("role", "role"),
            Column("model", "model"), Column("calls", "calls (as released)", "int"),
            Column("prompt_tokens", "prompt tokens", "int"),
            Column("completion_tokens", "completion tokens", "int"),
            Column("cost", "cost (as released)", "money")],
            notes=["Imported runs carry what the release recorded: call counts and tokens "
                   "(ProactBench), or each simulation's agent and user cost (τ²-bench; "
                   "unknown when one simulation has none); no latencies or prompts. They "
                   "are left out of every total above."])
        it.rows = [[labels[r[0]], *r] for r in imported]
        res.tables.append(it)
    return res
