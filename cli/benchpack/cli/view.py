"""`bench view`: serve the interactive viewer over a store (issue 17; guarded, issue 27)."""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import click

from .params import PackErrors, db_option, wait_option

HOST = "127.0.0.1"
"""Localhost by default: the store holds every transcript, and the viewer has no login."""
SHUTDOWN_S = 3
"""Longest a SIGTERM or Ctrl-C waits for pages in flight (running queries are stopped)."""


def _free_port(host: str, port: int) -> int:
    """`port` if it can be bound on `host` (0: any free one), else a located error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            why = "is in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
            where = f"--port {port}" if host == HOST else f"--host {host} --port {port}"
            raise PackErrors(f"✗ {where}: {why} (pass another --port, or --port 0 for "
                             "any free one)") from None
        return int(sock.getsockname()[1])


@click.command("view")
@db_option
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port (0: any free one).")
@click.option("--host", "bind", metavar="ADDRESS",
              help="Listen on ADDRESS (e.g. 0.0.0.0) instead of 127.0.0.1: other machines "
                   "can reach it, so the printed address carries an access token and only "
                   "requests with it are served.")
@click.option("--no-browser", is_flag=True, help="Do not open a browser.")
@wait_option
def view(db: Path, port: int, bind: str | None, no_browser: bool, wait_s: float) -> None:
    """Browse a run store in the browser: runs, sessions, transcripts, SQL (read-only; works
    during a `bench run`)."""
    from benchpack.reports.access import StoreError, existing_store, open_store

    try:
        existing_store(db)
        with open_store(db, wait_s=wait_s, views=False):
            pass  # a damaged or foreign file is refused here, not on the first page
    except StoreError as exc:
        raise PackErrors(f"✗ {exc}") from None
    import uvicorn

    from benchpack.reports.view.app import create_app
    from benchpack.reports.view.guard import LOCAL_NAMES, new_token

    host = bind or HOST
    port = _free_port(host, port)
    local = host in LOCAL_NAMES
    token = None if local else new_token()
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    click.echo(f"bench view: {url} (store {db}, read-only; Ctrl-C to stop)"
               + ("" if local else "\n  anyone with this address can read every transcript "
                                   "of the store: share it as you would the store"))
    app = create_app(db, wait_s=wait_s, hosts=frozenset() if local else frozenset({"*"}),
                     token=token)
    server = _server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                    timeout_graceful_shutdown=SHUTDOWN_S),
                     lambda: app.state.viewer.sql.stop_all("the viewer is shutting down"))
    if not no_browser:
        import threading
        import webbrowser

        threading.Timer(0.5, webbrowser.open, [url]).start()
    server.run()


def _server(config: Any, on_exit: Callable[[], None]) -> Any:
    """uvicorn's server, whose SIGTERM and Ctrl-C also stop running queries: uvicorn waits
    for requests in flight, and a query's thread only ends when its query does (a
    `range(1e13)` kept `bench view` alive after SIGTERM)."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            super().handle_exit(sig, frame)
            on_exit()

    return Server(config)
