"""A report's connection creates the views its statements name (`views.LazyViews`), not all
21 at open (issue 31: ~0.04 s CPU a report on 1 M turns): what each report creates, that
every report reads the same as with every view created first, and what a store that cannot
hold a view, a catalog listing, a plug-in's view and a store whose sessions change say."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from benchpack.reports import access
from benchpack.reports.access import StoreError, open_store, select_runs
from benchpack.reports.api import ReportOptions, _build, build_reports
from benchpack.reports.registry import default_reports
from benchpack.reports.render import render
from benchpack.reports.views import LazyViews, install_views, readable

ROOT = Path(__file__).resolve().parents[2]
CREATE = re.compile(r"CREATE OR REPLACE TEMP VIEW (\w+)")

OPTION_SETS: list[dict[str, Any]] = [
    {}, {"by": "name"}, {"by": "name", "limit": 0}, {"by": "domain"}, {"humans": True}]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from synthetic_store import generate

    path = tmp_path_factory.mktemp("lazy") / "bench.duckdb"
    generate(path, 3000)
    return path


class _Logged:
    """A DuckDB connection writing down every statement run on it."""

    def __init__(self, con: Any, sqls: list[str]) -> None:
        self._con, self._sqls = con, sqls

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def execute(self, sql: str, *args: Any) -> Any:
        self._sqls.append(" ".join(str(sql).split()))
        return self._con.execute(sql, *args)

    def cursor(self) -> _Logged:  # the statements a report runs beside the others too
        return _Logged(self._con.cursor(), self._sqls)


def _created(db: Path, name: str, monkeypatch: pytest.MonkeyPatch, **options: Any
             ) -> list[str]:
    """The views `bench report NAME` creates over every run, in order."""
    sqls: list[str] = []
    connect = access._connect
    monkeypatch.setattr(access, "_connect", lambda *a: _Logged(connect(*a), sqls))
    build_reports(ReportOptions(db=db, names=[name], runs=["all"], **options))
    return [m.group(1) for s in sqls if (m := CREATE.match(s))]


def test_cost_creates_no_view_and_the_summary_those_it_reads(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every view was created at open: 21 statements (each bound by DuckDB) for a report
    reading none of them (`cost`), and the summary reads four."""
    assert _created(db, "cost", monkeypatch) == []
    assert _created(db, "cost", monkeypatch, by="name") == []
    summary = _created(db, "summary", monkeypatch)
    # `judge_errors` is also a column the summary sums: a word naming a view creates it
    assert set(summary) <= {"session_results", "trigger_results", "alone_results",
                            "run_lineage", "judge_errors"}
    assert {"session_results", "trigger_results", "alone_results"} <= set(summary)
    # each view after those it reads
    assert summary.index("session_results") < summary.index("trigger_results")
    # agreement asks which views it can read (`views.readable`), not the catalog, so it
    # creates only the views it reads
    agreement = _created(db, "agreement", monkeypatch)
    assert "run_lineage" in agreement and len(agreement) < 21
    # a statement that lists the catalog sees every view
    with open_store(db) as con:
        assert len(con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal")
                   .fetchall()) == 21


def _json(result: Any) -> Any:
    return json.loads(render(result, "json"))


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: "-".join(map(str, o.items())))
def test_every_report_reads_what_it_read_with_every_view_created(
        db: Path, options: dict[str, Any]) -> None:
    """Each report (and the HTML page of all) built on a lazy connection and on one where
    `install_views` created every view first: the same JSON, table and Markdown."""
    names = default_reports().names()
    opts = ReportOptions(db=db, names=names, runs=["all"], **options)
    lazy = build_reports(opts)
    con = duckdb.connect(str(db), read_only=True)
    try:
        install_views(con)
        eager = _build(con, select_runs(con, ["all"]), opts)
    finally:
        con.close()
    assert [r.name for r in lazy] == [r.name for r in eager] == list(names)
    for a, b in zip(lazy, eager, strict=True):
        assert _json(a) == _json(b), a.name
        assert render(a, "table") == render(b, "table"), a.name
        assert render(a, "md") == render(b, "md"), a.name


def test_readable_answers_as_the_catalog_does_without_creating_views(db: Path) -> None:
    with open_store(db) as con:
        assert isinstance(con, LazyViews)
        lazy = readable(con)
        assert con.created == []
    raw = duckdb.connect(str(db), read_only=True)
    try:
        install_views(raw)
        internal = {r[0] for r in raw.execute(
            "SELECT view_name FROM duckdb_views() WHERE internal").fetchall()}
        assert readable(raw) - internal == lazy
        assert {"judge_labels", "human_ratings", "score_results", "session_results"} <= lazy
    finally:
        raw.close()


@pytest.mark.parametrize("sql", [
    # a view whose SQL reads the lost column, created when the statement first names it
    "SELECT count(*) FROM trigger_results",
    # a report's own statement, before any view
    "SELECT count(*) FROM sessions WHERE status = 'ok'",
])
def test_a_lost_column_names_the_store(tmp_path: Path, db: Path, sql: str) -> None:
    """A store whose `sessions` lost a column `session_results` reads (no benchpack writes
    one: the views read no column a migration added but `error_kind`, which they do
    without): met by a view when a statement first names it, or by a report's own statement
    before any view, it says so as opening the store did when every view was created then —
    `<store>: why`, a `StoreError` (which the CLI prints), not DuckDB's exception."""
    copy = tmp_path / "broken.duckdb"
    copy.write_bytes(db.read_bytes())
    con = duckdb.connect(str(copy))
    try:
        con.execute("ALTER TABLE sessions DROP COLUMN status")
    finally:
        con.close()
    with pytest.raises(StoreError, match=re.escape(f"{copy}: ") + ".*status"), \
            open_store(copy) as con:
        con.execute(sql).fetchall()


def test_the_alone_answer_follows_the_file(tmp_path: Path, db: Path) -> None:
    """Whether any session may have run alone is kept per state of the file: a session
    stored alone after the first read is left out of `session_results` at the next."""
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(db.read_bytes())
    sql = "SELECT count(*) FROM session_results WHERE run_id = 'synth-01'"
    with open_store(copy) as con:
        before = con.execute(sql).fetchall()[0][0]
        assert "json_extract" not in con.execute(
            "SELECT sql FROM duckdb_views() WHERE view_name = 'session_results'").fetchall()[0][0]
    con = duckdb.connect(str(copy))
    try:
        con.execute("""UPDATE sessions SET extra = '{"context": "alone"}'
            WHERE run_id = 'synth-01' AND session_id = (SELECT min(session_id) FROM sessions
                                                        WHERE run_id = 'synth-01')""")
        changed = con.execute("""SELECT count(*) FROM sessions WHERE run_id = 'synth-01'
            AND status <> 'skipped' AND extra::VARCHAR LIKE '%alone%'""").fetchall()[0][0]
    finally:
        con.close()
    assert changed > 0
    with open_store(copy) as con:
        assert con.execute(sql).fetchall()[0][0] == before - changed
        assert con.execute("SELECT count(*) FROM alone_results").fetchall()[0][0] == changed


def test_a_plugin_view_is_created_when_a_statement_names_it(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name no built-in view has: the store's plug-in protocols are asked once, and their
    view created and the statement run again."""
    from benchpack.reports import views
    from benchpack.reports.model import View

    extra = View("plugged_results", "doc", "SELECT run_id, name FROM session_results")
    monkeypatch.setattr(views, "plugin_views", lambda con: [extra])
    with open_store(db) as con:
        rows = con.execute("SELECT count(*) FROM plugged_results").fetchall()
        assert rows == con.execute("SELECT count(*) FROM session_results").fetchall()
        assert con.created == ["session_results", "plugged_results"]
        with pytest.raises(duckdb.CatalogException):
            con.execute("SELECT * FROM no_such_table")


def _built_beside(db: Path, monkeypatch: pytest.MonkeyPatch, name: str
                  ) -> tuple[list[str], list[str], Any]:
    """(the statements on the report's own connection, those on its second cursor, the
    report) of `bench report NAME` over every run."""
    main: list[str] = []
    side: list[str] = []

    class Main(_Logged):
        def cursor(self) -> _Logged:
            return _Logged(self._con.cursor(), side)

    connect = access._connect
    monkeypatch.setattr(access, "_connect", lambda *a: Main(connect(*a), main))
    [result] = build_reports(ReportOptions(db=db, names=[name], runs=["all"]))
    return main, side, result


def test_the_summary_reads_its_notes_beside_its_means(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulator counts, the judge note and the pooled trigger units go to a second
    cursor (`aside.beside`), the headline means to the report's own connection; the figures
    are those of the sequential build (`test_every_report_reads_…`, whose eager connection
    gives no such cursor)."""
    main, side, _ = _built_beside(db, monkeypatch, "summary")
    assert any(q.startswith("WITH e AS") for q in side)  # simulator counts
    assert any("FROM trigger_results" in q for q in side)
    assert any("run_lineage" in q for q in side)  # the judge note
    assert any(q.startswith("WITH long AS") for q in main)  # the headline means
    assert not [q for q in main if q.startswith("WITH e AS") or "FROM trigger_results" in q]


def test_agreement_ranks_beside_its_judge_pairs(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Judge against judge: rank stability's figures go to a second cursor (`aside.beside`),
    the judge pairs' counts to the report's own connection, and its table still comes after
    theirs; the figures are those of the sequential build (`test_every_report_reads_…`)."""
    main, side, result = _built_beside(db, monkeypatch, "agreement")
    pairs = [q for q in main if q.startswith("-- judge_pairs of two runs")]
    assert pairs and not [q for q in side if q.startswith("-- judge_pairs of two runs")]
    assert any("sum(comp) AS s0" in q for q in side)  # rank stability's session figures
    assert not [q for q in main if "sum(comp) AS s0" in q]
    assert result.tables[-1].title.startswith("Rank stability")
    assert len(result.tables) == len(pairs) + 1


def test_a_call_beside_that_fails_is_raised_and_its_cursor_closed(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchpack.reports import aside, builtin

    closed: list[bool] = []

    def boom(ctx: Any) -> None:
        raise RuntimeError("beside")

    with open_store(db) as con:
        ctx = builtin.ReportContext(con, select_runs(con, ["all"]))
        real = ctx.beside

        def tracked() -> Any:
            other = real()
            close = other.con.close
            monkeypatch.setattr(other.con, "close", lambda: (closed.append(True), close()))
            return other

        monkeypatch.setattr(ctx, "beside", tracked)
        with pytest.raises(RuntimeError, match="beside"), \
                aside.beside(ctx, lambda c: 1, boom, lambda c: 3) as later:
            assert later(0) == 1
            later(1)
        assert closed == [True]
        # the block failing first: the thread is waited for, the cursor closed
        with pytest.raises(ValueError), \
                aside.beside(ctx, lambda c: c.rows("SELECT count(*) FROM session_results")):
            raise ValueError("block")
        assert closed == [True, True]


def test_several_reports_in_json_are_a_list_of_each_one(db: Path) -> None:
    """`bench report summary cost --format json`: one list, each report as it is alone
    (`render.dumps_rows`, each row a line)."""
    from benchpack.reports.api import render_report

    both = json.loads(render_report(ReportOptions(db=db, names=["summary", "cost"],
                                                  runs=["all"]), "json"))
    alone = [json.loads(render_report(ReportOptions(db=db, names=[n], runs=["all"]), "json"))
             for n in ("summary", "cost")]
    for doc in [*both, *alone]:
        doc.pop("generated", None)
    assert both == alone


def _built_threads(db: Path, monkeypatch: pytest.MonkeyPatch, name: str, **options: Any
                   ) -> list[tuple[str, str, int]]:
    """(`main` or `side`, statement, DuckDB threads it ran with) of `bench report NAME` over
    every run, on a connection opened with 3 threads."""
    ran: list[tuple[str, str, int]] = []

    class Threads(_Logged):
        where = "main"

        def execute(self, sql: str, *args: Any) -> Any:
            (threads,) = self._con.execute("SELECT current_setting('threads')").fetchone()
            ran.append((self.where, " ".join(str(sql).split()), int(threads)))
            return self._con.execute(sql, *args)

        def cursor(self) -> _Logged:
            side = Threads(self._con.cursor(), self._sqls)
            side.where = "side"
            return side

    connect = access._connect

    def three_threads(*args: Any) -> Any:
        con = connect(*args)
        con.execute("SET threads = 3")
        return Threads(con, [])

    monkeypatch.setattr(access, "_connect", three_threads)
    build_reports(ReportOptions(db=db, names=[name], runs=["all"], **options))
    return ran


def test_the_summary_reads_beside_on_half_threads(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While its notes, pooled trigger units and run costs are read beside its headline
    means, both cursors run their statements on half the connection's DuckDB threads
    (`aside.half_threads`, one of its 3: the costs over every call beside the rest); the
    sessions' counts before and what comes after run with the connection's threads."""
    ran = _built_threads(db, monkeypatch, "summary")
    threads = {" ".join(s.split()[:2]): (where, n) for where, s, n in ran}
    assert threads["WITH priced"] == ("side", 1)  # the run costs: every call
    assert threads["WITH long"] == ("main", 1) and threads["WITH e"] == ("side", 1)
    assert [n for _, s, n in ran if "FROM alone_results" in s] == [3]  # after the block
    assert [n for _, s, n in ran if "FROM runs r LEFT JOIN sessions s" in s] == [3]


def test_cost_by_reads_its_groups_beside_its_role_rows_on_half_threads_each(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`cost --by`: the groups' ledgers on a second cursor (`aside.beside`) while the role
    rows are read, both passes over every call on half the connection's threads (one of 3),
    its threads back afterwards; without `--by` the role rows keep them, and no cursor."""
    ran = _built_threads(db, monkeypatch, "cost", by="name")
    groups = [(where, n) for where, s, n in ran if s.startswith("WITH c AS")]
    roles = [(where, n) for where, s, n in ran if s.startswith("WITH g AS MATERIALIZED")]
    assert groups == [("side", 1)] and roles == [("main", 1)], ran
    assert ran[-1][2] == 3  # the inventory, after the block
    ran = _built_threads(db, monkeypatch, "cost")
    assert [(where, n) for where, s, n in ran if s.startswith("WITH g AS MATERIALIZED")] == [
        ("main", 3)]
    assert {where for where, _, _ in ran} == {"main"}


def test_agreement_humans_reads_its_judged_half_beside_its_rated_items(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`agreement --humans`: the headline's judged half (the tables alone) on a second cursor
    while the rated items are written and counted, each on half the connection's threads."""
    ran = _built_threads(db, monkeypatch, "agreement", humans=True)
    assert [(where, n) for where, s, n in ran if s.startswith("WITH j AS")] == [("side", 1)]
    assert [(where, n) for where, s, n in ran if s.startswith(
        "CREATE OR REPLACE TEMP TABLE items")] == [("main", 1)]
    assert ran[-1][2] == 3  # the inventory, after the block


def test_half_threads_halves_gives_back_and_leaves_a_locked_connection() -> None:
    """`aside.half_threads`: the block on half the connection's threads (at least one: on a
    machine of more cores the two cursors' passes over every call keep several each), the
    count given back after it; a connection whose settings are locked (`access.LOCKED`,
    where `bench view`'s requests share one database) runs it with its threads, no `SET`."""
    from benchpack.reports.aside import half_threads

    def threads(con: Any) -> int:
        return int(con.execute("SELECT current_setting('threads')").fetchone()[0])

    con = duckdb.connect(config={"threads": 3, **access.LOCKED})
    with half_threads(con):
        assert threads(con) == 3
    for before, inside in ((3, 1), (2, 1), (8, 4), (9, 4), (1, 1)):
        con = duckdb.connect(config={"threads": before})
        with half_threads(con):
            assert threads(con) == inside, before
        assert threads(con) == before
