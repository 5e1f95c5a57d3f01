"""What `bench report summary` asks the store (issue 31): the "judge not validated" note reads
the tables under `judge_labels` with the view's own conditions, and the run cost is the exact
DECIMAL sum of every call's price, however the query groups it."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

from benchpack.reports import stats
from benchpack.reports.access import open_store, select_runs
from benchpack.reports.api import ReportOptions, build_reports
from benchpack.reports.builtin import ReportContext, summary
from benchpack.reports.judge_validity import JUDGED_ITEMS, unvalidated_note
from benchpack.reports.views import VIEWS
from benchpack.runtime.store import SessionRows, Store


def _branches(sql: str) -> list[str]:
    return [b.strip() for b in sql.split("UNION ALL")]



class _Logged:
    """A connection that writes down every statement executed on it into `sqls` (its
    whitespace collapsed)."""

    def __init__(self, con: Any, sqls: list[str]) -> None:
        self._con, self._sqls = con, sqls

    def execute(self, sql: str, *args: Any) -> Any:
        self._sqls.append(" ".join(str(sql).split()))
        return self._con.execute(sql, *args)

def test_judged_items_have_the_conditions_of_judge_labels() -> None:
    """The note's query repeats the trigger, checklist and triple branches of `judge_labels`:
    each branch's table and WHERE clause must be the view's, word for word."""
    (view,) = [v for v in VIEWS if v.name == "judge_labels"]
    kinds = _branches(view.sql)[:3]
    mine = _branches(JUDGED_ITEMS)
    assert len(mine) == 3
    for theirs, ours in zip(kinds, mine, strict=True):
        table = re.search(r"^FROM (\w+ \w)", theirs, re.M)
        assert table and f"FROM {table.group(1)} JOIN s " in ours, (theirs, ours)
        (where,) = re.findall(r"^WHERE .*$", theirs, re.M)
        assert ours.endswith(where), (where, ours)
    assert "'trigger'" in kinds[0] and "'checklist'" in kinds[1] and "'triple'" in kinds[2]


def _run(store: Store, run_id: str, judge: str) -> None:
    store.upsert_run({"run_id": run_id, "created_at": 1.0, "updated_at": 1.0,
                      "plan_path": "b", "pack_name": "p", "agent": "a", "judge": judge,
                      "repeats": 1, "config": {"judge": judge}, "status": "finished"})


def _session(store: Store, run_id: str, status: str, labels: list[str | None],
             calls: list[tuple[Any, ...]] = ()) -> None:  # type: ignore[assignment]
    session = {"run_id": run_id, "session_id": "s0", "repeat": 0, "fingerprint": "f",
               "name": "s0", "protocol": "trigger_rubric", "agent": "a", "status": status,
               "judge_errors": 0}
    triggers = [(run_id, "s0", 0, f"t{i}", "critical", 1, "offline", "authored", "[]", "p",
                 "pa", "f", "answer", label, None if label in (None, "SKIPPED") else 1.0, "r",
                 "", None, None) for i, label in enumerate(labels)]
    rows = [(run_id, "s0", 0, k, "agent", "agent_step", "m", "h", 1, 1, cost, 0.1, False, None,
             1, 1, 0.0) for k, cost in enumerate(calls)]
    store.write_now(SessionRows(run_id, "s0", 0, session,
                                {"triggers": triggers, "llm_calls": rows}))


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("summary") / "bench.duckdb"
    store = Store(path)
    rng = random.Random(31)
    # a few prices many times over (the query casts each distinct price once), zero,
    # negative (a refund) and values that are not decimal fractions in binary
    prices = [0.0, 0.1, 0.2, 0.3, -0.1, 1e-7, 0.0140725, 2146.43145, 1 / 3]
    try:
        for run, judge, status, labels in (
                ("judged", "judge-x", "finished", ["PASS"]),
                ("skipped", "judge-x", "finished", ["SKIPPED"]),
                ("errored", "judge-x", "error", ["PASS"]),
                ("judge-error", "judge-x", "finished", [None]),
                ("none", "judge-x", "finished", []),
                ("rules", "rules", "finished", ["FAIL"])):
            _run(store, run, judge)
            calls = [rng.choice(prices) for _ in range(rng.randrange(1, 60))]
            _session(store, run, status, labels, calls)
    finally:
        store.close()
    return path


def test_the_note_names_the_runs_judge_labels_has(db: Path) -> None:
    with open_store(db) as con:
        runs = [str(r[0]) for r in con.execute("SELECT run_id FROM runs").fetchall()]
        expected = con.execute("""SELECT DISTINCT run_id FROM judge_labels
            WHERE judge <> 'rules' AND kind IN ('trigger', 'checklist', 'triple')
            ORDER BY run_id""").fetchall()
        note = unvalidated_note(ReportContext(con, runs))
    assert [r[0] for r in expected] == ["judge-error", "judged"]
    assert note is not None
    named = re.findall(r"([\w-]+) \(judge judge-x\)", note)
    assert named == ["judge-error", "judged"]


def test_the_run_cost_is_the_decimal_sum_of_every_call(db: Path) -> None:
    (res,) = build_reports(ReportOptions(db=db, names=["summary"], runs=["all"]))
    (runs,) = [t for t in res.tables if t.title == "Runs"]
    cost = {row[1]: row[-1] for row in runs.rows}
    con = duckdb.connect(str(db), read_only=True)
    try:
        exact = dict(con.execute("""SELECT run_id, sum(cost::DECIMAL(38, 18))::DOUBLE
            FROM llm_calls GROUP BY run_id""").fetchall())
    finally:
        con.close()
    assert len(exact) == 6
    for run, total in exact.items():
        assert repr(cost[run]) == repr(total), run


def test_the_summary_reads_no_view_of_every_judged_item(db: Path) -> None:
    """The note used to union every run's judged items (`judge_labels`, 0.12 s of the
    summary's 1.2 s on 1 M turns) to name a few runs; `llm_calls` is aggregated by one
    query."""
    sqls: list[str] = []

    with open_store(db) as con:
        res = summary(ReportContext(_Logged(con, sqls), select_runs(con, ["all"])))
    assert any("not validated" in n for n in res.notes)
    assert not [q for q in sqls if "judge_labels" in q]
    # one aggregation of the calls, and the runs with an imported call (`cost.measured`;
    # no store file given here, so not kept)
    reads = [q for q in sqls if "FROM llm_calls" in q]
    assert len(reads) == 2 and sum("purpose = 'imported'" in q for q in reads) == 1


@pytest.mark.parametrize("binary", [False, True])
def test_an_interval_does_not_depend_on_the_order_of_its_units(binary: bool) -> None:
    """The headline's units reach Python in no order (no `ORDER BY` sorting 100,000 sessions):
    that changes no digit only while every sum in the interval is exact (`math.fsum`)."""
    rng = random.Random(7)
    units = []
    for i in range(400):
        count = rng.choice([1, 2, 3])
        total = (float(sum(rng.random() < 0.3 for _ in range(count))) if binary
                 else sum(rng.random() ** 3 for _ in range(count)))
        # most episodes hold one session, some several (their deviations summed first)
        units.append((total, float(count), f"ep{i if i % 3 else i // 7}"))
    seen = set()
    for _ in range(20):
        rng.shuffle(units)
        for macro in (True, False):
            u = stats.headline_interval([(s, c) for s, c, _ in units], binary=binary,
                                        macro=macro, clusters=[k for _, _, k in units])
            seen.add((macro, repr(u)))
    assert len(seen) == 2
    plain = [sum(s for s, _, _ in units)]
    for _ in range(20):
        rng.shuffle(units)
        plain.append(sum(s for s, _, _ in units))
    assert binary or len(set(plain)) > 1  # a float sum would have changed a digit


def test_the_note_asks_each_kind_only_for_runs_not_yet_found(tmp_path: Path) -> None:
    """A run needs one judged item to be named: a run with triggers is not looked for in the
    checklists and triples (a join of 200,000 and 365,000 rows on 1 M turns), and a run found
    only by its checklist, only by its triples, or by nothing is named as `judge_labels`
    names it."""
    import importlib
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    synthetic = importlib.import_module("synthetic_store")
    db = tmp_path / "bench.duckdb"
    synthetic.generate(db, 3000)
    con = duckdb.connect(str(db))
    try:  # synth-03 keeps only checklists, synth-04 only triples, synth-05 nothing judged
        con.execute("DELETE FROM triggers WHERE run_id IN ('synth-03', 'synth-04', 'synth-05')")
        con.execute("DELETE FROM checklist_results WHERE run_id IN ('synth-04', 'synth-05')")
        con.execute("DELETE FROM triples WHERE run_id = 'synth-05'")
    finally:
        con.close()
    sqls: list[str] = []

    with open_store(db) as con:
        runs = select_runs(con, ["all"])
        expected = [r[0] for r in con.execute("""SELECT DISTINCT run_id FROM judge_labels
            WHERE judge <> 'rules' AND kind IN ('trigger', 'checklist', 'triple')
              AND source_run NOT IN (SELECT run_id FROM human_ratings) ORDER BY run_id""")
            .fetchall()]
        note = unvalidated_note(ReportContext(_Logged(con, sqls), runs))
    assert expected == ["synth-03", "synth-04"]
    assert note is not None
    assert re.findall(r"(synth-\d\d) \(judge", note) == expected
    # triggers for every candidate, checklists for synth-03/04/05, triples for synth-04/05
    asked = [q for q in sqls if "DISTINCT run_id FROM" in q]
    assert len(asked) == 3
    assert "FROM triggers" in asked[0] and "'synth-03', 'synth-04', 'synth-05'" in asked[0]
    assert "FROM checklist_results" in asked[1] and "'synth-03', 'synth-04', 'synth-05'" in asked[1]
    assert "FROM triples" in asked[2] and "IN ('synth-04', 'synth-05')" in asked[2]


def test_the_run_alone_table_finds_every_spelling_of_the_context(tmp_path: Path) -> None:
    """The summary searches `extra`'s text for `alone` or a `\\u` escape before the view
    parses it: every session whose context is "alone", however the JSON spells it, is listed,
    and no other."""
    db = tmp_path / "bench.duckdb"
    store = Store(db)
    extras = {"plain": '{"context": "alone"}', "escaped": '{"context": "\\u0061lone"}',
              "key": '{"\\u0063ontext": "alone", "x": 1}', "mixed": '{"context": "al\\u006Fne"}',
              "other": '{"note": "alone", "context": "full"}', "case": '{"context": "Alone"}',
              "none": None, "nested": '{"context": {"alone": true}}'}
    try:
        _run(store, "r", "judge-x")
        for i, name in enumerate(extras):
            store.write_now(SessionRows("r", f"s{i}", 0, {
                "run_id": "r", "session_id": f"s{i}", "repeat": 0, "fingerprint": "f",
                "name": name, "protocol": "trigger_rubric", "agent": "a", "status": "finished",
                "judge_errors": 0}, {}))
    finally:
        store.close()
    con = duckdb.connect(str(db))
    try:
        for i, text in enumerate(extras.values()):
            con.execute("UPDATE sessions SET extra = ? WHERE session_id = ?", [text, f"s{i}"])
    finally:
        con.close()
    (res,) = build_reports(ReportOptions(db=db, names=["summary"], runs=["all"]))
    (alone,) = [t for t in res.tables if t.title.startswith("Run alone")]
    with open_store(db) as con:
        expected = [r[0] for r in con.execute(
            "SELECT name FROM alone_results ORDER BY name").fetchall()]
    assert expected == ["escaped", "key", "mixed", "plain"]
    assert sorted(row[1] for row in alone.rows) == expected


def test_the_summary_reads_the_sessions_once_for_each_figure(db: Path) -> None:
    """Issue 31 (the summary ≤ 0.5 s on 1 M turns): the run labels come from the run query's
    own pass over the sessions, each headline row's session counts and left-out errors from
    one pass, the headline means from one aggregation keyed by number (no UNPIVOT names)."""
    sqls: list[str] = []

    with open_store(db) as con:
        summary(ReportContext(_Logged(con, sqls), select_runs(con, ["all"])))
    assert len([q for q in sqls if "LEFT JOIN sessions s USING (run_id)" in q]) == 1
    # the headline's counts (scored and left out, one pass) and its means
    assert len([q for q in sqls if "FROM session_results" in q]) == 2
    assert not [q for q in sqls if "UNPIVOT" in q or "SELECT *, " in q]
    assert len([q for q in sqls if "GROUPING SETS" in q]) == 2  # the means, the triggers
    # the runs' protocols, asked by the simulator note and the plug-in tables: once
    assert len([q for q in sqls if "SELECT DISTINCT protocol" in q]) == 1


def test_no_statement_of_the_summary_binds_a_parameter(db: Path) -> None:
    """DuckDB tries to import pandas (twice, failing here) for each bound parameter: the
    origins and comparability notes every report carries bound each run id (42 failed
    imports, ~5 ms a report for 7 runs); the ids are SQL literals instead."""
    from benchpack.reports.api import _build

    bound: list[tuple[str, Any]] = []

    class Logged:
        def __init__(self, con: Any) -> None:
            self._con = con

        def execute(self, sql: str, *args: Any) -> Any:
            if args and args[0]:
                bound.append((" ".join(str(sql).split())[:80], args[0]))
            return self._con.execute(sql, *args)

    with open_store(db) as con:
        runs = select_runs(con, ["all"])
        (res,) = _build(Logged(con), runs, ReportOptions(db=db, names=["summary"], runs=["all"]))
    assert res.tables and not bound


def test_session_results_tests_the_context_only_where_a_session_may_be_alone(
        db: Path, tmp_path: Path) -> None:
    """`session_results` parses each session's `extra` for the context `alone` in every
    statement; a store without `alone` or a `\\u` escape in any `extra` has no such session,
    so its TEMP views drop the test (the same rows), while views written into a store keep it
    and a store with one such session keeps it."""
    from benchpack.reports.views import install_views

    def view_sql(con: Any, name: str) -> str:
        return str(con.execute("SELECT sql FROM duckdb_views() WHERE view_name = ?",
                               [name]).fetchall()[0][0])

    with open_store(db) as con:
        assert "json_extract" not in view_sql(con, "session_results")
        fast = con.execute("SELECT * FROM session_results ORDER BY ALL").fetchall()
        install_views(con, only=("session_results",))  # as bench view installs them
        assert "json_extract" in view_sql(con, "session_results")
        assert con.execute("SELECT * FROM session_results ORDER BY ALL").fetchall() == fast
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(db.read_bytes())
    con = duckdb.connect(str(copy))
    try:
        assert install_views(con, temporary=False)
        assert "json_extract" in view_sql(con, "session_results")
        con.execute("""UPDATE sessions SET extra = '{"context": "\\u0061lone"}'
            WHERE run_id = 'judged'""")
    finally:
        con.close()
    with open_store(copy) as con:
        assert "json_extract" in view_sql(con, "session_results")
        runs = [r[0] for r in con.execute(
            "SELECT DISTINCT run_id FROM session_results ORDER BY 1").fetchall()]
        assert "judged" not in runs and runs
        assert [r[0] for r in con.execute("SELECT run_id FROM alone_results").fetchall()] \
            == ["judged"]
