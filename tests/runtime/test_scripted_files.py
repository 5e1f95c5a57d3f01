"""`scripted:` and `replay:` files: unreadable or malformed files are the user's mistake
(a message naming the file, exit 1), and a transcript written from the `messages` table, whose
`tool_calls` column is a JSON string, replays."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.runtime.agents.scripted import ReplayAgent, ScriptedAgent, ScriptError


def test_missing_and_malformed_files_are_script_errors(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match=r"nope\.yaml: no such script file"):
        ScriptedAgent(tmp_path / "nope.yaml")
    with pytest.raises(ScriptError, match=r"nope\.jsonl: no such replay file"):
        ReplayAgent(tmp_path / "nope.jsonl")
    bad = tmp_path / "bad.yaml"
    bad.write_text("sessions: [unclosed\n")
    with pytest.raises(ScriptError, match=r"bad\.yaml:\d+:\d+: not valid YAML"):
        ScriptedAgent(bad)
    row = tmp_path / "row.jsonl"
    row.write_text('{"role": "assistant", "content": "hi"}\n')
    with pytest.raises(ScriptError, match=r"row\.jsonl:1: not a transcript message"):
        ReplayAgent(row)


def test_replay_reads_tool_calls_as_stored(tmp_path: Path) -> None:
    stored = json.dumps([{"id": "c1", "name": "read_file", "arguments": {"path": "a.md"}}])
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"session_id": "s", "repeat": 0, "turn": 1, "role": "assistant",
                                "content": "", "tool_calls": stored}) + "\n" +
                    json.dumps({"session_id": "s", "repeat": 0, "turn": 1, "role": "assistant",
                                "content": "Done.", "tool_calls": None}) + "\n")
    agent = ReplayAgent(path)
    assert agent.by_session == {("s", 0): {1: {
        "say": "Done.", "tool_calls": [{"name": "read_file", "args": {"path": "a.md"}}]}}}


def test_run_with_a_missing_script_exits_1(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(cli, ["init", "p"]).exit_code == 0
    assert runner.invoke(cli, ["compile", "p", "-o", "build"]).exit_code == 0
    out = runner.invoke(cli, ["run", "build", "--agent", "scripted:missing.yaml", "--quiet"])
    assert out.exit_code == 1, out.output
    assert "missing.yaml: no such script file" in out.output


def test_a_session_the_script_does_not_cover_is_an_error(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A misspelt session name must not let the session "finish" with empty replies."""
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(cli, ["init", "p"]).exit_code == 0
    assert runner.invoke(cli, ["compile", "p", "-o", "build"]).exit_code == 0
    script = tmp_path / "agent.yaml"
    script.write_text("sessions:\n  handover:\n    - say: Done.\n")
    out = runner.invoke(cli, ["run", "build", "--agent", f"scripted:{script}", "--quiet",
                              "--db", "a.duckdb"])
    assert "no turns for session `refill-triage`" in out.output, out.output
    assert "Traceback" not in out.output
    # with `default:` the unlisted sessions get its turns (a misspelt key is refused before
    # the run: test_script_sessions_are_checked_against_the_plan_before_a_run)
    script.write_text("sessions:\n  handover:\n    - say: Done.\ndefault:\n  - say: OK.\n")
    out = runner.invoke(cli, ["run", "build", "--agent", f"scripted:{script}", "--quiet",
                              "--db", "b.duckdb"])
    assert "no turns for session" not in out.output and "Traceback" not in out.output


def test_script_sessions_are_checked_against_the_plan_before_a_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(cli, ["init", "p"]).exit_code == 0
    assert runner.invoke(cli, ["compile", "p", "-o", "build"]).exit_code == 0
    script = tmp_path / "agent.yaml"
    script.write_text("sessions:\n  refill-triage:\n    - say: Done.\n"
                      "  refill-triag:\n    - say: Done.\ndefault:\n  - say: OK.\n")
    out = runner.invoke(cli, ["run", "build", "--agent", f"scripted:{script}", "--quiet",
                              "--db", "c.duckdb"])
    assert out.exit_code == 1, out.output
    assert f"{script}:4:3: no session `refill-triag` in the plan" in out.output
    assert "Traceback" not in out.output and not (tmp_path / "c.duckdb").exists()


def test_a_script_out_of_turns_in_a_session_it_covers_is_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # one turn for a session the rules simulator keeps talking in (its hidden intents are not
    # met by "Done."): the second user turn used to get an empty reply, silently scored
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(cli, ["init", "p"]).exit_code == 0
    assert runner.invoke(cli, ["compile", "p", "-o", "build"]).exit_code == 0
    script = tmp_path / "agent.yaml"
    script.write_text("sessions:\n  refill-triage:\n    - say: Done.\ndefault:\n  - say: OK.\n")
    out = runner.invoke(cli, ["run", "build", "--agent", f"scripted:{script}", "--quiet",
                              "--db", "a.duckdb", "--run-id", "r"])
    assert out.exit_code == 1 and "Traceback" not in out.output, out.output
    assert (f"{script}: no turn 2 for session `refill-triage` (the script has 1; add the "
            "turns the agent should say)") in out.output.replace("\n", " "), out.output
    con = duckdb.connect("a.duckdb", read_only=True)
    rows = dict(con.execute("SELECT name, status FROM sessions").fetchall())
    con.close()
    assert rows["refill-triage"] == "error", rows
    # `default:` running out is the same mistake, named by the session it played
    script.write_text("default:\n  - say: OK.\n")
    out = runner.invoke(cli, ["run", "build", "--agent", f"scripted:{script}", "--quiet",
                              "--db", "b.duckdb"])
    assert out.exit_code == 1, out.output
    assert "no turn 2 for session `refill-triage` (`default:` has 1;" in out.output, out.output
