"""Issue 26: the proxy's Anthropic Messages API (`…/v1/messages`): the request translated for
a Chat Completions backend (system blocks and messages, tool_use / tool_result, thinking
dropped, server tools not offered), the answer as a `message` or its event stream, the
provider's usage in both the answer and `llm_calls`, errors in Anthropic's shape."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.runtime.cache import ResponseCache
from benchpack.runtime.llm import LLMClient, LLMConfig
from benchpack.runtime.proxy import ModelProxy
from benchpack.runtime.proxy_anthropic import RequestError, translate_request
from benchpack.runtime.types import LLMCallRecord

TOOLS = [{"name": "read_file", "description": "Read a file.",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
         {"type": "web_search_20250305", "name": "web_search"}]


def _post(fake: FakeOpenAI, tmp_path: Path, path: str, body: dict[str, Any]
          ) -> tuple[httpx.Response, list[LLMCallRecord], dict[str, str]]:
    calls: list[LLMCallRecord] = []

    async def go() -> tuple[httpx.Response, dict[str, str]]:
        client = LLMClient(LLMConfig(api_base=fake.base_url, api_key="k", max_retries=0),
                           cache=ResponseCache(tmp_path / "cache"))
        proxy = ModelProxy(client, model="openai/fake-model")
        await proxy.start()
        try:
            route = proxy.open_session(recorder=calls.append, turn=lambda: 2)
            env = route.environment()
            async with httpx.AsyncClient() as http:
                resp = await http.post(env["ANTHROPIC_BASE_URL"] + path, json=body,
                                       headers={"x-api-key": env["ANTHROPIC_API_KEY"]})
                return resp, env
        finally:
            await proxy.aclose()

    resp, env = asyncio.run(go())
    return resp, calls, env


def _events(text: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for chunk in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_text_message_with_the_providers_usage(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.text("已复核。", prompt_tokens=30, completion_tokens=6)
    resp, calls, env = _post(fake_openai, tmp_path, "/v1/messages?beta=true", {
        "model": "claude-x", "max_tokens": 100, "system": [
            {"type": "text", "text": "Be brief."},
            {"type": "text", "text": "Answer in Chinese.", "cache_control": {}}],
        "messages": [{"role": "user", "content": "Check P-1042."}]})
    assert env["ANTHROPIC_BASE_URL"] + "/v1" == env["OPENAI_BASE_URL"]
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["content"] == [{"type": "text", "text": "已复核。"}]
    assert (body["stop_reason"], body["model"], body["role"]) == ("end_turn", "claude-x",
                                                                  "assistant")
    assert (body["usage"]["input_tokens"], body["usage"]["output_tokens"]) == (30, 6)
    sent = fake_openai.requests[0]
    assert sent["messages"] == [{"role": "system", "content": "Be brief.\n\nAnswer in Chinese."},
                                {"role": "user", "content": "Check P-1042."}]
    assert sent["max_tokens"] == 100
    assert [(c.turn, c.prompt_tokens, c.completion_tokens) for c in calls] == [(2, 30, 6)]


def test_streamed_tool_use(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.tool_call("read_file", {"path": "notes/复核.md"}, call_id="toolu_1",
                          content="Reading.", prompt_tokens=40, completion_tokens=8)
    resp, calls, _ = _post(fake_openai, tmp_path, "/v1/messages", {
        "model": "m", "max_tokens": 10, "stream": True, "tools": TOOLS,
        "tool_choice": {"type": "any"},
        "messages": [{"role": "user", "content": [{"type": "text", "text": "go"}]}]})
    events = _events(resp.text)
    assert [e for e, _ in events] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
        "message_stop"]
    assert events[2][1]["delta"] == {"type": "text_delta", "text": "Reading."}
    assert events[4][1]["content_block"] == {"type": "tool_use", "id": "toolu_1",
                                             "name": "read_file", "input": {}}
    assert json.loads(events[5][1]["delta"]["partial_json"]) == {"path": "notes/复核.md"}
    assert events[7][1]["delta"]["stop_reason"] == "tool_use"
    assert events[7][1]["usage"]["output_tokens"] == 8
    assert events[0][1]["message"]["usage"]["input_tokens"] == 40
    sent = fake_openai.requests[0]
    assert [t["function"]["name"] for t in sent["tools"]] == ["read_file"]
    assert sent["tool_choice"] == "required"
    assert [c.prompt_tokens for c in calls] == [40]


def test_history_blocks_become_chat_messages() -> None:
    call = translate_request({"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
            {"type": "tool_use", "id": "t2", "name": "read_file", "input": {"path": "b"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "text of a"},
            {"type": "tool_result", "tool_use_id": "t2", "is_error": True,
             "content": [{"type": "text", "text": "no file b"}]},
            {"type": "text", "text": "<system-reminder>x</system-reminder>"}]},
        {"role": "system", "content": "Late instruction."},
    ]})
    assert call.messages == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "t1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "a"}'}},
            {"id": "t2", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "b"}'}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "text of a"},
        {"role": "tool", "tool_call_id": "t2", "content": "Error: no file b"},
        {"role": "user", "content": "<system-reminder>x</system-reminder>"},
        {"role": "system", "content": "Late instruction."}]


@pytest.mark.parametrize("body, fragment", [
    ({"model": "m", "messages": []}, "non-empty list"),
    ({"model": "m", "messages": [{"role": "tool", "content": "x"}]}, "role user"),
    ({"model": "m", "messages": [{"role": "user", "content": 5}]}, "string or a list"),
])
def test_untranslatable_requests_are_refused(body: dict[str, Any], fragment: str) -> None:
    with pytest.raises(RequestError, match=fragment):
        translate_request(body)


def test_errors_are_anthropic_shaped(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.error(429, "slow down")
    resp, calls, _ = _post(fake_openai, tmp_path, "/v1/messages", {
        "model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]})
    assert resp.status_code == 429
    assert resp.json()["type"] == "error"
    assert resp.json()["error"]["type"] == "rate_limit_error"
    assert "slow down" in resp.json()["error"]["message"]
    assert len(calls) == 1 and calls[0].error is not None
    bad, calls, _ = _post(fake_openai, tmp_path, "/v1/messages", {"model": "m", "messages": 3})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
    assert calls == []


def test_count_tokens_calls_no_model(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    resp, calls, _ = _post(fake_openai, tmp_path, "/v1/messages/count_tokens", {
        "model": "m", "messages": [{"role": "user", "content": "x" * 400}]})
    assert resp.status_code == 200 and resp.json()["input_tokens"] >= 100
    assert calls == [] and fake_openai.requests == []
