"""Tool-heavy benchmark (issue 31): the τ²-bench retail gold run, `bench run` (a fresh process)
with the pack's scripted gold agent, rules user and judge — no model at all, so every second is
harness: sandboxed tool workers, the `state` reward's gold replay, snapshots, the store.

Printed, measured in one run: wall and CPU (the `bench run` process and its children: the
sandboxed workers) in all and per session; per tool call the time the store recorded
(`tool_calls.duration_s`: runner → sandboxed worker → back, argument checks and journal applied)
beside the floor — the same call, same arguments, same order, on a fresh copy of the same
tables, made in-process on the pack's own tool functions (`benchpack_tools.State`, no sandbox,
no JSON) — and the harness overhead (recorded − floor) at the median, the mean and p90, with
the first call of each episode (which may start a worker) apart. Targets (issue 31, on a quiet
2-core machine): overhead per call ≤ 2 ms at the median, first call of an episode ≤ 50 ms.
The machine's load average is printed with the figures: on a shared machine wall times move
with other processes, CPU much less.

Usage: python benchmarks/tool_bench.py --pack PACK_DIR [--tasks 10] [--concurrency 4]
       python benchmarks/tool_bench.py --tau2 TAU2_CHECKOUT [--tau2-python PY] [...]
(`PACK_DIR`: what `bench import tau2 …/domains/retail --tau2` wrote; with `--tau2` the
benchmark imports it into a temporary directory first.)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

BENCH = str(Path(sys.executable).with_name("bench"))


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def import_pack(checkout: Path, python: str | None, out: Path) -> Path:
    cmd = [BENCH, "import", "tau2", str(checkout / "data/tau2/domains/retail"), "-o",
           str(out), "--tau2"]
    if python:
        cmd += ["--tau2-python", python]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out


def run_gold(pack: Path, work: Path, tasks: int, concurrency: int) -> dict[str, Any]:
    build = work / "build"
    subprocess.run([BENCH, "compile", str(pack), "-o", str(build)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    plan = json.loads((build / "plan.json").read_text(encoding="utf-8"))
    sessions = list(plan["sessions"])[:tasks]
    db = work / "gold.duckdb"
    cmd = [BENCH, "run", str(build), "--agent", f"scripted:{pack / 'demo/gold_agent.yaml'}",
           "--allow-python", "--simulator", "rules", "--judge", "rules", "--db", str(db),
           "--max-concurrency", str(concurrency), "--no-cache"]
    for s in sessions:
        cmd += ["--session", s]
    load = _load()
    cpu0, t0 = _cpu_children(), time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _cpu_children() - cpu0
    if proc.returncode != 0:
        sys.exit(f"bench run failed ({proc.returncode}): {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return {"build": build, "db": db, "sessions": sessions, "wall": wall, "cpu": cpu,
            "load": load}


def recorded_calls(db: Path) -> list[tuple[str, int, str, dict[str, Any], float]]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT session_id, seq, tool_name, call, duration_s FROM tool_calls "
                           "ORDER BY session_id, seq").fetchall()
        scores = con.execute("SELECT avg(score), count(*) FROM sessions").fetchone()
    finally:
        con.close()
    print(f"sessions {scores[1]}, mean reward {scores[0]:.3f} (the gold: 1.0)")
    return [(s, int(q), str(t), json.loads(c) if isinstance(c, str) else dict(c or {}), float(d))
            for s, q, t, c, d in rows]


def floor_calls(build: Path, calls: list[tuple[str, int, str, dict[str, Any], float]]
                ) -> list[float]:
    """Each recorded call made again in-process on the pack's functions (see the docstring)."""
    import copy

    from benchpack.runtime.env import ServiceState
    from benchpack.runtime.env.pytools import API
    from benchpack.runtime.planfile import load_plan

    plan = load_plan(build)
    api = types.ModuleType("benchpack_tools")
    exec(compile(API, "benchpack_tools", "exec"), api.__dict__)
    sys.modules["benchpack_tools"] = api
    (toolset,) = plan.toolsets.values()
    module = types.ModuleType("pack_tools")
    exec(compile(toolset.source, toolset.file, "exec"), module.__dict__)
    service = ServiceState(plan.services[toolset.service])
    tables, info = service.snapshot(), service.key_info()
    out: list[float] = []
    state = None
    current = None
    for session, _, tool, args, _ in calls:
        if session != current:  # every episode starts from the fixture rows
            current = session
            state = api.State(copy.deepcopy(tables), copy.deepcopy(info))
        impl = plan.tools[tool].impl
        kwargs = dict(args)
        if impl.state_param:
            kwargs[impl.state_param] = state
        fn = getattr(module, impl.function)
        t0 = time.perf_counter()
        try:
            state._begin()
            fn(**kwargs)
        except Exception:
            state._rollback()
        out.append(time.perf_counter() - t0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pack", type=Path, help="An imported τ² retail pack.")
    ap.add_argument("--tau2", type=Path, help="A τ²-bench checkout to import the pack from.")
    ap.add_argument("--tau2-python")
    ap.add_argument("--tasks", type=int, default=10)
    ap.add_argument("--concurrency", type=int, default=4)
    a = ap.parse_args()
    if a.pack is None and a.tau2 is None:
        ap.error("give --pack or --tau2")
    with tempfile.TemporaryDirectory(prefix="tool-bench-") as tmp:
        work = Path(tmp)
        pack = a.pack or import_pack(a.tau2, a.tau2_python, work / "pack")
        run = run_gold(pack.resolve(), work, a.tasks, a.concurrency)
        calls = recorded_calls(run["db"])
        floors = floor_calls(run["build"], calls)
    n = len(run["sessions"])
    first = {}
    for i, (s, *_rest) in enumerate(calls):
        first.setdefault(s, i)
    over = [c[4] - f for c, f in zip(calls, floors, strict=True)]
    first_over = [over[i] for i in first.values()]
    rest_over = [x for i, x in enumerate(over) if i not in set(first.values())]
    ms = 1000.0
    print(f"load average before the run: {run['load']}; {os.cpu_count()} cores")
    print(f"bench run, {n} tasks at concurrency {a.concurrency}: wall {run['wall']:.2f} s, "
          f"CPU {run['cpu']:.2f} s ({run['cpu'] / n:.3f} s per session, wall "
          f"{run['wall'] / n:.3f} s per session)")
    print(f"tool calls: {len(calls)}; in-process floor median {statistics.median(floors) * ms:.3f} ms")
    print(f"{'':28} {'median':>9} {'mean':>9} {'p90':>9}  (ms)")
    for label, xs in (("recorded, every call", [c[4] for c in calls]),
                      ("overhead, every call", over),
                      ("overhead, later calls", rest_over),
                      ("overhead, first of episode", first_over)):
        if xs:
            print(f"{label:28} {statistics.median(xs) * ms:9.2f} {statistics.mean(xs) * ms:9.2f} "
                  f"{_pct(xs, 0.9) * ms:9.2f}")
    ok = bool(rest_over) and statistics.median(rest_over) <= 0.002 and \
        statistics.median(first_over) <= 0.050
    print(f"targets (quiet machine): later calls ≤ 2 ms, first call ≤ 50 ms at the median: "
          f"{'met' if ok else 'missed'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
