"""Issue 26: the proxy's Gemini generateContent API (`…/v1beta/models/<m>:generateContent`,
`:streamGenerateContent?alt=sse`, `:countTokens`): contents and function calls translated for
a Chat Completions backend, the answer and the provider's usage back, errors Google-shaped."""

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
from benchpack.runtime.proxy_gemini import RequestError, translate_request
from benchpack.runtime.types import LLMCallRecord

TOOLS = [{"functionDeclarations": [{"name": "read_file", "description": "Read.",
                                    "parameters": {"type": "OBJECT", "properties": {
                                        "path": {"type": "STRING"}}}}]},
         {"googleSearch": {}}]


def _post(fake: FakeOpenAI, tmp_path: Path, path: str, body: dict[str, Any]
          ) -> tuple[httpx.Response, list[LLMCallRecord]]:
    calls: list[LLMCallRecord] = []

    async def go() -> httpx.Response:
        client = LLMClient(LLMConfig(api_base=fake.base_url, api_key="k", max_retries=0),
                           cache=ResponseCache(tmp_path / "cache"))
        proxy = ModelProxy(client, model="openai/fake-model")
        await proxy.start()
        try:
            env = proxy.open_session(recorder=calls.append, turn=lambda: 4).environment()
            async with httpx.AsyncClient() as http:
                return await http.post(env["GOOGLE_GEMINI_BASE_URL"] + path, json=body,
                                       headers={"x-goog-api-key": env["GEMINI_API_KEY"]})
        finally:
            await proxy.aclose()

    return asyncio.run(go()), calls


def test_generate_content_with_the_providers_usage(fake_openai: FakeOpenAI,
                                                   tmp_path: Path) -> None:
    fake_openai.text("INR 4.6 偏高。", prompt_tokens=17, completion_tokens=5)
    resp, calls = _post(fake_openai, tmp_path, "/v1beta/models/gemini-x:generateContent", {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [{"role": "user", "parts": [{"text": "P-1042?"}]}],
        "generationConfig": {"temperature": 0, "maxOutputTokens": 50}})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["candidates"][0]["content"] == {"role": "model",
                                                "parts": [{"text": "INR 4.6 偏高。"}]}
    assert body["candidates"][0]["finishReason"] == "STOP"
    assert body["usageMetadata"] == {"promptTokenCount": 17, "candidatesTokenCount": 5,
                                     "totalTokenCount": 22}
    sent = fake_openai.requests[0]
    assert sent["messages"] == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "P-1042?"}]
    assert (sent["temperature"], sent["max_tokens"]) == (0, 50)
    assert [(c.turn, c.prompt_tokens, c.completion_tokens) for c in calls] == [(4, 17, 5)]


def test_streamed_function_call(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.tool_call("read_file", {"path": "a.md"}, call_id="c9", prompt_tokens=30,
                          completion_tokens=4)
    resp, _ = _post(fake_openai, tmp_path,
                    "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", {
                        "contents": [{"role": "user", "parts": [{"text": "go"}]}],
                        "tools": TOOLS,
                        "toolConfig": {"functionCallingConfig": {"mode": "ANY"}}})
    [event] = [json.loads(line[6:]) for line in resp.text.splitlines()
               if line.startswith("data: ")]
    assert event["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"name": "read_file", "id": "c9", "args": {"path": "a.md"}}}]
    sent = fake_openai.requests[0]
    assert sent["tools"] == [{"type": "function", "function": {
        "name": "read_file", "description": "Read.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
    assert sent["tool_choice"] == "required"


def test_history_function_calls_and_responses_pair_up() -> None:
    call = translate_request({"contents": [
        {"role": "user", "parts": [{"text": "Hi"}]},
        {"role": "model", "parts": [{"text": "thinking…", "thought": True},
                                    {"functionCall": {"name": "read_file", "args": {"path": "a"}}},
                                    {"functionCall": {"name": "read_file", "args": {"path": "b"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "read_file", "response": {"output": "A"}}},
            {"functionResponse": {"name": "read_file", "response": {"error": "no b"}}}]},
    ]})
    assert call.messages == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1_1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "a"}'}},
            {"id": "call_1_2", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "b"}'}}]},
        {"role": "tool", "tool_call_id": "call_1_1", "content": '{"output": "A"}'},
        {"role": "tool", "tool_call_id": "call_1_2", "content": '{"error": "no b"}'}]


def test_refusals_count_tokens_and_unknown_methods(fake_openai: FakeOpenAI,
                                                   tmp_path: Path) -> None:
    with pytest.raises(RequestError, match="non-empty list"):
        translate_request({"contents": []})
    bad, calls = _post(fake_openai, tmp_path, "/v1beta/models/m:generateContent",
                       {"contents": "x"})
    assert bad.status_code == 400 and bad.json()["error"]["status"] == "INVALID_ARGUMENT"
    count, _ = _post(fake_openai, tmp_path, "/v1beta/models/m:countTokens",
                     {"contents": [{"role": "user", "parts": [{"text": "x" * 400}]}]})
    assert count.json()["totalTokens"] >= 100
    nope, _ = _post(fake_openai, tmp_path, "/v1beta/models/m:embedContent", {"content": {}})
    assert nope.status_code == 404
    assert calls == [] and fake_openai.requests == []
