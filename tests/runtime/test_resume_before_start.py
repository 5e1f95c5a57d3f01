"""Issue 27: a run killed before it started (here: while its agent module was importing)
leaves a run `--resume RUN_ID` finds. Before, the run row was written only after every check
and the agent's construction: `--resume` answered "no run `X`" for a run the user had named
with `--run-id` and seen start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb

from benchpack.compiler import compile_pack
from conftest import TASKPACKS

PACK = TASKPACKS / "pharmacist-week"
SLOW_AGENT = """
import time
time.sleep(120)  # the kill comes first

async def agent(brief, message, event):
    return "Done."
"""
AGENT = """
async def agent(brief, message, event):
    return "Done."
"""


def _run(tmp: Path, module: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "benchpack.cli", "run", str(tmp / "plan"), "--agent",
         f"python:{module}:agent", "--simulator", "rules", "--judge", "rules", "--db",
         str(tmp / "b.duckdb"), "--quiet", "--cache-dir", str(tmp / "cache"), *extra],
        cwd=tmp, env={**os.environ, "PYTHONPATH": str(tmp)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)


def test_a_run_killed_before_it_started_can_be_resumed(tmp_path: Path) -> None:
    assert compile_pack(PACK, tmp_path / "plan", use_cache=False).ok
    module = tmp_path / "my_agent.py"
    module.write_text(SLOW_AGENT, encoding="utf-8")
    proc = _run(tmp_path, "my_agent", "--run-id", "named")
    deadline = time.monotonic() + 60
    while not (tmp_path / "b.duckdb").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(2.0)  # well into the agent's import
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    module.write_text(AGENT, encoding="utf-8")  # the same agent, now importing at once
    done = _run(tmp_path, "my_agent", "--resume", "named")
    _, err = done.communicate(timeout=300)
    # the agent says only "Done.": sessions finish with low scores (or the agent's errors)
    assert done.returncode in (0, 1), err
    assert "no run `named`" not in err and "internal error" not in err, err
    con = duckdb.connect(str(tmp_path / "b.duckdb"), read_only=True)
    try:
        runs = con.execute("SELECT run_id, status, agent FROM runs").fetchall()
        sessions = con.execute("SELECT count(*) FROM sessions WHERE run_id = 'named'"
                               ).fetchone()[0]
    finally:
        con.close()
    assert [(r[0], r[2]) for r in runs] == [("named", "python:my_agent:agent")], runs
    assert runs[0][1] in ("finished", "partial"), runs
    assert sessions == 8
