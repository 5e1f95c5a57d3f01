"""Errored sessions in the reports: the agent's errors are its failures (stored with the
protocol's worst score, counted in every figure); errors outside it (infrastructure, simulator,
judge) are excluded and counted beside the figure. pass@k / pass^k have one definition (k = the
run's repeats, over the tasks with ≥ k graded repeats), shared by `bench run` and `bench report
pass-k`.

The store, one run `run-x` (agent `model-x`, 3 repeats), computed by hand:

verified  t1: pass pass pass           → n 3, c 3
          t2: pass, AGENT ERROR, fail  → n 3, c 1   (the crash is a fail)
          t3: AGENT ERROR × 3          → n 3, c 0   (before: the task vanished)
          t4: pass, JUDGE ERROR, pass  → n 2, c 2   (excluded from pass@3: fewer than k runs)
  pass@1 over 4 tasks = (1 + 1/3 + 0 + 1) / 4 = 0.583333
  pass@3 over t1..t3  = (1 + 1 + 0) / 3 = 0.666667;  pass^3 = (1 + 0 + 0) / 3 = 0.333333
  before: pass@1 (1 + 1/2 + 1) / 3 = 0.833333, k silently 2, pass^2 (1 + 0 + 1) / 3 = 0.666667
intent    s1 PROC 0.5 (finished), s2 AGENT ERROR (PROC 0), s3 JUDGE ERROR (PROC NULL)
  PROC = (0.5 + 0) / 2 = 0.25, excluded: 1 judge error  (before: 0.5)
triggers  tr1 finished: PASS (recovery); tr2 AGENT ERROR: its 2 triggers FAIL
  pass rate = 1 / 3 (before: 1 / 1)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchpack.cli.run import pass_rates
from benchpack.reports import stats
from benchpack.reports.api import ReportOptions, build_reports, run_query
from benchpack.reports.model import ReportResult, Table
from benchpack.runtime.runner import summarise
from benchpack.runtime.store import SessionRows, Store


def _session(sid: str, repeat: int, protocol: str, status: str = "finished",
             kind: str | None = None, **cols: Any) -> SessionRows:
    row = {"run_id": "run-x", "session_id": sid, "repeat": repeat, "fingerprint": "f",
           "episode": "ep-" + sid, "name": sid, "protocol": protocol, "agent": "model-x",
           "status": status, "error_kind": kind, "termination": "error" if kind else "done",
           "error": f"{kind} error" if kind else None, "turns": 2, "user_turns": 1,
           "assistant_turns": 2, "tool_calls": 0, "compactions": 0, "judge_errors": 0,
           "grader_errors": 0, "prompt_tokens": 1, "completion_tokens": 1, "cost": 0.0,
           "started_at": 0.0, "finished_at": 1.0, "duration_s": 1.0, **cols}
    return SessionRows("run-x", sid, repeat, row)


def _trigger(sid: str, tid: str, label: str) -> tuple[Any, ...]:
    return ("run-x", sid, 0, tid, "recovery", 1, "offline", "authored", "[]", "p", "pa", "f",
            "reply", label, {"PASS": 1.0, "FAIL": 0.0}[label], "why", None, None, None)


def build(path: Path) -> Path:
    store = Store(path)
    try:
        store.upsert_run({"run_id": "run-x", "created_at": 1.0, "updated_at": 1.0,
                          "plan_path": "p", "plan_hash": "h", "pack_name": "fx",
                          "pack_version": "1", "benchpack_version": "0", "agent": "model-x",
                          "simulator": "rules", "judge": "rules", "repeats": 3, "config": {},
                          "status": "partial"})
        batch = []
        outcomes = {"t1": [True, True, True], "t2": [True, "agent", False],
                    "t3": ["agent", "agent", "agent"], "t4": [True, "judge", True]}
        for task, runs in outcomes.items():
            for rep, ok in enumerate(runs):
                if isinstance(ok, bool):
                    batch.append(_session(task, rep, "verified_outcome", score=float(ok),
                                          passed=ok))
                elif ok == "agent":  # as the runtime stores it: the protocol's worst score
                    batch.append(_session(task, rep, "verified_outcome", "error", "agent",
                                          score=0.0, passed=False))
                else:
                    batch.append(_session(task, rep, "verified_outcome", "error", ok))
        batch.append(_session("s1", 0, "intent_tracking", intents=2, completed=1,
                              unresolved=1, proc=0.5))
        batch.append(_session("s2", 0, "intent_tracking", "error", "agent", intents=2,
                              completed=1, unresolved=1, proc=0.0))
        batch.append(_session("s3", 0, "intent_tracking", "error", "judge", intents=2,
                              unresolved=2))
        tr1 = _session("tr1", 0, "trigger_rubric", triggers=1, trigger_score=1.0)
        tr1.tables["triggers"] = [_trigger("tr1", "a", "PASS")]
        tr2 = _session("tr2", 0, "trigger_rubric", "error", "agent", triggers=2,
                       trigger_score=0.0)
        tr2.tables["triggers"] = [_trigger("tr2", "a", "FAIL"), _trigger("tr2", "b", "FAIL")]
        batch += [tr1, tr2]
        store.write_batch(batch)
    finally:
        store.close()
    return path


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("kinds") / "bench.duckdb")


def _report(db: Path, name: str) -> ReportResult:
    (res,) = build_reports(ReportOptions(db=db, names=[name], runs=["all"]))
    return res


def _row(table: Table, i: int = 0) -> dict[str, Any]:
    return {c.key: v for c, v in zip(table.columns, table.rows[i], strict=True)}


def test_pass_k_counts_agent_crashes_as_fails_with_the_runs_k(db: Path) -> None:
    t = _report(db, "pass-k").tables[0]
    row = _row(t)
    assert (row["tasks"], row["k"]) == (4, 3)
    assert row["pass1"].value == pytest.approx(0.583333, abs=1e-6)
    assert row["passk"].value == pytest.approx(2 / 3)
    assert row["pass_hat_k"].value == pytest.approx(1 / 3)
    assert row["passk"].n == 3  # t4 has 2 graded repeats < k
    assert "1 task with fewer than 3 graded repeats" in " ".join(t.notes)
    assert row["excluded"] == "1 judge error"


def test_the_run_summary_uses_the_same_pass_k(db: Path) -> None:
    store = Store(db)
    try:
        s = summarise(store, "run-x", 14, {"run": 14}, 0, 1.0, repeats=3)
    finally:
        store.close()
    rates = pass_rates(s)
    ref = stats.pass_k_summary(s.pass_counts, 3)
    assert rates["pass_at_1"] == pytest.approx(0.583333, abs=1e-6) == ref.pass_at_1
    assert (rates["pass_at_k"], rates["pass_hat_k"]) == pytest.approx((2 / 3, 1 / 3))
    assert (rates["tasks"], rates["tasks_k"]) == (4, 3)
    assert s.proc == pytest.approx(0.25)
    assert s.excluded == {"judge": 2} and s.agent_errors == 6


def test_headline_proc_counts_the_agents_crash_and_names_the_excluded(db: Path) -> None:
    t = _report(db, "proc-comp").tables[0]
    row = _row(t)
    assert row["proc"].value == pytest.approx(0.25)
    assert row["sessions"] == 2
    assert row["excluded"] == "1 judge error"


def test_a_crashed_trigger_session_counts_its_fails(db: Path) -> None:
    rows = {r[1]: r for r in _report(db, "triggers").tables[0].rows}
    assert rows["overall"][2] == 3
    assert rows["overall"][3].value == pytest.approx(1 / 3)
    view = run_query(db, "SELECT n, pass_rate FROM trigger_by_type").rows
    assert view == [(3, pytest.approx(1 / 3))]


def test_pass_k_flip_rate_and_the_named_estimator(db: Path) -> None:
    """t1 3/3, t2 1/3 (flips), t3 0/3, t4 2/2: 1 of 4 tasks flips; pass@1 is clustered by task
    (11 graded repeats in 4 tasks); pass^k is named as τ²'s estimator, against Claw's."""
    t = _report(db, "pass-k").tables[0]
    row = _row(t)
    assert row["flip"].value == pytest.approx(1 / 4)
    assert (row["flip"].n, row["flip"].method) == (4, "clopper-pearson")
    assert (row["pass1"].n, row["pass1"].clusters) == (11, 4)
    assert any("τ²-bench's estimator C(c,k)/C(n,k)" in n and "(c/n)^k" in n for n in t.notes)


def test_pass_hat_k_for_every_k_up_to_the_fewest_graded_trials(db: Path) -> None:
    """τ²'s rule on a run of our own: K = the fewest graded trials any task has (t4: 2, its
    judge error excluded), pass^k for k = 1 … K over every task with its own n:
    pass^1 = (1 + 1/3 + 0 + 1)/4, pass^2 = (1 + 0 + 0 + 1)/4; avg reward over the 11 graded
    session runs = (3 + 1 + 0 + 2)/11."""
    t = _report(db, "pass-k").tables[1]
    assert t.title == "pass^k for k = 1 … K (τ²-bench)"
    row = _row(t)
    assert (row["tasks"], row["trials"], row["k_max"]) == (4, "2–3", 2)
    assert row["pass_hat_1"].value == pytest.approx(7 / 12)
    assert row["pass_hat_2"].value == pytest.approx(1 / 2)
    assert row["avg_reward"].value == pytest.approx(6 / 11)
    assert (row["avg_reward"].n, row["avg_reward"].clusters) == (11, 4)
    assert (row["pass_hat_2"].n, row["pass_hat_2"].clusters) == (4, 4)
    assert "pass_hat_3" not in row
    notes = " ".join(t.notes)
    assert "K = 2, not the 3 repeats: task t4 has 2 graded trials" in notes
    assert "τ²-bench's rule" in notes
