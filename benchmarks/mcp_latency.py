"""What a tool call costs over MCP beyond the same call made natively (issue 14, part 6).

A session of the pharmacist-week reference pack (compiled into a temporary directory) gets its
`ToolBox`; every tool below is called `--calls` times natively (`await toolbox.call(...)`) and
through the session's MCP server (`start_mcp_server`) with the official client
(`mcp.ClientSession` over streamable HTTP), in interleaved rounds so a busy machine slows both
alike. Printed per tool: median native, median over MCP, and the median added latency (MCP −
native), with p90; then the server's start and stop times (paid once per session).

The client runs in the same process and event loop as the server, so its own work (building
the request, parsing the answer) is in the MCP column: a harness in its own process pays that
on its side, in parallel. Target: ≤ 2 ms added, median.

Usage: python benchmarks/mcp_latency.py [--calls 300]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

TOOLS: list[tuple[str, dict[str, Any], str]] = [
    ("ask_user", {"question": "周五几点到店？"}, "built-in, in memory"),
    ("read_file", {"path": "handbook/house-rules.md"}, "built-in, file (worker thread)"),
    ("records__get_patient", {"id": "P-1042"}, "declarative service"),
    ("read_file", {"nope": 1}, "invalid arguments"),
]


def _ms(xs: list[float], q: float = 0.5) -> float:
    xs = sorted(xs)
    return 1000 * xs[min(len(xs) - 1, int(q * len(xs)))]


async def measure(calls: int) -> int:
    from benchpack.compiler import compile_pack
    from benchpack.runtime.env import EpisodeEnvironment, ToolBox
    from benchpack.runtime.mcp import mcp_session, start_mcp_server
    from benchpack.runtime.planfile import load_plan

    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as tmp:
        res = compile_pack(ROOT / "taskpacks" / "pharmacist-week", Path(tmp) / "plan",
                           use_cache=False)
        if not res.ok:
            print("✗ pharmacist-week does not compile", file=sys.stderr)
            return 1
        plan = load_plan(Path(tmp) / "plan")
        s = next(iter(plan.sessions.values()))
        env = EpisodeEnvironment.create(plan, s.environment, Path(tmp) / "ws")
        env.add_session_files(s.files)
        box = ToolBox(plan, s, env)
        box.turn = 1
        starts, stops = [], []
        for _ in range(5):
            t0 = time.perf_counter()
            ep = await start_mcp_server(box)
            starts.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await ep.close()
            stops.append(time.perf_counter() - t0)
        native: dict[int, list[float]] = {i: [] for i in range(len(TOOLS))}
        over: dict[int, list[float]] = {i: [] for i in range(len(TOOLS))}
        async with await start_mcp_server(box) as endpoint, mcp_session(endpoint) as client:
            for _ in range(20):  # imports, validators, the worker thread, HTTP keep-alive
                for name, args, _ in TOOLS:
                    await box.call(name, args)
                    await client.call_tool(name, args)
            for _ in range(calls):
                for i, (name, args, _) in enumerate(TOOLS):
                    t0 = time.perf_counter()
                    await box.call(name, args)
                    native[i].append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    out = await client.call_tool(name, args)
                    over[i].append(time.perf_counter() - t0)
                    assert out.is_error == (name == "read_file" and "nope" in args)
    print(f"MCP vs native tool calls, {calls} calls each (ms; pharmacist-week, client in "
          "process)")
    print(f"{'tool':<22}{'kind':<32}{'native':>8}{'MCP':>8}{'added':>8}{'added p90':>11}")
    added_all = []
    for i, (name, _, kind) in enumerate(TOOLS):
        added = [m - n for m, n in zip(over[i], native[i], strict=True)]
        added_all.extend(added)
        print(f"{name:<22}{kind:<32}{_ms(native[i]):>8.3f}{_ms(over[i]):>8.3f}"
              f"{_ms(added):>8.3f}{_ms(added, 0.9):>11.3f}")
    med = 1000 * statistics.median(added_all)
    print(f"median added latency over all calls: {med:.3f} ms (target ≤ 2 ms): "
          f"{'met' if med <= 2 else 'MISSED'}")
    print(f"server start {_ms(starts):.1f} ms, stop {_ms(stops):.1f} ms (median of 5; once per "
          "session)")
    return 0 if med <= 2 else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=300)
    return asyncio.run(measure(ap.parse_args().calls))


if __name__ == "__main__":
    sys.exit(main())
