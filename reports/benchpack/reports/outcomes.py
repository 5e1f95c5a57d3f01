"""The built-in reports of trigger points (ProactBench) and verified outcomes (pass@k): pooled
rates with CIs over sessions, and pass@k / pass^k under their one definition. Part of
`builtin` (which lists them), kept apart for size."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from . import stats
from .builtin import EXCLUDED_NOTE, ReportContext, _excluded
from .model import Chart, Column, Estimate, ReportResult, Table


def trigger_estimates(ctx: ReportContext, where: str = "TRUE"
                      ) -> dict[tuple[str, str], dict[str, Any]]:
    """(run, type or 'overall') → counts and the pooled pass rate and weighted score over judged
    triggers (ProactBench: SKIPPED and judge errors not in N), with CIs over **sessions**: a
    dialogue's triggers and all its repeats share the agent, persona and judge, so they are
    resampled together (cluster bootstrap); resampling triggers as independent items narrows
    the interval with every repeat. One row per (session, type) reaches Python."""
    judged = "label IN ('PASS', 'PARTIAL', 'FAIL')"
    rows = ctx.rows(f"""SELECT run_id,
               CASE WHEN grouping(type) = 1 THEN 'overall' ELSE type END AS typ, session_id,
               count(*) FILTER (WHERE {judged}), count(*) FILTER (WHERE label = 'PASS'),
               count(*) FILTER (WHERE label = 'PARTIAL'), count(*) FILTER (WHERE label IS NULL)
        FROM trigger_results WHERE run_id IN $runs AND {where}
        GROUP BY GROUPING SETS ((run_id, type, session_id), (run_id, session_id))
        ORDER BY run_id, typ, session_id""")
    units: dict[tuple[str, str], list[tuple[int, int, int, int]]] = defaultdict(list)
    for run, typ, _, n, n_pass, n_partial, errors in rows:
        units[(run, typ)].append((int(n), int(n_pass), int(n_partial), int(errors)))
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for key, us in units.items():
        n = sum(u[0] for u in us)
        n_pass, n_partial = sum(u[1] for u in us), sum(u[2] for u in us)
        scored = [u for u in us if u[0]]

        def ci(num: Callable[[tuple[int, int, int, int]], float],
               _us: list[tuple[int, int, int, int]] = scored, _n: int = n) -> Estimate:
            if not _us:
                return Estimate(None)
            c = stats.bootstrap_ci([[(num(u), float(u[0]))] for u in _us], "ratio",
                                   level=ctx.level, resamples=ctx.resamples, seed=ctx.seed,
                                   exact_max=ctx.exact_max)
            return Estimate(c.estimate, None, c.low, c.high, _n)

        out[key] = {"n": n, "pass": n_pass, "partial": n_partial, "fail": n - n_pass - n_partial,
                    "judge_errors": sum(u[3] for u in us), "sessions": len(scored),
                    "pass_rate": ci(lambda u: float(u[1])),
                    "weighted": ci(lambda u: u[1] + 0.5 * u[2])}
    return out


def triggers(ctx: ReportContext) -> ReportResult:
    labels = ctx.labels()
    res = ReportResult("triggers", "Trigger points by type",
                       "ProactBench: pass rate and weighted score per trigger type, pooled over "
                       "triggers, with bootstrap CIs over sessions.", ctx.runs)
    found = trigger_estimates(ctx)
    order = ["emergent", "critical", "recovery", "overall"]
    t = Table("Pass rate and weighted score", [
        Column("agent", "agent"), Column("type", "type"), Column("n", "N", "int"),
        Column("pass_rate", "pass rate", "pct"), Column("partial_rate", "partial", "pct"),
        Column("weighted", "weighted", "pct"), Column("judge_errors", "judge errors", "int"),
        Column("excluded", "excluded sessions")],
        notes=[f"[ ] = {ctx.level:.0%} CI over sessions (a dialogue's triggers and repeats "
               f"resampled together): percentile bootstrap ({ctx.resamples} resamples, seed "
               f"{ctx.seed}) up to {ctx.exact_max} sessions, normal approximation above",
               "N counts judged triggers; weighted = (PASS + 0.5·PARTIAL) / N, the trigger "
               "score. Judge errors and SKIPPED triggers (beyond the end of the dialogue) are "
               "not in N (ProactBench). A session the agent errored in counts its triggers as "
               "FAIL; excluded sessions errored outside the agent."])
    excluded = _excluded(ctx, "run_id IN $runs AND protocol = 'trigger_rubric'")
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


def pass_k(ctx: ReportContext) -> ReportResult:
    labels = ctx.labels()
    res = ReportResult("pass-k", "pass@k and pass^k",
                       "Verified-outcome tasks (Claw-Anything): unbiased pass@k and pass^k per "
                       "task from n repeats with c passes, averaged over tasks.", ctx.runs)
    rows = ctx.rows("""SELECT t.run_id, t.task, t.n, t.c, t.mean_score, r.repeats
        FROM verified_tasks t JOIN runs r USING (run_id)
        WHERE t.run_id IN $runs AND t.n > 0 ORDER BY t.run_id, t.task""")
    by_run: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for r in rows:
        by_run[r[0]].append(r)
    scores = ctx.estimates("""SELECT run_id, task, 0, mean_score FROM verified_tasks
        WHERE run_id IN $runs AND n > 0""", 1, 1)
    excluded = _excluded(ctx, "run_id IN $runs AND protocol IN ('verified_outcome', "
                                  "'instructed_user')")
    t = Table("Per agent", [Column("agent", "agent"), Column("tasks", "tasks", "int"),
                            Column("k", "k (= repeats)", "int"),
                            Column("score", "mean score", "pct"),
                            Column("pass1", "pass@1", "pct"), Column("passk", "pass@k", "pct"),
                            Column("pass_hat_k", "pass^k", "pct"),
                            Column("excluded", "excluded")],
              notes=[f"pass@k, pass^k: {stats.PASS_K_DEFINITION}. CI over tasks (the N of "
                     "each figure).", EXCLUDED_NOTE])
    for run, rs in by_run.items():
        k = max(1, int(rs[0][5] or 1))
        summary = stats.pass_k_summary([(int(r[2]), int(r[3])) for r in rs], k)
        full = [r for r in rs if int(r[2]) >= k]

        def over(est: Callable[[int, int, int], float], kk: int,
                 _rs: list[tuple[Any, ...]]) -> Estimate:
            if not _rs:
                return Estimate(None)
            ci = ctx.bootstrap([[est(int(r[2]), int(r[3]), kk)] for r in _rs], "mean")
            return Estimate(ci.estimate, None, ci.low, ci.high, ci.n_units)

        score = scores.get((run,), [Estimate(None)])[0]
        t.rows.append([labels[run], summary.tasks, k, score, over(stats.pass_at_k, 1, rs),
                       over(stats.pass_at_k, k, full), over(stats.pass_hat_k, k, full),
                       excluded.get((run, "all"), "")])
        if summary.tasks_k < summary.tasks:
            short = summary.tasks - summary.tasks_k
            t.notes.append(f"{labels[run]}: {short} task{'' if short == 1 else 's'} with fewer "
                           f"than {k} graded repeats (errors outside the agent) left out of "
                           f"pass@{k} and pass^{k}, which average {summary.tasks_k} tasks.")
    res.tables.append(t)
    return res


__all__ = ["pass_k", "trigger_estimates", "triggers"]
