"""A model call's stored prompt and raw reply (`llm_call_texts`, `blobs`), read back for
`bench view`. The format is `benchpack.specs.storeformat`'s, written by
`benchpack.runtime.calltexts.encode_calls` (reports never import the runtime;
tests/runtime/test_call_texts.py round-trips the two).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchpack.specs.storeformat import CHAIN_MAX


@dataclass
class CallText:
    stored: bool
    """False for a store written before prompts were kept (schema < 6) or a call recorded
    without them (an imported run, an agent reporting its own calls)."""
    messages: list[Any] | None = None
    tools: list[Any] | None = None
    reply: Any = None


def has_texts(con: Any) -> bool:
    return bool(con.execute("SELECT count(*) FROM duckdb_tables() "
                            "WHERE table_name = 'llm_call_texts'").fetchone()[0])


def call_text(con: Any, run_id: str, session_id: str, repeat: int, seq: int) -> CallText:
    if not has_texts(con):
        return CallText(False)
    row = con.execute("SELECT prompt, reply FROM llm_call_texts WHERE run_id = ? AND "
                      "session_id = ? AND repeat = ? AND seq = ?",
                      [run_id, session_id, repeat, seq]).fetchone()
    if row is None or (row[0] is None and row[1] is None):
        return CallText(False)

    def fetch(ref: str) -> str | None:
        found = con.execute("SELECT data FROM blobs WHERE hash = ? LIMIT 1", [ref]).fetchone()
        return None if found is None else str(found[0])

    out = CallText(True)
    if row[0] is not None:
        out.messages, out.tools = decode_prompt(str(row[0]), fetch)
    if row[1] is not None:
        reply = fetch(str(row[1]))
        if reply is None:
            raise LookupError(f"reply blob {str(row[1])[:12]}… is missing")
        out.reply = json.loads(reply)
    return out


def decode_prompt(ref: str, fetch: Callable[[str], str | None]
                  ) -> tuple[list[Any], list[Any] | None]:
    """(messages, tool specs) of a stored prompt. `fetch` returns a blob's text, None when the
    store lacks it (then LookupError: a damaged store, never a silently shorter prompt)."""
    chain: list[dict[str, Any]] = []
    at: str | None = ref
    while at is not None:
        text = fetch(at)
        if text is None:
            raise LookupError(f"prompt blob {at[:12]}… is missing")
        record = json.loads(text)
        chain.append(record)
        at = record.get("base")
        if len(chain) > CHAIN_MAX + 1:
            raise LookupError(f"prompt {ref[:12]}…: a chain longer than {CHAIN_MAX}")
    messages: list[Any] = []
    for record in reversed(chain):
        if len(messages) != record["skip"]:
            raise LookupError(f"prompt {ref[:12]}…: its base has {len(messages)} messages, "
                              f"not {record['skip']}")
        messages.extend(record["messages"])
    tools_ref = chain[0].get("tools")
    tools = None
    if tools_ref:
        text = fetch(tools_ref)
        if text is None:
            raise LookupError(f"tools blob {tools_ref[:12]}… is missing")
        tools = json.loads(text)
    return messages, tools
