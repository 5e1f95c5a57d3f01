"""Judge validity in reports: the bias-corrected headline of `bench report agreement --humans`
(prediction-powered inference, `validity.ppi_mean`), the per-session figures the judge-swap
Kendall τ resamples, and the one line every run summary carries for a judge never validated
against humans."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from . import validity
from .builtin import ReportContext
from .model import Column, Estimate, Table
from .sqltext import literals

TRIGGER_SCORE = {"PASS": 1.0, "PARTIAL": 0.5, "FAIL": 0.0}

_PPI_FIGURES: tuple[tuple[str, str, dict[str, float]], ...] = (
    ("trigger", "trigger pass rate", {"PASS": 1.0, "PARTIAL": 0.0, "FAIL": 0.0}),
    ("trigger", "trigger score", TRIGGER_SCORE),
    ("checklist", "checklist YES rate", {"YES": 1.0, "NO": 0.0}),
)


def _tables(ctx: ReportContext) -> set[str]:
    # the views a report's connection would create, not created (`views.LazyViews`)
    from .views import readable

    return readable(ctx.con)


def ppi_table(ctx: ReportContext, runs: list[str], labels: dict[str, str], label_col: str,
              rated: str = "human_pairs",
              judged: tuple[list[str], dict[str, Any]] | None = None) -> Table | None:
    """Per run and figure: the judge's figure over every judged item of the run (ablation
    variants left out, as in the headline), the human consensus on the rated ones, and the PPI
    estimate with its CI, clustered by session. `rated`: the `human_pairs` view, or a table
    of its rows for these runs (`agreement_humans`' TEMP `items`) — fixed names, never user
    text. `judged`: `ppi_judged` of runs that include `runs`, with those runs, read before
    (beside `items` being written); then only the rated items' half is asked here, of
    `rated` alone, which must hold no item key twice (`agreement_humans`' `_FACTS`)."""
    if not runs:
        return None
    import numpy as np

    if judged is not None:
        cols = _judged_and_rated(ctx, runs, label_col, rated, *judged)
    else:
        cols = _judged_with_rated(ctx, runs, label_col, rated)
    # per (run, figure) its sessions' totals, read as numpy columns (a Python loop over the
    # 14,000 rows took 0.15 s on 1 M turns); a NULL sum (no value, no rated item) is 0. The
    # run and kind as integers (their index in `runs` and `_KIND_CODES`): as text, each
    # column's `astype(str)` and every mask's string comparisons over 14,000 rows cost more
    run_col, kind_col = cols["r"], cols["k"]
    judged_col, rated_col = cols["judged"].astype(np.int64), cols["rated"].astype(np.int64)
    totals: dict[tuple[str, int], list[tuple[int, float, int, float]]] = {}
    for i, (of, _, _) in enumerate(_PPI_FIGURES):
        judge_sums: Any = np.ma.filled(np.ma.asarray(cols[f"f{i}"], dtype=float), 0.0)
        rectified: Any = np.ma.filled(np.ma.asarray(cols[f"r{i}"], dtype=float), 0.0)
        for run in runs:
            mine = (run_col == runs.index(run) + 1) & (kind_col == _KIND_CODES[of])
            if mine.any():
                totals[(run, i)] = list(zip(judged_col[mine].tolist(), judge_sums[mine].tolist(),
                                            rated_col[mine].tolist(), rectified[mine].tolist(),
                                            strict=True))
    t = Table("Bias-corrected headline (prediction-powered inference)", [
        Column("run", "run"), Column("figure", "figure"), Column("judged", "judged", "int"),
        Column("rated", "human-rated", "int"), Column("judge", "judge alone", "pct"),
        Column("rectifier", "human − judge", "pct"), Column("ppi", "PPI estimate [CI]", "pct")],
        notes=[f"PPI: {validity.PPI_CITATION}. θ̂ = mean of the judge's values over every "
               "judged item + mean of (human consensus − judge) over the human-rated items; "
               "it corrects the judge's bias as measured on the rated items, assuming they "
               "are a random sample of the judged ones.",
               f"[ ] = {ctx.level:.0%} normal CI, θ̂ ± z·SE (as in the paper), the SE clustered "
               "by session (its triggers and repeats together; influence-function sandwich, "
               "counting that the rated items are among the judged), clipped to [0, 1]; – "
               "with fewer than 2 rated items.",
               "Trigger pass rate: PASS = 1; trigger score: PASS 1, PARTIAL 0.5, FAIL 0 "
               "(ProactBench's weighted score); judge errors are left out of both sets."])
    for run in runs:
        for i, (_, title, _) in enumerate(_PPI_FIGURES):
            data = totals.get((run, i))
            if not data:
                continue
            est = validity.ppi_mean_totals(data, level=ctx.level)
            t.rows.append([labels.get(run, run), title, est.n_all, est.n_labelled,
                           Estimate(est.judge_mean), Estimate(est.rectifier),
                           Estimate(est.estimate, None, est.low, est.high, est.n_labelled)])
    return t if t.rows else None


def _judged_with_rated(ctx: ReportContext, runs: list[str], label_col: str, rated: str
                       ) -> dict[str, Any]:
    """The headline's sums per (run, kind, session) in one statement: the judged items
    joined to the rated ones (`ppi_table`)."""
    marks = literals(runs)
    # per (run, kind, session) and figure: judged items, Σ judge value, rated items,
    # Σ (human − judge) — the items are summed here, not fetched (30,000 a run on 1 M turns);
    # label_col is one of two fixed column names chosen by the caller, and the values and
    # labels come from `_PPI_FIGURES`, never user text. Of the rated items only the kinds
    # `_JUDGED` lists can match: the triples (60 % of them on 1 M turns) are left out of the
    # join's build side
    sums = [*_figure_sums("f", "j.kind", lambda v: _value_sql("j.label", v)),
            *_figure_sums("r", "j.kind", lambda v: f"{_value_sql(f'h.{label_col}', v)} - "
                                                  f"{_value_sql('j.label', v)}")]
    return dict(ctx.con.execute(f"""
        WITH j AS ({_JUDGED.replace("$runs", marks)})
        SELECT list_position([{marks}], j.run_id) AS r,
               CASE j.kind WHEN 'trigger' THEN 0 ELSE 1 END AS k, j.session_id,
               count(*) AS judged,
               count(h.{label_col}) AS rated, {", ".join(sums)}
        FROM j LEFT JOIN (SELECT * FROM {rated} WHERE kind IN ('trigger', 'checklist')) h
             ON h.run_id = j.run_id AND h.session_id = j.session_id
             AND h.repeat = j.repeat AND h.kind = j.kind AND h.item_id = j.item_id
             AND h.raters >= ?
        GROUP BY ALL""", [ctx.min_raters]).fetchnumpy())


def _figure_sums(name: str, kind: str, value: Callable[[Any], str]) -> list[str]:
    """`sum(value) FILTER (WHERE kind = …) AS {name}{i}` for each figure of `_PPI_FIGURES`
    (`value` of its label values): the headline's sums, named as `ppi_table` reads them."""
    return [f"sum({value(values)}) FILTER (WHERE {kind} = '{k}') AS {name}{i}"
            for i, (k, _, values) in enumerate(_PPI_FIGURES)]


def ppi_judged(ctx: ReportContext, runs: list[str]) -> dict[str, Any]:
    """The half of the headline the judged tables give, per (run — its index in `runs`, from
    1 —, kind, session): the judged items (`judged`) and the sums of the judge's values per
    figure (`f0`, …), as numpy columns. It reads no rated item, so `agreement --humans` reads
    it beside writing its TEMP table (`aside.beside`)."""
    marks = literals(runs)
    sums = ", ".join(_figure_sums("f", "kind", lambda v: _value_sql("label", v)))
    return dict(ctx.con.execute(f"""
        WITH j AS ({_JUDGED.replace("$runs", marks)})
        SELECT list_position([{marks}], run_id) AS r,
               CASE kind WHEN 'trigger' THEN 0 ELSE 1 END AS k, session_id,
               count(*) AS judged, {sums}
        FROM j GROUP BY ALL""").fetchnumpy())


def _judged_and_rated(ctx: ReportContext, runs: list[str], label_col: str, rated: str,
                      of: list[str], judged: dict[str, Any]) -> dict[str, Any]:
    """`_judged_with_rated`'s columns from `ppi_judged`'s (`judged`, over the runs `of`) and
    the rated items of `rated` summed apart per (run, kind, session), matched in Python:
    each rated item is one of the judged ones, once (no item key of `rated` twice), so the
    join's rows are the judged items and its sums the two halves'."""
    import numpy as np

    marks = literals(of)
    rectified = ", ".join(_figure_sums(
        "r", "h.kind", lambda v: f"{_value_sql(f'h.{label_col}', v)} - "
                                 f"{_value_sql('h.judge_label', v)}"))
    # the rated items of the judged ones (`_JUDGED`'s conditions): a judge label, a finished
    # session that is no ablation variant
    part = ctx.con.execute(f"""
        SELECT list_position([{marks}], h.run_id) AS r,
               CASE h.kind WHEN 'trigger' THEN 0 ELSE 1 END AS k, h.session_id,
               count(h.{label_col}) AS rated, {rectified}
        FROM {rated} h JOIN sessions s USING (run_id, session_id, repeat)
        WHERE h.run_id IN ({literals(runs)}) AND h.kind IN ('trigger', 'checklist')
          AND h.judge_label IS NOT NULL AND h.judge_label <> 'SKIPPED'
          AND s.status = 'finished' AND s.ablation IS NULL AND h.raters >= ?
        GROUP BY ALL""", [ctx.min_raters]).fetchnumpy()
    at = {key: i for i, key in enumerate(zip(part["r"].tolist(), part["k"].tolist(),
                                             part["session_id"].tolist(), strict=True))}
    found = np.array([at.get(key, -1) for key in zip(
        judged["r"].tolist(), judged["k"].tolist(), judged["session_id"].tolist(),
        strict=True)], dtype=np.int64)
    if len(at) != int((found >= 0).sum()):  # a rated item no judged one holds: joined
        return _judged_with_rated(ctx, runs, label_col, rated)
    hit = np.nonzero(found >= 0)[0]
    out = {"k": judged["k"], "judged": judged["judged"],
           "rated": np.zeros(len(found), dtype=np.int64)}
    out["rated"][hit] = np.asarray(part["rated"], dtype=np.int64)[found[hit]]
    # each judged row's run as its index in `runs` (0: a run of `of` not among them)
    index = np.array([0, *((runs.index(r) + 1) if r in runs else 0 for r in of)])
    out["r"] = index[np.asarray(judged["r"], dtype=np.int64)]
    for i in range(len(_PPI_FIGURES)):
        out[f"f{i}"] = judged[f"f{i}"]
        sums = np.zeros(len(found))
        sums[hit] = np.ma.filled(np.ma.asarray(part[f"r{i}"], dtype=float), 0.0)[found[hit]]
        out[f"r{i}"] = sums
    return out


_KIND_CODES = {"trigger": 0, "checklist": 1}
"""The kinds `_JUDGED` lists, as the headline's query codes them."""

_JUDGED = """
SELECT t.run_id, t.session_id, t.repeat, 'trigger' AS kind, t.trigger_id AS item_id, t.label
FROM triggers t JOIN sessions s USING (run_id, session_id, repeat)
WHERE t.run_id IN ($runs) AND s.status = 'finished' AND s.ablation IS NULL
  AND t.label IS NOT NULL AND t.label <> 'SKIPPED'
UNION ALL
SELECT c.run_id, c.session_id, c.repeat, 'checklist', c.item_id,
       CASE WHEN c.score >= 0.5 THEN 'YES' ELSE 'NO' END
FROM checklist_results c JOIN sessions s USING (run_id, session_id, repeat)
WHERE c.run_id IN ($runs) AND s.status = 'finished' AND s.ablation IS NULL
  AND c.grader = 'rubric' AND c.score IS NOT NULL
"""
"""The judged items of the headline: `judge_labels`' triggers and rubric checklist items with a
label (`label IS NOT NULL`: judge errors out), of finished sessions that are no ablation
variant — asked of the tables, where the view joins every kind of every run with the lineage
and the sessions, and the headline joined the sessions a second time for `ablation` (0.15 s of
CPU on 1 M turns). `tests/reports/test_agreement_reads.py` checks it against the view."""


def _value_sql(column: str, values: dict[str, float]) -> str:
    """`values[label]` of a label column in SQL (NULL for a NULL label)."""
    return ("CASE " + column + " " + " ".join(f"WHEN '{k}' THEN {v!r}" for k, v in values.items())
            + " END")


Figures = dict[str, dict[str, dict[str, tuple[float, float]]]]
"""run → figure → session → (sum, count)."""


def unit_figures(ctx: ReportContext, runs: list[str]) -> Figures:
    """run → figure → session → (sum, count): the figures rank stability compares (`agreement.
    _figures`: session means of COMP, F1, verified score and pass rate; trigger scores pooled
    over judged triggers), split by session so that Kendall τ can resample sessions."""
    return unit_and_pooled_figures(ctx, runs)[0]


def unit_and_pooled_figures(ctx: ReportContext, runs: list[str]
                            ) -> tuple[Figures, dict[str, dict[str, float]]]:
    """`unit_figures`, and run → `trigger score (type or all)` → the mean score over the
    run's judged triggers (`avg(score)` of `trigger_results`, as `agreement._figures` asked
    it in a query of its own, 0.1 s on 1 M turns): Σ of the sessions' sums ÷ Σ of their
    scored triggers. The same float: scores are 1, 0.5 or 0, so every sum is exact in any
    order and the one division rounds as avg's does."""
    if not runs:
        return {}, {}
    import numpy as np

    marks = ", ".join("?" * len(runs))
    out: Figures = defaultdict(lambda: defaultdict(dict))
    names = ("COMP", "triple F1", "verified score", "verified pass rate")
    # read as numpy columns and split by masks, in the rows' order (a Python loop over the
    # 33,000 rows of both queries took 0.07 s on 1 M turns)
    cols = ctx.con.execute(
        f"SELECT run_id, session_id, sum(comp) AS s0, count(comp) AS n0, sum(f1) AS s1, "
        f"count(f1) AS n1, sum(score) AS s2, count(score) AS n2, "
        f"sum(passed::INTEGER)::BIGINT AS s3, count(passed) AS n3 "
        f"FROM sessions WHERE run_id IN ({marks}) AND status = 'finished' "
        "AND ablation IS NULL GROUP BY ALL", runs).fetchnumpy()
    # the ids stay the Python strings DuckDB hands over (object arrays): converting them to
    # numpy text cost 0.02 s, and each run's rows are compared once, not once a figure
    sessions = cols["session_id"]
    of_run = {run: cols["run_id"] == run for run in runs}
    for i, name in enumerate(names):
        counted = np.asarray(cols[f"n{i}"], dtype=np.int64)
        sums: Any = np.ma.filled(np.ma.asarray(cols[f"s{i}"], dtype=float), 0.0)
        for run in runs:
            mine = of_run[run] & (counted > 0)
            if mine.any():
                out[run][name] = dict(zip(sessions[mine].tolist(),
                                          zip(sums[mine].tolist(),
                                              counted[mine].astype(float).tolist(),
                                              strict=True), strict=True))
    pooled: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0])
    # a session's unit is (Σ score, scored triggers): SKIPPED triggers (label set, score
    # NULL) are in no N, as in the pooled figure the table shows beside τ; `grouping(type)`
    # tells the all-types row from a trigger without a type. NULL and '' are one group, as
    # they are one figure ('no type'): grouped apart, a session holding both gave two rows
    # of which the unit kept one while the pooled figure added both. `trigger_results`
    # spelled out (triggers of `scored` session results) with the runs on both sides: DuckDB
    # does not carry an IN list across the join, and built its hash table of every run's
    # sessions (0.06 → 0.045 s CPU on 1 M turns)
    cols = ctx.con.execute(
        f"SELECT run_id, type, grouping(type) AS every, session_id, sum(score) AS total, "
        f"count(score) AS scored "
        f"FROM (SELECT t.run_id, coalesce(t.type, '') AS type, t.session_id, t.score "
        f"      FROM triggers t JOIN session_results s USING (run_id, session_id, repeat) "
        f"      WHERE s.scored AND t.run_id IN ({marks}) AND s.run_id IN ({marks}) "
        f"        AND t.label IS NOT NULL) "
        "GROUP BY GROUPING SETS ((run_id, type, session_id), (run_id, session_id))",
        [*runs, *runs]).fetchnumpy()
    sessions = cols["session_id"]
    of_run = {run: cols["run_id"] == run for run in runs}
    scored_col = np.asarray(cols["scored"], dtype=np.int64)
    total_col: Any = np.ma.filled(np.ma.asarray(cols["total"], dtype=float), 0.0)
    typed = cols["type"].astype(str)  # NULL or '': no type
    named = np.where(np.asarray(cols["every"]) != 0, "all",
                     np.where(typed == "", "no type", typed))
    for name in dict.fromkeys(named.tolist()):
        for run in runs:
            mine = of_run[run] & (named == name) & (scored_col > 0)
            if mine.any():
                label = f"trigger score ({name})"
                out[run][label] = dict(zip(sessions[mine].tolist(),
                                           zip(total_col[mine].tolist(),
                                               scored_col[mine].astype(float).tolist(),
                                               strict=True), strict=True))
                pooled[(run, label)] = [math.fsum(total_col[mine].tolist()),
                                        int(scored_col[mine].sum())]
    means: dict[str, dict[str, float]] = defaultdict(dict)
    for (run, name), (total, scored) in pooled.items():
        means[run][name] = total / scored
    return out, means


JUDGED_ITEMS = """
SELECT t.run_id FROM triggers t JOIN s USING (run_id, session_id, repeat)
WHERE s.status = 'finished' AND coalesce(t.label, '') <> 'SKIPPED'
UNION ALL
SELECT c.run_id FROM checklist_results c JOIN s USING (run_id, session_id, repeat)
WHERE s.status = 'finished' AND c.grader = 'rubric'
UNION ALL
SELECT g.run_id FROM triples g JOIN s USING (run_id, session_id, repeat)
WHERE s.status = 'finished' AND g.side = 'ground_truth' AND s.triples_predicted > 0
"""
"""The runs of the items `judge_labels` lists as `trigger`, `checklist` and `triple`, with
its conditions (`s`: the sessions, or some of them); the note asks this, not the view."""


def unvalidated_note(ctx: ReportContext) -> str | None:
    """One line naming the selected runs whose judge (an LLM, not the `rules` heuristic, which
    is labelled as such) judged items but was never compared with human ratings of those
    dialogues; None when there are none."""
    have = _tables(ctx)
    if "judge_labels" not in have:
        return None
    rated = "human_ratings" in have
    # the judged items of `judge_labels` (trigger, checklist, triple), asked of its tables
    # for the candidate runs only: the view unions every run's items with their lineage first
    # (0.12 s of CPU on 1 M turns); `JUDGED_ITEMS` keeps the view's conditions word for word,
    # and tests/reports/test_summary_reads.py fails if they differ. A run needs one judged
    # item: each kind is asked only for the runs no kind before it found (a run with
    # triggers is not joined with its checklist and triples: 0.06 → 0.02 s)
    cand = ctx.rows(f"""SELECT run_id, judge FROM run_lineage
        WHERE run_id IN $runs AND judge <> 'rules'
        {"AND source_run NOT IN (SELECT run_id FROM human_ratings)" if rated else ""}""")
    judges = {str(r): str(j) for r, j in cand}
    found: set[str] = set()
    for kind in JUDGED_ITEMS.split("UNION ALL"):
        todo = sorted(set(judges) - found)
        if not todo:
            break
        ids = literals(todo)
        found |= {str(r[0]) for r in ctx.rows(f"""WITH s AS (
                SELECT run_id, session_id, repeat, status, triples_predicted FROM sessions
                WHERE run_id IN ({ids})
            )
            SELECT DISTINCT run_id FROM ({kind})""")}
    rows = [(r, judges[r]) for r in sorted(found)]
    if not rows:
        return None
    return ("⚠ Judge not validated against humans: " + ", ".join(
        f"{r} (judge {j})" for r, j in rows) + " — no human ratings of these dialogues; "
            "their judged scores are the judge's alone (hint: `bench ratings import FILE --run "
            "RUN`, then `bench report agreement --humans`).")


__all__ = ["JUDGED_ITEMS", "Figures", "ppi_table", "unit_and_pooled_figures", "unit_figures",
           "unvalidated_note"]
