"""Issue 14, part 5(b): a real agent framework (pydantic-ai) as a `cmd2:` harness, end to end
and offline. `example_harness_pydantic_ai.py` reads the cmd2 config, reaches the session's
tools over MCP (pydantic-ai's MCP toolset) and its model through the recording proxy (the
OpenAI provider with `base_url` = the proxy), which forwards to the local fake server scripted
below. The same scripted replies given to the built-in `litellm:` agent give the same store
rows; killing `bench run` mid-turn leaves no harness, bridge or server behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fake_openai import FakeOpenAI, FakeReply, completion_body
from test_agents_cmd import _alive, needs_proc
from test_mcp_server import _processes_mentioning

from benchpack.runtime.runner import RunOptions, run_plan

pytest.importorskip("pydantic_ai")
# Each case starts a real agent framework per turn: `make test-slow` (CI runs it after the suite).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HARNESS = f"{sys.executable} -m benchpack.runtime.agents.example_harness_pydantic_ai"
SESSION = "inr-clinic-review"
CHINESE = "复核：P-1042 的 INR 4.6，可能与氟康唑有关。"
PROMPT, COMPLETION = 37, 11
"""The fake's usage of every reply: each agent llm_calls row must carry exactly these."""


def scripted_model(body: dict[str, Any]) -> Any:
    """Per user turn: a read, a read that fails (no such file), a write in Chinese, then the
    answer. Decided by the number of assistant messages since the last user message, so the
    built-in agent and the harness get the same replies whatever else their prompts hold."""
    messages = body["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    step = sum(1 for m in messages[last_user:] if m["role"] == "assistant")
    calls = [("read_file", {"path": "anticoag/inr-log.csv"}),
             ("read_file", {"path": "anticoag/missing.md"}),
             ("write_file", {"path": "notes/复核.md", "content": CHINESE})]
    if step < len(calls):
        name, args = calls[step]
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{len(messages)}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}]}
    return "I checked the clinic log and wrote my notes to notes/复核.md. 需要我通知医生吗？"


@pytest.fixture(scope="module")
def plan_dir(compiled: Callable[..., Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    # three user turns, not the pack's ten: every turn starts the harness afresh (~2 s of
    # pydantic-ai imports), and three show the per-turn numbering as well as ten (the suite
    # spent a minute here)
    pack = tmp_path_factory.mktemp("pack") / "pharmacist-week"
    shutil.copytree(ROOT / "taskpacks" / "pharmacist-week", pack)
    text = (pack / "pack.yaml").read_text(encoding="utf-8")
    assert "    max_turns: 10 " in text
    (pack / "pack.yaml").write_text(text.replace("    max_turns: 10 ", "    max_turns: 3  ", 1),
                                    encoding="utf-8")
    return compiled(pack)


@pytest.fixture(scope="module")
def fake() -> Any:
    with FakeOpenAI() as server:
        server.route("agent-model", scripted_model, prompt_tokens=PROMPT,
                     completion_tokens=COMPLETION)
        yield server


def _run(plan: Path, agent: str, fake: FakeOpenAI, tmp: Path, name: str) -> dict[str, Any]:
    db = tmp / f"{name}.duckdb"
    summary = run_plan(RunOptions(
        plan=plan, agent=agent, simulator="rules", judge="rules", db=db, progress=False,
        cache_dir=tmp / f"cache-{name}", api_base=fake.base_url, max_retries=0,
        sessions=[SESSION], alone=True, run_id=name, work_dir=tmp / f"work-{name}"))
    assert (summary.finished, summary.errors) == (1, 0), summary
    con = duckdb.connect(str(db), read_only=True)
    try:
        def q(sql: str) -> list[Any]:
            return con.execute(sql).fetchall()
        return {
            "tool_calls": q("SELECT seq, turn, step, call_id, tool_name, effect, call, result, "
                            "error FROM tool_calls ORDER BY seq"),
            "llm_calls": q("SELECT turn, role, purpose, model, prompt_tokens, "
                           "completion_tokens, cache_hit, error FROM llm_calls "
                           "WHERE role = 'agent' ORDER BY seq"),
            "session": q("SELECT session_id, status, turns, tool_calls, prompt_tokens, "
                         "completion_tokens FROM sessions"),
            "turns": q("SELECT turn, steps, tool_calls, stop_reason FROM turns ORDER BY turn"),
            "answers": q("SELECT turn, content FROM messages WHERE role = 'assistant' AND "
                         "content <> '' ORDER BY seq"),
        }
    finally:
        con.close()


@pytest.fixture(scope="module")
def runs(plan_dir: Path, fake: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory
         ) -> dict[str, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("runs")
    out = {
        "litellm": _run(plan_dir, "litellm:openai/agent-model", fake, tmp, "litellm"),
        "http": _run(plan_dir, f"cmd2:--model openai/agent-model {HARNESS}", fake, tmp,
                     "http"),
        "stdio": _run(plan_dir, f"cmd2:--model openai/agent-model --mcp-transport stdio "
                      f"{HARNESS}", fake, tmp, "stdio"),
    }
    # after the runs: no harness and no bridge left among this process's children (the
    # servers' ports closing is test_agents_cmd2.py::test_mcp_is_served_found_budgeted…)
    left = [p for p in _descendants(os.getpid()) if _alive(p) and p in
            _processes_mentioning("example_harness_pydantic_ai") + _processes_mentioning(
                "runtime.mcp.bridge")]
    assert left == []
    return out


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_pydantic_ai_harness_tools_and_tokens_land_in_the_store(
        runs: dict[str, dict[str, Any]], transport: str) -> None:
    got = runs[transport]
    [(_, status, turns, n_tools, prompt, completion)] = got["session"]
    assert status == "finished" and turns >= 1
    tools = got["tool_calls"]
    # every user turn: the read, the failed read (validated and recorded by the toolbox, as
    # a native call), the write; numbered per turn as native calls are
    per_turn = [(t[1], t[2], t[4], json.loads(t[6]).get("path"), t[8] is not None)
                for t in tools]
    agent_turns = sorted({t[1] for t in tools})
    assert per_turn == [row for turn in agent_turns for row in (
        (turn, 1, "read_file", "anticoag/inr-log.csv", False),
        (turn, 2, "read_file", "anticoag/missing.md", True),
        (turn, 3, "write_file", "notes/复核.md", False))]
    assert n_tools == len(tools) == 3 * len(agent_turns)
    assert CHINESE in tools[2][6]
    assert "P-1042" in tools[0][7]  # the log's content came back through MCP
    # four model calls per turn through the proxy, each with the fake's usage, at its turn
    calls = got["llm_calls"]
    assert [c[0] for c in calls] == [t for t in agent_turns for _ in range(4)]
    assert {c[1:] for c in calls} == {("agent", "proxy", "openai/agent-model", PROMPT,
                                       COMPLETION, False, None)}
    assert (prompt, completion) == (PROMPT * len(calls), COMPLETION * len(calls))
    assert all(a[1].endswith("需要我通知医生吗？") for a in got["answers"])


def test_same_rows_as_the_builtin_agent(runs: dict[str, dict[str, Any]]) -> None:
    """The built-in agent and the harness (over HTTP and over the stdio bridge) store the same
    tool calls and token totals. Two columns differ by construction: `call_id` (the built-in
    agent keeps the model's id; over MCP the model's id stays in the harness, the toolbox
    numbers the call `call-N`), and the purpose of llm_calls (`agent_step` vs `proxy`)."""
    native = runs["litellm"]

    def comparable(got: dict[str, Any]) -> dict[str, Any]:
        return {"tool_calls": [t[:3] + t[4:] for t in got["tool_calls"]],
                "llm_calls": [(c[0], c[1], c[4], c[5], c[6], c[7]) for c in got["llm_calls"]],
                "session": got["session"], "answers": got["answers"],
                "turns": got["turns"]}

    assert len(native["tool_calls"]) >= 3
    for transport in ("http", "stdio"):
        assert comparable(runs[transport]) == comparable(native), transport
    assert {c[2] for c in native["llm_calls"]} == {"agent_step"}
    assert [t[3] for t in runs["http"]["tool_calls"]][:3] == ["call-1", "call-2", "call-3"]


# --------------------------------------------------------------------------- killing bench run


@needs_proc
@pytest.mark.parametrize("transport,sig", [("stdio", signal.SIGTERM), ("stdio", signal.SIGKILL),
                                           ("http", signal.SIGTERM)])
def test_killing_bench_run_mid_turn_leaves_no_harness_bridge_or_server(
        plan_dir: Path, tmp_path: Path, transport: str, sig: int) -> None:
    with FakeOpenAI() as fake:
        # the first model call has started the turn (the MCP toolset is connected): the
        # reply then hangs until the server closes, so the harness is mid-turn when we kill
        fake.push(lambda body: FakeReply(body=completion_body(
            "agent-model", {"role": "assistant", "content": "late"}, "stop", 1, 1, 1),
            delay_s=120))
        agent = (f"cmd2:--model openai/agent-model --mcp-transport {transport} "
                 f"{HARNESS}")
        proc = subprocess.Popen(
            [sys.executable, "-m", "benchpack.cli", "run", str(plan_dir), "--agent", agent,
             "--simulator", "rules", "--judge", "rules", "--api-base", fake.base_url,
             "--db", str(tmp_path / "r.duckdb"), "--quiet", "--cache-dir",
             str(tmp_path / "cache"), "--session", SESSION, "--alone"],
            cwd=tmp_path, env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 90
            while not fake.requests:
                assert proc.poll() is None and time.time() < deadline, proc.communicate()
                time.sleep(0.05)
            # this run's processes only: other test runs may share the machine
            mine = _descendants(proc.pid)
            harness = [p for p in mine
                       if p in _processes_mentioning("example_harness_pydantic_ai")]
            assert harness and all(_alive(p) for p in harness)
            bridges = [p for p in mine if p in _processes_mentioning("runtime.mcp.bridge")]
            assert bool(bridges) == (transport == "stdio")
            # the MCP server's URL: in the bridge's command line, or the harness's config
            url = _mcp_url(bridges, harness)
            assert _port_open(url)
            proc.send_signal(sig)
            proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        if sig == signal.SIGTERM:
            assert proc.returncode == 130
        deadline = time.time() + 5
        while (any(_alive(p) for p in harness + bridges) or _port_open(url)) \
                and time.time() < deadline:
            time.sleep(0.05)
        assert not any(_alive(p) for p in harness + bridges)
        assert not _port_open(url)
        assert _processes_mentioning(url) == []


def _descendants(root: int) -> list[int]:
    parent: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        kids = [p for p, pp in parent.items() if pp == pid]
        found += kids
        todo += kids
    return found


def _mcp_url(bridges: list[int], harness: list[int]) -> str:
    for pid in bridges:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        return next(w for w in words if w.startswith("http://"))
    for pid in harness:
        env = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace").split("\0")
        found = [e.split("=", 1)[1] for e in env if e.startswith("BENCHPACK_MCP_URL=")]
        if found and found[0]:
            return found[0]
    raise AssertionError("no MCP URL found")


def _port_open(url: str) -> bool:
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(url)
    try:
        socket.create_connection((where.hostname, where.port), timeout=1).close()
        return True
    except OSError:
        return False
