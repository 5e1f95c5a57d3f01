"""The `agreement` report against human consensus (`bench report agreement --humans`): each
selected run's labels against the consensus of the ratings imported for its dialogues (`bench
ratings import`), items with at least `--min-raters` ratings; per rater against the judge; the
bias-corrected headline (`judge_validity.ppi_table`). Everything is counted in SQL per session
(`_PER_SESSION`, `_RATERS`) and summed per group in numpy; `agreement.py` holds the statistics
both comparisons share."""

from __future__ import annotations

import contextlib
import json
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from . import stats
from .agreement import (
    ALPHA_CI,
    LABELS,
    Lineage,
    agreement_cells,
    alpha_of_units,
    ci_note,
    columns,
    groups,
    label_at,
    run_name,
    scale_of,
)
from .agreement_units import JUDGE_IS, RATED_KINDS, Units, keyed, rated_units, units_of
from .aside import half_threads
from .builtin import ReportContext
from .model import Column, ReportResult, Table
from .sqltext import literals
from .views import MEDIAN_LABEL, MEDIAN_TIE, RATING_RANK

_LABEL_COUNTS = ", ".join(f"count(*) FILTER (WHERE label = {label_at(i)}) AS n{i}"
                          for i in range(LABELS))
_HUMAN_ITEMS = f"""
SELECT p.run_id, p.source_run, p.session_id, p.repeat, p.kind, p.item_id, p.type, p.raters,
       p.$tie AS tie, p.$label AS human_label, p.judge_label,
       {", ".join(f"c.n{i}" for i in range(LABELS))}
FROM human_pairs p JOIN (
    SELECT run_id, session_id, repeat, kind, item_id, {_LABEL_COUNTS}
    FROM human_ratings GROUP BY run_id, session_id, repeat, kind, item_id
) c ON c.run_id = p.source_run AND c.session_id = p.session_id AND c.repeat = p.repeat
     AND c.kind = p.kind AND c.item_id = p.item_id
WHERE p.run_id IN $runs AND p.raters >= ?
"""
"""The rated items of `human_pairs` for the selected runs (a TEMP table, `items`: the input of
`_PER_SESSION`, `_RATERS`, `COINCIDENCES` and the bias-corrected headline), each with its
ratings counted by label (`n0`, `n1`, … on the kind's scale, worst first; `raters` counts
them all) — grouped by the same item key as `human_consensus`' `raters`, so every item of
`human_pairs` finds its counts. Those counts are what Krippendorff's α needs of the ratings:
a TEMP table of every rating joined to its item (100,000 rows on the 1 M-turn benchmark
store) cost 0.18 s of CPU to write and 0.13 s to count again by item."""

_N = ", ".join(f"h.n{i}" for i in range(LABELS))
_MEDIAN_ITEMS = f"""
WITH h AS (
    SELECT l.run_id, r.* FROM (
        SELECT run_id AS source_run, session_id, repeat, kind, item_id, count(*) AS raters,
               {MEDIAN_LABEL} AS human_label, {MEDIAN_TIE} AS tie, {_LABEL_COUNTS}
        FROM (SELECT *, {RATING_RANK} AS rank FROM human_ratings) r
        GROUP BY run_id, session_id, repeat, kind, item_id
    ) r JOIN (SELECT run_id, source_run FROM run_lineage WHERE run_id IN $runs) l
        USING (source_run)
    WHERE r.raters >= ?
), s AS (
    SELECT run_id, session_id, repeat, triples_predicted FROM sessions
    WHERE run_id IN $runs AND status = 'finished'
)
SELECT h.run_id, h.source_run, h.session_id, h.repeat, h.kind, h.item_id, t.type, h.raters,
       h.tie, h.human_label, t.label AS judge_label, {_N}
FROM h JOIN triggers t ON t.run_id = h.run_id AND t.session_id = h.session_id
     AND t.repeat = h.repeat AND t.trigger_id = h.item_id
     JOIN s ON s.run_id = t.run_id AND s.session_id = t.session_id AND s.repeat = t.repeat
WHERE h.kind = 'trigger' AND t.run_id IN $runs AND coalesce(t.label, '') <> 'SKIPPED'
UNION ALL
SELECT h.run_id, h.source_run, h.session_id, h.repeat, h.kind, h.item_id, NULL, h.raters,
       h.tie, h.human_label,
       CASE WHEN c.score IS NULL THEN NULL WHEN c.score >= 0.5 THEN 'YES' ELSE 'NO' END, {_N}
FROM h JOIN checklist_results c ON c.run_id = h.run_id AND c.session_id = h.session_id
     AND c.repeat = h.repeat AND c.item_id = h.item_id
     JOIN s ON s.run_id = c.run_id AND s.session_id = c.session_id AND s.repeat = c.repeat
WHERE h.kind = 'checklist' AND c.run_id IN $runs AND c.grader = 'rubric'
UNION ALL
SELECT h.run_id, h.source_run, h.session_id, h.repeat, h.kind, h.item_id, NULL, h.raters,
       h.tie, h.human_label,
       CASE WHEN g.judge_error IS NOT NULL OR g.matched IS NULL THEN NULL
            WHEN g.matched THEN 'YES' ELSE 'NO' END, {_N}
FROM h JOIN triples g ON g.run_id = h.run_id AND g.session_id = h.session_id
     AND g.repeat = h.repeat AND CAST(g.idx AS VARCHAR) = h.item_id
     JOIN s ON s.run_id = g.run_id AND s.session_id = g.session_id AND s.repeat = g.repeat
WHERE h.kind = 'triple' AND g.run_id IN $runs AND g.side = 'ground_truth'
      AND s.triples_predicted > 0
"""
"""`_HUMAN_ITEMS` for the median consensus (the default): `human_pairs` with only the median
of `human_consensus` (its pieces, `views.MEDIAN_LABEL` and `MEDIAN_TIE`) and the label counts
in the same aggregation of the ratings — the view also takes the majority vote, a window and
two more aggregations and joins (~0.15 s of CPU on 1 M turns) —, and the judged items of the
kinds humans rate asked of the tables for the selected runs with `judge_labels`' conditions
(the view scans `intent_checks` twice for nothing and joins every run's lineage: ~0.02 s).
Each kind's rated items are joined to its judged table, not the judged items of all three
(225,000 on 1 M turns, a union no join reaches into) to the rated ones: 0.105 → 0.095 s CPU
on one thread. `tests/reports/test_agreement_humans_reads.py` checks the table against
`_HUMAN_ITEMS`'."""

_RATERS = """
SELECT i.run_id, h.rater, i.kind, h.label, i.judge_label, count(*) AS n
FROM items i JOIN human_ratings h ON h.run_id = i.source_run AND h.session_id = i.session_id
     AND h.repeat = i.repeat AND h.kind = i.kind AND h.item_id = i.item_id
WHERE i.judge_label IS NOT NULL GROUP BY ALL
"""
"""Counted per selected run: each rater's ratings of the rated items against the judge."""



def _code(column: str) -> str:
    """SQL for a label column's index on the row's kind's scale (worst 0): -1 for NULL, 99 for
    a label off the scale."""
    return (f"CASE WHEN {column} IS NULL THEN -1 "
            + " ".join(f"WHEN {column} = {label_at(i)} THEN {i}" for i in range(LABELS))
            + " ELSE 99 END")


_CELLS = [(c, d) for c in range(LABELS) for d in range(LABELS)]
_PER_SESSION = f"""
SELECT list_position($runs, run_id) - 1 AS r,
       list_position({list(RATED_KINDS)!r}, kind) - 1 AS k,
       CASE WHEN kind = 'trigger' THEN coalesce(list_position($types, type), 0) ELSE 0 END AS t,
       sid, {_code("human_label")} AS h, {_code("judge_label")} AS j, raters AS m,
       count(*) AS n, count(*) FILTER (WHERE tie) AS ties,
       {", ".join(f"sum(n{c} * (n{d} - {int(c == d)}))::BIGINT AS x{c * LABELS + d}"
                  for c, d in _CELLS)},
       {", ".join(f"coalesce(sum((n{c} + {JUDGE_IS[c]}) * (n{d} + {JUDGE_IS[d]} - "
                  f"{int(c == d)})) FILTER (WHERE judge_label IS NOT NULL), 0)::BIGINT "
                  f"AS y{c * LABELS + d}" for c, d in _CELLS)}
FROM items GROUP BY ALL
"""
"""Everything `--humans` counts of the rated items but the raters' own rows, in one pass: per
run, kind, trigger type, session (`sid`), consensus and judge label (their indices on the
kind's scale, `_code`) and number of ratings m, the items (`n`), their ties, and the sums of
their units' coincidences (`COINCIDENCES`' products) among the humans (`x…`) and with the
judge (`y…`, over the items the judge labelled). Keyed as `COINCIDENCES`. From these rows
(~30,000 on the 1 M-turn benchmark store) `_per_session_of` sums the label pairs, ratings and
ties per group, κ's clusters per group and session and α's units, where three statements
read `items` for them (the coincidences grouped per item and per (session, m), the pairs and
κ's clusters per session) and handed 66,000 rows to Python. An item's unit is its own row
here, so a store where rows of `items` share an item key (one item judged twice in a
session: `_FACTS`) takes α's units from `COINCIDENCES`."""

_FACTS = """
SELECT list(DISTINCT type ORDER BY type) FILTER (WHERE kind = 'trigger' AND type <> ''),
       count(*) - count(DISTINCT hash(run_id, kind, sid, repeat, item_id))
FROM items
"""
"""The trigger types of `items`, and whether rows of it share an item key (run, session,
repeat, kind, item: the headline's join key, the type left out; a hash collision only sends
α's units through `COINCIDENCES`, which counts them either way, and the headline through
its one statement)."""


def _per_session_of(columns: dict[str, Any], runs: list[str], types: list[str]
                    ) -> tuple[list[tuple[Any, ...]], Clusters, dict[str, Any]]:
    """From `_PER_SESSION`'s rows (numpy columns): the rows `groups` reads, `(run, kind,
    type, stat, …, count)` — the label pairs (`pair`, consensus and judge label, None for
    NULL), `ratings` and `ties` per run, kind and type —, κ's clusters, and α's units as
    `COINCIDENCES`' columns (`units_of` reads them). Every sum is of integers; every label is
    on its kind's scale or NULL (the caller checks: `_off_scale`)."""
    import numpy as np

    cols = {name: np.asarray(values, dtype=np.int64) for name, values in columns.items()}
    n = len(cols["n"])
    if not n:
        return [], {}, {}
    run_at, kind_at, type_at, human, judge, m, count = (
        cols[name] for name in ("r", "k", "t", "h", "j", "m", "n"))
    scales = [scale_of(kind) for kind in RATED_KINDS]
    width = len(types) + 1
    group = (run_at * len(RATED_KINDS) + kind_at) * width + type_at
    # the label pairs, ratings and ties per (run, kind, type)
    rows: list[tuple[Any, ...]] = []
    pair_keys, pairs = _sum_by((group * 4 + human + 1) * 4 + judge + 1, count)
    groups_of, ratings = _sum_by(group, m * count)
    _, ties = _sum_by(group, cols["ties"])
    for g, rated, tied in zip(groups_of.tolist(), ratings.tolist(), ties.tolist(), strict=True):
        run, kind, typ = _group_names(g, runs, types)
        rows += [(run, kind, typ, "ratings", None, None, rated),
                 (run, kind, typ, "ties", None, None, tied)]
    for key, pair in zip(pair_keys.tolist(), pairs.tolist(), strict=True):
        g, (c, d) = key // 16, divmod(key % 16, 4)
        run, kind, typ = _group_names(g, runs, types)
        scale = scales[RATED_KINDS.index(kind)]
        rows.append((run, kind, typ, "pair", scale[c - 1] if c else None,
                     scale[d - 1] if d else None, pair))
    # units: the humans' of every item, those with the judge where the judge labelled it
    labelled = np.nonzero(judge >= 0)[0]
    units = {name: np.concatenate([cols[name], cols[name][labelled]])
             for name in ("r", "k", "t", "sid")}
    units["w"] = np.concatenate([np.zeros(n, dtype=np.int64), np.ones(len(labelled), np.int64)])
    units["m"] = np.concatenate([m, m[labelled] + 1])
    for i in range(LABELS * LABELS):
        units[f"x{i}"] = np.concatenate([cols[f"x{i}"], cols[f"y{i}"][labelled]])
    return rows, _clusters_of(cols, runs, types), units


def _sum_by(key: Any, values: Any) -> tuple[Any, Any]:
    """The distinct `key`s (ascending) and the integer sum of `values` over each."""
    import numpy as np

    order = np.argsort(key, kind="stable")
    key = key[order]
    starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
    return key[starts], np.add.reduceat(values[order], starts)


def _group_names(group: int, runs: list[str], types: list[str]) -> tuple[str, str, str | None]:
    """(run, kind, type or None) of a `(run * kinds + kind) * (types + 1) + type` code."""
    rest, t = divmod(group, len(types) + 1)
    run, kind = divmod(rest, len(RATED_KINDS))
    return runs[run], RATED_KINDS[kind], types[t - 1] if t else None


Clusters = dict[tuple[str, str, str], list[list[int]]]
"""(run, kind, group) → each session's flattened confusion matrix (sorted by session id)
holding a pair on the kind's scale: κ's clusters."""


def _clusters_of(cols: dict[str, Any], runs: list[str], types: list[str]) -> Clusters:
    """κ's clusters from `_PER_SESSION`'s rows (numpy columns): per run, kind, group (a
    trigger type, and all) and session, the items whose consensus and judge labels are both on
    the kind's scale, counted in the k × k cells (a trigger type named `all` counts twice in
    the all group, as in `groups`). As a statement of their own (sorted per
    group and session) they cost ~0.05 s of CPU on 1 M turns."""
    import numpy as np

    kind_at, human, judge = cols["k"], cols["h"], cols["j"]
    k = np.array([len(scale_of(kind)) for kind in RATED_KINDS])[kind_at]
    known = np.nonzero((human >= 0) & (human < k) & (judge >= 0) & (judge < k))[0]
    if not len(known):  # no pair on a scale (ratings imported without the judge's labels)
        return {}
    typed = known[cols["t"][known] > 0]
    at = np.concatenate([known, typed])
    group_type = np.concatenate([np.zeros(len(known), dtype=np.int64), cols["t"][typed]])
    if "all" in types:
        group_type[group_type == types.index("all") + 1] = 0
    width, sessions = len(types) + 1, int(cols["sid"].max()) + 1
    group = (cols["r"][at] * len(RATED_KINDS) + kind_at[at]) * width + group_type
    cell = human[at] * k[at] + judge[at]
    keys, where = np.unique(group * sessions + cols["sid"][at], return_inverse=True)
    size = LABELS * LABELS
    cells = np.bincount(where.ravel() * size + cell, weights=cols["n"][at],
                        minlength=len(keys) * size).reshape(len(keys), size)
    cells = cells.astype(np.int64)  # counts: exact as floats far past any store's
    out: Clusters = {}
    groups = keys // sessions
    first = np.flatnonzero(np.concatenate([[True], groups[1:] != groups[:-1]])).tolist()
    for start, stop in zip(first, [*first[1:], len(keys)], strict=True):
        run, kind, typ = _group_names(int(groups[start]), runs, types)
        kk = len(scale_of(kind))
        out[(run, kind, typ or "all")] = cells[start:stop, :kk * kk].tolist()
    return out


def _off_scale(ctx: ReportContext) -> ValueError:
    """The error `stats.confusion_matrix` gives for the first label of `items` off its kind's
    scale."""
    kind, label = ctx.con.execute(
        f"SELECT kind, CASE WHEN {_code('human_label')} = 99 THEN human_label "
        f"ELSE judge_label END FROM items WHERE {_code('human_label')} = 99 "
        f"OR {_code('judge_label')} = 99 LIMIT 1").fetchone()
    return ValueError(f"label {label!r} is not one of {list(scale_of(kind))!r}")


@contextlib.contextmanager
def _rated_items(ctx: ReportContext, runs: list[str], label: str, tie: str) -> Iterator[None]:
    """`items` (`_HUMAN_ITEMS`) over `runs` as a TEMP table while the block runs: as a
    materialised CTE of one statement with the counting, the whole did not finish in 5 minutes
    on the 1 M-turn benchmark store (DuckDB 1.5.6)."""
    sql = _MEDIAN_ITEMS if (label, tie) == ("human_label", "tie") else _HUMAN_ITEMS
    items = (sql.replace("$runs", f"({literals(runs)})").replace("$label", label)
             .replace("$tie", tie))
    con = ctx.con
    try:
        # `sid`: the session's rank by id, the integer `COINCIDENCES` groups and sorts on
        con.execute("CREATE OR REPLACE TEMP TABLE items AS SELECT *, dense_rank() OVER "
                    f"(ORDER BY session_id) AS sid FROM ({items})", [ctx.min_raters])
        yield
    finally:
        con.execute("DROP TABLE IF EXISTS temp.items")


def against_humans(ctx: ReportContext, res: ReportResult,
                    lineage: dict[str, Lineage]) -> None:
    majority = ctx.consensus == "majority"
    # fixed column names chosen here, never user text, go into the SQL
    label, tie = ("human_majority", "majority_tie") if majority else ("human_label", "tie")
    res.notes.append(
        ("Human consensus: the majority vote; a tie goes to the middle label (PARTIAL), then "
         "the better one (PASS before FAIL, YES before NO), counted under ties "
         "(ProactBench's released analysis). " if majority else
         "Human consensus: the median of the raters' labels; an even number of raters whose "
         "middle labels differ gives the lower (worse) one, counted under ties. ") +
        f"Items need at least {ctx.min_raters} rating(s).")
    rated = {str(r[0]) for r in ctx.con.execute(
        "SELECT DISTINCT run_id FROM human_ratings").fetchall()}
    runs = [r for r in ctx.runs if r in lineage and lineage[r].source_run in rated]
    by_run: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    raters: dict[str, list[tuple[str, str, str, str, int]]] = defaultdict(list)
    rows: list[tuple[Any, ...]] = []
    units: Units = {}
    clusters: Clusters = {}
    unlabelled = _without_judge_labels(ctx, runs)
    ppi = None
    if runs:
        from .aside import beside
        from .judge_validity import ppi_judged, ppi_table

        # the headline's judged half (the tables alone) is read beside `items` being written
        # and counted, each cursor on half the DuckDB threads (`aside.half_threads`):
        # `items` and `human_ratings` are one row group each, and the judged tables' half,
        # asked after `items` and joined to it, cost 0.087 s CPU of the report on 1 M turns
        judgeable = [r for r in runs if r not in unlabelled]
        asked = [lambda side: ppi_judged(side, judgeable)] if judgeable else []
        with half_threads(ctx.con), beside(ctx, *asked) as later, \
                _rated_items(ctx, runs, label, tie):
            found, doubled = ctx.con.execute(_FACTS).fetchone()
            types = list(found or [])
            counted = ctx.con.execute(keyed(_PER_SESSION, runs, types)).fetchnumpy()
            if any((counted[c] == 99).any() for c in ("h", "j")):
                raise _off_scale(ctx)
            rows, clusters, coded = _per_session_of(counted, runs, types)
            units = (rated_units(ctx, runs, types) if doubled else
                     units_of(coded, runs, types) if coded else {})
            rows += [(r, kind, rater, "rater", c, d, n)
                     for r, rater, kind, c, d, n in ctx.con.execute(_RATERS).fetchall()]
            present = {str(r[0]) for r in rows if r[3] != "rater"}
            if present & set(runs):
                # the rated items of `human_pairs` these runs need are `items`, already
                # made (its `human_label` the chosen consensus): read again, the view took
                # 0.3 s of the headline's 0.6 on 1 M turns; with an item key twice in
                # `items` (`doubled`), the judged items joined to them in one statement
                ppi = ppi_table(ctx, [r for r in runs if r in present and r not in unlabelled],
                                {r: run_name(r, lineage) for r in runs}, "human_label",
                                rated="items",
                                judged=None if doubled or not asked else (judgeable,
                                                                          later(0)))
    for run, kind, typ, stat, c, d, n in rows:
        if stat == "rater":
            raters[str(run)].append((str(typ), str(kind), c, d, int(n)))
        else:
            by_run[str(run)].append((kind, typ, stat, c, d, n) if stat == "pair"
                                    else (kind, typ, stat, n))
    any_rows = False
    for run in runs:
        if run not in by_run:
            continue
        any_rows = True
        if run in unlabelled:
            res.tables.append(_raters_only(ctx, run, by_run[run], units, unlabelled[run]))
            continue
        t = Table(f"Human consensus vs {run_name(run, lineage)}", [
            *columns("humans"), Column("ratings", "ratings", "int"),
            Column("ties", "ties", "int"), Column("alpha_humans", "α humans", "float"),
            Column("alpha_all", "α humans + judge", "float")],
            notes=[ci_note(ctx), "α: Krippendorff's α (ordinal) over the rated items: among "
                   "the human raters, and with the judge as one more rater; items of one rating "
                   f"add no pairs but are drawn like the others; {ALPHA_CI}."])
        for kind, typ, cube in groups(by_run[run]):
            scale = scale_of(kind)
            t.rows.append([kind, typ, *agreement_cells(cube, scale, ctx,
                                                       clusters.get((run, kind, typ), [])),
                           cube[("ratings",)],
                           cube[("ties",)],
                           *(alpha_of_units(units.get((run, kind, typ, who), []), scale, ctx)
                             for who in ("humans", "with_judge"))])
        res.tables.append(t)
        res.tables.append(_raters(raters[run], run, lineage))
    if not any_rows:
        res.notes.append("No rated items for these runs: import ratings with `bench ratings "
                         "import FILE --run RUN_ID`.")
        return
    if ppi is not None:
        res.tables.append(ppi)




def _without_judge_labels(ctx: ReportContext, runs: list[str]) -> dict[str, list[str]]:
    """Runs made of rated items alone (`bench ratings import --format proactbench` without
    `--items`), each with the figures it cannot give (recorded by the import)."""
    out: dict[str, list[str]] = {}
    # one statement for every run (one a run, each with a bound id, cost ~1 ms apiece)
    found: dict[str, Any] = {}
    for run, value in (ctx.con.execute(f"SELECT run_id, config FROM runs WHERE run_id IN "
                                       f"({literals(runs)})").fetchall() if runs else []):
        found.setdefault(str(run), value)
    for run in runs:
        value = found.get(run)
        config = json.loads(value) if isinstance(value, str) else (
            value if isinstance(value, dict) else {})
        needs = (config.get("imported") or {}).get("needs_sample_items")
        if needs:
            out[run] = [str(x) for x in needs]
    return out


def _raters_only(ctx: ReportContext, run: str, rows: list[tuple[Any, ...]], units: Units,
                 needs: list[str]) -> Table:
    """Agreement among the raters of a run that holds no judge labels: the rated items,
    ratings, ties and α among the humans; what needs the judge is named, not shown as 0 or as
    judge errors."""
    t = Table(f"Human raters ({run}: rated items, no judge labels)", [
        Column("kind", "kind"), Column("type", "type"), Column("items", "rated items", "int"),
        Column("ratings", "ratings", "int"), Column("ties", "ties", "int"),
        Column("alpha_humans", "α humans", "float")],
        notes=[f"α: Krippendorff's α (ordinal) among the human raters over the rated items; "
               f"{ALPHA_CI}.",
               "Made from the rating files alone (no sample_items.json), so these need the "
               "judge labels and trigger types of `bench ratings import RESULTS --format "
               "proactbench --items sample_items.json`: " + "; ".join(needs) + "."])
    for kind, typ, cube in groups(rows):
        scale = scale_of(kind)
        items = sum(n for k, n in cube.items() if k[0] == "pair")
        t.rows.append([kind, typ, items, cube[("ratings",)], cube[("ties",)],
                       alpha_of_units(units.get((run, kind, typ, "humans"), []), scale,
                                      ctx)])
    return t


def _raters(rows: list[tuple[str, str, str, str, int]], run: str,
            lineage: dict[str, Lineage]) -> Table:
    """Each rater against the judge, rating by rating (to spot a rater who disagrees with
    everyone): rows `(rater, kind, label, judge label, ratings)`."""
    per: dict[tuple[str, str], dict[tuple[str, str], int]] = defaultdict(dict)
    for rater, kind, label, judged, n in rows:
        per[(rater, kind)][(label, judged)] = n
    t = Table(f"Each rater vs {run_name(run, lineage)}", [
        Column("rater", "rater"), Column("kind", "kind"), Column("ratings", "ratings", "int"),
        Column("exact", "exact", "pct"), Column("kappa_quadratic", "κ quadratic", "float")],
        notes=["Per rating, not per consensus; no CI."])
    for (rater, kind), counts in sorted(per.items()):
        matrix = stats.confusion_matrix(counts, list(scale_of(kind)))
        t.rows.append([rater, kind, sum(counts.values()), stats.agreement(matrix).exact,
                       stats.cohen_kappa(matrix, "quadratic")])
    return t


__all__ = ["against_humans"]
