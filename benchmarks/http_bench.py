"""End-to-end throughput through the real client path: `bench run` → litellm → HTTP → a local fake
OpenAI-compatible server, against the latency-bound ideal (issue 16 item 0).

`runtime_bench.py` keeps the HTTP client out of its loop; this runs the whole thing as a user
does: a fresh `bench run` process (start-up imports included) on a plan of N one-call sessions
(intent tracking without hidden intents: the agent answers once and the session ends; judge and
simulator are `rules`, so every LLM call is the agent's), the response cache on and cold. The
server (`tests/runtime/fake_openai.py`) runs in a child process of this script and answers every
request after `--latency-ms` (50) and, in a second pass, at once (0 ms: what is left is the
client's own cost). Per arm, measured in one run:

  wall          the `bench run` process, spawn to exit
  start-up      spawn → the server receives the first request (imports, plan load, store open)
  CPU           user + system time of the `bench run` process (os.wait4), so the server's CPU
                is not counted
  of ideal      the latency bound ceil(N ÷ c) × latency, as a fraction of the wall after start-up
                (and of the whole wall); latency is the server's own measured delay
  overhead      at concurrency 1: (wall after start-up − ideal) ÷ N per session, and as % of a
                session's wall time
  RSS           peak resident set of the `bench run` process
  steady        the ideal as a fraction of first request → last answer (the sessions alone)
  tail          last answer → exit: the run's fixed end (last commits, summary, store close)

An inspect_ai arm (the same samples, `generate()` only, `--max-connections c`) runs beside it
when `inspect_ai` is importable; otherwise it is skipped and the output says so (it is not in
benchpack's lock).

Targets (issue 16): ≥ 90 % of the ideal at concurrency 64, overhead ≤ 1 % at concurrency 1,
start-up ≤ 1 s, ≤ 0.25× inspect_ai's wall.

Usage: python benchmarks/http_bench.py [--sessions 1000] [--sessions-c1 200]
                                       [--latency-ms 50] [--levels 64,1]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODEL = "bench-model"
BENCH = Path(sys.executable).with_name("bench")


def serve(conn: Connection) -> None:
    """Child process: answer every request after the current delay; report arrival times."""
    sys.path.insert(0, str(ROOT / "tests" / "runtime"))
    from fake_openai import FakeOpenAI, FakeReply, completion_body

    state: dict[str, Any] = {"delay": 0.0, "arrivals": [], "seq": 0}

    def answer(body: dict[str, Any]) -> FakeReply:
        state["arrivals"].append(time.time())
        state["seq"] += 1
        return FakeReply(body=completion_body(
            str(body.get("model")), {"role": "assistant", "content": "Done: the summary is ready."},
            "stop", 120, 8, state["seq"]), delay_s=state["delay"])

    with FakeOpenAI() as fake:
        fake.route(MODEL, answer)
        conn.send(fake.base_url)
        while True:
            msg = conn.recv()
            if msg is None:
                return
            if msg[0] == "delay":
                state["delay"] = msg[1]
                state["arrivals"] = []
                conn.send(True)
            elif msg[0] == "arrivals":
                conn.send(list(state["arrivals"]))


def make_plan(tmp: Path, n: int) -> Path:
    pack = tmp / f"pack-{n}"
    pack.mkdir()
    eps = "".join(f"  - id: ep{i}\n    persona: p\n    sessions:\n      - id: s\n"
                  f"        protocol: intent_tracking\n        request: Summarise note {i}.\n"
                  for i in range(n))
    (pack / "pack.yaml").write_text(
        "benchpack: 1\nname: httpbench\npersonas:\n  - id: p\n    profile: {role: Analyst}\n"
        "episodes:\n" + eps, encoding="utf-8")
    plan = tmp / f"plan-{n}"
    done = subprocess.run([str(BENCH), "compile", str(pack), "-o", str(plan)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stdout + done.stderr)
    return plan


def measured_delay(conn: Connection, base_url: str, delay: float) -> float:
    """The server's delay as a client sees it, minus the same request answered at once: what a
    zero-overhead harness would wait per call."""
    import httpx

    def mean(d: float) -> float:
        conn.send(("delay", d))
        conn.recv()
        with httpx.Client() as http:
            body = {"model": MODEL, "messages": [{"role": "user", "content": "x"}]}
            http.post(f"{base_url}/chat/completions", json=body)
            t = time.perf_counter()
            for _ in range(10):
                http.post(f"{base_url}/chat/completions", json=body)
            return (time.perf_counter() - t) / 10

    return mean(delay) - mean(0.0) if delay > 0 else 0.0


def run_bench(plan: Path, work: Path, base_url: str, c: int) -> dict[str, Any]:
    env = {**os.environ, "BENCH_HTTP_KEY": "no-key"}
    cmd = [str(BENCH), "run", str(plan), "--agent", f"litellm:openai/{MODEL}",
           "--judge", "rules", "--simulator", "rules", "--api-base", base_url,
           "--api-key-env", "BENCH_HTTP_KEY", "--max-concurrency", str(c),
           "--max-per-model", str(c), "--max-retries", "0", "--db", str(work / "run.duckdb"),
           "--cache-dir", str(work / "cache")]
    spawn = time.time()
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            cwd=work)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"bench run failed ({proc.returncode}):\n{out.decode()[-3000:]}")
    return {"wall": wall, "spawn": spawn, "cpu": usage.ru_utime + usage.ru_stime,
            "rss_mb": usage.ru_maxrss / 1024}


def run_inspect(tmp: Path, n: int, base_url: str, c: int) -> dict[str, Any]:
    task = tmp / f"inspect_task_{n}.py"
    task.write_text(
        "from inspect_ai import Task, task\nfrom inspect_ai.dataset import Sample\n"
        "from inspect_ai.solver import generate\n\n@task\ndef bench():\n"
        f"    return Task(dataset=[Sample(input=f'Summarise note {{i}}.') for i in range({n})],"
        " solver=generate())\n", encoding="utf-8")
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "no-key"}
    # inspect_ai globs the task path from the working directory: relative, run from `tmp`
    cmd = [sys.executable, "-m", "inspect_ai", "eval", task.name, "--model",
           f"openai/{MODEL}", "--max-connections", str(c), "--log-dir", str(tmp / "ilogs"),
           # chat completions, as benchpack sends (newer inspect_ai defaults to /v1/responses)
           "-M", "responses_api=false", "--display", "none"]
    spawn = time.time()
    t = time.perf_counter()
    err = tmp / "inspect.stderr"
    with err.open("wb") as sink:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=sink, cwd=tmp)
        _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("inspect_ai eval failed:\n" + err.read_text(errors="replace")[-2000:])
    return {"wall": time.perf_counter() - t, "spawn": spawn,
            "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=1000, help="sessions at concurrency > 1")
    ap.add_argument("--sessions-c1", type=int, default=200, help="sessions at concurrency 1")
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--levels", default="64,1")
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    has_inspect = importlib.util.find_spec("inspect_ai") is not None

    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(child,), daemon=True)
    server.start()
    base_url = parent.recv()
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="http_bench-"))
    try:
        plans = {n: make_plan(tmp, n) for n in {args.sessions, args.sessions_c1}}
        for latency in (args.latency_ms / 1000, 0.0):
            actual = measured_delay(parent, base_url, latency)
            for c in levels:
                n = args.sessions_c1 if c == 1 else args.sessions
                arms = [("benchpack", lambda n=n, c=c: run_bench(
                    plans[n], _fresh(tmp), base_url, c))]
                if has_inspect:
                    arms.append(("inspect_ai", lambda n=n, c=c: run_inspect(tmp, n, base_url, c)))
                for name, run in arms:
                    parent.send(("delay", latency))
                    parent.recv()
                    r = run()
                    parent.send(("arrivals",))
                    arrivals = parent.recv()
                    if len(arrivals) != n:
                        raise SystemExit(f"{name}: the server got {len(arrivals)} requests for "
                                         f"{n} one-call sessions; the ideal would be wrong")
                    r["startup"] = min(arrivals) - r["spawn"]
                    r["ideal"] = math.ceil(n / c) * actual
                    # first request sent → last answer received: the sessions themselves,
                    # without start-up and without the run's fixed end (flush, summary, exit)
                    r["steady"] = max(arrivals) - min(arrivals) + actual
                    r["tail"] = r["spawn"] + r["wall"] - max(arrivals) - actual
                    rows.append((name, 1000 * latency, c, n, r))
    finally:
        parent.send(None)
        server.join(5)
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"{'arm':<11} {'lat ms':>6} {'conc':>5} {'N':>5} {'wall s':>7} {'start s':>7} "
          f"{'ideal s':>7} {'of ideal':>9} {'(whole)':>8} {'CPU s':>6} {'CPU ms/sess':>11} "
          f"{'RSS MB':>7} {'steady':>7} {'tail s':>6}")
    for name, lat, c, n, r in rows:
        after = r["wall"] - r["startup"]
        print(f"{name:<11} {lat:>6.0f} {c:>5} {n:>5} {r['wall']:>7.2f} {r['startup']:>7.2f} "
              f"{r['ideal']:>7.2f} {100 * r['ideal'] / after:>8.1f}% "
              f"{100 * r['ideal'] / r['wall']:>7.1f}% {r['cpu']:>6.2f} "
              f"{1000 * r['cpu'] / n:>11.2f} {r['rss_mb']:>7.0f} "
              f"{100 * r['ideal'] / r['steady']:>6.1f}% {r['tail']:>6.2f}")
    if not has_inspect:
        print("inspect_ai: not importable here, side-by-side arm skipped "
              "(pip install inspect_ai==0.3.285 in this venv to add it)")
    for name, lat, c, n, r in rows:
        if name == "benchpack" and c == 1 and lat > 0:
            after = r["wall"] - r["startup"]
            over = (after - r["ideal"]) / n
            print(f"harness overhead at concurrency 1, {lat:.0f} ms: {1000 * over:.2f} ms per "
                  f"session, {100 * over / (after / n):.1f}% of a session's wall (target ≤ 1%); "
                  f"without the run's fixed end ({r['tail']:.2f} s): "
                  f"{1000 * (r['steady'] - r['ideal']) / n:.2f} ms, "
                  f"{100 * (r['steady'] - r['ideal']) / r['steady']:.1f}%")
        if name == "benchpack" and c == max(levels) and lat > 0:
            print(f"throughput at concurrency {c}: "
                  f"{100 * r['ideal'] / (r['wall'] - r['startup']):.1f}% of the latency-bound "
                  "ideal after start-up (target ≥ 90%)")
    start = min(r["startup"] for name, *_, r in rows if name == "benchpack")
    print(f"start-up before the first call: {start:.2f} s (best of the arms; target ≤ 1 s)")
    for lat, c in {(lat, c) for _, lat, c, _, _ in rows}:
        walls = {name: r["wall"] for name, la, cc, _, r in rows if la == lat and cc == c}
        if "inspect_ai" in walls:
            print(f"benchpack ÷ inspect_ai wall at {lat:.0f} ms, concurrency {c}: "
                  f"{walls['benchpack'] / walls['inspect_ai']:.2f}× (target ≤ 0.25×)")
    return 0


def _fresh(tmp: Path) -> Path:
    work = Path(tempfile.mkdtemp(dir=tmp, prefix="work-"))
    return work


if __name__ == "__main__":
    sys.exit(main())
