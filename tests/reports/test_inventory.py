"""The exact inventory: every (session, repeat) promised is accounted for, and no report
shrinks a denominator silently. Stores built by hand:

run-done   a "Done."-only agent: 4 verified tasks × 2 repeats promised, all 8 finished and
           failed → pass@1 0 over 4 tasks, n 8; inventory 8 = 8 finished, 0 excluded
run-crash  an agent whose sessions all error (kind agent): 3 tasks × 2 → all 6 scored as
           failures, n 6, nothing excluded
run-infra  every session errored outside the agent (2 judge, 1 simulator, 1 infrastructure)
           and 2 promised never ran: 3 tasks × 2 = 6 promised = 0 + 0 + 4 + 2 not run;
           no figure (pass@1 –), 6 excluded, said in every report
run-old    a run recorded before the plan was: promised unknown, 1 finished
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchpack.reports.api import ReportOptions, build_reports, render_report
from benchpack.reports.model import ReportResult
from benchpack.runtime.store import SessionRows, Store


def _run(store: Store, run: str, agent: str, tasks: list[str] | None, repeats: int) -> None:
    config: dict[str, Any] = {} if tasks is None else {"planned_sessions": tasks}
    store.upsert_run({"run_id": run, "created_at": 1.0, "updated_at": 1.0, "plan_path": "p",
                      "plan_hash": "h", "pack_name": "fx", "pack_version": "1",
                      "benchpack_version": "0", "agent": agent, "simulator": "rules",
                      "judge": "rules", "repeats": repeats, "config": config,
                      "status": "finished"})


def _session(run: str, sid: str, repeat: int, agent: str, status: str = "finished",
             kind: str | None = None, **cols: Any) -> SessionRows:
    row = {"run_id": run, "session_id": sid, "repeat": repeat, "fingerprint": "f",
           "episode": sid, "name": sid, "protocol": "verified_outcome", "agent": agent,
           "status": status, "error_kind": kind, "termination": "error" if kind else "done",
           "error": f"{kind} error" if kind else None, "turns": 2, "user_turns": 1,
           "assistant_turns": 1, "tool_calls": 0, "compactions": 0, "judge_errors": 0,
           "grader_errors": 0, "prompt_tokens": 1, "completion_tokens": 1, "cost": 0.0,
           "started_at": 0.0, "finished_at": 1.0, "duration_s": 1.0, **cols}
    return SessionRows(run, sid, repeat, row)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("inventory") / "bench.duckdb"
    store = Store(path)
    try:
        _run(store, "run-done", "done-agent", ["t1", "t2", "t3", "t4"], 2)
        _run(store, "run-crash", "crash-agent", ["t1", "t2", "t3"], 2)
        _run(store, "run-infra", "infra-agent", ["t1", "t2", "t3"], 2)
        _run(store, "run-old", "old-agent", None, 1)
        batch = [_session("run-done", t, r, "done-agent", score=0.0, passed=False)
                 for t in ("t1", "t2", "t3", "t4") for r in (0, 1)]
        batch += [_session("run-crash", t, r, "crash-agent", "error", "agent", score=0.0,
                           passed=False) for t in ("t1", "t2", "t3") for r in (0, 1)]
        batch += [_session("run-infra", t, r, "infra-agent", "error", k) for t, r, k in (
            ("t1", 0, "judge"), ("t1", 1, "judge"), ("t2", 0, "simulator"),
            ("t2", 1, "infrastructure"))]
        batch.append(_session("run-old", "t1", 0, "old-agent", score=1.0, passed=True))
        store.write_batch(batch)
    finally:
        store.close()
    return path


def _report(db: Path, name: str, run: str) -> ReportResult:
    (res,) = build_reports(ReportOptions(db=db, names=[name], runs=[run]))
    return res


def _row(res: ReportResult) -> dict[str, Any]:
    t = res.tables[0]
    return {c.key: v for c, v in zip(t.columns, t.rows[0], strict=True)}


def test_done_only_agent_keeps_every_session_in_the_denominator(db: Path) -> None:
    inv = _row(_report(db, "inventory", "run-done"))
    assert (inv["promised"], inv["finished"], inv["excluded"], inv["not_run"]) == (8, 8, 0, 0)
    passk = _row(_report(db, "pass-k", "run-done"))
    assert passk["pass1"].value == 0.0
    assert (passk["pass1"].n, passk["pass1"].clusters) == (8, 4)
    # 0 of 8 in 4 episodes with no spread: how alike an episode's repeats are is unknown,
    # so each episode counts once (issue 25): Clopper–Pearson 0/4, not 0/8
    assert passk["pass1"].low == 0.0
    assert passk["pass1"].high == pytest.approx(1 - 0.025 ** (1 / 4))
    assert passk["pass1"].few


def test_all_sessions_errored_by_the_agent_count_as_failures(db: Path) -> None:
    inv = _row(_report(db, "inventory", "run-crash"))
    assert (inv["promised"], inv["finished"], inv["agent_errors"], inv["excluded"]) \
        == (6, 0, 6, 0)
    passk = _row(_report(db, "pass-k", "run-crash"))
    assert (passk["pass1"].value, passk["pass1"].n, passk["tasks"]) == (0.0, 6, 3)


def test_errors_outside_the_agent_and_unrun_sessions_are_counted_not_hidden(db: Path) -> None:
    inv = _row(_report(db, "inventory", "run-infra"))
    assert (inv["promised"], inv["finished"], inv["agent_errors"]) == (6, 0, 0)
    assert (inv["judge"], inv["simulator"], inv["infrastructure"]) == (2, 1, 1)
    assert (inv["not_run"], inv["excluded"]) == (2, 6)
    passk = _report(db, "pass-k", "run-infra")
    assert passk.tables[0].rows == [] or _row(passk)["pass1"].value is None
    line = passk.notes[-1]
    assert line == ("Inventory — infra-agent: 6 promised (3 sessions × 2 repeats) = "
                    "0 finished + 0 agent errors (scored as failures) + 1 infrastructure "
                    "error, 2 judge errors, 1 simulator error (excluded) + 2 not run "
                    "(excluded); 6 excluded from the figures")


def test_a_run_without_a_recorded_plan_says_so(db: Path) -> None:
    inv = _row(_report(db, "inventory", "run-old"))
    assert (inv["promised"], inv["finished"], inv["not_run"]) == (None, 1, None)
    assert "promised not recorded" in _report(db, "summary", "run-old").notes[-1]


@pytest.mark.parametrize("fmt", ["table", "md", "json", "html"])
def test_every_format_carries_the_inventory(db: Path, fmt: str) -> None:
    out = render_report(ReportOptions(db=db, names=["pass-k"], runs=["run-infra"]), fmt)
    assert "2 not run" in out and "6 excluded from the figures" in out
    if fmt == "json":
        assert any("Inventory" in n for n in json.loads(out)["notes"])


def test_plan_ids_with_quotes_and_rows_outside_the_plan(tmp_path: Path) -> None:
    """The plan is matched as SQL literals (issue 31: a Python list parameter is bound at
    ~0.2 ms an element): ids with quotes and backslashes match themselves; a stored session the
    plan does not list, or a repeat beyond the run's, is not one of the promised.
    Promised 3 × 2 = 6; recorded of them: o'brien r0, o'brien r1, a\\'b r0 → 3 not run."""
    path = tmp_path / "bench.duckdb"
    store = Store(path)
    try:
        _run(store, "run-q", "q-agent", ["o'brien", "a\\'b", "''"], 2)
        store.write_batch([
            _session("run-q", "o'brien", 0, "q-agent", score=1.0, passed=True),
            _session("run-q", "o'brien", 1, "q-agent", score=1.0, passed=True),
            _session("run-q", "a\\'b", 0, "q-agent", score=0.0, passed=False),
            _session("run-q", "a'b", 1, "q-agent", score=0.0, passed=False),  # not planned
            _session("run-q", "''", 2, "q-agent", score=0.0, passed=False)])  # repeat 2 of 2
    finally:
        store.close()
    row = _row(_report(path, "inventory", "run-q"))
    assert (row["promised"], row["finished"], row["not_run"]) == (6, 5, 3)


def test_the_plan_is_not_bound_as_a_list_parameter(db: Path) -> None:
    from benchpack.reports.access import open_store
    from benchpack.reports.builtin import ReportContext
    from benchpack.reports.inventory import inventories

    class Spy:
        def __init__(self, con: Any) -> None:
            self.con, self.params = con, []

        def execute(self, sql: str, params: Any = ()) -> Any:
            self.params.append(list(params or ()))
            return self.con.execute(sql, params)

    with open_store(db) as con:
        spy = Spy(con)
        found = inventories(ReportContext(spy, ["run-done", "run-infra"]))
    assert found["run-infra"].not_run == 2 and found["run-done"].not_run == 0
    assert spy.params and not any(isinstance(v, list | tuple) for p in spy.params for v in p)
