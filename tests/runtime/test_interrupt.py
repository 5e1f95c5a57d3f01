"""Ctrl-C during `bench run`: the sessions committed so far stay, the run is marked
`interrupted` (not left `running`), stderr names the exact command that continues it, and that
command completes the run without storing any session twice."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.compiler import compile_pack, init_pack
from conftest import store_rows

BENCH = [sys.executable, "-m", "benchpack.cli"]

# slow only while SLOW is set: the interrupted run waits in `handover`, its resume does not
AGENT = '''
import asyncio, os, pathlib

async def agent(brief, message, event):
    pathlib.Path(f"started-{brief.name}").touch()
    if os.environ.get("SLOW") and brief.name == "handover":
        await asyncio.sleep(60)
    return "Noted."
'''


def _ctrl_c_heard() -> None:
    """The child hears Ctrl-C as a terminal's foreground job does. A suite started in the
    background of a shell without job control (`cmd &` in a script) ignores SIGINT, and a child
    inherits that: Python then installs no KeyboardInterrupt handler, and the SIGINT below
    would be lost (the run waits out the agent's 60 s)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a subprocess")
def test_ctrl_c_marks_the_run_interrupted_and_resume_completes_it(tmp_path: Path) -> None:
    init_pack(tmp_path / "p", "p")
    assert compile_pack(tmp_path / "p", tmp_path / "build", use_cache=False).ok
    (tmp_path / "slow_agent.py").write_text(AGENT, encoding="utf-8")
    env = {**os.environ, "SLOW": "1", "PYTHONPATH": str(tmp_path), "COLUMNS": "200"}
    proc = subprocess.Popen([*BENCH, "run", "build", "--agent", "python:slow_agent:agent",
                             "--db", "my store.duckdb", "--run-id", "r1", "--quiet"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_heard)
    deadline = time.time() + 60
    while not (tmp_path / "started-handover").exists():
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.05)
    time.sleep(0.3)  # inside the agent's turn
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    db = tmp_path / "my store.duckdb"
    assert store_rows(db, "SELECT status FROM runs") == [("interrupted",)]
    assert store_rows(db, "SELECT name, status FROM sessions") == [("refill-triage", "finished")]
    turns = store_rows(db, "SELECT count(*) FROM turns")[0][0]
    assert "✗ run r1 interrupted: 1 of 2 sessions done" in err, err
    command = next(line for line in err.splitlines() if line.startswith("bench run "))
    assert command == ("bench run build --agent python:slow_agent:agent --db 'my store.duckdb' "
                       "--quiet --resume r1"), err

    # the reports that list runs say so
    report = CliRunner().invoke(cli, ["report", "summary", "--run", "r1", "--db", str(db)],
                                env={"COLUMNS": "200"})
    assert report.exit_code == 0, report.output
    assert "│ interrupted │" in report.output, report.output

    del env["SLOW"]
    argv = shlex.split(command)
    done = subprocess.run([*BENCH, *argv[1:]], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert store_rows(db, "SELECT status FROM runs") == [("finished",)]
    # each session once; the first one's turns were not redone
    assert sorted(store_rows(db, "SELECT name, status FROM sessions")) == [
        ("handover", "finished"), ("refill-triage", "finished")]
    assert store_rows(db, "SELECT count(*) FROM turns WHERE session_id LIKE '%refill-triage'"
                 ) == [(turns,)]
    [(n, distinct)] = store_rows(db, "SELECT count(*), count(DISTINCT (session_id, repeat, turn)) "
                                "FROM turns")
    assert n == distinct > turns
