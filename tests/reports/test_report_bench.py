"""`benchmarks/report_bench.py` at a tiny scale (so the benchmark cannot rot), and the SQL
aggregation behind the reports checked against a Python reference on the store it generates.
Nothing here is timed."""

from __future__ import annotations

import csv
import importlib
import json
import math
import shutil
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import duckdb
import pytest

from benchpack.reports import agreement, builtin, stats
from benchpack.reports.access import open_store, select_runs
from benchpack.reports.api import ReportOptions, build_reports
from benchpack.reports.builtin import ReportContext
from benchpack.reports.model import Estimate
from benchpack.reports.protocols import trigger_rubric
from benchpack.reports.ratings import import_ratings
from benchpack.reports.registry import default_reports
from benchpack.reports.render import render
from benchpack.runtime.rejudge import AGENT_SIDE, default_run_id
from benchpack.runtime.store import connect
from conftest import benchmark_script

ROOT = Path(__file__).resolve().parents[2]
TURNS = 3000


def _load_bench() -> ModuleType:
    # the benchmark imports its store generator as a script beside it would
    sys.path.insert(0, str(ROOT / "benchmarks"))
    return benchmark_script("report_bench")


bench = _load_bench()
store = importlib.import_module("synthetic_store")  # the synthetic store's parameters


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("synthetic") / "bench.duckdb"
    store.generate(path, TURNS)
    return path


def _one(con: Any, sql: str) -> Any:
    return con.execute(sql).fetchall()[0][0]


# --------------------------------------------------------------------------- the generator


def test_generator_writes_exact_turns_and_consistent_child_tables(db: Path) -> None:
    con = duckdb.connect(str(db), read_only=True)
    try:
        counts = store.table_counts(con)
        assert counts["turns"] == TURNS  # rejudges' copies of the dialogues included
        runs = store.RUNS + len(store.REJUDGED)
        assert counts["runs"] == runs
        # at least one of each of the 20 plan slots per run and repeat
        assert counts["sessions"] == 20 * runs * store.REPEATS
        assert 2.0 <= counts["messages"] / TURNS <= 3.5
        for table in ("tool_calls", "intent_status", "checklist_results", "llm_calls",
                      "stage_events", "triples", "triple_support", "triggers", "intent_checks",
                      "human_ratings"):
            assert counts[table] > 0, table
        protocols = {r[0] for r in con.execute(
            "SELECT DISTINCT protocol FROM sessions WHERE status = 'finished'").fetchall()}
        assert protocols == {"intent_tracking", "staged_disclosure", "trigger_rubric",
                             "verified_outcome"}
        # session columns agree with their child rows
        assert _one(con, "SELECT sum(turns) FROM sessions") == TURNS
        assert _one(con, "SELECT sum(tool_calls) FROM sessions") == counts["tool_calls"]
        assert _one(con, "SELECT sum(intents) FROM sessions") == counts["intent_status"]
        assert _one(con, "SELECT sum(triggers) FROM sessions") == counts["triggers"]
        assert _one(con, """SELECT count(*) FROM sessions s JOIN (SELECT run_id, session_id,
            repeat, count(*) FILTER (WHERE status IN ('completed', 'inferred')) / count(*) AS p
            FROM intent_status GROUP BY ALL) i USING (run_id, session_id, repeat)
            WHERE abs(s.proc - i.p) > 1e-12""") == 0
        # ablation variants point at a finished base session of the same run and repeat
        assert _one(con, "SELECT count(*) FROM sessions WHERE ablation IS NOT NULL") > 0
        assert _one(con, """SELECT count(*) FROM sessions v LEFT JOIN sessions b
            ON b.run_id = v.run_id AND b.repeat = v.repeat AND b.session_id = v.base_session
            WHERE v.ablation IS NOT NULL AND b.session_id IS NULL""") == 0
    finally:
        con.close()
    with pytest.raises(FileExistsError):
        store.generate(db, TURNS)


def _differ(con: Any, table: str, a: str, b: str, where: str = "true") -> int:
    """Rows of `table` in run `a` and not in run `b`, or the other way (run id aside)."""
    def rows(x: str, y: str) -> str:
        return (f"SELECT * EXCLUDE (run_id) FROM {table} WHERE run_id = '{x}' AND {where} "
                f"EXCEPT ALL SELECT * EXCLUDE (run_id) FROM {table} WHERE run_id = '{y}' "
                f"AND {where}")
    return int(_one(con, f"SELECT count(*) FROM ({rows(a, b)} UNION ALL {rows(b, a)})"))


def test_rejudges_are_shaped_as_bench_rejudge_writes_them(db: Path) -> None:
    with open_store(db) as con:
        lineage = con.execute("SELECT run_id, judge, rejudge_of, source_run FROM run_lineage "
                              "WHERE rejudge_of IS NOT NULL ORDER BY run_id").fetchall()
        assert lineage == [(default_run_id(store.run_id(r), store.REJUDGE_JUDGE),
                            store.REJUDGE_JUDGE, store.run_id(r), store.run_id(r))
                           for r in store.REJUDGED]
        for new, _, src, _ in lineage:
            # what the agent and the simulated user did is copied row for row
            for table in AGENT_SIDE:
                assert _differ(con, table, new, src) == 0, table
            assert _differ(con, "llm_calls", new, src, "role <> 'judge'") == 0
            assert _differ(con, "checklist_results", new, src, "grader = 'rule'") == 0
            assert _differ(con, "triples", new, src, "side = 'predicted'") > 0  # re-judged
            assert _one(con, f"""SELECT count(*) FROM sessions n JOIN sessions o
                USING (session_id, repeat, status, turns, tool_calls, fingerprint, agent)
                WHERE n.run_id = '{new}' AND o.run_id = '{src}'""") == 20 * store.REPEATS
            # intent statuses are not re-decided: left out, PROC unknown; the audit instead
            assert _one(con, f"SELECT count(*) FROM intent_status WHERE run_id = '{new}'") == 0
            assert _one(con, f"SELECT count(intents) + count(proc) FROM sessions "
                             f"WHERE run_id = '{new}'") == 0
            # the audit's `original`: a completion check is YES where the original completed
            # that intent at that turn, a clarification check where it inferred it
            assert _one(con, f"""SELECT count(*) FROM intent_checks c
                JOIN intent_status i ON i.run_id = '{src}' AND i.session_id = c.session_id
                    AND i.repeat = c.repeat AND i.intent_id = c.intent_id
                WHERE c.run_id = '{new}' AND c.original <> (i.turn = c.turn AND i.status =
                    CASE c.kind WHEN 'completion' THEN 'completed' ELSE 'inferred' END)""") == 0
            assert _one(con, f"""SELECT count(*) FROM intent_checks c
                JOIN intent_status i ON i.run_id = '{src}' AND i.session_id = c.session_id
                    AND i.repeat = c.repeat AND i.intent_id = c.intent_id
                WHERE c.run_id = '{new}' AND i.status <> 'unresolved' AND c.turn > i.turn""") == 0
            # the session figures follow the re-decided rows
            assert _one(con, f"""SELECT count(*) FROM sessions s JOIN (
                SELECT session_id, repeat, avg(score) AS comp FROM checklist_results
                WHERE run_id = '{new}' GROUP BY ALL) c USING (session_id, repeat)
                WHERE s.run_id = '{new}' AND s.status = 'finished'
                AND abs(s.comp - c.comp) > 1e-12""") == 0
            assert _one(con, f"""SELECT count(*) FROM sessions s JOIN (
                SELECT session_id, repeat, avg(score) AS score FROM triggers
                WHERE run_id = '{new}' GROUP BY ALL) t USING (session_id, repeat)
                WHERE s.run_id = '{new}' AND abs(s.trigger_score - t.score) > 1e-12""") == 0
        # the new judge disagrees with the original now and then, never always
        for kind, exact in con.execute("""SELECT kind, avg((label_a = label_b)::INTEGER)
                FROM judge_pairs WHERE run_a < run_b GROUP BY kind""").fetchall():
            assert 0.6 < exact < 1.0, kind


def test_human_ratings_import_as_bench_ratings_import_takes_them(db: Path,
                                                                tmp_path: Path) -> None:
    """Each source run's ratings, written out as a ratings file and imported again, pass the
    importer's checks and replace themselves one for one; consensus has ties."""
    copy = tmp_path / "bench.duckdb"
    shutil.copy(db, copy)
    con = connect(copy)
    try:
        for r in store.REJUDGED:
            rows = con.execute("SELECT session_id, repeat, kind, item_id, rater, label FROM "
                               "human_ratings WHERE run_id = ?", [store.run_id(r)]).fetchall()
            path = tmp_path / f"ratings-{r}.csv"
            with path.open("w", newline="", encoding="utf-8") as f:
                out = csv.writer(f)
                out.writerow(["session", "repeat", "kind", "item", "rater", "label"])
                out.writerows(rows)
            # rated through the rejudge: stored under the run whose dialogues it judged
            result = import_ratings(con, path, store.rejudge_id(r))
            assert (result.run_id, result.imported, result.replaced) == (
                store.run_id(r), len(rows), len(rows))
            assert result.raters <= store.RATERS
    finally:
        con.close()
    with open_store(db) as ro:
        raters = {r[0] for r in ro.execute("SELECT DISTINCT raters FROM human_consensus")
                  .fetchall()}
        assert raters == {2, 3, 4}
        assert _one(ro, "SELECT count(*) FROM human_consensus WHERE tie") > 0


def test_every_report_builds_and_renders_over_the_synthetic_store(db: Path) -> None:
    names = default_reports().names()
    results = build_reports(ReportOptions(db=db, names=names, runs=["all"]))
    results += build_reports(ReportOptions(db=db, names=["agreement"], runs=["all"],
                                           humans=True))
    assert [r.name for r in results] == [*names, "agreement"]
    for res in results:
        assert res.tables and res.tables[0].rows, res.name
        for fmt in bench.formats():
            assert render(res, fmt), (res.name, fmt)
        json.loads(render(res, "json"))
    by_name = {r.name: r for r in results[:-1]}
    # seven runs: the first agent's runs (two, and a rejudge) and the second's (one, and a
    # rejudge) labelled apart by run id
    agents = [row[0] for row in by_name["summary"].tables[0].rows]
    assert len(set(agents)) == store.RUNS + len(store.REJUDGED)
    assert sum("· synth-" in a for a in agents) == 5
    # judge against judge: each rejudge with its original, and the two agents' ranking
    pairs, stability = by_name["agreement"].tables[:-1], by_name["agreement"].tables[-1]
    assert [t.title for t in pairs] == [
        f"{store.JUDGE} ({store.run_id(r)}) vs {store.REJUDGE_JUDGE} ({store.rejudge_id(r)}) "
        f"on the dialogues of {store.run_id(r)}" for r in store.REJUDGED]
    assert {row[0] for row in pairs[0].rows} == {"trigger", "checklist", "triple",
                                                  "intent_completion", "intent_clarification"}
    assert stability.rows and all(row[2] == 2 for row in stability.rows)
    # against humans: every run that judged the rated dialogues, and its raters
    humans = results[-1].tables
    # per run, its consensus and raters tables; then one bias-corrected (PPI) table for all
    assert len(humans) == 4 * len(store.REJUDGED) + 1
    assert humans[-1].title.startswith("Bias-corrected headline")
    assert all(t.rows for t in humans)


def test_no_report_scans_transcripts_for_leaks(db: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """What the summary's simulator note needs from messages is decided at run time
    (`sessions.extra.intent_leaks`): over a store that records it, no report calls the word
    scanner (12.7 s of a 1 M-turn summary when it did), and the stored counts equal what a
    scan of the transcripts finds (the store without them)."""
    from benchpack.reports import simulator

    con = duckdb.connect(str(db), read_only=True)
    missing = _one(con, """SELECT count(*) FROM sessions s WHERE protocol = 'intent_tracking'
        AND EXISTS (SELECT 1 FROM intent_status i WHERE i.run_id = s.run_id
                    AND i.session_id = s.session_id AND i.repeat = s.repeat)
        AND json_extract(extra, '$.intent_leaks') IS NULL""")
    con.close()
    assert missing == 0

    from benchpack.specs import text  # the one leak matcher (intent_tracking's scan)

    class Scan(text.LeakMatcher):
        def leaks(self, secret: str, message: str) -> bool:
            raise AssertionError("a report rescanned a transcript for leaks")

    with monkeypatch.context() as m:
        m.setattr(text, "LeakMatcher", Scan)
        for res in build_reports(ReportOptions(db=db, names=default_reports().names(),
                                               runs=["all"])):
            assert res.tables, res.name
        with open_store(db) as ro:
            stored = simulator.simulator_rows(ReportContext(ro, select_runs(ro, ["all"])))
    bare = tmp_path / "bare.duckdb"
    shutil.copy(db, bare)
    con = connect(bare)
    con.execute("UPDATE sessions SET extra = json_object('synthetic', true) "
                "WHERE protocol = 'intent_tracking' AND extra IS NOT NULL")
    con.close()
    with open_store(bare) as ro:
        scanned = simulator.simulator_rows(ReportContext(ro, select_runs(ro, ["all"])))
    assert stored == scanned
    assert sum(r["hidden_items"] for r in stored) > 0


def test_benchmark_main_runs_end_to_end(db: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["report_bench.py", "--db", str(db), "--repeat", "1"])
    assert bench.main() == 0
    out = capsys.readouterr().out
    assert f"reusing {db}" in out and "DuckDB" in out
    for name in [*default_reports().names(), "agreement --humans", "cost --by name"]:
        assert any(line.startswith(f"{name} ") and line.rstrip().endswith(("×", "✗"))
                   for line in out.splitlines()), name
    assert "slowest report ÷ target" in out and "bench export --format parquet" in out
    assert all(label in out for label in bench.QUERIES)


def test_cost_ledger_is_short_and_its_parts_add_up(db: Path) -> None:
    """`bench report cost` on the synthetic store: the role and model rows and each run's
    total (33,000 per-session rows on 1 M turns before, ~143,000 terminal lines); `--by name`
    fetches each run's `--limit` costliest sessions and counts the rest; with `--limit 0`
    every session, whose ledgers add up to the run's total and to the calls in the store."""
    (res,) = build_reports(ReportOptions(db=db, names=["cost"], runs=["all"]))
    (roles,) = res.tables
    runs = sorted({row[1] for row in roles.rows})
    assert len(roles.rows) <= 5 * len(runs) and len(render(res, "table").splitlines()) < 200
    (limited,) = build_reports(ReportOptions(db=db, names=["cost"], runs=["all"], by="name",
                                             limit=3))
    by_name = limited.tables[1]
    everything = build_reports(ReportOptions(db=db, names=["cost"], runs=["all"], by="name",
                                             limit=0))[0].tables[1]
    assert len(by_name.rows) == 3 * len(runs) and everything.more == 0
    assert by_name.more == len(everything.rows) - len(by_name.rows) > 0
    assert f"{len(by_name.rows):,} of {len(everything.rows):,} rows shown" in by_name.notes[0]
    keys = [c.key for c in everything.columns]
    totals = {row[1]: dict(zip([c.key for c in roles.columns], row, strict=True))
              for row in roles.rows if row[2] == "total"}
    con = duckdb.connect(str(db), read_only=True)
    try:
        calls = dict(con.execute("""SELECT run_id, count(*) FROM llm_calls
            WHERE coalesce(purpose, '') <> 'imported' GROUP BY run_id""").fetchall())
    finally:
        con.close()
    for run in runs:
        rows = [dict(zip(keys, r, strict=True)) for r in everything.rows if r[1] == run]
        assert [r["group"] for r in rows[:3]] == [r[2] for r in by_name.rows if r[1] == run]
        assert [r["priced_cost"] for r in rows] == sorted((r["priced_cost"] for r in rows),
                                                          reverse=True)
        for part in ("calls", "cache_hits", "errors", "prompt_tokens", "completion_tokens",
                     "unpriced_calls"):
            assert sum(r[part] for r in rows) == totals[run][part], (run, part)
        assert totals[run]["calls"] == calls[run]
        assert math.fsum(r["priced_cost"] for r in rows) == pytest.approx(
            totals[run]["priced_cost"], rel=1e-12)


# --------------------------------------------------------------------------- SQL vs Python


OBS = """SELECT run_id, episode, session_id, repeat, coalesce(proc_group, proc), comp
    FROM session_results WHERE run_id IN $runs AND protocol = 'intent_tracking'
    AND status = 'finished' AND ablation IS NULL"""


def _reference(con: Any, runs: list[str], metric: int
               ) -> dict[str, tuple[list[list[float]], list[str], list[float]]]:
    """Per run: the units' values (units in id order), their episodes and the per-repeat
    means, in Python."""
    rows = con.execute(OBS.replace("$runs", "(" + ", ".join(f"'{r}'" for r in runs) + ")")
                       ).fetchall()
    units: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    episodes: dict[str, str] = {}
    repeats: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run, episode, unit, repeat, *values in rows:
        if values[metric] is not None:
            units[run][unit].append(values[metric])
            episodes[unit] = episode
            repeats[run][repeat].append(values[metric])
    return {run: ([units[run][u] for u in sorted(units[run])],
                  [episodes[u] for u in sorted(units[run])],
                  [math.fsum(v) / len(v) for _, v in sorted(repeats[run].items())])
            for run in units}


def test_sql_estimates_match_a_python_reference(db: Path) -> None:
    """The headline interval from SQL's per-unit means and counts = `headline_interval` over
    the units' values in Python (sessions clustered by episode, PROC and COMP not binary:
    t)."""
    with open_store(db) as con:
        runs = select_runs(con, ["all"])
        got = ReportContext(con, runs).estimates(OBS, 1, 2)
        for metric in (0, 1):
            for run, (units, episodes, repeat_means) in _reference(con, runs, metric).items():
                est: Estimate = got[(run,)][metric]
                ref = stats.headline_interval([(math.fsum(u), len(u)) for u in units],
                                              binary=all(x in (0, 1) for u in units for x in u),
                                              clusters=episodes)
                assert (est.value, est.low, est.high, est.se) == pytest.approx(
                    (ref.estimate, ref.low, ref.high, ref.se), abs=1e-12)
                assert est.clusters == len(set(episodes)) > 1
                assert est.n == sum(len(u) for u in units)
                assert est.std == pytest.approx(statistics.stdev(repeat_means), abs=1e-12)


def test_trigger_rates_from_counts_match_the_outcomes(db: Path) -> None:
    """The trigger pass rate's interval is clustered by episode (its sessions' triggers and
    repeats together), from per-session counts summed in SQL: Clopper–Pearson over n /
    design effect."""
    with open_store(db) as con:
        runs = select_runs(con, ["all"])
        per_session = con.execute("""SELECT count(*) FILTER (WHERE label = 'PASS'), count(*),
                any_value(episode)
            FROM trigger_results WHERE run_id = ? AND label IN ('PASS', 'PARTIAL', 'FAIL')
            GROUP BY session_id ORDER BY session_id""", [runs[0]]).fetchall()
        totals = [(float(p), float(n)) for p, n, _ in per_session]
        episodes = [e for *_, e in per_session]
        expected = stats.headline_interval(totals, binary=True, macro=False, clusters=episodes)
        res = trigger_rubric.triggers(ReportContext(con, runs))
        row = next(r for r in res.tables[0].rows if r[1] == "overall")
        assert row[2] == sum(n for _, n in totals)
        assert (row[3].value, row[3].low, row[3].high) == pytest.approx(
            (expected.estimate, expected.low, expected.high), abs=1e-12)
        assert row[3].clusters == len(set(episodes)) and row[3].method == "clopper-pearson"


def test_judge_errors_lists_a_capped_number_of_sessions(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builtin, "AFFECTED_SESSIONS_SHOWN", 3)
    with open_store(db) as con:
        runs = select_runs(con, ["all"])
        affected = _one(con, """SELECT count(*) FROM sessions WHERE judge_errors > 0
            OR grader_errors > 0 OR status = 'error'""")
        table = builtin.judge_errors(ReportContext(con, runs)).tables[1]
    assert affected > 3 and len(table.rows) == 3
    assert f"The first 3 of {affected:,} affected sessions" in table.notes[-1]


def test_agreement_counted_in_sql_matches_a_python_reference(db: Path) -> None:
    """The agreement report counts confusion cells and Krippendorff coincidences in SQL; here
    they are rebuilt item by item (and unit by unit) from the views, as the report did first."""
    def cells(table: Any) -> dict[tuple[str, str], dict[str, Any]]:
        return {(r[0], r[1]): {c.key: v for c, v in zip(table.columns, r, strict=True)}
                for r in table.rows}

    with open_store(db) as con:
        ctx = ReportContext(con, select_runs(con, ["all"]))
        judges = agreement.agreement_report(ctx)
        ctx.humans = True
        humans = agreement.agreement_report(ctx)
        for r in store.REJUDGED:
            a, b = store.run_id(r), store.rejudge_id(r)
            got = cells(next(t for t in judges.tables if t.title.endswith(f"of {a}")))
            rows = con.execute("SELECT kind, type, label_a, label_b FROM judge_pairs "
                               "WHERE run_a = ? AND run_b = ?", [a, b]).fetchall()
            for (kind, typ), row in got.items():
                pairs = [(x, y) for k, t, x, y in rows if k == kind and typ in ("all", t)]
                known = [(x, y) for x, y in pairs if x is not None and y is not None]
                scale = agreement.scale_of(kind)
                matrix = stats.confusion_matrix(known, scale)
                assert (row["items"], row["unjudged"]) == (len(known), len(pairs) - len(known))
                assert row["kappa_quadratic"].value == stats.cohen_kappa(matrix, "quadratic")
                assert row["alpha"].value == pytest.approx(stats.krippendorff_alpha(
                    [list(p) for p in known], "ordinal", categories=list(scale)), abs=1e-12)
            for run in (a, b):
                (table,) = [t for t in humans.tables if t.title.startswith("Human consensus")
                            and t.title.endswith(f"({run})")]
                items = con.execute("SELECT kind, type, session_id, repeat, item_id, tie, "
                                    "judge_label FROM human_pairs WHERE run_id = ?",
                                    [run]).fetchall()
                ratings: dict[tuple[Any, ...], list[str]] = defaultdict(list)
                for *key, label in con.execute(
                        "SELECT kind, session_id, repeat, item_id, label FROM human_ratings "
                        "WHERE run_id = ?", [a]).fetchall():
                    ratings[tuple(key)].append(label)
                for (kind, typ), row in cells(table).items():
                    mine = [i for i in items if i[0] == kind and typ in ("all", i[1])]
                    units = [ratings[(i[0], i[2], i[3], i[4])] for i in mine]
                    labels = list(agreement.scale_of(kind))
                    assert row["ratings"] == sum(len(u) for u in units)
                    assert row["ties"] == sum(1 for i in mine if i[5])
                    assert row["alpha_humans"].value == pytest.approx(
                        stats.krippendorff_alpha(units, "ordinal", categories=labels), abs=1e-12)
                    assert row["alpha_all"].value == pytest.approx(stats.krippendorff_alpha(
                        [[*u, i[6]] for u, i in zip(units, mine, strict=True)
                         if i[6] is not None], "ordinal", categories=labels), abs=1e-12)


class _Counting:
    """A DuckDB connection that records how many rows each statement handed to Python."""

    def __init__(self, con: Any) -> None:
        self.con = con
        self.fetched: list[tuple[str, int]] = []

    def execute(self, sql: str, params: Any = None) -> Any:
        result = self.con.execute(sql, params) if params is not None else self.con.execute(sql)
        return _CountingResult(result, sql, self.fetched)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.con, name)


class _CountingResult:
    def __init__(self, result: Any, sql: str, fetched: list[tuple[str, int]]) -> None:
        self.result, self.sql, self.fetched = result, sql, fetched

    def fetchall(self) -> list[Any]:
        rows = self.result.fetchall()
        self.fetched.append((self.sql, len(rows)))
        return rows

    def fetchone(self) -> Any:
        row = self.result.fetchone()
        self.fetched.append((self.sql, int(row is not None)))
        return row

    def fetchnumpy(self) -> dict[str, Any]:
        columns = self.result.fetchnumpy()
        self.fetched.append((self.sql, len(next(iter(columns.values()))) if columns else 0))
        return columns

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the report read its rows another way ({name}): count them too")


def test_agreement_fetches_rows_per_session_not_per_item(db: Path) -> None:
    """What the judge-against-judge report hands to Python is counted in SQL per session and
    label pair (κ's clusters, α's coincidences) and per session (rank stability's figures),
    never per judged item: on 1 M turns each judge pair holds 187,000 items in 29,000 such
    rows, and the report's cost must not grow with the items. Checked by counting the rows
    every statement returns: from `judge_pairs` at most one row a (kind, type, session, label
    pair) cell, a quarter of the items here; elsewhere a bound in sessions."""
    with open_store(db) as con:
        counting = _Counting(con)
        ctx = ReportContext(counting, select_runs(con, ["all"]))
        result = agreement.agreement_report(ctx)
        assert any(t.rows for t in result.tables)
        runs = len(ctx.runs)
        pairs = [(store.run_id(r), store.rejudge_id(r)) for r in store.REJUDGED]
        items = cells = 0
        for a, b in pairs:
            items += _one(con, f"SELECT count(*) FROM judge_pairs WHERE run_a = '{a}' "
                               f"AND run_b = '{b}'")
            # the (kind, type, session, label pair) cells the items fall in
            cells += _one(con, f"SELECT count(*) FROM (SELECT DISTINCT kind, type, session_id, "
                               f"label_a, label_b FROM judge_pairs WHERE run_a = '{a}' "
                               f"AND run_b = '{b}')")
        # rank stability: the figures per run, and per (run, session) and trigger type
        plan = _one(con, "SELECT count(DISTINCT session_id) FROM sessions")
    from_pairs = sum(n for sql, n in counting.fetched if "judge_pairs" in sql)
    others = [(sql, n) for sql, n in counting.fetched if "judge_pairs" not in sql]
    assert from_pairs <= cells < items / 4, (from_pairs, cells, items)
    assert sum(n for _, n in others) <= 2 * len(pairs) * plan * 5 + 20 * runs, others


def test_agreement_against_humans_fetches_no_item_rows(db: Path) -> None:
    """`--humans` hands Python its counts per session (κ's clusters, α's coincidences, the
    bias-corrected headline's sums), per rater and per group, never a row per judged or rated
    item: every statement returns fewer rows than the items it summarises here (the PPI
    headline fetched every judged trigger and checklist item, 30,000 a run on 1 M turns)."""
    with open_store(db) as con:
        counting = _Counting(con)
        ctx = ReportContext(counting, select_runs(con, ["all"]))
        ctx.humans = True
        result = agreement.agreement_report(ctx)
        assert any(t.title.startswith("Bias-corrected") for t in result.tables)
        judged = _one(con, "SELECT count(*) FROM judge_labels j JOIN sessions s USING "
                           "(run_id, session_id, repeat) WHERE s.ablation IS NULL AND "
                           "j.label IS NOT NULL AND j.kind IN ('trigger', 'checklist') AND "
                           "j.source_run IN (SELECT run_id FROM human_ratings)")
        sessions = _one(con, "SELECT count(*) FROM (SELECT DISTINCT run_id, session_id "
                             "FROM sessions)")
    ppi = [n for sql, n in counting.fetched if "count(*) AS judged" in sql]
    assert ppi and ppi[0] <= 2 * sessions < judged, (ppi, sessions, judged)
