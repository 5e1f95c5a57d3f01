"""Judge validity in the reports: the PPI-corrected headline of `agreement --humans`, Kendall τ
in rank stability, and the "judge not validated" line of the run summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchpack.reports.agreement import TAU_RAISED, TAU_UNTRUSTED
from benchpack.reports.api import ReportOptions, build_reports
from benchpack.reports.model import ReportResult, Table
from benchpack.reports.ratings import import_ratings
from benchpack.reports.render import render
from benchpack.runtime.store import SessionRows, Store, connect


def _run(store: Store, run_id: str, agent: str, judge: str, created: float,
         rejudge_of: str | None = None) -> None:
    config: dict[str, Any] = {"judge": judge}
    if rejudge_of:
        config.update(rejudge_of=rejudge_of, source_run=rejudge_of)
    store.upsert_run({"run_id": run_id, "created_at": created, "updated_at": created,
                      "plan_path": "build", "pack_name": "p", "agent": agent, "judge": judge,
                      "repeats": 1, "config": config, "status": "finished"})


def _session(store: Store, run_id: str, sid: str, agent: str, triggers: list[tuple[str, str]],
             **cols: Any) -> None:
    session = {"run_id": run_id, "session_id": sid, "repeat": 0, "fingerprint": "f",
               "name": sid, "protocol": "trigger_rubric", "agent": agent,
               "status": "finished", "judge_errors": 0, **cols}
    rows = [(run_id, sid, 0, tid, "critical", 1, "offline", "authored", "[]", "p", "pa", "f",
             "answer", label, {"PASS": 1.0, "PARTIAL": 0.5, "FAIL": 0.0}[label], "r", "", None,
             None) for tid, label in triggers]
    store.write_now(SessionRows(run_id, sid, 0, session, {"triggers": rows}))


def _store(path: Path, judged: list[str], rated: dict[int, list[str]],
           judge: str = "judge-x") -> Path:
    """Run `r`: session i has one trigger `t` judged `judged[i]`; `rated[i]` its raters'
    labels."""
    store = Store(path / "bench.duckdb")
    _run(store, "r", "model-a", judge, 1.0)
    for i, label in enumerate(judged):
        _session(store, "r", f"s{i:02d}", "model-a", [("t", label)])
    store.close()
    if rated:
        csv = path / "ratings.csv"
        csv.write_text("session,item,rater,label\n" + "".join(
            f"s{i:02d},t,R{k},{lab}\n" for i, labs in rated.items()
            for k, lab in enumerate(labs)), encoding="utf-8")
        con = connect(path / "bench.duckdb")
        try:
            import_ratings(con, csv, "r")
        finally:
            con.close()
    return path / "bench.duckdb"


def _report(db: Path, name: str, runs: list[str], **kw: Any) -> ReportResult:
    (res,) = build_reports(ReportOptions(db=db, names=[name], runs=runs, **kw))
    return res


def _cells(table: Table) -> dict[str, dict[str, Any]]:
    return {row[1]: {c.key: v for c, v in zip(table.columns, row, strict=True)}
            for row in table.rows}


def _ppi(res: ReportResult) -> Table:
    (t,) = [t for t in res.tables if t.title.startswith("Bias-corrected")]
    return t


def test_ppi_headline_by_hand(tmp_path: Path) -> None:
    # 10 sessions, judge passes 7; humans rate 4: PASS FAIL FAIL PASS where the judge said
    # PASS PASS PASS FAIL → θ̂ = 0.7 + (0 − 1 − 1 + 1)/4 = 0.45
    judged = ["PASS", "PASS", "PASS", "FAIL", "PASS", "PASS", "PASS", "PASS", "FAIL", "FAIL"]
    db = _store(tmp_path, judged, {0: ["PASS"], 1: ["FAIL"], 2: ["FAIL"], 3: ["PASS"]})
    res = _report(db, "agreement", ["r"], humans=True)
    rows = _cells(_ppi(res))
    rate = rows["trigger pass rate"]
    assert (rate["judged"], rate["rated"]) == (10, 4)
    assert rate["judge"].value == pytest.approx(0.7)
    assert rate["rectifier"].value == pytest.approx(-0.25)
    assert rate["ppi"].value == pytest.approx(0.45)
    # SE √(10/9 · 0.130375) = 0.3806 (tests/reports/test_validity.py): ± 0.746, clipped
    assert (rate["ppi"].low, rate["ppi"].high) == (0.0, 1.0)
    assert rows["trigger score"]["ppi"].value == pytest.approx(0.45)
    text = render(res, "md")
    assert "Prediction-powered inference" in text or "prediction-powered inference" in text
    assert "Angelopoulos" in text


def test_ppi_pulls_an_all_pass_judge_to_the_human_rate(tmp_path: Path) -> None:
    # adversarial: the judge passes all 20; humans fail half of the 10 they rated
    db = _store(tmp_path, ["PASS"] * 20,
                {i: ["PASS" if i % 2 else "FAIL"] for i in range(10)})
    rate = _cells(_ppi(_report(db, "agreement", ["r"], humans=True)))["trigger pass rate"]
    assert rate["judge"].value == 1.0
    assert rate["ppi"].value == pytest.approx(0.5)
    assert rate["ppi"].high < 1.0  # the judge's own figure is outside the interval


def test_summary_says_when_the_judge_was_never_validated(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    db = _store(plain, ["PASS", "FAIL"], {})
    res = _report(db, "summary", ["r"])
    for fmt in ("table", "md", "json", "html"):
        text = render(res, fmt)
        assert "not validated against humans" in text, fmt
        assert "judge-x" in text
    (line,) = [n for n in res.notes if "not validated" in n]
    assert "\n" not in line
    rated = tmp_path / "rated"
    rated.mkdir()
    db = _store(rated, ["PASS", "FAIL"], {0: ["PASS"]})
    assert not [n for n in _report(db, "summary", ["r"]).notes if "not validated" in n]
    rules = tmp_path / "rules"
    rules.mkdir()
    db = _store(rules, ["PASS", "FAIL"], {}, judge="rules")
    assert not [n for n in _report(db, "summary", ["r"]).notes if "not validated" in n]


def test_rank_stability_has_kendall_tau_with_a_ci(tmp_path: Path) -> None:
    store = Store(tmp_path / "bench.duckdb")
    # per agent 6 sessions; original judge: a > b > c clearly; the new judge swaps a and b
    before = {"model-a": 0.9, "model-b": 0.6, "model-c": 0.2}
    after = {"model-a": 0.5, "model-b": 0.7, "model-c": 0.1}
    for k, agent in enumerate(before):
        _run(store, f"o{k}", agent, "judge-x", float(k))
        _run(store, f"r{k}", agent, "judge-y", 10.0 + k, rejudge_of=f"o{k}")
        for i in range(6):
            wiggle = 0.02 * (i % 3)
            _session(store, f"o{k}", f"s{i}", agent, [], comp=before[agent] + wiggle)
            _session(store, f"r{k}", f"s{i}", agent, [], comp=after[agent] + wiggle)
    store.close()
    res = _report(tmp_path / "bench.duckdb", "agreement", ["r0", "r1", "r2"])
    t = res.tables[-1]
    (row,) = t.rows
    cells = {c.key: v for c, v in zip(t.columns, row, strict=True)}
    # one discordant pair (a, b) of three: τ = (2 − 1)/3
    assert cells["tau"].value == pytest.approx(1 / 3)
    # every session ranks the agents the same way: every resample gives the same τ
    assert (cells["tau"].low, cells["tau"].high) == (pytest.approx(1 / 3), pytest.approx(1 / 3))
    assert cells["tau"].n == 6
    assert any("Kendall" in n and "seed 0" in n for n in t.notes)
    # 3 agents: the upper end is never raised, no mark and no note of it
    assert cells["tau"].caution is None and TAU_RAISED not in t.notes


def test_rank_stability_marks_a_raised_upper_end(tmp_path: Path) -> None:
    """6 agents, 3 sessions: the original judge ranks them 0 < … < 5 in every session, the
    new judge swaps 2 and 3 in every session and 4 and 5 in s2 only — τ = 13/15, and the
    resamples give 11/15 (two or three copies of s2) or 13/15 (`test_tau_caution`): the
    percentile interval [11/15, 13/15] ends within one discordant pair of 1, so the report
    prints [11/15, 1] marked ‡, its reason in JSON, and the note."""
    store = Store(tmp_path / "bench.duckdb")
    order_b = {"s0": [0, 1, 3, 2, 4, 5], "s1": [0, 1, 3, 2, 4, 5], "s2": [0, 1, 3, 2, 5, 4]}
    for k in range(6):
        _run(store, f"o{k}", f"model-{k}", "judge-x", float(k))
        _run(store, f"r{k}", f"model-{k}", "judge-y", 10.0 + k, rejudge_of=f"o{k}")
        for sid, order in order_b.items():
            _session(store, f"o{k}", sid, f"model-{k}", [], comp=0.1 + 0.1 * k)
            _session(store, f"r{k}", sid, f"model-{k}", [], comp=0.1 + 0.1 * order[k])
    store.close()
    runs = [f"r{k}" for k in range(6)]
    res = _report(tmp_path / "bench.duckdb", "agreement", runs, resamples=400)
    t = res.tables[-1]
    (row,) = t.rows
    tau = {c.key: v for c, v in zip(t.columns, row, strict=True)}["tau"]
    assert tau.value == pytest.approx(13 / 15)
    assert (tau.low, tau.high) == (pytest.approx(11 / 15), 1.0)
    assert tau.caution is not None and "taken as 1" in tau.caution
    assert t.notes[-1] == TAU_RAISED
    assert "0.87 [0.73, 1.00]‡" in render(res, "md")
    assert '"caution": "the percentile interval' in render(res, "json")


def _noisy_store(path: Path, agents: int) -> list[str]:
    """`agents` agents, 4 sessions: agent k scores 0.2 + 0.02·k, plus 0.2 in half its
    sessions (which half alternates with k and differs between the judges): figures 0.02
    apart that move by ~0.05 over resamples (`test_tau_caution._noisy`)."""
    store = Store(path)
    for k in range(agents):
        _run(store, f"o{k}", f"model-{k}", "judge-x", float(k))
        _run(store, f"r{k}", f"model-{k}", "judge-y", 20.0 + k, rejudge_of=f"o{k}")
        for u in range(4):
            _session(store, f"o{k}", f"s{u}", f"model-{k}", [],
                     comp=0.2 + 0.02 * k + 0.2 * ((u + k) % 2))
            _session(store, f"r{k}", f"s{u}", f"model-{k}", [],
                     comp=0.2 + 0.02 * k + 0.2 * ((u // 2 + k) % 2))
    store.close()
    return [f"r{k}" for k in range(agents)]


def test_rank_stability_marks_an_untrusted_interval(tmp_path: Path) -> None:
    """9 agents whose figures move more under resampling than they are apart: τ's interval is
    marked ‡ with its reason in JSON and the note; with 8 the same data is not marked."""
    runs = _noisy_store(tmp_path / "nine.duckdb", 9)
    res = _report(tmp_path / "nine.duckdb", "agreement", runs, resamples=300)
    t = res.tables[-1]
    (row,) = t.rows
    tau = {c.key: v for c, v in zip(t.columns, row, strict=True)}["tau"]
    assert tau.caution is not None and "9 agents whose figures move" in tau.caution
    assert TAU_UNTRUSTED in t.notes
    assert f"[{tau.low:.2f}, {tau.high:.2f}]‡" in render(res, "md")
    assert "not to be trusted" in render(res, "json")
    runs = _noisy_store(tmp_path / "eight.duckdb", 8)
    res = _report(tmp_path / "eight.duckdb", "agreement", runs, resamples=300)
    t = res.tables[-1]
    (row,) = t.rows
    tau = {c.key: v for c, v in zip(t.columns, row, strict=True)}["tau"]
    assert TAU_UNTRUSTED not in t.notes
    assert tau.caution is None or "agents whose figures move" not in tau.caution
