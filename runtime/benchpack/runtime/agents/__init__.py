"""Agent adapters backed by LLMs (`litellm_agent.LiteLLMAgent`).

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
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ..types import AgentAdapter, AgentSession, LLMCallRecord, SessionBrief

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


__all__ = ["Recorder", "RecordingAgentAdapter", "brief_recorder", "open_session"]
