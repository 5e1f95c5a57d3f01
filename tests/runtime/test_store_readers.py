"""`bench query` / `bench report` while `bench run` writes the same store: the writer steps
aside between commits, readers get in, the run loses nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchpack.compiler import compile_pack
from benchpack.reports.access import READ_REQUEST_SUFFIX as READER_SIDE
from benchpack.reports.api import run_query
from benchpack.runtime.store import READ_REQUEST_SUFFIX as WRITER_SIDE

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "pibench_case"

SLOW_AGENT = '''
import asyncio

async def agent(brief, message, event):
    await asyncio.sleep(0.1)
    return "Noted: " + (message or "event")[:40]
'''


def test_both_sides_agree_on_the_request_file() -> None:
    assert READER_SIDE == WRITER_SIDE


@pytest.mark.slow
def test_queries_succeed_while_a_run_writes(tmp_path: Path) -> None:
    plan = tmp_path / "plan"
    assert compile_pack(CASE, plan, use_cache=False).ok
    (tmp_path / "slow_agent.py").write_text(SLOW_AGENT)
    db = tmp_path / "bench.duckdb"
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchpack.cli", "run", str(plan), "--agent",
         "python:slow_agent:agent", "--repeats", "4", "--max-concurrency", "1", "--quiet",
         "--db", str(db), "--run-id", "r", "--cache-dir", str(tmp_path / "cache")],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        seen: list[int] = []
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if db.exists():
                started = time.monotonic()
                n = run_query(db, "SELECT count(*) FROM sessions", wait_s=20).rows[0][0]
                assert time.monotonic() - started < 5  # about one commit, not the whole run
                seen.append(int(n))
            time.sleep(0.3)
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(seen) >= 3, "the run finished before it could be queried; slow the agent down"
    assert seen == sorted(seen)  # committed sessions only ever grow
    assert any(n < 12 for n in seen)  # read mid-run, not after it
    assert not Path(f"{db}{WRITER_SIDE}").exists()
    assert run_query(db, "SELECT count(*) FROM sessions").rows[0][0] == 12  # 3 sessions × 4
