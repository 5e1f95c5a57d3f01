"""Verified outcome (Claw-Anything) in the reports stage: per-repeat results, per-task counts, and
the pass-k report (pass@k / pass^k under their one definition, `stats.PASS_K_DEFINITION`).

The statistics and the shared table helpers (`builtin`) are imported inside the reports:
`bench query` installs these views without loading them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..model import BuiltinReport, Column, Estimate, Metric, ReportResult, Table, View
from .base import ProtocolReports

if TYPE_CHECKING:
    from ..builtin import ReportContext

VIEWS: tuple[View, ...] = (
    View("verified_results", """Pass/fail sessions (verified outcome, and instructed users whose
`score` is the τ² reward): score and pass per repeat.""",
         """
SELECT run_id, session_id, repeat, agent, name, coalesce(base_session, session_id) AS task,
       episode, category, domain, difficulty, score, passed, comp, heartbeats, termination,
       tool_calls, prompt_tokens, completion_tokens, cost
FROM session_results WHERE protocol IN ('verified_outcome', 'instructed_user')
"""),
    View("verified_tasks", """Per task (session, style/ablation variants folded into their base):
n runs with a known outcome and c passes — the inputs of pass@k and pass^k — and its episode
(the cluster of every interval).""", """
SELECT run_id, agent, task, any_value(coalesce(episode, task)) AS episode, count(passed) AS n,
       count(*) FILTER (WHERE passed) AS c, avg(score) AS mean_score
FROM verified_results GROUP BY run_id, agent, task
"""),
    View("score_results", """Every named score component of every scored verified-outcome
session with a `score:` block (store schema 4; the table is `score_components`): `kind` is
`dimension` (weighted mean of its items), `item` (one graded item, 0–1), `builtin`
(`communicate`, `assertions`: 1 when every check holds) or `final` (the formula's value after
gates and caps). `value` NULL means unknown (a judge error, an answer off the scale), never 0;
`detail` (JSON) holds the judge's rationale, weights, gates and caps.""", """
SELECT c.run_id, c.session_id, c.repeat, s.agent, s.name,
       coalesce(s.base_session, s.session_id) AS task, s.category, s.domain, s.difficulty,
       c.name AS component, c.kind, c.value, c.detail, s.passed
FROM score_components c JOIN session_results s USING (run_id, session_id, repeat)
WHERE s.scored
""", needs=("score_components",)),
)


def pass_k(ctx: ReportContext) -> ReportResult:
    from .. import stats
    from ..builtin import EXCLUDED_NOTE, excluded_by_kind

    labels = ctx.labels()
    res = ReportResult("pass-k", "pass@k and pass^k",
                       "Verified-outcome tasks (Claw-Anything): unbiased pass@k and pass^k per "
                       "task from n repeats with c passes, averaged over tasks.", ctx.runs)
    rows = ctx.rows("""SELECT t.run_id, t.task, t.n, t.c, t.mean_score, r.repeats, t.episode
        FROM verified_tasks t JOIN runs r USING (run_id)
        WHERE t.run_id IN $runs AND t.n > 0 ORDER BY t.run_id, t.task""")
    by_run: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for r in rows:
        by_run[r[0]].append(r)
    scores = ctx.estimates("""SELECT run_id, episode, task, 0, mean_score FROM verified_tasks
        WHERE run_id IN $runs AND n > 0""", 1, 1)
    excluded = excluded_by_kind(ctx, "run_id IN $runs AND protocol IN ('verified_outcome', "
                                  "'instructed_user')")
    t = Table("Per agent", [Column("agent", "agent"), Column("tasks", "tasks", "int"),
                            Column("k", "k (= repeats)", "int"),
                            Column("score", "mean score", "pct"),
                            Column("pass1", "pass@1", "pct"), Column("passk", "pass@k", "pct"),
                            Column("pass_hat_k", "pass^k", "pct"),
                            Column("flip", "flip rate", "pct"),
                            Column("excluded", "excluded")],
              notes=[f"pass@k, pass^k: {stats.PASS_K_DEFINITION}. pass^k is τ²-bench's "
                     "estimator C(c,k)/C(n,k); Claw-Anything's code computes (c/n)^k, which is "
                     "never lower (c = 2 of n = 3, k = 2: 33.3 vs 44.4).",
                     "flip rate = tasks with both a pass and a fail among their graded repeats "
                     "/ tasks with ≥ 2 graded repeats.",
                     stats.interval_note(ctx.level, "tasks") + " (pass@1: n = graded "
                     "repeats; pass@k, pass^k, flip rate: one value a task)",
                     EXCLUDED_NOTE])
    for run, rs in by_run.items():
        k = max(1, int(rs[0][5] or 1))
        summary = stats.pass_k_summary([(int(r[2]), int(r[3])) for r in rs], k)
        full = [r for r in rs if int(r[2]) >= k]

        def over(est: Callable[[int, int, int], float], kk: int,
                 _rs: list[tuple[Any, ...]]) -> Estimate:
            if not _rs:
                return Estimate(None)
            values = [est(int(r[2]), int(r[3]), kk) for r in _rs]
            return ctx.interval([(v, 1.0) for v in values],
                                binary=all(v in (0.0, 1.0) for v in values),
                                clusters=[r[6] for r in _rs])

        # pass@1 is the mean of c/n over tasks: a proportion of graded repeats, clustered
        # by episode (the repeats of one task, the tasks of one episode are not independent)
        pass1 = ctx.interval([(float(r[3]), float(r[2])) for r in rs], binary=True,
                             clusters=[r[6] for r in rs])
        multi = [r for r in rs if int(r[2]) >= 2]
        flip = (ctx.interval([(float(0 < int(r[3]) < int(r[2])), 1.0) for r in multi],
                             binary=True, clusters=[r[6] for r in multi])
                if multi else Estimate(None))
        score = scores.get((run,), [Estimate(None)])[0]
        t.rows.append([labels[run], summary.tasks, k, score, pass1,
                       over(stats.pass_at_k, k, full), over(stats.pass_hat_k, k, full), flip,
                       excluded.get((run, "all"), "")])
        if summary.tasks_k < summary.tasks:
            short = summary.tasks - summary.tasks_k
            t.notes.append(f"{labels[run]}: {short} task{'' if short == 1 else 's'} with fewer "
                           f"than {k} graded repeats (errors outside the agent) left out of "
                           f"pass@{k} and pass^{k}, which average {summary.tasks_k} tasks.")
    res.tables.append(t)
    res.tables.append(pass_hat_table(ctx, labels, by_run))
    dims = dimension_table(ctx, labels)
    if dims is not None:
        res.tables.append(dims)
    return res


PASS_HAT_K_RULE = ("pass^k = C(c,k)/C(n,k) per task from its n graded trials with c passes, "
                   "averaged over tasks, for every k = 1 … K, where K is the fewest graded "
                   "trials any task has (at most the run's repeats): τ²-bench's rule "
                   "(metrics/agent_metrics.py), since every task must have k trials for "
                   "pass^k to average them all. Graded trials leave out errors outside the "
                   "agent (τ²: infrastructure errors).")
"""What the pass^k-for-every-k table says about its k (the τ² export states the same)."""


def pass_hat_ks(counts: Sequence[tuple[int, int]], repeats: int | None
                ) -> tuple[int, dict[int, list[float]]]:
    """τ²'s pass^k of one run: `(n, c)` graded trials and passes per task (n > 0) → K (the
    fewest trials any task has, capped at `repeats`) and, for k = 1 … K, the tasks' pass^k
    values (their mean is the figure)."""
    from .. import stats

    if not counts:
        return 0, {}
    k_max = min(n for n, _ in counts)
    if repeats:
        k_max = min(k_max, repeats)
    return k_max, {k: [stats.pass_hat_k(n, c, k) for n, c in counts]
                   for k in range(1, k_max + 1)}


def pass_hat_table(ctx: ReportContext, labels: dict[str, str],
                   by_run: dict[str, list[tuple[Any, ...]]]) -> Table:
    """Per run: τ²'s average reward (over graded session runs) and pass^k for k = 1 … K."""
    from .. import stats

    rewards: dict[str, list[tuple[float, float]]] = defaultdict(list)
    episodes: dict[str, list[str]] = defaultdict(list)
    binary: dict[str, bool] = defaultdict(lambda: True)
    for run, total, count, is01, episode in ctx.rows("""SELECT run_id, sum(score),
            count(score), bool_and(score IN (0, 1)), any_value(coalesce(episode, task))
            FROM verified_results
            WHERE run_id IN $runs AND passed IS NOT NULL GROUP BY run_id, task
            ORDER BY run_id, task"""):
        if count:
            rewards[run].append((float(total), float(count)))
            episodes[run].append(str(episode))
            binary[run] = binary[run] and bool(is01)
    per_run = {run: pass_hat_ks([(int(r[2]), int(r[3])) for r in rs], int(rs[0][5] or 0))
               for run, rs in by_run.items()}
    widest = max((k for k, _ in per_run.values()), default=0)
    t = Table("pass^k for k = 1 … K (τ²-bench)", [
        Column("agent", "agent"), Column("tasks", "tasks", "int"),
        Column("trials", "graded trials a task"), Column("k_max", "K", "int"),
        Column("avg_reward", "avg reward", "pct"),
        *[Column(f"pass_hat_{k}", f"pass^{k}", "pct") for k in range(1, widest + 1)]],
        notes=[PASS_HAT_K_RULE,
               "avg reward = mean score over the graded session runs (τ²'s avg_reward: each "
               "simulation weighs the same; the Per agent table's mean score weighs each task "
               "the same — they differ when tasks have different numbers of graded trials).",
               stats.interval_note(ctx.level, "tasks") + " (avg reward: n = graded session "
               "runs; pass^k: one value a task)"])
    for run, rs in by_run.items():
        k_max, values = per_run[run]
        trials = sorted(int(r[2]) for r in rs)
        repeats = int(rs[0][5] or 0)
        cells: list[Any] = [labels[run], len(rs), f"{trials[0]}–{trials[-1]}"
                            if trials[0] != trials[-1] else str(trials[0]), k_max,
                            ctx.interval(rewards.get(run, []), binary=binary[run],
                                         macro=False, clusters=episodes.get(run, []))]
        for k in range(1, widest + 1):
            v = values.get(k)  # in `rs` order: one value a task
            cells.append(ctx.interval([(x, 1.0) for x in v],
                                      binary=all(x in (0.0, 1.0) for x in v),
                                      clusters=[r[6] for r in rs])
                         if v else Estimate(None))
        t.rows.append(cells)
        short = [str(r[1]) for r in rs if int(r[2]) == trials[0]]
        if trials[0] < repeats:
            t.notes.append(f"{labels[run]}: K = {k_max}, not the {repeats} repeats: task"
                           f"{'' if len(short) == 1 else 's'} {', '.join(short[:5])}"
                           f"{' …' if len(short) > 5 else ''} {'has' if len(short) == 1 else 'have'}"
                           f" {trials[0]} graded trial{'' if trials[0] == 1 else 's'}.")
        else:
            t.notes.append(f"{labels[run]}: K = {k_max} = the run's repeats (every task has "
                           "them all graded).")
    return t


def dimension_table(ctx: ReportContext, labels: dict[str, str]) -> Table | None:
    """Per agent and score component (`score:` blocks): the mean over tasks of each task's
    mean over its repeats, with unknown values (judge errors) left out and counted."""
    from ..views import readable

    if "score_results" not in readable(ctx.con):
        return None  # a store older than schema 4 has no score_components
    rows = ctx.rows("""WITH per_task AS (
                SELECT run_id, task, component, kind, avg(value) AS v, count(value) AS known,
                       count(*) - count(value) AS unknown
                FROM score_results WHERE run_id IN $runs AND kind IN ('dimension', 'builtin',
                                                                        'final')
                GROUP BY run_id, task, component, kind)
            SELECT run_id, component, kind, avg(v), count(v), sum(known), sum(unknown)
            FROM per_task GROUP BY run_id, component, kind
            ORDER BY run_id, kind = 'final', kind, component""")
    if not rows:
        return None
    t = Table("Per dimension", [Column("agent", "agent"), Column("component", "component"),
                                Column("kind", "kind"), Column("mean", "mean", "pct"),
                                Column("tasks", "tasks", "int"),
                                Column("scored", "scored runs", "int"),
                                Column("unknown", "unknown", "int")],
              notes=["Named components of `score:` blocks: the mean over tasks of each task's "
                     "mean over repeats. Unknown values (judge errors, answers off the scale) "
                     "are left out of the mean and counted in `unknown`, never scored 0. "
                     "Items with rationales: bench query \"SELECT * FROM score_results\"."])
    for run, comp, kind, mean, tasks, known, unknown in rows:
        t.rows.append([labels[run], comp, kind, Estimate(mean), int(tasks), int(known or 0),
                       int(unknown or 0)])
    return t


PROTOCOL = ProtocolReports("verified_outcome", VIEWS, (
    BuiltinReport("pass-k", "pass@k", "verified outcomes: pass@1, pass@k, pass^k", pass_k),
), compare=(
    Metric("score", "verified score", ("verified_outcome",), "continuous", "s.score"),
    Metric("pass", "pass rate", ("verified_outcome",), "binary", "CAST(s.passed AS INTEGER)")))
