"""Runtime benchmark: harness overhead and concurrency against a latency-bound ideal.

Every LLM call (agent, user simulator, judges) goes to an in-process backend that waits a fixed
latency with `asyncio.sleep` (like a network call, it holds no CPU) and answers in the right
format, so the only time not spent "waiting for the model" is benchpack's own: scheduling,
tools, judges' prompts and parsing, the response cache, grading, DuckDB writes. The litellm
client is not in this loop; `litellm_overhead.py` measures its per-call cost separately.

Measured side by side in one run (all in one process, after an untimed warm-up run, so every
measured run finds the same modules imported):

  overhead per turn   at concurrency 1: (wall − time inside the backend − fixed) ÷ turns, in ms
                      and as % of a turn's wall time. The fixed per-run cost (plan load, store
                      open and close, run row, summary) is measured by resuming a finished
                      run (every session done) and shown beside it, with the all-inclusive % of wall time. The
                      same figure against the ideal below is shown too: it also counts any late
                      wake-up of the backend's timer, but moves by ±1–2 ms per turn with the
                      machine's timer jitter (±0.3 ms per call between calibration and run)
  throughput          at concurrency 1 / 8 / 64, as a fraction of the ideal
  CPU                 process CPU time per LLM call (all threads)

The ideal is the latency bound: every chain (episode × repeat) is a strict sequence of calls
(each judge question depends on the previous answer), chains are checked to be equal, so with
`c` chains at a time it is ceil(chains ÷ c) × calls per chain × latency. The latency is the
backend's *measured* `asyncio.sleep` in an idle event loop (it oversleeps by the loop's timer
granularity, ~0.1–1 ms; a zero-overhead harness could not beat that either).

The response cache is on, in a fresh directory (a first run: every call misses and is stored),
as `bench run` does by default; `--no-cache` turns it off.

Targets: ≤ 1 % overhead at 50 ms latency, ≥ 90 % of ideal at concurrency 64.

Usage: python benchmarks/runtime_bench.py [--latency-ms 50] [--sessions-per-episode 3]
                                          [--no-cache] [--levels 1,8,64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PACK = """\
benchpack: 1
name: rtbench
personas:
  - id: p
    profile: {role: Office manager}
services:
  - name: todo
    tables: {tasks: {key: id, id_prefix: T-, rows: [{id: T-1, title: seed}]}}
    operations:
      - {name: create, kind: create, table: tasks, fields: [title]}
environments:
  - id: office
    files: [{path: notes.md, content: "Quarterly notes."}]
    services: [todo]
episodes:
"""

EPISODE = """\
  - id: ep{i}
    persona: p
    environment: office
    sessions:
{sessions}"""

SESSION = """\
      - id: s{j}
        protocol: intent_tracking
{deps}        request: Prepare summary {j} of project {i} from the notes.
        hidden_intents:
          - text: Lead with the largest variance in region {j} of project {i}.
          - text: Keep it to one page for review {j} of project {i}.
          - text: Copy the finance lead on item {j} of project {i}.
        checklist:
          - text: The summary leads with the largest variance.
          - text: A task is created
            rule: {{tool: todo__create}}
"""

CHAINS_PER_SLOT = 4
"""Chains per concurrency slot: every level runs 4 rounds of equal chains."""


def make_pack(root: Path, episodes: int, per_episode: int) -> None:
    eps = []
    for i in range(episodes):
        sessions = "".join(
            SESSION.format(i=i, j=j, deps=f"        depends_on: [s{j - 1}]\n" if j else "")
            for j in range(per_episode))
        eps.append(EPISODE.format(i=i, sessions=sessions))
    (root / "pack.yaml").write_text(PACK + "".join(eps), encoding="utf-8")


IDS = re.compile(r"id `([^`]+)`")


class LatencyBackend:
    """Answers every role in its format after `latency` seconds; counts calls and the time
    spent inside calls (the sleep and the answer)."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.calls = 0
        self.inside = 0.0

    async def __call__(self, req: Any) -> Any:
        t = time.perf_counter()
        try:
            return await self._answer(req)
        finally:
            self.inside += time.perf_counter() - t

    async def _answer(self, req: Any) -> Any:
        self.calls += 1
        await asyncio.sleep(self.latency)
        prompt = req.messages[-1]["content"] if req.messages else ""
        ids = IDS.findall(prompt)
        usage = {"prompt_tokens": 100, "completion_tokens": 20}
        if '"decisions"' in prompt:
            body = json.dumps({"decisions": [{"id": i, "decision": "NO"} for i in ids]})
        elif '"scores"' in prompt:
            body = json.dumps({"scores": [{"id": i, "score": "YES", "reason": "ok"} for i in ids]})
        elif "<message>" in prompt:
            body = "<message>Also, please take this into account.</message>"
        elif req.tools and not any(m.get("role") == "tool" for m in req.messages[-2:]):
            return {"message": {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"c{self.calls}", "type": "function",
                "function": {"name": "todo__create", "arguments": '{"title": "follow up"}'}}]},
                "usage": usage}
        else:
            body = "Here is the summary you asked for."
        return {"message": {"role": "assistant", "content": body}, "usage": usage}


def measured_latency(latency: float, samples: int = 40) -> float:
    """Mean duration of `asyncio.sleep(latency)` in an otherwise idle event loop, one sleep after
    the other as at concurrency 1 (waking from a long idle period takes longer than waking a
    busy loop)."""
    if latency <= 0:
        return 0.0

    async def main() -> list[float]:
        out = []
        for _ in range(samples):
            t = time.perf_counter()
            await asyncio.sleep(latency)
            out.append(time.perf_counter() - t)
        return out

    return statistics.fmean(asyncio.run(main()))


def run_once(plan: Path, work: Path, concurrency: int, latency: float, cache: bool,
             resume: str | None = None) -> dict[str, Any]:
    """One `bench run` of `plan` into `work`; `resume`: resume that (finished) run in the same
    store, which finds every session done (the fixed per-run cost)."""
    from benchpack.runtime.runner import RunOptions, run_plan

    backend = LatencyBackend(latency)
    db = work / "run.duckdb"
    t = time.perf_counter()
    cpu = time.process_time()
    summary = run_plan(RunOptions(
        plan=plan, agent="litellm:bench-agent", simulator="litellm:bench-sim",
        judge="litellm:bench-judge", db=db, max_concurrency=concurrency,
        max_concurrent_per_model=4096, use_cache=cache, cache_dir=work / "cache",
        progress=False, llm_backend=backend, run_id=resume, resume=resume is not None))
    wall = time.perf_counter() - t
    cpu = time.process_time() - cpu
    if summary.errors:
        raise SystemExit(f"benchmark run had {summary.errors} session errors")
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    turns = con.execute("SELECT count(*) FROM turns").fetchone()
    hits = con.execute("SELECT count(*) FROM llm_calls WHERE cache_hit").fetchone()
    if hits and hits[0]:
        raise SystemExit(f"{hits[0]} LLM calls were served from the cache: every prompt must "
                         "be distinct, or the ideal below would be wrong")
    per_chain = con.execute(
        "SELECT DISTINCT n FROM (SELECT s.episode, s.repeat, count(*) AS n FROM llm_calls l "
        "JOIN sessions s USING (run_id, session_id, repeat) GROUP BY ALL)").fetchall()
    con.close()
    return {"run_id": summary.run_id, "wall": wall, "cpu": cpu, "calls": backend.calls, "inside": backend.inside,
            "turns": int(turns[0]) if turns else 0, "per_chain": sorted(r[0] for r in per_chain)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--sessions-per-episode", type=int, default=3)
    ap.add_argument("--no-cache", action="store_true", help="run without the response cache")
    ap.add_argument("--levels", default="1,8,64", help="concurrency levels (the first one also "
                    "gives the per-turn overhead)")
    args = ap.parse_args()
    latency = args.latency_ms / 1000
    levels = [int(x) for x in args.levels.split(",")]
    cache = not args.no_cache

    from benchpack.compiler import compile_pack

    with tempfile.TemporaryDirectory() as tmp:
        def plan_for(name: str, episodes: int) -> Path:
            root = Path(tmp) / f"pack-{name}"
            root.mkdir()
            make_pack(root, episodes, args.sessions_per_episode)
            plan = Path(tmp) / f"plan-{name}"
            res = compile_pack(root, plan, use_cache=False)
            if not res.ok:
                raise SystemExit("\n".join(d.format() for d in res.diagnostics))
            return plan

        def work(name: str) -> Path:
            path = Path(tmp) / f"work-{name}"
            path.mkdir()
            return path

        plans = {c: plan_for(str(c), CHAINS_PER_SLOT * c) for c in levels}
        # untimed warm-up: imports, template compilation, DuckDB's first open
        warm = work("warmup")
        done = run_once(plans[levels[0]], warm, 1, 0.0, cache)["run_id"]
        fixed = statistics.median(
            run_once(plans[levels[0]], warm, 1, latency, cache, resume=done)["wall"]
            for _ in range(3))
        actual = measured_latency(latency)
        results = []
        for c in levels:
            r = run_once(plans[c], work(f"c{c}"), c, latency, cache)
            if len(r["per_chain"]) != 1:
                raise SystemExit(f"chains are not equal (calls per chain: {r['per_chain']}); "
                                 "the ideal below would be wrong")
            chains = CHAINS_PER_SLOT * c
            r["ideal"] = math.ceil(chains / c) * r["per_chain"][0] * actual
            results.append((c, chains, r))

        print(f"latency per LLM call: {args.latency_ms:.0f} ms requested, "
              f"{1000 * actual:.2f} ms measured (asyncio.sleep in an idle loop); "
              f"sessions per episode: {args.sessions_per_episode}; response cache: "
              f"{'on (cold)' if cache else 'off'}")
        print(f"{'conc':>5} {'chains':>7} {'calls':>7} {'turns':>6} {'wall s':>8} {'ideal s':>8} "
              f"{'of ideal':>9} {'CPU s':>7} {'CPU ms/call':>12}")
        for c, chains, r in results:
            print(f"{c:>5} {chains:>7} {r['calls']:>7} {r['turns']:>6} {r['wall']:>8.2f} "
                  f"{r['ideal']:>8.2f} {100 * r['ideal'] / r['wall']:>8.1f}% {r['cpu']:>7.2f} "
                  f"{1000 * r['cpu'] / r['calls']:>12.3f}")
        c, chains, r = results[0]
        turns = max(r["turns"], 1)
        turn_wall = (r["wall"] - fixed) / turns
        outside = (r["wall"] - r["inside"] - fixed) / turns
        vs_ideal = (r["wall"] - r["ideal"] - fixed) / turns
        print(f"fixed cost per run (plan load, store open/close, run row, summary): "
              f"{1000 * fixed:.0f} ms")
        print(f"backend time per call at concurrency {c}: "
              f"{1000 * r['inside'] / r['calls']:.2f} ms in the run, "
              f"{1000 * actual:.2f} ms calibrated")
        print(f"harness overhead at concurrency {c}: {1000 * outside:.2f} ms per turn outside "
              f"the backend, {100 * outside / turn_wall:.2f}% of a turn's wall time (target "
              f"≤ 1%); against the ideal {1000 * vs_ideal:.2f} ms, "
              f"{100 * vs_ideal / turn_wall:.2f}%; all-inclusive "
              f"{100 * (r['wall'] - r['ideal']) / r['wall']:.2f}% of this {r['wall']:.1f} s run")
        c, chains, r = results[-1]
        print(f"throughput at concurrency {c}: {100 * r['ideal'] / r['wall']:.1f}% of the "
              "latency-bound ideal (target ≥ 90%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
