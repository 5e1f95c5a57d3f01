"""Per-call client overhead of the litellm path, against the local fake OpenAI-compatible server.

`runtime_bench.py` keeps litellm out of its loop; this measures what one real call costs the
client, side by side in one run. The fake server (`tests/runtime/fake_openai.py`, answering at
once) runs in a child process, so this process's CPU time is the client's alone. Calls are
sequential; after a warm-up, every path makes `--calls` calls per scenario, in interleaved
rounds (a busy machine slows all paths alike; medians are shown):

  raw httpx            POST the same JSON body with httpx and parse the answer: the floor
                       any client pays for HTTP and JSON
  litellm openai/      `litellm.acompletion` alone, `openai/<model>` with `api_base`
  benchpack openai/    `LLMClient.complete` (cache off) through `LiteLLMBackend`: all that
                       `bench run --api-base … --agent litellm:openai/<model>` does per call
  benchpack openai/ + own HTTP
                       the same with litellm's `EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER`,
                       which builds the request itself instead of through the openai SDK
  benchpack hosted_vllm/, aiohttp_openai/
                       the same with litellm's other providers for OpenAI-compatible servers

Each path calls its own model name, so the server's log shows how the request bodies differ
from `openai/`'s, and the recorded token counts show what each path brings back.

Scenarios: a judge-like call (one ~3 KB user message, no tools) and an agent-like call (a
system prompt, 30 history messages, ~11 KB, and the 8 built-in tool specs).

Usage: python benchmarks/litellm_overhead.py [--calls 100]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODEL = "bench-model"
OWN_HTTP = "EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER"
PATHS = {"raw": "raw httpx", "bare": "litellm openai/", "openai": "benchpack openai/",
         "own": "benchpack openai/ + own HTTP", "vllm": "benchpack hosted_vllm/",
         "aiohttp": "benchpack aiohttp_openai/"}
"""Path key (also the model name's suffix) → label."""
ROUNDS = 5


def serve(conn: Connection) -> None:
    """Child process: run the fake server until told to stop, then send back what it got."""
    sys.path.insert(0, str(ROOT / "tests" / "runtime"))
    from fake_openai import FakeOpenAI

    with FakeOpenAI() as fake:
        for key in PATHS:
            fake.route(f"{MODEL}-{key}", lambda body: "Noted: the summary is ready.",
                       prompt_tokens=321, completion_tokens=7)
        conn.send(fake.base_url)
        conn.recv()
        conn.send(fake.requests)


def scenarios() -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None]]:
    from benchpack.runtime.env.toolbox import BUILTIN_SPECS

    tools = [{"type": "function", "function": {"name": name, **spec}}
             for name, spec in BUILTIN_SPECS.items()]
    judge = [{"role": "user", "content": "Decide for each requirement whether the turn below "
              "satisfies it.\n" + "The assistant drafted the quarterly summary. " * 70}]
    agent: list[dict[str, Any]] = [{"role": "system", "content": "You are a capable personal "
                                    "assistant working for one user. " * 12}]
    for i in range(15):
        agent.append({"role": "user", "content": f"Please handle item {i} from the notes. " * 8})
        agent.append({"role": "assistant", "content": f"Done with item {i}; details follow. " * 8})
    return {"judge: 1 message, no tools": (judge, None),
            "agent: 31 messages + 8 tools": (agent, tools)}


async def measure(paths: dict[str, Callable[[], Awaitable[Any]]], calls: int
                  ) -> dict[str, tuple[float, float]]:
    """Path → (wall ms, client CPU ms) per call, the median of `ROUNDS` interleaved rounds."""
    for call in paths.values():
        for _ in range(10):
            await call()
    per = max(1, calls // ROUNDS)
    walls: dict[str, list[float]] = {key: [] for key in paths}
    cpus: dict[str, list[float]] = {key: [] for key in paths}
    for _ in range(ROUNDS):
        for key, call in paths.items():
            t, c = time.perf_counter(), time.process_time()
            for _ in range(per):
                await call()
            walls[key].append((time.perf_counter() - t) / per)
            cpus[key].append((time.process_time() - c) / per)
    return {key: (1000 * statistics.median(walls[key]), 1000 * statistics.median(cpus[key]))
            for key in paths}


async def run(base_url: str, calls: int
              ) -> tuple[dict[str, dict[str, tuple[float, float]]], dict[str, tuple[int, int]]]:
    import httpx

    from benchpack.runtime.llm import LiteLLMBackend, LLMClient, LLMConfig, import_litellm

    litellm = import_litellm()
    client = LLMClient(LLMConfig(api_base=base_url, api_key="no-key", max_retries=0),
                       backend=LiteLLMBackend())
    records: list[Any] = []
    results = {}
    async with httpx.AsyncClient() as http:
        for name, (messages, tools) in scenarios().items():
            # every path gets its own copy: some litellm providers edit the tool specs in place
            body: dict[str, Any] = {"messages": messages, "temperature": 0, "seed": 0}
            if tools:
                body["tools"] = copy.deepcopy(tools)

            async def raw(body: dict[str, Any] = body) -> None:
                resp = await http.post(f"{base_url}/chat/completions",
                                       json={**body, "model": f"{MODEL}-raw"},
                                       headers={"Authorization": "Bearer no-key"})
                resp.json()

            bare_body = copy.deepcopy(body)

            async def bare(body: dict[str, Any] = bare_body) -> None:
                await litellm.acompletion(**body, model=f"openai/{MODEL}-bare",
                                          api_base=base_url, api_key="no-key", num_retries=0,
                                          max_retries=0)

            def via(provider: str, key: str, messages: list[dict[str, Any]] = messages,
                    tools: list[dict[str, Any]] | None = tools
                    ) -> Callable[[], Awaitable[Any]]:
                tools = copy.deepcopy(tools)

                async def call() -> None:
                    if key == "own":
                        os.environ[OWN_HTTP] = "true"
                    try:
                        await client.complete(role="judge",
                                              model=f"litellm:{provider}/{MODEL}-{key}",
                                              messages=messages, tools=tools,
                                              recorder=records.append,
                                              params={"temperature": 0}, seed=0)
                    finally:
                        os.environ.pop(OWN_HTTP, None)
                return call

            results[name] = await measure({
                "raw": raw, "bare": bare, "openai": via("openai", "openai"),
                "own": via("openai", "own"), "vllm": via("hosted_vllm", "vllm"),
                "aiohttp": via("aiohttp_openai", "aiohttp")}, calls)
    tokens = {r.model.rsplit("-", 1)[-1]: (r.prompt_tokens, r.completion_tokens)
              for r in records}
    return results, tokens


def body_differences(requests: list[dict[str, Any]]) -> list[str]:
    """How each path's last request body differs from `benchpack openai/`'s, per scenario."""
    names = {len(messages): name for name, (messages, _) in scenarios().items()}
    last: dict[tuple[str, int], dict[str, Any]] = {}
    for body in requests:
        key = str(body.get("model", "")).rsplit("-", 1)[-1]
        last[(key, len(body.get("messages") or []))] = {
            k: v for k, v in body.items() if k != "model"}
    notes = []
    for (key, n), body in sorted(last.items(), key=lambda kv: (kv[0][1], list(PATHS).index(
            kv[0][0]))):
        base = last.get(("openai", n))
        if base is None or key == "openai":
            continue
        diffs = sorted(k for k in set(base) | set(body) if base.get(k) != body.get(k))
        detail = "same body" if not diffs else "differs in " + ", ".join(diffs)
        if diffs == ["tools"]:
            def dropped(a: Any, b: Any) -> set[str]:
                out: set[str] = set()
                for x, y in zip(a, b, strict=False):
                    px, py = x["function"]["parameters"], y["function"]["parameters"]
                    out |= set(px) - set(py)
                return out
            gone = dropped(base["tools"], body["tools"])
            if gone:
                detail += f" (drops {', '.join(sorted(gone))} from every tool's parameters)"
        notes.append(f"  {names.get(n, n)}, {PATHS[key]}: {detail}")
    return notes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=100)
    args = ap.parse_args()
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    server = ctx.Process(target=serve, args=(child,), daemon=True)
    server.start()
    base_url = parent.recv()
    try:
        results, tokens = asyncio.run(run(base_url, args.calls))
    finally:
        parent.send("stop")
        requests = parent.recv() if parent.poll(10) else []
        server.join(timeout=10)
    print(f"litellm client cost per call against a local fake server ({args.calls} sequential "
          f"calls per path in {ROUNDS} interleaved rounds; client CPU = this process only)")
    for name, paths in results.items():
        floor = paths["raw"][1]
        print(f"\n{name}\n  {'path':<30} {'wall ms':>8} {'CPU ms':>8} {'CPU over raw':>13}")
        for key, (wall, cpu) in paths.items():
            print(f"  {PATHS[key]:<30} {wall:>8.2f} {cpu:>8.2f} {cpu - floor:>12.2f}")
    print("\nrequest bodies compared with benchpack openai/ (server log):")
    print("\n".join(body_differences(requests)))
    print("tokens recorded (the server reports 321 prompt, 7 completion): " + ", ".join(
        f"{PATHS[k]} {tokens.get(k)}" for k in ("openai", "own", "vllm", "aiohttp")))
    print()
    for name, paths in results.items():
        cpu = paths["openai"][1]
        print(f"{name}: benchpack openai/ costs {cpu:.2f} ms of client CPU per call "
              f"({100 * cpu / 50:.0f}% of a 50 ms call); one event loop saturates at "
              f"~{1000 / cpu:.0f} calls/s, i.e. ~{50 / cpu:.0f} concurrent 50 ms calls")
    return 0


if __name__ == "__main__":
    sys.exit(main())
