"""`bench mcp PLAN --session ID`: serve one session's tools over MCP for debugging (issue 14).
The MCP server loads only inside the command, so `bench --help` stays light."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from .params import PackErrors


@click.command(name="mcp")
@click.argument("plan", type=click.Path(path_type=Path), default=Path("build"))
@click.option("--session", required=True, metavar="ID",
              help="The session to serve: its id or name (or a glob matching exactly one).")
@click.option("--transport", type=click.Choice(["http", "stdio"]), default="http",
              show_default=True,
              help="http: streamable HTTP on localhost (the URL is printed); stdio: MCP on "
                   "this process's stdin/stdout (launch `bench mcp` from the harness).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="HTTP: the address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="HTTP: the port (0: any free port).")
@click.option("--allow-python", is_flag=True,
              help="Allow the pack's python tools and HTTP services (they run in the sandbox).")
def mcp_cmd(plan: Path, session: str, transport: str, host: str, port: int,
            allow_python: bool) -> None:
    """Serve one session's tools (built-in, declarative, python, HTTP) over MCP until Ctrl-C,
    in a fresh copy of its environment, printing every call on stderr. Calls are validated
    and executed as in `bench run`; nothing is stored."""
    import asyncio

    from benchpack.runtime.env.processes import ServiceError
    from benchpack.runtime.errors import BenchError
    from benchpack.runtime.mcp.debug import serve_session
    from benchpack.runtime.mcp.server import McpServerError

    if transport == "stdio" and (port or host != "127.0.0.1"):
        raise click.UsageError("--host and --port are for --transport http")

    def ready(endpoint: Any, box: Any) -> None:
        click.echo(f"serving `{box.session.name}` ({len(box.specs)} tools) at {endpoint.url}",
                   err=True)
        click.echo("harness config: " + json.dumps(endpoint.harness_config()), err=True)
        click.echo("Ctrl-C to stop", err=True)

    async def main() -> None:
        import signal

        # a supervisor's SIGTERM stops it as Ctrl-C does: services and server shut down
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        await serve_session(plan, session, transport, host, port, allow_python, ready)

    try:
        asyncio.run(main())
    except (BenchError, McpServerError, ServiceError) as exc:
        raise PackErrors(f"✗ {exc}") from None
    except (KeyboardInterrupt, asyncio.CancelledError):
        click.echo("stopped", err=True)
