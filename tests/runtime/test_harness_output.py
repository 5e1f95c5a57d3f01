"""Issue 26, output hygiene: the answer a judge reads is the harness's reply, never its
warnings (an ACP agent's notices and thoughts are stored apart as `harness` rows); a failed
harness's error quotes its own message whole (a multi-line traceback from its first line;
stdout when stderr is empty)."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401
from test_agents_cmd import FakeTools

from benchpack.runtime.agents.acp_agent import make_adapter
from benchpack.runtime.agents.cmd2_agent import Cmd2Agent
from benchpack.runtime.agents.harness_output import failure_detail, split_chunks
from benchpack.runtime.agents.registry import AgentContext
from benchpack.runtime.llm import LLMClient, LLMConfig
from benchpack.runtime.types import LLMCallRecord, SessionBrief

AGENT = Path(__file__).with_name("harnesses") / "acp_notice_agent.py"
WARNING = "Model metadata for `x` not found. Defaulting to fallback metadata."
REPLY = "P-1042 needs a call today. 今天给 Walter 打电话。"


def test_chunks_that_no_model_reply_holds_are_notices() -> None:
    chunks = [WARNING, "P-104", "2 nee", "ds a call today.", "\n"]
    assert split_chunks(chunks, ["P-1042 needs a call today."]) == (
        "P-1042 needs a call today.", [WARNING])
    # no proxied call in the turn: nothing tells them apart, everything is the answer
    assert split_chunks(chunks, None)[0] == WARNING + "P-1042 needs a call today."
    # an agent that writes its answer itself (no chunk is the model's): everything is kept
    assert split_chunks(["Summary: ", "2 patients."], ["P-1042 and P-1095 are high."]) == (
        "Summary: 2 patients.", [])
    # whitespace differences between the stream and the recorded reply do not matter
    assert split_chunks(["a  b\n", "c"], ["a b c"]) == ("a  b\nc", [])


def test_failure_detail_keeps_a_traceback_whole_and_falls_back_to_stdout() -> None:
    frames = "".join(f'  File "x.py", line {i}, in f{i}\n    g()\n' for i in range(100))
    err = "noise line\n" * 2000 + "Traceback (most recent call last):\n" + frames + \
        "ValueError: bad\n"
    detail = failure_detail(err)
    assert detail.startswith("; stderr (last lines):\nTraceback (most recent call last):\n")
    assert detail.endswith("ValueError: bad") and 'line 0, in f0' in detail
    long_err = "x" * 50 + "\n" + "y" * 9000 + "\nlast words"
    assert failure_detail(long_err).endswith("last words")
    assert failure_detail(long_err).split("\n", 1)[1].startswith(("y", "last"))  # a line start
    assert failure_detail("", "API Error: 400 messages[1]: bad role\n") == \
        "; stdout (last lines):\nAPI Error: 400 messages[1]: bad role"
    assert failure_detail("", "") == ""


def _brief(tools: FakeTools, recorder: Any) -> SessionBrief:
    return SessionBrief(session_id="s1", name="s1", protocol="intent_tracking", repeat=0,
                        system_prompt="", prior=[], tools=tools, max_steps=5,
                        turn_timeout_s=30, seed=0, recorder=recorder)


def _acp_session(fake: FakeOpenAI, turns: list[str]) -> tuple[list[Any], list[LLMCallRecord]]:
    calls: list[LLMCallRecord] = []

    async def go() -> list[Any]:
        agent = make_adapter(f"--model openai/m {shlex.join([sys.executable, str(AGENT)])}",
                             AgentContext(llm=lambda: LLMClient(LLMConfig(
                                 api_base=fake.base_url, api_key="k", max_retries=0))))
        tools = FakeTools()
        session = await agent.open(_brief(tools, calls.append))
        out = []
        try:
            for k, text in enumerate(turns, 1):
                tools.turn = k
                out.append(await session.turn(text, None))
        finally:
            await session.close()
            await agent.aclose()
        return out

    return asyncio.run(go()), calls


def test_acp_notices_and_thoughts_are_stored_apart(fake_openai: FakeOpenAI) -> None:
    fake_openai.text(REPLY, prompt_tokens=9, completion_tokens=7)
    [with_model, without], calls = _acp_session(fake_openai, ["Who needs a call?",
                                                              "NOMODEL again"])
    assert with_model.text == REPLY and with_model.error is None
    apart = [json.loads(m.content) for m in with_model.messages
             if m.role == "tool" and m.name == "harness"]
    assert apart == [{"title": "thought", "kind": "thought", "text": "Let me think: 先查日志."},
                     {"title": "notice", "kind": "notice", "text": WARNING}]
    assert [m.content for m in with_model.messages if m.role == "assistant"] == [REPLY]
    assert [(c.prompt_tokens, c.completion_tokens) for c in calls] == [(9, 7)]
    # a turn with no proxied model call: the warning cannot be told apart and stays
    assert without.text == WARNING + "No model this time."
    assert [json.loads(m.content)["kind"] for m in without.messages
            if m.role == "tool" and m.name == "harness"] == ["thought"]


def test_acp_crash_quotes_the_whole_traceback(fake_openai: FakeOpenAI) -> None:
    [reply], _ = _acp_session(fake_openai, ["CRASH now"])
    assert reply.stop_reason == "error"
    error = reply.error or ""
    assert "the agent exited with code 2" in error
    tb = error.split("stderr (last lines):\n", 1)[1]
    assert tb.startswith("Traceback (most recent call last):\n")
    assert 'step_0.py' in tb and tb.endswith("KeyError: 'model'\nthe agent could not start")


def test_cmd2_error_printed_on_stdout_is_quoted(tmp_path: Path) -> None:
    script = tmp_path / "h.sh"
    script.write_text("echo 'API Error: 400 messages[1]: bad role'\necho 'line two'\nexit 1\n")

    async def go() -> Any:
        agent = Cmd2Agent(f"sh {script}", llm=lambda: LLMClient(LLMConfig(
            api_base="http://127.0.0.1:9/v1", api_key="k", max_retries=0)))
        session = await agent.open(_brief(FakeTools(), None))
        try:
            return await session.turn("hi", None)
        finally:
            await session.close()
            await agent.aclose()

    reply = asyncio.run(go())
    assert reply.stop_reason == "error"
    assert reply.error == ("the harness exited with code 1; stdout (last lines):\n"
                           "API Error: 400 messages[1]: bad role\nline two")
