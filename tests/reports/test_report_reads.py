"""What the reports read, not how long they take (issue 31: every report ≤ 0.5 s on 1 M turns,
guarded by what is computed): the explain report reads only the session attempts it shows and
binds no Python list (DuckDB binds one at ~0.2 ms an element), asks for the store's tables
once, and an HTML page rendered apart from its build creates no views. Over
`benchmarks/synthetic_store.py`'s store at a small scale."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

from benchpack.reports import access, explain
from benchpack.reports.api import ReportOptions, build_reports
from benchpack.reports.builtin import ReportContext
from benchpack.reports.render import render

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
synthetic = importlib.import_module("synthetic_store")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reads") / "bench.duckdb"
    synthetic.generate(path, 3000)
    return path


class Recording:
    """A connection that records each statement, its parameters and the rows it returned."""

    def __init__(self, con: Any) -> None:
        self._con = con
        self.log: list[tuple[str, Any, list[int]]] = []

    def execute(self, sql: str, params: Any = None) -> Any:
        cur = self._con.execute(sql) if params is None else self._con.execute(sql, params)
        entry: tuple[str, Any, list[int]] = (" ".join(sql.split()), params, [])
        self.log.append(entry)

        class Cursor:
            description = cur.description

            def fetchall(self) -> list[Any]:
                rows = cur.fetchall()
                entry[2].append(len(rows))
                return rows

        return Cursor()


def _explain(db: Path, monkeypatch: pytest.MonkeyPatch, shown: int,
             sessions: list[str] | None = None) -> tuple[Any, Recording]:
    monkeypatch.setattr(explain, "EXPLAIN_MAX", shown)
    with access.open_store(db) as con:
        runs = access.select_runs(con, ["all"])
        rec = Recording(con)
        ctx = ReportContext(rec, runs)
        ctx.sessions = sessions or []
        return explain.report(ctx), rec


def test_explain_reads_only_the_attempts_it_shows(db: Path, monkeypatch: pytest.MonkeyPatch
                                                  ) -> None:
    with access.open_store(db) as con:
        runs = access.select_runs(con, ["all"])
        total = con.execute("SELECT count(*) FROM sessions WHERE status <> 'skipped' AND "
                            f"run_id IN ({', '.join('?' * len(runs))})", runs).fetchall()[0][0]
    assert total > 100
    res, rec = _explain(db, monkeypatch, 7)
    assert len(res.data["explanations"]) == 7
    assert res.notes == [f"7 of {total} session attempts explained; narrow with --session "
                         "NAME (a name, plan id or glob) or --run"]
    # the keys (7), the 7 sessions, their child rows: nothing near the store's attempts
    keys = [e for e in rec.log if "count(*) OVER ()" in e[0]]
    assert len(keys) == 1 and sum(keys[0][2]) == 7
    assert sum(1 for e in rec.log if "duckdb_tables()" in e[0]) == 1  # not one a session
    # every parameter a scalar: a Python list is bound element by element (0.5 s for 1,000)
    for sql, params, _ in rec.log:
        values = params.values() if isinstance(params, dict) else params or []
        assert not any(isinstance(v, list | tuple) for v in values), sql


def test_explain_chooses_what_a_glob_matching_everything_chooses(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The attempts chosen in SQL (no `--session`) are those the Python filter of
    `--session '*'` keeps, in the same order (runs as selected, then name, id, repeat), with
    the same count; a run id with a quote is quoted."""
    for shown in (5, 10_000):
        plain, _ = _explain(db, monkeypatch, shown)
        star, _ = _explain(db, monkeypatch, shown, ["*"])
        keys = [(x["run_id"], x["session_id"], x["repeat"])
                for x in plain.data["explanations"]]
        assert keys == [(x["run_id"], x["session_id"], x["repeat"])
                        for x in star.data["explanations"]]
        assert plain.notes == star.notes
        assert plain.tables[0].rows == star.tables[0].rows
    with access.open_store(db) as con:
        runs = list(reversed(access.select_runs(con, ["all"])))
        ctx = ReportContext(con, [*runs, "it's-not-there"])
        picked, total = explain._selected(ctx, 10_000)
    assert [k[0] for k in picked] == sorted((k[0] for k in picked), key=runs.index)
    assert total == len(picked)


def test_html_rendered_apart_creates_no_views(db: Path, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    (result,) = build_reports(ReportOptions(db=db, names=["graph"], runs=["all"]))
    created: list[Any] = []
    real = access.install_views
    monkeypatch.setattr(access, "install_views",
                        lambda *a, **k: created.append(k) or real(*a, **k))
    for _ in range(2):  # the sessions section built, then kept
        page = render(result, "html")
        assert 'id="sessions"' in page
    assert created == []
