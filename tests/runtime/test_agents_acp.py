"""`acp:` (issue 14): a harness speaking the Agent Client Protocol on its stdio, driven with
the `acp` library. The agent under test is `harnesses/acp_echo_agent.py`, written with the same
library and the official MCP client: it reports a built-in read, asks permission for a built-in
shell command, calls session tools over the MCP server handed to it in `session/new`, and
streams its answer in 7-character chunks."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import mcp_agents
import pytest
from test_agents_cmd import FakeTools, _alive, needs_proc
from test_mcp_server import CALLS as MCP_CALLS
from test_mcp_server import _processes_mentioning

from benchpack.compiler import compile_pack
from benchpack.runtime.agents.acp_agent import (
    AcpAgent,
    parse_argument,
    session_tool_matcher,
)
from benchpack.runtime.agents.registry import AgentContext, AgentRegistry
from benchpack.runtime.llm import LLMClient, LLMConfig
from benchpack.runtime.runner import RunOptions, run_plan
from benchpack.runtime.types import SessionBrief

ROOT = Path(__file__).resolve().parents[2]
ECHO = Path(__file__).with_name("harnesses") / "acp_echo_agent.py"
CHINESE = "请把菜单价格写下来"


def _command(tmp_path: Path, calls: list[Any] | None = None) -> str:
    args = [sys.executable, str(ECHO)]
    if calls is not None:
        path = tmp_path / "calls.json"
        path.write_text(json.dumps(calls, ensure_ascii=False), "utf-8")
        args.append(str(path))
    return shlex.join(args)


def _agent(argument: str) -> AcpAgent:
    from benchpack.runtime.agents.acp_agent import make_adapter

    return make_adapter(argument, AgentContext(llm=lambda: LLMClient(LLMConfig(
        api_base="http://127.0.0.1:9/v1", api_key="unused", max_retries=0))))


def _brief(tools: FakeTools, timeout: float = 30.0) -> SessionBrief:
    return SessionBrief(session_id="s1", name="s1", protocol="intent_tracking", repeat=0,
                        system_prompt="You are the shop's assistant.", prior=[], tools=tools,
                        max_steps=5, turn_timeout_s=timeout, seed=0)


def _events(reply: Any) -> list[dict[str, Any]]:
    return [json.loads(m.content) for m in reply.messages
            if m.role == "tool" and m.name == "harness"]


# --------------------------------------------------------------------------- the argument


def test_argument_options_and_mistakes(tmp_path: Path) -> None:
    o = parse_argument("--model openai/m --pass-env GH_TOKEN --allow-builtin-tools --mcp stdio "
                       "-- my-agent --acp")
    assert (o.model, o.pass_env, o.allow_builtin_tools, o.mcp, o.command) == (
        "openai/m", ("GH_TOKEN",), True, "stdio", "my-agent --acp")
    assert parse_argument("gemini --experimental-acp").allow_builtin_tools is False
    for bad, says in [("--nope x", "unknown option `--nope`"), ("--mcp sse x", "--mcp takes"),
                      ("--model", "needs a value"), ("--allow-builtin-tools", "needs a command"),
                      ("--pass-env A=1 x", "give a variable's name"),
                      ("'unclosed", "cannot split")]:
        with pytest.raises(ValueError, match=says) as info:
            parse_argument(bad)
        assert "\n" not in str(info.value)
    registry = AgentRegistry(group=None)
    ctx = AgentContext(llm=lambda: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="not found on PATH") as info:
        registry.create("acp:no-such-agent-xyz --acp", ctx)
    assert "\n" not in str(info.value)
    assert "acp:" in registry.usage()


def test_which_permission_titles_name_a_session_tool() -> None:
    ours = session_tool_matcher(["read_file", "desk__get_ticket"])
    for title in ["read_file", "mcp__benchpack__read_file", "benchpack/desk__get_ticket",
                  "benchpack.read_file", "benchpack:read_file", " read_file ",
                  "read_file (benchpack MCP Server)"]:
        assert ours(title), title
    for title in ["Read", "read_file_2", "mcp__other__read_file", "rm -rf / # read_file",
                  "Run `read_file`", "", None, "读取 read_file"]:
        assert not ours(title), title
    assert not session_tool_matcher([])("read_file")


# --------------------------------------------------------------------------- one session


async def _session(argument: str, turns: list[str], timeout: float = 30.0
                   ) -> tuple[list[Any], Any, FakeTools]:
    agent = _agent(argument)
    tools = FakeTools()
    session = await agent.open(_brief(tools, timeout))
    replies = []
    try:
        for k, text in enumerate(turns, start=1):
            tools.turn = k
            replies.append(await session.turn(text, None))
    finally:
        await session.close()
        await agent.aclose()
    return replies, session, tools


@pytest.mark.slow
def test_reply_is_the_chunks_builtin_calls_are_events_and_policy_denies(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-key-must-not-reach-the-agent")
    command = _command(tmp_path, [["echo", {"x": CHINESE}], ["echo", {"y": 2}]])
    replies, session, tools = asyncio.run(_session(command, [CHINESE, "again"]))
    first, second = replies
    # the answer is the chunks, in order (7 characters each: 中文 splits mid-sentence)
    assert first.text == (f"Echo: {CHINESE} | shell=refused | calls=2 | context=2 | "
                          "mcp=http | proxy=yes | 中文 ok")
    assert (first.stop_reason, first.error) == ("answer", None)
    # context=2: the system prompt came as a leading block of the first prompt only
    assert "context=1" in second.text and "calls=0" in second.text
    # the session tools, called over MCP, are the toolbox's records (and nothing else is)
    assert [(r.tool_name, r.call, r.turn) for r in tools.records] == [
        ("echo", {"x": CHINESE}, 1), ("echo", {"y": 2}, 1)]
    assert [r.call for r in first.tool_records] == [{"x": CHINESE}, {"y": 2}]
    assert second.tool_records == [] and first.steps == 3
    # built-in calls: recorded, with the permission decision; the shell was refused
    events = _events(first)
    assert [(e["title"], e["kind"], e["status"], e["permission"], e["session_tool"])
            for e in events] == [
        ("Read notes/menu.md", "read", "completed", None, False),
        ("Run `ls -la`", "execute", "failed", "denied", False),
        ("mcp__benchpack__echo", "other", "completed", "allowed", True),
        ("mcp__benchpack__echo", "other", "completed", "allowed", True)]
    assert events[0]["input"] == {"path": "notes/menu.md"}
    assert events[0]["output"] == "Crème brûlée 6 €"
    assert len(_events(second)) == 2 and len(session.events) == 6
    # the reply's messages end with the answer; tool events are `tool` rows, never assistant
    # tool calls of the benchmark's tools (those are the MCP records')
    assert first.messages[-1].role == "assistant" and first.messages[-1].content == first.text
    bench_calls = [c for m in first.messages if m.tool_calls for c in m.tool_calls]
    assert [c["name"] for c in bench_calls] == ["echo", "echo"]


@pytest.mark.slow
def test_allow_builtin_tools_and_the_stdio_mcp_server(tmp_path: Path) -> None:
    command = _command(tmp_path, [["echo", {"z": "ü"}]])
    replies, _, tools = asyncio.run(_session(
        f"--allow-builtin-tools --mcp stdio {command}", ["go"]))
    assert "shell=ran" in replies[0].text and "mcp=stdio" in replies[0].text
    assert "calls=1" in replies[0].text and [r.call for r in tools.records] == [{"z": "ü"}]
    assert _events(replies[0])[1]["permission"] == "allowed"


def test_step_budget_holds_over_mcp(tmp_path: Path) -> None:
    """max_steps is 5: the 6th and 7th session-tool calls of the turn are refused (a tool error
    the agent sees), not run and not recorded; the turn ends as a step-budget stop."""
    command = _command(tmp_path, [["echo", {"n": i}] for i in range(7)])
    replies, _, tools = asyncio.run(_session(command, ["go"]))
    assert [r.call for r in tools.records] == [{"n": i} for i in range(5)]
    assert replies[0].stop_reason == "step_budget"


@needs_proc
@pytest.mark.slow
def test_timeouts_cancel_then_kill_and_a_crash_is_an_error(tmp_path: Path) -> None:
    command = _command(tmp_path)
    # WAIT honours session/cancel: the turn times out, the session goes on
    replies, session, _ = asyncio.run(_session(command, ["WAIT", "after"], timeout=1.0))
    assert [r.stop_reason for r in replies] == ["timeout", "answer"]
    assert replies[1].text.startswith("Echo: after")
    # HANG ignores it: killed after the grace, later turns fail at once with why
    import benchpack.runtime.agents.acp_agent as acp_agent

    old, acp_agent.CANCEL_GRACE_S = acp_agent.CANCEL_GRACE_S, 0.5
    try:
        started = time.monotonic()
        replies, session, _ = asyncio.run(_session(command, ["HANG", "after"], timeout=1.0))
    finally:
        acp_agent.CANCEL_GRACE_S = old
    assert time.monotonic() - started < 10
    assert [r.stop_reason for r in replies] == ["timeout", "error"]
    assert "did not answer session/cancel" in (replies[1].error or "")
    # CRASH: an agent error with the exit code and the stderr tail
    replies, session, _ = asyncio.run(_session(command, ["CRASH", "after"]))
    assert [r.stop_reason for r in replies] == ["error", "error"]
    assert "exited with code 3" in replies[0].error and "boom" in replies[0].error
    for s in (session,):
        assert all(not _alive(p) for p in s.pids)
        assert not s.iso.root.exists()


# --------------------------------------------------------------------------- through bench run


@pytest.fixture(scope="module")
def claw_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("claw")
    res = compile_pack(ROOT / "taskpacks" / "claw-ops-desk", dest, use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    return dest


def _run(plan: Path, agent: str, session: str, tmp_path: Path, name: str
         ) -> tuple[list[Any], list[Any], list[Any]]:
    db = tmp_path / f"{name}.duckdb"
    summary = run_plan(RunOptions(
        plan=plan, agent=agent, simulator="rules", judge="rules", db=db, progress=False,
        cache_dir=tmp_path / "cache", allow_python=True, sessions=[session], alone=True,
        run_id=name, work_dir=tmp_path / f"work-{name}"))
    assert summary.errors == 0 and summary.finished == 1, summary
    con = duckdb.connect(str(db), read_only=True)
    try:
        cols = [c[0] for c in con.execute("DESCRIBE tool_calls").fetchall()]
        keep = [c for c in cols if c not in ("run_id", "started_at", "duration_s")]
        rows = con.execute(f"SELECT {', '.join(keep)} FROM tool_calls ORDER BY seq").fetchall()
        sess = con.execute("SELECT tool_calls, comp, score, passed, status FROM sessions"
                           ).fetchall()
        harness = con.execute("SELECT turn, content FROM messages WHERE role = 'tool' AND "
                              "name = 'harness' ORDER BY seq").fetchall()
        return [rows, sess], harness, con.execute(
            "SELECT turn, content FROM messages WHERE role = 'assistant' AND content <> '' "
            "ORDER BY seq").fetchall()
    finally:
        con.close()


@pytest.mark.slow
def test_bench_run_acp_stores_the_native_tool_calls(claw_plan: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    session, calls = MCP_CALLS["claw-ops-desk"]
    monkeypatch.setattr(mcp_agents, "CALLS", calls)
    native, none, _ = _run(claw_plan, "python:mcp_agents:native", f"*{session}*", tmp_path,
                           "native")
    over, harness, said = _run(claw_plan, f"acp:{_command(tmp_path, calls)}", f"*{session}*",
                               tmp_path, "acp")
    assert none == []
    # same tool_calls rows (every column but run id and timings) and the same session counts
    # and scores: the built-in events did not add to `tool_calls` (5, not 5 + 2 per turn)
    assert over == native and native[1][0][0] == len(calls)
    events = [json.loads(c) for _, c in harness]
    builtin = [e for e in events if not e["session_tool"]]
    assert {e["title"] for e in builtin} == {"Read notes/menu.md", "Run `ls -la`"}
    assert all(e["permission"] == "denied" for e in builtin if e["kind"] == "execute")
    assert sum(e["session_tool"] for e in events) == len(calls)
    assert said and said[0][1].startswith("Echo: ") and said[0][1].endswith("中文 ok")


# a session that lasts: the echo agent starts a `sleep` child and hangs on its first prompt
@needs_proc
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killing_bench_run_leaves_no_agent_behind(claw_plan: Path, tmp_path: Path,
                                                  sig: int) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    marker = f"acp-kill-{sig}-{os.getpid()}"
    calls = tmp_path / marker
    calls.write_text("[]", "utf-8")
    agent = "acp:--pass-env PIDS --mcp stdio " + shlex.join([sys.executable, str(ECHO),
                                                              str(calls)])
    plan_dir = tmp_path / "plan"
    pack = tmp_path / "pack"
    pack.mkdir()
    from test_agents_cmd import PACK

    (pack / "pack.yaml").write_text(PACK.replace("Check the menu prices for me.",
                                                 "HANG, and check the menu prices."), "utf-8")
    assert compile_pack(pack, plan_dir, use_cache=False).ok
    proc = subprocess.Popen([sys.executable, "-m", "benchpack.cli", "run", str(plan_dir),
                             "--agent", agent, "--db", str(tmp_path / "r.duckdb"), "--quiet",
                             "--cache-dir", str(tmp_path / "cache"), "--session", "prices"],
                            cwd=tmp_path, env={**os.environ, "PIDS": str(pids)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not any(pids.iterdir()):
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.05)
    harness, child = (int(x) for x in next(pids.iterdir()).name.split("-"))
    time.sleep(0.5)  # the first prompt is under way
    assert _alive(harness) and _alive(child) and _processes_mentioning(marker)
    proc.send_signal(sig)
    proc.communicate(timeout=30)
    if sig == signal.SIGTERM:
        assert proc.returncode == 130
    deadline = time.time() + 5
    while (_alive(harness) or _alive(child) or _processes_mentioning(marker)) and \
            time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(harness) and not _alive(child) and not _processes_mentioning(marker)
