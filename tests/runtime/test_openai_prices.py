"""The priced direct path's own arithmetic (`openai_prices.lean_cost`) records exactly what
litellm records: every OpenAI chat entry of litellm's bundled price map, answered under its own
name, a dated name and another model's, over usages with and without cached and reasoning
tokens; where the arithmetic is not plain it must say so (UNSURE), never guess."""

from __future__ import annotations

import os
from typing import Any

import pytest

from benchpack.runtime.openai_direct import _prices, litellm_cost
from benchpack.runtime.openai_prices import UNSURE, lean_cost, plain_entry

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

USAGES = [
    {"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290},
    {"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290,
     "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
     "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                   "accepted_prediction_tokens": 0,
                                   "rejected_prediction_tokens": 0}},
    {"prompt_tokens": 7, "completion_tokens": 300, "total_tokens": 307,
     "prompt_tokens_details": {"cached_tokens": 0},
     "completion_tokens_details": {"reasoning_tokens": 128}},
    {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    {"prompt_tokens": 123457, "completion_tokens": 4097, "total_tokens": 127554,
     "prompt_tokens_details": {"cached_tokens": 99999}},
]


def _openai_chat_models() -> list[str]:
    return sorted(k for k, v in _prices().items()
                  if isinstance(v, dict) and v.get("litellm_provider") == "openai"
                  and v.get("mode") == "chat" and "/" not in k)


def _answer(model: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "ok"}}],
            "usage": {**usage}}


def test_every_plain_openai_chat_price_equals_litellms() -> None:
    models = _openai_chat_models()
    prices = _prices()
    plain = [m for m in models if plain_entry(prices[m])]
    assert {"gpt-4o-mini", "gpt-4.1", "gpt-4o"} <= set(plain), plain[:20]
    compared = 0
    for model in models:
        for answered in (model, f"{model}-2099-01-01", "gpt-4o-2024-08-06"):
            for usage in USAGES:
                data = _answer(answered, usage)
                mine = lean_cost(data, model, prices)
                if mine is UNSURE:
                    continue
                theirs = litellm_cost(data, model)
                assert mine == theirs, (model, answered, usage, mine, theirs)
                compared += 1
    assert compared >= 3 * len(USAGES) * 20  # most of the map is plain: it was compared


def test_what_is_not_plain_is_left_to_litellm() -> None:
    prices = {"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6},
              "tiered": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6,
                         "input_cost_per_token_above_200k_tokens": 2e-6},
              "both": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6},
              "openai/both": {"input_cost_per_token": 3e-6, "output_cost_per_token": 2e-6}}
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    assert lean_cost(_answer("m", usage), "m", prices) == 10 * 1e-6 + 5 * 2e-6
    assert lean_cost(_answer("unknown", usage), "m", prices) == 10 * 1e-6 + 5 * 2e-6
    assert lean_cost(_answer("unknown", usage), "unknown", prices) is None
    assert lean_cost(_answer("tiered", usage), "m", prices) is UNSURE  # answer's model rules
    assert lean_cost(_answer("both", usage), "both", prices) is UNSURE
    audio = {**usage, "prompt_tokens_details": {"audio_tokens": 3}}
    assert lean_cost(_answer("m", audio), "m", prices) is UNSURE
    cached = {**usage, "prompt_tokens_details": {"cached_tokens": 4}}  # no cached price
    assert lean_cost(_answer("m", cached), "m", prices) is UNSURE
    assert lean_cost({**_answer("m", usage), "service_tier": "priority"}, "m", prices) \
        is UNSURE
    assert lean_cost(_answer("m", {**usage, "cost": 1}), "m", prices) is UNSURE


@pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-4.1"])
def test_a_recommended_model_is_plain(model: str) -> None:
    data = _answer(f"{model}-2099-01-01", USAGES[1])
    assert lean_cost(data, model, _prices()) is not UNSURE
