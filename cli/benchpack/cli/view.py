"""`bench view`: serve the interactive viewer over a store on localhost (issue 17)."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import click

from .params import PackErrors, db_option, wait_option

HOST = "127.0.0.1"
"""Localhost only: the store holds every transcript, and the viewer has no login."""


def _free_port(port: int) -> int:
    """`port` if it can be bound on localhost (0: any free one), else a located error."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError as exc:
            why = "is in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
            raise PackErrors(f"✗ --port {port}: {why} (pass another --port, or --port 0 for "
                             "any free one)") from None
        return int(sock.getsockname()[1])


@click.command("view")
@db_option
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port on 127.0.0.1 (0: any free one).")
@click.option("--no-browser", is_flag=True, help="Do not open a browser.")
@wait_option
def view(db: Path, port: int, no_browser: bool, wait_s: float) -> None:
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

    port = _free_port(port)
    url = f"http://{HOST}:{port}/"
    click.echo(f"bench view: {url} (store {db}, read-only; Ctrl-C to stop)")
    config = uvicorn.Config(create_app(db, wait_s=wait_s), host=HOST, port=port,
                            log_level="warning")
    server = uvicorn.Server(config)
    if not no_browser:
        import threading
        import webbrowser

        threading.Timer(0.5, webbrowser.open, [url]).start()
    server.run()
