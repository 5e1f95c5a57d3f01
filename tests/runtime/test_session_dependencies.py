"""`bench run --session X` where X depends on other sessions (issue 10).

It used to run X alone, without its context, and store it as an ordinary run that reports then
averaged with full-context runs. Now its dependencies run too, in order; `--alone` runs it
without them, marked in the store and reported apart.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from benchpack.cli import cli

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "pibench_case"


@pytest.fixture()
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    runner = CliRunner()
    assert runner.invoke(cli, ["compile", str(CASE), "-o", "build"]).exit_code == 0
    return runner


def _run(runner: CliRunner, *extra: str) -> str:
    out = runner.invoke(cli, ["run", "build", "--agent", f"scripted:{CASE / 'claude_agent.yaml'}",
                              "--judge", f"scripted:{CASE / 'claude_judge.yaml'}", "--db",
                              "b.duckdb", *extra])
    assert out.exit_code == 0, out.output
    return out.output


def _rows(sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect("b.duckdb", read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_session_pulls_in_its_dependencies(built: CliRunner) -> None:
    _run(built, "--session", "organise-papers", "--quiet")
    rows = _rows("SELECT name, json_extract_string(extra, '$.context') FROM sessions "
                 "ORDER BY started_at")
    assert rows == [("tool-use-reading", None), ("think-with-image", None),
                    ("organise-papers", None)]  # was [("organise-papers", None)]
    # with its context the agent earns the π-Bench figure (PROC 66.67 %)
    proc = _rows("SELECT proc FROM sessions WHERE name = 'organise-papers'")
    assert round(100 * float(proc[0][0]), 2) == 66.67  # type: ignore[arg-type]


def test_alone_is_marked_and_kept_apart_in_reports(built: CliRunner) -> None:
    out = _run(built, "--session", "organise-papers", "--alone", "--run-id", "alone")
    assert "1 session(s) ran without their dependencies (--alone)" in out
    rows = _rows("SELECT name, json_extract_string(extra, '$.context'), "
                 "json_extract(extra, '$.missing_dependencies') FROM sessions")
    assert len(rows) == 1 and rows[0][:2] == ("organise-papers", "alone")
    assert "tool-use-reading" in str(rows[0][2]) and "think-with-image" in str(rows[0][2])
    _run(built, "--run-id", "full", "--quiet")
    rep = built.invoke(cli, ["report", "summary", "proc-comp", "--db", "b.duckdb", "--run",
                             "all", "--format", "json"])
    assert rep.exit_code == 0, rep.output
    assert "Run alone, without their dependencies" in rep.output
    con = duckdb.connect("b.duckdb")
    from benchpack.reports.views import install_views
    install_views(con)
    counted = con.execute("SELECT run_id, count(*) FROM session_results GROUP BY ALL "
                          "ORDER BY ALL").fetchall()
    alone = con.execute("SELECT run_id, name FROM alone_results").fetchall()
    con.close()
    assert counted == [("full", 3)]  # the alone session is not averaged with the full ones
    assert alone == [("alone", "organise-papers")]


def test_alone_without_session_is_a_cli_error(built: CliRunner) -> None:
    out = built.invoke(cli, ["run", "build", "--agent", "scripted:x.yaml", "--alone"])
    assert out.exit_code == 1 and "✗ --alone" in out.output and "Traceback" not in out.output
