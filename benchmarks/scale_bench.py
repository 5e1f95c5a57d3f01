"""Scale benchmark: does a run's cost grow linearly with its sessions? (issue 16)

Sections (each a function in `SECTIONS`, run in order; `--sections` picks some):

  per-session   compile and `bench run` of 1 k, 10 k and 50 k sessions, each size in a fresh
                process: per-session compile time, run time and CPU, peak RSS (MB and KB per
                session), and the ratio of 50 k ÷ 1 k per-session run time (target ≤ 1.2). The
                workload is episodes of two sessions (the second depends on the first: one
                dependency group per episode, as in π-Bench) with hidden intents, an in-process
                agent answering at once, judge and simulator `rules`: benchpack's own work only.

  executors     the local executor vs `--executor ray` with 1, 2 and 4 workers on a CPU-heavy
                simulated workload (a python agent burning `--cpu-ms` of pure-Python CPU per turn,
                then waiting `--latency-ms` as a model call would): the speed-up of each arm over
                the local executor measured in this one run, and the per-session overhead Ray adds
                (a no-op agent, one worker, concurrency 1; target ≤ 5 ms). The plan is
                tests/fixtures/pibench_case (3 dependent sessions per episode), `--repeats` chains.

Usage: python benchmarks/scale_bench.py [--sizes 1000,10000,50000]
       [--sections per-session,executors] [--repeats 16 --cpu-ms 100 --latency-ms 50
       --concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

EPISODE = """\
  - id: ep{i}
    persona: p
    sessions:
      - id: a
        protocol: intent_tracking
        request: Draft note {i}.
        hidden_intents: [{{text: Keep note {i} short.}}]
      - id: b
        protocol: intent_tracking
        depends_on: [a]
        request: Send note {i}.
        hidden_intents: [{{text: Copy the lead on note {i}.}}]
"""


class InstantBackend:
    """Answers every call at once: what is measured is benchpack's own work."""

    async def __call__(self, req: Any) -> Any:
        return {"message": {"role": "assistant", "content": "Done."},
                "usage": {"prompt_tokens": 10, "completion_tokens": 2}}


def child(sessions: int) -> dict[str, Any]:
    """In a fresh process: compile then run `sessions` sessions; times and peak RSS."""
    from benchpack.compiler import compile_pack
    from benchpack.runtime.runner import RunOptions, run_plan

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pack").mkdir()
        (root / "pack" / "pack.yaml").write_text(
            "benchpack: 1\nname: scale\npersonas:\n  - id: p\n    profile: {role: Analyst}\n"
            "episodes:\n" + "".join(EPISODE.format(i=i) for i in range(sessions // 2)),
            encoding="utf-8")
        t = time.perf_counter()
        res = compile_pack(root / "pack", root / "plan", use_cache=False)
        compile_s = time.perf_counter() - t
        if not res.ok:
            raise SystemExit("\n".join(d.format() for d in res.diagnostics))
        compile_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t, cpu = time.perf_counter(), time.process_time()
        summary = run_plan(RunOptions(
            plan=root / "plan", agent="litellm:scale-agent", simulator="rules", judge="rules",
            db=root / "run.duckdb", max_concurrency=64, max_concurrent_per_model=4096,
            use_cache=False, progress=False, llm_backend=InstantBackend()))
        run_s, run_cpu = time.perf_counter() - t, time.process_time() - cpu
        if summary.errors:
            raise SystemExit(f"{summary.errors} session errors")
    return {"sessions": sessions, "compile_s": compile_s, "compile_rss_mb": compile_rss,
            "run_s": run_s, "run_cpu": run_cpu,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def per_session(args: argparse.Namespace) -> None:
    sizes = [int(x) for x in args.sizes.split(",")]
    rows = []
    for n in sizes:
        out = subprocess.run([sys.executable, __file__, "--child", str(n)], check=True,
                             capture_output=True, text=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print("per-session cost (fresh process per size; in-process agent, rules judge/simulator)")
    print(f"{'sessions':>9} {'compile ms/s':>13} {'run ms/s':>9} {'run CPU ms/s':>13} "
          f"{'peak RSS MB':>12} {'KB/session':>11}")
    for r in rows:
        n = r["sessions"]
        print(f"{n:>9} {1000 * r['compile_s'] / n:>13.2f} {1000 * r['run_s'] / n:>9.2f} "
              f"{1000 * r['run_cpu'] / n:>13.2f} {r['rss_mb']:>12.0f} "
              f"{1024 * r['rss_mb'] / n:>11.1f}")
    first, last = rows[0], rows[-1]
    if len(rows) > 1:
        def ratio(key: str) -> float:
            return (last[key] / last["sessions"]) / (first[key] / first["sessions"])
        print(f"{last['sessions']} ÷ {first['sessions']} per session: run "
              f"{ratio('run_s'):.2f} (target ≤ 1.2), run CPU {ratio('run_cpu'):.2f}, compile "
              f"{ratio('compile_s'):.2f}")


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


SECTIONS: dict[str, Callable[[argparse.Namespace], None]] = {"per-session": per_session,
                                                           "executors": executors}
"""Section name → function printing its table; later sections (Ray executor) add theirs."""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument("--repeats", type=int, default=16, help="executors: chains of 3 sessions")
    ap.add_argument("--cpu-ms", type=float, default=100.0, help="executors: CPU per turn")
    ap.add_argument("--latency-ms", type=float, default=50.0, help="executors: model latency")
    ap.add_argument("--concurrency", type=int, default=8, help="executors: concurrency")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    for name in args.sections.split(","):
        if name not in SECTIONS:
            raise SystemExit(f"unknown section {name!r} (known: {', '.join(SECTIONS)})")
        SECTIONS[name](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
