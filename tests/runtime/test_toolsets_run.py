"""Python toolsets and the shell wired into runs (issue 12, parts 1 and 6): a scripted agent
calls a pack module's tools with business rules and the shell; calls are recorded like any
other, state changes land in the service state (snapshots, resume), workers never outlive
their episode, and runs refuse to start without --allow-python."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchpack.compiler import compile_pack
from benchpack.runtime.env import ServiceState
from benchpack.runtime.env.pytools import PyToolWorker, bindings
from benchpack.runtime.sandbox import find_bwrap
from benchpack.specs.plan import PlanService
from benchpack.specs.pytools import read_tools
from conftest import bench_run, store_rows

SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "toolset_shop"
needs_bwrap = pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap is not available")


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    out = tmp_path / "plan"
    result = compile_pack(SHOP, out, use_cache=False)
    assert result.ok, [d.format() for d in result.diagnostics]
    return out


def _run(plan: Path, tmp_path: Path, agent: str, **kw: object) -> Path:
    return bench_run(plan, tmp_path, agent=agent, judge="rules", run_id="r", **kw)[0]


def _state(db: Path, session: str) -> dict[str, object]:
    (state,) = store_rows(db, "SELECT state FROM snapshots WHERE session_id = "
                         f"'session.toolset-shop.support.{session}'")[0]
    return json.loads(state)["services"]["shop"]  # type: ignore[arg-type]


@needs_bwrap
def test_scripted_agent_uses_python_tools_and_shell(plan: Path, tmp_path: Path) -> None:
    db = _run(plan, tmp_path, f"scripted:{SHOP / 'agent.yaml'}", allow_python=True)
    calls = store_rows(db, "SELECT session_id, tool_name, effect, call, result, error FROM "
                      "tool_calls ORDER BY session_id, seq")
    got = [(s.rsplit(".", 1)[1], n, e, json.loads(c), json.loads(r), err)
           for s, n, e, c, r, err in calls]
    order = {"order_id": "#W1", "user_id": "u1", "total": 30}
    assert got == [
        ("cancel", "get_order_details", "read", {"order_id": "#W1"},
         {**order, "status": "pending"}, None),
        ("cancel", "cancel_pending_order", "write",
         {"order_id": "#W1", "reason": "ordered by mistake"},
         {**order, "status": "cancelled", "reason": "ordered by mistake"}, None),
        ("cancel", "shell", "write", {"command": "cat notes.md; echo 取消 > done.txt; exit 3"},
         {"exit_code": 3, "stdout": "Orders of Ana: #W1 (pending), #W2 (delivered).\n",
          "stderr": "", "truncated": False}, None),
        # the business rule's ToolError reaches the agent as the call's error
        ("refund", "cancel_pending_order", "write",
         {"order_id": "#W2", "reason": "no longer needed"}, None,
         "Non-pending order cannot be cancelled"),
        ("refund", "shell", "write", {"command": "cat done.txt"},
         {"exit_code": 0, "stdout": "取消\n", "stderr": "", "truncated": False}, None),
    ]
    # by hand: balance 100 + the cancelled order's 30; #W2 untouched (the refused call
    # changed nothing)
    for session in ("cancel", "refund"):
        state = _state(db, session)
        assert state["users"] == [{"user_id": "u1", "name": "Ana Lopez", "balance": 130}]
        assert [o["status"] for o in state["orders"]] == ["cancelled", "delivered"]  # type: ignore[index]
    scores = store_rows(db, "SELECT name, score, passed FROM sessions ORDER BY name")
    assert scores == [("cancel", 1.0, True), ("refund", 1.0, True)]


@needs_bwrap
def test_an_agent_that_only_says_done_changes_nothing(plan: Path, tmp_path: Path) -> None:
    script = tmp_path / "done.yaml"
    script.write_text("default:\n  - say: Done.\n")
    db = _run(plan, tmp_path, f"scripted:{script}", allow_python=True)
    assert store_rows(db, "SELECT count(*) FROM tool_calls") == [(0,)]
    assert _state(db, "refund")["users"] == [{"user_id": "u1", "name": "Ana Lopez",
                                              "balance": 100}]
    assert store_rows(db, "SELECT name, score, passed FROM sessions ORDER BY name") == [
        ("cancel", 0.0, False), ("refund", 0.0, False)]


def test_run_without_allow_python_stops_before_it_starts(plan: Path, tmp_path: Path) -> None:
    db = tmp_path / "refused.duckdb"
    proc = subprocess.run([sys.executable, "-m", "benchpack.cli", "run", str(plan), "--agent",
                           f"scripted:{SHOP / 'agent.yaml'}", "--db", str(db), "--quiet"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("✗ ") and "Traceback" not in proc.stderr
    assert "--allow-python" in proc.stderr and "`cancel_pending_order`" in proc.stderr
    assert "`shell`" in proc.stderr
    assert not db.exists()


# --------------------------------------------------------------------------- worker


@needs_bwrap
def test_a_cancelled_call_does_not_hand_its_answer_to_the_next_call() -> None:
    """The toolbox's own time limit cancels a call while the worker still computes; the
    worker's late answer must not become the next call's result."""
    source = ('import time\nfrom benchpack_tools import State\n\n\n'
              'def slow(db: State, x: str) -> str:\n    """Slow."""\n    time.sleep(1.5)\n'
              '    return "slow " + x\n\n\n'
              'def fast(db: State, x: str) -> str:\n    """Fast."""\n    return "fast " + x\n')
    state = ServiceState(PlanService(name="s", tables={}, operations=[]))
    worker = PyToolWorker(source, bindings(read_tools(source).tools), state,
                          allow_python=True)

    async def go() -> str:
        try:
            await worker.call("fast", {"x": "warm-up"})
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(worker.call("slow", {"x": "1"}), 0.5)
            return str(await worker.call("fast", {"x": "2"}))
        finally:
            await worker.aclose()

    assert asyncio.run(go()) == "fast 2"


# --------------------------------------------------------------------------- kill -9, resume

SLOW_AGENT = '''
import asyncio, os
from pathlib import Path

async def agent(brief, message, event):
    tools = brief.tools
    if "#W1" in (message or ""):
        await tools.call("cancel_pending_order", {"order_id": "#W1", "reason": "ordered by mistake"})
        return "Cancelled #W1. Done."
    await tools.call("get_order_details", {"order_id": "#W1"})
    await tools.call("cancel_pending_order", {"order_id": "#W2", "reason": "no longer needed"})
    flag = Path(os.environ["SHOP_FLAG"])
    if flag.exists():  # the killed run: the worker is up, wait to be killed
        Path(os.environ["SHOP_READY"]).write_text("ready")
        await asyncio.sleep(60)
    return "#W2 cannot be cancelled."
'''


def _bench(tmp_path: Path, db: str, *extra: str, slow: bool) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "TMPDIR": str(tmp_path / "tmp"),
           "SHOP_FLAG": str(tmp_path / ("slow" if slow else "fast")),
           "SHOP_READY": str(tmp_path / "ready")}
    return subprocess.Popen(
        [sys.executable, "-m", "benchpack.cli", "run", str(tmp_path / "plan"), "--agent",
         "python:shop_agent:agent", "--judge", "rules", "--allow-python", "--quiet",
         "--db", str(tmp_path / db), "--run-id", "r", "--cache-dir", str(tmp_path / "cache"),
         *extra], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True)


def _ours(tmp_path: Path) -> list[int]:
    """Processes whose command line names this test's directory (bwrap binds the worker's
    directory, which is under our TMPDIR): other engineers' workers are not ours."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            status = (entry / "status").read_text()
        except OSError:
            continue
        if str(tmp_path / "tmp").encode() in cmd and "State:\tZ" not in status:
            out.append(int(entry.name))
    return out


def _result(db: Path) -> tuple[list[tuple[object, ...]], ...]:
    return (
        store_rows(db, "SELECT session_id, status, score, passed, tool_calls FROM sessions "
                  "ORDER BY session_id"),
        store_rows(db, "SELECT session_id, seq, tool_name, call, result, error FROM tool_calls "
                  "ORDER BY session_id, seq"),
        store_rows(db, "SELECT session_id, state FROM snapshots ORDER BY session_id"),
    )


@needs_bwrap
@pytest.mark.slow
def test_kill_9_mid_run_leaves_no_worker_and_resumes_exactly(plan: Path,
                                                              tmp_path: Path) -> None:
    (tmp_path / "shop_agent.py").write_text(SLOW_AGENT)
    (tmp_path / "tmp").mkdir()
    ref = _bench(tmp_path, "ref.duckdb", slow=False)
    assert ref.wait(timeout=120) == 0, ref.stderr.read() if ref.stderr else ""
    expected = _result(tmp_path / "ref.duckdb")
    assert [r[1] for r in expected[0]] == ["finished", "finished"]

    (tmp_path / "slow").write_text("1")
    killed = _bench(tmp_path, "killed.duckdb", slow=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / "ready").exists():
        assert killed.poll() is None, killed.stderr.read() if killed.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert _ours(tmp_path), "the tool worker should be running now"
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _ours(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _ours(tmp_path) == []

    (tmp_path / "slow").unlink()
    resumed = _bench(tmp_path, "killed.duckdb", "--resume", "r", slow=False)
    assert resumed.wait(timeout=120) == 0, resumed.stderr.read() if resumed.stderr else ""
    got = _result(tmp_path / "killed.duckdb")
    assert got == expected
    assert _ours(tmp_path) == []
    shutil.rmtree(tmp_path / "tmp", ignore_errors=True)
