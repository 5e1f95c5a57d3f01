"""`benchmarks/http_bench.py` still runs (it is not run by CI otherwise): a tiny workload, every
arm, and the figures it prints are there and sane. Never timed: the numbers are the script's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_http_bench_runs_every_arm_and_prints_its_figures() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "http_bench.py"),
                           "--sessions", "12", "--sessions-c1", "4", "--latency-ms", "5",
                           "--levels", "4,1"], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = [line.split() for line in done.stdout.splitlines()
            if re.match(r"^(benchpack|benchpack=1|bare loop|inspect_ai)\s", line)]
    arms = {("bare loop", r[2], r[3]) if r[0] == "bare" else (r[0], r[1], r[2]) for r in rows}
    # (arm, latency ms, concurrency): two latencies, c = 4 and c = 1 (with the one-chain arm)
    for lat in ("5", "0"):
        for arm, c in (("benchpack", "4"), ("bare loop", "4"), ("benchpack", "1"),
                       ("benchpack=1", "1"), ("bare loop", "1")):
            assert (arm, lat, c) in arms, (arm, lat, c, done.stdout)
    out = done.stdout
    assert re.search(r"throughput at concurrency 4: [\d.]+% of the latency-bound ideal", out), out
    assert re.search(r"harness overhead at concurrency 1 \(2 chains\), 5 ms, over a bare HTTP "
                     r"loop: -?[\d.]+ ms per session", out), out
    assert re.search(r"start-up before the first call: [\d.]+ s", out), out
