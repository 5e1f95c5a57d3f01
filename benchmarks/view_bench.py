"""`bench view` benchmark: every page kind over the report benchmark's synthetic store of 1 M
turns (target ≤ 300 ms server-side each, issue 17).

Each page is requested through Starlette's TestClient (the app in-process, no network), so the
time is the server's: a fresh read-only connection per request (as `bench view` does, so that a
running `bench run` can keep writing), the queries and the rendering. Pages: the runs page cold
(headline intervals computed) and warm (cached while the runs do not change), a run's sessions
(first page, a sorted and filtered page, a late page), the longest transcript and a typical one,
two runs side by side, a SQL query and its CSV. The store is generated with
`report_bench.generate` when missing.

Usage: python benchmarks/view_bench.py [--turns 1000000] [--db PATH] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).parent))

import report_bench

TARGET_S = 0.3


def pages(db: Path) -> list[tuple[str, str]]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        run = con.execute("SELECT run_id FROM runs ORDER BY created_at, run_id LIMIT 1"
                          ).fetchone()[0]
        other = con.execute("SELECT run_id FROM runs ORDER BY created_at, run_id LIMIT 1 "
                            "OFFSET 1").fetchone()[0]
        longest = con.execute("SELECT session_id, repeat, turns FROM sessions "
                              "WHERE run_id = ? ORDER BY turns DESC, session_id LIMIT 1",
                              [run]).fetchone()
        typical = con.execute("SELECT session_id, repeat FROM sessions WHERE run_id = ? "
                              "ORDER BY session_id LIMIT 1 OFFSET 500", [run]).fetchone()
        total = con.execute("SELECT count(*) FROM sessions WHERE run_id = ?", [run]
                            ).fetchone()[0]
    finally:
        con.close()

    def session(r: str, key: tuple[str, int]) -> str:
        return urlencode({"run": r, "session": key[0], "repeat": key[1]})

    last = max(0, (total - 1) // 50)
    return [
        ("runs (cold: headline intervals)", "/"),
        ("runs (warm)", "/"),
        ("runs filtered by agent", "/?" + urlencode({"agent": "litellm:gpt-4o"})),
        ("sessions, first page", f"/runs/{run}"),
        ("sessions by COMP, errors only", f"/runs/{run}?sort=comp&desc=1&status=error"),
        ("sessions, score 20–80 %", f"/runs/{run}?metric=comp&min=20&max=80"),
        ("sessions, last page", f"/runs/{run}?page={last}"),
        (f"transcript, longest ({longest[2]} turns)", f"/session?{session(run, longest[:2])}"),
        ("transcript, typical", f"/session?{session(run, typical)}"),
        ("side by side", f"/pair?a={run}&b={other}&"
                         + urlencode({"session": typical[0], "repeat": typical[1]})),
        ("SQL", "/sql?" + urlencode({"q": "SELECT agent, count(*), avg(comp) FROM "
                                          "session_results GROUP BY agent"})),
        ("SQL as CSV", "/sql.csv?" + urlencode({"q": "SELECT * FROM runs"})),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=1_000_000)
    ap.add_argument("--db", type=Path, help="Store to use (generated when missing).")
    ap.add_argument("--repeat", type=int, default=3, help="Requests per page (median; the "
                    "cold runs page is requested once).")
    args = ap.parse_args()
    db = args.db or Path(tempfile.gettempdir()) / f"benchpack-report-bench-{args.turns}.duckdb"
    if not db.exists():
        print(f"generating {db} ({args.turns:,} turns) …", flush=True)
        report_bench.generate(db, args.turns)
    from starlette.testclient import TestClient

    from benchpack.reports.view.app import create_app

    client = TestClient(create_app(db))
    client.get("/static/view.css")  # imports and the app warmed, not the store
    worst = 0.0
    print(f"{'page':44} {'median ms':>10} {'bytes':>10}  vs {TARGET_S * 1000:.0f} ms")
    for name, url in pages(db):
        times, size = [], 0
        for _ in range(1 if "cold" in name else args.repeat):
            t = time.perf_counter()
            res = client.get(url)
            times.append(time.perf_counter() - t)
            if res.status_code != 200:
                print(f"{name}: HTTP {res.status_code}: {res.text[-300:]}", file=sys.stderr)
                return 1
            size = len(res.content)
        med = statistics.median(times)
        worst = max(worst, med)
        print(f"{name:44} {med * 1000:10.0f} {size:10,}  {'ok' if med <= TARGET_S else 'SLOW'}")
    print(f"slowest: {worst * 1000:.0f} ms (target {TARGET_S * 1000:.0f} ms)")
    return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
