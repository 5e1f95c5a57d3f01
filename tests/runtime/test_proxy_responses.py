"""Issue 26: the proxy's Responses API (`…/v1/responses`), read by the official `openai`
SDK: text, streaming, tool calls (plain, free-form, namespaced), the history translated for a
Chat Completions backend, the provider's usage in both the answer and `llm_calls`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.runtime.cache import ResponseCache
from benchpack.runtime.llm import LLMClient, LLMConfig
from benchpack.runtime.proxy import ModelProxy
from benchpack.runtime.proxy_responses import RequestError, translate_request
from benchpack.runtime.types import LLMCallRecord

openai = pytest.importorskip("openai")

TOOLS = [
    {"type": "function", "name": "read_file", "description": "Read a file.",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
    {"type": "custom", "name": "apply_patch", "description": "Apply a patch."},
    {"type": "namespace", "name": "mcp__benchpack", "tools": [
        {"type": "function", "name": "todo_create", "parameters": {"type": "object"}}]},
    {"type": "web_search"},
]


def _proxy_call(fake: FakeOpenAI, tmp_path: Path, fn: Any) -> tuple[Any, list[LLMCallRecord]]:
    calls: list[LLMCallRecord] = []

    async def go() -> Any:
        client = LLMClient(LLMConfig(api_base=fake.base_url, api_key="k", max_retries=0),
                           cache=ResponseCache(tmp_path / "cache"))
        proxy = ModelProxy(client, model="openai/fake-model")
        await proxy.start()
        try:
            route = proxy.open_session(recorder=calls.append, turn=lambda: 3)
            sdk = openai.AsyncOpenAI(base_url=route.base_url, api_key=route.api_key,
                                     max_retries=0)
            return await fn(sdk)
        finally:
            await proxy.aclose()

    return asyncio.run(go()), calls


def test_text_answer_with_the_providers_usage(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.text("你好，Walter.", prompt_tokens=21, completion_tokens=4)
    resp, calls = _proxy_call(fake_openai, tmp_path, lambda sdk: sdk.responses.create(
        model="gpt-5", instructions="Be brief.", input="Say hello 用中文."))
    assert resp.output_text == "你好，Walter."
    assert resp.status == "completed" and resp.model == "gpt-5"
    assert (resp.usage.input_tokens, resp.usage.output_tokens, resp.usage.total_tokens) == \
        (21, 4, 25)
    sent = fake_openai.requests[0]
    assert sent["model"] == "fake-model"
    assert sent["messages"] == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Say hello 用中文."}]
    assert [(c.role, c.purpose, c.turn, c.prompt_tokens, c.completion_tokens) for c in calls] \
        == [("agent", "proxy", 3, 21, 4)]


def test_streamed_tool_calls_come_back_as_their_kinds(fake_openai: FakeOpenAI,
                                                       tmp_path: Path) -> None:
    fake_openai.tool_calls([("read_file", {"path": "a.md"}, "c1"),
                            ("apply_patch", {"input": "*** Begin Patch"}, "c2"),
                            ("mcp__benchpack__todo_create", {"title": "P-1042"}, "c3")],
                           prompt_tokens=50, completion_tokens=9)

    async def stream(sdk: Any) -> Any:
        events = []
        async with sdk.responses.stream(model="m", input="go", tools=TOOLS) as s:
            async for event in s:
                events.append(event.type)
            final = await s.get_final_response()
        return events, final

    (events, final), calls = _proxy_call(fake_openai, tmp_path, stream)
    assert events[0] == "response.created" and events[-1] == "response.completed"
    assert events.count("response.output_item.done") == 3
    kinds = [(i.type, i.name, getattr(i, "namespace", None), i.call_id) for i in final.output]
    assert kinds == [("function_call", "read_file", None, "c1"),
                     ("custom_tool_call", "apply_patch", None, "c2"),
                     ("function_call", "todo_create", "mcp__benchpack", "c3")]
    assert json.loads(final.output[0].arguments) == {"path": "a.md"}
    assert final.output[1].input == "*** Begin Patch"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (50, 9)
    # hosted tools are not offered upstream; the namespace is flattened
    offered = [t["function"]["name"] for t in fake_openai.requests[0]["tools"]]
    assert offered == ["read_file", "apply_patch", "mcp__benchpack__todo_create"]
    assert [c.prompt_tokens for c in calls] == [50]


def test_history_items_become_chat_messages() -> None:
    call = translate_request({"model": "m", "tools": TOOLS, "stream": True, "input": [
        {"type": "message", "role": "developer", "content": [
            {"type": "input_text", "text": "Policy."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
        {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"},
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Checking."}]},
        {"type": "function_call", "call_id": "c1", "name": "read_file",
         "arguments": '{"path": "a"}'},
        {"type": "function_call", "call_id": "c2", "name": "todo_create",
         "namespace": "mcp__benchpack", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "text of a"},
        {"type": "function_call_output", "call_id": "c2",
         "output": [{"type": "input_text", "text": "made"}]},
        {"type": "custom_tool_call", "call_id": "c3", "name": "apply_patch", "input": "P"},
        {"type": "custom_tool_call_output", "call_id": "c3", "output": "ok"},
    ], "reasoning": {"effort": "low", "summary": "auto"}, "max_output_tokens": 99})
    assert call.stream and call.params == {"max_tokens": 99, "reasoning_effort": "low"}
    assert call.messages == [
        {"role": "system", "content": "Policy."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "a"}'}},
            {"id": "c2", "type": "function",
             "function": {"name": "mcp__benchpack__todo_create", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "text of a"},
        {"role": "tool", "tool_call_id": "c2", "content": "made"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c3", "type": "function",
             "function": {"name": "apply_patch", "arguments": '{"input": "P"}'}}]},
        {"role": "tool", "tool_call_id": "c3", "content": "ok"}]


@pytest.mark.parametrize("body, fragment", [
    ({"model": "m", "input": "x", "previous_response_id": "resp_1"}, "stores no responses"),
    ({"model": "m", "input": [{"type": "item_reference", "id": "x"}]}, "item references"),
    ({"model": "m", "input": 5}, "`input` must be"),
    ({"model": "m", "input": []}, "`input` is empty"),
])
def test_untranslatable_requests_are_refused(body: dict[str, Any], fragment: str) -> None:
    with pytest.raises(RequestError, match=fragment):
        translate_request(body)


def test_refusals_and_upstream_errors_are_openai_errors(fake_openai: FakeOpenAI,
                                                        tmp_path: Path) -> None:
    fake_openai.error(429, "slow down", err_type="requests")

    async def both(sdk: Any) -> list[Any]:
        out = []
        for kwargs in ({"input": "x", "previous_response_id": "r"}, {"input": "x"}):
            try:
                await sdk.responses.create(model="m", **kwargs)
            except openai.APIStatusError as exc:
                out.append((exc.status_code, exc.body["message"]))
        return out

    got, calls = _proxy_call(fake_openai, tmp_path, both)
    assert got[0][0] == 400 and "previous_response_id" in got[0][1]
    assert got[1][0] == 429 and "slow down" in got[1][1]
    assert len(calls) == 1 and calls[0].error is not None
