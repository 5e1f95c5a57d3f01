"""Intent tracking (π-Bench) in the reports stage: terminal intent statuses pooled (micro) and per
session (macro), the dependency ablation, and the PROC / COMP, status, category and ablation
reports.

The statistics and the shared table helpers (`builtin`) are imported inside the reports:
`bench query` installs these views without loading them."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model import BuiltinReport, Chart, Column, Estimate, Metric, ReportResult, Table, View
from .base import ProtocolReports, SimulatorChecks

if TYPE_CHECKING:
    from ..builtin import ReportContext

VIEWS: tuple[View, ...] = (
    View("intent_status_micro", """Terminal intent statuses pooled over every intent of a run
(micro). Group-pooled copies (`pooled_from` set) are not counted twice; ablation variants are
left out. Every intent of a session the agent errored in counts as unresolved. A NULL status
is undecided (the judge failed; `judge_error` says why): it has no share, and the shares of the
others are over decided intents.""", """
WITH counted AS (
    SELECT i.run_id, s.agent,
           CASE WHEN s.status = 'error' THEN 'unresolved' ELSE i.status END AS status
    FROM intent_status i JOIN session_results s USING (run_id, session_id, repeat)
    WHERE i.pooled_from IS NULL AND s.scored AND s.ablation IS NULL
)
SELECT run_id, agent, status, count(*) AS intents,
       CASE WHEN status IS NOT NULL THEN count(*) / sum(CASE WHEN status IS NOT NULL
           THEN count(*) END) OVER (PARTITION BY run_id) END AS share
FROM counted
GROUP BY run_id, agent, status
"""),
    View("intent_status_macro", """Terminal intent statuses as per-session shares averaged over
sessions (macro): every session weighs the same whatever its number of intents. Ablation
variants are left out; a session the agent errored in is all unresolved. Shares are over a
session's decided intents; `undecided` counts the intents a failing judge left without a
status, and a session with none decided has no shares.""", """
WITH counted AS (
    SELECT run_id, session_id, repeat, agent, intents, status = 'finished' AS ok,
           coalesce(completed, 0) AS c, coalesce(inferred, 0) AS i,
           coalesce(provided, 0) AS p, coalesce(unresolved, 0) AS u
    FROM session_results WHERE scored AND intents > 0 AND ablation IS NULL
), per AS (
    SELECT *,
           CASE WHEN ok THEN c + i + p + u ELSE intents END AS decided,
           CASE WHEN ok THEN intents - (c + i + p + u) ELSE 0 END AS undecided,
           CASE WHEN ok THEN c / nullif(c + i + p + u, 0) ELSE 0 END AS completed,
           CASE WHEN ok THEN i / nullif(c + i + p + u, 0) ELSE 0 END AS inferred,
           CASE WHEN ok THEN p / nullif(c + i + p + u, 0) ELSE 0 END AS provided,
           CASE WHEN ok THEN u / nullif(c + i + p + u, 0) ELSE 1 END AS unresolved
    FROM counted
)
SELECT run_id, agent, count(*) FILTER (WHERE decided > 0) AS sessions,
       avg(completed) AS completed, avg(inferred) AS inferred, avg(provided) AS provided,
       avg(unresolved) AS unresolved, sum(undecided) AS undecided
FROM per GROUP BY run_id, agent
"""),
    View("dependency_ablation", """Each without-dependencies variant next to its full session,
same run and repeat: PROC and COMP with and without the prior sessions, and the deltas
(with − without). Both PROCs are over the final session's own intents (the variant has no
others); `proc_group_with` is the group's pooled PROC (π-Bench's figure for the final
session, over every member's intents), shown for reference and not part of the delta.""", """
SELECT v.run_id, v.repeat, v.agent, b.session_id AS session_id, v.session_id AS variant_id,
       b.name, b.episode, b.domain, b.category,
       b.proc AS proc_with, v.proc AS proc_without,
       b.comp AS comp_with, v.comp AS comp_without,
       b.proc - v.proc AS proc_delta, b.comp - v.comp AS comp_delta,
       b.proc_group AS proc_group_with
FROM sessions v JOIN sessions b
  ON b.run_id = v.run_id AND b.repeat = v.repeat AND b.session_id = v.base_session
WHERE v.ablation = 'without_dependencies' AND (v.status = 'finished' OR v.error_kind = 'agent')
  AND (b.status = 'finished' OR b.error_kind = 'agent')
"""),
)


def proc_comp(ctx: ReportContext) -> ReportResult:
    from ..builtin import metric_table

    res = ReportResult("proc-comp", "Proactivity and completion",
                       "PROC and COMP (π-Bench), macro over intent-tracking sessions, by "
                       f"{ctx.by or 'run'}; turns per session.", ctx.runs)
    res.tables.append(metric_table(
        ctx, f"PROC / COMP by {ctx.by or 'run'}",
        "protocol = 'intent_tracking'",
        [("coalesce(proc_group, proc)", "proc", "PROC"), ("comp", "comp", "COMP")],
        ["PROC = (completed + inferred) / intents per session; COMP = mean of binary checklist "
         "scores. A group's final session counts its pooled PROC."]))
    turns = ctx.rows("""SELECT run_id, avg(turns), min(turns), max(turns) FROM session_results
        WHERE run_id IN $runs AND protocol = 'intent_tracking' AND scored
        AND ablation IS NULL GROUP BY run_id ORDER BY run_id""")
    labels = ctx.labels()
    t = Table("Turns per session", [Column("agent", "agent"), Column("mean", "mean", "float"),
                                    Column("min", "min", "int"), Column("max", "max", "int")],
              notes=["Over the sessions PROC averages (ablation variants left out)."])
    t.rows = [[labels[r[0]], r[1], r[2], r[3]] for r in turns]
    res.tables.append(t)
    points = ctx.rows("""SELECT run_id, name, coalesce(proc_group, proc), comp, turns
        FROM session_results WHERE run_id IN $runs AND protocol = 'intent_tracking'
        AND ablation IS NULL AND scored AND proc IS NOT NULL
        AND comp IS NOT NULL""")
    series: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run, name, p, c, turns_ in points:
        series[labels[run]].append({"x": p, "y": c, "label": name, "turns": turns_})
    res.charts.append(Chart("proc-comp", "PROC vs COMP per session", "scatter",
                            {"series": dict(series), "diagonal": True}, "PROC", "COMP"))
    res.charts.append(Chart("turns-proc", "Turns vs PROC per session", "scatter",
                            {"series": {k: [{"x": p["turns"], "y": p["x"], "label": p["label"]}
                                            for p in v] for k, v in series.items()}},
                            "turns", "PROC"))
    return res


def status(ctx: ReportContext) -> ReportResult:
    labels = ctx.labels()
    res = ReportResult("status", "Terminal intent statuses",
                       "How each hidden intent ended, pooled (micro) and per session (macro).",
                       ctx.runs)
    order = ("completed", "inferred", "provided", "unresolved")
    micro = ctx.rows("SELECT run_id, status, intents, share FROM intent_status_micro "
                     "WHERE run_id IN $runs")
    undecided_note = ("undecided: intents whose status the judge never decided (it failed); "
                      "counted beside the distribution, not in it.")
    t = Table("Pooled over intents (micro)", [Column("agent", "agent"),
                                              Column("intents", "intents", "int")]
              + [Column(s, s, "pct") for s in order] + [Column("undecided", "undecided", "int")],
              notes=["Every intent weighs the same: sessions with many intents dominate. "
                     "`intents` counts decided intents.", undecided_note])
    by_run: dict[str, dict[str | None, tuple[int, float | None]]] = defaultdict(dict)
    for run, st, n, share in micro:
        by_run[run][st] = (int(n), None if share is None else float(share))
    for run in ctx.runs:
        if run in by_run:
            d = by_run[run]
            decided = sum(n for st, (n, _) in d.items() if st is not None)
            t.rows.append([labels[run], decided]
                          + [d.get(s, (0, 0.0))[1] if decided else None for s in order]
                          + [d.get(None, (0, None))[0]])
    res.tables.append(t)
    macro = ctx.rows("SELECT run_id, sessions, completed, inferred, provided, unresolved, "
                     "undecided FROM intent_status_macro WHERE run_id IN $runs ORDER BY run_id")
    t2 = Table("Averaged per session (macro)", [Column("agent", "agent"),
                                                Column("sessions", "sessions", "int")]
               + [Column(s, s, "pct") for s in order] + [Column("undecided", "undecided", "int")],
               notes=["Every session weighs the same; this is the figure PROC averages. "
                      "Shares are over each session's decided intents.", undecided_note])
    t2.rows = [[labels[r[0]], r[1], *r[2:6], int(r[6] or 0)] for r in macro]
    res.tables.append(t2)
    res.charts.append(Chart("status", "Terminal status distribution (micro)", "stacked_bar",
                            {"categories": list(order),
                             "bars": {row[0]: dict(zip(order, row[2:6], strict=True))
                                      for row in t.rows}}, "", "share of intents"))
    return res


def category(ctx: ReportContext) -> ReportResult:
    ctx.by = ctx.by or "category"
    res = proc_comp(ctx)
    res.name, res.title = "category", f"Proactivity and completion by {ctx.by}"
    res.charts.clear()
    return res


def ablation(ctx: ReportContext) -> ReportResult:
    labels = ctx.labels()
    res = ReportResult("ablation", "Dependency ablation",
                       "Final sessions of dependency groups with and without their prior "
                       "sessions (compile with --ablation).", ctx.runs)
    pairs = ctx.rows("""SELECT run_id, count(*) FROM dependency_ablation
        WHERE run_id IN $runs GROUP BY run_id ORDER BY run_id""")
    estimates = ctx.estimates("""SELECT run_id, coalesce(episode, session_id), session_id,
        repeat, proc_with,
        proc_without,
        proc_delta, comp_with, comp_without, comp_delta, proc_group_with
        FROM dependency_ablation WHERE run_id IN $runs""", 1, 7,
        [(0.0, 1.0), (0.0, 1.0), (-1.0, 1.0), (0.0, 1.0), (0.0, 1.0), (-1.0, 1.0), (0.0, 1.0)])
    t = Table("With vs without prior sessions", [
        Column("agent", "agent"), Column("pairs", "pairs", "int"),
        Column("proc_with", "PROC with", "pct"), Column("proc_without", "PROC without", "pct"),
        Column("proc_delta", "Δ PROC", "pct"), Column("comp_with", "COMP with", "pct"),
        Column("comp_without", "COMP without", "pct"), Column("comp_delta", "Δ COMP", "pct"),
        Column("proc_group_with", "group PROC with (pooled)", "pct")],
        notes=[ctx.ci_note("session pairs"), "Δ = with − without, per session pair, then averaged; a CI "
               "that excludes 0 means the prior sessions matter beyond noise. PROC with and "
               "without are both over the final session's own intents; group PROC (pooled) "
               "is π-Bench's figure over every member's intents, not part of Δ."])
    for run, n in pairs:
        t.rows.append([labels[run], n, *estimates.get((run,), [Estimate(None)] * 7)])
    if not t.rows:
        t.notes.append("No ablation variants in these runs: compile with `bench compile "
                       "--ablation` and run again.")
    res.tables.append(t)
    return res


def scanned_leaks(ctx: ReportContext, runs: list[str]) -> dict[str, tuple[int, int, int]]:
    """Run → (sessions with a leak, hidden intents leaked, intents) over the intent-tracking
    sessions of `runs` stored without `extra.intent_leaks` (stores written
    before the runtime decided it, imported runs): their user messages scanned here. Sessions
    the runtime wrote are counted in SQL (`simulator.simulator_rows`). A run's counts are kept under the
    store file's identity (`store_facts`): an old store read again is not scanned again
    (1.5 s for 84 k intents of the 1 M-turn benchmark store; 10 s before each text was
    tokenised once), and `bench run` or `--resume` on it fills `extra.intent_leaks` for good."""
    # here, not at the top: `bench query` installs this module's views and must stay light
    from benchpack.specs.storefile import record_store_facts, store_facts, store_identity
    from benchpack.specs.text import LeakMatcher

    identity = store_identity(ctx.db) if ctx.db is not None else None
    key = f"intent_leaks:{_rule_version()}"
    known = store_facts(ctx.db, identity).get(key, {}) if ctx.db is not None else {}
    out = {r: (int(c[0]), int(c[1]), int(c[2])) for r, c in known.items() if r in runs}
    todo = [r for r in runs if r not in known]
    if not todo:
        return out
    marks = ", ".join("?" * len(todo))
    rows = ctx.con.execute(f"""SELECT i.run_id, i.session_id, i.repeat, i.text,
            list(t.user_message ORDER BY t.turn) FILTER (WHERE t.user_message IS NOT NULL
                AND (i.turn IS NULL OR t.turn <= i.turn))
        FROM intent_status i JOIN sessions s USING (run_id, session_id, repeat)
             LEFT JOIN turns t USING (run_id, session_id, repeat)
        WHERE i.run_id IN ({marks}) AND i.pooled_from IS NULL AND s.ablation IS NULL
          AND s.protocol = 'intent_tracking' AND s.status IN ('finished', 'error')
          AND TRY_CAST(s.extra->>'$.intent_leaks' AS INTEGER) IS NULL
        GROUP BY i.run_id, i.session_id, i.repeat, i.intent_id, i.text, i.turn
        ORDER BY ALL""", todo).fetchall()
    per_session: dict[tuple[str, str, int], tuple[int, int]] = {}
    matcher = LeakMatcher()
    last = None
    for run, session, repeat, text, messages in rows:
        key_s = (str(run), str(session), int(repeat))
        if key_s != last:
            matcher.forget_messages()
            last = key_s
        leaked = int(any(matcher.leaks(str(text), str(m)) for m in (messages or [])))
        n_leaked, n = per_session.get(key_s, (0, 0))
        per_session[key_s] = (n_leaked + leaked, n + 1)
    counted = {r: (0, 0, 0) for r in todo}
    for (run, _, _), (leaked, n) in per_session.items():
        sessions, items, hidden = counted[run]
        counted[run] = (sessions + int(leaked > 0), items + leaked, hidden + n)
    if ctx.db is not None:
        record_store_facts(ctx.db, identity, {key: {**known, **counted}})
    out.update({r: c for r, c in counted.items() if c[2]})
    return out


def _rule_version() -> str:
    """The leak rule's code (`benchpack.specs.text`), hashed: counts kept under another rule
    are not reused."""
    import hashlib

    from benchpack.specs import text

    return hashlib.sha256(Path(text.__file__).read_bytes()).hexdigest()[:16]


PROTOCOL = ProtocolReports("intent_tracking", VIEWS, (
    BuiltinReport("proc-comp", "PROC / COMP", "π-Bench PROC and COMP by --by (default: run), "
                  "turns, PROC-vs-COMP scatter", proc_comp),
    BuiltinReport("status", "Intent statuses", "terminal status distribution, micro vs macro",
                  status),
    BuiltinReport("category", "By category", "PROC / COMP by task category (or --by)",
                  category),
    BuiltinReport("ablation", "Dependency ablation", "PROC / COMP with vs without prior "
                  "sessions", ablation),
), compare=(
    Metric("proc", "PROC", ("intent_tracking",), "continuous", "coalesce(s.proc_group, s.proc)"),
    Metric("comp", "COMP", ("intent_tracking",), "continuous", "s.comp")),
    simulator=SimulatorChecks(
        leak_sessions="count(*) FILTER (WHERE il > 0)", leaked="sum(coalesce(il, 0))",
        hidden="sum(CASE WHEN il IS NOT NULL THEN n ELSE 0 END)",
        leaked_text="{leaked} of {hidden} intents", scan=scanned_leaks,
        needs_scan="count(*) FILTER (WHERE n IS NOT NULL AND il IS NULL)"))
