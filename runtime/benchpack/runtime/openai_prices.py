"""What litellm records as the cost of an OpenAI chat completion, computed from its bundled price
map without importing litellm (seconds of start-up, which the priced direct path exists to save).

Only where the arithmetic is plain: the price entry has no prices but input, output and cached
input per token (tiers above a context size, off-peak hours, audio and image tokens, regional
uplifts are litellm's to compute), and the answer's usage names nothing but prompt, cached and
completion tokens. Everything else answers `UNSURE`, and the caller asks litellm itself
(`openai_direct.litellm_cost`). The equality is tested entry by entry against
`litellm.completion_cost` (tests/runtime/test_openai_prices.py).
"""

from __future__ import annotations

from typing import Any

UNSURE = object()
"""Not computed here: ask litellm."""

PLAIN_PRICES = frozenset({"input_cost_per_token", "output_cost_per_token",
                          "cache_read_input_token_cost"})
TIER_SUFFIXES = ("_batches", "_flex", "_priority")
"""Prices of service tiers a lean request never asks for (`service_tier` is not a lean
parameter) and an answer at the default tier does not use."""
UNUSED_PRICES = frozenset({"search_context_cost_per_query"})
"""Web search's price per query: only requests with `web_search_options` (not a lean
parameter) are charged it."""
PLAIN_USAGE = frozenset({"prompt_tokens", "completion_tokens", "total_tokens",
                         "prompt_tokens_details", "completion_tokens_details"})
PLAIN_DETAILS = {"prompt_tokens_details": {"cached_tokens", "audio_tokens"},
                 "completion_tokens_details": {"reasoning_tokens", "audio_tokens",
                                               "accepted_prediction_tokens",
                                               "rejected_prediction_tokens"}}
"""Detail counts OpenAI sends; any audio or prediction count must be 0 to stay plain."""


def plain_entry(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    for key in entry:
        if "cost" in key and key not in PLAIN_PRICES | UNUSED_PRICES \
                and not key.endswith(TIER_SUFFIXES):
            return False
    return isinstance(entry.get("input_cost_per_token"), int | float) and \
        isinstance(entry.get("output_cost_per_token"), int | float)


def price_entry(prices: dict[str, Any], model: str) -> Any:
    """The entry litellm prices `model` by for the `openai` provider; UNSURE where two keys
    could answer (`openai/<model>` and `<model>`), None where none does."""
    bare, prefixed = prices.get(model), prices.get(f"openai/{model}")
    if bare is not None and prefixed is not None and bare != prefixed:
        return UNSURE
    return bare if bare is not None else prefixed


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None


def lean_cost(data: dict[str, Any], requested: str, prices: dict[str, Any]) -> Any:
    """litellm's cost of the answer `data` to a request for `openai/<requested>`: a float, None
    (litellm has no price for it either), or UNSURE."""
    if data.get("service_tier") not in (None, "default"):
        return UNSURE
    answered = data.get("model")
    if any(":" in str(name) or "/" in str(name) for name in (answered, requested)):
        return UNSURE  # fine-tuned (`ft:…`) and prefixed names: litellm parses them its way
    # litellm prices the answer's model when its map has it, else the requested one
    entry = price_entry(prices, answered) if isinstance(answered, str) and answered else None
    if entry is None:
        entry = price_entry(prices, requested)
    if entry is None:
        return None
    if entry is UNSURE or not plain_entry(entry):
        return UNSURE
    usage = data.get("usage")
    if not isinstance(usage, dict) or not PLAIN_USAGE.issuperset(usage):
        return UNSURE
    pt, ct = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    if pt is None or ct is None:
        return UNSURE
    cached = reasoning = 0
    for name, allowed in PLAIN_DETAILS.items():
        details = usage.get(name)
        if details is None:
            continue
        if not isinstance(details, dict) or not allowed.issuperset(details):
            return UNSURE
        for key, value in details.items():
            n = _count(value) if value is not None else 0
            if n is None or (n and key not in ("cached_tokens", "reasoning_tokens")):
                return UNSURE
        if name == "prompt_tokens_details":
            cached = details.get("cached_tokens") or 0
        else:
            reasoning = details.get("reasoning_tokens") or 0
    if cached > pt:
        return UNSURE
    read = entry.get("cache_read_input_token_cost")
    if cached and not isinstance(read, int | float):
        return UNSURE
    prompt_cost = (pt - cached) * entry["input_cost_per_token"]
    if cached:
        prompt_cost += cached * read
    out = entry["output_cost_per_token"]
    # litellm's order of terms: the text, then the reasoning (a different float from ct * out)
    completion_cost = max(0, ct - reasoning) * out + reasoning * out if reasoning else ct * out
    return prompt_cost + completion_cost
