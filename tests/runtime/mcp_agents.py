"""Python agents for test_mcp_server.py (`python:mcp_agents:<name>`): the same tool calls, made
natively (`brief.tools.call`) or by a harness that reaches the session's tools over MCP with
the official client. `CALLS` is set by the test; the calls are made in the first turn."""

from __future__ import annotations

from typing import Any

CALLS: list[tuple[str, Any]] = []
SEEN: list[dict[str, Any]] = []
"""What the MCP harness saw: each call's `isError` and text."""


async def native(brief: Any, message: str | None, event: Any) -> str:
    tools = brief.tools
    if tools.turn == 1:
        for k, (name, args) in enumerate(CALLS, start=1):
            tools.step = k  # numbered as the cmd: adapter and the MCP server number them
            await tools.call(name, args)
    return "Done."


async def over_mcp(brief: Any, message: str | None, event: Any) -> str:
    from benchpack.runtime.mcp import mcp_session, start_mcp_server, text_of

    if brief.tools.turn == 1:
        async with await start_mcp_server(brief.tools) as endpoint, \
                mcp_session(endpoint) as client:
            await client.list_tools()
            for name, args in CALLS:
                out = await client.call_tool(name, args)
                SEEN.append({"name": name, "is_error": out.is_error, "text": text_of(out)})
    return "Done."
