"""A run killed with SIGKILL at random moments, then resumed, loses and duplicates nothing."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from benchpack.compiler import compile_pack

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "pibench_case"

SLOW_AGENT = '''
import asyncio

async def agent(brief, message, event):
    await asyncio.sleep(0.15)
    if message and "accepted_papers" in message:
        await brief.tools.call("read_file", {"path": "accepted_papers.txt"})
    return "Noted: " + (message or "event")[:40]
'''


def _bench(*args: str, cwd: Path) -> subprocess.Popen[bytes]:
    tmp = cwd / "tmp"  # the runs' temporary directory, checked for leftovers at the end
    tmp.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(cwd), "TMPDIR": str(tmp)}
    return subprocess.Popen([sys.executable, "-m", "benchpack.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)


def _run_exists(db: Path, run_id: str) -> bool:
    if not db.exists():
        return False
    try:
        con = duckdb.connect(str(db), read_only=True)
    except duckdb.Error:
        return False
    try:
        return con.execute("SELECT count(*) FROM runs WHERE run_id=?", [run_id]).fetchone() == (1,)
    except duckdb.Error:
        return False
    finally:
        con.close()


def _snapshot(db: Path, run_id: str) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    con = duckdb.connect(str(db), read_only=True)
    sessions = con.execute(
        "SELECT session_id, repeat, status, turns, completed, inferred, provided, comp "
        "FROM sessions WHERE run_id=? ORDER BY session_id, repeat", [run_id]).fetchall()
    intents = con.execute(
        "SELECT session_id, repeat, intent_id, status, turn, count(*) FROM intent_status "
        "WHERE run_id=? GROUP BY ALL ORDER BY ALL", [run_id]).fetchall()
    con.close()
    return sessions, intents


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume(tmp_path: Path) -> None:
    plan = tmp_path / "plan"
    assert compile_pack(CASE, plan, use_cache=False).ok
    (tmp_path / "slow_agent.py").write_text(SLOW_AGENT)
    common = ["run", str(plan), "--agent", "python:slow_agent:agent", "--judge", "rules",
              "--repeats", "3", "--max-concurrency", "2", "--quiet",
              "--cache-dir", str(tmp_path / "cache")]

    # reference: one uninterrupted run
    ref = _bench(*common, "--db", str(tmp_path / "ref.duckdb"), "--run-id", "r", cwd=tmp_path)
    assert ref.wait(timeout=120) == 0, ref.stderr.read() if ref.stderr else ""
    expected = _snapshot(tmp_path / "ref.duckdb", "r")
    assert len(expected[0]) == 9

    db = tmp_path / "killed.duckdb"
    rng = random.Random(7)
    kills = 0
    for _attempt in range(12):
        args = [*common, "--db", str(db), "--run-id", "k"]
        if _run_exists(db, "k"):
            args += ["--resume", "k"]
        proc = _bench(*args, cwd=tmp_path)
        time.sleep(rng.uniform(0.6, 2.5))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            kills += 1
            continue
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
        break
    else:  # still unfinished after the kills: finish without interruption
        resume = ["--resume", "k"] if _run_exists(db, "k") else []
        proc = _bench(*common, "--db", str(db), "--run-id", "k", *resume, cwd=tmp_path)
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    assert kills >= 2, "the run finished before it could be killed; slow the agent down"
    got = _snapshot(db, "k")
    assert got == expected  # nothing lost, nothing counted twice
    # each killed run left its work directory; the next run removed it (`tmpdirs.sweep`)
    assert sorted(p.name for p in (tmp_path / "tmp").iterdir()
                  if p.name.startswith("benchpack-")) == []
