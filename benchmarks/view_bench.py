"""`bench view` benchmark: every page kind over the report benchmark's synthetic store of 1 M
turns (target ≤ 300 ms server-side each, issue 17; the session page's "why this score" panel,
previous/next within a list, transcript search and timeline, issue 29).

Each page is requested through Starlette's TestClient (the app in-process, no network), so the
time is the server's: a fresh read-only connection per request (as `bench view` does, so that a
running `bench run` can keep writing), the queries and the rendering. Pages: the runs page cold
(headline intervals computed) and warm (cached while the runs do not change), a run's sessions
(first page, a sorted and filtered page, a late page), the longest transcript and a typical one,
two runs side by side, a run pair's session runs, a SQL query and its CSV. The store is generated with
`synthetic_store.generate` when missing; a 500-turn session (`long-500`, two messages a turn) is
added to its first run when absent. The fragments pages fetch after they show are timed apart:
the runs page's headline (the report's intervals) and the run-pair page's `bench compare` table
(its paired cluster bootstrap, pure Python: about 0.6 s on this store).

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

import synthetic_store

TARGET_S = 0.3


LONG = "long-500"


def add_long_session(db: Path, turns: int = 500) -> None:
    """A session of `turns` turns in the store's first run (once)."""
    import duckdb

    con = duckdb.connect(str(db))
    try:
        if con.execute("SELECT count(*) FROM sessions WHERE session_id = ?", [LONG]
                       ).fetchone()[0]:
            return
        run = con.execute("SELECT run_id FROM runs ORDER BY created_at, run_id LIMIT 1"
                          ).fetchone()[0]
        con.execute("INSERT INTO sessions (run_id, session_id, repeat, name, protocol, status, "
                    "turns) VALUES (?, ?, 0, ?, 'intent_tracking', 'finished', ?)",
                    [run, LONG, LONG, turns])
        con.execute("""INSERT INTO messages (run_id, session_id, repeat, seq, turn, role, content)
            SELECT ?, ?, 0, 2 * t + k, t, CASE k WHEN 0 THEN 'user' ELSE 'assistant' END,
                   CASE k WHEN 0 THEN 'question ' || t
                   ELSE 'answer ' || t || ' ' || repeat('word ', 60) END
            FROM range(1, ? + 1) a(t), range(2) b(k)""", [run, LONG, turns])
        con.execute("""INSERT INTO turns (run_id, session_id, repeat, turn, steps, tool_calls,
                           stop_reason, duration_s)
            SELECT ?, ?, 0, t, 1, 0, 'answer', 0.5 FROM range(1, ? + 1) a(t)""",
                    [run, LONG, turns])
    finally:
        con.close()


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
        runs = [r for (r,) in con.execute("SELECT run_id FROM runs ORDER BY created_at DESC "
                                          "NULLS LAST, run_id LIMIT 20").fetchall()]
    finally:
        con.close()

    def session(r: str, key: tuple[str, int]) -> str:
        return urlencode({"run": r, "session": key[0], "repeat": key[1]})

    last = max(0, (total - 1) // 50)
    headline = "/headline?" + urlencode([("run", r) for r in runs])
    return [
        ("runs (cold)", "/"),
        ("runs (warm)", "/"),
        ("headline fragment (cold: intervals)", headline),
        ("headline fragment (warm)", headline),
        ("runs filtered by agent", "/?" + urlencode({"agent": "litellm:gpt-4o"})),
        ("sessions, first page", f"/runs/{run}"),
        ("sessions by COMP, errors only", f"/runs/{run}?sort=comp&desc=1&status=error"),
        ("sessions, score 20–80 %", f"/runs/{run}?metric=comp&min=20&max=80"),
        ("sessions, last page", f"/runs/{run}?page={last}"),
        (f"transcript, longest ({longest[2]} turns)", f"/session?{session(run, longest[:2])}"),
        ("transcript, typical", f"/session?{session(run, typical)}"),
        # issue 29: its place in a filtered, sorted list (previous/next) and a search
        ("transcript in a list sorted by COMP",
         f"/session?{session(run, typical)}&l.sort=comp&l.desc=1&l.status=finished"),
        ("transcript search", f"/session?{session(run, typical)}&q=the"),
        ("transcript search, 500 turns", f"/session?{session(run, (LONG, 0))}&q=word"),
        ("transcript, 500 turns (turns 1–100)", f"/session?{session(run, (LONG, 0))}"),
        ("transcript, 500 turns (turns 401–500)",
         f"/session?{session(run, (LONG, 0))}&turns=4"),
        ("side by side", f"/pair?a={run}&b={other}&"
                         + urlencode({"session": typical[0], "repeat": typical[1]})),
        ("run pair", f"/compare?a={run}&b={other}"),
        ("run pair by Δ, page 2", f"/compare?a={run}&b={other}&sort=delta&page=1"),
        ("compare fragment (cold: bootstrap)",
         f"/compare/table?a={run}&b={other}"),
        ("compare fragment (warm)", f"/compare/table?a={run}&b={other}"),
        # SQL runs by a POST of the SQL page's form (issue 27): `client.request` below
        ("SQL", "POST /sql " + "SELECT agent, count(*), avg(comp) FROM session_results "
                               "GROUP BY agent"),
        ("SQL as CSV", "POST /sql.csv SELECT * FROM runs"),
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
        synthetic_store.generate(db, args.turns)
    add_long_session(db)
    from starlette.testclient import TestClient

    from benchpack.reports.view.app import create_app

    app = create_app(db)
    # as a browser on this machine: under a localhost name (the viewer refuses others)
    client = TestClient(app, base_url="http://127.0.0.1")
    token = app.state.viewer.form_token
    client.get("/static/view.css")  # imports and the app warmed, not the store
    worst = 0.0
    fragments: dict[str, float] = {}
    print(f"{'page':44} {'median ms':>10} {'bytes':>10}  vs {TARGET_S * 1000:.0f} ms")
    for name, url in pages(db):
        times, size = [], 0
        for _ in range(1 if "cold" in name else args.repeat):
            t = time.perf_counter()
            if url.startswith("POST "):
                _, path, q = url.split(" ", 2)
                res = client.post(path, data={"q": q, "token": token})
            else:
                res = client.get(url)
            times.append(time.perf_counter() - t)
            if res.status_code != 200:
                print(f"{name}: HTTP {res.status_code}: {res.text[-300:]}", file=sys.stderr)
                return 1
            size = len(res.content)
        med = statistics.median(times)
        if " fragment" in name:  # after the page, not the page
            kind = name.split(" fragment")[0]
            fragments[kind] = max(fragments.get(kind, 0.0), med)
        else:
            worst = max(worst, med)
        print(f"{name:44} {med * 1000:10.0f} {size:10,}  {'ok' if med <= TARGET_S else 'SLOW'}")
    print(f"slowest page: {worst * 1000:.0f} ms (target {TARGET_S * 1000:.0f} ms)"
          + "".join(f"; {k} fragment: {v * 1000:.0f} ms" for k, v in fragments.items()))
    return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
