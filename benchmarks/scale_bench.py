"""Scale benchmark: does a run's cost grow linearly with its sessions? (issue 16)

Sections (each a function in `SECTIONS`, run in order; `--sections` picks some):

  per-session   compile and `bench run` of 1 k, 10 k and 50 k sessions, each size in a fresh
                process: per-session compile time, run time and CPU, peak RSS (MB and KB per
                session), and the ratio of 50 k ÷ 1 k per-session run time (target ≤ 1.2). The
                workload is episodes of two sessions (the second depends on the first: one
                dependency group per episode, as in π-Bench) with hidden intents, an in-process
                agent answering at once, judge and simulator `rules`: benchpack's own work only.

  executors     the local executor vs `--executor ray` with `--ray-workers` (1, 2 and 4)
                workers, each arm a fresh process as a user runs it, against the local fake
                OpenAI-compatible server (tests/runtime/fake_openai.py via http_bench.serve)
                answering after `--latency-ms`: a python agent burns `--cpu-ms` of pure-Python
                CPU (a tool's work, holding the GIL) then makes one real litellm HTTP call.
                Per arm: wall, start-up (spawn → first model call: imports, Ray start, workers
                importing litellm) and the steady rate (calls between the 10th and 90th
                percentile arrival at the server ÷ their span), so one-time costs are shown,
                not mixed into the speed-up, and every arm is timed by the same clock; beside
                them the machine's busy cores during the arm and in the second before it (the
                other users' load: on a shared machine it, not the executor, caps the
                speed-up). One worker per core at best: on 2 cores 4 workers only share them.
                Earlier versions printed a negative overhead: the agent module, imported once
                in the driver with the CPU arm's settings, kept burning 100 ms + 50 ms a turn
                in the "no-op" local arm while the fresh Ray workers did nothing; and start-up
                (new worker processes every run) was inside the timed speed-ups.

  overhead      Ray's per-session overhead: benchpack's own `litellm:` client, no CPU,
                concurrency 1, one worker, per-session time on Ray minus locally (target
                ≤ 5 ms); then the Limiter actor's round trip as a worker sees it, which every
                uncached call adds when there are several workers.

Usage: python benchmarks/scale_bench.py [--sizes 1000,10000,50000]
       [--sections per-session,executors,overhead] [--exec-sessions 200 --overhead-sessions 100
       --cpu-ms 100 --latency-ms 50 --concurrency 16]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
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
MODEL = "bench-model"

AGENT = '''
import os, hashlib, time
import litellm

CPU_S = float(os.environ["SCALE_CPU_MS"]) / 1000
BASE = os.environ["SCALE_BASE_URL"]

async def agent(brief, message, event):
    end = time.process_time() + CPU_S
    h = b"x"
    while time.process_time() < end:  # a python tool's work: holds the GIL
        h = hashlib.sha256(h).digest()
    r = await litellm.acompletion(model="openai/bench-model", api_base=BASE, api_key="no-key",
                                  messages=[{"role": "user", "content": message or "event"}])
    return r.choices[0].message.content
'''
"""The CPU arm's agent: pure-Python CPU (a tool's work, holding the GIL), then one real model
call through litellm's HTTP client to the fake server (the latency)."""


def _executor_child(spec: dict[str, Any]) -> dict[str, Any]:
    """One arm in a fresh process, as a user runs it: imports, Ray start, workers, run."""
    from benchpack.runtime.runner import RunOptions, run_plan

    work = Path(spec["work"])
    opts: dict[str, Any] = {}
    if spec["cpu_agent"]:
        sys.path.insert(0, str(work.parent))  # where AGENT is; Ray workers get sys.path
        agent = "python:scale_agent:agent"
    else:  # benchpack's own client path (and on Ray its cluster-wide limiter)
        agent = f"litellm:openai/{MODEL}"
        opts = {"api_base": spec["base_url"], "api_key_env": "BENCH_HTTP_KEY"}
    t = time.perf_counter()
    s = run_plan(RunOptions(plan=Path(spec["plan"]), agent=agent, judge="rules",
                            simulator="rules", db=work / f"{spec['name']}.duckdb",
                            progress=False, max_concurrency=spec["concurrency"],
                            max_concurrent_per_model=spec["concurrency"], use_cache=False,
                            executor=spec["executor"], ray_workers=spec["workers"], **opts))
    if s.errors or s.finished != s.sessions_total:
        raise SystemExit(f"{spec['name']}: {s.errors} errors, {s.finished}/{s.sessions_total} "
                         f"finished: {s.first_errors}")
    return {"run_s": time.perf_counter() - t, "sessions": s.sessions_total}


def _machine_busy() -> float:
    """CPU-seconds the whole machine has spent busy since boot (/proc/stat; 0 elsewhere)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return 0.0
    ticks = [int(x) for x in fields]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _executor_arm(spec: dict[str, Any], conn: Any) -> dict[str, Any]:
    """Run an arm in a child process; the server's arrival times give its start-up (spawn →
    first model call) and its steady rate (calls between the 10th and 90th percentile
    arrivals ÷ their time span): ramp-up (Ray's workers importing litellm one after another)
    and the tail (the last chains alone) stay out of the rate, in every arm alike."""
    conn.send(("delay", spec["latency_ms"] / 1000))
    conn.recv()
    env = {**os.environ, "BENCH_HTTP_KEY": "no-key", "SCALE_CPU_MS": str(spec["cpu_ms"]),
           "SCALE_BASE_URL": spec["base_url"]}
    before = _machine_busy()
    time.sleep(1.0)  # the rest of the machine's load just before the arm
    others = _machine_busy() - before
    busy = _machine_busy()
    spawn = time.time()
    out = subprocess.run([sys.executable, __file__, "--executor-child", json.dumps(spec)],
                         capture_output=True, text=True, env=env, cwd=spec["work"])
    wall = time.time() - spawn
    if out.returncode != 0:
        raise SystemExit(f"{spec['name']} failed:\n{out.stdout[-2000:]}{out.stderr[-3000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    # Ray's workers are not this process's children (raylet's, killed at shutdown): the
    # arm's own CPU cannot be read, so the machine's is shown, with the load before it
    res["machine"] = (_machine_busy() - busy) / wall
    res["others"] = others
    conn.send(("arrivals",))
    arrivals = sorted(conn.recv())
    if len(arrivals) != res["sessions"]:
        raise SystemExit(f"{spec['name']}: {len(arrivals)} model calls for {res['sessions']} "
                         "one-call sessions")
    lo, hi = int(0.1 * (len(arrivals) - 1)), int(0.9 * (len(arrivals) - 1))
    return {**res, "wall": wall, "startup": arrivals[0] - spawn,
            "rate": (hi - lo) / (arrivals[hi] - arrivals[lo]),
            "span": arrivals[-1] - arrivals[0]}


@contextlib.contextmanager
def _server_and_tmp() -> Iterator[tuple[Any, str, Path]]:
    """The fake OpenAI server (a child process) and a scratch directory with AGENT in it."""
    import multiprocessing

    sys.path.insert(0, str(Path(__file__).parent))
    from http_bench import serve

    parent, child_conn = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(child_conn,), daemon=True)
    server.start()
    base_url = parent.recv()
    tmp = Path(tempfile.mkdtemp(prefix="scale-bench-"))
    (tmp / "scale_agent.py").write_text(AGENT)
    try:
        yield parent, base_url, tmp
    finally:
        parent.send(None)
        server.join(5)
        shutil.rmtree(tmp, ignore_errors=True)


def _arm_runner(args: argparse.Namespace, conn: Any, base_url: str, tmp: Path
                ) -> Callable[..., dict[str, Any]]:
    def arm(name: str, plan: Path, executor: str, workers: int | None, cpu: bool, c: int,
            cpu_ms: float) -> dict[str, Any]:
        work = tmp / name
        work.mkdir()
        return _executor_arm({"name": name, "executor": executor, "workers": workers,
                              "cpu_agent": cpu, "concurrency": c, "cpu_ms": cpu_ms,
                              "latency_ms": args.latency_ms, "plan": str(plan),
                              "work": str(work), "base_url": base_url}, conn)
    return arm


def executors(args: argparse.Namespace) -> None:
    with _server_and_tmp() as (conn, base_url, tmp):
        arm = _arm_runner(args, conn, base_url, tmp)
        from http_bench import make_plan

        plan = make_plan(tmp, args.exec_sessions)
        n = args.exec_sessions
        print(f"\n## executors: {n} one-call sessions, {args.cpu_ms:g} ms pure-Python CPU then "
              f"one litellm call to a local server answering after {args.latency_ms:g} ms, "
              f"concurrency {args.concurrency}; each arm a fresh process; {os.cpu_count()} CPUs")
        arms = [("local", "local", None)] + [(f"ray×{k}", "ray", k)
                                             for k in map(int, args.ray_workers.split(","))]
        rows = {label: arm(label.replace("×", "x"), plan, ex, k, True, args.concurrency,
                           args.cpu_ms)
                for label, ex, k in arms}
        ideal = 1000 / args.cpu_ms if args.cpu_ms else float("inf")
        print(f"{'arm':8} {'wall s':>7} {'start-up s':>11} {'sessions/s':>11} {'speed-up':>9} "
              f"{'wall speed-up':>14} {'busy cores':>11} {'others before':>14}")
        for label, _, _ in arms:
            r = rows[label]
            print(f"{label:8} {r['wall']:7.2f} {r['startup']:11.2f} {r['rate']:11.2f} "
                  f"{r['rate'] / rows['local']['rate']:8.2f}× "
                  f"{rows['local']['wall'] / r['wall']:13.2f}× {r['machine']:11.2f} "
                  f"{r['others']:14.2f}")
        print(f"(one core's CPU bound: {ideal:.1f} sessions/s; speed-up = steady rate ÷ the "
              "local rate, both from the server's arrival times; busy cores = the whole "
              "machine's during the arm (everyone's, of "
              f"{os.cpu_count()}); others before = the machine's busy cores in the second "
              "before the arm, i.e. the load of other users the arm had to share with)")


def overhead(args: argparse.Namespace) -> None:
    """Ray's own cost per session: nothing to do but the round trips (benchpack's client, so
    the cluster-wide limiter is on the path), concurrency 1, one worker."""
    with _server_and_tmp() as (conn, base_url, tmp):
        arm = _arm_runner(args, conn, base_url, tmp)
        m = args.overhead_sessions
        from http_bench import make_plan

        plan = make_plan(tmp, m)
        local = arm("o-local", plan, "local", None, False, 1, 0)
        on_ray = arm("o-ray", plan, "ray", 1, False, 1, 0)
        per = (1 / on_ray["rate"] - 1 / local["rate"]) * 1000
        print(f"ray overhead per session (litellm agent through benchpack's client, "
              f"{args.latency_ms:g} ms server, concurrency 1, {m} sessions): "
              f"{1000 / local['rate']:.1f} ms local vs {1000 / on_ray['rate']:.1f} ms on Ray "
              f"→ {per:.2f} ms (target ≤ 5 ms); start-up {local['startup']:.1f} s vs "
              f"{on_ray['startup']:.1f} s")
        # with several workers every uncached call also takes its permit from the Limiter
        # actor: that round trip, timed on a worker (an end-to-end arm with 2 workers mixes in
        # the second worker's start-up, which the short overhead plan cannot leave out)
        took = _limiter_round_trip(200)
        print(f"with 2+ workers add the Limiter round trip per uncached call: median "
              f"{took[0]:.2f} ms, p90 {took[1]:.2f} ms (200 permits taken and given back on "
              f"a worker actor)")


def _limiter_round_trip(n: int) -> tuple[float, float]:
    """Median and p90 ms of `_ClusterSemaphore` (take a permit, give it back) on a worker."""
    import asyncio
    import statistics

    import ray

    from benchpack.runtime.ray_limits import Limiter, _ClusterSemaphore

    class Probe:
        async def run(self, limiter: Any, n: int) -> list[float]:
            sem = _ClusterSemaphore(limiter, MODEL, "probe", None)
            out = []
            for _ in range(n):
                t = time.perf_counter()
                async with sem:
                    pass
                out.append(1000 * (time.perf_counter() - t))
            await asyncio.sleep(0)
            return out

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        limiter = ray.remote(Limiter).options(num_cpus=0, max_concurrency=10_000).remote(8)
        probe = ray.remote(Probe).options(num_cpus=1, max_concurrency=2).remote()
        times = sorted(ray.get(probe.run.remote(limiter, n)))
    finally:
        ray.shutdown()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


SECTIONS: dict[str, Callable[[argparse.Namespace], None]] = {"per-session": per_session,
                                                           "executors": executors,
                                                           "overhead": overhead}
"""Section name → function printing its table; later sections (Ray executor) add theirs."""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument("--exec-sessions", type=int, default=200,
                    help="executors: one-call sessions per arm")
    ap.add_argument("--overhead-sessions", type=int, default=100,
                    help="executors: sessions of the overhead arms (concurrency 1)")
    ap.add_argument("--cpu-ms", type=float, default=100.0, help="executors: CPU per session")
    ap.add_argument("--latency-ms", type=float, default=50.0, help="executors: model latency")
    ap.add_argument("--concurrency", type=int, default=16, help="executors: concurrency")
    ap.add_argument("--ray-workers", default="1,2,4",
                    help="executors: the Ray arms' worker counts")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--executor-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.executor_child:
        print(json.dumps(_executor_child(json.loads(args.executor_child))))
        return 0
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
