"""An A2A agent for tests (issue 26), built with the official `a2a-sdk` server: the clinic
agent of `clinic_agent.py`, its tools over the MCP server named in the message's
`metadata.benchpack.mcp.url`. One task per benchpack session: each turn's answer is an
artifact, then the task waits for the next message (`input-required`).

    python a2a_clinic_server.py URL_FILE     # serves on 127.0.0.1:<free port>, writes the URL

Words in a message steer it: FAIL (the task fails with a two-line reason), MODEL (one call
to the model named in `metadata.benchpack.model`, its reply the artifact; the task completes)."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path
from typing import Any

import uvicorn
from a2a.helpers import (
    get_message_text,
    new_task_from_user_message,
    new_text_artifact_update_event,
    new_text_status_update_event,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, TaskState
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette

sys.path.insert(0, str(Path(__file__).parent))
from clinic_agent import respond


class ClinicExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: Any) -> None:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        message = context.message
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(message)
            await event_queue.enqueue_event(task)
        text = get_message_text(message)
        if "FAIL" in text:
            await event_queue.enqueue_event(new_text_status_update_event(
                task.id, task.context_id, TaskState.TASK_STATE_FAILED,
                "cannot go on:\nthe clinic system is down"))
            return
        meta = MessageToDict(message.metadata).get("benchpack", {})
        if "MODEL" in text:  # one model call through the recording proxy it was handed
            from openai import AsyncOpenAI

            model = meta["model"]
            out = await AsyncOpenAI(base_url=model["base_url"], api_key=model["api_key"],
                                    max_retries=0).chat.completions.create(
                model=model["name"] or "m", messages=[{"role": "user", "content": text}])
            await event_queue.enqueue_event(new_text_artifact_update_event(
                task.id, task.context_id, name="model", text=out.choices[0].message.content or "",
                last_chunk=True))
            await event_queue.enqueue_event(new_text_status_update_event(
                task.id, task.context_id, TaskState.TASK_STATE_COMPLETED, "done"))
            return
        async with streamable_http_client(meta["mcp"]["url"]) as (read, write, *_), \
                ClientSession(read, write) as mcp:
            await mcp.initialize()

            async def call(name: str, args: dict[str, Any]) -> str:
                out = await mcp.call_tool(name, args)
                return "".join(getattr(c, "text", "") for c in out.content)

            answer = await respond(call, text)
        turn = len(task.artifacts) + 1 if hasattr(task, "artifacts") else 1
        await event_queue.enqueue_event(new_text_artifact_update_event(
            task.id, task.context_id, name=f"answer-{turn}", text=answer, last_chunk=True))
        await event_queue.enqueue_event(new_text_status_update_event(
            task.id, task.context_id, TaskState.TASK_STATE_INPUT_REQUIRED, "Anything else?"))

    async def cancel(self, context: RequestContext, event_queue: Any) -> None:
        task = context.current_task
        if task is not None:
            await event_queue.enqueue_event(new_text_status_update_event(
                task.id, task.context_id, TaskState.TASK_STATE_CANCELED, "cancelled"))


def main() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    card = AgentCard(
        name="clinic", description="Flags high INR readings.", version="1.0",
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", url=url + "/",
                                             protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=False), default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="inr", name="INR review", description="Flags high INR.",
                           tags=["clinic"])])
    handler = DefaultRequestHandler(agent_executor=ClinicExecutor(),
                                    task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=create_agent_card_routes(card) +
                    create_jsonrpc_routes(handler, rpc_url="/"))
    Path(sys.argv[1]).write_text(url, encoding="utf-8")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
