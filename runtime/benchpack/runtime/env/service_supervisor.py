"""Runs *inside* the sandbox next to a pack's HTTP service (stdlib only; copied there as a file).

The sandbox has no network but its own loopback, so the runner cannot reach the service's TCP
port. This supervisor starts the service with `$PORT` set, relays every connection on a Unix
socket (in a directory bound from the host) to `127.0.0.1:$PORT`, and stops the service when
the runner says `stop` on stdin or stdin closes (the runner went away): SIGTERM to the
service's process group, SIGKILL after the grace period. It exits with the service's exit code
when the service ends by itself, so the runner sees a crash at once.

Usage: `python -I service_supervisor.py CONFIG.json` with `command`, `cwd`, `env`, `port`
(null = any free one), `socket` and `grace_s`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from typing import Any


def note(text: str) -> None:
    sys.stderr.write(f"[benchpack] {text}\n")
    sys.stderr.flush()


def free_port() -> int:
    # the sandbox has its own network namespace: nothing else can take the port meanwhile
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


async def relay(port: int, client_reader: asyncio.StreamReader,
                client_writer: asyncio.StreamWriter) -> None:
    try:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        # not listening yet (the health check retries) or crashed: the runner sees a closed
        # connection
        client_writer.close()
        return
    await asyncio.gather(pipe(client_reader, up_writer), pipe(up_reader, client_writer))
    for w in (up_writer, client_writer):
        with contextlib.suppress(Exception):
            w.close()


async def stop_requested() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        line = await reader.readline()
        if not line or line.strip() == b"stop":
            return


def signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def main(config: dict[str, Any]) -> int:
    port = config["port"] or free_port()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": "/tmp",
           "PYTHONUNBUFFERED": "1", **config["env"], "PORT": str(port)}
    note(f"starting {config['command']} in {config['cwd']} with PORT={port}")
    try:
        proc = await asyncio.create_subprocess_exec(
            *config["command"], cwd=config["cwd"], env=env, stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True)
    except OSError as exc:
        note(f"cannot start the service: {exc}")
        return 127
    server = await asyncio.start_unix_server(
        lambda r, w: relay(port, r, w), path=config["socket"])
    exited = asyncio.ensure_future(proc.wait())
    stop = asyncio.ensure_future(stop_requested())
    await asyncio.wait({exited, stop}, return_when=asyncio.FIRST_COMPLETED)
    server.close()
    if exited.done():
        note(f"the service exited by itself with code {proc.returncode}")
        stop.cancel()
        return proc.returncode if proc.returncode and proc.returncode > 0 else 1
    signal_group(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(asyncio.shield(exited), config["grace_s"])
    except TimeoutError:
        note(f"the service ignored SIGTERM for {config['grace_s']} s: killed")
    # its own children too, even if the service itself ended on SIGTERM
    signal_group(proc.pid, signal.SIGKILL)
    await exited
    return 0


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        cfg = json.load(f)
    sys.exit(asyncio.run(main(cfg)))
