"""Intent tracking end to end with scripted agents and scripted judge decisions.

Reproduces the π-Bench appendix J cross-session case: PROC 66.67 for the trajectory that
recovers the research theme and several conventions from earlier sessions, and 0.00 for the one
that waits for the user to restate everything.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
import yaml

from benchpack.runtime.runner import RunOptions, run_plan
from conftest import bench_run

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "pibench_case"


@pytest.fixture(scope="module")
def plan_dir(compiled: Callable[..., Path]) -> Path:
    return compiled(CASE)


def _run(plan_dir: Path, tmp_path: Path, who: str, **kw: object) -> tuple[Path, str]:
    db, summary = bench_run(plan_dir, tmp_path, db=tmp_path / f"{who}.duckdb",
                            agent=f"scripted:{CASE / f'{who}_agent.yaml'}",
                            judge=f"scripted:{CASE / f'{who}_judge.yaml'}", simulator="rules",
                            **kw)
    assert summary.errors == 0
    return db, summary.run_id


def _session(db: Path, run_id: str, name: str) -> dict[str, object]:
    con = duckdb.connect(str(db), read_only=True)
    cur = con.execute("SELECT * FROM sessions WHERE run_id=? AND name=?", [run_id, name])
    row = cur.fetchone()
    assert row is not None
    out = dict(zip([d[0] for d in cur.description], row, strict=True))
    con.close()
    return out


def test_successful_cross_session_case_scores_proc_66_67(plan_dir: Path, tmp_path: Path) -> None:
    db, run_id = _run(plan_dir, tmp_path, "claude")
    s = _session(db, run_id, "organise-papers")
    assert round(100 * float(s["proc"]), 2) == 66.67  # type: ignore[arg-type]
    assert (s["completed"], s["inferred"], s["provided"], s["unresolved"]) == (4, 0, 2, 0)
    assert s["turns"] == 3 and s["termination"] == "all_resolved"
    # the group's final session pools the intents of its group: (3 + 2 + 4) / 12
    assert round(float(s["proc_group"]), 4) == 0.75  # type: ignore[arg-type]
    con = duckdb.connect(str(db), read_only=True)
    statuses = dict(con.execute(
        "SELECT intent_id, status || '@' || turn FROM intent_status WHERE run_id=? AND "
        "session_id LIKE '%organise-papers' AND pooled_from IS NULL", [run_id]).fetchall())
    assert statuses == {"I1": "completed@1", "I2": "provided@1", "I3": "completed@2",
                        "I4": "completed@2", "I5": "completed@2", "I6": "provided@2"}
    comp = con.execute("SELECT comp FROM sessions WHERE run_id=? AND name='organise-papers'",
                       [run_id]).fetchone()
    assert comp == (1.0,)  # two scripted rubric items + the read_file rule
    con.close()


def test_failed_cross_session_case_scores_proc_0(plan_dir: Path, tmp_path: Path) -> None:
    db, run_id = _run(plan_dir, tmp_path, "kimi")
    s = _session(db, run_id, "organise-papers")
    assert s["proc"] == 0.0
    assert (s["completed"], s["inferred"], s["provided"]) == (0, 0, 6)
    assert s["turns"] == 7
    assert round(float(s["comp"]), 4) == round(1 / 3, 4)  # type: ignore[arg-type]


def test_resume_of_a_finished_run_does_nothing(plan_dir: Path, tmp_path: Path) -> None:
    db, run_id = _run(plan_dir, tmp_path, "claude")
    again = run_plan(RunOptions(
        plan=plan_dir, agent=f"scripted:{CASE / 'claude_agent.yaml'}",
        judge=f"scripted:{CASE / 'claude_judge.yaml'}", db=db, run_id=run_id, resume=True,
        progress=False, cache_dir=tmp_path / "cache"))
    assert again.sessions_run == 0 and again.sessions_skipped_resume == 3
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM sessions").fetchone() == (3,)
    con.close()


def test_a_judge_that_never_decides_leaves_statuses_undecided(plan_dir: Path,
                                                              tmp_path: Path) -> None:
    """A malformed judge (every answer unparseable): PROC is NULL, and no intent is reported
    `provided` — the judge never decided the agent missed it. `bench report status` counts the
    undecided intents beside the distribution, which is over decided intents only (none)."""
    from click.testing import CliRunner

    from benchpack.cli import cli
    from benchpack.runtime.llm import FakeBackend

    db = tmp_path / "bad.duckdb"
    backend = FakeBackend([lambda req: "I'd rather not say."] * 500)
    # the failed case's turns, then plain replies: with no intent ever decided the user keeps
    # volunteering, and a script that ran out of turns would be the agent's error
    script = yaml.safe_load((CASE / "kimi_agent.yaml").read_text(encoding="utf-8"))
    for turns in script["sessions"].values():
        turns.extend({"say": "Noted."} for _ in range(20))
    agent = tmp_path / "agent.yaml"
    agent.write_text(yaml.safe_dump(script, allow_unicode=True), encoding="utf-8")
    summary = run_plan(RunOptions(
        plan=plan_dir, agent=f"scripted:{agent}", judge="litellm:fake/judge",
        simulator="rules", db=db, run_id="bad", progress=False, cache_dir=tmp_path / "cache",
        llm_backend=backend, max_retries=0))
    assert summary.proc is None and summary.judge_errors > 0
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT status, judge_error FROM intent_status WHERE run_id='bad' "
                       "AND pooled_from IS NULL").fetchall()
    counts = con.execute("SELECT sum(provided), sum(completed), sum(intents) FROM sessions "
                         "WHERE run_id='bad'").fetchone()
    con.close()
    assert rows and all(st is None and err for st, err in rows), rows
    assert counts is not None and counts[0] == 0 and counts[1] == 0 and counts[2] == len(rows)
    res = CliRunner().invoke(cli, ["report", "status", "--db", str(db), "--format", "json"])
    assert res.exit_code == 0, res.output
    micro, macro = json.loads(res.output)["tables"]
    row = micro["rows"][0]
    assert row["undecided"] == len(rows) and row["intents"] == 0
    assert row["provided"] is None  # no decided intent: no distribution, not 100 % provided
    assert macro["rows"][0]["provided"] is None and macro["rows"][0]["undecided"] == len(rows)


def test_the_run_records_what_it_promised(plan_dir: Path, tmp_path: Path) -> None:
    """`runs.config.planned_sessions` × repeats is the inventory's promise (every selected
    session, kept across a resume), so the reports can count what never ran."""
    from benchpack.reports.api import ReportOptions, build_reports

    db, run_id = _run(plan_dir, tmp_path, "claude")
    con = duckdb.connect(str(db), read_only=True)
    (config,) = con.execute("SELECT config FROM runs WHERE run_id=?", [run_id]).fetchone()
    ids = [r[0] for r in con.execute("SELECT session_id FROM sessions ORDER BY 1").fetchall()]
    con.close()
    assert json.loads(config)["planned_sessions"] == ids and len(ids) == 3
    (res,) = build_reports(ReportOptions(db=db, names=["inventory"], runs=[run_id]))
    row = dict(zip([c.key for c in res.tables[0].columns], res.tables[0].rows[0], strict=True))
    assert (row["promised"], row["finished"], row["not_run"], row["excluded"]) == (3, 3, 0, 0)



def test_sessions_with_nothing_to_grade_never_read_the_workspace(
        plan_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Graders read the workspace (every file, every session): a session without a checklist,
    `verify:` or `score:` has no grader, so it must cost no walk of it (nor a copy of the
    services' rows); a session with a checklist still reads it."""
    import asyncio
    from types import SimpleNamespace

    from benchpack.runtime.planfile import load_plan
    from benchpack.runtime.session import grade_checklist

    plan = load_plan(plan_dir)
    graded = next(s for s in plan.sessions.values() if s.checklist)
    bare = graded.model_copy(update={"checklist": [], "verify": None, "score": None})

    class Untouchable:
        def __getattr__(self, name: str) -> object:
            raise AssertionError(f"the environment was read: {name}")

    ctx = SimpleNamespace(session=bare, env=Untouchable(), toolbox=Untouchable(), extra={})
    rows, comp, score, passed, judge_errors, grader_errors = asyncio.run(
        grade_checklist(ctx))  # type: ignore[arg-type]
    assert (rows, comp, score, passed, judge_errors, grader_errors) == (
        [], None, None, None, 0, 0)
    with pytest.raises(AssertionError, match="was read"):
        asyncio.run(grade_checklist(SimpleNamespace(  # type: ignore[arg-type]
            session=graded, env=Untouchable(), toolbox=Untouchable(), extra={})))


def test_leaks_stored_at_run_time_equal_the_report_scan(plan_dir: Path, tmp_path: Path) -> None:
    # every intent-tracking session records `extra.intent_leaks`; dropping it makes the
    # simulator report scan the transcripts instead, and both give the same counts
    import shutil

    from benchpack.reports.access import open_store, select_runs
    from benchpack.reports.builtin import ReportContext
    from benchpack.reports.simulator import simulator_rows

    db, run_id = _run(plan_dir, tmp_path, "kimi")
    con = duckdb.connect(str(db), read_only=True)
    stored = con.execute("SELECT count(*), count(json_extract(extra, '$.intent_leaks')) "
                         "FROM sessions WHERE protocol = 'intent_tracking'").fetchone()
    con.close()
    assert stored is not None and stored[0] > 0 and stored[0] == stored[1]
    bare = tmp_path / "bare.duckdb"
    shutil.copy(db, bare)
    con = duckdb.connect(str(bare))
    con.execute("UPDATE sessions SET extra = NULL WHERE protocol = 'intent_tracking'")
    con.close()

    def rows(path: Path) -> list[dict[str, object]]:
        with open_store(path) as con:
            return simulator_rows(ReportContext(con, select_runs(con, [run_id])))

    assert rows(db) == rows(bare)
