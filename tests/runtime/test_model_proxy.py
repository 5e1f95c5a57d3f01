"""The recording model proxy (issue 14, item 3): a harness process using the official `openai`
client against the proxy yields `llm_calls` records with the upstream's token counts, in the
right session and turn; cache hits are recorded; upstream errors come back OpenAI-shaped."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_openai import FakeOpenAI, FakeReply, completion_body, fake_openai_fixture  # noqa: F401

from benchpack.runtime.cache import ResponseCache
from benchpack.runtime.llm import LLMClient, LLMConfig
from benchpack.runtime.proxy import ModelProxy
from benchpack.runtime.types import LLMCallRecord

HARNESS = '''
import json, os, sys
from openai import OpenAI
client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"])
out = []
for text in sys.argv[1:]:
    if text == "STREAM":
        stream = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "stream please"}],
            stream=True, stream_options={"include_usage": True})
        parts, usage = [], None
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
            if chunk.usage:
                usage = chunk.usage.model_dump()
        out.append({"content": "".join(parts), "usage": usage})
        continue
    try:
        r = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": text}], temperature=0)
        out.append({"content": r.choices[0].message.content, "usage": r.usage.model_dump()})
    except Exception as exc:
        out.append({"error": type(exc).__name__, "status": getattr(exc, "status_code", None),
                    "body": getattr(exc, "body", None)})
print(json.dumps(out))
'''


def _client(fake: FakeOpenAI, tmp_path: Path, cache: bool = True) -> LLMClient:
    store = ResponseCache(tmp_path / "cache")
    store.enabled = cache
    return LLMClient(LLMConfig(api_base=fake.base_url, api_key="no-key", max_retries=0),
                     cache=store)


async def _harness(tmp_path: Path, base_url: str, key: str, *texts: str) -> list[Any]:
    script = tmp_path / "harness.py"
    script.write_text(HARNESS, encoding="utf-8")
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": key}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(script), *texts, env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    result: list[Any] = json.loads(out)
    return result


def _usage_by_text(body: dict[str, Any]) -> FakeReply:
    text = body["messages"][-1]["content"]
    tokens = {"alpha": (12, 3), "beta": (7, 2), "stream please": (5, 4)}.get(text, (1, 1))
    return FakeReply(body=completion_body(body["model"], {"role": "assistant",
                                                          "content": f"re: {text}"},
                                          "stop", *tokens, seq=1))


def test_two_sessions_at_once_are_recorded_apart_with_the_upstream_tokens(
        fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.route("fake-model", _usage_by_text)
    a: list[LLMCallRecord] = []
    b: list[LLMCallRecord] = []

    async def go() -> tuple[list[Any], list[Any]]:
        proxy = ModelProxy(_client(fake_openai, tmp_path), model="openai/fake-model")
        await proxy.start()
        try:
            ra = proxy.open_session(recorder=a.append, turn=lambda: 2, seed=0, repeat=0)
            rb = proxy.open_session(recorder=b.append, turn=lambda: 5, seed=0, repeat=1)
            assert ra.base_url != rb.base_url
            return await asyncio.gather(
                _harness(tmp_path, ra.base_url, ra.api_key, "alpha", "alpha", "STREAM"),
                _harness(tmp_path, rb.base_url, rb.api_key, "beta"))
        finally:
            await proxy.aclose()

    out_a, out_b = asyncio.run(go())
    assert out_a[0] == {"content": "re: alpha", "usage": {
        "prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15,
        "completion_tokens_details": None, "prompt_tokens_details": None}}
    assert out_a[1]["content"] == "re: alpha" and out_a[1]["usage"]["prompt_tokens"] == 12
    assert out_a[2]["content"] == "re: stream please"
    assert out_a[2]["usage"]["prompt_tokens"] == 5 and out_a[2]["usage"]["completion_tokens"] == 4
    assert out_b[0]["content"] == "re: beta"
    # session A: alpha (upstream), alpha again (cache hit, same tokens), the streamed call
    assert [(r.role, r.purpose, r.turn, r.prompt_tokens, r.completion_tokens, r.cache_hit)
            for r in a] == [("agent", "proxy", 2, 12, 3, False), ("agent", "proxy", 2, 12, 3, True),
                            ("agent", "proxy", 2, 5, 4, False)]
    assert [(r.turn, r.prompt_tokens, r.completion_tokens, r.cache_hit) for r in b] == \
        [(5, 7, 2, False)]
    assert all(r.model == "openai/fake-model" for r in a + b) and all(r.error is None for r in a + b)
    # the cache hit made no request: 2 for A, 1 for B
    assert len(fake_openai.requests) == 3


def test_repeats_are_not_served_each_others_cached_answers(
        fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.route("fake-model", _usage_by_text)
    calls: list[LLMCallRecord] = []

    async def go() -> None:
        proxy = ModelProxy(_client(fake_openai, tmp_path), model="openai/fake-model")
        await proxy.start()
        try:
            for repeat in (0, 1):
                route = proxy.open_session(recorder=calls.append, turn=lambda: 1, repeat=repeat)
                await _harness(tmp_path, route.base_url, route.api_key, "alpha")
        finally:
            await proxy.aclose()

    asyncio.run(go())
    assert [c.cache_hit for c in calls] == [False, False]


def test_upstream_errors_come_back_openai_shaped_and_are_recorded(
        fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.error(400, "context too long", err_type="invalid_request_error")
    fake_openai.error(503, "overloaded")
    calls: list[LLMCallRecord] = []

    async def go() -> list[Any]:
        proxy = ModelProxy(_client(fake_openai, tmp_path, cache=False), model="openai/fake-model")
        await proxy.start()
        try:
            route = proxy.open_session(recorder=calls.append, turn=lambda: 1)
            return await _harness(tmp_path, route.base_url, route.api_key, "one", "two")
        finally:
            await proxy.aclose()

    first, second = asyncio.run(go())
    assert first["error"] == "BadRequestError" and first["status"] == 400
    assert "context too long" in first["body"]["message"]
    assert first["body"]["type"] == "invalid_request_error"
    assert second["error"] == "InternalServerError" and second["status"] == 503
    # `x-should-retry: false`: the SDK did not retry on top of the client (2 requests, not 4+)
    assert len(fake_openai.requests) == 2
    assert len(calls) == 2 and all(c.error and c.role == "agent" for c in calls)
    assert [c.prompt_tokens for c in calls] == [0, 0]


def test_unknown_tokens_bad_bodies_and_models(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    async def go() -> list[httpx.Response]:
        proxy = ModelProxy(_client(fake_openai, tmp_path), model="openai/fake-model")
        await proxy.start()
        try:
            route = proxy.open_session(recorder=lambda r: None, turn=lambda: None)
            async with httpx.AsyncClient() as http:
                gone = await http.post(f"{proxy.url}/s/nope/v1/chat/completions", json={})
                bad = await http.post(f"{route.base_url}/chat/completions", content=b"{")
                empty = await http.post(f"{route.base_url}/chat/completions",
                                        json={"messages": []})
                models = await http.get(f"{route.base_url}/models")
                proxy.close_session(route)
                closed = await http.get(f"{route.base_url}/models")
            return [gone, bad, empty, models, closed]
        finally:
            await proxy.aclose()

    gone, bad, empty, models, closed = asyncio.run(go())
    assert gone.status_code == 401 and gone.json()["error"]["code"] == "invalid_api_key"
    assert bad.status_code == 400 and "not JSON" in bad.json()["error"]["message"]
    assert empty.status_code == 400 and empty.json()["error"]["param"] is None
    assert models.json()["data"][0]["id"] == "openai/fake-model"
    assert closed.status_code == 401
    assert fake_openai.requests == []


@pytest.mark.parametrize("text", ["你好，帮我查一下日程", "Crème brûlée"])
def test_chinese_and_accents_round_trip(fake_openai: FakeOpenAI, tmp_path: Path,
                                        text: str) -> None:
    fake_openai.route("fake-model", lambda body: "回复: " + body["messages"][-1]["content"])

    async def go() -> list[Any]:
        proxy = ModelProxy(_client(fake_openai, tmp_path), model="openai/fake-model")
        await proxy.start()
        try:
            route = proxy.open_session(recorder=lambda r: None, turn=lambda: 1)
            return await _harness(tmp_path, route.base_url, route.api_key, text)
        finally:
            await proxy.aclose()

    assert asyncio.run(go())[0]["content"] == "回复: " + text
