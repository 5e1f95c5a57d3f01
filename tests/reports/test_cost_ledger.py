"""`bench report cost`: the cost ledger on a hand-made store. Every figure is computed by hand
below; a call whose price is unknown makes its row's cost unknown (never 0) and is counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.reports.api import ReportOptions, build_reports
from benchpack.reports.model import ReportResult, Table
from benchpack.reports.render import render
from benchpack.runtime.store import SessionRows, Store
from conftest import finished_run

# (session, repeat, seq, role, purpose, model, prompt, completion, cost, cache_hit, error
#  [, latency: 0.1 s when left out])
CALLS: list[tuple[Any, ...]] = [
    ("s1", 0, 0, "agent", "agent_step", "gpt-4o-mini", 100, 10, 0.002, False, None),
    ("s1", 0, 1, "agent", "agent_step", "gpt-4o-mini", 200, 20, 0.0, True, None),  # cached
    ("s1", 0, 2, "judge", "rubric", "judge-x", 50, 5, 0.001, False, None),
    ("s1", 0, 3, "simulator", "user_turn", "my-local", 30, 3, None, False, None),  # no price
    ("s2", 0, 0, "agent", "proxy", "gpt-4o-mini", 400, 40, 0.004, False, None),
    ("s2", 0, 1, "judge", "rubric", "judge-x", 60, 6, None, False, "HTTP 500"),  # failed
    ("s2", 0, 2, "planner", "plan", "judge-x", 70, 7, 0.003, False, None),
]
IMPORTED = [("s1", 0, 9, "agent", "imported", "released-agent", 0, 0, None, False, None)]


def _store(path: Path, calls: list[tuple[Any, ...]] | None = None,
           runs: tuple[str, ...] = ("run-c", "run-i")) -> Path:
    """`calls` (default `CALLS`) as run-c's, `IMPORTED` as run-i's; a session `sK` is in
    category `c1` when K is odd, and tagged `tier:tK`."""
    store = Store(path)
    try:
        for run in runs:
            store.upsert_run(finished_run(run))
        batch = []
        for run, run_calls in ((r, CALLS if calls is None else calls) if r != "run-i"
                               else (r, IMPORTED) for r in runs):
            for sid, repeat in sorted({(c[0], c[1]) for c in run_calls}):
                rows = [(run, *c[:2], c[2], c[3], c[4], c[5], "h", c[6], c[7], c[8],
                         c[11] if len(c) > 11 else 0.1, c[9], c[10], 1, 1, 0.0)
                         for c in run_calls
                        if (c[0], c[1]) == (sid, repeat)]
                batch.append(SessionRows(run, sid, repeat, {
                    "run_id": run, "session_id": sid, "repeat": repeat, "fingerprint": "f",
                    "episode": "ep", "name": sid, "protocol": "intent_tracking",
                    "agent": run, "status": "finished",
                    "category": "c1" if int(sid[1:]) % 2 else "c2",
                    "extra": {"tags": [f"tier:t{sid[1:]}"]},
                    "started_at": 0.0, "finished_at": 1.0},
                    {"llm_calls": rows}))
        store.write_batch(batch)
    finally:
        store.close()
    return path


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _store(tmp_path_factory.mktemp("cost") / "bench.duckdb")


def _report(db: Path, runs: list[str], **kw: Any) -> ReportResult:
    (res,) = build_reports(ReportOptions(db=db, names=["cost"], runs=runs, **kw))
    return res


def _table(res: ReportResult, title: str) -> list[dict[str, Any]]:
    t: Table = next(t for t in res.tables if t.title.startswith(title))
    return t.as_dicts()


def test_by_role_hand_computed_and_unknown_is_not_zero(db: Path) -> None:
    rows = {r["role"]: r for r in _table(_report(db, ["run-c"]), "By role")}
    agent = rows["agent"]
    assert (agent["calls"], agent["cache_hits"], agent["prompt_tokens"],
            agent["completion_tokens"]) == (2, 1, 300, 30)
    assert agent["cost"] == pytest.approx(0.002) and agent["unpriced_calls"] == 0
    # the proxy's calls are the agent's, shown apart
    assert rows["agent (proxy)"]["cost"] == pytest.approx(0.004)
    # the simulator's one call has no price: unknown, not $0, and counted
    sim = rows["simulator"]
    assert sim["cost"] is None and sim["unpriced_calls"] == 1 and sim["priced_cost"] == 0.0
    # a failed call is not an unpriced one (no answer, nothing billed)
    judge = rows["judge"]
    assert (judge["calls"], judge["errors"], judge["unpriced_calls"]) == (2, 1, 0)
    assert judge["cost"] == pytest.approx(0.001)
    assert rows["planner"]["cost"] == pytest.approx(0.003)
    total = rows["total"]
    assert (total["calls"], total["prompt_tokens"], total["completion_tokens"]) == \
        (7, 910, 91)
    assert total["cost"] is None  # one unpriced call makes the total unknown …
    assert total["priced_cost"] == pytest.approx(0.010)  # … of which this much is known
    assert total["unpriced_calls"] == 1


def test_by_session_and_by_slice(db: Path) -> None:
    by_s = {r["group"]: r for r in _table(_report(db, ["run-c"], by="name"), "By session")}
    assert by_s["s1"]["cost"] is None and by_s["s1"]["priced_cost"] == pytest.approx(0.003)
    assert by_s["s2"]["cost"] == pytest.approx(0.007)
    assert by_s["s2"]["prompt_tokens"] == 530
    by_c = {r["group"]: r for r in _table(_report(db, ["run-c"], by="category"), "By category")}
    assert set(by_c) == {"c1", "c2"} and by_c["c2"]["cost"] == pytest.approx(0.007)


def test_imported_calls_are_shown_apart(db: Path) -> None:
    res = _report(db, ["run-c", "run-i"])
    roles = _table(res, "By role")
    assert not any(r["run"] == "run-i" for r in roles)
    (imp,) = _table(res, "Imported")
    assert (imp["run"], imp["role"], imp["calls"]) == ("run-i", "agent", 1)


def test_llm_usage_view_never_sums_unknown_as_zero(db: Path) -> None:
    from benchpack.reports.api import run_query

    rows = run_query(db, "SELECT role, cost, unpriced_calls FROM llm_usage "
                         "WHERE run_id = 'run-c' AND role = 'simulator'").rows
    assert [tuple(r) for r in rows] == [("simulator", None, 1)]


def test_cli_table_says_unknown(db: Path) -> None:
    out = CliRunner().invoke(cli, ["report", "cost", "--db", str(db), "--run", "run-c"])
    assert out.exit_code == 0, out.output
    # the cell itself, not only the note, says unknown
    assert any(line.count("unknown") and "simulator" in line for line in out.output.splitlines())
    assert "1 call with an unknown price" in out.output


def test_run_summary_cost_is_unknown_not_the_priced_part(db: Path, tmp_path: Path) -> None:
    """The summary's cost cell agrees with the ledger: run-c has one unpriced call, so its cost
    is unknown (it used to print $0.010, the priced part, as if complete); a run whose calls
    are all priced shows their sum."""
    (res,) = build_reports(ReportOptions(db=db, names=["summary"], runs=["run-c", "run-i"]))
    runs = {r["run"]: r for r in _table(res, "Runs")}
    assert runs["run-c"]["cost"] is None
    assert runs["run-i"]["cost"] == 0  # imported calls are the ledger's separate table
    priced = _store_priced(tmp_path / "priced.duckdb")
    (res,) = build_reports(ReportOptions(db=priced, names=["summary"], runs=["run-c"]))
    (row,) = _table(res, "Runs")
    assert row["cost"] == pytest.approx(0.002 + 0.001 + 0.004 + 0.003)


def _store_priced(path: Path) -> Path:
    return _store(path, [c for c in CALLS if not (c[8] is None and c[10] is None and not c[9])])


DIMES = [("s1", 0, k, "agent", "agent_step", "gpt-4o-mini", 10, 1, 0.1, False, None)
         for k in range(10)]


def test_run_summary_cost_is_the_exact_sum(tmp_path: Path) -> None:
    """Ten calls of $0.10 cost $1.00: summed as DECIMAL, not as floats (0.9999999999999999
    added one by one; in parallel the float sum also depends on the order rows arrive in,
    and a total on a rounding boundary printed one digit or the other from read to read)."""
    db = _store(tmp_path / "dimes.duckdb", DIMES)
    assert sum([0.1] * 10) != 1.0  # what a float sum gives
    (res,) = build_reports(ReportOptions(db=db, names=["summary"], runs=["run-c"]))
    (row,) = _table(res, "Runs")
    assert row["cost"] == 1.0


def test_ledger_sums_cost_exactly_as_the_summary_does(tmp_path: Path) -> None:
    """The same ten dimes in the ledger: the role row, the run's total and the session row
    are $1.00 exactly (the float sum the ledger used to make gave 0.9999999999999999), so the
    ledger and the summary print one cost for a run. On 1 M turns a category's float sum,
    204.84994999999935, printed $204.8499 where the exact 204.84995 is $204.8500."""
    db = _store(tmp_path / "dimes.duckdb", DIMES)
    res = _report(db, ["run-c"], by="name")
    roles = {r["role"]: r for r in _table(res, "By role")}
    assert roles["agent"]["cost"] == roles["agent"]["priced_cost"] == 1.0
    assert roles["total"]["cost"] == roles["total"]["priced_cost"] == 1.0
    (session,) = _table(res, "By session")
    assert session["cost"] == 1.0 and session["calls"] == 10
    (summary,) = build_reports(ReportOptions(db=db, names=["summary"], runs=["run-c"]))
    assert _table(summary, "Runs")[0]["cost"] == roles["total"]["cost"]


# calls of 0.1, 0.2 and 0.3 s (costing as many dollars): 0.6 in all, a mean of exactly 0.2 s;
# floats added in this order give 0.6000000000000001 and 0.20000000000000004, and in
# parallel the last digits depend on which thread's rows come first
LATENCIES = [("s1", 0, k, "agent", "agent_step", "gpt-4o-mini", 10, 1, x, False, None, x)
             for k, x in enumerate([0.1, 0.2, 0.3])]


def test_mean_latency_is_exact_and_the_same_every_read(tmp_path: Path) -> None:
    """The ledger's and `llm_usage`'s mean latency is the exact mean (to the nanosecond), the
    run summary's cost the exact sum: DECIMAL sums, which no thread order can change. (On
    the 1 M-turn store six reads of the float mean gave four different answers.)"""
    from benchpack.reports.api import run_query
    from benchpack.runtime.summary import summarise

    db = _store(tmp_path / "latency.duckdb", LATENCIES)
    floats = run_query(db, "SELECT avg(latency_s), sum(cost) FROM llm_calls "
                           "WHERE run_id = 'run-c'")
    assert tuple(floats.rows[0]) != (0.2, 0.6)  # what DuckDB's float arithmetic gives
    res = _report(db, ["run-c"])
    roles = {r["role"]: r for r in _table(res, "By role")}
    assert roles["agent"]["latency"] == 0.2
    usage = run_query(db, "SELECT mean_latency_s, cost FROM llm_usage WHERE run_id = 'run-c'")
    assert [tuple(r) for r in usage.rows] == [(0.2, 0.6)]
    store = Store(db)
    try:
        assert summarise(store, "run-c", 1, {"run": 1}, 0, 0.0).cost == 0.6
    finally:
        store.close()


# session sK of run-c: K agent calls of $0.01 · K (K = 1…5), s5 also one unpriced simulator
# call; repeat 1 of s2 once more. Costliest first: s5 (0.25 priced, cost unknown), s4 0.16,
# s2 0.04 + 0.04 = 0.08, s3 0.09 → s5, s4, s3, s2, s1 (0.01).
SPREAD = [(f"s{k}", 0, j, "agent", "agent_step", "m", 10, 1, 0.01 * k, False, None)
          for k in range(1, 6) for j in range(k)] + [
    ("s5", 0, 9, "simulator", "user_turn", "local", 5, 1, None, False, None),
    ("s2", 1, 0, "agent", "agent_step", "m", 10, 1, 0.02, False, None),
    ("s2", 1, 1, "agent", "agent_step", "m", 10, 1, 0.02, False, None)]


@pytest.fixture(scope="module")
def spread(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _store(tmp_path_factory.mktemp("spread") / "bench.duckdb", SPREAD,
                  runs=("run-c", "run-d"))


def test_default_ledger_leads_with_the_totals(spread: Path) -> None:
    """Without `--by`: the role and model rows and each run's total, no per-session table
    (one row per session name: 33,000 on 1 M turns), and a note saying how to ask for it."""
    res = _report(spread, ["run-c", "run-d"])
    assert [t.title for t in res.tables] == ["By role and model"]
    total = {r["run"]: r for r in _table(res, "By role") if r["role"] == "total"}
    # calls: 1+2+3+4+5 + 1 simulator + 2 (s2 repeat 1) = 18; priced: Σ 0.01·k² + 0.04 = 0.59
    assert total["run-c"]["calls"] == 18 and total["run-c"]["unpriced_calls"] == 1
    assert total["run-c"]["cost"] is None
    assert total["run-c"]["priced_cost"] == pytest.approx(0.59, abs=1e-12)
    assert any("--by name" in n for n in res.tables[0].notes)


def test_by_session_shows_each_runs_costliest_and_says_what_it_leaves_out(spread: Path
                                                                          ) -> None:
    res = _report(spread, ["run-c", "run-d"], by="name", limit=2)
    table = next(t for t in res.tables if t.title.startswith("By session"))
    rows = table.as_dicts()
    assert [(r["run"], r["group"]) for r in rows] == [
        ("run-c", "s5"), ("run-c", "s4"), ("run-d", "s5"), ("run-d", "s4")]
    assert rows[0]["cost"] is None and rows[0]["priced_cost"] == pytest.approx(0.25)
    assert rows[1]["cost"] == pytest.approx(0.16) and rows[1]["calls"] == 4
    assert table.more == 6  # 3 sessions of each run not shown
    assert any(n.startswith("4 of 10 rows shown: each run's 2 costliest sessions; 6 more "
                            "not shown (`--limit 0` shows all") for n in table.notes)
    data = json.loads(render(res, "json"))
    (by_session,) = [t for t in data["tables"] if t["title"].startswith("By session")]
    assert by_session["rows_not_shown"] == 6 and len(by_session["rows"]) == 4
    # every row, with their order: s2's two repeats (0.04 + 0.04) are one row of 2 session runs
    everything = _table(_report(spread, ["run-c"], by="name", limit=0), "By session")
    assert [r["group"] for r in everything] == ["s5", "s4", "s3", "s2", "s1"]
    assert [r["sessions"] for r in everything] == [1, 1, 1, 2, 1]
    assert everything[3]["cost"] == pytest.approx(0.08)
    full = next(t for t in _report(spread, ["run-c"], by="name", limit=0).tables
                if t.title.startswith("By session"))
    assert full.more == 0 and not any("not shown" in n for n in full.notes)
    assert "rows_not_shown" not in json.dumps(
        json.loads(render(_report(spread, ["run-c"], by="name", limit=0), "json")))


def test_the_limit_is_applied_in_sql(spread: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run's rows beyond the limit are never fetched (33,000 rows were fetched, made
    into cells and rendered on 1 M turns)."""
    from benchpack.reports.builtin import ReportContext

    fetched: list[int] = []
    real = ReportContext.rows

    def spy(self: ReportContext, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        out = real(self, sql, params)
        if "row_number() OVER" in sql:
            fetched.append(len(out))
        return out

    monkeypatch.setattr(ReportContext, "rows", spy)
    _report(spread, ["run-c", "run-d"], by="name", limit=1)
    assert fetched == [2]


def test_by_a_tag_and_by_category(spread: Path) -> None:
    by_tier = _table(_report(spread, ["run-c"], by="tier", limit=0), "By tier")
    assert [r["group"] for r in by_tier] == ["t5", "t4", "t3", "t2", "t1"]
    by_category = _table(_report(spread, ["run-c"], by="category"), "By category")
    # c1: s1, s3, s5 (0.01 + 0.09 + 0.25 priced, s5 unpriced); c2: s2, s4 (0.08 + 0.16)
    assert [(r["group"], r["sessions"]) for r in by_category] == [("c1", 3), ("c2", 3)]
    assert by_category[1]["cost"] == pytest.approx(0.24)


def test_a_mistaken_by_is_a_usage_mistake(spread: Path) -> None:
    """It was a DuckDB binder error, exit 3 ("a benchpack bug")."""
    out = CliRunner().invoke(cli, ["report", "cost", "--db", str(spread), "--run", "run-c",
                                   "--by", "bogus"])
    assert out.exit_code == 1, out.output
    assert out.output.startswith("✗ cannot group by `bogus`")


def test_cli_prints_the_limited_table_and_how_to_get_the_rest(spread: Path) -> None:
    base = ["report", "cost", "--db", str(spread), "--run", "run-c", "--by", "name"]
    out = CliRunner().invoke(cli, [*base, "--limit", "3"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    rows = [line for line in out.output.splitlines() if "│ run-c" in line]
    assert len(rows) == 3 + 3  # the role table's agent, simulator and total; 3 sessions
    assert "3 of 5 rows shown: each run's 3 costliest sessions; 2 more not shown" in out.output
    out = CliRunner().invoke(cli, [*base, "--limit", "0"], env={"COLUMNS": "200"})
    assert len([line for line in out.output.splitlines() if "│ run-c" in line]) == 3 + 5
    assert "not shown" not in out.output
    out = CliRunner().invoke(cli, [*base, "--format", "md"])
    assert sum(line.startswith("| run-c") for line in out.output.splitlines()) == 3 + 5
