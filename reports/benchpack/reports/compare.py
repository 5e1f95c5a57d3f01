"""`bench compare`: is run B better than run A? Paired differences per protocol metric and
slice, over the units both runs share, with a CI clustered by episode (`stats.CLUSTER`), the
cluster sign-flip test (exact; pass/fail and scores alike), Holm or BH adjustment across every
row shown, and the minimum detectable effect. Statistics in `paired.py`; the comparability
guard in `comparability.py`.

What is paired: sessions (their repeats averaged) for session metrics, triggers (their repeats
averaged) for trigger metrics, matched on the plan's stable ids. A unit with a known value in
only one run (absent from the other, or errored there outside the agent) is counted in
`only in …`, never compared and never silently dropped."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from . import paired
from .builtin import GROUPABLE, HEURISTIC
from .cluster import CLUSTER_NOTE, cluster_name, cluster_sql
from .comparability import Difference, differences
from .model import Column, Estimate, Metric, ReportResult, Table


class CompareError(ValueError):
    """A comparison that cannot be made (one line, for `✗ compare: …`)."""


class IncomparableRuns(CompareError):
    def __init__(self, found: list[Difference]) -> None:
        self.differences = found
        super().__init__("runs differ in " + "; ".join(d.text() for d in found)
                         + " (hint: --allow-incomparable compares them anyway, bannered; "
                           "their difference is then not the agent's alone)")


METRIC_ORDER = ("proc", "comp", "f1", "score", "pass", "trigger_score", "trigger_pass")
"""The order compare's tables list the metrics in, kept from before the protocols declared
them; a metric not listed follows in registry order."""


def declared_metrics() -> tuple[Metric, ...]:
    """Every protocol's compare units (`ProtocolReports.compare`), one per key: a key two
    protocols declare serves both (their sessions pooled), in registry order."""
    from .protocols import PROTOCOL_REPORTS

    by_key: dict[str, Metric] = {}
    for p in PROTOCOL_REPORTS.values():
        for m in p.compare:
            known = by_key.get(m.key)
            if known is not None:
                assert replace(known, protocols=m.protocols) == m, f"two metrics `{m.key}`"
                m = replace(known, protocols=(*known.protocols, *m.protocols))
            by_key[m.key] = m
    rank = {key: i for i, key in enumerate(METRIC_ORDER)}
    return tuple(sorted(by_key.values(), key=lambda m: rank.get(m.key, len(rank))))


METRICS: tuple[Metric, ...] = declared_metrics()
CLUSTER_SQL = cluster_sql("s")
"""Every metric's cluster: the episode (`cluster.CLUSTER`, the same as every report's)."""
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
    view_url: str | None = None
    """Base address of `bench view` (`bench compare --view-url`): the result then names the
    viewer's page of each run pair and lists the sessions that differ most with their
    side-by-side addresses. None (the library default): neither."""


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
    rows = con.execute(f"""SELECT s.run_id, {group}, {CLUSTER_SQL}, {unit}, s.repeat,
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
    if diff.se == 0.0:
        diff = _without_spread(diff, [(a[uid][0], a[uid][1], b[uid][1]) for uid in shared],
                               metric.kind == "binary", level)
    extra: dict[str, Any] = {}
    if metric.kind == "binary":
        # repeat-matched discordant pairs, for reading: McNemar over them treats every pair as
        # independent, which a task deterministic across repeats is not (the test below is not)
        b_n = c_n = 0
        for uid in shared:
            ra, rb = a[uid][1], b[uid][1]
            for r in set(ra) & set(rb):
                b_n += ra[r] >= 0.5 > rb[r]
                c_n += rb[r] >= 0.5 > ra[r]
        extra.update(discordant_a=b_n, discordant_b=c_n)
    flip = paired.sign_flip(pairs, resamples=resamples, seed=seed)
    extra.update(test_method=flip.method, differing_clusters=flip.differing)
    return diff, only_a, only_b, test_text(flip, diff.clusters, resamples), flip.p, extra


def _without_spread(diff: paired.PairedDiff,
                    units: list[tuple[Any, dict[int, float], dict[int, float]]], binary: bool,
                    level: float) -> paired.PairedDiff:
    """Differences alike in every episode (both runs pass everything, or the one everything
    the other fails) have SE 0, and Δ ± t·0 would claim Δ is known exactly. It is not: each
    run's figure is known only to its own headline interval, which at 0 % and 100 % rests on
    the number of episodes. Δ's interval is then the difference of the two runs' intervals,
    each at 1 − (1 − level)/2 (so that both hold together at `level`, by Bonferroni). Every
    compared metric lies in 0–1."""
    from .stats import headline_interval

    clusters = [c for c, _, _ in units]
    ends = []
    for side in (1, 2):
        u = headline_interval([(sum(r[side].values()), len(r[side])) for r in units],
                              binary=binary, clusters=clusters, level=(1.0 + level) / 2.0)
        if u.low is None or u.high is None:
            return diff
        ends.append((u.low, u.high))
    (low_a, high_a), (low_b, high_b) = ends
    return replace(diff, low=low_b - high_a, high=high_b - low_a)


def test_text(flip: paired.SignFlip, clusters: int, resamples: int) -> str:
    """The `test` cell: which test, how it was computed, and on how many episodes it rests."""
    unit = cluster_name(clusters)
    if flip.method == "too few":
        return f"– ({clusters} {unit}; a test needs ≥ {paired.MIN_CLUSTERS_TEST})"
    if flip.method == "equal":
        return "sign-flip (no episode differs)"
    how = "exact" if flip.method == "exact" else f"{resamples:,} random flips"
    return f"sign-flip, {how} ({flip.differing} of {clusters} {unit} differ)"


def compare(con: Any, options: CompareOptions) -> tuple[list[Row], list[Difference]]:
    runs = list(options.runs)
    if len(runs) < 2:
        raise CompareError("give at least two runs: the baseline first, then the runs to "
                           "compare with it")
    if len(set(runs)) != len(runs):
        raise CompareError("a run is given twice; give each run once")
    keys = (*METRIC_KEYS, *(m.key for m in plugin_metrics(con, runs)))
    unknown_metrics = [m for m in options.metrics if m not in keys]
    if unknown_metrics:
        raise CompareError(f"no metric `{unknown_metrics[0]}` (hint: choose from "
                           f"{', '.join(keys)})")
    if options.by is not None and options.by not in GROUPABLE:
        raise CompareError(f"cannot slice by `{options.by}` (hint: choose one of "
                           f"{', '.join(GROUPABLE)})")
    found = differences(con, runs)
    if options.vary is not None:
        found = _varied(con, runs, found, options.vary)
    if found and not options.allow_incomparable:
        raise IncomparableRuns(found)
    return compare_pairs(con, [(runs[0], other) for other in runs[1:]], options), found


def compare_pairs(con: Any, pairs: Sequence[tuple[str, str]], options: CompareOptions
                  ) -> list[Row]:
    """The rows of every (baseline, run) pair, each metric read once for all of them, with
    `options.correction` over all their p-values. No checks: `compare` makes them (the
    simulation of `benchmarks/stat_sim.py` compares thousands of pairs through here)."""
    group = ("'all'" if options.by is None
             else f"coalesce(CAST(s.{options.by} AS VARCHAR), '(none)')")
    runs = list(dict.fromkeys(r for pair in pairs for r in pair))
    rows: list[Row] = []
    for metric in chosen_metrics(options, con, runs):
        data = _collect(con, runs, metric, group)
        groups = sorted({g for (_, g) in data})
        for base, other in pairs:
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
    return rows


def banner(found: list[Difference]) -> str:
    """What every format (and `bench view`'s run-pair page) says above incomparable runs."""
    return ("⚠ NOT COMPARABLE (shown with --allow-incomparable): the runs differ in "
            + "; ".join(d.text() for d in found) + ". A difference below is not the agent's "
            "alone.")


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


# --------------------------------------------------------------------------- session pairs


def session_label(name: str | None, session_id: str) -> str:
    """The name, with the variant the plan id adds (`artist-statement@P+Q`): sessions of one
    name (a trigger pack's styles) differ only by it."""
    tail = session_id.rsplit(".", 1)[-1]
    return tail if name is None or tail.startswith(name) else name


@dataclass(frozen=True)
class SessionPair:
    """One (session, repeat) of a run pair under one metric: the values `compare` pairs
    (read by `_collect`), before it averages repeats. None: no known value in that run."""

    session_id: str
    name: str
    repeat: int
    metric: Metric
    a: float | None
    b: float | None

    @property
    def label(self) -> str:
        return session_label(self.name, self.session_id)

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a

    @property
    def discordant(self) -> bool:
        """Pass/fail metrics: passed in one run only (McNemar's b or c); scores: unequal."""
        if self.a is None or self.b is None:
            return False
        if self.metric.kind == "binary":
            return (self.a >= 0.5) != (self.b >= 0.5)
        return self.a != self.b

    def sort_key(self) -> tuple[Any, ...]:
        """Discordant first, then the largest |Δ|, then one-sided, then by name."""
        d = self.delta
        return (not self.discordant, d is None, -abs(d or 0.0), self.label, self.session_id,
                self.repeat)


def session_pairs(con: Any, a: str, b: str, metric: Metric) -> list[SessionPair]:
    """Every (session, repeat) with a known value of `metric` in run `a` or `b` (baseline and
    compared run), in `SessionPair.sort_key` order. Trigger metrics pair triggers; here a
    session's value is the mean over its known triggers in that repeat, for reading only."""
    data = _collect(con, [a, b], metric, "'all'")
    sides = []
    for run in (a, b):
        values: dict[tuple[str, int], list[float]] = defaultdict(list)
        for uid, (_, repeats) in data.get((run, "all"), {}).items():
            sid = uid.split(" # ", 1)[0] if metric.triggers else uid
            for rep, value in repeats.items():
                values[(sid, rep)].append(value)
        sides.append({k: sum(v) / len(v) for k, v in values.items()})
    keys = set(sides[0]) | set(sides[1])
    names = dict(con.execute(
        "SELECT session_id, any_value(name) FROM sessions WHERE run_id IN (?, ?) GROUP BY 1",
        [a, b]).fetchall()) if keys else {}
    pairs = [SessionPair(sid, str(names.get(sid) or sid), rep, metric, sides[0].get((sid, rep)),
                         sides[1].get((sid, rep))) for sid, rep in keys]
    pairs.sort(key=SessionPair.sort_key)
    return pairs


def metrics_present(con: Any, runs: Sequence[str]) -> list[Metric]:
    """The metrics of the protocols the runs' scored sessions have, in `METRICS` order."""
    protos = {str(r[0]) for r in con.execute(
        f"SELECT DISTINCT protocol FROM session_results WHERE run_id IN "
        f"({', '.join('?' for _ in runs)}) AND scored AND ablation IS NULL", list(runs)
    ).fetchall()}
    return [m for m in (*METRICS, *plugin_metrics(con, runs)) if protos & set(m.protocols)]


def plugin_metrics(con: Any, runs: Sequence[str]) -> list[Metric]:
    """The compare units of the plug-in protocols the runs have (`specs/plugins.py`; entry
    points are read only when a run has a protocol that is not built in). A key a built-in
    protocol has is not taken: the built-in figures stay what they were."""
    from .protocols import PROTOCOL_REPORTS, plugin_reports

    if not runs:
        return []
    names = sorted(str(r[0]) for r in con.execute(
        f"SELECT DISTINCT protocol FROM sessions WHERE run_id IN "
        f"({', '.join('?' for _ in runs)})", list(runs)).fetchall()
        if r[0] not in PROTOCOL_REPORTS)
    found = [p for p in map(plugin_reports, names) if p is not None]
    return [m for p in found for m in p.compare if m.key not in METRIC_KEYS]


def view_address(base: str, path: str, **params: Any) -> str:
    from urllib.parse import urlencode

    return base.rstrip("/") + path + "?" + urlencode(params)


MOST_DIFFERENT = 10
"""Sessions listed per compared run by `bench compare` (every one is on the viewer's page)."""


def _most_different(con: Any, options: CompareOptions, labels: dict[str, str],
                    metrics: Sequence[Metric]) -> Table:
    assert options.view_url is not None
    runs = list(options.runs)
    t = Table("Sessions that differ most (open them side by side in `bench view`)", [
        Column("run", "run"), Column("session", "session"), Column("repeat", "repeat", "int"),
        Column("metric", "metric"), Column("a", "baseline", "pct"),
        Column("b", "this run", "pct"), Column("delta", "Δ", "pct"),
        Column("view", "bench view")])
    for other in runs[1:]:
        found: dict[tuple[str, int], SessionPair] = {}
        for metric in metrics:
            for p in session_pairs(con, runs[0], other, metric):
                if p.discordant and (p.session_id, p.repeat) not in found:
                    found[(p.session_id, p.repeat)] = p
        shown = sorted(found.values(), key=SessionPair.sort_key)[:MOST_DIFFERENT]
        for p in shown:
            t.rows.append([labels[other], p.label, p.repeat, p.metric.title, p.a, p.b, p.delta,
                           view_address(options.view_url, "/pair", a=runs[0], b=other,
                                        session=p.session_id, repeat=p.repeat)])
        if not found:
            t.notes.append(f"{labels[other]}: no session run differs from the baseline.")
        elif len(found) > len(shown):
            t.notes.append(f"{labels[other]}: {len(shown)} of the {len(found)} session runs "
                           "that differ; all of them on its `bench view` page.")
    t.notes.append("A session run differs when it passed in one run only (pass/fail "
                   "metrics) or scored differently; discordant first, then by |Δ|, one "
                   "session run once (its first metric). Trigger metrics: the mean over the "
                   "session's judged triggers.")
    return t


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
        res.notes.append(banner(found))
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
                       Estimate(d.se), d.n, d.clusters, cluster_name(d.clusters), r.only_a,
                       r.only_b, r.test, r.p, r.p_adj, Estimate(r.mde)])
    if options.by is None:
        t.columns.pop(1)
        for cells in t.rows:
            cells.pop(1)
    t.notes += [
        "Δ = this run − baseline, the mean over paired units (a session, its repeats "
        "averaged; for trigger metrics a trigger); baseline and this run are the two means over "
        "the same paired units, so they can differ from each run's headline over all its units.",
        f"[ ] = {options.level:.0%} CI: Δ ± t(clusters − 1) · SE, SE clustered (CR1) by "
        "episode; – with fewer than two episodes.",
        CLUSTER_NOTE[0].upper() + CLUSTER_NOTE[1:] + ".",
        "p: the cluster sign-flip test (pass/fail and scores alike): each episode's summed "
        "difference is as likely to have the other sign when the runs do not differ, so |Σ Δ| "
        "is compared with all 2^G sign patterns (exact; past a size limit "
        f"{options.resamples:,} random patterns, seed {options.seed}). Its error rate is "
        "at most α at any number of episodes; with one paired unit of one repeat an episode "
        "it is McNemar's exact test. Given from "
        f"{paired.MIN_CLUSTERS_TEST} episodes on: with fewer no p can be below 0.05.",
        f"p adj.: {CORRECTION_NAMES[options.correction]} over all {sum(r.p is not None for r in rows)} "
        "p-values of this table (every metric, slice and run).",
        "MDE: the smallest true Δ this comparison detects with 80 % power at α = 0.05 "
        "(two-sided): (t(0.975, G − 1) + t(0.80, G − 1)) · SE; – when SE is undefined or 0.",
        "only in …: units with a known value in one run only (absent from the other, or "
        "errored there outside the agent): counted, not compared."]
    res.tables.append(t)
    if options.view_url is not None:
        for other in runs[1:]:
            res.notes.append("bench view: " + view_address(options.view_url, "/compare",
                                                           a=runs[0], b=other))
        res.tables.append(_most_different(con, options, labels,
                                          [m for m in chosen_metrics(options, con, runs)
                                           if m in metrics_present(con, runs)]))
    return res


def chosen_metrics(options: CompareOptions, con: Any = None, runs: Sequence[str] = ()
                   ) -> list[Metric]:
    """The metrics `--metric` chose (all without it): the built-in ones, and with `con` the
    plug-in protocols' of `runs`."""
    plugged = plugin_metrics(con, runs) if con is not None else []
    return [m for m in (*METRICS, *plugged) if not options.metrics or m.key in options.metrics]


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
