"""What `agreement --humans` reads, checked against what it stands for: Krippendorff's
coincidences counted from the rated items' label counts against counting every rating (on the
synthetic benchmark store and on a copy with an item judged twice in a session, off-scale, NULL
and all-NULL ratings), the median-only rated items against `human_pairs`', the coincidence
units summed in numpy against an fsum per cell, κ's clusters by hand; and what it does: one
TEMP table, the consensus view read only for the majority vote, statements bounded by the runs.
Nothing here is timed."""

from __future__ import annotations

import shutil
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import duckdb
import pytest

from benchpack.reports import agreement
from benchpack.reports.access import open_store, select_runs
from benchpack.reports.builtin import ReportContext
from benchpack.reports.sqltext import literals

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import synthetic_store as store  # noqa: E402  (the benchmark's generator, beside it)


def _rated_runs(con: Any) -> list[str]:
    """The runs whose dialogues humans rated (their judge against the humans)."""
    return [r for r, in con.execute("SELECT run_id FROM run_lineage WHERE source_run IN "
                                    "(SELECT run_id FROM human_ratings)").fetchall()]


def _rated(con: Any, consensus: str) -> tuple[ReportContext, list[str], Any]:
    """(a context over every run, the rated runs, `agreement_humans._rated_items` over them
    with `consensus` — the TEMP `items` the report writes — to enter)."""
    from benchpack.reports import agreement_humans

    ctx = ReportContext(con, select_runs(con, ["all"]))
    ctx.min_raters = 1
    label, tie = (("human_majority", "majority_tie") if consensus == "majority"
                  else ("human_label", "tie"))
    runs = _rated_runs(con)
    return ctx, runs, agreement_humans._rated_items(ctx, runs, label, tie)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("agreement-humans-reads") / "bench.duckdb"
    store.generate(path, 3000)
    return path


def _units_by_fsum(rows: list[tuple[Any, ...]]) -> dict[tuple[str, ...], list[list[float]]]:
    """The coincidence units as the report built them first: per group and session a counter
    of (m, cell) sums, then each cell the fsum of its sums ÷ (m − 1) over m ≥ 2."""
    import math

    per: dict[tuple[str, ...], dict[Any, Counter[tuple[int, int]]]] = defaultdict(
        lambda: defaultdict(Counter))
    width = agreement.LABELS
    for run, kind, typ, who, m, session, *cells in rows:
        k = len(agreement.scale_of(kind))
        for group in ("all", *([typ] if kind == "trigger" and typ else [])):
            counts = per[(run, kind, group, who)][session]
            for c in range(k):
                for d in range(k):
                    counts[(m, c * k + d)] += cells[c * width + d]
    out = {}
    for key, sessions in per.items():
        k2 = len(agreement.scale_of(key[1])) ** 2
        out[key] = [[math.fsum(n / (m - 1) for (m, cell), n in sessions[s].items()
                               if cell == c and m >= 2) for c in range(k2)]
                    for s in sorted(sessions, key=str)]
    return out


def _columns(rows: list[tuple[Any, ...]], names: tuple[str, ...]) -> dict[str, Any]:
    """Rows as the numpy columns `fetchnumpy` hands over: the key columns `names` as objects,
    the cells after them as int64 `x0`, `x1`, …"""
    import numpy as np

    columns: dict[str, Any] = {n: np.array([r[i] for r in rows], dtype=object)
                               for i, n in enumerate(names)}
    for c in range(len(rows[0]) - len(names)):
        columns[f"x{c}"] = np.array([r[len(names) + c] for r in rows], dtype=np.int64)
    return columns


def _plain(units: dict[Any, list[Any]]) -> dict[Any, list[list[float]]]:
    """Units (numpy rows) as lists of floats, compared exactly."""
    return {key: [row.tolist() for row in rows] for key, rows in units.items()}


def _coded(rows: list[tuple[Any, ...]]) -> tuple[dict[str, Any], list[str], list[str]]:
    """`COINCIDENCES`-shaped rows keyed by text (run, kind, type, who, m, session, cells…) as
    the report reads them: numpy columns keyed by integers (`r`, `k`, `t`, `w`, `sid`), with
    the runs and types they index."""
    import numpy as np

    from benchpack.reports import agreement_units

    runs = sorted({r[0] for r in rows})
    types = sorted({r[2] for r in rows if r[1] == "trigger" and r[2]})
    sessions = sorted({r[5] for r in rows})
    coded = [(runs.index(run), agreement_units.RATED_KINDS.index(kind),
              types.index(typ) + 1 if kind == "trigger" and typ else 0,
              ("humans", "with_judge").index(who), sessions.index(session) + 1, m, *cells)
             for run, kind, typ, who, m, session, *cells in rows]
    columns = _columns(coded, ("r", "k", "t", "w", "sid", "m"))
    for name in ("r", "k", "t", "w", "sid", "m"):
        columns[name] = columns[name].astype(np.int64)
    return columns, runs, types


@pytest.mark.parametrize("seed", range(40))
def test_coincidence_units_are_the_fsum_of_each_cell(seed: int) -> None:
    """`agreement_units.units_of` sums in numpy what the report fsum'd cell by cell: the same
    floats to the bit, with up to eight ratings an item (several quotients by 3, 5, 6, 7 in
    a cell, which are fsum'd), sessions of one-rating items only, a trigger type named `all`,
    and sums large enough to leave the exact path."""
    import random

    from benchpack.reports import agreement_units

    rng = random.Random(seed)
    width = agreement.LABELS
    big = 2**56 if seed % 10 == 9 else 40  # past 2**53, where only int ÷ int rounds once
    rows = []
    for _ in range(rng.randint(1, 300)):
        kind = rng.choice(["trigger", "checklist", "triple"])
        typ = rng.choice(["emergent", "critical", "all", None]) if kind == "trigger" else None
        m = rng.choice([1, 2, 3, 3, 3, 4, 4, 5, *([6, 7, 8] if seed % 2 else [])])
        cells = [0 if m == 1 else rng.randint(0, big) for _ in range(width * width)]
        rows.append((rng.choice(["r1", "r2"]), kind, typ, rng.choice(["humans", "with_judge"]),
                     m, f"s{rng.randint(0, 40):02d}", *cells))
    got = _plain(agreement_units.units_of(*_coded(rows)))
    want = _units_by_fsum(rows)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == want[key], key  # floats compared exactly, session order included


def test_human_clusters_by_hand() -> None:
    """`_PER_SESSION`-shaped rows (run, kind, type codes, session rank, consensus and judge
    label indices, items) into each group's sessions: a NULL label (-1) is no pair, a session
    with no pair on the kind's scale is no cluster, sessions come in rank order, a trigger type
    named `all` counts twice in the all group (as `groups` counts it), a typed trigger also in
    its type's."""
    import numpy as np

    from benchpack.reports import agreement_humans

    names = ("r", "k", "t", "sid", "h", "j", "n")
    rows = [(1, 1, 0, 1, 0, 0, 2), (1, 1, 0, 1, 1, 1, 1), (1, 1, 0, 2, -1, 0, 5),
            (1, 1, 0, 2, 0, -1, 1), (1, 0, 0, 1, 2, 2, 1), (1, 0, 1, 1, 0, 1, 2),
            (1, 0, 0, 2, 1, 1, 3), (0, 0, 2, 9, 1, 0, 1)]
    columns = {name: np.array([r[i] for r in rows], dtype=np.int64)
               for i, name in enumerate(names)}
    got = agreement_humans._clusters_of(columns, ["q", "r"], ["all", "critical"])
    assert got == {("r", "checklist", "all"): [[2, 0, 0, 1]],
                   ("r", "trigger", "all"): [[0, 4, 0, 0, 0, 0, 0, 0, 1],
                                             [0, 0, 0, 0, 3, 0, 0, 0, 0]],
                   ("q", "trigger", "critical"): [[0, 0, 0, 1, 0, 0, 0, 0, 0]],
                   ("q", "trigger", "all"): [[0, 0, 0, 1, 0, 0, 0, 0, 0]]}
    columns["j"][:] = -1  # no judge label: no cluster
    assert agreement_humans._clusters_of(columns, ["q", "r"], ["all", "critical"]) == {}


_OLD_HUMANS = """
SELECT run_id, kind, type, 'pair' AS stat, human_label AS c, judge_label AS d, count(*) AS n
FROM items GROUP BY ALL
UNION ALL
SELECT run_id, kind, type, 'ratings', NULL, NULL, sum(raters) FROM items GROUP BY ALL
UNION ALL
SELECT run_id, kind, type, 'ties', NULL, NULL, count(*) FILTER (WHERE tie) FROM items
GROUP BY ALL
"""
"""The label pairs, ratings and ties as the report counted them in a statement of their own."""

_OLD_CLUSTERS = """
SELECT run_id, kind, 'all' AS grp, session_id, {cells} FROM items
WHERE human_label IS NOT NULL AND judge_label IS NOT NULL GROUP BY run_id, kind, session_id
UNION ALL
SELECT run_id, kind, type, session_id, {cells} FROM items
WHERE human_label IS NOT NULL AND judge_label IS NOT NULL AND kind = 'trigger' AND type <> ''
GROUP BY run_id, kind, type, session_id
""".format(cells=", ".join(
    f"count(*) FILTER (WHERE human_label = {agreement.label_at(c)} AND judge_label = "
    f"{agreement.label_at(d)})" for c in range(agreement.LABELS) for d in range(agreement.LABELS)))
"""κ's clusters as the report counted them in a statement of their own, per session."""


def _old_clusters(rows: list[tuple[Any, ...]]) -> dict[tuple[str, str, str], list[list[int]]]:
    """`_OLD_CLUSTERS`' rows per group: each session's k × k cells (summed where a trigger type
    named `all` gives a session two rows), in session order, sessions with a pair only."""
    per: dict[tuple[str, str, str], dict[str, list[int]]] = defaultdict(dict)
    for run, kind, group, session, *cells in rows:
        k = len(agreement.scale_of(kind))
        mine = [cells[c * agreement.LABELS + d] for c in range(k) for d in range(k)]
        have = per[(run, kind, group)].get(session)
        per[(run, kind, group)][session] = ([a + b for a, b in zip(have, mine, strict=True)]
                                            if have else mine)
    return {key: [sessions[s] for s in sorted(sessions) if any(sessions[s])]
            for key, sessions in per.items()
            if any(any(c) for c in sessions.values())}


@pytest.mark.parametrize("consensus", ["median", "majority"])
@pytest.mark.parametrize("which", ["synthetic", "odd ratings"])
def test_one_pass_per_session_counts_what_three_statements_did(
        which: str, consensus: str, db: Path, odd_ratings: Path) -> None:
    """`_PER_SESSION` read by `_per_session_of` gives the label pairs, ratings and ties of
    `_OLD_HUMANS`, the clusters of `_OLD_CLUSTERS` and, where no rows of `items` share an item
    key, α's units of `COINCIDENCES` (itself checked against every rating above): on the
    synthetic store and on one with an item judged twice in a session (`_FACTS` says so: the
    report then asks `COINCIDENCES`), off-scale and NULL ratings."""
    from benchpack.reports import agreement_humans, agreement_units

    with open_store(db if which == "synthetic" else odd_ratings) as con:
        ctx, runs, rated = _rated(con, consensus)
        with rated:
            found, doubled = con.execute(agreement_humans._FACTS).fetchone()
            types = list(found or [])
            sql = agreement_units.keyed(agreement_humans._PER_SESSION, runs, types)
            rows, clusters, coded = agreement_humans._per_session_of(
                con.execute(sql).fetchnumpy(), runs, types)
            old_rows = con.execute(_OLD_HUMANS).fetchall()
            old_clusters = _old_clusters(con.execute(_OLD_CLUSTERS).fetchall())
            old_units = agreement_units.rated_units(ctx, runs, types)
    got: Counter[tuple[Any, ...]] = Counter()
    want: Counter[tuple[Any, ...]] = Counter()
    for counts, source in ((got, rows), (want, old_rows)):
        for run, kind, typ, stat, c, d, n in source:
            counts[(run, kind, typ or None, stat, c, d)] += n  # NULL and '': no type
    assert got == want and sum(got.values()) > 100
    assert clusters == old_clusters and len(clusters) > 10
    assert bool(doubled) == (which == "odd ratings")
    if not doubled:
        assert _plain(agreement_units.units_of(coded, runs, types)) == _plain(old_units)


_OLD_COINCIDENCES = f"""
WITH ratings AS (
    SELECT i.run_id, i.kind, i.type, i.session_id, i.repeat, i.item_id, i.judge_label, h.rater,
           h.label
    FROM items i JOIN human_ratings h ON h.run_id = i.source_run AND h.session_id = i.session_id
         AND h.repeat = i.repeat AND h.kind = i.kind AND h.item_id = i.item_id
), labels AS (
    SELECT 'humans' AS who, run_id, kind, type, session_id, repeat, item_id, label FROM ratings
    UNION ALL
    SELECT 'with_judge', run_id, kind, type, session_id, repeat, item_id, label FROM ratings
    WHERE judge_label IS NOT NULL
    UNION ALL
    SELECT 'with_judge', run_id, kind, type, session_id, repeat, item_id, judge_label FROM items
    WHERE judge_label IS NOT NULL
), units AS (
    SELECT who, run_id, kind, type, session_id, count(*) AS m,
           {", ".join(f"count(*) FILTER (WHERE label = {agreement.label_at(i)}) AS n{i}"
                      for i in range(agreement.LABELS))}
    FROM labels GROUP BY who, run_id, kind, type, session_id, repeat, item_id
)
SELECT run_id, kind, type, who, m, session_id,
       {", ".join(f"sum(n{c} * (n{d} - {int(c == d)}))::BIGINT"
                  for c in range(agreement.LABELS) for d in range(agreement.LABELS))}
FROM units GROUP BY ALL
"""
"""The coincidences as the report counted them from a TEMP table of every rating joined to its
item: one row a rating, each counted by label per unit."""


@pytest.fixture(scope="module")
def odd_ratings(db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store with what the label counts must get right: a rated item judged twice in its
    session (two trigger rows of one id, one typed otherwise, one a judge error), ratings off
    the kind's scale and NULL (a checklist item rated PASS; items whose ratings are all NULL),
    and an item of one rating."""
    path = tmp_path_factory.mktemp("odd-ratings") / "bench.duckdb"
    shutil.copy(db, path)
    con = duckdb.connect(str(path))
    try:
        run = store.rejudge_id(0)
        session, repeat, item = con.execute(
            "SELECT session_id, repeat, item_id FROM human_ratings h WHERE kind = 'trigger' "
            "AND run_id = ? ORDER BY ALL LIMIT 1", [store.run_id(0)]).fetchone()
        for target in (run, store.run_id(0)):
            con.execute("INSERT INTO triggers SELECT * REPLACE ('critical' AS type, NULL AS label, "
                        "'x' AS judge_error) FROM triggers WHERE run_id = ? AND session_id = ? "
                        "AND repeat = ? AND trigger_id = ?", [target, session, repeat, item])
            con.execute("INSERT INTO triggers SELECT * REPLACE ('PASS' AS label) FROM triggers "
                        "WHERE run_id = ? AND session_id = ? AND repeat = ? AND trigger_id = ? "
                        "AND judge_error IS NULL", [target, session, repeat, item])
        con.execute("UPDATE human_ratings SET label = 'MAYBE' WHERE hash(item_id, rater) % 9 = 0")
        con.execute("UPDATE human_ratings SET label = NULL WHERE hash(item_id, rater) % 11 = 0")
        con.execute("UPDATE human_ratings SET label = 'YES' WHERE kind = 'trigger' "
                    "AND hash(item_id, rater) % 13 = 0")
        con.execute("DELETE FROM human_ratings WHERE kind = 'checklist' AND rater <> 'r1' "
                    "AND hash(item_id) % 5 = 0")
        # a label of another scale (ranked, off this kind's scale), items no rating ranks
        con.execute("UPDATE human_ratings SET label = 'PASS' WHERE kind = 'checklist' "
                    "AND hash(item_id, rater) % 7 = 0")
        con.execute("UPDATE human_ratings SET label = NULL WHERE kind = 'triple' "
                    "AND hash(item_id) % 10 = 0")
    finally:
        con.close()
    return path


@pytest.mark.parametrize("consensus", ["median", "majority"])
@pytest.mark.parametrize("which", ["synthetic", "odd ratings"])
def test_coincidences_from_label_counts_are_those_of_every_rating(
        which: str, consensus: str, db: Path, odd_ratings: Path) -> None:
    """`COINCIDENCES` counts each unit from its item's ratings counted by label (`items`' n0,
    n1, …) and the judge's label: the same rows as counting every rating joined to its item,
    on the synthetic store and on one with an item judged twice in a session, off-scale and
    NULL ratings and items of one rating."""
    from benchpack.reports import agreement_units

    with open_store(db if which == "synthetic" else odd_ratings) as con:
        _, runs, rated = _rated(con, consensus)
        with rated:
            types = sorted(t for t, in con.execute(
                "SELECT DISTINCT type FROM items WHERE kind = 'trigger' AND type <> ''"
            ).fetchall())
            names = dict(con.execute("SELECT DISTINCT sid, session_id FROM items").fetchall())
            sql = agreement_units.keyed(agreement_units.COINCIDENCES, runs, types)
            # the integer keys read back as the text they code
            got = Counter((runs[r], agreement_units.RATED_KINDS[k], types[t - 1] if t else "",
                           ("humans", "with_judge")[w], m, names[sid], *cells)
                          for r, k, t, w, sid, m, *cells
                          in con.execute(sql).fetchall())
            # a trigger without a type: '' now, NULL then (both no group of their own)
            want = Counter((*r[:2], r[2] or "", *r[3:])
                           for r in con.execute(_OLD_COINCIDENCES).fetchall())
            if which == "odd ratings":
                doubled = con.execute("SELECT count(*) FROM (SELECT 1 FROM items GROUP BY "
                                      "run_id, session_id, repeat, kind, item_id "
                                      "HAVING count(*) > 1)").fetchone()[0]
                assert doubled > 0
    assert got == want
    assert sum(row[3] == "with_judge" for row in got) > 50  # units of both kinds compared


@pytest.mark.parametrize("min_raters", [1, 3])
@pytest.mark.parametrize("which", ["synthetic", "odd ratings", "odd sessions"])
def test_median_items_are_human_pairs_items(which: str, min_raters: int, db: Path,
                                            odd_ratings: Path, odd_sessions: Path) -> None:
    """The rated items of the median consensus, asked without the majority vote
    (`_MEDIAN_ITEMS`), are those of `human_pairs` with their label counts (`_HUMAN_ITEMS`),
    row for row: ties, off-scale and NULL ratings, an item judged twice in a session;
    sessions that errored, without predicted triples, checklist items of another grader."""
    from benchpack.reports import agreement_humans

    path = {"synthetic": db, "odd ratings": odd_ratings, "odd sessions": odd_sessions}[which]
    with open_store(path) as con:
        runs = _rated_runs(con)
        marks = "(" + literals(runs) + ")"
        got, want = (Counter(con.execute(sql.replace("$runs", marks).replace("$label",
                                                                             "human_label")
                                         .replace("$tie", "tie"), [min_raters])
                             .fetchall())
                     for sql in (agreement_humans._MEDIAN_ITEMS, agreement_humans._HUMAN_ITEMS))
    assert got == want
    assert sum(row[8] is True for row in got) > 0 and len(got) > 50  # ties among the items
    if which == "odd ratings":  # items no rating ranks: no label, tie unknown
        assert any(row[8] is None and row[9] is None for row in got)


class _Recording:
    """A connection recording every statement it is given and the rows each hands over."""

    def __init__(self, con: Any) -> None:
        self.con, self.statements, self.rows = con, [], []

    def execute(self, sql: str, params: Any = None) -> Any:
        self.statements.append(" ".join(sql.split()))
        self.rows.append(0)
        self.con.execute(sql, params) if params is not None else self.con.execute(sql)
        return self

    def fetchall(self) -> list[Any]:
        found = self.con.fetchall()
        self.rows[-1] += len(found)
        return found

    def fetchone(self) -> Any:
        found = self.con.fetchone()
        self.rows[-1] += found is not None
        return found

    def fetchnumpy(self) -> dict[str, Any]:
        found = self.con.fetchnumpy()
        self.rows[-1] += len(next(iter(found.values()), []))
        return dict(found)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.con, name)


@pytest.mark.parametrize("consensus", ["median", "majority"])
def test_humans_statements_are_bounded_and_write_one_table(db: Path, consensus: str) -> None:
    """`--humans` writes one TEMP table (the rated items with their label counts; the ratings
    joined to their items are never written), reads the consensus view only for the majority
    vote (the median is asked of the ratings directly), and issues a number of statements
    bounded by the runs, not by items or sessions."""
    with open_store(db) as con:
        recording = _Recording(con)
        ctx = ReportContext(recording, select_runs(con, ["all"]))
        ctx.humans, ctx.consensus = True, consensus
        result = agreement.agreement_report(ctx)
    assert any(t.title.startswith("Bias-corrected") for t in result.tables)
    written = [s for s in recording.statements if s.startswith("CREATE")]
    assert len(written) == 1 and "TEMP TABLE items" in written[0], written
    viewed = [s for s in recording.statements if "human_consensus" in s or "human_pairs" in s]
    assert (len(viewed) == 1) if consensus == "majority" else not viewed, viewed
    assert len(recording.statements) <= 10 + len(ctx.runs), recording.statements


def test_humans_reads_items_once_per_session(db: Path) -> None:
    """What `--humans` computes of the rated items: one statement groups them per session for
    the label pairs, ratings, ties, κ's clusters and α's units (none groups them item by
    item: no item is judged twice here), handing over no more rows than there are rated items;
    one counts the raters' ratings, one the headline's. Three statements read them for those
    figures, the coincidences grouped item by item, then per (session, m)."""
    with open_store(db) as con:
        recording = _Recording(con)
        ctx = ReportContext(recording, select_runs(con, ["all"]))
        ctx.humans = True
        agreement.agreement_report(ctx)
        ctx.humans = False  # `items` again, to count it
        from benchpack.reports import agreement_humans

        runs = _rated_runs(con)
        with agreement_humans._rated_items(ReportContext(con, runs), runs, "human_label", "tie"):
            items = con.execute("SELECT count(*) FROM items").fetchone()[0]
    reading = [(s, n) for s, n in zip(recording.statements, recording.rows, strict=True)
               if " items " in f"{s} " and not s.startswith(("CREATE", "DROP"))]
    assert len(reading) == 4, reading  # facts, per session, raters, headline
    assert not any("per_item" in s for s, _ in reading)
    per_session = [n for s, n in reading if "AS ties" in s]
    assert items > 100 and len(per_session) == 1 and per_session[0] <= items, (items, reading)


def test_a_judge_label_off_its_scale_fails_as_before(
        db: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A rated trigger whose judge label is none of the scale's (a store no benchpack wrote)
    fails as `stats.confusion_matrix` fails on it, naming the label, never counted as a
    judge error or left out (the per-session pass codes it 99: `_off_scale`)."""
    path = tmp_path_factory.mktemp("off-scale") / "bench.duckdb"
    shutil.copy(db, path)
    con = duckdb.connect(str(path))
    try:
        con.execute("UPDATE triggers SET label = 'MAYBE' WHERE run_id = ? AND (session_id, "
                    "repeat, trigger_id) IN (SELECT (session_id, repeat, item_id) FROM "
                    "human_ratings WHERE kind = 'trigger' LIMIT 1)", [store.rejudge_id(0)])
    finally:
        con.close()
    with open_store(path) as con:
        ctx = ReportContext(con, select_runs(con, ["all"]))
        ctx.humans = True
        with pytest.raises(ValueError, match=r"label 'MAYBE' is not one of \['FAIL', "):
            agreement.agreement_report(ctx)


def test_humans_reads_its_rated_items_on_half_threads(db: Path) -> None:
    """Every statement over the rated items (and the raters' ratings) runs on half the
    connection's DuckDB threads (`aside.half_threads`, one of 3: one row group each, which a
    second thread only partitions),
    and the headline's judged half, asked of the tables alone (no `items`: it is read beside
    them on a report's own connection); the connection has its threads back afterwards."""
    ran: list[tuple[str, int]] = []

    class Threads(_Recording):
        def execute(self, sql: str, params: Any = None) -> Any:
            (threads,) = self.con.execute("SELECT current_setting('threads')").fetchone()
            ran.append((" ".join(sql.split()), int(threads)))
            return super().execute(sql, params)

    with open_store(db) as con:
        con.execute("SET threads = 3")
        ctx = ReportContext(Threads(con), select_runs(con, ["all"]))
        ctx.humans = True
        agreement.agreement_report(ctx)
        (after,) = con.execute("SELECT current_setting('threads')").fetchone()
    on_items = [(s, n) for s, n in ran if " items " in f"{s} " and not s.startswith("DROP")]
    judged = [(s, n) for s, n in ran if s.startswith("WITH j AS")]
    # written, facts, per session, raters, the headline's rated half
    assert len(on_items) == 5 and {n for _, n in on_items} == {1}, on_items
    assert len(judged) == 1 and judged[0][1] == 1 and " items " not in judged[0][0], judged
    assert int(after) == 3


@pytest.fixture(scope="module")
def odd_sessions(db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store with what the judged items leave out among rated ones: ablation variants,
    sessions that errored or without predicted triples, triggers without a label or
    SKIPPED, checklist items without a score or of another grader."""
    path = tmp_path_factory.mktemp("odd-sessions") / "bench.duckdb"
    shutil.copy(db, path)
    con = duckdb.connect(str(path))
    try:
        con.execute("UPDATE sessions SET ablation = 'no-memory' WHERE hash(session_id) % 7 = 0")
        con.execute("UPDATE sessions SET status = 'error' WHERE hash(session_id) % 11 = 1")
        con.execute("UPDATE triggers SET label = NULL WHERE hash(trigger_id, session_id) % 5 = 0")
        con.execute("UPDATE triggers SET label = 'SKIPPED' "
                    "WHERE hash(trigger_id, session_id) % 13 = 1")
        con.execute("UPDATE checklist_results SET score = NULL "
                    "WHERE hash(item_id, session_id) % 6 = 0")
        con.execute("UPDATE sessions SET triples_predicted = 0 WHERE hash(session_id) % 3 = 2")
        con.execute("INSERT INTO checklist_results SELECT * REPLACE ('other' AS grader, "
                    "1 - score AS score) FROM checklist_results "
                    "WHERE hash(item_id, session_id) % 4 = 0")
    finally:
        con.close()
    return path


@pytest.mark.parametrize("min_raters", [1, 3])
@pytest.mark.parametrize("consensus", ["median", "majority"])
@pytest.mark.parametrize("which", ["synthetic", "odd sessions"])
def test_headline_from_its_two_halves_is_the_joined_one(
        which: str, consensus: str, min_raters: int, db: Path, odd_sessions: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The bias-corrected headline from the judged tables' half (`ppi_judged`, over more runs
    than it shows) and the rated items' half summed apart is the one statement joining them,
    row for row, on a store without an item key twice in `items` (the halves matched, never
    the joined statement asked instead)."""
    from benchpack.reports import judge_validity
    from benchpack.reports.judge_validity import ppi_judged, ppi_table

    with open_store(db if which == "synthetic" else odd_sessions) as con:
        ctx, runs, rated = _rated(con, consensus)
        ctx.min_raters = min_raters
        with rated:
            (twice,) = con.execute("SELECT count(*) - count(DISTINCT (run_id, session_id, "
                                   "repeat, kind, item_id)) FROM items").fetchone()
            names = {r: r for r in ctx.runs}
            want = ppi_table(ctx, runs, names, "human_label", rated="items")
            monkeypatch.setattr(judge_validity, "_judged_with_rated", None)  # not asked
            got = ppi_table(ctx, runs, names, "human_label", rated="items",
                            judged=(ctx.runs, ppi_judged(ctx, ctx.runs)))
    assert twice == 0 and len(runs) == 4
    assert want is not None and got is not None and len(want.rows) >= 8
    assert [[str(c) for c in r] for r in got.rows] == [[str(c) for c in r] for r in want.rows]
    assert got.rows == want.rows
