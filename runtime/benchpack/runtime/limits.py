"""Enforcing the named limits (`benchpack.specs.limits`, the table) inside a run.

Two kinds of helper, one per way a limit is met:

- **Stored sizes** (`clip_text`, `clip_json`, `clip_cell`): the store keeps a text up to its
  limit whole; beyond, the first `CLIP_PREFIX` bytes and the sha256 of the whole, marked so
  that no reader takes the prefix for the whole. Plain text gets a trailing note; JSON text (a
  JSON column, a model call's message) becomes a JSON object `{"_clipped": {bytes, sha256,
  limit, prefix}}`, so the column stays valid JSON. The store writer applies these to every
  cell it writes (`store.Store.write_batch`), by table and column (`STORED`).
- **Refusals** (`reply_refusal`, `tool_calls_refusal`): a model reply too large, or asking for
  too many tool calls, is refused before anything acts on it; the LLM client raises the
  message as an `LLMError` that is not retried, which the agent loop records as the agent's
  error — the session's worst score, with the limit named.

Sizes are checked without copying: a string's UTF-8 length is only computed when its length in
characters leaves the answer open (a character is 1–4 bytes).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from benchpack.specs.limits import (
    MODEL_REPLY_BYTES,
    STORED_TEXT_BYTES,
    TOOL_ARGUMENT_BYTES,
    TOOL_CALLS_PER_REPLY,
    TOOL_RESULT_BYTES,
    Limit,
)

CLIP_PREFIX = 64 * 1024
"""Bytes of a clipped text kept (at a character boundary)."""

STORED: dict[tuple[str, str], Limit] = {
    ("tool_calls", "call"): TOOL_ARGUMENT_BYTES,
    ("messages", "tool_calls"): TOOL_ARGUMENT_BYTES,
    ("tool_calls", "result"): TOOL_RESULT_BYTES,
}
"""(table, column) → its limit; every other text cell has `STORED_TEXT_BYTES`. A tool
message's `content` is a tool result, but a tool message cannot be told from its column alone:
it has the general limit, 4× the result's."""


def utf8_size_over(text: str, limit: int) -> int | None:
    """The UTF-8 size of `text` when it exceeds `limit` bytes, else None."""
    n = len(text)
    if n * 4 <= limit:
        return None
    if n > limit:  # at least one byte a character: over, whatever the characters
        return _utf8_len(text)
    size = _utf8_len(text)
    return size if size > limit else None


def _utf8_len(text: str) -> int:
    """UTF-8 length without one copy of the whole: a 2 GB string measured in 1 MB pieces."""
    step = 1 << 20
    return sum(len(text[i:i + step].encode("utf-8", "surrogatepass"))
               for i in range(0, len(text), step))


def _digest(text: str) -> str:
    h = hashlib.sha256()
    step = 1 << 20
    for i in range(0, len(text), step):
        h.update(text[i:i + step].encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _prefix(text: str) -> str:
    head = text[:CLIP_PREFIX]
    while len(head.encode("utf-8", "surrogatepass")) > CLIP_PREFIX:
        head = head[:len(head) * 3 // 4]
    return head


def clip_text(text: str, limit: Limit) -> str:
    """`text` whole up to the limit, else its prefix with a note giving size and digest."""
    size = utf8_size_over(text, limit.value)
    if size is None:
        return text
    return (f"{_prefix(text)}… [clipped by benchpack: {size:,} bytes, sha256 {_digest(text)}; "
            f"limit {limit.name} = {limit.value:,}]")


def clip_json(text: str, limit: Limit) -> str:
    """JSON `text` whole up to the limit, else a JSON object standing for it (valid JSON)."""
    size = utf8_size_over(text, limit.value)
    if size is None:
        return text
    return json.dumps({"_clipped": {"bytes": size, "sha256": _digest(text), "limit": limit.name,
                                    "allowed": limit.value, "prefix": _prefix(text)}},
                      ensure_ascii=False)


def below_any_limit() -> int:
    """A length in characters no text can exceed any stored limit at (4 bytes a character at
    most): texts this short need no look (nearly all of them)."""
    return min(TOOL_ARGUMENT_BYTES.value, TOOL_RESULT_BYTES.value, STORED_TEXT_BYTES.value) // 4


def clip_rows(table: str, data: list[tuple[Any, ...]],
              types: Callable[[], list[tuple[str, str]]]) -> list[tuple[Any, ...]]:
    """`data` with every text over its limit clipped (`clip_cell`; `types`: the table's
    (column, SQL type) pairs, asked only then). Rows with no long text, nearly all, pass as
    they are, checked with a plain loop: the writer asks it of every cell it writes."""
    near = below_any_limit()
    if not any(_has_long_text(row, near) for row in data):
        return data
    described = types()
    return [tuple(clip_cell(v, table, name, sql == "JSON")
                  for v, (name, sql) in zip(row, described, strict=False))
            if _has_long_text(row, near) else row for row in data]


def _has_long_text(row: tuple[Any, ...], near: int) -> bool:
    for v in row:  # noqa: SIM110 (a loop: any() over a generator costs a frame switch a cell)
        if type(v) is str and len(v) > near:
            return True
    return False


def clip_cell(value: Any, table: str, column: str, is_json: bool) -> Any:
    """A cell as the store writes it (see `STORED`); non-strings pass."""
    if type(value) is not str or len(value) <= below_any_limit():
        return value  # the common case, without a lookup: nothing is near any limit
    limit = STORED.get((table, column), STORED_TEXT_BYTES)
    return clip_json(value, limit) if is_json else clip_text(value, limit)


def reply_refusal(size: int, *, known: bool = True) -> str | None:
    """The refusal of a model reply of `size` bytes (`known=False`: at least `size`, where
    reading stopped), or None within the limit."""
    allowed = MODEL_REPLY_BYTES.value
    if size <= allowed:
        return None
    how = (f"is {size:,} bytes, {allowed:,} allowed" if known else
           f"is larger than the {allowed:,} bytes allowed (reading stopped there)")
    return (f"limit {MODEL_REPLY_BYTES.name}: the reply {how}; it was not used (raise it "
            "with BENCHPACK_LIMIT_MODEL_REPLY_BYTES)")


def tool_calls_refusal(n: int) -> str | None:
    """The refusal of a model reply asking for `n` tool calls, or None within the limit."""
    allowed = TOOL_CALLS_PER_REPLY.value
    if n <= allowed:
        return None
    return (f"limit {TOOL_CALLS_PER_REPLY.name}: the reply asks for {n:,} tool calls, at most "
            f"{allowed:,} are run; none was (raise it with "
            "BENCHPACK_LIMIT_TOOL_CALLS_PER_REPLY)")


__all__ = ["CLIP_PREFIX", "STORED", "below_any_limit", "clip_cell", "clip_json", "clip_text", "reply_refusal",
           "tool_calls_refusal", "utf8_size_over"]
