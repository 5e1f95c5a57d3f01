"""What the agreement report reads, checked against the views it stands for: the judge pairs'
counts (`agreement_pairs.PAIR_CELLS`, joined kind by kind on the tables' own keys, and
`PAIR_CELLS_ONE_AUDIT` where a pair's intent-check audit is one run's) against `judge_pairs`,
on the synthetic benchmark store, on a copy with a second rejudge of the same dialogues (two
rejudges paired with each other, the original run's intent checks listed once by both), a
SKIPPED trigger and judge errors, and on copies whose one audit checks a key twice or holds
rows with a NULL key part. And what it fetches: rows per session and group, never per item,
in one statement a judge pair. Nothing here is timed."""

from __future__ import annotations

import shutil
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import duckdb
import pytest

from benchpack.reports import agreement, agreement_pairs
from benchpack.reports.access import open_store, select_runs
from benchpack.reports.builtin import ReportContext

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import synthetic_store as store  # noqa: E402  (the benchmark's generator, beside it)

SECOND = f"{store.run_id(0)}+rejudge-second"
"""A second rejudge of run 0's dialogues, added to a copy of the store."""


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("agreement-reads") / "bench.duckdb"
    store.generate(path, 3000)
    return path


@pytest.fixture(scope="module")
def two_rejudges(db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store with `SECOND`: run 0's rejudge copied under another id, some of its labels
    decided otherwise, a few of its audit's `original` labels differing from the first
    rejudge's (so the original run lists both), a trigger SKIPPED and judge errors, triples
    unmatched-unknown without an error and NaN checklist scores."""
    path = tmp_path_factory.mktemp("two-rejudges") / "bench.duckdb"
    shutil.copy(db, path)
    first = store.rejudge_id(0)
    con = duckdb.connect(str(path))
    try:
        for table in ("runs", "sessions", "triggers", "checklist_results", "triples",
                      "intent_checks"):
            con.execute(f"INSERT INTO {table} SELECT * REPLACE ('{SECOND}' AS run_id) "
                        f"FROM {table} WHERE run_id = '{first}'")
        con.execute(f"""UPDATE triggers SET label = CASE hash(trigger_id, session_id) % 4
                WHEN 0 THEN 'PASS' WHEN 1 THEN NULL WHEN 2 THEN 'SKIPPED' ELSE 'FAIL' END
            WHERE run_id = '{SECOND}' AND hash(trigger_id, repeat) % 5 = 0""")
        # scored as a run scores them: no score for a judge error or a SKIPPED trigger
        con.execute(f"""UPDATE triggers SET score = CASE label WHEN 'PASS' THEN 1
                WHEN 'PARTIAL' THEN 0.5 WHEN 'FAIL' THEN 0 END WHERE run_id = '{SECOND}'""")
        con.execute(f"""UPDATE checklist_results SET score = CASE WHEN score >= 0.5 THEN 0
                ELSE NULL END WHERE run_id = '{SECOND}' AND hash(item_id, session_id) % 7 = 0""")
        con.execute(f"""UPDATE triples SET matched = NOT matched
            WHERE run_id = '{SECOND}' AND hash(idx, session_id) % 6 = 0""")
        # unknown without a recorded error, and a score no comparison orders (NaN)
        con.execute(f"""UPDATE triples SET matched = NULL
            WHERE run_id = '{SECOND}' AND hash(idx, session_id) % 17 = 1""")
        con.execute(f"""UPDATE checklist_results SET score = 'NaN'::DOUBLE
            WHERE run_id = '{SECOND}' AND hash(item_id, session_id) % 19 = 1""")
        con.execute(f"""UPDATE intent_checks SET decision = NOT decision
            WHERE run_id = '{SECOND}' AND hash(intent_id, session_id) % 4 = 0""")
        con.execute(f"""UPDATE intent_checks SET original = NOT original
            WHERE run_id = '{SECOND}' AND hash(intent_id, turn) % 5 = 0""")
    finally:
        con.close()
    return path


def _pairs_of(con: Any) -> list[tuple[str, str]]:
    lineage = con.execute("SELECT run_id, source_run FROM run_lineage").fetchall()
    return [(a, b) for a, sa in lineage for b, sb in lineage if a != b and sa == sb]


def _view_cells(con: Any, a: str, b: str) -> Counter[tuple[Any, ...]]:
    """PAIR_CELLS' rows rebuilt item by item from the `judge_pairs` view."""
    width = agreement.LABELS
    cells: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0] * (width * width + 2))
    for kind, typ, session, x, y in con.execute(
            "SELECT kind, type, session_id, label_a, label_b FROM judge_pairs "
            "WHERE run_a = ? AND run_b = ?", [a, b]).fetchall():
        scale = agreement.scale_of(kind)
        for group in ("all", *([typ] if kind == "trigger" and typ else [])):
            row = cells[(kind, group, session)]
            if x in scale and y in scale:
                row[scale.index(x) * width + scale.index(y)] += 1
            row[-2] += x is not None and y is not None
            row[-1] += 1
    return Counter((*key, *row) for key, row in cells.items())


def _facts(con: Any, pairs: list[tuple[str, str]]) -> tuple[dict[str, str], Any]:
    sources = dict(con.execute("SELECT run_id, source_run FROM run_lineage").fetchall())
    facts = {r: (n, k) for r, n, k in con.execute(
        agreement_pairs.audit_facts_sql(agreement_pairs.family(pairs, sources))).fetchall()}
    return sources, facts


@pytest.mark.parametrize("which", ["synthetic", "two rejudges"])
def test_pair_cells_are_the_judge_pairs_view_counted(which: str, db: Path,
                                                     two_rejudges: Path) -> None:
    """Both statements against the view, each run first: the general one for every pair, and
    the one the report asks (one run's audit, read as it is, for a run and its only rejudge
    in either order; never for the runs of dialogues re-judged twice, whose originals
    differ)."""
    with open_store(db if which == "synthetic" else two_rejudges) as con:
        pairs = _pairs_of(con)
        assert len(pairs) == (4 if which == "synthetic" else 8)
        sources, facts = _facts(con, pairs)
        short = 0
        for a, b in pairs:
            want = _view_cells(con, a, b)
            sql, params = agreement_pairs.pair_statement(a, b, sources, facts)
            short += sql is not agreement_pairs.PAIR_CELLS
            for statement, values in ((agreement_pairs.PAIR_CELLS, [a, b]), (sql, params)):
                got = Counter(con.execute(statement, values).fetchall())
                assert got == want, (a, b, statement is agreement_pairs.PAIR_CELLS)
            assert sum(r[-1] for r in got) > 100  # items of every kind were paired
            assert {r[0] for r in got} == {"trigger", "checklist", "triple",
                                           "intent_completion", "intent_clarification"}
    # with a second rejudge of run 0's dialogues, only run 1's pair (both ways) is short
    assert short == (4 if which == "synthetic" else 2)


def _one_audit_copy(db: Path, path: Path, change: str) -> tuple[str, str]:
    """A copy of `db` whose first rejudge's audit is changed by `change` (SQL over its rows,
    `$run`): the pair (original, rejudge)."""
    shutil.copy(db, path)
    run = store.rejudge_id(0)
    con = duckdb.connect(str(path))
    try:
        con.execute(change.replace("$run", f"'{run}'"))
    finally:
        con.close()
    return store.run_id(0), run


@pytest.mark.parametrize("case", ["a key checked twice", "NULL key parts"])
def test_one_audit_statement_only_where_it_is_the_view(case: str, db: Path,
                                                       tmp_path: Path) -> None:
    """A run and its only rejudge, whose audit checks a few keys twice with other originals
    (the view pairs each of those decisions with both originals: read row by row, it would
    miss two pairs a key), or holds rows with a NULL turn or intent (the view pairs them with
    nothing): the report's statement gives the view's counts either way — the general one for
    the first, the short one, leaving those rows out, for the second."""
    twice = """INSERT INTO intent_checks SELECT * REPLACE (NOT original AS original)
        FROM intent_checks WHERE run_id = $run AND hash(session_id, turn, intent_id) % 20 = 0"""
    nulls = """INSERT INTO intent_checks SELECT * REPLACE (NULL AS turn)
            FROM intent_checks WHERE run_id = $run AND hash(session_id, turn, intent_id) % 9 = 1;
        INSERT INTO intent_checks SELECT * REPLACE (NULL AS intent_id, NOT original AS original)
            FROM intent_checks WHERE run_id = $run AND hash(session_id, turn, intent_id) % 9 = 2"""
    a, b = _one_audit_copy(db, tmp_path / "bench.duckdb", twice if case == "a key checked twice"
                           else nulls)
    with open_store(tmp_path / "bench.duckdb") as con:
        sources, facts = _facts(con, [(a, b)])
        for x, y in ((a, b), (b, a)):
            want = _view_cells(con, x, y)
            sql, params = agreement_pairs.pair_statement(x, y, sources, facts)
            assert Counter(con.execute(sql, params).fetchall()) == want
            short = agreement_pairs.PAIR_CELLS_ONE_AUDIT[
                "original first" if x == a else "decision first"]
            as_rows = Counter(con.execute(short, [x, y, b]).fetchall())
            if case == "a key checked twice":
                assert sql is agreement_pairs.PAIR_CELLS
                assert as_rows != want  # the case the facts must catch is in the copy
            else:
                assert sql is short


def test_second_rejudge_exercises_what_the_view_must_agree_on(two_rejudges: Path) -> None:
    """The copy holds what the counts must get right: judge errors, a SKIPPED trigger (left
    out), and original labels the two rejudges record differently (the original run then
    lists the item twice, and the view pairs both)."""
    with open_store(two_rejudges) as con:
        a = store.run_id(0)
        duplicated = con.execute(
            "SELECT count(*) FROM (SELECT session_id, repeat, kind, item_id FROM judge_labels "
            "WHERE run_id = ? AND kind LIKE 'intent_%' GROUP BY ALL HAVING count(*) > 1)",
            [a]).fetchone()[0]
        assert duplicated > 0
        errors = con.execute("SELECT count(*) FROM judge_pairs WHERE run_a = ? AND run_b = ? "
                             "AND label_b IS NULL", [a, SECOND]).fetchone()[0]
        assert errors > 0


def test_judge_report_over_two_rejudges_pairs_all_three(two_rejudges: Path) -> None:
    with open_store(two_rejudges) as con:
        ctx = ReportContext(con, [store.run_id(0), store.rejudge_id(0), SECOND])
        result = agreement.agreement_report(ctx)
    titles = [t.title for t in result.tables]
    assert sum(" vs " in t for t in titles) == 3, titles  # a-first, a-second, first-second


class _Counting:
    """A connection recording how many rows each statement handed to Python."""

    def __init__(self, con: Any) -> None:
        self.con, self.fetched = con, []

    def execute(self, sql: str, params: Any = None) -> Any:
        result = self.con.execute(sql, params) if params is not None else self.con.execute(sql)
        fetched = self.fetched

        class Rows:
            def fetchall(self) -> list[Any]:
                rows = result.fetchall()
                fetched.append((sql, len(rows)))
                return rows

            def fetchone(self) -> Any:
                row = result.fetchone()
                fetched.append((sql, int(row is not None)))
                return row

            def fetchnumpy(self) -> dict[str, Any]:
                columns = result.fetchnumpy()
                fetched.append((sql, len(next(iter(columns.values()))) if columns else 0))
                return columns

        return Rows()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.con, name)


def test_judge_pairs_are_fetched_per_session_and_group(db: Path) -> None:
    """A judge pair's counts come to Python as one row per (kind, group, session) — at most
    sessions × (kinds + trigger types) — however many items and label pairs the sessions
    hold; here fewer than a row per four paired items."""
    with open_store(db) as con:
        counting = _Counting(con)
        ctx = ReportContext(counting, select_runs(con, ["all"]))
        agreement.agreement_report(ctx)
        sessions = con.execute("SELECT count(DISTINCT session_id) FROM sessions").fetchone()[0]
        items = con.execute("SELECT count(*) FROM judge_pairs WHERE run_a < run_b"
                            ).fetchone()[0]
    cells = (agreement_pairs.PAIR_CELLS, *agreement_pairs.PAIR_CELLS_ONE_AUDIT.values())
    fetched = [n for sql, n in counting.fetched if sql in cells]
    facts = [sql for sql, _ in counting.fetched if sql.startswith(
        agreement_pairs.AUDIT_FACTS.split("SELECT")[0])]
    assert len(fetched) == len(store.REJUDGED) and len(facts) == 1  # a statement a pair
    groups = len(agreement.KINDS) + len(agreement.TRIGGER_TYPES)
    assert all(n <= sessions * groups for n in fetched), (fetched, sessions)
    assert sum(fetched) < items / 4, (fetched, items)


def test_judge_groups_by_hand() -> None:
    """`PAIR_CELLS`-shaped rows (cells on a 3-wide grid, then known and all pairs) into
    matrices, judge errors and clusters: a session with no known pair on the scale is no
    cluster; a trigger type named `all` gives a session two rows of the `all` group, summed."""
    def row(kind: str, group: str, session: str, cells: dict[int, int], known: int,
            every: int) -> tuple[Any, ...]:
        return (kind, group, session, *[cells.get(i, 0) for i in range(9)], known, every)

    def columns(rows: list[tuple[Any, ...]]) -> dict[str, Any]:
        """The rows as `fetchnumpy` gives them."""
        import numpy as np

        names = ["kind", "grp", "session_id", *(f"x{i}" for i in range(9)), "known", "every"]
        return {n: np.array([r[i] for r in rows], dtype=object if i < 3 else np.int64)
                for i, n in enumerate(names)}

    rows = [row("checklist", "all", "s2", {0: 1, 3: 2}, 3, 4),
            row("trigger", "all", "s1", {8: 1}, 1, 1), row("trigger", "all", "s1", {0: 1}, 1, 2),
            row("trigger", "all", "s3", {}, 0, 1), row("trigger", "emergent", "s1", {8: 1}, 1, 1)]
    got = {(kind, typ): (matrix, unjudged, clusters.tolist())
           for kind, typ, matrix, unjudged, clusters in agreement._judge_groups(columns(rows))}
    assert list(got) == [("trigger", "emergent"), ("trigger", "all"), ("checklist", "all")]
    assert got[("checklist", "all")] == ([[1, 0], [2, 0]], 1, [[1, 0, 2, 0]])
    assert got[("trigger", "all")] == ([[1, 0, 0], [0, 0, 0], [0, 0, 1]], 2,
                                       [[1, 0, 0, 0, 0, 0, 0, 0, 1]])
    assert got[("trigger", "emergent")] == ([[0, 0, 0], [0, 0, 0], [0, 0, 1]], 0,
                                            [[0, 0, 0, 0, 0, 0, 0, 0, 1]])
    with pytest.raises(ValueError, match="not one of"):  # a pair off the scale
        agreement._judge_groups(columns([row("checklist", "all", "s1", {0: 1}, 2, 2)]))


def test_pooled_trigger_scores_are_the_views_average(db: Path) -> None:
    """Rank stability's trigger scores, summed from the per-session figures τ resamples,
    are `avg(score)` of `trigger_results` per run and type (and over all types) to the bit."""
    from benchpack.reports.judge_validity import unit_and_pooled_figures

    with open_store(db) as con:
        runs = select_runs(con, ["all"])
        _, means = unit_and_pooled_figures(ReportContext(con, runs), runs)
        want: dict[str, dict[str, float]] = defaultdict(dict)
        for run, typ, every, v in con.execute(
                "SELECT run_id, type, grouping(type), avg(score) FROM trigger_results "
                "WHERE label IS NOT NULL "
                "GROUP BY GROUPING SETS ((run_id, type), (run_id))").fetchall():
            if v is not None:
                want[run][f"trigger score ({'all' if every else typ})"] = v
    assert means == want
    assert sum(len(m) for m in means.values()) == 4 * len(runs)  # three types and all


def test_tau_resamples_the_figure_the_table_shows(two_rejudges: Path) -> None:
    """Kendall τ's units, pooled over a run's sessions, give the trigger score ρ and the
    rankings show: SKIPPED triggers (score NULL) are in neither N. (Their units once counted
    every labelled trigger, so τ ranked runs by a figure with SKIPPED ones as 0.)"""
    from benchpack.reports.judge_validity import unit_and_pooled_figures

    with open_store(two_rejudges) as con:
        runs = select_runs(con, ["all"])
        units, means = unit_and_pooled_figures(ReportContext(con, runs), runs)
        skipped = con.execute("SELECT count(*) FROM trigger_results WHERE label = 'SKIPPED' "
                              "AND score IS NULL AND run_id = ?", [SECOND]).fetchone()[0]
    assert skipped > 0  # the case that tells the two counts apart is in the store
    for run, figures in means.items():
        for name, mean in figures.items():
            cells = units[run][name].values()
            assert sum(t for t, _ in cells) / sum(n for _, n in cells) == mean, (run, name)


def test_a_trigger_without_a_type_is_not_the_all_types_figure(tmp_path: Path) -> None:
    """A trigger whose type is NULL gets a figure of its own, never the overall one."""
    from benchpack.reports.judge_validity import unit_and_pooled_figures

    path = tmp_path / "bench.duckdb"
    store.generate(path, 300)
    con = duckdb.connect(str(path))
    try:
        run = con.execute("SELECT min(run_id) FROM triggers").fetchone()[0]
        con.execute("UPDATE triggers SET type = NULL WHERE run_id = ?", [run])
    finally:
        con.close()
    with open_store(path) as con:
        _, means = unit_and_pooled_figures(ReportContext(con, [run]), [run])
        (overall,) = con.execute("SELECT avg(score) FROM trigger_results WHERE run_id = ? "
                                 "AND label IS NOT NULL", [run]).fetchone()
    assert means[run] == {"trigger score (all)": overall, "trigger score (no type)": overall}


@pytest.mark.parametrize("consensus", ["median", "majority"])
def test_headline_from_the_rated_items_table_is_the_views(db: Path, consensus: str) -> None:
    """`agreement --humans` makes its bias-corrected headline from its TEMP table of rated
    items; asked of the `human_pairs` view, the same table, figure for figure."""
    from benchpack.reports.judge_validity import ppi_table

    with open_store(db) as con:
        ctx = ReportContext(con, select_runs(con, ["all"]))
        ctx.humans, ctx.consensus, ctx.min_raters = True, consensus, 3
        result = agreement.agreement_report(ctx)
        (got,) = [t for t in result.tables if t.title.startswith("Bias-corrected")]
        names = {r[0]: agreement.run_name(r[0], agreement._lineage(ctx))
                 for r in con.execute("SELECT run_id FROM runs").fetchall()}
        runs = [r for r in ctx.runs if any(n == names[r] for n, *_ in got.rows)]
        label = "human_majority" if consensus == "majority" else "human_label"
        want = ppi_table(ctx, runs, names, label)
    assert want is not None and len(runs) == 4
    assert [[str(c) for c in r] for r in got.rows] == [[str(c) for c in r] for r in want.rows]
    assert got.rows == want.rows


@pytest.mark.parametrize("kept", [False, True])
def test_alpha_ci_draws_are_summed_per_pattern_as_before(kept: bool,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """α's resampled coincidences: the pattern weights as differences of running totals
    (`unit_draw_totals`) give the bits of summing each pattern's draws (`np.add.reduceat`
    over `unit_draw_counts`, then einsum, as the report computed them first), with cells in
    thirds whose sums depend on the order einsum adds them in — whether the draws are fresh
    or kept."""
    import random

    import numpy as np

    from benchpack.reports import stats
    from benchpack.reports.stats import alpha, resampling

    monkeypatch.setattr(resampling, "_DRAWS", {})
    rng = random.Random(7)
    labels = ("FAIL", "PARTIAL", "PASS")
    units = [[rng.randint(0, 12) / 3 for _ in range(9)] for _ in range(300)]
    units += units[:200]  # patterns of several units
    if kept:
        list(resampling.unit_draw_counts(len(units), 700, 3))
    got = stats.krippendorff_alpha_ci(units, "ordinal", labels, resamples=700, seed=3)
    patterns = sorted(Counter(tuple(u) for u in units).items())
    counts = [n for _, n in patterns]
    starts = np.cumsum([0, *counts[:-1]])
    weights = np.concatenate([np.add.reduceat(block, starts, axis=1).astype(float)
                              for block in resampling.unit_draw_counts(len(units), 700, 3)])
    cells = np.array([[p[j] for p, _ in patterns] for j in range(9)], dtype=float).T
    draws = sorted(d for d in alpha._alpha_rows(np.einsum("ij,jk->ik", weights, cells),
                                                "ordinal", labels) if d is not None)
    assert (got.low, got.high) == (resampling.quantile(draws, (1 - 0.95) / 2),
                                   resampling.quantile(draws, (1 + 0.95) / 2))


@pytest.mark.parametrize("humans", [False, True])
def test_each_bootstrap_size_is_drawn_once_a_report(db: Path, humans: bool,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """α's and τ's resamples over the same number of sessions are the same draws: a report
    draws each (sessions, resamples, seed) once and reads it back after (the numpy draws are
    most of a bootstrap's cost), and asks for fewer sizes than it computes intervals."""
    from benchpack.reports.stats import resampling

    monkeypatch.setattr(resampling, "_DRAWS", {})
    drawn: list[tuple[int, int, int]] = []
    asked: list[int] = []
    real_blocks, real_drawn = resampling._draw_blocks, resampling._drawn

    def counting(n: int, resamples: int, seed: int, chunk: int) -> Any:
        asked.append(n)
        return real_blocks(n, resamples, seed, chunk)

    # the draws themselves, counted where they are made (under `_DRAWS_LOCK` when kept): a
    # look at `_DRAWS` before asking would race with the thread the report runs beside
    def making(n: int, resamples: int, seed: int, chunk: int, keep: bool) -> Any:
        drawn.append((n, resamples, seed))
        return real_drawn(n, resamples, seed, chunk, keep)

    monkeypatch.setattr(resampling, "_draw_blocks", counting)
    monkeypatch.setattr(resampling, "_drawn", making)
    with open_store(db) as con:
        ctx = ReportContext(con, select_runs(con, ["all"]))
        ctx.humans = humans
        agreement.agreement_report(ctx)
    assert drawn and len(drawn) == len(set(drawn)), drawn
    assert len(drawn) < len(asked)


@pytest.mark.parametrize("which", ["synthetic", "two rejudges"])
def test_headline_items_are_the_judge_labels_view(which: str, db: Path, two_rejudges: Path,
                                                  tmp_path: Path) -> None:
    """The headline's judged items, asked of the tables (`judge_validity._JUDGED`), are the
    view's triggers and checklist items with a label in finished sessions that are no
    ablation variant — item for item, on a store with SKIPPED triggers, judge errors, and
    ablation variants and unfinished sessions holding triggers and checklist items."""
    from benchpack.reports import judge_validity

    path = tmp_path / "bench.duckdb"
    shutil.copy(db if which == "synthetic" else two_rejudges, path)
    con = duckdb.connect(str(path))
    try:
        con.execute("UPDATE sessions SET ablation = 'without_dependencies' "
                    "WHERE hash(session_id, repeat) % 7 = 0")
        con.execute("UPDATE sessions SET status = 'error' WHERE hash(session_id, repeat) % 11 = 0")
    finally:
        con.close()
    with open_store(path) as con:
        runs = select_runs(con, ["all"])
        marks = ", ".join("?" * len(runs))
        got = Counter(con.execute(judge_validity._JUDGED.replace("$runs", marks),
                                  [*runs, *runs]).fetchall())
        want = Counter(con.execute(
            f"""SELECT j.run_id, j.session_id, j.repeat, j.kind, j.item_id, j.label
                FROM judge_labels j JOIN sessions s USING (run_id, session_id, repeat)
                WHERE j.run_id IN ({marks}) AND s.ablation IS NULL AND j.label IS NOT NULL
                  AND j.kind IN ('trigger', 'checklist')""", runs).fetchall())
        left_out = {kind: n for kind, n in con.execute(
            "SELECT kind, count(*) FROM judge_labels j JOIN sessions s "
            "USING (run_id, session_id, repeat) WHERE s.ablation IS NOT NULL GROUP BY kind"
        ).fetchall()}
        errors = con.execute("SELECT count(*) FROM judge_labels WHERE label IS NULL "
                             "AND kind IN ('trigger', 'checklist')").fetchone()[0]
    assert got == want
    assert left_out.get("trigger", 0) > 0 and left_out.get("checklist", 0) > 0
    assert (errors > 0 or which == "synthetic") and len(got) > 500  # the copy has errors


def _unit_figures_by_rows(con: Any, runs: list[str]) -> tuple[Any, Any]:
    """`unit_and_pooled_figures` as it read its rows first: one Python step a row."""
    marks = ", ".join("?" * len(runs))
    out: dict[str, dict[str, dict[str, tuple[float, float]]]] = defaultdict(
        lambda: defaultdict(dict))
    names = ("COMP", "triple F1", "verified score", "verified pass rate")
    for run, session, *cells in con.execute(
            f"SELECT run_id, session_id, sum(comp), count(comp), sum(f1), count(f1), "
            f"sum(score), count(score), sum(passed::INTEGER)::BIGINT, count(passed) "
            f"FROM sessions WHERE run_id IN ({marks}) AND status = 'finished' "
            "AND ablation IS NULL GROUP BY ALL ORDER BY ALL", runs).fetchall():
        for i, name in enumerate(names):
            if cells[2 * i + 1]:
                out[run][name][session] = (float(cells[2 * i]), float(cells[2 * i + 1]))
    pooled: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0])
    for run, typ, every, session, total, scored in con.execute(
            f"SELECT run_id, type, grouping(type), session_id, sum(score), count(score) "
            f"FROM (SELECT run_id, coalesce(type, '') AS type, session_id, score "
            f"      FROM trigger_results WHERE run_id IN ({marks}) AND label IS NOT NULL) "
            "GROUP BY GROUPING SETS ((run_id, type, session_id), (run_id, session_id)) "
            "ORDER BY ALL", runs).fetchall():
        name = f"trigger score ({'all' if every else typ or 'no type'})"
        if scored:
            out[run][name][session] = (float(total), float(scored))
            pooled[(run, name)][0] += float(total)
            pooled[(run, name)][1] += int(scored)
    means: dict[str, dict[str, float]] = defaultdict(dict)
    for (run, name), (total, scored) in pooled.items():
        means[run][name] = total / scored
    return out, means


def test_unit_figures_from_numpy_columns_are_those_row_by_row(two_rejudges: Path,
                                                              tmp_path: Path) -> None:
    """τ's per-session units and the pooled trigger scores, read as numpy columns, are those
    read row by row — each figure's sessions in the same order — with SKIPPED triggers, judge
    errors, triggers typed NULL and '' (both 'no type') and sessions without a figure."""
    from benchpack.reports import judge_validity

    path = tmp_path / "bench.duckdb"
    shutil.copy(two_rejudges, path)
    con = duckdb.connect(str(path))
    try:
        # NULL in one run, '' in another (a session holding both keeps one row's unit, in
        # whatever order the rows come: not a case to compare orders on)
        con.execute("UPDATE triggers SET type = NULL WHERE hash(trigger_id, session_id) % 9 = 0 "
                    "AND run_id = ?", [store.run_id(0)])
        con.execute("UPDATE triggers SET type = '' WHERE hash(trigger_id, session_id) % 9 = 1 "
                    "AND run_id = ?", [store.run_id(1)])
        con.execute("UPDATE sessions SET comp = NULL WHERE hash(session_id, repeat) % 5 = 0")
    finally:
        con.close()
    with open_store(path) as con:
        runs = select_runs(con, ["all"])
        ctx = ReportContext(_Ordered(con), runs)
        got = judge_validity.unit_and_pooled_figures(ctx, runs)
        want = _unit_figures_by_rows(con, runs)
    assert {r: {n: list(s.items()) for n, s in f.items()} for r, f in got[0].items()} == \
        {r: {n: list(s.items()) for n, s in f.items()} for r, f in want[0].items()}
    assert got[1] == want[1]
    assert any("trigger score (no type)" in f for f in got[0].values())


def test_a_session_with_triggers_typed_null_and_empty_is_one_no_type_unit(
        two_rejudges: Path, tmp_path: Path) -> None:
    """NULL and '' are both 'no type': a session holding a trigger of each has one unit for
    that figure holding both, so τ's units pooled give the figure shown beside τ. (Grouped
    apart, the unit kept one of the two rows while the pooled figure added both.)"""
    from benchpack.reports.judge_validity import unit_and_pooled_figures

    path = tmp_path / "bench.duckdb"
    shutil.copy(two_rejudges, path)
    con = duckdb.connect(str(path))
    try:
        run = store.run_id(0)
        con.execute("UPDATE triggers SET type = CASE WHEN hash(trigger_id) % 2 = 0 THEN NULL "
                    "ELSE '' END WHERE run_id = ?", [run])
    finally:
        con.close()
    with open_store(path) as con:
        (both,) = con.execute(
            "SELECT count(*) FROM (SELECT session_id, repeat FROM trigger_results "
            "WHERE run_id = ? AND label IS NOT NULL AND score IS NOT NULL GROUP BY ALL "
            "HAVING count(*) FILTER (WHERE type IS NULL) > 0 "
            "AND count(*) FILTER (WHERE type = '') > 0)", [run]).fetchone()
        assert both > 0  # the case is in the store
        units, means = unit_and_pooled_figures(ReportContext(con, [run]), [run])
        (overall,) = con.execute("SELECT avg(score) FROM trigger_results WHERE run_id = ? "
                                 "AND label IS NOT NULL", [run]).fetchone()
    cells = units[run]["trigger score (no type)"].values()
    assert means[run]["trigger score (no type)"] == overall
    assert sum(t for t, _ in cells) / sum(n for _, n in cells) == overall
    assert units[run]["trigger score (no type)"] == units[run]["trigger score (all)"]


class _Ordered:
    """A connection whose GROUP BY queries come back sorted (ORDER BY ALL), so that the rows'
    order — which the units keep — can be compared with the reference's."""

    def __init__(self, con: Any) -> None:
        self.con = con

    def execute(self, sql: str, params: Any = None) -> Any:
        if "GROUP BY" in sql and "ORDER BY" not in sql:
            sql += " ORDER BY ALL"
        return self.con.execute(sql, params) if params is not None else self.con.execute(sql)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.con, name)
