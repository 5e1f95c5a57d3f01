"""`bench compare`: is run B better than run A? Paired differences per protocol metric and
slice, over the units both runs share, with a clustered CI, a test (McNemar's exact test for
pass/fail, a paired cluster bootstrap for scores), Holm or BH adjustment across every row shown,
and the minimum detectable effect. Statistics in `paired.py`; the comparability guard in
`comparability.py`.

What is paired: sessions (their repeats averaged) for session metrics, triggers (their repeats
averaged) for trigger metrics, matched on the plan's stable ids. A unit with a known value in
only one run (absent from the other, or errored there outside the agent) is counted in
`only in …`, never compared and never silently dropped."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from . import paired
from .builtin import GROUPABLE, HEURISTIC
from .comparability import Difference, differences
from .model import Column, Estimate, ReportResult, Table


class CompareError(ValueError):
    """A comparison that cannot be made (one line, for `✗ compare: …`)."""


class IncomparableRuns(CompareError):
    def __init__(self, found: list[Difference]) -> None:
        self.differences = found
        super().__init__("runs differ in " + "; ".join(d.text() for d in found)
                         + " (hint: --allow-incomparable compares them anyway, bannered; "
                           "their difference is then not the agent's alone)")


@dataclass(frozen=True)
class Metric:
    key: str
    title: str
    protocols: tuple[str, ...]
    kind: Literal["binary", "continuous"]
    expr: str
    cluster: str
    """SQL over session_results `s`: the protocol's independent unit."""
    cluster_name: str
    triggers: bool = False
    """Units are triggers (`t`), not sessions."""


SCENARIO = "s.episode || ' / ' || s.name"
TASK = "coalesce(s.base_session, s.session_id)"
METRICS: tuple[Metric, ...] = (
    Metric("proc", "PROC", ("intent_tracking",), "continuous", "coalesce(s.proc_group, s.proc)",
           "s.episode", "episode"),
    Metric("comp", "COMP", ("intent_tracking",), "continuous", "s.comp", "s.episode", "episode"),
    Metric("f1", "triple F1", ("staged_disclosure",), "continuous", "s.f1", "s.episode",
           "episode"),
    Metric("score", "verified score", ("verified_outcome", "instructed_user"), "continuous",
           "s.score", TASK, "task"),
    Metric("pass", "pass rate", ("verified_outcome", "instructed_user"), "binary",
           "CAST(s.passed AS INTEGER)", TASK, "task"),
    Metric("trigger_score", "trigger score", ("trigger_rubric",), "continuous", "t.score",
           SCENARIO, "scenario", triggers=True),
    Metric("trigger_pass", "trigger pass rate", ("trigger_rubric",), "binary",
           "CAST(t.label = 'PASS' AS INTEGER)", SCENARIO, "scenario", triggers=True),
)
METRIC_KEYS = tuple(m.key for m in METRICS)


@dataclass
class CompareOptions:
    runs: Sequence[str]
    by: str | None = None
    metrics: Sequence[str] = ()
    """Metric keys (`METRIC_KEYS`); empty: every metric of the protocols present."""
    correction: Literal["holm", "bh"] = "holm"
    level: float = 0.95
    resamples: int = 2000
    seed: int = 0
    allow_incomparable: bool = False
    vary: Literal["simulator"] | None = None
    """`simulator`: the runs must differ in the simulator, and only in it (same agent, all
    else comparable); Δ is then the simulator's sensitivity, not the agent's difference."""


@dataclass
class Row:
    """One comparison of one metric in one slice (the JSON rows carry every field)."""

    baseline: str
    run: str
    group: str
    metric: Metric
    diff: paired.PairedDiff
    only_a: int
    only_b: int
    test: str
    p: float | None
    extra: dict[str, Any] = field(default_factory=dict)
    p_adj: float | None = None
    mde: float | None = None


Units = dict[str, tuple[Any, dict[int, float]]]
"""unit id → (cluster, repeat → value)."""


def _collect(con: Any, runs: Sequence[str], metric: Metric, group: str
             ) -> dict[tuple[str, str], Units]:
    marks = ", ".join("?" for _ in runs)
    protos = ", ".join(f"'{p}'" for p in metric.protocols)
    if metric.triggers:
        source = ("triggers t JOIN session_results s USING (run_id, session_id, repeat)")
        unit = "s.session_id || ' # ' || t.trigger_id"
        known = "t.label IN ('PASS', 'PARTIAL', 'FAIL')"
    else:
        source, unit, known = "session_results s", "s.session_id", f"{metric.expr} IS NOT NULL"
    rows = con.execute(f"""SELECT s.run_id, {group}, {metric.cluster}, {unit}, s.repeat,
            CAST({metric.expr} AS DOUBLE)
        FROM {source}
        WHERE s.run_id IN ({marks}) AND s.ablation IS NULL AND s.scored
          AND s.protocol IN ({protos}) AND {known}
        ORDER BY 1, 2, 4, 5""", list(runs)).fetchall()
    out: dict[tuple[str, str], Units] = defaultdict(dict)
    for run, grp, cluster, uid, repeat, value in rows:
        entry = out[(str(run), str(grp))].setdefault(str(uid), (cluster, {}))
        entry[1][int(repeat)] = float(value)
    return out


def _compare_units(a: Units, b: Units, metric: Metric, level: float, resamples: int,
                   seed: int) -> tuple[paired.PairedDiff, int, int, str, float | None,
                                       dict[str, Any]]:
    shared = sorted(set(a) & set(b))
    only_a, only_b = len(set(a) - set(b)), len(set(b) - set(a))
    pairs = []
    for uid in shared:
        ra, rb = a[uid][1], b[uid][1]
        pairs.append((a[uid][0], sum(ra.values()) / len(ra), sum(rb.values()) / len(rb)))
    diff = paired.paired_difference(pairs, level)
    extra: dict[str, Any] = {}
    if metric.kind == "binary":
        # repeats matched by index: under H0 a session's (pass, fail) and (fail, pass) repeat
        # pairs are equally likely, whatever the session's own pass probability
        b_n = c_n = unmatched = 0
        for uid in shared:
            ra, rb = a[uid][1], b[uid][1]
            for r in set(ra) & set(rb):
                b_n += ra[r] >= 0.5 > rb[r]
                c_n += rb[r] >= 0.5 > ra[r]
            unmatched += len(set(ra) ^ set(rb))
        extra.update(discordant_a=b_n, discordant_b=c_n, unmatched_repeats=unmatched)
        p = paired.mcnemar_exact(b_n, c_n) if shared else None
        test = f"McNemar exact (b={b_n}, c={c_n})"
    else:
        p = paired.cluster_bootstrap_p(pairs, resamples=resamples, seed=seed)
        test = ("paired cluster bootstrap" if p is not None else
                f"– ({diff.clusters} {metric.cluster_name}{'s' * (diff.clusters != 1)}; a test "
                f"needs ≥ {paired.MIN_CLUSTERS_TEST})")
    return diff, only_a, only_b, test, p, extra


def compare(con: Any, options: CompareOptions) -> tuple[list[Row], list[Difference]]:
    runs = list(options.runs)
    if len(runs) < 2:
        raise CompareError("give at least two runs: the baseline first, then the runs to "
                           "compare with it")
    if len(set(runs)) != len(runs):
        raise CompareError("a run is given twice; give each run once")
    unknown_metrics = [m for m in options.metrics if m not in METRIC_KEYS]
    if unknown_metrics:
        raise CompareError(f"no metric `{unknown_metrics[0]}` (hint: choose from "
                           f"{', '.join(METRIC_KEYS)})")
    if options.by is not None and options.by not in GROUPABLE:
        raise CompareError(f"cannot slice by `{options.by}` (hint: choose one of "
                           f"{', '.join(GROUPABLE)})")
    found = differences(con, runs)
    if options.vary is not None:
        found = _varied(con, runs, found, options.vary)
    if found and not options.allow_incomparable:
        raise IncomparableRuns(found)
    group = ("'all'" if options.by is None
             else f"coalesce(CAST(s.{options.by} AS VARCHAR), '(none)')")
    chosen = [m for m in METRICS if not options.metrics or m.key in options.metrics]
    rows: list[Row] = []
    base = runs[0]
    for metric in chosen:
        data = _collect(con, runs, metric, group)
        groups = sorted({g for (_, g) in data})
        for other in runs[1:]:
            for grp in groups:
                a, b = data.get((base, grp), {}), data.get((other, grp), {})
                if not a and not b:
                    continue
                diff, only_a, only_b, test, p, extra = _compare_units(
                    a, b, metric, options.level, options.resamples, options.seed)
                rows.append(Row(base, other, grp, metric, diff, only_a, only_b, test, p,
                                extra, mde=paired.mde(diff.se, diff.df)))
    adjusted = paired.CORRECTIONS[options.correction]([r.p for r in rows])
    for row, adj in zip(rows, adjusted, strict=True):
        row.p_adj = adj
    return rows, found


def _varied(con: Any, runs: Sequence[str], found: list[Difference], field: str
            ) -> list[Difference]:
    """The differences left once `field` may differ: the runs must differ in it and run one
    agent (otherwise Δ would mix the agent with the simulator)."""
    if not any(d.field == field for d in found):
        raise CompareError(f"--vary {field}: the runs do not differ in the {field} (hint: "
                           f"drop --vary to compare agents)")
    marks = ", ".join("?" for _ in runs)
    agents = {str(r[0]) for r in con.execute(
        f"SELECT DISTINCT agent FROM runs WHERE run_id IN ({marks})", list(runs)).fetchall()}
    if len(agents) > 1:
        raise CompareError(f"--vary {field}: the runs evaluate different agents "
                           f"({', '.join(sorted(agents))}); a {field} sensitivity needs one "
                           "agent run under each simulator (hint: run the same agent with "
                           "`bench run --simulator …`)")
    return [d for d in found if d.field != field]


CORRECTION_NAMES = {"holm": "Holm (family-wise error)", "bh": "Benjamini–Hochberg (false "
                    "discovery rate)"}


def _labels(con: Any, runs: Sequence[str]) -> dict[str, str]:
    from .builtin import ReportContext

    return ReportContext(con, list(runs)).labels()


def build(con: Any, options: CompareOptions) -> ReportResult:
    rows, found = compare(con, options)
    runs = list(options.runs)
    labels = _labels(con, runs)
    heuristic = {str(r[0]) for r in con.execute(
        f"SELECT run_id FROM runs WHERE judge = 'rules' AND run_id IN "
        f"({', '.join('?' for _ in runs)})", runs).fetchall()}
    if options.vary == "simulator":
        sims = {str(r[0]): str(r[1]) for r in con.execute(
            f"SELECT run_id, simulator FROM runs WHERE run_id IN "
            f"({', '.join('?' for _ in runs)})", runs).fetchall()}
        labels = {r: f"{labels[r]} · simulator {sims.get(r)}" for r in runs}
        res = ReportResult("compare", "Simulator sensitivity",
                           f"The same agent under another user simulator, against "
                           f"{labels[runs[0]]} ({runs[0]}): paired differences over the units "
                           "both runs share.", runs)
        res.notes.append("Simulator sensitivity (--vary simulator): the runs differ in the "
                         "user simulator only (same agent, pack, judge, planner, templates), "
                         "so Δ measures how much the figures depend on the simulator, not a "
                         "difference between agents.")
    else:
        res = ReportResult("compare", "Is B better than A?",
                           f"Paired differences against the baseline {labels[runs[0]]} "
                           f"({runs[0]}), over the units both runs share.", runs)
    if found:
        res.notes.append("⚠ NOT COMPARABLE (shown with --allow-incomparable): the runs differ "
                         "in " + "; ".join(d.text() for d in found) + ". A difference below "
                         "is not the agent's alone.")
    if heuristic:
        res.notes.append(f"Scores of {', '.join(sorted(heuristic))} were decided by the "
                         f"{HEURISTIC}.")
    cols = [Column("run", "run"), Column("group", options.by or "group"),
            Column("metric", "metric"), Column("a", "baseline", "pct"),
            Column("b", "this run", "pct"), Column("delta", "Δ [CI]", "pct"),
            Column("se", "SE", "pct"), Column("paired", "paired", "int"),
            Column("clusters", "clusters", "int"), Column("cluster", "cluster"),
            Column("only_a", "only in baseline", "int"),
            Column("only_b", "only in this run", "int"), Column("test", "test"),
            Column("p", "p", "pvalue"), Column("p_adj", "p adj.", "pvalue"),
            Column("mde", "MDE", "pct")]
    t = Table(f"{labels[runs[0]]} (baseline) against "
              + ", ".join(labels[r] for r in runs[1:]), cols)
    for r in rows:
        d = r.diff
        t.rows.append([labels[r.run], r.group, r.metric.title, Estimate(d.mean_a),
                       Estimate(d.mean_b), Estimate(d.delta, None, d.low, d.high, d.n),
                       Estimate(d.se), d.n, d.clusters, r.metric.cluster_name, r.only_a,
                       r.only_b, r.test, r.p, r.p_adj, Estimate(r.mde)])
    if options.by is None:
        t.columns.pop(1)
        for cells in t.rows:
            cells.pop(1)
    t.notes += [
        "Δ = this run − baseline, the mean over paired units (a session, its repeats "
        "averaged; for trigger metrics a trigger); baseline and this run are the two means over "
        "the same paired units, so they can differ from each run's headline over all its units.",
        f"[ ] = {options.level:.0%} CI: Δ ± t(clusters − 1) · SE, SE clustered (CR1) by the "
        "protocol's independent unit (`cluster`); – with fewer than two clusters.",
        "p: pass/fail metrics by McNemar's exact test over repeat-matched pairs (b = passed "
        "in the baseline only, c = in this run only; it treats pairs as independent, the "
        "clustered CI does not); scores by the paired cluster bootstrap (clusters resampled, "
        f"{options.resamples} resamples, seed {options.seed}; p = share of resampled Δ at "
        f"least as far from Δ as Δ is from 0), given from {paired.MIN_CLUSTERS_TEST} "
        "clusters on.",
        f"p adj.: {CORRECTION_NAMES[options.correction]} over all {sum(r.p is not None for r in rows)} "
        "p-values of this table (every metric, slice and run).",
        "MDE: the smallest true Δ this comparison detects with 80 % power at α = 0.05 "
        "(two-sided): (t(0.975, G − 1) + t(0.80, G − 1)) · SE; – when SE is undefined or 0.",
        "only in …: units with a known value in one run only (absent from the other, or "
        "errored there outside the agent): counted, not compared."]
    res.tables.append(t)
    return res


def render_compare(db: Any, options: CompareOptions, fmt: str = "table", *,
                   wait_s: float = 30.0) -> str:
    """`bench compare`: resolve the runs (ids or globs, in the order given: the first is the
    baseline), build the comparison and render it (HTML: the page with the runs'
    drill-down)."""
    from .access import open_store, select_runs
    from .render import render

    if len(set(options.runs)) != len(options.runs):
        raise CompareError("a run is given twice; give each run once")
    with open_store(db, wait_s=wait_s, verify=True) as con:
        runs: list[str] = []
        for pattern in options.runs:
            for run in select_runs(con, [pattern]):
                if run not in runs:
                    runs.append(run)
        options.runs = runs
        result = build(con, options)
        result.store = str(db)
        if fmt == "html":
            from .html import render_page

            return render_page([result], con)
    return render(result, fmt)
