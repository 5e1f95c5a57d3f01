"""The direct OpenAI-compatible path (`openai_direct`) records exactly what the litellm path
records, on the same fake server: request body, every `llm_calls` field but the timings (the
cost of priced models included), the response, and the retry behaviour; reasoning models,
other providers and unusual parameters still go through litellm."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, FakeReply, completion_body, fake_openai_fixture  # noqa: F401

from benchpack.runtime.cache import ResponseCache
from benchpack.runtime.env.toolbox import BUILTIN_SPECS
from benchpack.runtime.llm import BackendRequest, LLMClient, LLMConfig, LLMError
from benchpack.runtime.openai_direct import OpenAIDirectBackend, _prices, direct_route
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


def _req(model: str, base: str | None = "http://x/v1", **params: Any) -> BackendRequest:
    return BackendRequest(model=model, messages=[], tools=None, params=params, seed=None,
                          timeout_s=1.0, api_base=base)


def test_which_models_and_parameters_take_which_route(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_ORGANIZATION", "OPENAI_PROJECT", "OPENAI_API_VERSION",
                "BENCH_LITELLM_ONLY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    assert direct_route(_req("openai/my-local-llama")) == "unpriced"
    assert direct_route(_req("openai/my-local-llama", None)) is None  # no api_base: where to?
    assert direct_route(_req("openai/gpt-4o-mini")) == "priced"
    # at OpenAI's without a key: litellm's own "missing credentials", as before
    assert direct_route(_req("openai/gpt-4.1", None, temperature=0, max_tokens=9)) is None
    monkeypatch.setenv("OPENAI_API_KEY", "sk-1")
    assert direct_route(_req("openai/gpt-4.1", None, temperature=0, max_tokens=9)) == "priced"
    # reasoning models: only the parameters litellm sends as given (the rest it rewrites)
    assert direct_route(_req("openai/o4-mini")) == "priced"
    assert direct_route(_req("openai/o4-mini", tool_choice="required")) == "priced"
    assert direct_route(_req("openai/o4-mini", temperature=0)) is None
    assert direct_route(_req("openai/o4-mini", max_tokens=9)) is None
    assert direct_route(_req("openai/gpt-5", reasoning_effort="low")) is None
    assert direct_route(_req("openai/gpt-5.5-cyber", tool_choice="required")) is None
    assert direct_route(_req("openai/gpt-5", None)) == "priced"  # OpenAI's, with the key
    assert direct_route(_req("openai/gpt-4o-mini", service_tier="flex")) is None  # its price
    assert direct_route(_req("openai/gpt-4o-mini", reasoning_effort="low")) is None
    assert direct_route(_req("anthropic/claude-3-5-sonnet-20240620")) is None
    assert direct_route(_req("openai/my-local-llama"), enabled=False) is None
    assert direct_route(_req("openai/gpt-4o-mini")) is not None
    monkeypatch.setenv("OPENAI_ORGANIZATION", "org-1")  # litellm would send a header of its own
    assert direct_route(_req("openai/gpt-4o-mini")) is None
    assert direct_route(_req("openai/my-local-llama")) == "unpriced"
    monkeypatch.delenv("OPENAI_ORGANIZATION")
    monkeypatch.setenv("BENCH_LITELLM_ONLY", "1")
    assert direct_route(_req("openai/my-local-llama")) is None
    assert direct_route(_req("openai/gpt-4o-mini")) is None


def _priced_reply(answer_model: str, cached: int) -> Any:
    def reply(body: dict[str, Any]) -> FakeReply:
        out = completion_body(answer_model, {"role": "assistant", "content": "好的"}, "stop",
                              1234, 56, 1)
        out["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
        out["usage"]["completion_tokens_details"] = {"reasoning_tokens": 0}
        return FakeReply(body=out)
    return reply


@pytest.mark.parametrize(("model", "answer_model", "cached"), [
    ("gpt-4o-mini", "gpt-4o-mini", 0),
    ("gpt-4o-mini", "gpt-4o-mini-2024-07-18", 1024),  # the dated name OpenAI answers with
    ("gpt-4.1", "gpt-4.1-2099-01-01", 512),  # an answer's model litellm does not know
    ("gpt-4.1", "gpt-4o-2024-08-06", 0),  # litellm prices the answer's model: so must we
    ("my-local-llama", "gpt-4o-2024-08-06", 0),  # unpriced route, a priced answer
    ("my-local-llama", "my-local-llama", 0),  # no price either way
])
def test_priced_models_record_litellms_cost(fake_openai: FakeOpenAI, tmp_path: Path,
                                            model: str, answer_model: str, cached: int) -> None:
    reply = _priced_reply(answer_model, cached)
    models = f"litellm:openai/{model}"

    clients = {d: _client(fake_openai, tmp_path, d) for d in (False, True)}

    def one(direct: bool) -> tuple[Any, list[LLMCallRecord]]:
        fake_openai.respond(reply)
        return _call(clients[direct], model=models)

    lit, lrec = one(False)
    direct, drec = one(True)
    # priced from the bundled map: litellm itself neither called nor imported for it
    assert not clients[True].backend._imported  # type: ignore[attr-defined]
    assert not clients[True]._direct._imported  # type: ignore[union-attr]
    assert fake_openai.requests[-1] == fake_openai.requests[-2]
    assert fake_openai.headers[-1]["authorization"] == fake_openai.headers[-2]["authorization"]
    assert (direct.content, direct.usage, direct.raw_message) == (lit.content, lit.usage,
                                                                  lit.raw_message)
    assert _fields(drec) == _fields(lrec)
    assert drec[0].cost == lrec[0].cost  # and the cost is known unless nothing is priced:
    assert (drec[0].cost is None) == (model == answer_model == "my-local-llama")


def test_priced_model_without_api_base_goes_where_litellm_goes(
        fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)  # as litellm resolves it
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-456")
    reply = _priced_reply("gpt-4o-mini-2024-07-18", 0)
    got = []
    for direct in (False, True):
        fake_openai.respond(reply)
        client = LLMClient(LLMConfig(backoff_base_s=0.01, timeout_s=30.0, direct_openai=direct),
                           cache=ResponseCache(tmp_path / f"c{direct}", enabled=False))
        got.append(_call(client, model="litellm:openai/gpt-4o-mini"))
        assert client.backend._imported is not direct  # type: ignore[attr-defined]
    (lit, lrec), (direct_resp, drec) = got
    assert fake_openai.requests[-1] == fake_openai.requests[-2]
    assert fake_openai.headers[-1]["authorization"] == "Bearer sk-env-456" \
        == fake_openai.headers[-2]["authorization"]
    assert _fields(drec) == _fields(lrec) and drec[0].cost is not None
    assert direct_resp.content == lit.content


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


def test_a_key_from_the_environment_echoed_in_an_error_is_not_recorded(
        fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-secret-789")
    fake_openai.error(401, "Incorrect API key provided: sk-env-secret-789")
    client = LLMClient(LLMConfig(backoff_base_s=0.01, timeout_s=30.0),
                       cache=ResponseCache(tmp_path / "c", enabled=False))
    out, records = _call(client, model="litellm:openai/gpt-4o-mini")
    assert isinstance(out, LLMError) and not out.retryable and out.status_code == 401
    assert not client.backend._imported  # type: ignore[attr-defined]  # the direct path said it
    assert "sk-env-secret-789" not in str(records[0].error) + str(out)


def test_a_priced_call_costs_the_price_table_by_hand(fake_openai: FakeOpenAI,
                                                     tmp_path: Path) -> None:
    """gpt-4o-mini in litellm's bundled map: input $0.15, cached input $0.075, output $0.60 per
    million tokens. 1,234 prompt tokens of which 1,024 cached and 56 completion tokens cost
    210 × 0.15e-6 + 1,024 × 0.075e-6 + 56 × 0.6e-6 = 3.15e-5 + 7.68e-5 + 3.36e-5 = 1.419e-4 USD;
    the same call again is a cache hit, recorded at 0 with no request made."""
    entry = _prices()["gpt-4o-mini-2024-07-18"]  # the answer's model is the one priced
    assert (entry["input_cost_per_token"], entry["cache_read_input_token_cost"],
            entry["output_cost_per_token"]) == (1.5e-7, 7.5e-8, 6e-7)
    fake_openai.respond(_priced_reply("gpt-4o-mini-2024-07-18", 1024))
    client = LLMClient(LLMConfig(api_base=fake_openai.base_url, api_key="sk-1",
                                 backoff_base_s=0.01, timeout_s=30.0),
                       cache=ResponseCache(tmp_path / "cache"))
    _, first = _call(client, model="litellm:openai/gpt-4o-mini")
    _, again = _call(client, model="litellm:openai/gpt-4o-mini")
    assert not client._direct._imported  # type: ignore[union-attr]  # priced without litellm
    assert len(fake_openai.requests) == 1
    (call,), (hit,) = first, again
    assert (call.role, call.model, call.prompt_tokens, call.completion_tokens, call.cache_hit,
            call.error) == ("agent", "openai/gpt-4o-mini", 1234, 56, False, None)
    assert call.cost == pytest.approx(1.419e-4, rel=1e-12)
    assert call.latency_s > 0 and len(call.prompt_hash) == 64
    assert (hit.cache_hit, hit.cost, hit.prompt_hash, hit.prompt_tokens) == \
        (True, 0.0, call.prompt_hash, 1234)


def _reasoning_models() -> list[str]:
    return sorted(k for k, v in _prices().items()
                  if isinstance(v, dict) and v.get("litellm_provider") == "openai"
                  and v.get("mode") == "chat" and v.get("supports_reasoning") and "/" not in k)


def _agent_call(client: LLMClient, model: str, tools: list[dict[str, Any]] | None,
                params: dict[str, Any]) -> tuple[Any, list[LLMCallRecord]]:
    records: list[LLMCallRecord] = []
    resp = asyncio.run(client.complete(
        role="agent", model=f"litellm:openai/{model}", messages=MESSAGES, tools=tools,
        params=params, seed=3, recorder=records.append, turn=1))
    return resp, records


def test_reasoning_models_take_the_lean_path_as_litellm_sends_them(
        fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """Every OpenAI reasoning chat model of litellm's map, with a system message, tools and
    `tool_choice` (an agent's call) and with neither: litellm's request and the direct one are
    the same JSON (o3/o4-mini's system message sent as a user message by both), and so is
    every recorded field, the cost with reasoning tokens included."""
    models = _reasoning_models()
    assert {"o4-mini", "o3", "gpt-5", "gpt-5-mini"} <= set(models)

    def reply(body: dict[str, Any]) -> FakeReply:
        out = completion_body(f"{body['model']}-2099-01-01",
                              {"role": "assistant", "content": "好的"}, "stop", 1234, 300, 1)
        out["usage"]["completion_tokens_details"] = {"reasoning_tokens": 128}
        return FakeReply(body=out)

    clients = {d: _client(fake_openai, tmp_path, d) for d in (False, True)}
    compared = converted = 0
    for model in models:
        for tools, params in ((TOOLS, {"tool_choice": "required"}), (None, {})):
            req = BackendRequest(model=f"openai/{model}", messages=MESSAGES, tools=tools,
                                 params=params, seed=3, timeout_s=1.0,
                                 api_base=fake_openai.base_url)
            if direct_route(req) is None:
                continue
            got = []
            for direct in (False, True):
                fake_openai.respond(reply)
                got.append(_agent_call(clients[direct], model, tools, params))
            (lit, lrec), (direct_resp, drec) = got
            assert fake_openai.requests[-1] == fake_openai.requests[-2], model
            assert _fields(drec) == _fields(lrec), model
            assert drec[0].cost is not None and drec[0].cost == lrec[0].cost, model
            assert direct_resp.content == lit.content
            converted += fake_openai.requests[-1]["messages"][0]["role"] == "user"
            compared += 1
    assert not clients[True].backend._imported  # type: ignore[attr-defined]
    assert compared >= 2 * 40 and converted >= 2 * 4  # o3, o4-mini and their dated names


def test_a_reasoning_call_costs_the_price_table_by_hand(fake_openai: FakeOpenAI,
                                                        tmp_path: Path) -> None:
    """o4-mini in litellm's bundled map: input $1.10, output $4.40 per million tokens, the
    reasoning tokens counted in the completion. 1,234 prompt and 300 completion tokens (128 of
    them reasoning) cost 1,234 × 1.1e-6 + 300 × 4.4e-6 = 1.3574e-3 + 1.32e-3 = 2.6774e-3 USD.
    The system prompt goes as a user message (o4-mini's map entry does not say it takes system
    messages, and litellm sends it so); the prompt hash is the one of the messages as given."""
    entry = _prices()["o4-mini-2025-04-16"]
    assert (entry["input_cost_per_token"], entry["output_cost_per_token"]) == (1.1e-6, 4.4e-6)

    def reply(body: dict[str, Any]) -> FakeReply:
        out = completion_body("o4-mini-2025-04-16", {"role": "assistant", "content": "好的"},
                              "stop", 1234, 300, 1)
        out["usage"]["completion_tokens_details"] = {"reasoning_tokens": 128}
        return FakeReply(body=out)

    fake_openai.respond(reply)
    client = _client(fake_openai, tmp_path, True)
    resp, (call,) = _agent_call(client, "o4-mini", None, {})
    assert not client._direct._imported  # type: ignore[union-attr]  # priced without litellm
    assert [m["role"] for m in fake_openai.requests[-1]["messages"]] == ["user", "user"]
    assert fake_openai.requests[-1]["messages"][0]["content"] == "Be brief."
    assert (call.model, call.prompt_tokens, call.completion_tokens, call.cache_hit) == \
        ("openai/o4-mini", 1234, 300, False)
    assert call.cost == pytest.approx(2.6774e-3, rel=1e-12)
    assert resp.content == "好的"
