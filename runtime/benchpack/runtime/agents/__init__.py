"""Agent adapters: one module per kind, looked up by URI scheme in `registry.AgentRegistry`.

| scheme | module | what |
| --- | --- | --- |
| `litellm:<model>` | `litellm_agent` | an LLM with a tool loop |
| `cmd:<command>` | `cmd_agent` | an external harness speaking JSON lines over stdin/stdout |
| `python:<module>:<callable>` | `python_agent` | an agent written in Python, in process |
| `scripted:<file>`, `replay:<file>` | `scripted` | authored or recorded turns |

This package holds what the adapters share: the LLM-call routing below and the message helpers.

Routing LLM call records to the session being run
-------------------------------------------------
An LLM-backed adapter makes LLM calls of its own, and each call's `LLMCallRecord` must land in
the `llm_calls` of the session that caused it. `types.AgentAdapter.open(brief)` has no place for
that, so adapters here accept it in two compatible ways, checked in this order:

1. `await adapter.open(brief, recorder=fn)` — the `RecordingAgentAdapter` extension protocol
   below; use `open_session(adapter, brief, fn)` to call any adapter with it.
2. `brief.recorder` — an attribute the runtime may set on the `SessionBrief` instance before
   `open` (the runner does `brief.recorder = calls.append`). Read with `getattr`, so
   `SessionBrief` itself needs no new field.

Failing both, the adapter's own `recorder` / `recorder_factory(brief)` (constructor arguments)
is used; every session also keeps its records in `session.calls`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ..types import AgentAdapter, AgentSession, LLMCallRecord, Message, SessionBrief, ToolRecord

Recorder = Callable[[LLMCallRecord], None]


@runtime_checkable
class RecordingAgentAdapter(Protocol):
    """An `AgentAdapter` whose `open` also takes the session's LLM-call recorder."""

    name: str

    async def open(self, brief: SessionBrief, recorder: Recorder | None = None) -> AgentSession:
        ...


def brief_recorder(brief: SessionBrief) -> Recorder | None:
    """The recorder the runtime attached to `brief` (attribute `recorder`), if any."""
    fn: Any = getattr(brief, "recorder", None)
    return fn if callable(fn) else None


async def open_session(adapter: AgentAdapter, brief: SessionBrief,
                       recorder: Recorder | None) -> AgentSession:
    """Open a session, handing `recorder` to adapters that accept it (others get `brief`)."""
    if recorder is not None:
        try:
            accepts = "recorder" in inspect.signature(adapter.open).parameters
        except (TypeError, ValueError):
            accepts = False
        if accepts:
            return await adapter.open(brief, recorder=recorder)  # type: ignore[call-arg]
    return await adapter.open(brief)


EVENT_PREFIX = "[environment event] "


def render_event(event: dict[str, Any] | None) -> str:
    """An environment event (a turn without a user message) as the text an agent reads."""
    return EVENT_PREFIX + json.dumps(event if event is not None else {}, ensure_ascii=False,
                                     default=str)


def tool_call_messages(record: ToolRecord, turn: int = 0) -> list[Message]:
    """The transcript of one executed call: the assistant's call, then the tool's result (the
    result as JSON, or `{"error": …}`)."""
    result = record.result if record.error is None else {"error": record.error}
    return [Message("assistant", "", turn, tool_calls=[
                {"id": record.call_id, "name": record.tool_name, "arguments": record.call}]),
            Message("tool", json.dumps(result, ensure_ascii=False, default=str), turn,
                    tool_call_id=record.call_id, name=record.tool_name)]


__all__ = ["EVENT_PREFIX", "Recorder", "RecordingAgentAdapter", "brief_recorder",
           "open_session", "render_event", "tool_call_messages"]
