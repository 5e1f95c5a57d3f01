"""Start-up benchmark: how long `bench` takes before it does anything, side by side in one run.

Prints the median wall time of N fresh processes for each command, and its ratio to the floor
every click + rich command-line tool pays (`python -c 'import click, rich'`), measured in the
same run so a busy machine moves both; beside it the median CPU time (the targets are on the
wall; on a shared machine the CPU is the steadier figure):

  bench --help            target ≤ 0.25 s and ≤ 3× the floor
  bench query "SELECT 1"  target ≤ 0.25 s and ≤ 3× the floor (a small store; DuckDB's own import
                          is most of it)
  bench report --list     (no target; the report registry without statistics)
  bench compile --help    (no target; must not load the compiler either)

Usage: python benchmarks/startup_bench.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 0.25
TARGET_RATIO = 3.0


def _median_wall(cmd: list[str], runs: int, env: dict[str, str]) -> tuple[float, float]:
    """Median wall and median CPU (user + system, the process's own: os.wait4) of `runs`
    fresh processes. On a shared machine the CPU moves less than the wall."""
    times, cpus = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        times.append(time.perf_counter() - t0)
        cpus.append(usage.ru_utime + usage.ru_stime)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{' '.join(cmd)} failed")
    return statistics.median(times), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    bench = shutil.which("bench", path=str(Path(sys.executable).parent)) or "bench"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0"}
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "s.duckdb")
        # a real (empty) store, made the way `bench run` makes one
        subprocess.run([sys.executable, "-c",
                        "import sys; from benchpack.runtime.store import connect; "
                        "connect(sys.argv[1]).close()", db], check=True, env=env)
        floor_cmd = [sys.executable, "-c", "import click, rich"]
        cases = [
            ("bench --help", [bench, "--help"], True),
            ('bench query "SELECT 1"', [bench, "query", "SELECT 1", "--db", db], True),
            ("bench report --list", [bench, "report", "--list"], False),
            ("bench compile --help", [bench, "compile", "--help"], False),
        ]
        for _, cmd, _ in cases:  # warm the page cache and bytecode before timing anything
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        floor, floor_cpu = _median_wall(floor_cmd, args.runs, env)
        print(f"median of {args.runs} runs; floor = python -c 'import click, rich': "
              f"{floor * 1000:.0f} ms (CPU {floor_cpu * 1000:.0f} ms); load "
              f"{os.getloadavg()[0]:.2f}")
        print(f"{'command':<26} {'wall':>8} {'÷ floor':>8} {'CPU':>8} {'÷ floor':>8}  target")
        failed = False
        for name, cmd, targeted in cases:
            wall, cpu = _median_wall(cmd, args.runs, env)
            ratio = wall / floor
            ok = wall <= TARGET_S and ratio <= TARGET_RATIO
            failed |= targeted and not ok
            target = (f"≤ {TARGET_S:.2f} s, ≤ {TARGET_RATIO:.0f}×  {'met' if ok else 'NOT MET'}"
                      if targeted else "–")
            print(f"{name:<26} {wall * 1000:>6.0f} ms {ratio:>7.2f}× {cpu * 1000:>5.0f} ms "
                  f"{cpu / floor_cpu if floor_cpu else float('nan'):>7.2f}×  {target}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
