"""The built-in reports: the seeds' tables, computed from the store's views with their
uncertainty.

Uncertainty, everywhere the same way: a figure is the mean over its units (macro); `± std` is
the sample standard deviation of the per-repeat figures (only with ≥ 2 repeats); `(SE …)` the
clustered standard error and `[low, high]` the CI over the right unit (cluster) — sessions (all
their repeats together) for PROC, COMP, P/R/F1 and scores, sessions too for trigger rates (a
dialogue's triggers and repeats together, the rate pooled over triggers), tasks for pass@k:
Clopper–Pearson with the clusters' design effect for pass/fail figures, estimate ± t·SE for
the others (`stats.headline_interval`); `†` marks fewer than 10 clusters. A session the agent errored in
counts with the protocol's worst score (`session_results.scored`); unknown values (judge
errors, sessions errored outside the agent) are left out, never counted as 0, and every table
counts the errored sessions it leaves out (`excluded`). Aggregation happens in SQL; Python sees
one row per group (or per unit where a CI resamples them exactly).

Here: the context and the helpers every report shares, and the generic reports (summary,
interaction, cost, judge-errors); each protocol's reports are in `protocols/<name>.py`.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from benchpack.specs.storeformat import EXACT_COST

from . import stats
from .cluster import cluster_sql
from .cost import UNPRICED, cost, measured
from .model import BuiltinReport, Column, Estimate, ReportResult, Table
from .sqltext import literals
from .views import MAYBE_ALONE

BOOTSTRAP_EXACT_MAX = 50
"""Units up to which a CI is the exact percentile bootstrap; above, its normal approximation
(`stats.normal_ci`). Resampling costs units × resamples pure-Python draws (~10 ms an interval
at 50 units, and a big report holds hundreds of intervals), while from about 30 units on the
two intervals agree to a fraction of a half-width (reports/README.md)."""

AFFECTED_SESSIONS_SHOWN = 100
"""The judge-errors report lists at most this many sessions (a big store can have thousands)."""
HEURISTIC = "keyword heuristic: rules judge"
"""How a figure the `rules` judge decided is labelled wherever it is shown."""

GROUPABLE = ("domain", "category", "difficulty", "persona", "style", "episode", "language",
             "protocol", "name")
"""Session columns a report may be grouped by (`--by`)."""


@dataclass
class ReportContext:
    con: Any
    runs: list[str]
    by: str | None = None
    level: float = 0.95
    resamples: int = 2000
    seed: int = 0
    humans: bool = False
    """`agreement`: compare judges with human consensus instead of with each other."""
    min_raters: int = 1
    """`agreement --humans`: ratings an item needs to enter the comparison."""
    exact_max: int = BOOTSTRAP_EXACT_MAX
    consensus: str = "median"
    """`agreement --humans`: the human consensus, `median` (lower on ties) or `majority` (ties:
    the middle of the scale, then the better label)."""
    alpha_ci: str = "widened"
    """`agreement`: where too few disagreements leave α's resampled interval untrustworthy
    (`stats.alpha_caution`), `widened` takes in the disagreement count's interval, `resampled`
    prints the resampled interval as ProactBench's released analysis does; marked ‡ either way."""
    sessions: list[str] = field(default_factory=list)
    """`explain`: session names or plan ids (globs) to cover; empty: all."""
    limit: int = 0
    """Long tables (`cost --by`): at most this many rows per run, the table saying how many
    it leaves out (`Table.more`); 0: all."""
    db: str | Path | None = None
    """The store's file, where a report may keep what it derived from an unchanged file
    (`benchpack.specs.storefile.store_facts`); None: nothing kept."""
    memo: dict[str, Any] = field(default_factory=dict, repr=False)
    """What one report asks twice of the same runs, kept for the build (`plugin_metrics.
    plugin_protocols`: the summary's simulator note and its plug-in tables)."""
    _labels: dict[str, str] | None = field(default=None, init=False, repr=False)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run `sql` with `$runs` bound to the selected run ids."""
        return list(self.con.execute(sql.replace("$runs", self._in()), list(params)).fetchall())

    def rules_judged(self) -> set[str]:
        """The selected runs whose judge was `rules` (a keyword heuristic, not a judge)."""
        return {str(r[0]) for r in self.rows(
            "SELECT run_id FROM runs WHERE run_id IN $runs AND judge = 'rules'")}

    def beside(self) -> ReportContext:
        """This context over a cursor of its connection (`views.LazyViews.cursor`: its own
        TEMP views), with the same runs, options, labels and memo (`aside.beside`)."""
        other = replace(self, con=self.con.cursor())
        other._labels = self._labels
        return other

    def _in(self) -> str:
        return f"({literals(self.runs)})"

    def labels(self) -> dict[str, str]:
        """Run id → what to call it in a table: the agent, plus the run id when two selected runs
        evaluate the same agent."""
        if self._labels is not None:
            return self._labels
        # the adapter's own name (`litellm:gpt-4o`, `scripted:agent.yaml`), not the CLI spec;
        # the sessions grouped by run before the join (joined first, 100,000 sessions were
        # hashed into the join: 0.015 -> 0.002 s CPU on 1 M turns)
        return self.labels_of(self.rows("""SELECT r.run_id, coalesce(s.agent, r.agent),
            r.pack_name FROM runs r LEFT JOIN (
                SELECT run_id, any_value(agent) AS agent FROM sessions WHERE run_id IN $runs
                GROUP BY run_id) s USING (run_id)
            WHERE r.run_id IN $runs"""))

    def labels_of(self, rows: Sequence[tuple[Any, ...]]) -> dict[str, str]:
        """The labels (`labels`) from (run id, agent, pack) of every selected run, where the
        agent is a session's (any) or else the run's: for a report whose own query over the
        runs' sessions reads them anyway (the summary), kept as if `labels` had read them."""
        labels = {str(r): str(a) for r, a, _ in rows}
        for suffix in (2, 0):  # still ambiguous: add the pack, then the run id
            counts: dict[str, int] = defaultdict(int)
            for label in labels.values():
                counts[label] += 1
            if all(n == 1 for n in counts.values()):
                break
            labels = {str(row[0]): (f"{labels[str(row[0])]} · {row[suffix]}"
                                    if counts[labels[str(row[0])]] > 1 else labels[str(row[0])])
                      for row in rows}
        self._labels = labels
        return labels

    def share_labels(self, other: ReportContext) -> None:
        """Take the labels `other` (over the same runs) has read, if it has: reports built
        together read them once (`api._build`; ~0.02 s a report on 1 M turns)."""
        if other.runs == self.runs and self._labels is None:
            self._labels = other._labels

    def ci_note(self, unit: str = "sessions") -> str:
        return ("± = sample std (ddof 1) of the per-repeat figures, not an uncertainty of the "
                "mean; " + stats.interval_note(self.level, unit))

    def interval(self, totals: Sequence[tuple[float, float]], *, binary: bool,
                 macro: bool = True, std: float | None = None,
                 bounds: tuple[float, float] | None = (0.0, 1.0),
                 clusters: Sequence[Any] | None = None) -> Estimate:
        """The headline interval (`stats.headline_interval`) of `(sum, count)` per unit, the
        units grouped into `clusters` (episodes; None: each unit its own)."""
        return Estimate.of(stats.headline_interval(totals, binary=binary, macro=macro,
                                                   level=self.level, bounds=bounds,
                                                   clusters=clusters), std)

    def bootstrap(self, units: Sequence[Sequence[float]], statistic: Literal["mean", "unit_mean"]
                  ) -> stats.BootstrapCI:
        return stats.bootstrap_ci(units, statistic, level=self.level, resamples=self.resamples,
                                  seed=self.seed, exact_max=self.exact_max)

    def estimates(self, obs: str, keys: int, metrics: int,
                  bounds: Sequence[tuple[float, float] | None] | None = None
                  ) -> dict[tuple[Any, ...], list[Estimate]]:
        """Macro figures per group, aggregated in SQL. `obs` selects `keys` group columns, then
        the cluster (the episode, `stats.CLUSTER`), the unit (a session, a task), the repeat and
        `metrics` values (NULL = unknown; |value| < 1e14), one row per observation.

        Per group and metric: the mean of the per-unit means; `std` over the per-repeat means;
        the SE and CI clustered by episode (`stats.headline_interval`: Clopper–Pearson with
        the design effect when every value is 0 or 1, else t) clipped to the metric's `bounds`
        (default 0–1). Means are summed as DECIMAL(38, 18): unlike DuckDB's parallel float
        sums, that does not depend on the order rows arrive in, so figures do not change from
        one run to the next. A group without a known value of a metric gets `Estimate(None)`."""
        k = ", ".join(f"k{i}" for i in range(keys))
        v = ", ".join(f"v{i}" for i in range(metrics))
        cast = ", ".join(f"CAST(v{i} AS DOUBLE) AS v{i}" for i in range(metrics))
        ms = ", ".join(str(i) for i in range(metrics))
        # one row per known value, its metric a number (UNPIVOT's names, strings, made the
        # grouping below a third slower); NULLs left out, as UNPIVOT leaves them out
        rows = self.rows(f"""
            WITH long AS (
                SELECT * FROM (
                    SELECT {k}, cluster, unit, repeat, unnest([{ms}]) AS m, unnest([{v}]) AS x
                    FROM (SELECT {k}, cluster, unit, repeat, {cast}
                          FROM ({obs}) o({k}, cluster, unit, repeat, {v})))
                WHERE x IS NOT NULL
            ), g AS (
                -- each unit's (session's) mean over its repeats, and each repeat's mean over
                -- the units, from one aggregation of `long` (two, and `long` materialised
                -- for them, cost a quarter more)
                SELECT {k}, m, unit, repeat, grouping(unit) AS by_repeat,
                       any_value(cluster) AS cluster,
                       (sum(x::DECIMAL(38, 18)) / count(*))::DOUBLE AS mean,
                       count(*) AS cnt, bool_and(x = 0 OR x = 1) AS is01
                FROM long GROUP BY GROUPING SETS (({k}, m, unit), ({k}, m, repeat))
            )
            SELECT {k}, m, list((mean, cnt, cluster)) FILTER (WHERE by_repeat = 0),
                   bool_and(is01) FILTER (WHERE by_repeat = 0),
                   list(mean ORDER BY repeat) FILTER (WHERE by_repeat = 1)
            FROM g GROUP BY ALL""")
        # the units in no order (sorting them was a third of this query on 1 M turns): an
        # interval's sums are exact (fsum), so their order changes no digit
        # (tests/reports/test_summary_reads.py); one list of triples keeps each unit's
        # mean, count and cluster together
        out: dict[tuple[Any, ...], list[Estimate]] = {}
        for row in rows:
            key, metric = tuple(row[:keys]), int(row[keys])
            units, binary, repeat_means = row[keys + 1:]
            spread = stats.mean_std(repeat_means)
            clip = (0.0, 1.0) if bounds is None else bounds[metric]
            ests = out.setdefault(key, [Estimate(None)] * metrics)
            ests[metric] = self.interval([(m * c, c) for m, c, _ in units],
                                         # a difference is never a proportion
                                         binary=bool(binary) and (clip is None or clip[0] >= 0),
                                         std=spread.std, bounds=clip,
                                         clusters=[u[2] for u in units])
        return out


ReportFn = Callable[[ReportContext], ReportResult]

EXCLUDED_NOTE = ("sessions = session runs (each repeat once, ablation variants not included) in "
                 "the figures: finished, and those the agent errored in, scored as failures "
                 "(PROC 0, COMP 0, pass false, triggers FAIL); excluded = session runs that "
                 "errored outside the agent (infrastructure, simulator, judge), left out.")


TAG_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")


def _tag_expr(key: str) -> str:
    """A session's values of its `key:value` tags (sorted, `, `-joined when several), NULL
    when it has none. `key` is checked against TAG_KEY before it reaches the SQL."""
    prefix = f"{key}:"
    return (f"nullif(array_to_string(list_sort(list_transform(list_filter("
            f"CAST(json_extract(extra, '$.tags') AS VARCHAR[]), "
            f"lambda x: starts_with(x, '{prefix}')), lambda x: x[{len(prefix) + 1}:])), ', '), '')")


def _group_expr(ctx: ReportContext) -> str:
    if ctx.by is None:
        return "'all'"
    if ctx.by in GROUPABLE:
        return f"coalesce(CAST({ctx.by} AS VARCHAR), '(none)')"
    # any other key groups by the sessions' `key:value` tags; a key no selected session
    # carries is a mistake (a typo), not one big `(none)` group
    if TAG_KEY.fullmatch(ctx.by) and ctx.rows(
            f"SELECT 1 FROM sessions WHERE run_id IN $runs AND {_tag_expr(ctx.by)} IS NOT NULL "
            "LIMIT 1"):
        return f"coalesce({_tag_expr(ctx.by)}, '(none)')"
    raise ValueError(f"cannot group by `{ctx.by}`; choose one of {', '.join(GROUPABLE)}, or the "
                     "key of a `key:value` tag of the selected sessions")


def group_expr(ctx: ReportContext) -> str:
    """`--by` as an SQL expression over `sessions` (a column, or a tag key checked against the
    selected sessions), for the reports of other modules (`cost`)."""
    return _group_expr(ctx)


def excluded_text(kinds: dict[str, int]) -> str:
    """`{kind: sessions}` of errored sessions left out → "2 judge errors, 1 simulator error"."""
    return ", ".join(f"{n} {kind} error{'' if n == 1 else 's'}"
                     for kind, n in sorted(kinds.items()) if n)


def excluded_by_kind(ctx: ReportContext, where: str, group: str = "'all'"
              ) -> dict[tuple[str, str], str]:
    """(run, group) → the errored sessions `where` leaves out of the figures, by kind."""
    kinds: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for run, grp, kind, n in ctx.rows(f"""SELECT run_id, {group},
            coalesce(error_kind, 'unclassified'), count(*) FROM session_results
            WHERE {where} AND NOT scored GROUP BY ALL"""):
        kinds[(run, grp)][kind] = n
    return {key: excluded_text(v) for key, v in kinds.items()}


def metric_table(ctx: ReportContext, title: str, protocol_filter: str,
                  metrics: list[tuple[str, str, str]], extra_notes: list[str],
                  judged: bool = True) -> Table:
    """One row per (agent, group): macro estimates of `metrics` = (column expr, key, title)
    over the `scored` sessions, the errored ones left out counted in `excluded`; `judged`:
    the run's judge decided them (the rules judge's heuristic is then named)."""
    labels = ctx.labels()
    group = _group_expr(ctx)
    base = f"run_id IN $runs AND ablation IS NULL AND {protocol_filter}"
    where = f"{base} AND scored"
    # the sessions each row counts and the errored ones it leaves out, by kind, in one pass
    # (two before: `excluded_by_kind`, and a count whose `SELECT *` subquery read every
    # column of `sessions`, 0.05 s of the summary on 1 M turns); a NULL `scored` counts in
    # neither, as before
    kinds: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    counted: dict[tuple[str, str], int] = {}
    for run, grp, scored, kind, n in ctx.rows(f"""SELECT run_id, {group} AS grp, scored,
            CASE WHEN NOT scored THEN coalesce(error_kind, 'unclassified') END, count(*)
            FROM session_results WHERE {base} GROUP BY ALL ORDER BY run_id, grp"""):
        counted[(run, grp)] = counted.get((run, grp), 0) + (n if scored is True else 0)
        if scored is False:
            kinds[(run, grp)][kind] = n
    excluded = {key: excluded_text(v) for key, v in kinds.items()}
    sessions = [(run, grp, n) for (run, grp), n in counted.items()]
    cols = ", ".join(expr for expr, _, _ in metrics)
    estimates = ctx.estimates(f"""SELECT run_id, {group}, {cluster_sql()}, session_id, repeat,
        {cols} FROM session_results WHERE {where}""", 2, len(metrics))
    # scores the rules judge decided are word counts: say so, in the title when every run
    # was judged so (once, not on every column), else on those runs' rows
    heuristic = ctx.rules_judged() if judged else set()
    every = bool(heuristic) and heuristic >= set(ctx.runs)
    table = Table(f"{title} ({HEURISTIC})" if every else title,
                  [Column("agent", "agent"), Column("group", ctx.by or "group"),
                   Column("sessions", "sessions", "int")]
                  + [Column(key, t, "pct") for _, key, t in metrics]
                  + [Column("excluded", "excluded")],
                  notes=[ctx.ci_note(), *extra_notes, EXCLUDED_NOTE])
    for run, grp, n in sessions:
        none = [Estimate(None)] * len(metrics)
        label = f"{labels[run]} ({HEURISTIC})" if run in heuristic and not every else labels[run]
        table.rows.append([label, grp, n, *estimates.get((run, grp), none),
                           excluded.get((run, grp), "")])
    if ctx.by is None:
        table.columns.pop(1)
        for cells in table.rows:
            cells.pop(1)
    return table


# --------------------------------------------------------------------------- reports


def headline_pooled(ctx: ReportContext) -> dict[str, dict[str, Estimate]]:
    """The headline columns the protocols pool themselves (`ProtocolReports.headline`):
    column key → run → figure."""
    from .protocols import PROTOCOL_REPORTS  # those modules build on this one

    return {p.headline[0]: p.headline[1](ctx) for p in PROTOCOL_REPORTS.values()
            if p.headline is not None}


def headline_table(ctx: ReportContext,
                   pooled: Callable[[], dict[str, dict[str, Estimate]]] | None = None
                   ) -> Table:
    """The headline scores with their intervals, one row per run: the table of `summary`
    (and of `bench view`'s runs page, which needs it without the summary's notes).
    `pooled`: gives `headline_pooled(ctx)` once the means are read (the summary reads it
    beside them: `aside.beside`)."""
    labels = ctx.labels()
    scores = metric_table(ctx, "Headline scores (macro over sessions)", "TRUE", [
        ("coalesce(proc_group, proc)", "proc", "PROC"), ("comp", "comp", "COMP"),
        # the trigger column is replaced by the pooled figure below: NULL here, so that its
        # macro mean and interval over sessions (a fifth of the work) are not computed for it
        ("f1", "f1", "triple F1"), ("CAST(NULL AS DOUBLE)", "trigger", "trigger score"),
        ("score", "verified", "verified score")],
        ["PROC uses a dependency group's pooled figure on its final session (π-Bench); each "
         "column averages the sessions of the protocol that defines it, except the trigger "
         "score: ProactBench's weighted score pooled over judged triggers (as `bench report "
         "triggers`), CI over sessions. `bench query \"SELECT * FROM headline\"` gives "
         "these figures (reports/README.md)."])
    # the columns a protocol pools itself (`ProtocolReports.headline`)
    keys = [c.key for c in scores.columns]
    # rows are labelled by agent, with the rules judge's heuristic mark on some of them
    by_label = {label: run for run in ctx.runs
                for label in (labels[run], f"{labels[run]} ({HEURISTIC})")}
    for key, figures in (headline_pooled(ctx) if pooled is None else pooled()).items():
        col = keys.index(key)
        for cells in scores.rows:
            cells[col] = figures.get(by_label[cells[0]], Estimate(None))
    return scores


def run_costs(ctx: ReportContext, where: str) -> dict[str, tuple[float | None, int]]:
    """Each run's calls (`where`: `cost.measured`) as the cost ledger counts them: run id →
    (the priced cost, the unpriced calls). Unknown (NULL), never $0, when an answered,
    uncached call had no price; imported calls stay apart. Summed per run in one pass: as a
    subquery per run it was joined to every session first (0.3 s of 0.8 on 1 M turns).
    Summed as DECIMAL (exact): grouped in parallel, the float sum depends on the order rows
    arrive in, and a total on a rounding boundary (synth-02's $2146.43145 in
    `benchmarks/report_bench.py`'s store) printed $2146.4314 one read and $2146.4315 the
    next. Each distinct price is cast once and multiplied by its calls (integer arithmetic
    on the DECIMAL, so the same sum), and the unpriced calls are counted apart: DuckDB
    answers that from the column statistics when no price is NULL, where reading `error`
    and `cache_hit` for every call cost a quarter of the query; the calls' filter leaves
    out what holds for all of them (`cost.measured`: 0.147 -> 0.079 s CPU with one thread).
    A run without calls has no entry; the runs the store's `runs` table lacks may have
    one."""
    return {str(r[0]): (r[1], int(r[2])) for r in ctx.rows(f"""
        WITH priced AS (
            SELECT run_id, cost, count(*) AS n FROM llm_calls WHERE {where}
            GROUP BY run_id, cost
        ), unpriced AS (
            SELECT run_id, count(*) AS unpriced FROM llm_calls
            WHERE {where} AND {UNPRICED}
            GROUP BY run_id
        )
        SELECT run_id, sum(n * {EXACT_COST})::DOUBLE AS cost,
               coalesce(any_value(u.unpriced), 0) AS unpriced
        FROM priced LEFT JOIN unpriced u USING (run_id) GROUP BY run_id""")}


def summary(ctx: ReportContext) -> ReportResult:
    res = ReportResult("summary", "Run summary", "One line per run: what ran, the headline "
                       "scores of each protocol, tokens and cost.", ctx.runs)
    where = measured(ctx)
    # the calls' costs are read beside the headline's means, below (`run_costs`); the
    # sessions' counts here (the run rows come from them: a run `runs` lacks is not shown)
    counted = ctx.rows("""
        SELECT r.run_id, r.pack_name, r.repeats, r.status,
               count(*) FILTER (WHERE s.status = 'finished') AS finished,
               count(*) FILTER (WHERE s.status = 'finished' AND s.ablation IS NOT NULL)
                   AS variants,
               count(*) FILTER (WHERE s.status = 'error') AS errors,
               count(*) FILTER (WHERE s.status = 'error' AND s.error_kind = 'agent')
                   AS agent_errors,
               count(*) FILTER (WHERE s.status = 'skipped') AS skipped,
               coalesce(sum(s.judge_errors), 0) AS judge_errors,
               coalesce(sum(s.prompt_tokens), 0) AS prompt_tokens,
               coalesce(sum(s.completion_tokens), 0) AS completion_tokens,
               any_value(s.agent) AS session_agent, r.agent AS run_agent
        FROM runs r LEFT JOIN sessions s USING (run_id)
        WHERE r.run_id IN $runs GROUP BY ALL ORDER BY r.run_id""")
    # the run labels from the same pass over the sessions (`ReportContext.labels` read them
    # again: 0.02 s on 1 M turns), unless a report built before this one over these runs
    # has read them
    labels = ctx.labels() if ctx._labels is not None else ctx.labels_of(
        [(r[0], r[12] if r[12] is not None else r[13], r[1]) for r in counted])
    from .aside import beside, half_threads
    from .judge_validity import unvalidated_note
    from .simulator import summary_note

    # the notes, the pooled trigger score and the calls' costs read beside the headline's
    # means, on a cursor of their own, each cursor on half the DuckDB threads (one on 2
    # cores, `aside.half_threads`): what the means and notes read are tables of one row
    # group, and the costs, over every call, had all the threads to themselves before
    # (0.22 s CPU on 1 M turns on two, ~0.1 on one)
    with half_threads(ctx.con), beside(ctx, unvalidated_note, summary_note, headline_pooled,
                                       lambda side: run_costs(side, where)) as later:
        scores = headline_table(ctx, lambda: later(2))
    costs = later(3)
    # a run's cost is unknown (None) when one of its calls is unpriced, $0 without calls
    rows = []
    for r in counted:
        cost, unpriced = costs.get(r[0], (0.0, 0))
        rows.append((*r[:12], None if unpriced else cost if cost is not None else 0.0))
    t = Table("Runs", [Column("agent", "agent"), Column("run", "run"), Column("pack", "pack"),
                       Column("repeats", "repeats", "int"), Column("status", "status"),
                       Column("finished", "finished", "int"),
                       Column("variants", "of them ablation variants", "int"),
                       Column("errors", "errors", "int"),
                       Column("agent_errors", "of the agent", "int"),
                       Column("skipped", "skipped", "int"),
                       Column("judge_errors", "judge errors", "int"),
                       Column("tokens", "tokens in/out"), Column("cost", "cost", "money")])
    t.notes.append("Counts are session runs (each repeat once). Errors of the agent count in "
                   "the scores as failures; the other errors are left out of them (`excluded` "
                   "in each table). Ablation variants are left out of the headline figures.")
    for r in rows:
        t.rows.append([labels[r[0]], r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9],
                       f"{int(r[10]):,} / {int(r[11]):,}", r[12]])
    res.tables.append(t)
    res.notes.extend(note for note in (later(0), later(1)) if note)
    res.tables.append(scores)
    from .plugin_metrics import plugin_metric_tables

    plugged, unread = plugin_metric_tables(ctx)
    res.tables.extend(plugged)
    res.notes.extend(unread)
    # `alone_results` parses every session's `extra` for its context: the text is searched
    # first (`MAYBE_ALONE`), the same rows, 0.024 -> 0.011 s on 1 M turns
    alone = ctx.rows(f"""SELECT run_id, name, repeat, coalesce(proc_group, proc), comp, score,
        f1, trigger_score, missing_dependencies FROM alone_results s
        WHERE run_id IN $runs AND {MAYBE_ALONE} ORDER BY run_id, name, repeat""")
    if alone:  # never averaged with the headline: shown one by one, labelled
        t = Table("Run alone, without their dependencies (bench run --alone)",
                  [Column("agent", "agent"), Column("session", "session"),
                   Column("repeat", "repeat", "int"), Column("proc", "PROC", "pct"),
                   Column("comp", "COMP", "pct"), Column("verified", "verified score", "pct"),
                   Column("f1", "triple F1", "pct"), Column("trigger", "trigger score", "pct"),
                   Column("missing", "missing dependencies")],
                  notes=["These sessions ran without the sessions they depend on, so without "
                         "their context: they are left out of every other table."])
        for r in alone:
            missing = json.loads(r[8]) if isinstance(r[8], str) else (r[8] or [])
            t.rows.append([labels[r[0]], r[1], r[2], *[Estimate(v) for v in r[3:8]],
                           ", ".join(str(d).rsplit(".", 1)[-1] for d in missing)])
        res.tables.append(t)
    return res


def interaction(ctx: ReportContext) -> ReportResult:
    ctx.by = ctx.by or "category"
    labels = ctx.labels()
    group = _group_expr(ctx)
    res = ReportResult("interaction", "Interaction statistics",
                       "Turns, tool calls and how dialogues ended (VibeSearchBench style), by "
                       f"{ctx.by}.", ctx.runs)
    rows = ctx.rows(f"""SELECT run_id, {group}, count(*), avg(assistant_turns), avg(user_turns),
        avg(user_per_assistant_turn), avg(tool_calls), avg(compactions)
        FROM session_results WHERE run_id IN $runs GROUP BY ALL ORDER BY ALL""")
    t = Table(f"Per session, by {ctx.by}", [
        Column("agent", "agent"), Column("group", ctx.by), Column("sessions", "sessions", "int"),
        Column("assistant_turns", "assistant turns", "float"),
        Column("user_turns", "user turns", "float"),
        Column("ratio", "user / assistant", "float"), Column("tool_calls", "tool calls", "float"),
        Column("compactions", "compactions", "float")],
        notes=["Means per session. Assistant turns count agent steps (model calls or tool "
               "rounds); user turns exclude environment events."])
    t.rows = [[labels[r[0]], *r[1:]] for r in rows]
    res.tables.append(t)
    ends = ctx.rows(f"""SELECT run_id, {group}, coalesce(termination, status), count(*)
        FROM session_results WHERE run_id IN $runs GROUP BY ALL ORDER BY ALL""")
    t2 = Table("How sessions ended", [Column("agent", "agent"), Column("group", ctx.by),
                                      Column("termination", "termination"),
                                      Column("sessions", "sessions", "int")],
               notes=["done: the user was satisfied; agent_answer: the agent closed the "
                      "dialogue; all_resolved: every hidden intent reached a status; "
                      "*_budget: a budget ran out; error: the session failed."])
    t2.rows = [[labels[r[0]], *r[1:]] for r in ends]
    res.tables.append(t2)
    return res


def judge_errors(ctx: ReportContext) -> ReportResult:
    labels = ctx.labels()
    res = ReportResult("judge-errors", "Judge errors",
                       "Judgements that failed (malformed twice, or the provider) and were "
                       "excluded from scores.", ctx.runs)
    rows = ctx.rows("""SELECT run_id, role, purpose, model, failed_calls, example
        FROM judge_errors WHERE run_id IN $runs
        ORDER BY run_id, failed_calls DESC, role, purpose, model""")
    t = Table("Failed judge and simulator calls", [
        Column("agent", "run (agent)"), Column("role", "role"), Column("purpose", "purpose"),
        Column("model", "model"), Column("failed", "failed calls", "int"),
        Column("example", "example error")])
    t.rows = [[labels[r[0]], *r[1:5], str(r[5])[:120]] for r in rows]
    res.tables.append(t)
    affected = """FROM sessions WHERE run_id IN $runs AND (judge_errors > 0
        OR grader_errors > 0 OR status = 'error')"""
    sess = ctx.rows(f"""SELECT run_id, name, repeat, judge_errors, grader_errors, error,
        count(*) OVER () {affected} ORDER BY run_id, name, repeat
        LIMIT {AFFECTED_SESSIONS_SHOWN}""")
    t2 = Table("Sessions affected", [
        Column("agent", "run (agent)"), Column("session", "session"),
        Column("repeat", "repeat", "int"), Column("judge_errors", "judge errors", "int"),
        Column("grader_errors", "grader errors", "int"), Column("error", "session error")])
    t2.rows = [[labels[r[0]], r[1], r[2], r[3], r[4], (r[5] or "")[:120]] for r in sess]
    if sess and sess[0][6] > len(sess):
        every = " ".join(affected.replace("$runs", ctx._in()).split())
        t2.notes.append(f"The first {len(sess)} of {sess[0][6]:,} affected sessions; all of "
                        f"them: bench query \"SELECT run_id, name, repeat, judge_errors, "
                        f"grader_errors, error {every}\"")
    res.tables.append(t2)
    return res


def _explain(ctx: ReportContext) -> ReportResult:
    from .explain import report

    return report(ctx)  # type: ignore[no-any-return]


BUILTIN: tuple[BuiltinReport, ...] = (
    BuiltinReport("summary", "Run summary", "headline scores, errors, tokens and cost per run",
                  summary),
    BuiltinReport("interaction", "Interaction", "turns, ratio, tool calls, compactions, "
                  "terminations", interaction),
    BuiltinReport("cost", "Cost", "the cost ledger: tokens, calls and cost by role, model and "
                  "session (unknown prices shown as unknown)", cost),
    BuiltinReport("judge-errors", "Judge errors", "failed judgements and affected sessions",
                  judge_errors),
    BuiltinReport("explain", "Why this score", "each session's score part by part: items, "
                  "rationales, state diff, formula with its values (--session to narrow)",
                  lambda ctx: _explain(ctx)),
)
"""The reports of no one protocol (each protocol's are in `protocols.PROTOCOL_REPORTS`)."""
