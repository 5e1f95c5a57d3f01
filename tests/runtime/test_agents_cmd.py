"""The `cmd:` adapter (external harness over JSON lines) and the agent adapter registry.

Harnesses are small stdlib scripts written into `tmp_path` and run with this interpreter.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from benchpack.compiler import compile_pack
from benchpack.runtime.agents.cmd_agent import CmdAgent, CmdSession, HarnessError
from benchpack.runtime.agents.registry import (
    AgentAdapterError,
    AgentContext,
    AgentLoadError,
    AgentRegistry,
    UnknownAgentScheme,
)
from benchpack.runtime.agents.scripted import ScriptedAgent
from benchpack.runtime.runner import RunOptions, run_plan
from benchpack.runtime.types import LLMCallRecord, Message, SessionBrief, ToolRecord

EXAMPLE = (Path(__file__).resolve().parents[2] / "runtime" / "benchpack" / "runtime" / "agents"
           / "example_harness.py")

PRELUDE = '''
import json, os, sys, time

def send(msg):
    sys.stdout.write(json.dumps(msg, ensure_ascii=False) + "\\n")
    sys.stdout.flush()

def receive():
    line = sys.stdin.readline()
    return json.loads(line) if line else None

def call(name, arguments, id=None):
    send({"type": "tool_call", "id": id, "name": name, "arguments": arguments})
    return receive()

start = receive()
pid_dir = os.environ.get("HARNESS_PID_DIR")
if pid_dir:
    open(os.path.join(pid_dir, str(os.getpid())), "w").close()
'''


def _command(script: Path) -> str:
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def _agent(tmp_path: Path, body: str, **kw: Any) -> CmdAgent:
    script = tmp_path / f"harness_{abs(hash(body))}.py"
    script.write_text(PRELUDE + body, encoding="utf-8")
    return CmdAgent(_command(script), **kw)


def _alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (Linux /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _gone(pid: int) -> bool:
    """True once `pid` has exited and been reaped (no zombie left behind)."""
    return not Path(f"/proc/{pid}").exists()


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


class FakeTools:
    """A `ToolHandle` with one tool, `echo`, that returns its arguments."""

    def __init__(self) -> None:
        self.specs = [{"type": "function", "function": {
            "name": "echo", "description": "Echo the arguments.",
            "parameters": {"type": "object"}}}]
        self.records: list[ToolRecord] = []
        self.turn = 0
        self.step = 0

    async def call(self, name: str, args: dict[str, Any], call_id: str | None = None
                   ) -> ToolRecord:
        ok = name == "echo"
        rec = ToolRecord(call_id or f"c{len(self.records) + 1}", name, args,
                         {"echo": args} if ok else None, None if ok else f"unknown tool `{name}`",
                         time.time(), 0.0, self.turn, self.step)
        self.records.append(rec)
        return rec


def _brief(max_steps: int = 5, timeout: float = 5.0) -> SessionBrief:
    return SessionBrief(session_id="session.p.e.s", name="s", protocol="intent_tracking",
                        repeat=0, system_prompt="Be useful.",
                        prior=[Message("user", "earlier question", 1),
                               Message("assistant", "earlier answer", 1)],
                        tools=FakeTools(), max_steps=max_steps, turn_timeout_s=timeout, seed=7)


def _drive(agent: CmdAgent, brief: SessionBrief, messages: list[str | None]
           ) -> tuple[CmdSession, list[Any]]:
    async def go() -> tuple[CmdSession, list[Any]]:
        session = await agent.open(brief)
        try:
            replies = [await session.turn(m, None if m is not None else {"kind": "heartbeat"})
                       for m in messages]
        finally:
            await session.close()
        return session, replies

    return asyncio.run(go())


# --------------------------------------------------------------------------- protocol units


def test_start_message_tools_events_llm_calls_and_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_TEST_SECRET", "s3cret")
    agent = _agent(tmp_path, '''
while (msg := receive()) and msg["type"] != "end":
    result = call("echo", {"q": msg.get("content") or msg["event"]["kind"]}, id="t1")
    send({"type": "llm_call", "model": "harness-model", "prompt_tokens": 100,
          "completion_tokens": 20, "cost": 0.5, "latency_s": 0.25})
    send({"type": "log", "message": "thinking"})
    send({"type": "assistant", "content": json.dumps({
        "start": start, "got": msg, "result": result, "cwd": os.getcwd(),
        "secret": os.environ.get("HARNESS_TEST_SECRET")}), "compactions": 1})
''')
    brief = _brief()
    brief.history = [{"role": "user", "content": "already said"}]  # type: ignore[attr-defined]
    calls: list[LLMCallRecord] = []
    brief.recorder = calls.append  # type: ignore[attr-defined]
    brief.tools.turn = 3  # type: ignore[attr-defined]  # the runtime's turn number wins
    session, replies = _drive(agent, brief, ["Hello", None])
    seen = json.loads(replies[0].text)
    start = seen["start"]
    assert start["type"] == "start" and start["protocol_version"] == 1
    assert start["session_id"] == "session.p.e.s" and start["seed"] == 7
    assert start["system_prompt"] == "Be useful."
    assert [t["function"]["name"] for t in start["tools"]] == ["echo"]
    assert start["prior"] == [{"role": "user", "content": "earlier question"},
                              {"role": "assistant", "content": "earlier answer"}]
    assert start["history"] == [{"role": "user", "content": "already said"}]
    assert start["limits"] == {"max_steps": 5, "turn_timeout_s": 5.0}
    assert seen["got"] == {"type": "user", "content": "Hello"}
    assert seen["result"] == {"type": "tool_result", "id": "t1", "result": {"echo": {"q": "Hello"}},
                              "error": None}
    assert seen["cwd"] == os.getcwd()  # no workspace behind FakeTools
    assert seen["secret"] == "s3cret"  # the parent's environment is passed on
    assert json.loads(replies[1].text)["got"] == {"type": "event", "event": {"kind": "heartbeat"}}
    first = replies[0]
    assert first.stop_reason == "answer" and first.steps == 2 and first.compactions == 1
    assert [r.call for r in first.tool_records] == [{"q": "Hello"}]
    assert [m.role for m in first.messages] == ["assistant", "tool", "assistant"]
    assert first.messages[0].tool_calls == [{"id": "t1", "name": "echo",
                                             "arguments": {"q": "Hello"}}]
    assert [(c.role, c.model, c.prompt_tokens, c.completion_tokens, c.cost, c.turn, c.purpose)
            for c in calls] == [("agent", "harness-model", 100, 20, 0.5, 3, "harness")] * 2
    assert list(session.logs) == ["thinking", "thinking"]


@needs_proc
def test_malformed_json_is_a_clear_error_and_the_harness_is_killed(tmp_path: Path) -> None:
    agent = _agent(tmp_path, '''
receive()
sys.stderr.write("about to misbehave\\n")
sys.stderr.flush()
print("hello world")
time.sleep(30)
''')
    session, replies = _drive(agent, _brief(), ["Hi", "Again"])
    first, second = replies
    assert first.stop_reason == "error"
    assert "not JSON" in first.error and "'hello world'" in first.error
    assert "write logs to stderr" in first.error and "about to misbehave" in first.error
    assert second.stop_reason == "error" and second.error == first.error  # stays dead
    assert all(_gone(pid) for pid in session.pids) and len(session.pids) == 1


@needs_proc
def test_turn_timeout_kills_and_the_next_turn_restarts_with_history(tmp_path: Path) -> None:
    agent = _agent(tmp_path, '''
while (msg := receive()) and msg["type"] != "end":
    if msg["content"] == "slow":
        time.sleep(30)
    send({"type": "assistant", "content": json.dumps(start["history"])})
''')
    t0 = time.perf_counter()
    session, replies = _drive(agent, _brief(timeout=0.5), ["slow", "quick"])
    assert time.perf_counter() - t0 < 5  # killed, not left to sleep 30 s
    assert replies[0].stop_reason == "timeout" and replies[0].text == ""
    assert replies[1].stop_reason == "answer"
    assert json.loads(replies[1].text) == [{"role": "user", "content": "slow"}]
    assert len(session.pids) == 2 and all(_gone(pid) for pid in session.pids)


def test_step_budget_refuses_calls_beyond_max_steps(tmp_path: Path) -> None:
    agent = _agent(tmp_path, '''
while (msg := receive()) and msg["type"] != "end":
    results = [call("echo", {"n": n}) for n in range(3)]
    send({"type": "assistant", "content": json.dumps([r["error"] for r in results])})
''')
    brief = _brief(max_steps=2)
    _, [reply] = _drive(agent, brief, ["go"])
    errors = json.loads(reply.text)
    assert errors[:2] == [None, None] and "step budget spent (2 tool calls" in errors[2]
    assert reply.stop_reason == "step_budget"
    assert [r.call for r in brief.tools.records] == [{"n": 0}, {"n": 1}]  # type: ignore[attr-defined]
    assert [r.step for r in brief.tools.records] == [1, 2]  # type: ignore[attr-defined]


def test_long_lines_and_unicode_round_trip(tmp_path: Path) -> None:
    agent = _agent(tmp_path, '''
while (msg := receive()) and msg["type"] != "end":
    echoed = call("echo", {"text": msg["content"] * 2})["result"]["echo"]["text"]
    send({"type": "assistant", "content": echoed + "|" + "x" * 3_000_000})
''')
    text = "Crème brûlée ☕ 日本語 \u2028 \"quoted\" \\ back\nslash " + "y" * 500_000
    _, [reply] = _drive(agent, _brief(), [text])
    assert reply.stop_reason == "answer"
    assert reply.text == text * 2 + "|" + "x" * 3_000_000


def test_a_line_over_the_limit_is_an_error(tmp_path: Path) -> None:
    agent = _agent(tmp_path, '''
receive()
send({"type": "assistant", "content": "z" * 5000})
''', max_line_bytes=1024)
    _, [reply] = _drive(agent, _brief(), ["hi"])
    assert reply.stop_reason == "error" and "longer than 1024 bytes" in reply.error


def test_unknown_message_type_and_bad_llm_call_are_protocol_errors(tmp_path: Path) -> None:
    unknown = _agent(tmp_path, '''
receive()
send({"type": "thought", "content": "hm"})
''')
    _, [reply] = _drive(unknown, _brief(), ["hi"])
    assert reply.stop_reason == "error" and "unknown message type `thought`" in reply.error
    bad = _agent(tmp_path, '''
receive()
send({"type": "llm_call", "model": "m", "prompt_tokens": "many"})
''')
    _, [reply] = _drive(bad, _brief(), ["hi"])
    assert "`llm_call.prompt_tokens` must be an integer from 0 to" in reply.error


@needs_proc
def test_close_terminates_a_harness_that_ignores_end_with_its_children(tmp_path: Path) -> None:
    agent = _agent(tmp_path, '''
import signal, subprocess
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(["sleep", "30"])
while (msg := receive()) and msg["type"] != "end":
    send({"type": "assistant", "content": str(child.pid)})
send({"type": "llm_call", "model": "late", "prompt_tokens": 3, "completion_tokens": 4})
time.sleep(30)
''', close_grace_s=0.2)
    t0 = time.perf_counter()
    session, [reply] = _drive(agent, _brief(), ["hi"])
    assert time.perf_counter() - t0 < 5  # grace 0.2 s, SIGTERM, 1 s later SIGKILL
    assert [c.model for c in session.calls] == ["late"]  # read after `end`
    assert all(_gone(pid) for pid in session.pids)
    child = int(reply.text)  # the harness's own child goes with its process group
    deadline = time.monotonic() + 1.0  # SIGKILL is delivered asynchronously
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive(child)


@needs_proc
def test_a_grandchild_holding_the_pipes_cannot_hang_close(tmp_path: Path) -> None:
    agent = _agent(tmp_path, '''
import subprocess
child = subprocess.Popen(["sleep", "30"], start_new_session=True)  # leaves the group
while (msg := receive()) and msg["type"] != "end":
    send({"type": "assistant", "content": str(child.pid)})
''', close_grace_s=0.2)
    t0 = time.perf_counter()
    session, [reply] = _drive(agent, _brief(), ["hi"])
    try:
        assert time.perf_counter() - t0 < 5  # not the 30 s the grandchild lives
        assert all(_gone(pid) for pid in session.pids)
    finally:
        os.kill(int(reply.text), signal.SIGKILL)  # out of our reach by design; clean up


def test_a_missing_program_fails_to_open(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"no-such-harness`: no such executable file"):
        CmdAgent(str(tmp_path / "no-such-harness"))
    harness = tmp_path / "harness"
    harness.write_text("#!/bin/sh\n")
    harness.chmod(0o755)
    agent = CmdAgent(str(harness))
    harness.unlink()  # gone between `bench run` starting and the session
    with pytest.raises(HarnessError, match=r"cannot start .*harness"):
        asyncio.run(agent.open(_brief()))
    with pytest.raises(ValueError, match="needs a command"):
        CmdAgent("  ")


# --------------------------------------------------------------------------- through bench run

PACK = """\
benchpack: 1
name: cmd-case
personas:
  - id: owner
    profile: {role: café owner}
environments:
  - id: shop
    files:
      - path: notes/menu.md
        content: "Crème brûlée 6 €\\nCafé au lait 3 €\\n"
episodes:
  - id: week
    persona: owner
    environment: shop
    sessions:
      - id: prices
        protocol: intent_tracking
        request: Check the menu prices for me.
        hidden_intents:
          - text: Write the price list into prices.txt.
        checklist:
          - text: The menu was read
            rule: {tool: read_file, where: {args.path: notes/menu.md}}
      - id: crash
        protocol: intent_tracking
        request: Please CRASH now.
        hidden_intents: [{text: Order more milk.}]
        checklist: [{text: Milk was ordered}]
      - id: after
        protocol: intent_tracking
        request: What does prices.txt say?
        hidden_intents: [{text: Quote prices.txt.}]
        checklist: [{text: prices.txt was quoted}]
"""

HARNESS = '''
while (msg := receive()) and msg["type"] != "end":
    menu = call("read_file", {"path": "notes/menu.md"}, id="r1")["result"]["content"]
    if "CRASH" in msg["content"]:
        sys.stderr.write("boom: crashing on purpose\\n")
        sys.stderr.flush()
        sys.exit(3)
    if "prices.txt" in msg["content"]:  # files persist across the episode's sessions
        send({"type": "assistant", "content": "Quote prices.txt: " + open("prices.txt").read()})
        continue
    call("write_file", {"path": "prices.txt", "content": menu}, id="w1")
    send({"type": "llm_call", "model": "harness-model", "prompt_tokens": 120,
          "completion_tokens": 30, "cost": 0.002, "latency_s": 0.25})
    send({"type": "assistant", "content": "I wrote the price list into prices.txt: " + menu})
'''


@pytest.fixture(scope="module")
def plan_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pack = tmp_path_factory.mktemp("pack")
    (pack / "pack.yaml").write_text(PACK, encoding="utf-8")
    out = tmp_path_factory.mktemp("plan")
    res = compile_pack(pack, out, use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    return out


@needs_proc
def test_bench_run_with_a_harness_records_tools_llm_calls_and_survives_a_crash(
        plan_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv("HARNESS_PID_DIR", str(pids))
    script = tmp_path / "harness.py"
    script.write_text(PRELUDE + HARNESS, encoding="utf-8")
    db = tmp_path / "run.duckdb"
    summary = run_plan(RunOptions(plan=plan_dir, agent="cmd:" + _command(script), db=db,
                                  progress=False, cache_dir=tmp_path / "cache"))
    assert (summary.finished, summary.errors, summary.skipped_deps) == (2, 1, 0)
    assert (summary.llm_calls, summary.prompt_tokens, summary.completion_tokens) == (1, 120, 30)
    con = duckdb.connect(str(db), read_only=True)
    sessions = {r[0]: r[1:] for r in con.execute(
        "SELECT name, status, termination, turns, completed, comp, error FROM sessions "
        "WHERE run_id=?", [summary.run_id]).fetchall()}
    assert sessions["prices"][:5] == ("finished", "all_resolved", 1, 1, 1.0)
    assert sessions["after"][:4] == ("finished", "all_resolved", 1, 1)
    status, termination, *_, error = sessions["crash"]
    assert (status, termination) == ("error", "error")
    assert "exited with code 3 before answering" in error and "boom: crashing on purpose" in error
    tools = con.execute(
        "SELECT s.name, t.turn, t.step, t.call_id, t.tool_name, t.call, t.error "
        "FROM tool_calls t JOIN sessions s USING (run_id, session_id, repeat) "
        "WHERE run_id=? ORDER BY s.started_at, t.seq", [summary.run_id]).fetchall()
    assert [(n, turn, step, cid, name, json.loads(call), err)
            for n, turn, step, cid, name, call, err in tools] == [
        ("prices", 1, 1, "r1", "read_file", {"path": "notes/menu.md"}, None),
        ("prices", 1, 2, "w1", "write_file",
         {"path": "prices.txt", "content": "Crème brûlée 6 €\nCafé au lait 3 €\n"}, None),
        ("crash", 1, 1, "r1", "read_file", {"path": "notes/menu.md"}, None),
        ("after", 1, 1, "r1", "read_file", {"path": "notes/menu.md"}, None)]
    assert con.execute(
        "SELECT role, purpose, model, prompt_tokens, completion_tokens, cost, latency_s, turn "
        "FROM llm_calls WHERE run_id=?", [summary.run_id]).fetchall() == [
        ("agent", "harness", "harness-model", 120, 30, 0.002, 0.25, 1)]
    last = con.execute(
        "SELECT m.content FROM messages m JOIN sessions s USING (run_id, session_id, repeat) "
        "WHERE s.name='after' AND m.role='assistant' ORDER BY m.seq DESC LIMIT 1").fetchone()
    assert last == ("Quote prices.txt: Crème brûlée 6 €\nCafé au lait 3 €\n",)
    con.close()
    started = [int(p.name) for p in pids.iterdir()]
    assert len(started) == 3 and all(_gone(pid) for pid in started)  # no zombies, no orphans


def test_bench_run_with_the_example_harness(plan_dir: Path, tmp_path: Path) -> None:
    summary = run_plan(RunOptions(
        plan=plan_dir, agent="cmd:" + _command(EXAMPLE), db=tmp_path / "run.duckdb",
        progress=False, cache_dir=tmp_path / "cache", sessions=["prices"]))
    assert (summary.finished, summary.errors) == (1, 0)
    con = duckdb.connect(str(tmp_path / "run.duckdb"), read_only=True)
    assert con.execute("SELECT tool_name, error FROM tool_calls").fetchall()[0] == (
        "list_files", None)
    con.close()


# --------------------------------------------------------------------------- registry


def _context() -> AgentContext:
    return AgentContext(llm=lambda: pytest.fail("the LLM client must not be built"))


def test_registry_unknown_scheme_and_malformed_uri() -> None:
    reg = AgentRegistry(group=None)
    with pytest.raises(UnknownAgentScheme, match=r"unknown agent adapter `nope:`.*cmd:<command>"):
        reg.create("nope:x", _context())
    with pytest.raises(AgentAdapterError, match="use litellm:<model>") as info:
        reg.create("just-a-name", _context())
    assert not isinstance(info.value, UnknownAgentScheme)
    assert reg.schemes() == ["a2a", "acp", "adversary", "cmd", "cmd2", "litellm", "python", "replay",
                             "scripted"]
    assert isinstance(reg.create(f"cmd:{sys.executable} --flag", _context()), CmdAgent)


def test_registry_imports_built_ins_lazily(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    monkeypatch.delitem(sys.modules, "benchpack.runtime.agents.litellm_agent", raising=False)
    script = tmp_path / "s.yaml"
    script.write_text("default: [{say: hi}]\n", encoding="utf-8")
    agent = AgentRegistry(group=None).create(f"scripted:{script}", _context())
    assert isinstance(agent, ScriptedAgent)
    assert "benchpack.runtime.agents.litellm_agent" not in sys.modules
    sentinel = object()
    llm = AgentRegistry(group=None).create("litellm:openai/gpt-x",
                                           AgentContext(llm=lambda: sentinel))  # type: ignore[arg-type,return-value]
    assert llm.name == "litellm:openai/gpt-x" and llm.client is sentinel  # type: ignore[attr-defined]


def test_registry_entry_points_load_lazily_and_report_broken_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "fake_bench_agents-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-bench-agents\n"
                                   "Version: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(
        "[benchpack.agents]\n"
        "echo = fake_bench_echo_agent:make\n"
        "broken = fake_bench_missing_module:make\n"
        "scripted = fake_bench_missing_module:make\n", encoding="utf-8")
    (tmp_path / "fake_bench_echo_agent.py").write_text(
        "from types import SimpleNamespace\n"
        "def make(argument, context):\n"
        "    return SimpleNamespace(name='echo:' + argument)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = AgentRegistry()
    assert {"echo", "broken"} <= set(reg.schemes())
    assert "fake_bench_echo_agent" not in sys.modules  # listed, not imported
    assert reg.create("echo:hello", _context()).name == "echo:hello"
    with pytest.raises(AgentLoadError, match=r"`broken` failed to load.*fake_bench_missing_module"):
        reg.create("broken:x", _context())
    # a built-in scheme is never shadowed by a plug-in of the same name
    script = tmp_path / "s.yaml"
    script.write_text("default: []\n", encoding="utf-8")
    assert isinstance(reg.create(f"scripted:{script}", _context()), ScriptedAgent)


@pytest.mark.parametrize(("field", "value"), [
    ("prompt_tokens", 10**18), ("completion_tokens", 10**12), ("cost", 1e308),
    ("cost", float("inf")), ("cost", float("nan")), ("latency_s", 1e12)])
def test_harness_numbers_out_of_range_are_protocol_errors(field: str, value: float) -> None:
    """Tokens of 1e18 or a cost of 1e308 would poison every sum in the store: refused."""
    from benchpack.runtime.agents.cmd_agent import HarnessError, _llm_record

    with pytest.raises(HarnessError, match=f"llm_call.{field}"):
        _llm_record({"type": "llm_call", "model": "m", field: value}, 1)
    ok = _llm_record({"type": "llm_call", "model": "m", "prompt_tokens": 120_000,
                      "completion_tokens": 4_000, "cost": 1.25, "latency_s": 30}, 1)
    assert (ok.prompt_tokens, ok.completion_tokens, ok.cost) == (120_000, 4_000, 1.25)


def test_kept_log_lines_are_capped() -> None:
    from benchpack.runtime.agents import cmd_agent

    assert cmd_agent.LOG_LINE_CHARS * cmd_agent.LOG_LINES <= 4 * 2**20
