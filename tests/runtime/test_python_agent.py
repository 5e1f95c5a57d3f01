"""`python:<module>:<callable>` finds a module in the directory `bench` runs from, as
`python -m` would, without PYTHONPATH."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchpack.cli import cli


def test_a_module_in_the_current_directory_is_found(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    (tmp_path / "cwd_agent_mod.py").write_text(
        "async def agent(brief, message, event):\n    return 'Noted: ' + (message or '')\n")
    runner = CliRunner()
    assert runner.invoke(cli, ["init", "p"]).exit_code == 0
    assert runner.invoke(cli, ["compile", "p", "-o", "build"]).exit_code == 0
    out = runner.invoke(cli, ["run", "build", "--agent", "python:cwd_agent_mod:agent",
                              "--quiet", "--db", "a.duckdb", "--cache-dir", "cache"])
    assert "cannot import" not in out.output, out.output
    assert "2 finished" in out.output, out.output
