"""Report benchmark: every built-in report over a synthetic store of 1 M turns (target ≤ 0.5 s each).

The store is generated with DuckDB SQL (no Python loops over rows), deterministic for its
parameters: several runs (agents, one of them run twice), each repeat of each plan session, all
four protocols, with their child tables in realistic proportions (messages, tool calls, intent
statuses, checklist results, triggers, triples, stage events, LLM calls). The runs of two agents
are re-judged by another judge as `bench rejudge` writes it (a new run per agent: the dialogues
copied, trigger points, rubric checklist items, ground-truth triples and the intent-check audit
decided anew, disagreeing at realistic rates, `runs.config.rejudge_of`), and humans rated a
share of those runs' judged items as `bench ratings import` stores them (2–4 raters an item, so
the consensus has ties). The turns of all runs, rejudges included, add up to `--turns`.

Measured in one run, each cold (a fresh read-only connection, views installed, as `bench report`
does; Python imports warmed): building each report over all runs, then rendering it as a
terminal table, Markdown, JSON and (when `reports/benchpack/reports/html.py` exists) HTML — the
page `bench report NAME --format html` writes, drill-down included; the seconds printed are
build + render and the ratio is to the 0.5 s target. `agreement` is timed both
ways: judge against judge (each rejudge against its original run, and rank stability) and
`--humans` (every run judging the rated dialogues against the human consensus). Also timed: the
whole `bench report --format html` page (every report and the drill-down), two ad-hoc `bench
query` statements and `bench export --format parquet`. Report CIs: exact bootstrap up to
`BOOTSTRAP_EXACT_MAX` units, normal approximation above (reports/README.md).

Usage: python benchmarks/report_bench.py [--turns 1000000] [--db PATH [--regenerate]]
                                         [--repeat 3] [--by category] [--skip-export]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synthetic_store import REJUDGED, RUNS, generate, table_counts

TARGET_S = 0.5

QUERIES = {
    "PROC by agent and domain (view)": """
        SELECT agent, domain, count(*) AS sessions, avg(coalesce(proc_group, proc)) AS proc,
               avg(comp) AS comp
        FROM session_results WHERE protocol = 'intent_tracking' AND status = 'finished'
        GROUP BY ALL ORDER BY ALL""",
    "reply length by agent (turns ⋈ sessions)": """
        SELECT s.agent, count(*) AS turns, avg(length(t.assistant_message)) AS chars,
               avg(t.tool_calls) AS tool_calls
        FROM turns t JOIN sessions s USING (run_id, session_id, repeat)
        GROUP BY ALL ORDER BY ALL""",
}


# --------------------------------------------------------------------------- timing


@dataclass
class Timing:
    name: str
    build_s: float
    render_s: dict[str, float]
    rows: int

    def seconds(self, fmt: str) -> float:
        return self.build_s + self.render_s[fmt]


def formats() -> list[str]:
    """Renderers to time: table, md, json, and html once `html.py` exists."""
    html = importlib.util.find_spec("benchpack.reports.html") is not None
    return ["table", "md", "json", *(["html"] if html else [])]


VARIANTS = {"agreement": [("agreement --humans", {"humans": True})],
            "cost": [("cost --by name", {"by": "name"})]}
"""Reports timed once more with other options: (label, `ReportOptions` fields)."""


def timed_reports(names: list[str]) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, report, options) of every timing: each report, then its variants."""
    return [t for name in names
            for t in [(name, name, {}), *((label, name, opts)
                                          for label, opts in VARIANTS.get(name, []))]]


def time_report(db: Path, name: str, fmts: list[str], *, by: str | None = None,
                repeat: int = 1, label: str | None = None,
                options: dict[str, Any] | None = None) -> Timing:
    """Build `name` over all runs on a fresh connection (median of `repeat` cold builds), then
    render it in each format."""
    from benchpack.reports.api import ReportOptions, build_reports
    from benchpack.reports.render import render
    from benchpack.reports.stats.uncertainty import t_ppf

    builds = []
    for _ in range(repeat):
        t_ppf.cache_clear()  # each build cold, as in a fresh `bench report` process
        t = time.perf_counter()
        (result,) = build_reports(ReportOptions(db=db, names=[name], runs=["all"],
                                                **{"by": by, **(options or {})}))
        builds.append(time.perf_counter() - t)
    renders = {}
    for fmt in fmts:
        samples = []
        for _ in range(repeat):
            t = time.perf_counter()
            render(result, fmt)
            samples.append(time.perf_counter() - t)
        renders[fmt] = statistics.median(samples)
    rows = sum(len(t.rows) for t in result.tables)
    return Timing(label or name, statistics.median(builds), renders, rows)


def time_html_page(db: Path, names: list[str]) -> tuple[float, int]:
    """`bench report --format html` over all runs: every report and the drill-down, one page."""
    from benchpack.reports.api import ReportOptions, render_report

    t = time.perf_counter()
    page = render_report(ReportOptions(db=db, names=names, runs=["all"]), "html")
    return time.perf_counter() - t, len(page.encode())


def time_sessions_section(db: Path, name: str) -> tuple[float, float]:
    """The HTML page of report `name` (built beforehand) with its sessions section built
    (nothing kept for this state of the file), then read back as kept (`html_cache`)."""
    from benchpack.reports.api import ReportOptions, build_reports
    from benchpack.reports.html_cache import forget_section
    from benchpack.reports.render import render

    (result,) = build_reports(ReportOptions(db=db, names=[name], runs=["all"]))
    seconds = []
    forget_section(db)
    for _ in range(2):
        t = time.perf_counter()
        render(result, "html")
        seconds.append(time.perf_counter() - t)
    return seconds[0], seconds[1]


def time_query(db: Path, sql: str, repeat: int = 1) -> tuple[float, int]:
    from benchpack.reports.api import run_query

    samples, n = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        n = len(run_query(db, sql).rows)
        samples.append(time.perf_counter() - t)
    return statistics.median(samples), n


def time_export(db: Path) -> tuple[float, int, int]:
    from benchpack.reports.api import export_store

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        files = export_store(db, Path(tmp) / "export", "parquet")
        seconds = time.perf_counter() - t
        return seconds, len(files), sum(p.stat().st_size for p in files)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=1_000_000)
    ap.add_argument("--db", type=Path, help="Store to use (generated when missing).")
    ap.add_argument("--regenerate", action="store_true", help="Regenerate --db.")
    ap.add_argument("--repeat", type=int, default=3, help="Cold builds per report (median).")
    ap.add_argument("--by", help="Also pass --by to every report (default: each report's own).")
    ap.add_argument("--reports", nargs="*", help="Only these reports.")
    ap.add_argument("--skip-export", action="store_true")
    args = ap.parse_args()

    import duckdb
    import rich.table  # noqa: F401  (imports are warmed: the timings are the reports' own)

    from benchpack.reports.registry import default_reports

    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "bench.duckdb"
        if args.regenerate and db.exists():
            db.unlink()
            Path(f"{db}.wal").unlink(missing_ok=True)
        if db.exists():
            print(f"reusing {db} (--regenerate to rebuild it)")
        else:
            t = time.perf_counter()
            counts = generate(db, args.turns)
            print(f"generated {db} in {time.perf_counter() - t:.1f} s")
        con = duckdb.connect(str(db), read_only=True)
        counts = table_counts(con)
        con.close()
        print(f"environment: {os.cpu_count()} cores, {platform.machine()}, Python "
              f"{platform.python_version()}, DuckDB {duckdb.__version__}, store "
              f"{db.stat().st_size / 1e6:.0f} MB, load average "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        print("rows: " + ", ".join(f"{t} {n:,}" for t, n in counts.items() if n))

        fmts = formats()
        names = args.reports or default_reports().names()
        from benchpack.reports import builtin

        # getattr: the script also times older reports code (PYTHONPATH) for before/after
        exact_max = getattr(builtin, "BOOTSTRAP_EXACT_MAX", None)
        ci = (f"exact bootstrap up to {exact_max} units, normal approximation above"
              if exact_max else "exact bootstrap")
        print(f"\ncold builds over all {RUNS + len(REJUDGED)} runs, median of {args.repeat}; "
              "seconds = build + "
              f"render; ratio = slowest format ÷ {TARGET_S:g} s target; CIs: {ci}")
        if "html" in fmts and importlib.util.find_spec("benchpack.reports.html_cache"):
            built, kept = time_sessions_section(db, names[0])
            print(f"HTML page of {names[0]}: {built:.3f} s with its sessions section built, "
                  f"{kept:.3f} s with it kept (once per state of the file; the timings "
                  "below read it kept)")
        head = f"{'report':18} {'build':>7} " + " ".join(f"{f:>7}" for f in fmts)
        print(head + f" {'rows':>6} {'ratio':>6}")
        worst = 0.0
        for label, name, options in timed_reports(names):
            tm = time_report(db, name, fmts, by=args.by, repeat=args.repeat, label=label,
                             options=options)
            ratio = max(tm.seconds(f) for f in fmts) / TARGET_S
            worst = max(worst, ratio)
            print(f"{label:18} {tm.build_s:7.3f} "
                  + " ".join(f"{tm.seconds(f):7.3f}" for f in fmts)
                  + f" {tm.rows:6d} {ratio:5.2f}×" + ("" if ratio <= 1 else "  ✗"))
        print(f"slowest report ÷ target = {worst:.2f}×  (target ≤ 1×)")
        if "html" in fmts:
            seconds, size = time_html_page(db, names)
            print(f"bench report --format html ({len(names)} reports and the drill-down, one "
                  f"page): {seconds:.2f} s, {size / 1e6:.1f} MB")

        print("\nbench query (cold, median):")
        for label, sql in QUERIES.items():
            seconds, n = time_query(db, sql, args.repeat)
            print(f"  {label:42} {seconds:7.3f} s  {n} rows")
        if not args.skip_export:
            seconds, files, size = time_export(db)
            print(f"\nbench export --format parquet: {seconds:.2f} s, {files} files, "
                  f"{size / 1e6:.0f} MB ({sum(counts.values()) / seconds / 1e6:.1f} M table "
                  "rows/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
