"""The direct OpenAI-compatible path (`openai_direct`) records exactly what the litellm path
records, on the same fake server: request body, every `llm_calls` field but the timings, the
response, and the retry behaviour; models litellm can price still go through litellm."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.runtime.cache import ResponseCache
from benchpack.runtime.env.toolbox import BUILTIN_SPECS
from benchpack.runtime.llm import BackendRequest, LLMClient, LLMConfig, LLMError
from benchpack.runtime.openai_direct import OpenAIDirectBackend, takes_direct_path
from benchpack.runtime.types import LLMCallRecord

TOOLS = [{"type": "function", "function": {"name": n, **s}} for n, s in BUILTIN_SPECS.items()]
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "总结笔记 é"}]
TIMING = {"latency_s", "started_at"}


def _client(server: FakeOpenAI, tmp_path: Path, direct: bool, **cfg: Any) -> LLMClient:
    return LLMClient(LLMConfig(api_base=server.base_url, api_key="sk-secret-123",
                               backoff_base_s=0.01, timeout_s=30.0, direct_openai=direct, **cfg),
                     cache=ResponseCache(tmp_path / f"cache-{direct}", enabled=False))


def _call(client: LLMClient, model: str = "litellm:openai/fake-model"
          ) -> tuple[Any, list[LLMCallRecord]]:
    records: list[LLMCallRecord] = []

    async def go() -> Any:
        try:
            return await client.complete(role="agent", model=model, messages=MESSAGES,
                                         tools=TOOLS, params={"temperature": 0}, seed=3,
                                         recorder=records.append, turn=1, purpose="p")
        except LLMError as exc:
            return exc

    return asyncio.run(go()), records


def _fields(records: list[LLMCallRecord]) -> list[dict[str, Any]]:
    return [{k: v for k, v in dataclasses.asdict(r).items() if k not in TIMING} for r in records]


def _both(server: FakeOpenAI, tmp_path: Path, script: Any, **cfg: Any) -> tuple[Any, ...]:
    script(server)
    via_litellm, lrec = _call(_client(server, tmp_path, False, **cfg))
    n = len(server.requests)
    script(server)
    direct_client = _client(server, tmp_path, True, **cfg)
    via_direct, drec = _call(direct_client)
    assert not direct_client.backend._imported  # type: ignore[attr-defined]  # litellm unused
    return via_litellm, lrec, via_direct, drec, server.requests[:n], server.requests[n:]


def test_text_answer_same_body_record_and_response(fake_openai: FakeOpenAI,
                                                   tmp_path: Path) -> None:
    lit, lrec, direct, drec, lreq, dreq = _both(
        fake_openai, tmp_path, lambda s: s.text("好的 done", prompt_tokens=42, completion_tokens=4))
    assert lreq == dreq and dreq[0]["seed"] == 3 and dreq[0]["model"] == "fake-model"
    assert (direct.content, direct.usage, direct.finish_reason, direct.raw_message,
            direct.attempts) == (lit.content, lit.usage, lit.finish_reason, lit.raw_message,
                                 lit.attempts)
    assert _fields(drec) == _fields(lrec)
    assert (drec[0].prompt_tokens, drec[0].completion_tokens, drec[0].cost) == (42, 4, None)


def test_tool_call_answer_is_the_same(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    lit, lrec, direct, drec, lreq, dreq = _both(
        fake_openai, tmp_path,
        lambda s: s.tool_call("read_file", {"path": "a.md"}, call_id="call_1"))
    assert lreq == dreq
    assert direct.raw_message == lit.raw_message and direct.tool_calls == lit.tool_calls
    assert _fields(drec) == _fields(lrec)


def test_rate_limit_is_retried_and_a_bad_key_is_not(fake_openai: FakeOpenAI,
                                                    tmp_path: Path) -> None:
    lit, lrec, direct, drec, *_ = _both(fake_openai, tmp_path,
                                        lambda s: s.rate_limit("0").text("ok"))
    assert direct.content == lit.content == "ok"
    assert drec[0].attempts == lrec[0].attempts == 2
    lit, lrec, direct, drec, *_ = _both(fake_openai, tmp_path,
                                        lambda s: s.error(401, "bad key sk-secret-123"))
    assert isinstance(direct, LLMError) and isinstance(lit, LLMError)
    assert not direct.retryable and drec[0].attempts == lrec[0].attempts == 1
    assert direct.status_code == 401 and "sk-secret-123" not in str(drec[0].error)


def test_unparsable_answer_is_retried(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.malformed().text("fine")
    resp, records = _call(_client(fake_openai, tmp_path, True))
    assert resp.content == "fine" and records[0].attempts == 2


def test_timeout_is_retried_then_given_up(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.hang(1.0).hang(1.0)
    client = _client(fake_openai, tmp_path, True, max_retries=1)
    client.config.timeout_s = 0.2
    out, records = _call(client)
    assert isinstance(out, LLMError) and out.retryable and out.attempts == 2
    assert "timed out" in str(records[0].error) and records[0].attempts == 2


def test_models_litellm_can_price_and_the_opt_out_keep_litellm(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def req(model: str, base: str | None = "http://x/v1") -> BackendRequest:
        return BackendRequest(model=model, messages=[], tools=None, params={}, seed=None,
                              timeout_s=1.0, api_base=base)

    assert takes_direct_path(req("openai/my-local-llama"))
    assert not takes_direct_path(req("openai/gpt-4o-mini"))  # priced: cost from litellm
    assert not takes_direct_path(req("openai/my-local-llama", None))  # no api_base
    assert not takes_direct_path(req("anthropic/claude-x"))
    assert not takes_direct_path(req("openai/my-local-llama"), enabled=False)
    monkeypatch.setenv("BENCH_LITELLM_ONLY", "1")
    assert not takes_direct_path(req("openai/my-local-llama"))


def test_direct_backend_is_not_used_for_a_custom_backend() -> None:
    client = LLMClient(LLMConfig(api_base="http://x/v1"), backend=lambda r: "x")  # type: ignore
    assert client._backend_for(BackendRequest(
        model="openai/m", messages=[], tools=None, params={}, seed=None, timeout_s=1.0,
        api_base="http://x/v1")) is client.backend
    assert not isinstance(client.backend, OpenAIDirectBackend)


def test_pool_is_closed_with_its_event_loop_and_reused_within_it(
        fake_openai: FakeOpenAI, recwarn: pytest.WarningsRecorder,
        caplog: pytest.LogCaptureFixture) -> None:
    backend = OpenAIDirectBackend()
    req = BackendRequest(model="openai/fake-model", messages=MESSAGES, tools=None, params={},
                         seed=None, timeout_s=5.0, api_base=fake_openai.base_url)
    seen: list[Any] = []

    async def go() -> None:
        for _ in range(3):
            await backend(req)
            seen.append(await backend._session())

    for _ in range(3):
        fake_openai.text("ok")
    asyncio.run(go())
    assert len({id(s) for s in seen}) == 1  # one pool per loop, not one per call
    assert seen[0].closed  # asyncio.run closed it: no caller had to
    fake_openai.text("again")
    asyncio.run(backend(req))  # a new loop gets a new pool, closed with it too
    assert not [w for w in recwarn if "nclosed" in str(w.message)]
    assert "nclosed" not in caplog.text


def test_refused_connection_is_a_retryable_connection_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = LLMClient(LLMConfig(api_base=f"http://127.0.0.1:{port}/v1", api_key="k",
                                 backoff_base_s=0.01, max_retries=1, timeout_s=5.0),
                       cache=ResponseCache(tmp_path / "c", enabled=False))
    out, records = _call(client)
    assert isinstance(out, LLMError) and out.retryable and out.attempts == 2
    assert "Connect" in str(records[0].error)


def test_spliced_body_is_the_same_json_as_the_plain_one() -> None:
    import json

    from benchpack.runtime.cache import canonical_json, message_chunks
    from benchpack.runtime.openai_direct import _body

    def req(**kw: Any) -> BackendRequest:
        base: dict[str, Any] = dict(model="openai/m", messages=MESSAGES, tools=TOOLS,
                                    params={"temperature": 0, "max_tokens": 9}, seed=3,
                                    timeout_s=1.0, api_base="http://x/v1")
        return BackendRequest(**{**base, **kw})

    plain = json.loads(_body(req()))  # no client-side JSON: serialised here
    spliced = json.loads(_body(req(messages_json=message_chunks(MESSAGES),
                                   tools_json=canonical_json(TOOLS))))
    assert spliced == plain
    assert plain["messages"][1]["content"] == "总结笔记 é" and plain["seed"] == 3
    assert list(plain)[:1] == ["model"] and plain["temperature"] == 0
    # stale chunks (a message more than chunks) or params naming a body key: the plain path
    stale = json.loads(_body(req(messages_json=message_chunks(MESSAGES[:1]),
                                 tools_json=canonical_json(TOOLS))))
    assert stale == plain
    odd = json.loads(_body(req(params={"messages": []}, messages_json=message_chunks(MESSAGES),
                               tools_json=canonical_json(TOOLS))))
    assert odd["messages"] == [] and odd.keys() == {"model", "seed", "messages", "tools"}
