"""litellm's own HTTP handler for `openai/` (EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER, an opt-in
that skips the openai SDK's per-call request transform) behaves like the SDK path for benchpack:
same request body, same recorded tokens, and an unparsable answer is still retried."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.runtime.cache import ResponseCache
from benchpack.runtime.env.builtin_specs import BUILTIN_SPECS
from benchpack.runtime.llm import LLMClient, LLMConfig
from benchpack.runtime.types import LLMCallRecord

SWITCH = "EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER"
TOOLS = [{"type": "function", "function": {"name": n, **s}} for n, s in BUILTIN_SPECS.items()]
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi é"}]


def _call(server: FakeOpenAI, tmp_path: Path) -> tuple[Any, list[LLMCallRecord]]:
    # litellm's paths are what this compares: not the direct one `openai/` takes by default
    client = LLMClient(LLMConfig(api_base=server.base_url, api_key="k", backoff_base_s=0.01,
                                 timeout_s=30.0, direct_openai=False),
                       cache=ResponseCache(tmp_path / "cache", enabled=False))
    records: list[LLMCallRecord] = []
    resp = asyncio.run(client.complete(
        role="agent", model="litellm:openai/fake-model", messages=MESSAGES, tools=TOOLS,
        params={"temperature": 0}, seed=3, recorder=records.append))
    return resp, records


def test_same_request_and_tokens_as_the_sdk_path(fake_openai: FakeOpenAI, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fake_openai.text("one", prompt_tokens=42, completion_tokens=4)
    fake_openai.text("one", prompt_tokens=42, completion_tokens=4)
    sdk, sdk_records = _call(fake_openai, tmp_path)
    monkeypatch.setenv(SWITCH, "true")
    own, own_records = _call(fake_openai, tmp_path)
    first, second = fake_openai.requests
    assert first == second and first["seed"] == 3 and first["tools"] == TOOLS
    assert (own.content, own.usage, own.finish_reason, own.raw_message) == \
        (sdk.content, sdk.usage, sdk.finish_reason, sdk.raw_message)
    assert [(r.prompt_tokens, r.completion_tokens, r.cost, r.prompt_hash) for r in own_records] \
        == [(r.prompt_tokens, r.completion_tokens, r.cost, r.prompt_hash) for r in sdk_records] \
        == [(42, 4, None, sdk_records[0].prompt_hash)]


def test_unparsable_answer_is_retried(fake_openai: FakeOpenAI, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SWITCH, "true")
    fake_openai.malformed().text("fine")
    resp, records = _call(fake_openai, tmp_path)
    assert resp.content == "fine" and records[0].attempts == 2
