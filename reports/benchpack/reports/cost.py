"""`bench report cost`: the cost ledger — tokens, calls, cache hits and cost by role and model,
a total per run, and with `--by` the same per session (`--by name`) or any slice.

A call's price is *unknown* when it was answered by the provider (no error, not from the
cache) and litellm had no price for its model (`llm_calls.cost` NULL). Such a call makes the
cost of every row it falls in unknown (NULL, shown as "unknown") — never $0, which would pass
for a free run — and is counted (`unpriced_calls`); `priced_cost` keeps the part that is known.
Cache hits cost 0 (nothing was paid); failed calls have no answer and are not unpriced.

Costs are summed as DECIMAL(38, 18), exactly, as the run summary sums them: a float sum
grouped in parallel depends on the order rows arrive in, so a total on a rounding boundary
printed one digit or the other from read to read, and the ledger and the summary could
disagree on a run's cost.

The `--by` table is long (one row per session name: 33,000 on 1 M turns, which nobody reads
in a terminal): each run shows its `--limit` costliest groups, and the table says how many
rows it leaves out and how to get them (`ReportContext.limit`, `Table.more`).

Calls of imported runs (`purpose = 'imported'`: counts from a released results file, without
prices or prompts) are a table of their own and never mix with measured ones. Agent calls that
came through the recording proxy (`cmd2:` harnesses) or that a `cmd:` harness reported itself
are shown as `agent (proxy)` and `agent (harness-reported)`.
"""

from __future__ import annotations

import contextlib
from typing import Any

from benchpack.specs.storeformat import EXACT_COST, EXACT_LATENCY

from .model import Column, ReportResult, Table

UNPRICED = "cost IS NULL AND error IS NULL AND NOT coalesce(cache_hit, false)"
"""A call answered by the provider whose price litellm did not know."""

ROLE_LABEL = """CASE WHEN role = 'agent' AND purpose = 'proxy' THEN 'agent (proxy)'
    WHEN role = 'agent' AND purpose = 'harness' THEN 'agent (harness-reported)' ELSE role END"""

ROLE_ORDER = {"agent": 0, "agent (proxy)": 1, "agent (harness-reported)": 2, "simulator": 3,
              "planner": 4, "judge": 5}

COUNTS = """count(*) AS calls, count_if(cache_hit) AS cache_hits, count(error) AS errors,
    coalesce(sum(prompt_tokens), 0) AS prompt_tokens,
    coalesce(sum(completion_tokens), 0) AS completion_tokens"""
"""The ledger's counts over a group of `llm_calls`, the unpriced calls aside. (`count_if(x)`
and `count(error)` count what `count(*) FILTER (WHERE x)` and `FILTER (WHERE error IS NOT
NULL)` count, without a filtered aggregate each: 2 % of the by-session query on 1 M turns.)"""

LEDGER = f"""{COUNTS},
    count(*) FILTER (WHERE {UNPRICED}) AS unpriced_calls,
    coalesce(sum({EXACT_COST}), 0) AS priced_cost"""
"""The ledger's aggregates over a group of `llm_calls` (the cost is derived from the last two);
`priced_cost` an exact DECIMAL, cast to DOUBLE once summed to the row shown."""

PARTS = ("calls", "cache_hits", "errors", "prompt_tokens", "completion_tokens",
         "unpriced_calls")
"""The ledger's counts, summed again from partial ledgers (with `priced_cost`)."""

MEASURED = "run_id IN $runs AND coalesce(purpose, '') <> 'imported'"
"""The measured calls of the selected runs; `measured` leaves out what holds for all."""


def measured(ctx: Any) -> str:
    """`MEASURED` without the parts that hold for every call of the selected runs: the run
    filter when every run of the store is selected, the imported one when none of their
    calls is imported. Each cost the scan of 2.9 M calls more than it saved where it removes
    nothing (one thread, 1 M turns: the summary's run cost 0.147 -> 0.079 s CPU without them,
    the grouping of the ledger's role rows 0.130 -> 0.076). Without the run filter a query
    also reads the calls of a run the `runs` table does not list, so each query under it
    groups by run and keeps the selected runs' rows (a join with them, or `selected`).
    Asked once per report (`ctx.memo`): a probe of ~1 ms and the runs with imported calls
    (`imported_runs`, kept per state of the file)."""
    if "measured" not in ctx.memo:
        others = ctx.rows("SELECT 1 FROM runs WHERE run_id NOT IN $runs LIMIT 1")
        # with every run selected, any run's: one filter less over every call, and an
        # imported call of a run the store does not list only keeps the filter
        found = imported_runs(ctx)
        imported = found & set(ctx.runs) if others else found
        parts = (["run_id IN $runs"] if others else []) + (
            ["coalesce(purpose, '') <> 'imported'"] if imported else [])
        ctx.memo["measured"] = " AND ".join(parts) or "TRUE"
    return str(ctx.memo["measured"])


def imported_runs(ctx: Any) -> set[str]:
    """The runs with an imported call (`purpose = 'imported'`) among every call of the store,
    listed runs or not. Kept per state of the file (`ctx.db`;
    `benchpack.specs.storefile.store_facts`): the question scans the purpose of every call
    (~0.015 s CPU on 1 M turns), which the summary and the ledger asked at every read."""
    if "imported_runs" not in ctx.memo:
        from benchpack.specs.storefile import record_store_facts, store_facts, store_identity

        identity = store_identity(ctx.db) if ctx.db is not None else None
        known = store_facts(ctx.db, identity).get("imported_runs") if identity else None
        if not isinstance(known, list):
            known = sorted(str(r[0]) for r in ctx.con.execute(
                "SELECT DISTINCT run_id FROM llm_calls WHERE purpose = 'imported'").fetchall())
            if identity is not None:
                record_store_facts(ctx.db, identity, {"imported_runs": known})
        ctx.memo["imported_runs"] = {str(r) for r in known}
    return set(ctx.memo["imported_runs"])


def selected(ctx: Any, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The rows (run id first) of the selected runs: a query under `measured` may group the
    calls of a run the store's `runs` table does not list."""
    runs = set(ctx.runs)
    return [r for r in rows if r[0] in runs]


BY_ROLE = f"""
WITH g AS MATERIALIZED (
    SELECT run_id, {ROLE_LABEL} AS r, model, {COUNTS},
           coalesce(sum({EXACT_COST}), 0) AS priced_cost,
           avg({EXACT_LATENCY}) FILTER (WHERE NOT cache_hit) AS latency,
           quantile_cont(latency_s, 0.95) FILTER (WHERE NOT cache_hit) AS p95
    FROM llm_calls WHERE $measured GROUP BY ALL)
SELECT run_id, false AS total, r, model, {", ".join(PARTS[:-1])}, priced_cost::DOUBLE,
       latency, p95
FROM g
UNION ALL
SELECT run_id, true, NULL, NULL, {", ".join(f"sum({p})::HUGEINT" for p in PARTS[:-1])},
       sum(priced_cost)::DOUBLE, NULL, NULL
FROM g GROUP BY run_id
"""
"""One row per (run, role, model), and each run's total (`total`) summed from them in the
same statement: one pass over `llm_calls` (two before), the total exactly the sum of its
rows; their unpriced calls are counted by `BY_ROLE_UNPRICED`."""

BY_ROLE_UNPRICED = f"""SELECT run_id, {ROLE_LABEL} AS r, model, count(*) FROM llm_calls
WHERE $measured AND {UNPRICED} GROUP BY ALL"""
"""Each (run, role, model)'s unpriced calls, apart: DuckDB answers this from the column
statistics when no call's price is NULL (~1 ms), where counting them among `BY_ROLE`'s
aggregates read `error` and `cache_hit` of every call (0.04 s CPU on 1 M turns)."""

MARGIN = "n * (1e-15 * magnitude + 1e-17)"
"""How far a group's DOUBLE sum of its calls' prices (`approx`, summed in any order) can be
from their exact DECIMAL sum: n calls add at most n rounding errors of 2^-53 (1.1e-16) of
the sum of their magnitudes, and each price cast to DECIMAL(38, 18) moves by at most 1.1e-16
of itself and 1e-18 (DuckDB keeps a double's 17 significant digits; measured on 300,000
random doubles from 1e-20 to 1e7); 1e-15 and 1e-17 are 4.5 and 10 times the sum of both."""


def by_group_sql(group: str, limit: int, signed: bool = True) -> str:
    """Each run's groups (`group`: an expression over `sessions`) with their ledgers, the
    costliest first, and the run's number of groups: every group (`limit` 0), or each run's
    `limit` costliest. Each session's ledger first, then summed by group: joining 2.9 M calls
    to their sessions and counting distinct sessions took 2.1 s of the report on 1 M turns
    (0.5 s).

    With a limit the exact DECIMAL ledger (casting each of 2.9 M prices, 0.25 s CPU, half
    the query) is summed only for the groups that can be among the costliest: every group's
    DOUBLE sum is within `MARGIN` of its exact cost, so a group whose upper bound is below
    the `limit`-th highest lower bound of its run is beaten by `limit` others and cannot be
    shown; the others (the shown ones and those too close to tell, ties included) get their
    exact ledger from their sessions' calls and are ranked by it, as every group was. Without
    a negative price (`signed` False) the sum of the magnitudes is the sum itself, and the
    float sum stands for it (within a factor 1 + n·2^-53; MARGIN allows several times it):
    one aggregate less over 2.9 M calls (0.03 s CPU)."""
    head = f"""
WITH c AS (
    SELECT run_id, session_id, repeat, $aggregates
    FROM llm_calls WHERE $measured GROUP BY run_id, session_id, repeat
), s AS (
    SELECT run_id, session_id, repeat, {group} AS grp FROM sessions WHERE run_id IN $runs
)"""
    if not limit:
        return head.replace("$aggregates", LEDGER) + f""", g AS (
    SELECT c.run_id, s.grp, count(*) AS sessions,
           {", ".join(f"sum(c.{p})::HUGEINT AS {p}" for p in PARTS)},
           sum(c.priced_cost) AS priced_cost
    FROM c JOIN s USING (run_id, session_id, repeat) GROUP BY ALL
), k AS (
    SELECT *, row_number() OVER (PARTITION BY run_id
                                 ORDER BY priced_cost DESC, grp NULLS LAST) AS k,
           count(*) OVER (PARTITION BY run_id) AS groups
    FROM g
)
SELECT run_id, grp, sessions, {", ".join(PARTS)}, priced_cost::DOUBLE, groups
FROM k ORDER BY run_id, k
"""
    # (`replace`, not `format`: `group` is SQL, whose braces are no placeholders)
    return head.replace("$aggregates", "count(*) AS n, coalesce(sum(cost), 0) AS approx" + (
        ", coalesce(sum(abs(cost)), 0) AS magnitude" if signed else "")) + f""", g AS (
    SELECT c.run_id, s.grp, count(*) AS sessions, sum(c.n) AS n, sum(c.approx) AS approx,
           sum(c.{"magnitude" if signed else "approx"}) AS magnitude
    FROM c JOIN s USING (run_id, session_id, repeat) GROUP BY ALL
), b AS (
    SELECT run_id, grp, sessions, approx - {MARGIN} AS low, approx + {MARGIN} AS high,
           count(*) OVER (PARTITION BY run_id) AS groups
    FROM g
), cut AS (
    SELECT run_id, list(low ORDER BY low DESC)[{limit}] AS floor FROM b GROUP BY run_id
), top AS (
    SELECT b.run_id, b.grp, b.sessions, b.groups FROM b JOIN cut USING (run_id)
    WHERE cut.floor IS NULL OR b.high >= cut.floor
), e AS (
    SELECT run_id, grp, {LEDGER}
    FROM llm_calls JOIN s USING (run_id, session_id, repeat) JOIN top USING (run_id, grp)
    WHERE $measured GROUP BY run_id, grp
), k AS (
    SELECT top.*, {", ".join(f"e.{p}" for p in PARTS)}, e.priced_cost,
           row_number() OVER (PARTITION BY run_id
                              ORDER BY e.priced_cost DESC, grp NULLS LAST) AS k
    FROM top JOIN e USING (run_id, grp)
)
SELECT run_id, grp, sessions, {", ".join(PARTS)}, priced_cost::DOUBLE, groups
FROM k WHERE k <= {limit} ORDER BY run_id, k
"""


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
    res = ReportResult("cost", "Cost ledger: tokens, calls and cost by role and model",
                       "Every LLM call, by role (agent / simulator / planner / judge) and "
                       "model, with a total per run; by session (`--by name`) or any `--by`; "
                       "imported calls apart.", ctx.runs)
    # the imported calls' table, asked only of runs that have some (`imported_runs`: a scan
    # of every call's purpose less, ~0.015 s CPU on 1 M turns)
    imported = ctx.rows(f"""SELECT run_id, role, model, coalesce(sum(attempts), 0),
        coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
        CASE WHEN count(*) FILTER (WHERE cost IS NULL) = 0 THEN sum({EXACT_COST})::DOUBLE END
        FROM llm_calls WHERE run_id IN $runs AND purpose = 'imported'
        GROUP BY ALL ORDER BY ALL""") if imported_runs(ctx) & set(ctx.runs) else []
    where = measured(ctx)
    from .aside import beside, half_threads

    # with `--by`, its groups' ledgers are read beside the role rows, on a second cursor,
    # each on half the DuckDB threads (`aside.half_threads`; one on 2 cores): both scan
    # every call, and one after the other on two threads each they cost 0.55-0.66 s CPU on
    # 1 M turns, side by side on one thread each 0.52-0.53
    with (half_threads(ctx.con) if ctx.by else contextlib.nullcontext()), \
            (beside(ctx, lambda side: _by_group(side, labels)) if ctx.by
             else contextlib.nullcontext()) as later:
        unpriced = {(r[0], r[1], r[2]): int(r[3])
                    for r in ctx.rows(BY_ROLE_UNPRICED.replace("$measured", where))}
        # each row with its unpriced calls in the ledger's place (after the completion
        # tokens)
        rows = [(*r[:9], unpriced.get((r[0], r[2], r[3]), 0) if not r[1] else sum(
            n for (run, _, _), n in unpriced.items() if run == r[0]), *r[9:])
            for r in selected(ctx, ctx.rows(BY_ROLE.replace("$measured", where)))]
        grouped = later(0) if later is not None else None
    totals = {r[0]: r for r in rows if r[1]}
    rows = sorted((r for r in rows if not r[1]),
                  key=lambda r: (r[0], ROLE_ORDER.get(r[2], 9), r[2], r[3] or ""))
    t = Table("By role and model", [*_ledger_columns([
        Column("agent", "run (agent)"), Column("run", "run"), Column("role", "role"),
        Column("model", "model")]), Column("latency", "mean latency", "seconds"),
        Column("p95", "p95 latency", "seconds")])
    for run in dict.fromkeys(r[0] for r in rows):
        for r in (r for r in rows if r[0] == run):
            t.rows.append([labels[run], run, r[2], r[3], *_ledger_cells(r[4:11]), r[11], r[12]])
        t.rows.append([labels[run], run, "total", "", *_ledger_cells(totals[run][4:11]), None,
                       None])
    t.notes.append("cost unknown: at least one call in the row was answered by a model "
                   "litellm has no price for (counted in `unknown-price calls`; `of it priced` "
                   "is the known part). Cache hits cost nothing and are left out of latencies; "
                   "failed calls are counted in `errors`.")
    n = sum(r[9] for r in rows)
    if n:
        t.notes.append(f"{n} call{'s' if n != 1 else ''} with an unknown price: the costs "
                       "they fall in are unknown, not $0.")
    if not ctx.by and rows:
        t.notes.append("Per session: `--by name`; per category, domain, episode …: `--by "
                       "category` and so on.")
    res.tables.append(t)
    if grouped is not None:
        res.tables.append(grouped)

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


def _by_group(ctx: Any, labels: dict[str, str]) -> Table:
    """The `--by` table: each run's `ctx.limit` costliest groups (0: all of them)."""
    from .builtin import group_expr

    what = "session" if ctx.by == "name" else ctx.by
    kind = "sessions" if ctx.by == "name" else f"{ctx.by} groups"
    limit = max(0, int(ctx.limit or 0))
    # from the column's statistics (no scan)
    signed = bool(limit) and bool(ctx.rows("SELECT coalesce(min(cost) < 0, false) "
                                           "FROM llm_calls")[0][0])
    rows = ctx.rows(by_group_sql(group_expr(ctx), limit, signed).replace(
        "$measured", measured(ctx)))
    t = Table(f"By {what} (all roles)", _ledger_columns([
        Column("agent", "run (agent)"), Column("run", "run"), Column("group", what),
        Column("sessions", "session runs", "int")]))
    t.rows = [[labels[r[0]], r[0], r[1], r[2], *_ledger_cells(r[3:10])] for r in rows]
    groups = {r[0]: int(r[10]) for r in rows}
    total = sum(groups.values())
    t.more = total - len(rows)
    order = "Each run's rows go from the highest priced cost down."
    if t.more:
        t.notes.append(f"{len(rows):,} of {total:,} rows shown: each run's {limit:,} costliest "
                       f"{kind}; {t.more:,} more not shown (`--limit 0` shows all, "
                       f"`--limit N` each run's N costliest). {order}")
    else:
        t.notes.append(order)
    return t
