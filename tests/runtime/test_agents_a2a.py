"""Issue 26: `a2a:`, the agent under test as an A2A server (official `a2a-sdk` on both sides).
The clinic agent of `harnesses/clinic_agent.py` run over A2A (its tools over the session's MCP
server) and in process (`python:`) leaves the same store rows on a reference pack; a failed
task is the agent's error with its reason whole; the agent's model calls through the proxy it
is handed are recorded; mistakes in the argument are one line."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401
from test_agents_cmd import FakeTools

from benchpack.compiler import compile_pack
from benchpack.runtime.agents.registry import AgentContext, AgentRegistry
from benchpack.runtime.errors import UsageError
from benchpack.runtime.llm import LLMClient, LLMConfig
from benchpack.runtime.runner import RunOptions, run_plan
from benchpack.runtime.types import LLMCallRecord, SessionBrief

pytest.importorskip("a2a.client")

ROOT = Path(__file__).resolve().parents[2]
HARNESSES = Path(__file__).with_name("harnesses")
SESSION = "inr-clinic-review"


@pytest.fixture(scope="module")
def a2a_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url_file = tmp_path_factory.mktemp("a2a") / "url"
    proc = subprocess.Popen([sys.executable, str(HARNESSES / "a2a_clinic_server.py"),
                             str(url_file)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not url_file.exists() or not url_file.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, "no A2A server"
            time.sleep(0.05)
        time.sleep(0.2)  # the socket is bound before the URL is written; the loop starts
        yield url_file.read_text()
    finally:
        proc.terminate()
        proc.wait(10)


def _rows(db: Path) -> dict[str, Any]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        def q(sql: str) -> list[Any]:
            return con.execute(sql).fetchall()
        return {
            "session": q("SELECT status, error, turns, tool_calls, proc, comp, intents, "
                         "completed, inferred, provided FROM sessions"),
            "tools": q("SELECT turn, tool_name, effect, call, result, error FROM tool_calls "
                       "ORDER BY seq"),
            "answers": q("SELECT turn, content FROM messages WHERE role = 'assistant' AND "
                         "content <> '' ORDER BY seq"),
            "checklist": q("SELECT item_id, score FROM checklist_results ORDER BY item_id"),
            "intents": q("SELECT intent_id, status, turn FROM intent_status ORDER BY intent_id"),
        }
    finally:
        con.close()


def test_an_a2a_agent_equals_the_same_agent_through_python(
        a2a_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HARNESSES))
    plan = tmp_path / "plan"
    assert compile_pack(ROOT / "taskpacks" / "pharmacist-week", plan, use_cache=False).ok
    got = {}
    for name, agent in (("a2a", f"a2a:{a2a_url}"), ("python", "python:clinic_agent:agent")):
        summary = run_plan(RunOptions(
            plan=plan, agent=agent, simulator="rules", judge="rules", db=tmp_path / f"{name}.db",
            progress=False, cache_dir=tmp_path / "cache", max_retries=0, sessions=[SESSION],
            alone=True, run_id=name, work_dir=tmp_path / f"work-{name}"))
        assert (summary.finished, summary.errors) == (1, 0), summary
        got[name] = _rows(tmp_path / f"{name}.db")
    a2a, py = got["a2a"], got["python"]
    assert a2a == py
    turns = a2a["session"][0][2]
    assert turns >= 2 and len(a2a["tools"]) == 3 * turns  # read, write, failed read a turn
    assert [t[1] for t in a2a["tools"][:3]] == ["read_file", "write_file", "read_file"]
    assert a2a["tools"][2][5] is not None
    assert "high INR for P-1042, P-1095" in a2a["answers"][0][1]
    assert "共 2 位" in a2a["answers"][0][1]


def _session(url: str, fake: FakeOpenAI | None, texts: list[str], argument: str = ""
             ) -> tuple[list[Any], list[LLMCallRecord]]:
    calls: list[LLMCallRecord] = []

    async def go() -> list[Any]:
        llm = LLMClient(LLMConfig(api_base=fake.base_url if fake else "http://127.0.0.1:9/v1",
                                  api_key="k", max_retries=0))
        agent = AgentRegistry(group=None).create(f"a2a:{argument}{url}",
                                                 AgentContext(llm=lambda: llm))
        tools = FakeTools()
        brief = SessionBrief(session_id="s1", name="s1", protocol="intent_tracking", repeat=0,
                             system_prompt="", prior=[], tools=tools, max_steps=5,
                             turn_timeout_s=30, seed=0, recorder=calls.append)
        session = await agent.open(brief)
        out = []
        try:
            for k, text in enumerate(texts, 1):
                tools.turn = k
                out.append(await session.turn(text, None))
        finally:
            await session.close()
            await agent.aclose()
        return out

    return asyncio.run(go()), calls


def test_a_failed_task_is_the_agents_error_with_its_reason_whole(a2a_url: str) -> None:
    [reply], _ = _session(a2a_url, None, ["FAIL please"])
    assert reply.stop_reason == "error"
    assert reply.error == ("the A2A task ended failed:\n"
                           "cannot go on:\nthe clinic system is down")


def test_the_agents_model_calls_through_the_proxy_are_recorded(
        a2a_url: str, fake_openai: FakeOpenAI) -> None:
    fake_openai.text("模型回答: INR 4.6 is high.", prompt_tokens=13, completion_tokens=8)
    [reply], calls = _session(a2a_url, fake_openai, ["MODEL, is 4.6 high?"],
                              argument="--model openai/agent-model ")
    assert reply.text == "模型回答: INR 4.6 is high." and reply.error is None
    assert [(c.role, c.purpose, c.model, c.prompt_tokens, c.completion_tokens, c.turn)
            for c in calls] == [("agent", "proxy", "openai/agent-model", 13, 8, 1)]
    assert fake_openai.requests[0]["model"] == "agent-model"


def test_argument_mistakes_and_an_absent_agent_are_one_line() -> None:
    registry = AgentRegistry(group=None)
    ctx = AgentContext(llm=lambda: None)  # type: ignore[arg-type,return-value]
    for bad, says in [("a2a:http://a http://b", "needs one agent URL"),
                      ("a2a:--nope http://x", "unknown option"),
                      ("a2a:--model", "--model needs a value"), ("a2a:ftp://x", r"http\(s\)://")]:
        with pytest.raises(UsageError, match=says) as info:
            registry.create(bad, ctx)
        assert "\n" not in str(info.value)
    with pytest.raises(UsageError, match=r"no A2A agent at http://127\.0\.0\.1:9") as info:
        _session("http://127.0.0.1:9", None, ["hi"])
    assert "\n" not in str(info.value)
    assert "a2a:" in registry.usage()
