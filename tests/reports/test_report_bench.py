"""`benchmarks/report_bench.py` at a tiny scale (so the benchmark cannot rot), and the SQL
aggregation behind the reports checked against a Python reference on the store it generates.
Nothing here is timed."""

from __future__ import annotations

import importlib.util
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import duckdb
import pytest

from benchpack.reports import builtin, stats
from benchpack.reports.access import open_store, select_runs
from benchpack.reports.api import ReportOptions, build_reports
from benchpack.reports.builtin import ReportContext
from benchpack.reports.model import Estimate
from benchpack.reports.registry import default_reports
from benchpack.reports.render import render

ROOT = Path(__file__).resolve().parents[2]
TURNS = 3000


def _load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("report_bench",
                                                  ROOT / "benchmarks" / "report_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = _load_bench()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("synthetic") / "bench.duckdb"
    bench.generate(path, TURNS)
    return path


def _one(con: Any, sql: str) -> Any:
    return con.execute(sql).fetchall()[0][0]


# --------------------------------------------------------------------------- the generator


def test_generator_writes_exact_turns_and_consistent_child_tables(db: Path) -> None:
    con = duckdb.connect(str(db), read_only=True)
    try:
        counts = bench.table_counts(con)
        assert counts["turns"] == TURNS
        assert counts["runs"] == bench.RUNS
        # at least one of each of the 20 plan slots per run and repeat
        assert counts["sessions"] == 20 * bench.RUNS * bench.REPEATS
        assert 2.0 <= counts["messages"] / TURNS <= 3.5
        for table in ("tool_calls", "intent_status", "checklist_results", "llm_calls",
                      "stage_events", "triples", "triple_support", "triggers"):
            assert counts[table] > 0, table
        protocols = {r[0] for r in con.execute(
            "SELECT DISTINCT protocol FROM sessions WHERE status = 'finished'").fetchall()}
        assert protocols == {"intent_tracking", "staged_disclosure", "trigger_rubric",
                             "verified_outcome"}
        # session columns agree with their child rows
        assert _one(con, "SELECT sum(turns) FROM sessions") == TURNS
        assert _one(con, "SELECT sum(tool_calls) FROM sessions") == counts["tool_calls"]
        assert _one(con, "SELECT sum(intents) FROM sessions") == counts["intent_status"]
        assert _one(con, "SELECT sum(triggers) FROM sessions") == counts["triggers"]
        assert _one(con, """SELECT count(*) FROM sessions s JOIN (SELECT run_id, session_id,
            repeat, count(*) FILTER (WHERE status IN ('completed', 'inferred')) / count(*) AS p
            FROM intent_status GROUP BY ALL) i USING (run_id, session_id, repeat)
            WHERE abs(s.proc - i.p) > 1e-12""") == 0
        # ablation variants point at a finished base session of the same run and repeat
        assert _one(con, "SELECT count(*) FROM sessions WHERE ablation IS NOT NULL") > 0
        assert _one(con, """SELECT count(*) FROM sessions v LEFT JOIN sessions b
            ON b.run_id = v.run_id AND b.repeat = v.repeat AND b.session_id = v.base_session
            WHERE v.ablation IS NOT NULL AND b.session_id IS NULL""") == 0
    finally:
        con.close()
    with pytest.raises(FileExistsError):
        bench.generate(db, TURNS)


def test_every_report_builds_and_renders_over_the_synthetic_store(db: Path) -> None:
    names = default_reports().names()
    results = build_reports(ReportOptions(db=db, names=names, runs=["all"]))
    assert [r.name for r in results] == names
    for res in results:
        # the synthetic store holds no re-judged runs, so `agreement` has nothing to compare
        assert res.tables and (res.tables[0].rows or res.name == "agreement"), res.name
        for fmt in bench.formats():
            assert render(res, fmt), (res.name, fmt)
        json.loads(render(res, "json"))
    by_name = {r.name: r for r in results}
    # five runs, two of them the same agent: labelled apart
    agents = [row[0] for row in by_name["summary"].tables[0].rows]
    assert len(set(agents)) == bench.RUNS and sum("· synth-" in a for a in agents) == 2


def test_benchmark_main_runs_end_to_end(db: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["report_bench.py", "--db", str(db), "--repeat", "1"])
    assert bench.main() == 0
    out = capsys.readouterr().out
    assert f"reusing {db}" in out and "DuckDB" in out
    for name in default_reports().names():
        assert any(line.startswith(f"{name} ") and line.rstrip().endswith(("×", "✗"))
                   for line in out.splitlines()), name
    assert "slowest report ÷ target" in out and "bench export --format parquet" in out
    assert all(label in out for label in bench.QUERIES)


# --------------------------------------------------------------------------- SQL vs Python


OBS = """SELECT run_id, session_id, repeat, coalesce(proc_group, proc), comp
    FROM session_results WHERE run_id IN $runs AND protocol = 'intent_tracking'
    AND status = 'finished' AND ablation IS NULL"""


def _reference(con: Any, runs: list[str], metric: int
               ) -> dict[str, tuple[list[list[float]], list[float]]]:
    """Per run: the units' values (units in id order) and the per-repeat means, in Python."""
    rows = con.execute(OBS.replace("$runs", "(" + ", ".join(f"'{r}'" for r in runs) + ")")
                       ).fetchall()
    units: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    repeats: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run, unit, repeat, *values in rows:
        if values[metric] is not None:
            units[run][unit].append(values[metric])
            repeats[run][repeat].append(values[metric])
    return {run: ([units[run][u] for u in sorted(units[run])],
                  [math.fsum(v) / len(v) for _, v in sorted(repeats[run].items())])
            for run in units}


@pytest.mark.parametrize("exact_max", [10_000, 0])
def test_sql_estimates_match_a_python_reference(db: Path, exact_max: int) -> None:
    with open_store(db) as con:
        runs = select_runs(con, ["all"])
        got = ReportContext(con, runs, exact_max=exact_max).estimates(OBS, 1, 2)
        for metric in (0, 1):
            for run, (units, repeat_means) in _reference(con, runs, metric).items():
                est: Estimate = got[(run,)][metric]
                if exact_max:  # the exact bootstrap over the same units in the same order
                    ci = stats.bootstrap_ci(units, "unit_mean")
                    assert (est.value, est.low, est.high) == (ci.estimate, ci.low, ci.high)
                else:
                    ci = stats.normal_ci([(statistics.fmean(u), 1.0) for u in units])
                    assert (est.value, est.low, est.high) == pytest.approx(
                        (ci.estimate, ci.low, ci.high), abs=1e-12)
                assert est.n == len(units) > 1
                assert est.std == pytest.approx(statistics.stdev(repeat_means), abs=1e-12)


def test_trigger_rates_from_counts_match_the_outcomes(db: Path) -> None:
    with open_store(db) as con:
        runs = select_runs(con, ["all"])
        labels = con.execute("""SELECT label FROM trigger_results
            WHERE run_id = ? AND label IS NOT NULL
            ORDER BY session_id, repeat, turn, trigger_id""", [runs[0]]).fetchall()
        outcomes = [1.0 if lab == "PASS" else 0.0 for (lab,) in labels]
        for exact_max, expected in (
                (10_000, stats.bootstrap_ci([[x] for x in outcomes], "mean")),
                (0, stats.normal_ci([(x, 1.0) for x in outcomes]))):
            res = builtin.triggers(ReportContext(con, runs, exact_max=exact_max))
            row = next(r for r in res.tables[0].rows if r[1] == "overall")
            assert row[2] == len(outcomes)
            assert (row[3].value, row[3].low, row[3].high) == pytest.approx(
                (expected.estimate, expected.low, expected.high), abs=1e-12)


def test_judge_errors_lists_a_capped_number_of_sessions(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builtin, "AFFECTED_SESSIONS_SHOWN", 3)
    with open_store(db) as con:
        runs = select_runs(con, ["all"])
        affected = _one(con, """SELECT count(*) FROM sessions WHERE judge_errors > 0
            OR grader_errors > 0 OR status = 'error'""")
        table = builtin.judge_errors(ReportContext(con, runs)).tables[1]
    assert affected > 3 and len(table.rows) == 3
    assert f"The first 3 of {affected:,} affected sessions" in table.notes[-1]
