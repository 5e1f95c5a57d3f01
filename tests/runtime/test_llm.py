"""LLMClient, ResponseCache and LiteLLMAgent: through real litellm against a local fake
OpenAI server (`fake_openai.py`), plus backend-injected unit tests. No internet: a guard makes
any non-loopback connection fail."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, FakeReply, fake_openai_fixture  # noqa: F401  (the fixture)

from benchpack.runtime.agents.litellm_agent import LiteLLMAgent
from benchpack.runtime.cache import ResponseCache, sha256_json
from benchpack.runtime.llm import (
    BackendRequest,
    FakeBackend,
    LLMClient,
    LLMConfig,
    LLMError,
    RateLimiter,
    parse_arguments,
    retry_after_s,
)
from benchpack.runtime.types import LLMCallRecord, Message, SessionBrief, ToolRecord

MODEL = "openai/fake-model"
KEY = "sk-test"

LOOPBACK = {"127.0.0.1", "::1", "localhost"}


@pytest.fixture(autouse=True)
def _no_internet(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and address[0] not in LOOPBACK:
            raise OSError(f"test tried to reach the network: {address!r}")
        return real_connect(self, address)

    def getaddrinfo(host: Any, *args: Any, **kw: Any) -> Any:
        if host not in LOOPBACK and host is not None:
            raise OSError(f"test tried to resolve {host!r}")
        return real_getaddrinfo(host, *args, **kw)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield


def make_client(server: FakeOpenAI, tmp_path: Path, *, key: str = KEY, cache: bool = True,
                **cfg: Any) -> LLMClient:
    config = LLMConfig(api_base=server.base_url, api_key=key, backoff_base_s=0.01,
                       backoff_max_s=0.05, timeout_s=5.0, **cfg)
    return LLMClient(config, cache=ResponseCache(tmp_path / "cache", enabled=cache))


async def ask(client: LLMClient, records: list[LLMCallRecord], text: str = "Hi",
              **kw: Any) -> Any:
    return await client.complete(role=kw.pop("role", "judge"), model=kw.pop("model", MODEL),
                                 messages=[{"role": "user", "content": text}],
                                 recorder=records.append, **kw)


# --------------------------------------------------------------------------- stub tools


LOOKUP_SPEC = {"type": "function", "function": {
    "name": "lookup", "description": "Look up a task by id",
    "parameters": {"type": "object", "properties": {"id": {"type": "string"}},
                   "required": ["id"]}}}


class StubTools:
    """A ToolHandle that records every call and answers `{"id", "title"}`."""

    def __init__(self) -> None:
        self.specs: list[dict[str, Any]] = [LOOKUP_SPEC]
        self.calls: list[tuple[str, dict[str, Any], str | None, int]] = []
        self.turn = 0
        self.step = 0

    async def call(self, name: str, args: dict[str, Any], call_id: str | None = None
                   ) -> ToolRecord:
        self.calls.append((name, args, call_id, self.step))
        if name != "lookup":
            return ToolRecord(call_id or "c", name, args, None, f"unknown tool `{name}`",
                              time.time(), 0.0, turn=self.turn, step=self.step)
        return ToolRecord(call_id or "c", name, args, {"id": args.get("id"), "title": "Restock"},
                          None, time.time(), 0.0, turn=self.turn, step=self.step)


def make_brief(tools: StubTools, **kw: Any) -> SessionBrief:
    base: dict[str, Any] = {
        "session_id": "session.p.e.s", "name": "s", "protocol": "intent_tracking", "repeat": 0,
        "system_prompt": "You are a helpful assistant.",
        "prior": [Message("user", "Earlier question", 1), Message("assistant", "Earlier answer", 1)],
        "tools": tools, "max_steps": 5, "turn_timeout_s": 20.0, "seed": 7, "temperature": 0.0}
    base.update(kw)
    return SessionBrief(**base)


# --------------------------------------------------------------------------- litellm + server


def test_text_completion_records_usage(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.text("Hello there", prompt_tokens=12, completion_tokens=3)
    client = make_client(fake_openai, tmp_path)
    records: list[LLMCallRecord] = []
    resp = asyncio.run(ask(client, records, model=f"litellm:{MODEL}", purpose="rubric", turn=2,
                           params={"temperature": 0}))
    assert resp.content == "Hello there" and resp.tool_calls == [] and not resp.cache_hit
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (12, 3)
    assert resp.raw_message == {"role": "assistant", "content": "Hello there"}
    [rec] = records
    assert (rec.role, rec.model, rec.prompt_tokens, rec.completion_tokens) == \
        ("judge", MODEL, 12, 3)
    assert (rec.attempts, rec.cache_hit, rec.error, rec.turn, rec.purpose) == \
        (1, False, None, 2, "rubric")
    assert rec.cost is None  # the fake model has no price
    # messages plus a digest of the tool specs (hashed once per session, not per call)
    assert rec.prompt_hash == sha256_json({"messages": [{"role": "user", "content": "Hi"}],
                                           "tools": ""})
    assert rec.latency_s > 0 and abs(rec.started_at - time.time()) < 60
    [body] = fake_openai.requests
    assert body["model"] == "fake-model" and body["seed"] == 0 and body["temperature"] == 0
    assert body["messages"] == [{"role": "user", "content": "Hi"}]
    assert fake_openai.headers[0]["authorization"] == f"Bearer {KEY}"


def test_agent_tool_loop(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.tool_call("lookup", {"id": "T-1"}, call_id="call_a", prompt_tokens=20)
    fake_openai.text("T-1 is Restock.", prompt_tokens=30, completion_tokens=4)
    client = make_client(fake_openai, tmp_path)
    tools = StubTools()
    brief = make_brief(tools)
    routed: list[LLMCallRecord] = []
    brief.recorder = routed.append  # type: ignore[attr-defined]  # as the runner routes
    agent = LiteLLMAgent(f"litellm:{MODEL}", client)
    assert agent.name == f"litellm:{MODEL}"

    async def go() -> Any:
        session = await agent.open(brief)
        reply = await session.turn("What is T-1?", None)
        await session.close()
        return reply

    reply = asyncio.run(go())
    assert (reply.stop_reason, reply.steps, reply.text, reply.error) == \
        ("answer", 2, "T-1 is Restock.", None)
    assert tools.calls == [("lookup", {"id": "T-1"}, "call_a", 1)]
    assert [r.tool_name for r in reply.tool_records] == ["lookup"]
    assert [(m.role, m.content) for m in reply.messages] == [
        ("assistant", ""), ("tool", '{"id": "T-1", "title": "Restock"}'),
        ("assistant", "T-1 is Restock.")]
    assert reply.messages[0].tool_calls == [{"id": "call_a", "name": "lookup",
                                             "arguments": {"id": "T-1"}}]
    assert reply.messages[1].tool_call_id == "call_a"
    first, second = fake_openai.requests
    assert first["tools"] == [LOOKUP_SPEC] and first["seed"] == 7
    assert [m["role"] for m in first["messages"]] == ["system", "user", "user", "assistant",
                                                      "user"]
    assert first["messages"][1]["content"].startswith("[Earlier sessions]")
    assert first["messages"][-1]["content"] == "[Current session]\nWhat is T-1?"
    assert second["messages"][-2]["tool_calls"][0]["function"] == {
        "name": "lookup", "arguments": '{"id": "T-1"}'}
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_a",
                                      "content": '{"id": "T-1", "title": "Restock"}'}
    assert [(r.role, r.prompt_tokens, r.turn, r.purpose) for r in routed] == [
        ("agent", 20, 1, "agent_step"), ("agent", 30, 1, "agent_step")]


def test_rate_limit_then_success_honours_retry_after(fake_openai: FakeOpenAI,
                                                     tmp_path: Path) -> None:
    fake_openai.rate_limit(retry_after="0.3").text("ok")
    records: list[LLMCallRecord] = []
    t0 = time.perf_counter()
    resp = asyncio.run(ask(make_client(fake_openai, tmp_path), records))
    assert resp.content == "ok" and resp.attempts == 2
    assert time.perf_counter() - t0 >= 0.3
    assert len(records) == 1 and records[0].attempts == 2 and records[0].error is None
    assert len(fake_openai.requests) == 2  # the provider client did not retry on its own


def test_server_errors_twice_then_success(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.error(500).error(503).text("fine")
    records: list[LLMCallRecord] = []
    resp = asyncio.run(ask(make_client(fake_openai, tmp_path), records))
    assert resp.content == "fine"
    assert [(r.attempts, r.error) for r in records] == [(3, None)]
    assert len(fake_openai.requests) == 3


def test_malformed_response_json_is_retried(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.malformed().text("fine")
    records: list[LLMCallRecord] = []
    assert asyncio.run(ask(make_client(fake_openai, tmp_path), records)).content == "fine"
    assert records[0].attempts == 2


def test_empty_choices_is_a_retryable_provider_error(fake_openai: FakeOpenAI,
                                                     tmp_path: Path) -> None:
    """A 200 whose `choices` is empty (content filters, overloaded gateways) is retried, and
    when it persists the error says what happened (it was an IndexError, not retried)."""
    empty = {"id": "x", "object": "chat.completion", "created": 0, "model": MODEL,
             "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 0}}
    fake_openai.push(FakeReply(body=empty)).text("fine")
    records: list[LLMCallRecord] = []
    client = make_client(fake_openai, tmp_path, max_retries=1)
    assert asyncio.run(ask(client, records)).content == "fine"
    assert records[0].attempts == 2
    fake_openai.push(FakeReply(body=empty), FakeReply(body=empty))
    with pytest.raises(LLMError) as info:
        asyncio.run(ask(client, records, text="again"))
    assert info.value.retryable and "no choices" in str(info.value), str(info.value)
    assert "IndexError" not in str(info.value) and records[-1].attempts == 2


@pytest.mark.parametrize(("status", "message", "code"), [
    (400, "bad request", None),
    (401, "invalid api key", None),
    (404, "model not found", None),
    (400, "This model's maximum context length is 8192 tokens", "context_length_exceeded"),
])
def test_non_retryable_errors_fail_at_once(fake_openai: FakeOpenAI, tmp_path: Path,
                                           status: int, message: str, code: str | None) -> None:
    fake_openai.error(status, message, code=code, err_type="invalid_request_error")
    records: list[LLMCallRecord] = []
    with pytest.raises(LLMError) as info:
        asyncio.run(ask(make_client(fake_openai, tmp_path), records))
    assert info.value.retryable is False and info.value.attempts == 1
    assert len(fake_openai.requests) == 1
    [rec] = records
    assert rec.attempts == 1 and rec.error and message in rec.error


def test_missing_api_key_fails_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # litellm reports a missing key as an InternalServerError (500), normally retryable
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = LLMConfig(backoff_base_s=0.01, backoff_max_s=0.05, timeout_s=5.0, max_retries=3)
    client = LLMClient(config, cache=ResponseCache(tmp_path / "cache", enabled=False))
    records: list[LLMCallRecord] = []
    with pytest.raises(LLMError) as info:
        asyncio.run(ask(client, records, model="openai/gpt-4o-mini"))
    assert info.value.retryable is False and info.value.attempts == 1
    assert "Missing credentials" in str(info.value)


def test_timeout_is_retried_then_fails(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.hang(10).hang(10)
    records: list[LLMCallRecord] = []
    client = make_client(fake_openai, tmp_path, max_retries=1)
    t0 = time.perf_counter()
    with pytest.raises(LLMError) as info:
        asyncio.run(ask(client, records, timeout_s=0.4))
    assert time.perf_counter() - t0 < 5
    assert info.value.retryable is True and info.value.attempts == 2
    assert "Timeout" in str(info.value)
    assert len(fake_openai.requests) == 2
    assert [r.attempts for r in records] == [2] and records[0].error


def test_cache_hit_makes_no_request(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.tool_call("lookup", {"id": "T-9"}, call_id="call_z", prompt_tokens=40,
                          completion_tokens=6)
    client = make_client(fake_openai, tmp_path)
    records: list[LLMCallRecord] = []

    async def twice() -> tuple[Any, Any]:
        kw: dict[str, Any] = {"tools": [LOOKUP_SPEC], "seed": 3, "repeat": 1}
        return await ask(client, records, **kw), await ask(client, records, **kw)

    first, second = asyncio.run(twice())
    assert len(fake_openai.requests) == 1
    assert second.cache_hit and not first.cache_hit
    assert second.raw_message == first.raw_message and second.tool_calls == first.tool_calls
    assert second.tool_calls[0].args == {"id": "T-9"}
    assert [(r.cache_hit, r.attempts, r.cost, r.prompt_tokens) for r in records] == [
        (False, 1, None, 40), (True, 0, 0.0, 40)]
    assert records[1].latency_s < 0.5 and records[1].error is None


def test_repeat_index_changes_the_cache_key(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.text("sample 0").text("sample 1")
    client = make_client(fake_openai, tmp_path)
    records: list[LLMCallRecord] = []

    async def go() -> list[str | None]:
        return [(await ask(client, records, repeat=r)).content for r in (0, 1, 0, 1)]

    assert asyncio.run(go()) == ["sample 0", "sample 1", "sample 0", "sample 1"]
    assert len(fake_openai.requests) == 2
    assert [r.cache_hit for r in records] == [False, False, True, True]


def test_cache_disabled_always_calls(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.text("a").text("b")
    client = make_client(fake_openai, tmp_path, cache=False)
    records: list[LLMCallRecord] = []

    async def go() -> list[str | None]:
        return [(await ask(client, records)).content for _ in range(2)]

    assert asyncio.run(go()) == ["a", "b"]
    assert not (tmp_path / "cache").exists()


def test_secrets_never_reach_records_or_cache(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    secret = "sk-test-SECRET-0123456789"
    fake_openai.text("ok").error(400, f"Incorrect API key provided: {secret}")
    client = make_client(fake_openai, tmp_path, key=secret)
    records: list[LLMCallRecord] = []

    async def go() -> None:
        await ask(client, records)
        with pytest.raises(LLMError) as info:
            await ask(client, records, text="other")
        assert secret not in str(info.value) and "***" in str(info.value)

    asyncio.run(go())
    assert all(h["authorization"] == f"Bearer {secret}" for h in fake_openai.headers)
    assert len(records) == 2
    for rec in records:
        assert secret not in json.dumps(asdict(rec)) and secret not in repr(rec)
    # the database and its WAL hold the stored answer, never the key
    stored = b"".join(p.read_bytes() for p in (tmp_path / "cache").iterdir())
    assert b'"content":"ok"' in stored and secret.encode() not in stored
    assert secret not in repr(client.config)


def test_agent_step_budget(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    for i in range(3):
        fake_openai.tool_call("lookup", {"id": f"T-{i}"}, content=f"checking {i}")
    fake_openai.text("after the budget")
    tools = StubTools()
    brief = make_brief(tools, max_steps=3, prior=[])
    agent = LiteLLMAgent(MODEL, make_client(fake_openai, tmp_path))

    async def go() -> tuple[Any, Any]:
        session = await agent.open(brief)
        first = await session.turn("Look everything up", None)
        second = await session.turn(None, {"kind": "webhook", "payload": {"n": 1}})
        return first, second

    first, second = asyncio.run(go())
    assert (first.stop_reason, first.steps, first.text) == ("step_budget", 3, "checking 2")
    assert [c[1]["id"] for c in tools.calls] == ["T-0", "T-1", "T-2"]
    assert [c[3] for c in tools.calls] == [1, 2, 3]
    assert (second.stop_reason, second.text) == ("answer", "after the budget")
    last = fake_openai.requests[-1]["messages"]
    assert [m["role"] for m in last[-3:]] == ["assistant", "tool", "user"]
    assert last[-1]["content"] == '[environment event] {"kind": "webhook", "payload": {"n": 1}}'
    assert last[0] == {"role": "system", "content": "You are a helpful assistant."}


def test_agent_turn_timeout_and_llm_error(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.hang(10).error(401, "invalid api key")
    tools = StubTools()
    agent = LiteLLMAgent(MODEL, make_client(fake_openai, tmp_path))
    records: list[LLMCallRecord] = []

    async def go() -> tuple[Any, Any]:
        brief = make_brief(tools, turn_timeout_s=0.5)
        brief.recorder = records.append
        session = await agent.open(brief)
        return await session.turn("slow", None), await session.turn("again", None)

    t0 = time.perf_counter()
    slow, failed = asyncio.run(go())
    assert time.perf_counter() - t0 < 5
    assert (slow.stop_reason, slow.steps) == ("timeout", 0)
    assert failed.stop_reason == "error" and failed.error and "invalid api key" in failed.error
    assert len(records) == 2 and records[0].error == "cancelled"
    assert "invalid api key" in (records[1].error or "") and records[1].attempts == 1


def test_agent_malformed_tool_arguments(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.tool_call("lookup", '{"id": "T-1"', call_id="call_bad")
    fake_openai.text("Sorry.")
    tools = StubTools()
    agent = LiteLLMAgent(MODEL, make_client(fake_openai, tmp_path))

    async def go() -> Any:
        return await (await agent.open(make_brief(tools))).turn("Look up T-1", None)

    reply = asyncio.run(go())
    assert tools.calls == []  # not executed
    [rec] = reply.tool_records
    assert rec.call == {"_raw": '{"id": "T-1"'} and rec.error and "not valid JSON" in rec.error
    tool_msg = fake_openai.requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["content"].startswith("Error: the arguments")
    assert reply.stop_reason == "answer"


# --------------------------------------------------------------------------- no litellm needed


def test_backend_injection_concurrency_and_rate_limits(tmp_path: Path) -> None:
    active = peak = 0

    async def backend(req: BackendRequest) -> dict[str, Any]:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        return {"message": {"role": "assistant", "content": req.messages[-1]["content"]},
                "usage": {"prompt_tokens": 1, "completion_tokens": 1}, "cost": 0.5}

    client = LLMClient(LLMConfig(max_concurrent_per_model=2,
                                 requests_per_minute={"litellm:m": 1200}), backend=backend)
    records: list[LLMCallRecord] = []

    async def go() -> list[Any]:
        return await asyncio.gather(*(ask(client, records, str(i), model="litellm:m")
                                      for i in range(24)))

    t0 = time.perf_counter()
    out = asyncio.run(go())
    assert [r.content for r in out] == [str(i) for i in range(24)]
    assert peak == 2 and len(records) == 24 and all(r.cost == 0.5 for r in records)
    assert time.perf_counter() - t0 >= 0.15  # 20 per second after a burst of 20


def test_rate_limiter_spacing() -> None:
    async def go() -> float:
        limiter = RateLimiter(600)  # 10 per second, bursts of 10
        t0 = time.perf_counter()
        for _ in range(13):
            await limiter.acquire()
        return time.perf_counter() - t0

    assert 0.25 <= asyncio.run(go()) < 1.0


def test_fake_backend_retry_classification_and_cancellation() -> None:
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    class Status(Exception):
        def __init__(self, code: int) -> None:
            super().__init__(f"status {code}")
            self.status_code = code

    backend = FakeBackend([ConnectionError("reset"), Status(502),
                           LLMError("slow down", True, retry_after=7.0), "done",
                           Status(422), ValueError("a bug")])
    client = LLMClient(LLMConfig(backoff_base_s=1.0, backoff_max_s=2.0), backend=backend,
                       sleep=sleep)
    records: list[LLMCallRecord] = []

    async def go() -> None:
        assert (await ask(client, records)).content == "done"
        with pytest.raises(LLMError) as info:
            await ask(client, records)
        assert info.value.retryable is False and info.value.status_code == 422
        with pytest.raises(LLMError, match="a bug"):
            await ask(client, records)
        hang = asyncio.Event()

        async def never(req: BackendRequest) -> str:
            await hang.wait()
            return "never"

        client.backend = never
        task = asyncio.create_task(ask(client, records))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert slept[2] == 7.0 and 0.5 <= slept[0] <= 1.5 and 1.0 <= slept[1] <= 2.0
    assert [(r.attempts, r.error is None) for r in records] == [
        (4, True), (1, False), (1, False), (1, False)]
    assert records[-1].error == "cancelled"


def test_corrupted_cache_entry_is_a_miss_for_the_client(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    client = LLMClient(LLMConfig(), cache=cache, backend=FakeBackend(["fresh"]))
    msgs = [{"role": "user", "content": "Hi"}]
    cache.put(ResponseCache.key("m", msgs, None, {}, 0, 0), {"message": "not a dict"})
    records: list[LLMCallRecord] = []
    assert asyncio.run(ask(client, records, model="m")).content == "fresh"
    assert not records[0].cache_hit


def test_parse_arguments_and_retry_after() -> None:
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments("") == {} and parse_arguments(None) == {}
    assert parse_arguments("[1]") == {"_raw": "[1]"}
    assert parse_arguments("{oops") == {"_raw": "{oops"}

    class E(Exception):
        def __init__(self, headers: dict[str, str]) -> None:
            super().__init__("x")
            self.litellm_response_headers = headers

    assert retry_after_s(E({"Retry-After": "3"})) == 3.0
    assert retry_after_s(E({"retry-after-ms": "250"})) == 0.25
    assert retry_after_s(E({})) is None
    assert 50 < (retry_after_s(E({"retry-after": time.strftime(
        "%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 100))})) or 0) <= 100


def test_a_cancelled_caller_is_not_retried_when_the_backend_reports_a_timeout() -> None:
    """A turn's deadline and the backend's own timer expiring in the same loop step: aiohttp
    turns both cancellations into its TimeoutError. The client must not retry (a retry took
    the next queued answer, and the turn ended `error` instead of `timeout`): the caller's
    cancellation goes on, recorded as cancelled."""
    calls: list[int] = []

    async def backend(req: Any) -> Any:
        calls.append(1)
        task = asyncio.current_task()
        assert task is not None
        task.cancel()  # the caller's deadline …
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:  # … taken by the backend's timer, as aiohttp does
            raise TimeoutError("the request timed out") from None
        raise AssertionError("not cancelled")

    client = LLMClient(LLMConfig(backoff_base_s=0.0, backoff_max_s=0.0), backend=backend)
    records: list[LLMCallRecord] = []
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(ask(client, records))
    assert calls == [1]
    assert [r.error for r in records] == ["cancelled"]


def test_recorder_routing(tmp_path: Path) -> None:
    """Calls land where the brief says; the adapter's own recorder only serves briefs without
    one; every session also keeps its calls."""
    client = LLMClient(LLMConfig(), backend=FakeBackend(["a", "b"]))
    own: list[LLMCallRecord] = []
    on_brief: list[LLMCallRecord] = []
    agent = LiteLLMAgent("m", client, own.append)

    async def go() -> None:
        brief = make_brief(StubTools())
        brief.recorder = on_brief.append
        await (await agent.open(brief)).turn("y", None)
        s2 = await agent.open(make_brief(StubTools()))
        await s2.turn("z", None)
        assert len(s2.calls) == 1

    asyncio.run(go())
    assert (len(on_brief), len(own)) == (1, 1)


def test_import_is_lazy_and_compiler_free() -> None:
    code = ("import sys; import benchpack.runtime.llm, benchpack.runtime.cache, "
            "benchpack.runtime.agents.litellm_agent; "
            "bad = [m for m in sys.modules if m == 'litellm' or m.startswith('benchpack.compiler')];"
            " print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr

