"""A session's toolbox served over MCP (issue 14, part 1).

`start_mcp_server(toolbox)` serves a `ToolBox` (or any `types.ToolHandle`) over MCP streamable
HTTP on 127.0.0.1 and returns an `McpEndpoint` with its URL, the command a stdio-only harness
launches instead (`McpEndpoint.stdio_command`, a bridge to the same URL) and `close()`. Every
call goes through `ToolBox.call`, so an MCP call is validated, executed and recorded exactly as
a native one: same `tool_calls` row (the caller's turn, a step per call of the turn, the
toolbox's own `call-N` id), same error text. `serve_stdio(toolbox)` serves on this process's
stdin/stdout (`bench mcp --transport stdio`).

The HTTP server runs on the caller's event loop, not in a thread: tools (python toolset
workers, HTTP services, the workspace lock) belong to that loop, and a call costs no thread
hop. It answers JSON (no SSE) and keeps no MCP session state, so `close()` never waits for a
harness's idle stream to drain.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import mcp_types
    from mcp.server.lowlevel import Server

    from ..types import ToolHandle, ToolRecord

Transport = Literal["http", "stdio"]

SERVER_NAME = "benchpack"
MCP_PATH = "/mcp"


class McpServerError(RuntimeError):
    """The MCP server could not start (port taken, bad host); the message says which."""


def tool_list(tools: ToolHandle) -> list[mcp_types.Tool]:
    """The session's tools as MCP `Tool`s: name, description and input schema exactly as a
    native agent gets them in `tools.specs`."""
    import mcp_types

    out = []
    for spec in tools.specs:
        fn = spec["function"]
        out.append(mcp_types.Tool(name=fn["name"], description=fn.get("description") or None,
                                  input_schema=fn.get("parameters") or {"type": "object"}))
    return out


class _Caller:
    """Runs MCP tool calls through the toolbox, one at a time.

    One at a time because native agents call a turn's tools in order: the store's `seq` and
    `step` then follow the order the harness asked in, whatever the HTTP scheduling."""

    def __init__(self, tools: ToolHandle, log: Any = None, max_steps: int | None = None,
                 result_chars: int | None = None) -> None:
        self.tools = tools
        self.log = log
        self.max_steps = max_steps
        self.result_chars = result_chars
        """How much of a result the harness gets (`limits.max_tool_result_chars`; 0: all;
        None: `render_result`'s default), as a `litellm:` agent's model would see it."""
        self.refused: dict[int, int] = {}
        """Per turn, the calls refused because the step budget was spent."""
        self._lock = asyncio.Lock()

    async def call(self, name: str, args: Any) -> ToolRecord | str:
        """The call's record, or (over the step budget) the refusal the harness reads."""
        async with self._lock:
            turn = getattr(self.tools, "turn", 0)
            records = getattr(self.tools, "records", None)
            made = sum(1 for r in records if r.turn == turn) if records is not None else 0
            if self.max_steps is not None and made >= self.max_steps:
                # the cmd: adapter's rule and words: the call is not run, not recorded, and
                # the turn ends as `step_budget`
                self.refused[turn] = self.refused.get(turn, 0) + 1
                return (f"step budget spent ({self.max_steps} tool calls this turn); the call "
                        "was not executed: answer now")
            if records is not None and hasattr(self.tools, "step"):
                # as the cmd: adapter numbers them: the k-th call of the turn is step k
                self.tools.step = made + 1
            record = await self.tools.call(name, args if args is not None else {})
        if self.log is not None:
            self.log(record)
        return record


def _result(record: ToolRecord | str, limit: int | None = None) -> mcp_types.CallToolResult:
    """What the harness gets back: the text a native LLM agent sees (`render_result`); a
    recorded error is an MCP tool error (`isError`), not a protocol error, so the model reads
    it and can try again, as with native calls."""
    import mcp_types

    from ..env.toolbox import MAX_RENDER_CHARS, render_result

    if isinstance(record, str):  # refused without running (step budget)
        return mcp_types.CallToolResult(
            content=[mcp_types.TextContent(type="text", text=f"Error: {record}")],
            is_error=True)
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=render_result(
            record, MAX_RENDER_CHARS if limit is None else limit or sys.maxsize))],
        is_error=record.error is not None)


def build_server(tools: ToolHandle, log: Any = None, name: str = SERVER_NAME,
                 caller: _Caller | None = None) -> Server[Any]:
    """The low-level MCP server of one session's tools (`tools/list`, `tools/call`)."""
    from mcp.server.lowlevel import Server

    caller = caller or _Caller(tools, log)
    listed = tool_list(tools)

    async def list_tools(ctx: Any, params: Any) -> mcp_types.ListToolsResult:
        import mcp_types

        return mcp_types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: mcp_types.CallToolRequestParams
                        ) -> mcp_types.CallToolResult:
        return _result(await caller.call(params.name, params.arguments), caller.result_chars)

    server: Server[Any] = Server(name, version=_version(), on_list_tools=list_tools,
                                 on_call_tool=call_tool)
    server.middleware = []  # no tracing spans: nothing exports them, each costs a call time
    return server


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("benchpack")
    except PackageNotFoundError:  # a source checkout without an install
        return "0"


@dataclass
class McpEndpoint:
    """A running MCP server of one session (from `start_mcp_server`)."""

    url: str
    """Streamable HTTP endpoint, e.g. `http://127.0.0.1:41234/mcp`."""
    transport: Transport = "http"
    """What the caller asked for; with "stdio" the harness launches `stdio_command`."""
    _stop: Any = field(default=None, repr=False)
    _caller: Any = field(default=None, repr=False)

    def refused(self, turn: int) -> int:
        """How many calls of `turn` were refused because the step budget was spent."""
        return self._caller.refused.get(turn, 0) if self._caller is not None else 0

    @property
    def stdio_command(self) -> list[str]:
        """argv of a stdio MCP server that relays to `url`: for harnesses that only launch
        MCP servers as commands. Calls still run (and are recorded) in this process."""
        return [sys.executable, "-m", "benchpack.runtime.mcp.bridge", self.url]

    def harness_config(self, name: str = SERVER_NAME) -> dict[str, Any]:
        """The `mcpServers` entry most harnesses read (Claude Code, Gemini CLI, Cursor…):
        `{"mcpServers": {name: {...}}}`, by URL for "http", by command for "stdio"."""
        if self.transport == "stdio":
            cmd = self.stdio_command
            entry: dict[str, Any] = {"command": cmd[0], "args": cmd[1:]}
        else:
            entry = {"type": "http", "url": self.url}
        return {"mcpServers": {name: entry}}

    async def close(self) -> None:
        """Stop serving and wait until the server's socket and tasks are gone. Idempotent."""
        stop, self._stop = self._stop, None
        if stop is not None:
            await stop()

    async def __aenter__(self) -> McpEndpoint:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP, not 0: asyncio turns Nagle off only on sockets that say they are
    # TCP, and with Nagle on every response waits ~40 ms for the client's delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        why = "the port is in use" if exc.errno in (98, 48) else (exc.strerror or str(exc))
        raise McpServerError(f"cannot serve MCP on {host}:{port}: {why} (hint: choose another "
                             "--port, or 0 for any free one)") from None
    return sock


async def start_mcp_server(tools: ToolHandle, transport: Transport = "http", *,
                           host: str = "127.0.0.1", port: int = 0, log: Any = None,
                           max_steps: int | None = None,
                           result_chars: int | None = None) -> McpEndpoint:
    """Serve `tools` (a session's `ToolBox`) over MCP streamable HTTP on `host:port` (0: any
    free port) until `close()`. Call it from the event loop the session runs on. `log`, if
    given, receives every `ToolRecord` after its call. With `max_steps`, a turn's calls past
    that many are refused with a tool error and not run (`McpEndpoint.refused(turn)`).
    `result_chars`: results cut as `limits.max_tool_result_chars` says (0: whole)."""
    import uvicorn

    if transport not in ("http", "stdio"):
        raise ValueError(f"transport must be `http` or `stdio`, not `{transport}`")
    caller = _Caller(tools, log, max_steps, result_chars)
    server = build_server(tools, log, caller=caller)
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, json_response=True,
                                     stateless_http=True, host=host)
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                            timeout_graceful_shutdown=2, ws="none")
    web = _EmbeddedUvicorn(config)
    task = asyncio.create_task(web.serve(sockets=[sock]), name=f"mcp-server:{bound}")
    while not web.started:  # listening, and the MCP session manager is up
        if task.done():
            sock.close()
            exc = task.exception() if not task.cancelled() else None
            raise McpServerError(f"the MCP server stopped while starting: {exc!r}")
        await asyncio.sleep(0.002)

    async def stop() -> None:
        web.should_exit = True
        web.stopping.set()
        try:
            await task
        finally:
            sock.close()

    shown = f"[{host}]" if ":" in host else host
    return McpEndpoint(url=f"http://{shown}:{bound}{MCP_PATH}", transport=transport,
                       _stop=stop, _caller=caller)


class _EmbeddedUvicorn:
    """uvicorn's server without its signal handlers: inside `bench run`, Ctrl-C belongs to
    the run (which stops its MCP servers on the way out), not to one session's server."""

    def __new__(cls, config: Any) -> Any:
        import uvicorn

        class Embedded(uvicorn.Server):
            stopping = asyncio.Event()

            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield

            async def main_loop(self) -> None:
                # woken by `stop`, instead of uvicorn's 0.1 s polling: a session's stop is
                # on its critical path (the Date header is then set once, at the start)
                await self.on_tick(0)
                await self.stopping.wait()

        server = Embedded(config)
        server.stopping = asyncio.Event()
        return server


@contextlib.asynccontextmanager
async def mcp_session(endpoint: McpEndpoint) -> AsyncIterator[Any]:
    """An official-SDK `ClientSession` connected to `endpoint` (for tests, benchmarks and
    in-process harnesses)."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(endpoint.url) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def serve_stdio(tools: ToolHandle, log: Any = None) -> None:
    """Serve `tools` over MCP on this process's stdin/stdout until stdin closes."""
    from mcp.server.stdio import stdio_server

    server = build_server(tools, log)
    # stdout is the protocol's: the CLI's secret-masking wrapper (no `.buffer`, and it would
    # rewrite JSON-RPC) stays on stderr, where people read
    wrapped, sys.stdout = sys.stdout, sys.__stdout__
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        sys.stdout = wrapped


def text_of(result: Any, sep: str = "\n") -> str:
    """The text of an MCP `CallToolResult`'s text blocks."""
    return sep.join(getattr(c, "text", "") for c in getattr(result, "content", []) or [])


__all__: Sequence[str] = ["McpEndpoint", "McpServerError", "build_server", "mcp_session",
                          "serve_stdio", "start_mcp_server", "text_of", "tool_list"]
