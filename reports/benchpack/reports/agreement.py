"""The `agreement` report: judge audits and judge swaps.

- Judge against judge (default): every pair of selected runs that judged the same dialogues
  (a run and its `bench rejudge`, or two rejudges of one run; a selected rejudge is paired with
  the run it re-judged even when that one is not selected). Rows are the first run's labels.
- Judge against humans (`--humans`): each selected run's labels against the human consensus of
  the ratings imported for its dialogues (`bench ratings import`), items with at least
  `--min-raters` ratings. Consensus: the median label; with an even number of raters whose two
  middle labels differ, the lower (worse) one, counted as a tie (`human_consensus` view).
- Rank stability (judge against judge): when the runs of several agents were re-judged by the
  same judge, Spearman ρ between the agents' rankings under the original and the new judge, per
  headline figure.

Per item kind (trigger points by type, rubric checklist items, ground-truth triples, the
intent-check audit): items, the confusion matrix, exact and within-one agreement, Cohen's κ
unweighted / linear / quadratic with seeded CIs over items (the percentile bootstrap up to
`KAPPA_EXACT_MAX` items, its normal approximation above), and
Krippendorff's α (ordinal) between the two judges, or among the humans and among humans plus
the judge, each with a seeded percentile bootstrap CI over sessions up to `ALPHA_EXACT_MAX`
sessions, the delete-one-session jackknife's normal interval (log(1 − α) scale) above
(`stats.krippendorff_alpha_ci`).
Items a judge failed on (label NULL) are counted and left out. On two-label scales (YES / NO)
the weighted κs equal the unweighted one and within-one agreement is always 1, so it is not
shown.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import stats
from .agreement_pairs import LABELS, PAIR_CELLS, audit_facts_sql, family, label_at, pair_statement
from .builtin import ReportContext
from .model import BuiltinReport, Column, Estimate, ReportResult, Table
from .ratings import SCALES
from .views import readable

KINDS = ("trigger", "checklist", "triple", "intent_completion", "intent_clarification")
TRIGGER_TYPES = ("emergent", "critical", "recovery")
WEIGHTS: tuple[stats.KappaWeights | None, ...] = (None, "linear", "quadratic")
KAPPA_EXACT_MAX = 500
"""Items up to which a κ CI is the exact percentile bootstrap over items; above, its normal
approximation with the large-sample SE of Fleiss, Cohen & Everitt (`stats.kappa_cis`). The
bootstrap costs items × resamples draws and a report holds dozens of κs, while from a few
hundred items on the two intervals agree to about the bootstrap's own Monte-Carlo noise
(reports/README.md); κ needs more items than a mean for that (skewed scales, e.g. 97 % YES),
hence not `BOOTSTRAP_EXACT_MAX`. `--exact-bootstrap N` above this raises it."""
ALPHA_EXACT_MAX = 400
"""Sessions up to which α's CI is the exact percentile bootstrap over sessions; above, the
normal interval with the delete-one-session jackknife SE on the scale of log(1 − α)
(`stats.krippendorff_alpha_ci`). Chosen by simulation with a known α
(`benchmarks/alpha_coverage.py`, 1,000 replications a design, table in benchmarks/README.md:
2 or 2-4 raters, ordinal and two labels, balanced and 97 % PASS, α 0.3 / 0.7 / 0.95): from
400 sessions on its coverage is the bootstrap's within Monte-Carlo noise on every design
(differences of either sign, at most 2.1 points below) and ≥ 93 % wherever the bootstrap's
is; at 200 it fell 2.0-2.9 points below the bootstrap on all four designs of α 0.95 at 97 %
PASS (where the bootstrap itself covered 75-85 %). It costs one α per distinct session matrix
where the bootstrap draws sessions × resamples (0.84 s of `agreement --humans` on 1 M turns).
`--exact-bootstrap N` above this raises it."""

Cube = Counter[tuple[Any, ...]]
"""Integer statistics of one (kind, type) group, keyed by what they count (summed exactly when
the types are pooled): `("pair", row label, column label)` items, `("ratings",)`, `("ties",)`,
`(who, m, c, d)` coincidences of units with m ratings (see `alpha_estimate`)."""


def scale_of(kind: str) -> tuple[str, ...]:
    return SCALES.get(kind, ("NO", "YES"))


@dataclass(frozen=True)
class Lineage:
    run_id: str
    agent: str
    judge: str
    rejudge_of: str | None
    source_run: str


def _lineage(ctx: ReportContext) -> dict[str, Lineage]:
    rows = ctx.con.execute("SELECT run_id, agent, judge, rejudge_of, source_run "
                           "FROM run_lineage").fetchall()
    return {str(r[0]): Lineage(str(r[0]), str(r[1]), str(r[2]), r[3], str(r[4])) for r in rows}


def agreement_report(ctx: ReportContext) -> ReportResult:
    res = ReportResult("agreement", "Judge agreement",
                       "Judge against human consensus (--humans)" if ctx.humans else
                       "Judge against judge on the same dialogues, and rank stability",
                       ctx.runs)
    need = "human_pairs" if ctx.humans else "judge_pairs"
    # asked of what the connection can read, not the catalog, whose listing would create
    # every view (`views.LazyViews`, ~0.03 s on 1 M turns)
    if need not in readable(ctx.con):
        res.notes.append("This store has no re-judged runs or human ratings yet (no benchpack "
                         "with `bench rejudge` has written to it).")
        return res
    lineage = _lineage(ctx)
    if ctx.humans:
        from .agreement_humans import against_humans

        against_humans(ctx, res, lineage)
    else:
        from .aside import beside

        # rank stability (its figures' statements, τ's bootstrap) on a second cursor while the
        # judge pairs are counted: each mostly waits on DuckDB or numpy, which let go of the
        # GIL, and the machine has two cores; its table still comes after theirs
        with beside(ctx, lambda side: _rank_stability(side, lineage)) as later:
            _against_judges(ctx, res, lineage)
            res.tables.append(later(0))
    if ctx.alpha_ci == "resampled":
        res.notes.append("--alpha-ci resampled: an α interval marked ‡ is the resampled "
                         "interval, not widened (as ProactBench's released analysis computes "
                         "it); with so few disagreements it can cover far less than its level.")
    return res


# --------------------------------------------------------------------------- statistics


def columns(first: str) -> list[Column]:
    return [Column("kind", "kind"), Column("type", "type"), Column("items", "items", "int"),
            Column("unjudged", "judge errors", "int"),
            Column("confusion", f"confusion (rows: {first})"),
            Column("exact", "exact", "pct"), Column("within_one", "within one", "pct"),
            Column("kappa", "κ", "float"), Column("kappa_linear", "κ linear", "float"),
            Column("kappa_quadratic", "κ quadratic", "float")]


def _exact_max(ctx: ReportContext) -> int:
    return max(ctx.exact_max, KAPPA_EXACT_MAX)


def kappa_estimates(matrix: list[list[int]], ctx: ReportContext,
                    clusters: Any = None) -> list[Estimate]:
    """Cohen's κ unweighted, linear and quadratic of a confusion matrix, each with a CI (the
    same resamples for all three). `clusters`: the matrix split by session (flattened): where
    a session holds several items (triggers, repeats), sessions are resampled whole, up to the
    exact-bootstrap limit in sessions; otherwise items are (each its own session)."""
    k = len(matrix)
    if clusters is not None and 0 < len(clusters) < sum(map(sum, matrix)):
        cis = stats.cluster_kappa_cis(clusters, k, WEIGHTS, level=ctx.level,
                                      resamples=ctx.resamples, seed=ctx.seed,
                                      exact_max=ctx.exact_max)
    else:
        cis = stats.kappa_cis(matrix, WEIGHTS, level=ctx.level, resamples=ctx.resamples,
                              seed=ctx.seed, exact_max=_exact_max(ctx))
    return [Estimate(ci.estimate, None, ci.low, ci.high, ci.n_units) for ci in cis]


def _matrix_text(matrix: list[list[int]]) -> str:
    return " / ".join(" ".join(str(c) for c in row) for row in matrix)


def agreement_cells(cube: Cube, scale: Sequence[str], ctx: ReportContext,
                    clusters: list[list[int]] | None = None) -> list[Any]:
    """items, judge errors, confusion, exact, within-one, κ, κ_lin, κ_quad of the `pair`
    counts of a group (a None label is a judge error: counted, left out); κ's clusters are
    the cube's `cluster` counts, or `clusters` (each session's flattened confusion matrix,
    sorted by session id)."""
    split = by_stat(cube)
    pairs = {(k[1], k[2]): n for k, n in split.get("pair", ())}
    if clusters is not None:
        return _cells(pairs, clusters, scale, ctx)
    index = {c: i for i, c in enumerate(scale)}
    sessions: dict[Any, list[int]] = {}
    for key, n in split.get("cluster", ()):  # ("cluster", session, row label, column label)
        if key[2] in index and key[3] in index:
            cells = sessions.setdefault(key[1], [0] * len(scale) ** 2)
            cells[index[key[2]] * len(scale) + index[key[3]]] += n
    return _cells(pairs, [sessions[s] for s in sorted(sessions, key=str)], scale, ctx)


def _cells(pairs: dict[tuple[Any, Any], int], clusters: list[list[int]],
           scale: Sequence[str], ctx: ReportContext) -> list[Any]:
    """`agreement_cells` from a group's label-pair counts (None labels included) and its
    sessions' flattened confusion matrices (sorted by session id)."""
    known = {p: n for p, n in pairs.items() if p[0] is not None and p[1] is not None}
    matrix = stats.confusion_matrix(known, list(scale))
    return _matrix_cells(matrix, sum(pairs.values()) - sum(known.values()), clusters, scale,
                         ctx)


def _matrix_cells(matrix: list[list[int]], unjudged: int, clusters: Any,
                  scale: Sequence[str], ctx: ReportContext) -> list[Any]:
    """`_cells` from the confusion matrix of the items both raters labelled and the count of
    the others (judge errors)."""
    agree = stats.agreement(matrix)
    within = agree.within_one if len(scale) > 2 else None
    items = sum(map(sum, matrix))
    return [items, unjudged, _matrix_text(matrix), agree.exact, within,
            *kappa_estimates(matrix, ctx, clusters)]


def by_stat(cube: Cube) -> dict[Any, list[tuple[tuple[Any, ...], int]]]:
    """The cube's (key, count) items by their first element (`pair`, `cluster`, a `who`):
    split once, so that the cells and each α read only their own items, where each walked
    the whole cube (0.2 s of `--humans` on 1 M turns)."""
    by: dict[Any, list[tuple[tuple[Any, ...], int]]] = defaultdict(list)
    for key, n in cube.items():
        by[key[0]].append((key, n))
    return by


def _alpha_exact_max(ctx: ReportContext) -> int:
    return max(ctx.exact_max, ALPHA_EXACT_MAX)


def alpha_of_units(units: list[list[float]], scale: Sequence[str], ctx: ReportContext) -> Estimate:
    """Krippendorff's α (ordinal) with its CI from each unit's flattened coincidences: the
    bootstrap up to `ALPHA_EXACT_MAX` units, the jackknife normal interval above (labelled
    `method="jackknife"`; the bootstrap's Estimate keeps no label, as before), with `caution`
    where too few disagreements make it untrustworthy (`stats.alpha_caution`)."""
    ci = stats.krippendorff_alpha_ci(units, "ordinal", scale, level=ctx.level,
                                     resamples=ctx.resamples, seed=ctx.seed,
                                     exact_max=_alpha_exact_max(ctx),
                                     widen=ctx.alpha_ci == "widened")
    return Estimate(ci.estimate, None, ci.low, ci.high, ci.n_units,
                    method="jackknife" if ci.method == "jackknife" else None,
                    caution=ci.caution)


def groups(rows: Iterable[tuple[Any, ...]]) -> list[tuple[str, str, Cube]]:
    """(kind, type, cube) for each kind and, for trigger points, each type then all, from rows
    `(kind, type, *key, count)`."""
    by: dict[tuple[str, str], Cube] = defaultdict(Counter)
    for kind, typ, *key, n in rows:
        by[(kind, "all")][tuple(key)] += int(n)
        if kind == "trigger" and typ:
            by[(kind, str(typ))][tuple(key)] += int(n)
    return [(kind, typ, by[(kind, typ)]) for kind, typ in _group_order(by)]


# --------------------------------------------------------------------------- judge vs judge


def judge_pairs(ctx: ReportContext, lineage: dict[str, Lineage]) -> list[tuple[str, str]]:
    """Pairs of runs that judged the same dialogues: selected runs sharing a source, and each
    selected rejudge with the run it re-judged."""
    selected = [r for r in ctx.runs if r in lineage]
    out: list[tuple[str, str]] = []
    for i, a in enumerate(selected):
        for b in selected[i + 1:]:
            if lineage[a].source_run == lineage[b].source_run:
                out.append((a, b))
    for b in selected:
        origin = lineage[b].rejudge_of
        if origin and origin in lineage and origin not in selected:
            out.append((origin, b))
    return out


def run_name(run: str, lineage: dict[str, Lineage]) -> str:
    return f"{lineage[run].judge} ({run})"


def _against_judges(ctx: ReportContext, res: ReportResult,
                    lineage: dict[str, Lineage]) -> None:
    pairs = judge_pairs(ctx, lineage)
    if not pairs:
        res.notes.append("None of these runs judged the same dialogues: select a run and its "
                         "re-judging (`bench rejudge RUN --judge …`), or a re-judged run alone.")
        return
    sources = {r: line.source_run for r, line in lineage.items()}
    facts = {str(r): (int(n), int(k)) for r, n, k in ctx.con.execute(
        audit_facts_sql(family(pairs, sources))).fetchall()}
    for a, b in pairs:
        sql, params = pair_statement(a, b, sources, facts)
        cols = ctx.con.execute(sql, params).fetchnumpy()
        t = Table(f"{run_name(a, lineage)} vs {run_name(b, lineage)} on the dialogues of "
                  f"{lineage[a].source_run}", [*columns(a),
                                               Column("alpha", "α ordinal", "float")],
                  notes=[ci_note(ctx), "α: Krippendorff's α (ordinal) between the two "
                         f"judges; {ALPHA_CI}. intent_completion and intent_clarification: the per-turn "
                         "checks of the intent-check audit, over the intents the original run "
                         "still had open."])
        for kind, typ, matrix, unjudged, clusters in _judge_groups(cols):
            scale = scale_of(kind)
            # two judges, both known: each item is a unit of two ratings, so a session's
            # coincidence matrix is its confusion matrix plus its transpose
            k = len(scale)
            turned = [i % k * k + i // k for i in range(k * k)]
            both = (clusters + clusters[:, turned]).astype(float).tolist()
            t.rows.append([kind, typ, *_matrix_cells(matrix, unjudged, clusters, scale, ctx),
                           alpha_of_units(both, scale, ctx)])
        if not t.rows:
            t.notes.append("No judged items in common.")
        res.tables.append(t)


def _judge_groups(cols: dict[str, Any]
                  ) -> list[tuple[str, str, list[list[int]], int, Any]]:
    """(kind, type, confusion matrix, judge errors, clusters) in `groups`' order from the
    columns of `PAIR_CELLS` (per kind, group and session: the k × k cells `x0`… of the pairs
    both judges labelled on the kind's scale, then `known`, those with both labels known, and
    `every`, all): the clusters a numpy array, one row per session (sorted by id) holding a
    known pair of the scale, its flattened confusion matrix. The rows are a judge pair's pairs
    summed per session in SQL, where a row per (session, label pair) read into dictionaries
    took 0.2 s of the report on 1 M turns; they come as numpy columns, cut into groups where
    the key columns change (a Python step per row took 0.03 s)."""
    import numpy as np

    width = LABELS * LABELS
    kinds, groups_, sessions_ = (np.asarray(cols[c], dtype=object)
                                 for c in ("kind", "grp", "session_id"))
    if not len(kinds):
        return []
    counts = np.stack([np.asarray(cols[c], dtype=np.int64) for c in
                       [*(f"x{i}" for i in range(width)), "known", "every"]], axis=1)
    # the rows come sorted by kind, group and session (`PAIR_CELLS`): each group a run of rows
    changes = (kinds[1:] != kinds[:-1]) | (groups_[1:] != groups_[:-1])
    bounds = [0, *(np.flatnonzero(changes) + 1).tolist()]
    found: dict[tuple[str, str], tuple[Any, Any, Any]] = {}
    for start, stop in zip(bounds, [*bounds[1:], len(kinds)], strict=True):
        kind, group = str(kinds[start]), str(groups_[start])
        k = len(scale_of(kind))
        part = counts[start:stop]
        flat = part[:, [c * LABELS + d for c in range(k) for d in range(k)]]
        if int(flat.sum()) != int(part[:, width].sum()):
            # a label off the kind's scale: as `stats.confusion_matrix` says of it
            raise ValueError(f"a {kind} label is not one of {list(scale_of(kind))!r}")
        sessions = sessions_[start:stop]
        if (sessions[1:] == sessions[:-1]).any():
            # a trigger type named `all` counts in both, as in `groups`: sum its sessions
            # (sorted, so a session's two rows are neighbours)
            listed, flat, part = sum_sessions(sessions.tolist(), flat, part)
            sessions = np.asarray(listed, dtype=object)
        found[(kind, group)] = (sessions, flat, part)
    out = []
    for kind, typ in _group_order(found):
        k = len(scale_of(kind))
        _, flat, part = found[(kind, typ)]
        summed = flat.sum(axis=0).tolist()
        matrix = [summed[r * k:(r + 1) * k] for r in range(k)]
        known, every = int(part[:, width].sum()), int(part[:, width + 1].sum())
        out.append((kind, typ, matrix, every - known, flat[flat.any(axis=1)]))
    return out


def sum_sessions(sessions: list[Any], flat: Any, part: Any) -> tuple[list[Any], Any, Any]:
    """A group's rows (sessions, cells, counts) summed per session, sorted by session."""
    import numpy as np

    once = sorted(set(sessions), key=str)
    at = [{s: i for i, s in enumerate(once)}[s] for s in sessions]
    cells = np.zeros((len(once), flat.shape[1]), dtype=np.int64)
    counts = np.zeros((len(once), part.shape[1]), dtype=np.int64)
    np.add.at(cells, at, flat)
    np.add.at(counts, at, part)
    return once, cells, counts


def _group_order(present: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (kind, type) groups present, in the tables' order: the known kinds, then others by
    name; trigger points by type, then all."""
    have = set(present)
    order = []
    for kind in [*KINDS, *sorted({k for k, _ in have} - set(KINDS))]:
        for typ in (*TRIGGER_TYPES, "all") if kind == "trigger" else ("all",):
            if (kind, typ) in have:
                order.append((kind, typ))
    return order


ALPHA_CI = ("its [ ] resamples sessions (each session's items together, so items where a "
             "session holds one), recomputing α from the resampled coincidences, with the "
             "resamples and seed of κ; resamples with one value only (α undefined) are left "
             "out, as in ProactBench's released analysis; above "
             f"{ALPHA_EXACT_MAX} sessions (`--exact-bootstrap N` raises it) it is instead the "
             "normal interval with the delete-one-session jackknife SE on the scale of "
             "log(1 − α) (JSON method `jackknife`); α undefined (no variation) is –; ‡ after "
             f"an interval: fewer than {stats.ALPHA_MIN_DISAGREEING} disagreeing pairable "
             f"values or fewer than {stats.ALPHA_MIN_OFF_MODE} off the most common label, too "
             "few for resampling (it covered as little as 28 % in simulation), so the "
             "interval is widened to take in the Clopper–Pearson interval of the disagreement "
             "count; wide, and still not to be read as calibrated (JSON `caution`)")


def ci_note(ctx: ReportContext) -> str:
    return (f"[ ] = {ctx.level:.0%} CI over sessions (their items and repeats together): "
            f"percentile bootstrap ({ctx.resamples} resamples, seed {ctx.seed}) up to "
            f"{ctx.exact_max} sessions, above it its normal approximation (linearised SE over "
            f"session totals); where every session holds one item, over items: the bootstrap "
            f"up to {_exact_max(ctx)} items, above it the normal approximation with the "
            "large-sample SE of Fleiss, Cohen & Everitt (1969). α: the bootstrap up to "
            f"{_alpha_exact_max(ctx)} sessions, the jackknife normal interval above. "
            "Confusion rows are the first rater's labels, worst first (FAIL PARTIAL PASS or "
            "NO YES), columns the second's.")


# --------------------------------------------------------------------------- rank stability


_FIGURES = (("comp", "COMP"), ("f1", "triple F1"), ("score", "verified score"),
            ("passed", "verified pass rate"))


def _figures(ctx: ReportContext, runs: list[str],
             trigger_means: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """run → figure → value: session means of the re-judged figures and trigger weighted
    scores pooled over triggers (overall and per type: `trigger_means`, from the query of
    `judge_validity.unit_and_pooled_figures`)."""
    if not runs:
        return {}
    marks = ", ".join("?" * len(runs))
    out: dict[str, dict[str, float]] = defaultdict(dict)
    rows = ctx.con.execute(
        f"SELECT run_id, avg(comp), avg(f1), avg(score), avg(passed::INTEGER) FROM sessions "
        f"WHERE run_id IN ({marks}) AND status = 'finished' AND ablation IS NULL "
        "GROUP BY run_id", runs).fetchall()
    for run, *values in rows:
        for (_, name), v in zip(_FIGURES, values, strict=True):
            if v is not None:
                out[str(run)][name] = float(v)
    for run, means in trigger_means.items():
        out[run].update(means)
    return out


def _rank_stability(ctx: ReportContext, lineage: dict[str, Lineage]) -> Table:
    groups: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for b in ctx.runs:
        origin = lineage[b].rejudge_of if b in lineage else None
        if origin and origin in lineage:
            groups[(lineage[origin].judge, lineage[b].judge)].append((origin, b))
    t = Table("Rank stability: agents ranked under each judge", [
        Column("judges", "judge → new judge"), Column("figure", "figure"),
        Column("agents", "agents", "int"), Column("rho", "Spearman ρ", "float"),
        Column("tau", "Kendall τ [CI]", "float"),
        Column("before", "ranking, original judge"), Column("after", "ranking, new judge")],
        notes=["ρ = 1: the new judge ranks the agents exactly as the original did. Figures are "
               "means over sessions (COMP, F1, verified score and pass rate) or pooled over "
               "judged triggers (trigger scores); PROC is not re-judged.",
               f"τ: Kendall's τ-b (ties corrected) between the two rankings; [ ] = "
               f"{ctx.level:.0%} percentile bootstrap over sessions ({ctx.resamples} "
               f"resamples, seed {ctx.seed}): the same resampled sessions for every agent and "
               "both judges, every figure recomputed; with few agents τ takes few values, so "
               "the interval is coarse."])
    runs = sorted({r for pairs in groups.values() for p in pairs for r in p})
    from .judge_validity import unit_and_pooled_figures
    from .validity import kendall_tau_cis

    per_unit, trigger_means = unit_and_pooled_figures(ctx, runs)
    figures = _figures(ctx, runs, trigger_means)
    # rows and their τ's inputs; the τs are computed together (`kendall_tau_cis`: figures
    # over the same sessions share their resamples' product)
    pending: list[tuple[list[Any], tuple[dict[str, Any], dict[str, Any]]]] = []
    for (ja, jb), pairs in groups.items():
        agents = Counter(lineage[a].agent for a, _ in pairs)
        names = {a: lineage[a].agent if agents[lineage[a].agent] == 1 else
                 f"{lineage[a].agent} ({a})" for a, _ in pairs}
        keys = sorted({k for a, b in pairs for k in figures.get(a, {})
                       if k in figures.get(b, {})}, key=_figure_order)
        for key in keys:
            both = [(names[a], figures[a][key], figures[b][key]) for a, b in pairs
                    if key in figures.get(a, {}) and key in figures.get(b, {})]
            if len(both) < 2:
                continue
            rho = stats.rank_stability({n: x for n, x, _ in both}, {n: y for n, _, y in both})
            shown = {n for n, _, _ in both}
            pending.append(([f"{ja} → {jb}", key, len(both), rho,
                             _ranking([(n, x) for n, x, _ in both]),
                             _ranking([(n, y) for n, _, y in both])],
                            ({names[a]: per_unit[a][key] for a, _ in pairs if names[a] in shown},
                             {names[a]: per_unit[b][key] for a, b in pairs
                              if names[a] in shown})))
    taus = kendall_tau_cis([inputs for _, inputs in pending], level=ctx.level,
                           resamples=ctx.resamples, seed=ctx.seed)
    for (row, _), tau in zip(pending, taus, strict=True):
        t.rows.append([*row[:4], Estimate(tau.tau, None, tau.low, tau.high, tau.units,
                                          caution=tau.caution), *row[4:]])
    # a note only then: other reports stay as they were
    if any(tau.raised for tau in taus):
        t.notes.append(TAU_RAISED)
    if any(tau.untrusted for tau in taus):
        t.notes.append(TAU_UNTRUSTED)
    if not t.rows:
        t.notes.append("Needs the re-judged runs of at least two agents by the same judge "
                       "(`bench rejudge` each agent's run, then select the rejudges).")
    return t


TAU_RAISED = (
    "‡ after τ's interval: its upper end raised above the percentile's (JSON `caution`, "
    "with the percentile's end). Noise in the figures only breaks a concordant ranking, so "
    "near τ = 1 the sample's τ falls below the true one and the resampled τs further below "
    "it: the percentile interval covered as little as 12 % in simulation (8 agents, 50 "
    "sessions, τ 1). With 4 or more agents the upper end is raised by twice the resampled "
    "τs' mean shortfall from the sample's τ, and to 1 when within one discordant pair "
    "(2 / C(agents, 2)) of it; so raised it covered ≥ 93.9 % with 4-8 agents (not with "
    "10-12 at 50 sessions: 77-85 %).")


TAU_UNTRUSTED = (
    "‡ after τ's interval with 9 or more agents whose figures move under resampling by 0.7 "
    "or more of their mean spacing (JSON `caution`): the interval cannot be trusted. "
    "Neighbouring agents then change places in most resamples; in simulation (9-12 agents, "
    "τ 0.61-1, 50-200 sessions) such intervals covered 75-100 % by design, 89 % in all, even "
    "raised; the others ≥ 92 %, within the simulation's margin of 93 %. More sessions "
    "bring the figures' noise down against their spacing.")


def _figure_order(key: str) -> tuple[int, str]:
    names = [n for _, n in _FIGURES]
    if key in names:
        return names.index(key), key
    return len(names), key


def _ranking(scores: list[tuple[str, float]]) -> str:
    ordered = sorted(scores, key=lambda x: (-x[1], x[0]))
    return " > ".join(f"{n} {100 * v:.1f}" for n, v in ordered)


AGREEMENT = BuiltinReport(
    "agreement", "Judge agreement", "judge vs judge (a run and its rejudge) or vs human "
    "consensus (--humans): κ, α, confusion, rank stability", agreement_report)

__all__ = ["AGREEMENT", "ALPHA_CI", "ALPHA_EXACT_MAX", "LABELS", "PAIR_CELLS", "TAU_RAISED",
           "TAU_UNTRUSTED",
           "Lineage",
           "agreement_cells", "agreement_report", "alpha_of_units", "by_stat", "ci_note", "columns", "groups",
           "judge_pairs", "kappa_estimates", "label_at", "run_name", "scale_of",
           "sum_sessions"]
