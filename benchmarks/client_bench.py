"""The event loop's CPU per request of HTTP clients for the direct OpenAI path, side by side in
one process against the same server (issue 31): aiohttp (the path's client, `http://` and
`https://`) against versions of the former `runtime/plainhttp.py` given as files (`--plain
NAME=PATH`): the hand-written one and the one on h11, from git:

  git show 8f7cd86^:runtime/benchpack/runtime/plainhttp.py > /tmp/plainhttp_hand.py
  git show 8f7cd86:runtime/benchpack/runtime/plainhttp.py > /tmp/plainhttp_h11.py

The server is `http_bench.py`'s (a minimal asyncio HTTP/1.1 endpoint in a child process,
answering at once or after `--latency-ms`). Each arm sends `--requests` POSTs of a chat
completion's body (the headers the direct path sends) with `--concurrency` in flight from a
fresh event loop and pool, and the loop's thread CPU (`time.thread_time`) over the whole batch
is divided by the requests: the client's cost on the loop, plus asyncio's own share of
waking for each answer (the same for every arm). The arms alternate over `--rounds`; each
prints its median and best.

Usage: python benchmarks/client_bench.py [--requests 2000] [--concurrency 64] [--rounds 5]
                                         [--latency-ms 0] [--plain hand=/tmp/plainhttp_hand.py]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import multiprocessing
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from http_bench import MODEL, serve

HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer no-key"}
BODY = json.dumps({"model": MODEL, "messages": [
    {"role": "system", "content": "You are a careful assistant. " * 4},
    {"role": "user", "content": "Summarise the note in two sentences."}]}).encode()

Arm = Callable[[str, int, int], Awaitable[None]]


def _load(name: str, path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"plainhttp_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plain_arm(module: ModuleType) -> Arm:
    """Requests through a `plainhttp` version (its request maker: `make_request` on h11,
    `request_bytes` before)."""
    make = getattr(module, "make_request", None) or module.request_bytes

    async def run(url: str, n: int, c: int) -> None:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port or 80
        pool = module.PlainPool()
        sem = asyncio.Semaphore(c)

        async def one() -> None:
            async with sem:
                request = make(parts.path, parts.netloc, HEADERS, BODY)
                status, _, body = await pool.post(host, port, request, 1 << 25, 30.0)
                assert status == 200 and body
        try:
            await asyncio.gather(*(one() for _ in range(n)))
        finally:
            pool.close()
    return run


async def aiohttp_arm(url: str, n: int, c: int) -> None:
    """Requests as `openai_direct._post` sends them."""
    import aiohttp

    sem = asyncio.Semaphore(c)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                     skip_auto_headers=("User-Agent",)) as session:
        async def one() -> None:
            async with sem, session.post(url, data=BODY, headers=HEADERS,
                                    timeout=aiohttp.ClientTimeout(total=30.0)) as resp:
                body = await resp.read()
                assert resp.status == 200 and body
        await asyncio.gather(*(one() for _ in range(n)))


def measure(arm: Arm, url: str, n: int, c: int) -> float:
    """ms of the loop thread's CPU per request."""
    async def main() -> float:
        await arm(url, c, c)  # connections opened, code paths warm: not counted
        start = time.thread_time()
        await arm(url, n, c)
        return (time.thread_time() - start) * 1000 / n
    return asyncio.run(main())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--latency-ms", type=float, default=0.0)
    ap.add_argument("--plain", action="append", default=[], metavar="NAME=PATH",
                    help="another plainhttp version, as an arm of its own")
    args = ap.parse_args()
    arms: dict[str, Arm] = {"aiohttp": aiohttp_arm}
    for item in args.plain:
        name, _, path = item.partition("=")
        arms[f"plainhttp ({name})"] = plain_arm(_load(name, path))
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(child,), daemon=True)
    server.start()
    try:
        base = parent.recv()
        parent.send(("delay", args.latency_ms / 1000))
        parent.recv()
        url = f"{base}/chat/completions"
        got: dict[str, list[float]] = {name: [] for name in arms}
        for _ in range(args.rounds):
            for name, arm in arms.items():
                got[name].append(measure(arm, url, args.requests, args.concurrency))
    finally:
        parent.send(None)
        server.join(5)
    print(f"loop CPU per request, {args.requests} requests at {args.concurrency} in flight, "
          f"server at {args.latency_ms:g} ms, {args.rounds} rounds (ms: median, best, all)")
    for name, values in got.items():
        print(f"  {name:28} {statistics.median(values):.3f}  {min(values):.3f}  "
              + " ".join(f"{v:.3f}" for v in values))
    return 0


if __name__ == "__main__":
    sys.exit(main())
