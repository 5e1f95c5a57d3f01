"""How `bench run` scales. Sections (each prints its own table; run all or one with --only):

- `executors` (issue 16 item 5): the local executor vs `--executor ray` with 1, 2 and 4 workers
  on a CPU-heavy simulated workload — a python agent that burns `--cpu-ms` of pure-Python CPU
  per turn and then waits `--latency-ms` (50) as a model call would — printing the speed-up of
  each arm over the local executor measured in this one run, and the per-session overhead Ray
  adds (a no-op agent, 0 ms, one worker, concurrency 1: (Ray wall − local wall) ÷ sessions;
  target ≤ 5 ms). The plan is `tests/fixtures/pibench_case` (3 dependent sessions per episode)
  with `--repeats` chains. Ray's start-up is outside the timings (the cluster is started once).
  A 2-core machine cannot show more than ~2× from CPU; the 4-worker arm then shows the cost of
  oversubscription.
- `sessions` (issue 16 item 0, per-session time and memory at 1 k, 10 k, 50 k sessions): see
  that section when it exists.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASE = ROOT / "tests" / "fixtures" / "pibench_case"

AGENT = '''
import asyncio, hashlib, os, time

CPU_S = float(os.environ.get("SCALE_CPU_MS", "0")) / 1000
LATENCY_S = float(os.environ.get("SCALE_LATENCY_MS", "0")) / 1000

async def agent(brief, message, event):
    end = time.process_time() + CPU_S
    h = b"x"
    while time.process_time() < end:  # a python tool's work: holds the GIL
        h = hashlib.sha256(h).digest()
    if LATENCY_S:
        await asyncio.sleep(LATENCY_S)
    return "Noted: " + (message or "event")[:40]
'''


def _run(plan: Path, work: Path, name: str, executor: str, workers: int | None,
         concurrency: int, repeats: int) -> tuple[float, int]:
    from benchpack.runtime.runner import RunOptions, run_plan

    t0 = time.perf_counter()
    s = run_plan(RunOptions(plan=plan, agent="python:scale_agent:agent", judge="rules",
                            db=work / f"{name}.duckdb", run_id=name, repeats=repeats,
                            progress=False, max_concurrency=concurrency,
                            cache_dir=work / "cache", executor=executor, ray_workers=workers))
    assert s.errors == 0 and s.finished == s.sessions_total, s.first_errors
    return time.perf_counter() - t0, s.sessions_total


def executors(args: argparse.Namespace) -> None:
    import os

    import ray

    from benchpack.compiler import compile_pack

    work = Path(tempfile.mkdtemp(prefix="scale-bench-"))
    (work / "scale_agent.py").write_text(AGENT)
    sys.path.insert(0, str(work))
    plan = work / "plan"
    assert compile_pack(CASE, plan, use_cache=False).ok
    ray.init(num_cpus=max(4, os.cpu_count() or 1), include_dashboard=False,
             log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(work), "SCALE_CPU_MS": str(args.cpu_ms),
                                       "SCALE_LATENCY_MS": str(args.latency_ms)}})
    os.environ["SCALE_CPU_MS"], os.environ["SCALE_LATENCY_MS"] = str(args.cpu_ms), \
        str(args.latency_ms)
    try:
        _run(plan, work, "warm", "ray", 1, 1, 1)  # imports on the worker, outside the timings
        _run(plan, work, "warm-local", "local", None, 1, 1)
        arms = [("local", "local", None)] + [(f"ray×{n}", "ray", n) for n in (1, 2, 4)]
        walls = {}
        for label, ex, n in arms:
            walls[label], total = _run(plan, work, label.replace("×", "x"), ex, n,
                                       args.concurrency, args.repeats)
        print(f"\n## executors: {total} sessions, {args.cpu_ms} ms CPU + {args.latency_ms} ms "
              f"latency per turn, concurrency {args.concurrency}")
        print(f"{'arm':8} {'wall s':>8} {'speed-up':>9}")
        for label, _, _ in arms:
            print(f"{label:8} {walls[label]:8.2f} {walls['local'] / walls[label]:8.2f}×")
        # Ray's own cost per session: nothing to do but the round trip
        os.environ["SCALE_CPU_MS"] = os.environ["SCALE_LATENCY_MS"] = "0"
        n0 = args.repeats
        ray.shutdown()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 configure_logging=False, runtime_env={"env_vars": {"PYTHONPATH": str(work)}})
        _run(plan, work, "warm0", "ray", 1, 1, 1)
        _run(plan, work, "warm0-local", "local", None, 1, 1)
        local, total = _run(plan, work, "o-local", "local", None, 1, n0)
        on_ray, _ = _run(plan, work, "o-ray", "ray", 1, 1, n0)
        print(f"ray overhead per session (no-op agent, concurrency 1, {total} sessions): "
              f"{(on_ray - local) / total * 1000:.2f} ms (target ≤ 5 ms)")
    finally:
        ray.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["executors"], default="executors")
    ap.add_argument("--repeats", type=int, default=16, help="chains of 3 sessions")
    ap.add_argument("--cpu-ms", type=float, default=100.0)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()
    if args.only == "executors":
        executors(args)


if __name__ == "__main__":
    main()
