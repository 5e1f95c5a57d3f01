"""`bench report cost`: the cost ledger on a hand-made store. Every figure is computed by hand
below; a call whose price is unknown makes its row's cost unknown (never 0) and is counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.reports.api import ReportOptions, build_reports
from benchpack.reports.model import ReportResult, Table
from benchpack.runtime.store import SessionRows, Store

# (session, repeat, seq, role, purpose, model, prompt, completion, cost, cache_hit, error)
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


def _store(path: Path) -> Path:
    store = Store(path)
    try:
        for run in ("run-c", "run-i"):
            store.upsert_run({"run_id": run, "created_at": 1.0, "updated_at": 1.0,
                              "plan_path": "b", "plan_hash": "h", "pack_name": "p",
                              "pack_version": "1", "benchpack_version": "0", "agent": run,
                              "simulator": "rules", "judge": "rules", "repeats": 1,
                              "config": {}, "status": "finished"})
        batch = []
        for run, calls in (("run-c", CALLS), ("run-i", IMPORTED)):
            for sid in sorted({c[0] for c in calls}):
                rows = [(run, *c[:2], c[2], c[3], c[4], c[5], "h", c[6], c[7], c[8], 0.1,
                         c[9], c[10], 1, 1, 0.0) for c in calls if c[0] == sid]
                batch.append(SessionRows(run, sid, 0, {
                    "run_id": run, "session_id": sid, "repeat": 0, "fingerprint": "f",
                    "episode": "ep", "name": sid, "protocol": "intent_tracking",
                    "agent": run, "status": "finished", "category": "c1" if sid == "s1"
                    else "c2", "started_at": 0.0, "finished_at": 1.0},
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
    by_s = {r["group"]: r for r in _table(_report(db, ["run-c"]), "By session")}
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
    global CALLS
    saved = CALLS
    CALLS = [c for c in saved if not (c[8] is None and c[10] is None and not c[9])]
    try:
        return _store(path)
    finally:
        CALLS = saved


def test_run_summary_cost_is_the_exact_sum(tmp_path: Path) -> None:
    """Ten calls of $0.10 cost $1.00: summed as DECIMAL, not as floats (0.9999999999999999
    added one by one; in parallel the float sum also depends on the order rows arrive in,
    and a total on a rounding boundary printed one digit or the other from read to read)."""
    global CALLS
    saved = CALLS
    CALLS = [("s1", 0, k, "agent", "agent_step", "gpt-4o-mini", 10, 1, 0.1, False, None)
             for k in range(10)]
    try:
        db = _store(tmp_path / "dimes.duckdb")
    finally:
        CALLS = saved
    assert sum([0.1] * 10) != 1.0  # what a float sum gives
    (res,) = build_reports(ReportOptions(db=db, names=["summary"], runs=["run-c"]))
    (row,) = _table(res, "Runs")
    assert row["cost"] == 1.0
