"""Staged disclosure (VibeSearchBench) in the reports stage: knowledge-graph scores per session
and the graph report.

The statistics and the shared table helpers (`builtin`) are imported inside the reports:
`bench query` installs these views without loading them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model import BuiltinReport, Column, Metric, ReportResult, Table, View
from .base import ProtocolReports, SimulatorChecks

if TYPE_CHECKING:
    from ..builtin import ReportContext

VIEWS: tuple[View, ...] = (
    View("graph_results", """Knowledge-graph scores and interaction statistics of
staged-disclosure sessions (per session; macro when averaged).""", """
SELECT run_id, session_id, repeat, agent, name, category, domain, difficulty, style,
       recall, "precision", f1, triples_gt, triples_predicted, kg_status,
       stages, stages_disclosed, termination, turns, user_turns, assistant_turns,
       user_per_assistant_turn, tool_calls, compactions
FROM session_results WHERE protocol = 'staged_disclosure'
"""),
)


def graph(ctx: ReportContext) -> ReportResult:
    from ..builtin import metric_table

    ctx.by = ctx.by or "category"
    res = ReportResult("graph", "Knowledge-graph precision, recall and F1",
                       f"Staged-disclosure sessions (VibeSearchBench), by {ctx.by}.", ctx.runs)
    res.tables.append(metric_table(
        ctx, f"Triple P / R / F1 by {ctx.by}",
        "protocol = 'staged_disclosure'",
        [("\"precision\"", "precision", "precision"), ("recall", "recall", "recall"),
         ("f1", "f1", "F1")],
        ["Recall = covered GT triples / GT; precision = predicted triples supporting ≥ 1 GT "
         "triple / predicted. A malformed graph scores 0 (see kg status below)."]))
    labels = ctx.labels()
    rows = ctx.rows("""SELECT run_id, kg_status, count(*) FROM graph_results
        WHERE run_id IN $runs GROUP BY ALL ORDER BY ALL""")
    t = Table("Extracted graph status", [Column("agent", "agent"), Column("kg_status", "status"),
                                         Column("sessions", "sessions", "int")])
    t.rows = [[labels[r[0]], r[1] or "(none)", r[2]] for r in rows]
    res.tables.append(t)
    return res


PROTOCOL = ProtocolReports("staged_disclosure", VIEWS, (
    BuiltinReport("graph", "Knowledge graphs", "triple P / R / F1 by category (or --by)",
                  graph),
), compare=(
    Metric("f1", "triple F1", ("staged_disclosure",), "continuous", "s.f1"),),
    simulator=SimulatorChecks(
        premature="termination = 'done' AND stages_disclosed < stages",
        leak_sessions="count(*) FILTER (WHERE s_leaks <> 0)", leaked="sum(coalesce(s_leaks, 0))",
        off_script="sum(coalesce(retries, 0))"))
