"""Trigger rubric (ProactBench) in the reports stage: scored trigger points, outcomes per type,
and the triggers report (pooled rates with CIs over episodes). The summary report's trigger
score is `trigger_estimates`.

The statistics and the shared table helpers (`builtin`) are imported inside the reports:
`bench query` installs these views without loading them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..cluster import cluster_sql
from ..model import BuiltinReport, Chart, Column, Estimate, Metric, ReportResult, Table, View
from .base import ProtocolReports

if TYPE_CHECKING:
    from ..builtin import ReportContext

VIEWS: tuple[View, ...] = (
    View("trigger_results", """Every scored trigger point with its session's labels. `score` is
1 / 0.5 / 0 for PASS / PARTIAL / FAIL and NULL on a judge error or a SKIPPED trigger (beyond
the end of the dialogue). The triggers of a session the agent errored in are FAIL, unjudged
(`error_kind` = 'agent').""", """
SELECT t.*, s.agent, s.name, s.persona, s.style, s.category, s.domain, s.difficulty,
       s.episode, s.base_session, s.ablation, s.error_kind
FROM triggers t JOIN session_results s USING (run_id, session_id, repeat)
WHERE s.scored
"""),
    View("trigger_by_type", """Trigger outcomes per type, pooled over triggers (micro, as
ProactBench reports them): pass rate = PASS/N, partial rate = PARTIAL/N, weighted score =
(PASS + 0.5·PARTIAL)/N over judged triggers; judge errors are counted, not scored; SKIPPED
triggers (beyond the end of the dialogue) are counted in `skipped` and are not in N.""", """
SELECT run_id, agent, type,
       count(*) FILTER (WHERE label IN ('PASS', 'PARTIAL', 'FAIL')) AS n,
       count(*) FILTER (WHERE label = 'PASS') AS pass,
       count(*) FILTER (WHERE label = 'PARTIAL') AS partial,
       count(*) FILTER (WHERE label = 'FAIL') AS fail,
       count(*) FILTER (WHERE label IS NULL) AS judge_errors,
       count(*) FILTER (WHERE label = 'SKIPPED') AS skipped,
       avg((label = 'PASS')::INTEGER) FILTER (WHERE label IN ('PASS', 'PARTIAL', 'FAIL'))
           AS pass_rate,
       avg((label = 'PARTIAL')::INTEGER) FILTER (WHERE label IN ('PASS', 'PARTIAL', 'FAIL'))
           AS partial_rate,
       avg(score) FILTER (WHERE label IN ('PASS', 'PARTIAL', 'FAIL')) AS weighted_score
FROM trigger_results
GROUP BY run_id, agent, type
"""),
)


def trigger_estimates(ctx: ReportContext, where: str = "TRUE", *, by_type: bool = True,
                      pass_rate: bool = True) -> dict[tuple[str, str], dict[str, Any]]:
    """(run, type or 'overall') → counts and the pooled pass rate and weighted score over judged
    triggers (ProactBench: SKIPPED and judge errors not in N), with clustered SEs and CIs over
    **episodes** (`stats.CLUSTER`): a dialogue's triggers and all its repeats share the agent,
    persona and judge, and an episode's dialogues (style variants of one scenario) its
    content, so they are one cluster; treating triggers as independent items narrows the
    interval with every repeat. One row per (session, type) reaches Python; with
    `by_type=False` only the 'overall' figures (the headline's), one row per session: a
    quarter of the intervals; `pass_rate=False`: the weighted score's interval only (the
    headline shows no pass rate)."""
    judged = "label IN ('PASS', 'PARTIAL', 'FAIL')"
    typ, sets = (("CASE WHEN grouping(type) = 1 THEN 'overall' ELSE type END",
                  "(run_id, type, session_id), (run_id, session_id)")
                 if by_type else ("'overall'", "(run_id, session_id)"))
    rows = ctx.rows(f"""SELECT run_id, {typ} AS typ, session_id, any_value({cluster_sql()}),
               count(*) FILTER (WHERE {judged}), count(*) FILTER (WHERE label = 'PASS'),
               count(*) FILTER (WHERE label = 'PARTIAL'), count(*) FILTER (WHERE label IS NULL)
        FROM trigger_results WHERE run_id IN $runs AND {where}
        GROUP BY GROUPING SETS ({sets})""")
    units: dict[tuple[str, str], list[tuple[int, int, int, int, str]]] = defaultdict(list)
    # in no order: the sums are of integers and the intervals' of floats exact (fsum), so
    # the order units arrive in changes no digit (tests/reports/test_summary_reads.py)
    for run, typ, _, episode, n, n_pass, n_partial, errors in rows:
        units[(run, typ)].append((int(n), int(n_pass), int(n_partial), int(errors),
                                  str(episode)))
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for key, us in units.items():
        n = sum(u[0] for u in us)
        n_pass, n_partial = sum(u[1] for u in us), sum(u[2] for u in us)
        scored = [u for u in us if u[0]]

        def ci(num: Callable[[tuple[int, int, int, int, str]], float], binary: bool,
               _us: list[tuple[int, int, int, int, str]] = scored) -> Estimate:
            if not _us:
                return Estimate(None)
            return ctx.interval([(num(u), float(u[0])) for u in _us], binary=binary,
                                macro=False, clusters=[u[4] for u in _us])

        out[key] = {"n": n, "pass": n_pass, "partial": n_partial, "fail": n - n_pass - n_partial,
                    "judge_errors": sum(u[3] for u in us), "sessions": len(scored),
                    "pass_rate": ci(lambda u: float(u[1]), True) if pass_rate else None,
                    # with no PARTIAL the weighted score is a pass rate too
                    "weighted": ci(lambda u: u[1] + 0.5 * u[2], n_partial == 0)}
    return out


def triggers(ctx: ReportContext) -> ReportResult:
    from .. import stats
    from ..builtin import excluded_by_kind

    labels = ctx.labels()
    res = ReportResult("triggers", "Trigger points by type",
                       "ProactBench: pass rate and weighted score per trigger type, pooled over "
                       "triggers, with CIs clustered by episode.", ctx.runs)
    found = trigger_estimates(ctx)
    order = ["emergent", "critical", "recovery", "overall"]
    t = Table("Pass rate and weighted score", [
        Column("agent", "agent"), Column("type", "type"), Column("n", "N", "int"),
        Column("pass_rate", "pass rate", "pct"), Column("partial_rate", "partial", "pct"),
        Column("weighted", "weighted", "pct"), Column("judge_errors", "judge errors", "int"),
        Column("excluded", "excluded sessions")],
        notes=[stats.interval_note(ctx.level, "triggers, pooled") + " (N counts triggers, the "
               "SE and CI rest on episodes)",
               "N counts judged triggers; weighted = (PASS + 0.5·PARTIAL) / N, the trigger "
               "score. Judge errors and SKIPPED triggers (beyond the end of the dialogue) are "
               "not in N (ProactBench). A session the agent errored in counts its triggers as "
               "FAIL; excluded sessions errored outside the agent."])
    excluded = excluded_by_kind(ctx, "run_id IN $runs AND protocol = 'trigger_rubric'")
    bars: dict[str, dict[str, Any]] = defaultdict(dict)
    for run in ctx.runs:
        for typ in order:
            if (run, typ) not in found:
                continue
            f = found[(run, typ)]
            rates = stats.trigger_rates(f["pass"], f["partial"], f["fail"])
            pass_ = f["pass_rate"]
            t.rows.append([labels[run], typ, rates.n, pass_, rates.partial_rate, f["weighted"],
                           f["judge_errors"],
                           excluded.get((run, "all"), "") if typ == "overall" else ""])
            bars[labels[run]][typ] = {"value": pass_.value, "low": pass_.low,
                                      "high": pass_.high, "n": pass_.n}
    res.tables.append(t)
    res.charts.append(Chart("trigger-pass", "Pass rate by trigger type (95% CI)", "errorbar",
                            {"categories": order, "series": dict(bars)}, "", "pass rate"))
    return res


def pooled_trigger_score(ctx: ReportContext) -> dict[str, Estimate]:
    """The headline's trigger score: run → its weighted score pooled over judged triggers, as
    `bench report triggers` shows it (CI over sessions)."""
    pooled = trigger_estimates(ctx, "ablation IS NULL", by_type=False, pass_rate=False)
    return {run: f["weighted"] for run in ctx.runs
            if (f := pooled.get((run, "overall"))) is not None}


PROTOCOL = ProtocolReports("trigger_rubric", VIEWS, (
    BuiltinReport("triggers", "Trigger points", "pass rate and weighted score per type with "
                  "CIs", triggers),
), headline=("trigger", pooled_trigger_score), compare=(
    Metric("trigger_score", "trigger score", ("trigger_rubric",), "continuous", "t.score",
           triggers=True),
    Metric("trigger_pass", "trigger pass rate", ("trigger_rubric",), "binary",
           "CAST(t.label = 'PASS' AS INTEGER)", triggers=True)))
