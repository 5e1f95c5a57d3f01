"""What the cost ledger and the summary compute over `llm_calls` (issue 31: every report
≤ 0.5 s on 1 M turns, guarded by what is computed, not by a timing): no filter that every call
passes, and with `--by` the exact DECIMAL ledger summed only for the groups that can be among
each run's costliest — ranked exactly as when every group is summed, on prices whose float
sums tie or order the groups wrongly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from benchpack.reports.access import open_store, select_runs
from benchpack.reports.api import ReportOptions, build_reports
from benchpack.reports.builtin import ReportContext, summary
from benchpack.reports.cost import by_group_sql, cost, measured
from benchpack.runtime.store import SessionRows, Store
from conftest import finished_run

# (session name, prices of its calls; None: no price): as DECIMAL(38, 18) (DuckDB keeps a
# double's 17 significant digits) 0.1 + 0.2, 0.3 and 0.15 + 0.15 are all 0.3, a tie ordered
# by name, while the float 0.30000000000000004 alone is 0.30000000000000004 — yet the float
# sum of a's 0.1 + 0.2 is 0.30000000000000004 too, as high as b's
PRICES: dict[str, list[float | None]] = {
    "a": [0.1, 0.2], "b": [0.30000000000000004], "c": [0.3], "d": [0.15, 0.15],
    "e": [0.0], "f": [0.0], "g": [0.0, 0.0, 0.0], "h": [None, 0.05], "i": [1e-18, 1e-18],
    "j": [2e-18],
}


def _store(path: Path, runs: dict[str, dict[str, list[float | None]]],
           listed: tuple[str, ...], imported: tuple[str, ...] = ()) -> Path:
    """Each run's sessions and their calls' prices; only `listed` runs get a `runs` row (the
    others' calls are a run the store does not list); `imported` runs' calls are imported."""
    store = Store(path)
    try:
        for run in listed:
            store.upsert_run(finished_run(run))
        batch = []
        for run, sessions in runs.items():
            purpose = "imported" if run in imported else "agent_step"
            for name, prices in sessions.items():
                calls = [(run, name, 0, k, "agent", purpose, "m", "h", 10, 1, price, 0.5, False,
                          None, 1, 1, 0.0) for k, price in enumerate(prices)]
                batch.append(SessionRows(run, name, 0, {
                    "run_id": run, "session_id": name, "repeat": 0, "fingerprint": "f",
                    "episode": "ep", "name": name, "protocol": "intent_tracking",
                    "agent": run, "status": "finished", "category": "c" + str(len(prices)),
                    "started_at": 0.0, "finished_at": 1.0}, {"llm_calls": calls}))
        store.write_batch(batch)
    finally:
        store.close()
    return path


class _Logged:
    """A connection that records each statement."""

    def __init__(self, con: Any, sqls: list[str]) -> None:
        self._con, self._sqls = con, sqls

    def execute(self, sql: str, params: Any = None) -> Any:
        self._sqls.append(" ".join(sql.split()))
        return self._con.execute(sql) if params is None else self._con.execute(sql, params)


def _groups(db: Path, runs: list[str], by: str, limit: int) -> list[tuple[Any, ...]]:
    (res,) = build_reports(ReportOptions(db=db, names=["cost"], runs=runs, by=by,
                                         limit=limit))
    (table,) = [t for t in res.tables if t.title.startswith("By ") and not t.title.startswith("By role")]
    return [tuple(r) for r in table.rows]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _store(tmp_path_factory.mktemp("costreads") / "bench.duckdb",
                  {"r1": PRICES, "r2": {k: v[::-1] for k, v in PRICES.items()}},
                  listed=("r1", "r2"))


def test_the_exact_order_where_float_sums_tie(db: Path) -> None:
    """b's one price is more than a's two (exactly), though their float sums are the same,
    and a, c and d tie (by name then); a run's limited rows are the first rows of all of them, in the same order, ties by
    name, and each shown row's cost is its exact sum."""
    every = _groups(db, ["r1"], "name", 0)
    assert [r[2] for r in every] == ["b", "a", "c", "d", "h", "i", "j", "e", "f", "g"]
    assert [r[2] for r in _groups(db, ["r1"], "name", 1)] == ["b"]
    both = _groups(db, ["r1", "r2"], "name", 0)
    rank = [sum(1 for s in both[:i + 1] if s[1] == r[1]) for i, r in enumerate(both)]
    for limit in range(1, 12):
        assert _groups(db, ["r1", "r2"], "name", limit) == [
            r for r, k in zip(both, rank, strict=True) if k <= limit], limit
    con = duckdb.connect(str(db), read_only=True)
    try:
        exact = dict(con.execute("""SELECT session_id, sum(cost::DECIMAL(38, 18))::DOUBLE
            FROM llm_calls WHERE run_id = 'r1' GROUP BY ALL""").fetchall())
    finally:
        con.close()
    assert {r[2]: r[-1] for r in _groups(db, ["r1"], "name", 3)} == {
        k: exact[k] for k in ("b", "a", "c")}
    assert exact["a"] != exact["b"] and 0.1 + 0.2 == 0.30000000000000004  # the float tie


def test_a_negative_price_ranks_exactly_too(tmp_path: Path) -> None:
    """A refund (a negative price) makes a group's magnitude larger than its sum, so the
    margin is taken from the sum of magnitudes (`signed`): k's 0.5 − 0.2 and m's 1 − 0.7 tie
    with a, c and d at 0.3 exactly (the float sums are 0.3 and 0.30000000000000004), n's −0.1
    is last."""
    prices = {**PRICES, "k": [0.5, -0.2], "m": [1.0, -0.7], "n": [-0.1]}
    db = _store(tmp_path / "signed.duckdb", {"r1": prices}, listed=("r1",))
    every = _groups(db, ["r1"], "name", 0)
    assert [r[2] for r in every][:7] == ["b", "a", "c", "d", "k", "m", "h"]
    assert every[-1][2] == "n"
    for limit in range(1, len(prices) + 1):
        assert _groups(db, ["r1"], "name", limit) == every[:limit], limit


def test_only_the_groups_that_can_be_shown_get_an_exact_ledger(db: Path) -> None:
    """With a limit, the DECIMAL ledger is summed for the groups whose float sum's margin
    reaches the limit-th: of r1's 10 sessions, b, a, c and d (within 1e-16 of each other)
    for one row or four, h too for five; every group when there is no limit."""
    with open_store(db) as con:
        ctx = ReportContext(con, ["r1"])
        for limit, expected in ((1, ["a", "b", "c", "d"]), (4, ["a", "b", "c", "d"]),
                                (5, ["a", "b", "c", "d", "h"]),
                                (0, sorted(PRICES))):
            sql = by_group_sql("name", limit).replace("$measured", measured(ctx))
            if limit:
                sql = sql[:sql.rindex("SELECT run_id, grp")] + "SELECT grp FROM top ORDER BY 1"
            else:
                sql = sql[:sql.rindex("SELECT run_id, grp")] + "SELECT grp FROM g ORDER BY 1"
            assert [r[0] for r in ctx.rows(sql)] == expected, limit


def test_no_filter_every_call_passes(tmp_path: Path) -> None:
    """With every run selected and no imported call, the statements over `llm_calls` filter
    nothing (the run and purpose filters cost more than the aggregation they fed on 1 M
    turns); a run subset or an imported run keeps its filter, and the calls of a run the
    store does not list (`ghost`) are never shown nor counted."""
    runs = {"r1": PRICES, "r2": {"a": [0.5]}, "ghost": {"a": [7.0]}}
    plain = _store(tmp_path / "plain.duckdb", runs, listed=("r1", "r2"))
    mixed = _store(tmp_path / "mixed.duckdb", {**runs, "imp": {"a": [3.0]}},
                   listed=("r1", "r2", "imp"), imported=("imp",))

    def statements(db: Path, runs: list[str]) -> tuple[list[str], Any, Any]:
        sqls: list[str] = []
        with open_store(db) as con:
            chosen = select_runs(con, runs)
            ledger = cost(ReportContext(_Logged(con, sqls), chosen, by="name", limit=3))
            run_rows = summary(ReportContext(_Logged(con, sqls), chosen)).tables[0]
        return [q for q in sqls if "FROM llm_calls" in q and "count(*)" in q
                and "purpose = 'imported'" not in q], ledger, run_rows

    def filters(sqls: list[str]) -> set[str]:
        return {f for q in sqls for f in ("run_id IN", "<> 'imported'")
                if any(f in part[:80] for part in q.split("FROM llm_calls")[1:])}

    sqls, ledger, run_rows = statements(plain, ["all"])
    assert len(sqls) == 4 and filters(sqls) == set()  # role rows, unpriced, groups, summary
    totals = {r[1]: r for r in ledger.tables[0].rows if r[2] == "total"}
    assert set(totals) == {"r1", "r2"} and totals["r2"][-3] == 0.5  # its priced cost
    assert {r[1] for r in ledger.tables[1].rows} == {"r1", "r2"}
    assert [r[1] for r in run_rows.rows] == ["r1", "r2"]
    assert [r[-1] for r in run_rows.rows][1] == 0.5
    sqls, ledger, run_rows = statements(mixed, ["all"])
    assert filters(sqls) == {"<> 'imported'"}
    assert {r[1] for r in ledger.tables[0].rows} == {"r1", "r2"}
    assert {r[1]: r[-1] for r in run_rows.rows}["imp"] == 0  # its calls are imported ones
    (imported,) = [t for t in ledger.tables if t.title.startswith("Imported")]
    assert [r[1] for r in imported.rows] == ["imp"]
    sqls, _, _ = statements(mixed, ["r1", "r2"])
    assert filters(sqls) == {"run_id IN"}
    assert all("run_id IN ('r1', 'r2')" in q for q in sqls)
    # an imported call of a run the store does not list keeps the imported filter (the
    # summary's probe asks every run's calls when every run is selected)
    ghostly = _store(tmp_path / "ghostly.duckdb", {**runs, "ghost": {"a": [7.0]}},
                     listed=("r1", "r2"), imported=("ghost",))
    sqls, ledger, run_rows = statements(ghostly, ["all"])
    assert filters(sqls) == {"<> 'imported'"}
    assert [r[-1] for r in run_rows.rows][1] == 0.5
    # which runs have imported calls is asked once a state of the file (`imported_runs`):
    # after, the ledger reads the imported calls only for their table, and not at all where
    # the selected runs have none
    def imported_reads(db: Path, runs: list[str]) -> int:
        read: list[str] = []
        with open_store(db) as con:
            ctx = ReportContext(_Logged(con, read), select_runs(con, runs), db=db)
            cost(ctx)
            summary(ReportContext(_Logged(con, read), ctx.runs, db=db))
        return sum("purpose = 'imported'" in q for q in read)

    assert imported_reads(mixed, ["all"]) == 2  # the runs (kept for the summary), the table
    assert imported_reads(mixed, ["all"]) == 1
    assert imported_reads(mixed, ["r1", "r2"]) == 0
    assert imported_reads(plain, ["all"]) == 1
    assert imported_reads(plain, ["all"]) == 0


def test_imported_runs_follow_the_file(tmp_path: Path) -> None:
    """The runs with imported calls are kept per state of the file: a call imported after a
    read is filtered out of the measured figures at the next read."""
    runs = {"r1": PRICES, "imp": {"a": [3.0]}}
    db = _store(tmp_path / "store.duckdb", runs, listed=("r1", "imp"))

    def run_costs() -> dict[str, Any]:
        with open_store(db) as con:
            ctx = ReportContext(con, select_runs(con, ["all"]), db=db)
            return {r[1]: r[-1] for r in summary(ctx).tables[0].rows}

    assert run_costs()["imp"] == 3.0
    con = duckdb.connect(str(db))
    try:
        con.execute("UPDATE llm_calls SET purpose = 'imported' WHERE run_id = 'imp'")
    finally:
        con.close()
    assert run_costs()["imp"] == 0


def test_the_margin_covers_the_cast_and_the_float_sum() -> None:
    """MARGIN rests on DuckDB's cast of a price to DECIMAL(38, 18) moving it by at most
    1.1e-16 of itself and 1e-18 (a DuckDB that cast otherwise would fail here, not rank
    wrongly), and on a float sum of n prices being within n·2^-53 of their magnitudes."""
    import random
    from decimal import Decimal
    from math import fsum

    rng = random.Random(7)
    prices = [rng.uniform(1, 10) * 10.0 ** rng.randint(-20, 6) for _ in range(20000)]
    prices += [0.1, 0.2, 0.3, 0.30000000000000004, 1e-18, 5e-19, 1.5e-18, 2.5e-18]
    con = duckdb.connect()
    try:
        cast = con.execute("SELECT x, x::DECIMAL(38, 18) FROM (SELECT unnest(?::DOUBLE[]) x)",
                           [prices]).fetchall()
    finally:
        con.close()
    for x, d in cast:
        assert abs(Decimal(x) - d) <= Decimal(x) * Decimal("1.1e-16") + Decimal("1e-18"), x
    group = prices[:1000]
    exact = sum(d for _, d in cast[:1000])
    approx = 0.0
    for x in group:  # one order of many: the bound holds for any
        approx += x
    n, magnitude = len(group), fsum(abs(x) for x in group)
    assert abs(Decimal(approx) - exact) <= Decimal(n * (1e-15 * magnitude + 1e-17)) / 4
