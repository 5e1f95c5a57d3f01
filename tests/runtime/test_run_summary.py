"""The run summary's headline figures: a session the agent errored in scores the protocol's
worst score (PROC 0); errors outside the agent are unknown, excluded and counted
(`test_error_kinds.py`)."""

from __future__ import annotations

from pathlib import Path

from benchpack.compiler import compile_pack
from benchpack.runtime.runner import RunOptions, run_plan

ROOT = Path(__file__).resolve().parents[2]


def test_agent_errored_sessions_score_as_failures(tmp_path: Path) -> None:
    out = tmp_path / "plan"
    assert compile_pack(ROOT / "taskpacks" / "pharmacist-week", out, use_cache=False).ok
    summary = run_plan(RunOptions(
        plan=out, agent="cmd:false", simulator="rules",
        judge="rules", db=tmp_path / "bench.duckdb", progress=False,
        cache_dir=tmp_path / "cache"))
    assert summary.finished == 0 and summary.errors > 0
    assert (summary.proc, summary.comp, summary.score, summary.f1, summary.trigger_score) == \
        (0.0, 0.0, None, None, None)
    assert summary.first_errors
    import duckdb
    con = duckdb.connect(str(tmp_path / "bench.duckdb"), read_only=True)
    assert con.execute("SELECT count(*), count(proc), sum(proc), count(comp) FROM sessions "
                       "WHERE status = 'error'").fetchone() == (summary.errors, summary.errors,
                                                                 0.0, summary.errors)
    con.close()
    assert summary.first_errors[0].startswith("inr-clinic-review: "), summary.first_errors


def test_resume_keeps_the_runs_judge(tmp_path: Path) -> None:
    """`--resume RUN_ID` without --judge continues with the judge the run started with (the
    README's resume example gives only --agent); another judge is refused."""
    import duckdb
    import pytest

    out = tmp_path / "plan"
    assert compile_pack(ROOT / "taskpacks" / "pharmacist-week", out, use_cache=False).ok
    db = tmp_path / "bench.duckdb"
    opts = dict(plan=out, agent="cmd:false", db=db, progress=False,
                cache_dir=tmp_path / "cache", run_id="r")
    run_plan(RunOptions(**opts, judge="litellm:openai/judge-model"))  # type: ignore[arg-type]
    run_plan(RunOptions(**opts, resume=True))  # type: ignore[arg-type]
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT judge FROM runs").fetchall() == [("litellm:openai/judge-model",)]
    con.close()
    with pytest.raises(ValueError, match="was run with --judge litellm:openai/judge-model"):
        run_plan(RunOptions(**opts, resume=True, judge="rules"))  # type: ignore[arg-type]


def test_refused_python_graders_are_grader_errors_and_said(tmp_path: Path) -> None:
    """Without --allow-python a python grader is refused: neither a pass nor a fail but a
    grader error, counted in the summary, which says COMP leaves those items out and how to
    grade them. Hand count: refill-triage has 2 rule/rubric items + 1 python item."""
    import json

    from click.testing import CliRunner

    from benchpack.cli import cli
    from benchpack.compiler import init_pack

    init_pack(tmp_path / "pack", "p")
    ep = next((tmp_path / "pack" / "episodes").glob("*.yaml"))
    text = ep.read_text()
    marker = "                args.title: {contains: warfarin}\n"
    assert marker in text
    ep.write_text(text.replace(marker, marker + "          - text: The queue file is intact.\n"
                               "            python: graders.py:check\n", 1))
    (tmp_path / "pack" / "episodes" / "graders.py").write_text("def check(history):\n    return 1\n")
    res = compile_pack(tmp_path / "pack", tmp_path / "build", use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    (tmp_path / "agent.yaml").write_text('default:\n' + '  - say: "Done."\n' * 8)
    import gc

    collector = (gc.get_threshold(), gc.get_freeze_count())
    out = CliRunner().invoke(cli, ["run", str(tmp_path / "build"), "--agent",
                                   f"scripted:{tmp_path / 'agent.yaml'}", "--db",
                                   str(tmp_path / "b.duckdb"), "--quiet", "--json",
                                   "--cache-dir", str(tmp_path / "cache")])
    summary = json.loads(out.stdout)
    # in-process (not the `bench` process itself): the caller's collector is left alone
    assert (gc.get_threshold(), gc.get_freeze_count()) == collector
    assert summary["grader_errors"] == 1 and summary["python_refused"] == 1, summary
    assert "1 python grader refused" in out.stderr and "--allow-python" in out.stderr
    text_out = CliRunner().invoke(cli, ["run", str(tmp_path / "build"), "--agent",
                                        f"scripted:{tmp_path / 'agent.yaml'}", "--db",
                                        str(tmp_path / "c.duckdb"), "--quiet",
                                        "--cache-dir", str(tmp_path / "cache")])
    assert "grader errors" in text_out.output and "--allow-python" in text_out.output
