"""Runtime benchmark: harness overhead and concurrency against a latency-bound ideal.

Every LLM call (agent, user simulator, judges) goes to an in-process backend that sleeps a fixed
latency and answers in the right format, so the only time not spent "waiting for the model" is
benchpack's own: scheduling, tools, judges' parsing, grading, DuckDB writes. Measured side by
side in one run:

  overhead per turn   (wall − calls × latency) ÷ turns, at concurrency 1; ms and % of wall
  throughput          at concurrency 1 / 8 / 64, as a fraction of the ideal
                      (total calls × latency ÷ concurrency, chains being equal)

Targets: ≤ 1 % overhead at 50 ms latency, ≥ 90 % of ideal at concurrency 64.

Usage: python benchmarks/runtime_bench.py [--latency-ms 50] [--sessions-per-episode 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
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
{deps}        request: Prepare summary {j} from the notes.
        hidden_intents:
          - text: Lead with the largest variance in region {j}.
          - text: Keep it to one page for review {j}.
          - text: Copy the finance lead on item {j}.
        checklist:
          - text: The summary leads with the largest variance.
          - text: A task is created
            rule: {{tool: todo__create}}
"""


def make_pack(root: Path, episodes: int, per_episode: int) -> None:
    eps = []
    for i in range(episodes):
        sessions = "".join(
            SESSION.format(j=j, deps=f"        depends_on: [s{j - 1}]\n" if j else "")
            for j in range(per_episode))
        eps.append(EPISODE.format(i=i, sessions=sessions))
    (root / "pack.yaml").write_text(PACK + "".join(eps), encoding="utf-8")


class LatencyBackend:
    """Answers every role in its format after `latency` seconds; counts calls."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.calls = 0

    async def __call__(self, req: Any) -> Any:
        self.calls += 1
        await asyncio.sleep(self.latency)
        prompt = req.messages[-1]["content"] if req.messages else ""
        ids = re.findall(r"id `([^`]+)`", prompt)
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


def run_once(plan: Path, db: Path, concurrency: int, latency: float) -> tuple[float, int, int]:
    from benchpack.runtime.runner import RunOptions, run_plan

    backend = LatencyBackend(latency)
    t = time.perf_counter()
    summary = run_plan(RunOptions(
        plan=plan, agent="litellm:bench-agent", simulator="litellm:bench-sim",
        judge="litellm:bench-judge", db=db, max_concurrency=concurrency,
        max_concurrent_per_model=4096, use_cache=False, progress=False,
        llm_backend=backend))
    wall = time.perf_counter() - t
    if summary.errors:
        raise SystemExit(f"benchmark run had {summary.errors} session errors")
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    turns = con.execute("SELECT count(*) FROM turns").fetchone()
    con.close()
    return wall, backend.calls, int(turns[0]) if turns else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--sessions-per-episode", type=int, default=3)
    args = ap.parse_args()
    latency = args.latency_ms / 1000

    from benchpack.compiler import compile_pack

    with tempfile.TemporaryDirectory() as tmp:
        results = []
        for concurrency, episodes in ((1, 4), (8, 32), (64, 256)):
            root = Path(tmp) / f"pack{concurrency}"
            root.mkdir()
            make_pack(root, episodes, args.sessions_per_episode)
            plan = Path(tmp) / f"plan{concurrency}"
            res = compile_pack(root, plan, use_cache=False)
            if not res.ok:
                for d in res.diagnostics:
                    print(d.format(), file=sys.stderr)
                return 1
            wall, calls, turns = run_once(plan, Path(tmp) / f"run{concurrency}.duckdb",
                                          concurrency, latency)
            ideal = calls * latency / concurrency
            results.append((concurrency, episodes, calls, turns, wall, ideal))
        print(f"latency per LLM call: {args.latency_ms:.0f} ms; sessions per episode: "
              f"{args.sessions_per_episode}")
        print(f"{'conc':>5} {'chains':>7} {'calls':>7} {'turns':>6} {'wall s':>8} {'ideal s':>8} "
              f"{'of ideal':>9}")
        for c, e, calls, turns, wall, ideal in results:
            print(f"{c:>5} {e:>7} {calls:>7} {turns:>6} {wall:>8.2f} {ideal:>8.2f} "
                  f"{100 * ideal / wall:>8.1f}%")
        c, e, calls, turns, wall, ideal = results[0]
        per_turn = (wall - ideal) / max(turns, 1)
        print(f"harness overhead at concurrency 1: {1000 * per_turn:.2f} ms per turn, "
              f"{100 * (wall - ideal) / wall:.2f}% of wall time (target ≤ 1%)")
        print(f"throughput at concurrency 64: {100 * results[-1][5] / results[-1][4]:.1f}% of "
              "the latency-bound ideal (target ≥ 90%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
