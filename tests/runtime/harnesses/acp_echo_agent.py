"""A small ACP agent for tests/runtime/test_agents_acp.py, written with the same library
(`acp`, agent side) and the official MCP client.

    python acp_echo_agent.py [CALLS.json]

Per prompt it: reports a built-in `Read` (no permission asked), asks permission for a built-in
shell command and reports whether it ran, then — on the first prompt — asks permission for
each session tool in CALLS.json (`[[name, args], …]`) and calls it over the MCP server it was
given in `session/new` (HTTP or stdio, whichever came), and streams its answer in chunks:
"Echo: <the user's text> | shell=<ran|refused> | calls=<n> | context=<blocks> |
mcp=<http|stdio> | proxy=<yes|no> | 中文 ok". Words in the user's text steer it: HANG
(ignore session/cancel and sleep), WAIT (sleep until cancelled), CRASH (exit 3).
With PIDS set it writes `<pid>-<child pid>` there after starting a `sleep` child.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    run_agent,
    start_tool_call,
    text_block,
    update_agent_message,
    update_tool_call,
)
from acp.schema import (
    AgentCapabilities,
    InitializeResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)

CALLS: list[Any] = json.loads(Path(sys.argv[1]).read_text("utf-8")) if len(sys.argv) > 1 else []


def _proxy() -> str:
    """Whether the model endpoint handed over is benchpack's recording proxy, with its
    placeholder key (the runner's real key, if any, scrubbed)."""
    base = os.environ.get("OPENAI_BASE_URL", "")
    key = os.environ.get("OPENAI_API_KEY", "")
    return "yes" if base.startswith("http://127.0.0.1:") and key.startswith("benchpack-") and \
        os.environ.get("BENCHPACK_MODEL_BASE_URL") == base else "no"


class EchoAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.servers: list[Any] = []
        self.cancelled: asyncio.Event = asyncio.Event()
        self.prompts = 0
        self.child: subprocess.Popen[bytes] | None = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=
                                  AgentCapabilities(mcp_capabilities=McpCapabilities(http=True)))

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any
                          ) -> NewSessionResponse:
        self.servers = list(mcp_servers or [])
        self.cwd = cwd
        if os.environ.get("PIDS"):
            self.child = subprocess.Popen(["sleep", "120"])
            with open(os.path.join(os.environ["PIDS"], f"{os.getpid()}-{self.child.pid}"), "w"):
                pass
        return NewSessionResponse(session_id="echo-1")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.set()

    async def _ask(self, session_id: str, call_id: str, title: str, kind: str) -> bool:
        options = [PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                   PermissionOption(option_id="no", name="Reject", kind="reject_once")]
        out = await self.conn.request_permission(
            session_id=session_id, options=options,
            tool_call=ToolCallUpdate(tool_call_id=call_id, title=title, kind=kind))
        return getattr(out.outcome, "option_id", None) == "yes"

    async def _mcp_calls(self, session_id: str) -> int:
        from mcp import ClientSession

        server = self.servers[0]
        async with contextlib.AsyncExitStack() as stack:
            if getattr(server, "type", None) == "http":
                from mcp.client.streamable_http import streamable_http_client

                read, write = (await stack.enter_async_context(
                    streamable_http_client(server.url)))[:2]
            else:
                from mcp.client.stdio import StdioServerParameters, stdio_client

                read, write = (await stack.enter_async_context(stdio_client(
                    StdioServerParameters(command=server.command, args=server.args))))[:2]
            client = await stack.enter_async_context(ClientSession(read, write))
            await client.initialize()
            await client.list_tools()
            made = 0
            for k, (name, args) in enumerate(CALLS):
                call_id = f"mcp-{k}"
                if not await self._ask(session_id, call_id, f"mcp__benchpack__{name}", "other"):
                    continue
                await self.conn.session_update(session_id, start_tool_call(
                    call_id, f"mcp__benchpack__{name}", kind="other", raw_input=args))
                await client.call_tool(name, args)
                made += 1
                await self.conn.session_update(session_id, update_tool_call(
                    call_id, status="completed"))
            return made

    def _transport(self) -> str:
        return (getattr(self.servers[0], "type", None) or "stdio") if self.servers else "none"

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        self.prompts += 1
        text = getattr(prompt[-1], "text", "")
        if "CRASH" in text:
            sys.stderr.write("boom: crashing on purpose\n")
            sys.stderr.flush()
            os._exit(3)
        if "HANG" in text:
            await asyncio.sleep(3600)
        if "WAIT" in text:
            await self.cancelled.wait()
            self.cancelled.clear()
            return PromptResponse(stop_reason="cancelled")
        await self.conn.session_update(session_id, start_tool_call(
            "read-1", "Read notes/menu.md", kind="read", status="completed",
            raw_input={"path": "notes/menu.md"}, raw_output="Crème brûlée 6 €"))
        ran = await self._ask(session_id, "sh-1", "Run `ls -la`", "execute")
        await self.conn.session_update(session_id, update_tool_call(
            "sh-1", status="completed" if ran else "failed", raw_input={"command": "ls -la"}))
        made = await self._mcp_calls(session_id) if self.prompts == 1 and CALLS else 0
        reply = (f"Echo: {text} | shell={'ran' if ran else 'refused'} | calls={made} | "
                 f"context={len(prompt)} | mcp={self._transport()} | proxy={_proxy()} | 中文 ok")
        for i in range(0, len(reply), 7):
            await self.conn.session_update(session_id, update_agent_message(
                text_block(reply[i:i + 7])))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(EchoAgent()))
