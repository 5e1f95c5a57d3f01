"""`python -m benchpack.runtime.mcp.bridge URL`: a stdio MCP server relaying to a session's
streamable HTTP endpoint, for harnesses that only launch MCP servers as commands.

It owns no tools: `tools/list` and `tools/call` are forwarded as they are, so every call is
validated and recorded by the runtime that serves URL, exactly as over HTTP.
"""

from __future__ import annotations

import sys
from typing import Any


async def relay(url: str) -> None:
    import mcp_types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    async with streamable_http_client(url) as (read, write), \
            ClientSession(read, write) as upstream:
        await upstream.initialize()

        async def list_tools(ctx: Any, params: Any) -> mcp_types.ListToolsResult:
            return await upstream.list_tools()

        async def call_tool(ctx: Any, params: mcp_types.CallToolRequestParams
                            ) -> mcp_types.CallToolResult:
            out = await upstream.call_tool(params.name, params.arguments)
            assert isinstance(out, mcp_types.CallToolResult)
            return out

        server: Server[Any] = Server("benchpack", on_list_tools=list_tools,
                                     on_call_tool=call_tool)
        server.middleware = []
        async with stdio_server() as (sread, swrite):
            await server.run(sread, swrite, server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    import anyio

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].startswith(("http://", "https://")):
        print("✗ mcp bridge: give the session's MCP URL, e.g. "
              "python -m benchpack.runtime.mcp.bridge http://127.0.0.1:41234/mcp", file=sys.stderr)
        return 2
    try:
        anyio.run(relay, args[0])
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the runtime went away: say so on stderr, the harness logs it
        print(f"✗ mcp bridge: {args[0]}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
