"""Model calls' prompts and raw replies, stored once: `encode_calls` before a session's calls are
written (`store.Store`); `benchpack.reports.calltexts` reads them back (`bench view`).

Every text lands in `blobs` keyed by the sha256 of what is stored (redacted first, as snapshot
parts are), and `llm_call_texts` maps a call to its prompt and reply blobs, so a judge prompt
repeated across repeats or a "Done." reply is stored once.

A conversation's prompts grow by a few messages a call: storing each whole would make a session
of n turns cost O(n²) in text. So a prompt that extends the previous prompt of the same role,
purpose and tools is stored as a reference to it plus the new messages. Chains stop at
`CHAIN_MAX` links, so showing one prompt reads at most that many blobs, and the store grows by
about 1/`CHAIN_MAX` of the quadratic cost instead of all of it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from benchpack.specs.storeformat import CHAIN_MAX


@dataclass
class CallText:
    """What one model call sent and got back, as the LLM client serialised it."""

    seq: int
    role: str
    purpose: str | None
    messages: list[str] | None
    """Canonical JSON of each message sent (`cache.message_chunks`)."""
    tools: str | None
    """Canonical JSON of the tool specs offered (None or `[]` for none)."""
    reply: str | None
    """Canonical JSON of the reply message (content and tool calls); None when none came."""


def _put(text: str, found: dict[str, str]) -> str:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    found[digest] = text
    return digest


TOOLS_MEMO_MAX = 256
"""Tool lists a `tools_memo` keeps (a run offers a handful; a bound, not a working size)."""


def encode_calls(texts: Iterable[CallText], clean: Callable[[str], str],
                 tools_memo: dict[str, tuple[str, str]] | None = None
                 ) -> tuple[list[tuple[int, str | None, str | None]], dict[str, str]]:
    """(seq, prompt blob, reply blob) per call and the blobs by hash. `clean` (redaction) runs
    on every message, tool list and reply before it is hashed. `tools_memo` (tool list → its
    cleaned text and digest), kept by the caller across calls with the same `clean`: every
    session of a run offers the same few tool lists, several kilobytes each, which were
    redacted and hashed again for each session on the store writer's thread (issue 31)."""
    found: dict[str, str] = {}
    memo: dict[str, str] = {}  # a history's messages are the same strings call after call

    def cleaned(text: str) -> str:
        out = memo.get(text)
        if out is None:
            out = memo[text] = clean(text)
        return out

    def tool_list(text: str) -> str:
        hit = tools_memo.get(text) if tools_memo is not None else None
        if hit is None:
            stored = cleaned(text)
            hit = (stored, _put(stored, found))
            if tools_memo is not None and len(tools_memo) < TOOLS_MEMO_MAX:
                tools_memo[text] = hit
        found[hit[1]] = hit[0]
        return hit[1]

    last: dict[tuple[Any, ...], tuple[list[str], str, int]] = {}
    rows: list[tuple[int, str | None, str | None]] = []
    for t in texts:
        prompt = reply = None
        if t.messages is not None:
            msgs = [cleaned(m) for m in t.messages]
            tools = tool_list(t.tools) if t.tools and t.tools != "[]" else None
            key = (t.role, t.purpose, tools)
            prev = last.get(key)
            if prev is not None and prev[0] == msgs:  # asked again: the same blob
                rows.append((t.seq, prev[1], None if t.reply is None
                             else _put(cleaned(t.reply), found)))
                continue
            base, skip, depth = None, 0, 0
            if (prev is not None and prev[2] < CHAIN_MAX and len(prev[0]) <= len(msgs)
                    and msgs[:len(prev[0])] == prev[0]):
                base, skip, depth = prev[1], len(prev[0]), prev[2] + 1
            record = (f'{{"base":{json.dumps(base)},"messages":[{",".join(msgs[skip:])}],'
                      f'"skip":{skip},"tools":{json.dumps(tools)}}}')
            prompt = _put(record, found)
            last[key] = (msgs, prompt, depth)
        if t.reply is not None:
            reply = _put(cleaned(t.reply), found)
        rows.append((t.seq, prompt, reply))
    return rows, found
