"""Response cache benchmark: what `ResponseCache` costs the event loop per LLM call.

On a cache directory already holding `--entries` entries (as after a few runs), measured on the
event loop's thread, one call at a time, in µs per call (median and 90th percentile of
`--samples` calls):

  get miss       a key that is not stored (every call of a first run)
  get hit        a committed entry (every call of a re-run)
  put_soon       queueing an entry (the write happens in the drain job), one every 0.5 ms, as
                 the client does at high concurrency
  put            a synchronous write (one transaction, not used by the client)

plus the drain job's throughput (entries written per second while a burst is queued) and the
cost of opening the cache (first `get` of a fresh `ResponseCache`). Entries are shaped like the
client's (an assistant message of ~1.5 KB with usage). The numbers depend on the machine's load;
compare implementations in alternating runs.

Usage: python benchmarks/cache_bench.py [--entries 20000] [--samples 2000] [--dir DIR]
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

from benchpack.runtime.cache import ResponseCache


def value(i: int) -> dict[str, Any]:
    text = f"Answer {i}: " + "The summary leads with the largest variance. " * 34
    return {"message": {"role": "assistant", "content": text},
            "usage": {"prompt_tokens": 812, "completion_tokens": 64},
            "finish_reason": "stop", "model": "openai/bench-model"}


def key(tag: str, i: int) -> str:
    return ResponseCache.key("openai/bench-model", [{"role": "user", "content": f"{tag} {i}"}],
                             None, {"temperature": 0}, 0, 0)


async def settle(cache: ResponseCache) -> None:
    """Wait until the drain job has written everything queued."""
    while cache._pending:
        await asyncio.sleep(0.005)


def timed(fn: Any, items: list[Any]) -> list[float]:
    out = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - t)
    return out


def stats(samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=10)
    return f"{1e6 * statistics.median(samples):8.1f} µs median {1e6 * q[-1]:8.1f} µs p90"


async def bench(directory: Path, entries: int, samples: int) -> None:
    cache = ResponseCache(directory)
    t = time.perf_counter()
    for i in range(entries):
        cache.put_soon(key("fill", i), value(i))
        if i % 256 == 255:
            await asyncio.sleep(0)  # let the drain job take the GIL now and then
    await settle(cache)
    fill = time.perf_counter() - t
    print(f"filled {entries} entries in {fill:.1f} s ({entries / max(fill, 1e-9):.0f}/s)")

    fresh = ResponseCache(directory)
    t = time.perf_counter()
    fresh.get(key("nothing", 0))
    print(f"{'open (first get)':<16} {1e6 * (time.perf_counter() - t):8.1f} µs")

    keys = [key("miss", i) for i in range(samples)]
    print(f"{'get miss':<16} {stats(timed(fresh.get, keys))}")
    keys = [key("fill", (i * 7919) % entries) for i in range(samples)] if entries else []
    if keys:
        print(f"{'get hit':<16} {stats(timed(fresh.get, keys))}")

    spaced = []
    for i in range(samples):
        k, v = key("soon", i), value(i)
        t = time.perf_counter()
        fresh.put_soon(k, v)
        spaced.append(time.perf_counter() - t)
        await asyncio.sleep(0.0005)
    await settle(fresh)
    print(f"{'put_soon':<16} {stats(spaced)}")

    burst = [(key("burst", i), value(i)) for i in range(samples)]
    t = time.perf_counter()
    for k, v in burst:
        fresh.put_soon(k, v)
    await settle(fresh)
    rate = samples / (time.perf_counter() - t)
    print(f"{'drain job':<16} {rate:8.0f} entries/s written from a queued burst")

    items = [(key("put", i), value(i)) for i in range(min(samples, 500))]
    print(f"{'put':<16} {stats(timed(lambda kv: fresh.put(*kv), items))}")
    print(f"errors: {fresh.errors + cache.errors}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=20000, help="entries stored beforehand")
    ap.add_argument("--samples", type=int, default=2000, help="calls measured per operation")
    ap.add_argument("--dir", type=Path, help="cache directory (default: a temporary one)")
    args = ap.parse_args()
    print(f"ResponseCache from {sys.modules[ResponseCache.__module__].__file__}")
    if args.dir:
        asyncio.run(bench(args.dir, args.entries, args.samples))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(bench(Path(tmp), args.entries, args.samples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
