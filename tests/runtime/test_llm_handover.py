"""The model hand-over (`llm.HANDOVER_TURNS`): with one call in flight per model, a finished
call lets the waiting one send before its own session goes on, and only once the call is
recorded, priced and cached."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from test_llm import ask

from benchpack.runtime.llm import BackendRequest, LLMClient, LLMConfig
from benchpack.runtime.types import LLMCallRecord


@pytest.mark.parametrize("deferred_send", [False, True])
def test_a_finished_call_hands_its_permit_over_before_its_own_bookkeeping(
        tmp_path: Path, deferred_send: bool) -> None:
    """With one call in flight per model and a second session waiting, the waiting call must
    be sent before the finished one's caller goes on (parsing, grading, storing): otherwise the
    model sits idle for that time, every session (issue 16: 0.5 ms a session at concurrency 1).
    `deferred_send`: the request leaves from a task of its own, as aiohttp's body writer does
    before Python 3.12 (`HANDOVER_TURNS`)."""
    events: list[str] = []

    async def backend(req: BackendRequest) -> dict[str, Any]:
        name = req.messages[-1]["content"]

        async def send() -> None:
            events.append(f"{name} sent")
        if deferred_send:
            sending = asyncio.ensure_future(send())  # runs at the loop's next turn
        else:
            await send()
        await asyncio.sleep(0.01)
        if deferred_send:
            await sending
        return {"message": {"role": "assistant", "content": "ok"},
                "usage": {"prompt_tokens": 1, "completion_tokens": 1}, "cost": 0.0}

    client = LLMClient(LLMConfig(max_concurrent_per_model=1), backend=backend)
    records: list[LLMCallRecord] = []

    async def session(name: str) -> None:
        await ask(client, records, name, model="litellm:m")
        events.append(f"{name} goes on")  # everything a session does after its call

    async def go() -> None:
        await asyncio.gather(session("A"), session("B"))

    asyncio.run(go())
    assert events == ["A sent", "B sent", "A goes on", "B goes on"]


def test_a_call_cancelled_while_handing_over_is_accounted_as_answered() -> None:
    """The hand-over happens after the call is recorded, priced and cached: cancelling its
    session then (Ctrl-C, a turn's timeout) leaves an answered call with its cost, as the
    provider will bill it, never one marked cancelled."""
    tasks: dict[str, asyncio.Task[Any]] = {}

    async def backend(req: BackendRequest) -> dict[str, Any]:
        if req.messages[-1]["content"] == "B":  # A is handing over right now
            tasks["A"].cancel()
        await asyncio.sleep(0.01)
        return {"message": {"role": "assistant", "content": "ok"},
                "usage": {"prompt_tokens": 3, "completion_tokens": 2}, "cost": 0.5}

    client = LLMClient(LLMConfig(max_concurrent_per_model=1), backend=backend)
    records: list[LLMCallRecord] = []

    async def go() -> None:
        tasks["A"] = asyncio.create_task(ask(client, records, "A", model="litellm:m"))
        await asyncio.sleep(0)  # A takes the permit first
        tasks["B"] = asyncio.create_task(ask(client, records, "B", model="litellm:m"))
        await asyncio.gather(*tasks.values(), return_exceptions=True)

    asyncio.run(go())
    assert tasks["A"].cancelled() and not tasks["B"].cancelled()
    assert [(r.error, r.cost, r.prompt_tokens) for r in records] == [(None, 0.5, 3),
                                                                     (None, 0.5, 3)]
