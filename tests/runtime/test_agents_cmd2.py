"""`cmd2:` (harness adapter v2, issue 14 items 2 and 4): one process per turn, the turn and a
model endpoint (the recording proxy) handed over by environment and config file, a fresh HOME
per session × repeat, credentials scrubbed, the process group killed on every way out."""

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
import pytest
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401
from test_agents_cmd import PACK, FakeTools, _alive, needs_proc

from benchpack.compiler import compile_pack
from benchpack.runtime.agents.cmd2_agent import Cmd2Agent, mcp_factory, parse_argument
from benchpack.runtime.agents.isolation import is_credential, scrub_environment
from benchpack.runtime.cache import ResponseCache
from benchpack.runtime.llm import LLMClient, LLMConfig
from benchpack.runtime.runner import RunOptions, run_plan
from benchpack.runtime.types import LLMCallRecord, Message, SessionBrief

EXAMPLE_V2 = (Path(__file__).resolve().parents[2] / "runtime" / "benchpack" / "runtime"
              / "agents" / "example_harness_v2.py")

# reports what it sees as JSON on stdout; remembers across runs in $HOME/memory.txt
PROBE = '''
import json, os, sys
memory = os.path.join(os.environ["HOME"], "memory.txt")
seen = open(memory, encoding="utf-8").read() if os.path.exists(memory) else None
with open(memory, "a", encoding="utf-8") as f:
    f.write(os.environ["BENCHPACK_USER_MESSAGE"] + "\\n")
config = json.load(open(os.environ["BENCHPACK_CONFIG"], encoding="utf-8"))
out = {"seen": seen, "stdin": sys.stdin.read(), "cwd": os.getcwd(), "config": config,
       "env": {k: v for k, v in os.environ.items()}}
if "MODEL" in out["stdin"]:
    from openai import OpenAI
    r = OpenAI().chat.completions.create(model="whatever",
                                         messages=[{"role": "user", "content": out["stdin"]}])
    out["model_said"] = r.choices[0].message.content
print(json.dumps(out))
'''


def _script(tmp_path: Path, body: str, name: str = "probe.py") -> str:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def _client(fake: FakeOpenAI, tmp_path: Path) -> LLMClient:
    return LLMClient(LLMConfig(api_base=fake.base_url, api_key="no-key", max_retries=0),
                     cache=ResponseCache(tmp_path / "cache"))


def _brief(repeat: int, calls: list[LLMCallRecord], timeout: float = 30.0) -> SessionBrief:
    return SessionBrief(session_id="session.p.e.s", name="s", protocol="intent_tracking",
                        repeat=repeat, system_prompt="Be useful.",
                        prior=[Message("user", "earlier", 1)], tools=FakeTools(),
                        max_steps=5, turn_timeout_s=timeout, seed=7, recorder=calls.append)


def _sessions(agent: Cmd2Agent, plan: list[tuple[int, list[str]]],
              calls: list[LLMCallRecord]) -> list[list[Any]]:
    """Open one session per (repeat, messages), run its turns; every reply per session."""
    async def go() -> list[list[Any]]:
        out = []
        try:
            for repeat, messages in plan:
                brief = _brief(repeat, calls)
                session = await agent.open(brief)
                try:
                    replies = []
                    for i, m in enumerate(messages, 1):
                        brief.tools.turn = i  # type: ignore[attr-defined]
                        replies.append(await session.turn(m, None))
                    out.append(replies)
                finally:
                    await session.close()
        finally:
            await agent.aclose()
        return out

    return asyncio.run(go())


def test_argument_options_and_mistakes() -> None:
    assert parse_argument("--model openai/x --pass-env=GH_TOKEN python h.py -v") == \
        ("openai/x", ["GH_TOKEN"], "python h.py -v", "http")
    assert parse_argument("-- --weird-program") == (None, [], "--weird-program", "http")
    assert parse_argument("--no-mcp python h.py").mcp is None
    assert parse_argument("--mcp-transport stdio python h.py").mcp == "stdio"
    assert parse_argument("--mcp-transport=http python h.py").mcp == "http"
    with pytest.raises(ValueError, match="`--mcp-transport sse`: use http or stdio"):
        parse_argument("--mcp-transport sse python h.py")
    with pytest.raises(ValueError, match="contradict"):
        parse_argument("--no-mcp --mcp-transport stdio python h.py")
    with pytest.raises(ValueError, match="`--no-mcp` takes no value"):
        parse_argument("--no-mcp=1 python h.py")
    with pytest.raises(ValueError, match="unknown option `--modle`"):
        parse_argument("--modle x python h.py")
    with pytest.raises(ValueError, match="give a variable's name, not a value"):
        parse_argument("--pass-env GH_TOKEN=abc python h.py")
    with pytest.raises(ValueError, match="needs a command"):
        parse_argument("--model x")


def test_scrubbing_rules() -> None:
    env = {"PATH": "/bin", "LANG": "C.UTF-8", "OPENAI_API_KEY": "sk-1", "OPENAI_BASE_URL": "u",
           "MY_SERVICE_TOKEN": "t", "DB_PASSWORD": "p", "aws_secret": "s", "GH_TOKEN": "g",
           "ANTHROPIC_BASE_URL": "a", "SSH_AUTH_SOCK": "/s", "HOME": "/root"}
    assert scrub_environment(env, keep=["GH_TOKEN"]) == {
        "PATH": "/bin", "LANG": "C.UTF-8", "GH_TOKEN": "g", "HOME": "/root"}
    assert not is_credential("PYTHONPATH") and is_credential("HF_HOME")


@needs_proc
def test_home_is_fresh_per_repeat_kept_across_turns_and_credentials_scrubbed(
        fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-very-secret-1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-key-must-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-passed-on-purpose")
    fake_openai.route("fake-model", lambda body: "模型: " + body["messages"][-1]["content"],
                      prompt_tokens=21, completion_tokens=4)
    calls: list[LLMCallRecord] = []
    agent = Cmd2Agent(_script(tmp_path, PROBE), llm=lambda: _client(fake_openai, tmp_path),
                      model="openai/fake-model", pass_env=["GITHUB_TOKEN"])
    [r1, r2] = _sessions(agent, [(0, ["first 你好", "second, MODEL please"]),
                                 (1, ["first again"])], calls)
    a1, a2 = (json.loads(r.text) for r in r1)
    b1 = json.loads(r2[0].text)
    # repeat 0 turn 1 wrote $HOME/memory.txt; turn 2 (same session) sees it; repeat 1 does not
    assert a1["seen"] is None and a2["seen"] == "first 你好\n" and b1["seen"] is None
    assert a1["env"]["HOME"] == a2["env"]["HOME"] != b1["env"]["HOME"]
    assert not Path(a1["env"]["HOME"]).exists()  # removed on close
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "TMPDIR"):
        assert a1["env"][name].startswith(str(Path(a1["env"]["HOME"]).parent))
    env = a1["env"]
    assert "MY_SERVICE_TOKEN" not in env and env["GITHUB_TOKEN"] == "ghp-passed-on-purpose"
    assert env["OPENAI_API_KEY"] != "sk-real-key-must-not-leak"
    assert "sk-real-key-must-not-leak" not in json.dumps(a1)
    # the turn, three ways, and the contract's variables
    assert a1["stdin"] == env["BENCHPACK_USER_MESSAGE"] == "first 你好"
    assert a1["config"]["user"]["content"] == "first 你好"
    assert env["BENCHPACK_PROTOCOL_VERSION"] == "2" and env["BENCHPACK_MCP_URL"] == ""
    assert env["OPENAI_BASE_URL"] == env["BENCHPACK_MODEL_BASE_URL"] == \
        a1["config"]["model"]["base_url"]
    assert a1["config"]["mcp"] is None and a1["config"]["tools"][0]["function"]["name"] == "echo"
    assert a2["config"]["history"] == [{"role": "user", "content": "first 你好"},
                                       {"role": "assistant", "content": r1[0].text}]
    assert a2["config"]["prior"] == [{"role": "user", "content": "earlier"}]
    # the model call went through the proxy: recorded with the upstream's tokens, at turn 2
    assert a2["model_said"] == "模型: second, MODEL please"
    assert [(c.role, c.purpose, c.turn, c.prompt_tokens, c.completion_tokens) for c in calls] \
        == [("agent", "proxy", 2, 21, 4)]
    assert [r.stop_reason for r in r1 + r2] == ["answer"] * 3


@needs_proc
def test_exit_codes_and_timeouts_leave_no_process(fake_openai: FakeOpenAI,
                                                  tmp_path: Path) -> None:
    body = '''
import os, subprocess, sys, time
msg = sys.stdin.read()
child = subprocess.Popen(["sleep", "60"])
open(os.path.join(os.environ["PIDS"], str(child.pid)), "w").close()
if msg == "fail":
    sys.stderr.write("boom 失败\\n")
    sys.exit(3)
if msg == "hang":
    time.sleep(60)
print("ok")
'''
    pids = tmp_path / "pids"
    pids.mkdir()
    os.environ["PIDS"] = str(pids)
    try:
        agent = Cmd2Agent(_script(tmp_path, body), llm=lambda: _client(fake_openai, tmp_path),
                          pass_env=["PIDS"])

        async def go() -> list[Any]:
            session = await agent.open(_brief(0, [], timeout=2.0))
            try:
                return [await session.turn(m, None) for m in ("ok", "fail", "hang", "ok")]
            finally:
                await session.close()
                await agent.aclose()

        t0 = time.monotonic()
        ok, fail, hang, again = asyncio.run(go())
        assert time.monotonic() - t0 < 20
    finally:
        del os.environ["PIDS"]
    assert (ok.text, ok.stop_reason) == ("ok", "answer")
    assert fail.stop_reason == "error" and "exited with code 3" in fail.error
    assert "boom 失败" in fail.error
    assert hang.stop_reason == "timeout" and again.text == "ok"  # the next turn runs anew
    children = [int(p.name) for p in pids.iterdir()]
    assert len(children) == 4
    deadline = time.monotonic() + 2
    while any(_alive(c) for c in children) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(_alive(c) for c in children)


# --------------------------------------------------------------------------- through bench run


@pytest.fixture(scope="module")
def plan_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pack = tmp_path_factory.mktemp("pack")
    (pack / "pack.yaml").write_text(PACK, encoding="utf-8")
    out = tmp_path_factory.mktemp("plan")
    assert compile_pack(pack, out, use_cache=False).ok
    return out


def test_bench_run_with_the_v2_example_harness_records_proxy_tokens(
        plan_dir: Path, fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.route("fake-model", lambda body: "Done: " + body["messages"][-1]["content"],
                      prompt_tokens=33, completion_tokens=7)
    db = tmp_path / "run.duckdb"
    summary = run_plan(RunOptions(
        plan=plan_dir, agent=f"cmd2:--model openai/fake-model {_script(tmp_path, EXAMPLE_V2.read_text())}",
        db=db, progress=False, cache_dir=tmp_path / "cache", sessions=["prices"],
        api_base=fake_openai.base_url, repeats=2))
    assert (summary.finished, summary.errors) == (2, 0)
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT repeat, role, purpose, turn, prompt_tokens, completion_tokens, "
                           "cache_hit FROM llm_calls WHERE role = 'agent' ORDER BY repeat"
                           ).fetchall()
        answers = con.execute("SELECT content FROM messages WHERE role = 'assistant' AND "
                              "turn = 1 ORDER BY repeat").fetchall()
        turns = con.execute("SELECT repeat, turn FROM turns ORDER BY repeat, turn").fetchall()
        totals = con.execute("SELECT sum(prompt_tokens), sum(completion_tokens) FROM sessions"
                             ).fetchone()
    finally:
        con.close()
    # one model call per agent turn, each with the fake's usage; repeats never share a cache
    # entry (the cache key carries the repeat)
    assert len(turns) >= 2 and [(r, t) for r, _, _, t, *_ in rows] == turns
    assert {row[1:3] + row[4:] for row in rows} == {("agent", "proxy", 33, 7, False)}
    assert totals == (33 * len(turns), 7 * len(turns))
    assert answers[0][0].startswith("Done: ")


# a harness that starts a grandchild, says so, and then works for a minute
SLOW = '''
import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "120"])
with open(os.path.join(os.environ["PIDS"], f"{os.getpid()}-{child.pid}"), "w"):
    pass
time.sleep(120)
'''


@needs_proc
@pytest.mark.parametrize("scheme,sig", [("cmd2", signal.SIGTERM), ("cmd2", signal.SIGKILL),
                                        ("cmd", signal.SIGTERM), ("cmd", signal.SIGKILL)])
def test_killing_bench_run_leaves_no_harness_behind(plan_dir: Path, tmp_path: Path,
                                                    scheme: str, sig: int) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {**os.environ, "PIDS": str(pids)}
    agent = f"{scheme}:" + (f"--pass-env PIDS {_script(tmp_path, SLOW)}" if scheme == "cmd2"
                            else _script(tmp_path, SLOW))
    proc = subprocess.Popen([sys.executable, "-m", "benchpack.cli", "run", str(plan_dir),
                             "--agent", agent, "--db", str(tmp_path / "r.duckdb"), "--quiet",
                             "--cache-dir", str(tmp_path / "cache"), "--session", "prices"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not any(pids.iterdir()):
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.05)
    harness, child = (int(x) for x in next(pids.iterdir()).name.split("-"))
    assert _alive(harness) and _alive(child)
    proc.send_signal(sig)
    proc.communicate(timeout=30)
    if sig == signal.SIGTERM:
        assert proc.returncode == 130  # stopped as by Ctrl-C: the run is marked interrupted
    deadline = time.time() + 5
    while (_alive(harness) or _alive(child)) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(harness) and not _alive(child)


# --------------------------------------------------------------------------- MCP (issue 14)

# a harness speaking MCP with the official client, found through $BENCHPACK_MCP_CONFIG: calls
# `echo` three times (the budget is 2), reports what it got and what it was given
MCP_PROBE = '''
import asyncio, json, os, sys
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
config = json.load(open(os.environ["BENCHPACK_CONFIG"], encoding="utf-8"))
servers = json.load(open(os.environ["BENCHPACK_MCP_CONFIG"], encoding="utf-8"))
entry = servers["mcpServers"]["benchpack"]

async def main():
    if "command" in entry:
        ctx = stdio_client(StdioServerParameters(command=entry["command"], args=entry["args"]))
    else:
        ctx = streamable_http_client(entry["url"])
    async with ctx as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        out = []
        for i in range(3):
            r = await s.call_tool("echo", {"i": i, "text": "你好"})
            out.append({"error": r.is_error, "text": r.content[0].text})
        return out

calls = asyncio.run(main())
print(json.dumps({"calls": calls, "config": config, "servers": servers,
                  "env": {k: v for k, v in os.environ.items() if k.startswith("BENCHPACK_MCP")}}))
'''


def _port_open(url: str) -> bool:
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(url)
    try:
        socket.create_connection((where.hostname, where.port), timeout=1).close()
        return True
    except OSError:
        return False


@needs_proc
@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_mcp_is_served_found_budgeted_and_closed(fake_openai: FakeOpenAI, tmp_path: Path,
                                                 transport: str) -> None:
    from test_mcp_server import _processes_mentioning

    agent = Cmd2Agent(_script(tmp_path, MCP_PROBE), llm=lambda: _client(fake_openai, tmp_path),
                      mcp=mcp_factory(transport))

    async def go() -> tuple[Any, Any]:
        brief = _brief(0, [])
        brief.max_steps = 2
        session = await agent.open(brief)
        try:
            brief.tools.turn = 1  # type: ignore[attr-defined]
            return await session.turn("call echo", None), brief.tools
        finally:
            await session.close()
            await agent.aclose()

    reply, tools = asyncio.run(go())
    assert reply.error is None, reply.error
    out = json.loads(reply.text)
    mcp, env = out["config"]["mcp"], out["env"]
    url = mcp["url"]
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
    assert env["BENCHPACK_MCP_URL"] == url and env["BENCHPACK_MCP_TRANSPORT"] == transport
    assert env["BENCHPACK_MCP_CONFIG"] == mcp["config_file"]
    entry = out["servers"]["mcpServers"]["benchpack"]
    if transport == "stdio":  # the bridge's command, in the config and in the mcpServers file
        assert entry == {"command": mcp["command"], "args": mcp["args"]}
        assert mcp["args"][-2:] == ["benchpack.runtime.mcp.bridge", url]
    else:
        assert entry == {"type": "http", "url": url} and "command" not in mcp
    # the budget is the cmd: adapter's: 2 calls run and are recorded, the third is refused
    assert [c["error"] for c in out["calls"]] == [False, False, True]
    assert "你好" in out["calls"][0]["text"]
    assert out["calls"][2]["text"] == ("Error: step budget spent (2 tool calls this turn); the "
                                       "call was not executed: answer now")
    assert [(r.tool_name, r.call["i"], r.turn, r.step) for r in tools.records] == \
        [("echo", 0, 1, 1), ("echo", 1, 1, 2)]
    assert len(reply.tool_records) == 2 and reply.stop_reason == "step_budget"
    # closed with the session: no listening port, no bridge, no config left
    assert not _port_open(url)
    assert _processes_mentioning(url) == []
    assert not Path(mcp["config_file"]).exists()


def test_a_refused_call_is_not_run_and_counted_per_turn(tmp_path: Path) -> None:
    from test_agents_cmd import FakeTools

    from benchpack.runtime.mcp import mcp_session, start_mcp_server

    tools = FakeTools()

    async def go() -> list[bool]:
        seen = []
        async with await start_mcp_server(tools, max_steps=1) as endpoint, \
                mcp_session(endpoint) as client:
            for turn in (1, 1, 2):
                tools.turn = turn
                seen.append((await client.call_tool("echo", {"t": turn})).is_error)
            assert (endpoint.refused(1), endpoint.refused(2)) == (1, 0)
        return seen

    assert asyncio.run(go()) == [False, True, False]
    assert [r.call for r in tools.records] == [{"t": 1}, {"t": 2}]
