"""What the recording model proxy adds to a harness's model call, per API it serves (issue 26,
item 5): Chat Completions, Responses, Anthropic Messages and Gemini generateContent, each plain
and streamed.

The upstream is the tests' fake OpenAI-compatible server (`tests/runtime/fake_openai.py`) on
127.0.0.1, answering every request at once with a short text. The proxy runs as in a run: in
this process's event loop, forwarding through an `LLMClient` (the response cache off, so every
call goes upstream and is recorded). The client is a separate process, as a harness is: for
each API it alternates a call through the proxy with the same request made directly to the
upstream (a Chat Completions call: the upstream speaks nothing else), in interleaved rounds so
a busy machine slows both alike. Printed per API: median direct, median through the proxy,
the median added latency (proxy − direct) and p90; then, per API, the calls per second the
proxy sustains with 16 requests in flight (and the upstream alone, for scale).

Target: ≤ 1 ms added at the median over a direct call.

Usage: python benchmarks/proxy_overhead.py [--calls 300] [--seconds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MESSAGES = [{"role": "user", "content": "Check P-1042's INR, 请简短回答."}]
APIS: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": ("/v1/chat/completions", {"model": "m", "messages": MESSAGES}),
    "chat stream": ("/v1/chat/completions", {"model": "m", "messages": MESSAGES,
                                             "stream": True,
                                             "stream_options": {"include_usage": True}}),
    "responses": ("/v1/responses", {"model": "m", "input": MESSAGES[0]["content"]}),
    "responses stream": ("/v1/responses", {"model": "m", "input": MESSAGES[0]["content"],
                                           "stream": True}),
    "messages": ("/v1/messages", {"model": "m", "max_tokens": 64, "messages": MESSAGES}),
    "messages stream": ("/v1/messages", {"model": "m", "max_tokens": 64, "messages": MESSAGES,
                                         "stream": True}),
    "gemini": ("/v1beta/models/m:generateContent", {"contents": [
        {"role": "user", "parts": [{"text": MESSAGES[0]["content"]}]}]}),
    "gemini stream": ("/v1beta/models/m:streamGenerateContent?alt=sse", {"contents": [
        {"role": "user", "parts": [{"text": MESSAGES[0]["content"]}]}]}),
}


def _ms(xs: list[float], q: float = 0.5) -> float:
    xs = sorted(xs)
    return 1000 * xs[min(len(xs) - 1, int(q * len(xs)))]


# --------------------------------------------------------------------------- the client


async def _client(setup: dict[str, Any]) -> dict[str, Any]:
    import httpx

    direct_url = setup["upstream"] + "/chat/completions"
    direct_body = {"model": "m", "messages": MESSAGES}
    out: dict[str, Any] = {"latency": {}, "throughput": {}}
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=64)) as http:
        async def one(url: str, body: dict[str, Any]) -> float:
            t0 = time.perf_counter()
            resp = await http.post(url, json=body)
            await resp.aread()
            if resp.status_code != 200:
                raise RuntimeError(f"{url}: {resp.status_code} {resp.text[:200]}")
            return time.perf_counter() - t0

        for name, (path, body) in APIS.items():
            url = setup["proxy"] + path
            for _ in range(10):  # warm both paths (connections, first-use imports)
                await one(url, body)
                await one(direct_url, direct_body)
            direct, proxied = [], []
            for _ in range(setup["calls"]):
                direct.append(await one(direct_url, direct_body))
                proxied.append(await one(url, body))
            out["latency"][name] = {"direct": direct, "proxy": proxied}

        async def rate(url: str, body: dict[str, Any]) -> float:
            done = 0
            stop = time.perf_counter() + setup["seconds"]

            async def worker() -> None:
                nonlocal done
                while time.perf_counter() < stop:
                    await one(url, body)
                    done += 1

            t0 = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(16)))
            return done / (time.perf_counter() - t0)

        out["throughput"]["upstream alone"] = await rate(direct_url, direct_body)
        for name, (path, body) in APIS.items():
            out["throughput"][name] = await rate(setup["proxy"] + path, body)
    return out


# --------------------------------------------------------------------------- the proxy side


async def measure(calls: int, seconds: float) -> int:
    sys.path.insert(0, str(ROOT / "tests" / "runtime"))
    from fake_openai import FakeOpenAI

    from benchpack.runtime.cache import ResponseCache
    from benchpack.runtime.llm import LLMClient, LLMConfig
    from benchpack.runtime.proxy import ModelProxy

    recorded = 0

    def record(_: Any) -> None:
        nonlocal recorded
        recorded += 1

    with FakeOpenAI() as fake, tempfile.TemporaryDirectory(prefix="proxy-bench-") as tmp:
        fake.route("m", lambda body: "P-1042: INR 4.6, above range. 需要今天联系。",
                   prompt_tokens=20, completion_tokens=12)
        cache = ResponseCache(Path(tmp) / "cache")
        cache.enabled = False
        client = LLMClient(LLMConfig(api_base=fake.base_url, api_key="k", max_retries=0,
                                     max_concurrent_per_model=64), cache=cache)
        proxy = ModelProxy(client, model="openai/m")
        await proxy.start()
        try:
            route = proxy.open_session(recorder=record, turn=lambda: 1)
            setup = {"upstream": fake.base_url, "proxy": route.root_url, "calls": calls,
                     "seconds": seconds}
            proc = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--client", json.dumps(setup),
                stdout=asyncio.subprocess.PIPE)
            out, _ = await proc.communicate()
            if proc.returncode != 0:
                print("✗ the client failed", file=sys.stderr)
                return 1
        finally:
            await proxy.aclose()
    result = json.loads(out)
    print(f"{'API':<18} {'direct':>9} {'proxy':>9} {'added':>9} {'added p90':>10}   (ms, "
          f"{calls} calls each, interleaved)")
    for name, xs in result["latency"].items():
        added = [p - d for p, d in zip(xs["proxy"], xs["direct"], strict=True)]
        print(f"{name:<18} {_ms(xs['direct']):9.2f} {_ms(xs['proxy']):9.2f} "
              f"{1000 * statistics.median(added):9.2f} {_ms(added, 0.9):10.2f}")
    print(f"\n{'API':<18} {'calls/s':>9}   (16 in flight, {seconds:g} s each)")
    for name, r in result["throughput"].items():
        print(f"{name:<18} {r:9.0f}")
    print(f"\nmodel calls recorded by the proxy: {recorded}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        print(json.dumps(asyncio.run(_client(json.loads(args.client)))))
        return 0
    return asyncio.run(measure(args.calls, args.seconds))


if __name__ == "__main__":
    sys.exit(main())
