"""Views and built-in reports against a hand-made store (`store_fixture.py`): every figure
asserted here is computed by hand in the fixture's docstring or below."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner
from store_fixture import build_store

from benchpack.cli import cli
from benchpack.reports.api import ReportOptions, build_reports, export_store, run_query
from benchpack.reports.model import Column, Estimate, ReportResult, Table
from benchpack.reports.render import render


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_store(tmp_path_factory.mktemp("store") / "bench.duckdb")


def _report(db: Path, name: str, **kw: Any) -> ReportResult:
    (res,) = build_reports(ReportOptions(db=db, names=[name], runs=["all"], **kw))
    return res


def _rows(table: Table, key: str = "agent") -> dict[Any, dict[str, Any]]:
    return {tuple(r[k] for k in key.split("+")) if "+" in key else r[key]: r
            for r in ({c.key: v for c, v in zip(table.columns, row, strict=True)}
                      for row in table.rows)}


def test_micro_and_macro_status_distributions_differ(db: Path) -> None:
    micro = dict(run_query(db, "SELECT status, share FROM intent_status_micro "
                               "WHERE run_id='run-a'").rows)
    assert micro == pytest.approx({"completed": 6 / 12, "inferred": 2 / 12, "provided": 4 / 12})
    macro = run_query(db, "SELECT completed, inferred, provided, unresolved, sessions FROM "
                          "intent_status_macro WHERE run_id='run-a'").rows[0]
    assert macro == pytest.approx((0.55, 0.1, 0.35, 0.0, 5))
    res = _report(db, "status")
    assert [t.title for t in res.tables] == ["Pooled over intents (micro)",
                                             "Averaged per session (macro)"]


def test_proc_comp_estimate_with_std_over_repeats_and_ci(db: Path) -> None:
    res = _report(db, "proc-comp", by="category")
    rows = _rows(res.tables[0], "agent+group")
    a = rows[("model-a", "triage")]
    proc: Estimate = a["proc"]
    assert proc.value == pytest.approx(0.5625)  # mean of s1 (0.625) and s2 (0.5)
    assert proc.std == pytest.approx(abs(0.75 - 0.375) / math.sqrt(2))
    # 4 session runs in 2 sessions; clustered SE √(0.0625² + 0.0625²) / 2; t with 1 degree of
    # freedom: 12.706·√2·SE = 0.79 either side, clipped to 0–100; flagged: 2 < 10 clusters
    assert (proc.n, proc.clusters, proc.method, proc.few) == (4, 2, "t", True)
    assert proc.se == pytest.approx(0.0625 * math.sqrt(2) / 2)
    assert (proc.low, proc.high) == (0.0, 1.0)
    assert a["sessions"] == 4
    comp: Estimate = a["comp"]
    assert comp.value == pytest.approx((0.75 + 0.5) / 2)
    # the ablation variant stays out of the headline figures
    assert rows[("model-a", "handoff")]["proc"].value == pytest.approx(1.0)
    assert rows[("model-a", "handoff")]["sessions"] == 1


def test_ablation_deltas(db: Path) -> None:
    row = _rows(_report(db, "ablation").tables[0])["model-a"]
    assert row["pairs"] == 1
    assert (row["proc_with"].value, row["proc_without"].value) == (1.0, 0.5)
    assert row["proc_delta"].value == pytest.approx(0.5)
    assert row["comp_delta"].value == pytest.approx(0.0)


def test_trigger_rates_by_type(db: Path) -> None:
    rows = _rows(_report(db, "triggers").tables[0], "agent+type")
    overall = rows[("model-a", "overall")]
    assert overall["n"] == 5 and overall["judge_errors"] == 1
    assert overall["pass_rate"].value == pytest.approx(3 / 5)
    assert overall["weighted"].value == pytest.approx(3.5 / 5)
    assert rows[("model-a", "emergent")]["weighted"].value == pytest.approx(0.75)
    crit = rows[("model-a", "critical")]
    assert (crit["n"], crit["judge_errors"]) == (2, 1)
    assert crit["pass_rate"].value == pytest.approx(0.5)
    assert rows[("model-a", "recovery")]["pass_rate"].value == 1.0
    view = run_query(db, "SELECT type, n, pass, partial, fail, weighted_score FROM "
                         "trigger_by_type WHERE run_id='run-a' ORDER BY type").rows
    assert view == [("critical", 2, 1, 0, 1, 0.5), ("emergent", 2, 1, 1, 0, 0.75),
                    ("recovery", 1, 1, 0, 0, 1.0)]


def test_pass_at_k_and_pass_hat_k(db: Path) -> None:
    rows = _rows(_report(db, "pass-k").tables[0])
    a, b = rows["model-a"], rows["model-b"]
    assert (a["tasks"], a["k"]) == (2, 2)
    assert a["pass1"].value == pytest.approx(0.75)
    assert a["passk"].value == pytest.approx(1.0)
    assert a["pass_hat_k"].value == pytest.approx(0.5)
    assert (b["pass1"].value, b["passk"].value, b["pass_hat_k"].value) == (0.5, 0.5, 0.5)


def test_graph_and_cost_and_judge_errors(db: Path) -> None:
    g = _rows(_report(db, "graph").tables[0], "agent+group")[("model-a", "pro")]
    assert g["f1"].value == pytest.approx(0.6)
    assert g["f1"].std == pytest.approx(0.2 / math.sqrt(2))
    cost = _rows(_report(db, "cost").tables[0], "role")
    assert (cost["judge"]["calls"], cost["judge"]["errors"]) == (2, 1)
    assert cost["judge"]["latency"] == pytest.approx(0.3)
    assert (cost["agent"]["cache_hits"], cost["agent"]["latency"]) == (1, None)
    errs = _report(db, "judge-errors").tables[0]
    assert [r[2] for r in errs.rows] == ["rubric"]


def test_renderers(db: Path) -> None:
    res = _report(db, "proc-comp", by="category")
    md = render(res, "md")
    # the fixture's runs were judged by `rules`: its figures are labelled as the heuristic
    assert "PROC / COMP by category (keyword heuristic: rules judge)" in md
    assert "| agent | category | sessions | PROC | COMP |" in md
    assert "56.2 ± 26.5 [" in md  # 0.5625 ± 0.265, as 0–100
    data = json.loads(render(res, "json"))
    cell = data["tables"][0]["rows"][0]["proc"]
    assert set(cell) == {"value", "std", "low", "high", "n", "se", "clusters", "method", "few"}
    assert "PROC / COMP by category" in render(res, "table")


def test_cli_report_query_export(db: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(cli, ["report", "summary", "triggers", "--db", str(db), "--run", "all",
                              "--format", "md"])
    assert out.exit_code == 0, out.output
    assert "# Run summary" in out.output and "# Trigger points by type" in out.output
    bad = runner.invoke(cli, ["report", "trigers", "--db", str(db)])
    assert bad.exit_code == 1 and "did you mean `triggers`" in bad.output
    q = runner.invoke(cli, ["query", "SELECT run_id, count(*) AS n FROM sessions GROUP BY 1 "
                            "ORDER BY 1", "--db", str(db), "--format", "csv"])
    assert q.exit_code == 0 and q.output.splitlines()[0] == "run_id,n"
    denied = runner.invoke(cli, ["query", "DELETE FROM sessions", "--db", str(db)])
    assert denied.exit_code == 1 and "read-only" in denied.output.lower()
    assert run_query(db, "SELECT count(*) FROM sessions").rows[0][0] > 0
    files = export_store(db, tmp_path / "exp", "parquet")
    names = {p.stem for p in files}
    assert {"sessions", "triggers", "llm_calls", "trigger_by_type"} <= names
    con = duckdb.connect()
    n = con.execute(f"SELECT count(*) FROM read_parquet('{tmp_path / 'exp' / 'sessions.parquet'}')"
                    ).fetchone()
    assert n == run_query(db, "SELECT count(*) FROM sessions").rows[0]
    csv_files = export_store(db, tmp_path / "csv", "csv", views=False)
    # with intent_checks, human_ratings, blobs (snapshot parts and model call texts stored
    # once) and llm_call_texts
    assert all(p.suffix == ".csv" for p in csv_files) and len(csv_files) == 17


def test_no_runs_and_missing_store_are_clear_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(cli, ["report", "--db", str(tmp_path / "nope.duckdb")])
    assert out.exit_code == 1 and "no such store" in out.output


def test_terminal_shows_store_text_verbatim_never_as_markup() -> None:
    # a judge's error text with a closing tag crashed rich's markup parser
    res = ReportResult("x", "Title", "what", ["r"], tables=[Table(
        "Sessions affected", [Column("error", "session error")],
        rows=[["bad output [/answer] here"], ["[bold]kept[/bold]"]], notes=["see [/x]"])])
    text = render(res, "table")
    assert "bad output [/answer] here" in text and "[bold]kept[/bold]" in text
    assert "see [/x]" in text
