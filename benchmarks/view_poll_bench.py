"""`bench run` while `bench view` is polled: every run must start and finish (issue 27).

The README invites watching a run in the viewer. Before issue 27 a `bench run` started while the
viewer served pages failed on DuckDB's lock 5 times out of 6: the viewer's short read-only
connections came one after another, and the run's writer, refused once, gave up. Now a writer
that finds readers asks them to stay away (`<store>.write-request`) and waits for the one in
flight.

The script makes a store (one scripted run of pharmacist-week), serves it with `bench view` (a
child process), and starts `--pollers` threads that request every page kind of the viewer in a
loop — runs, a run's sessions, a transcript, two side by side, a run pair and its `bench
compare` table, a model call, the headline fragment, the SQL page, a query and a CSV download —
while `--runs` `bench run`s of the same pack go one after another into the same store. It
prints each run's exit code and wall time, the pages served by status, and the slowest page.

    python benchmarks/view_poll_bench.py            # 10 runs, 4 pollers
    python benchmarks/view_poll_bench.py --runs 3   # what the smoke test runs

Target: every run exits 0 and every page answers 200 (exit 1 when missed).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
PACK = ROOT / "taskpacks" / "pharmacist-week"


def _bench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchpack.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def _run_args(work: Path, run_id: str) -> list[str]:
    return ["run", str(work / "plan"), "--agent", f"scripted:{PACK / 'demo' / 'agent.yaml'}",
            "--simulator", "rules", "--judge", "rules", "--db", str(work / "bench.duckdb"),
            "--run-id", run_id, "--quiet", "--cache-dir", str(work / "cache")]


def _pages(base: str, db: Path) -> list[tuple[str, str, dict[str, str] | None]]:
    """(name, URL, form) of every page kind, over the first run of the store."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        sid, repeat = con.execute("SELECT session_id, repeat FROM sessions WHERE run_id = "
                                  "'first' ORDER BY session_id LIMIT 1").fetchone()
    finally:
        con.close()
    key = urlencode({"session": sid, "repeat": repeat})
    q = {"q": "SELECT run_id, count(*) FROM sessions GROUP BY ALL"}
    return [
        ("runs", f"{base}/", None),
        ("sessions", f"{base}/runs/first", None),
        ("transcript", f"{base}/session?run=first&{key}", None),
        ("side by side", f"{base}/pair?a=first&b=second&{key}", None),
        ("run pair", f"{base}/compare?a=first&b=second", None),
        ("compare table", f"{base}/compare/table?a=first&b=second", None),
        ("model call", f"{base}/call?run=first&{key}&seq=0", None),
        ("headline", f"{base}/headline?run=first&run=second", None),
        ("SQL page", f"{base}/sql?" + urlencode(q), None),
        ("SQL query", f"{base}/sql", q),
        ("SQL as CSV", f"{base}/sql.csv", q),
    ]


def _fetch(url: str, form: dict[str, str] | None, token: str) -> tuple[int, float, str]:
    """(status, seconds, the body's text when not 200)."""
    data = urlencode({**form, "token": token}).encode() if form is not None else None
    t = time.monotonic()
    try:
        with urllib.request.urlopen(url, data=data, timeout=120) as res:
            res.read()
            return res.status, time.monotonic() - t, ""
    except urllib.error.HTTPError as err:
        body = err.read().decode("utf-8", "replace")
        said = re.search(r'<p[^>]*>(.*?)</p>', body, re.S)
        return err.code, time.monotonic() - t, (said.group(1) if said else body)[:300]


def measure(runs: int, pollers: int, work: Path) -> dict[str, Any]:
    done = _bench("compile", str(PACK), "-o", str(work / "plan"), cwd=work)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    for run_id in ("first", "second"):  # two runs: the pair and compare pages need both
        done = _bench(*_run_args(work, run_id), cwd=work)
        if done.returncode != 0:
            raise SystemExit(done.stderr)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    viewer = subprocess.Popen([sys.executable, "-m", "benchpack.cli", "view", "--db",
                               str(work / "bench.duckdb"), "--port", str(port), "--no-browser"],
                              cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{base}/sql", timeout=10) as page:
                token = re.search(r'name="token" value="([^"]+)"', page.read().decode())
                break
        except OSError:
            if time.monotonic() > deadline or viewer.poll() is not None:
                raise SystemExit("bench view did not start") from None
            time.sleep(0.2)
    assert token is not None
    pages = _pages(base, work / "bench.duckdb")
    served: Counter[tuple[str, int]] = Counter()
    slowest = [0.0, ""]
    errors: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def poll(offset: int) -> None:
        i = offset
        while not stop.is_set():
            name, url, form = pages[i % len(pages)]
            status, took, said = _fetch(url, form, token.group(1))
            with lock:
                served[(name, status)] += 1
                if said and len(errors) < 5:
                    errors.append(f"{name} {status}: {said}")
                if took > slowest[0]:
                    slowest[:] = [took, name]
            i += 1

    threads = [threading.Thread(target=poll, args=(n,), daemon=True) for n in range(pollers)]
    for t in threads:
        t.start()
    results = []
    try:
        time.sleep(1.0)  # the pollers are at it before the first run starts
        for n in range(runs):
            t = time.monotonic()
            done = _bench(*_run_args(work, f"polled-{n}"), cwd=work)
            results.append({"run": n, "exit": done.returncode,
                            "wall_s": round(time.monotonic() - t, 2),
                            "stderr": done.stderr.strip().splitlines()[-3:]})
    finally:
        stop.set()
        for t in threads:
            t.join(130)
        viewer.terminate()
        viewer.wait(30)
    pages_ok = sum(n for (_, status), n in served.items() if status == 200)
    return {"runs": results, "runs_ok": sum(r["exit"] == 0 for r in results),
            "pages": sum(served.values()), "pages_ok": pages_ok,
            "not_ok": {f"{name} {status}": n for (name, status), n in served.items()
                       if status != 200}, "first_errors": errors,
            "slowest_page_s": round(slowest[0], 2), "slowest_page": slowest[1]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--pollers", type=int, default=4)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="view-poll-"))
    try:
        row = measure(args.runs, args.pollers, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(row, indent=2))
    ok = row["runs_ok"] == args.runs and row["pages_ok"] == row["pages"]
    print("target met" if ok else "TARGET MISSED", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
