"""Instructed users (τ²-bench) in the reports stage: each session's stop signal, τ² reward and
its components. Pass/fail figures (pass@k, pass^k) come from the verified-outcome report, whose
`verified_results` view includes instructed-user sessions (their `score` is the reward)."""

from __future__ import annotations

from ..model import Metric, View
from .base import ProtocolReports, SimulatorChecks

VIEWS: tuple[View, ...] = (
    View("instructed_results", """Instructed-user sessions: the stop signal that ended the
dialogue (`done`, `transfer`, `out_of_scope`; NULL at the turn budget), the τ² reward and each
component (1/0; NULL when not in the session's reward or undecided; `env_assertions`: the
predicates over the final world, issue 24), the tables the state check left out
(`state_left_out`, the environment's `state_ignores`; NULL when none), and pass.""", """
SELECT run_id, session_id, repeat, agent, name, coalesce(base_session, session_id) AS task,
       termination, json_extract_string(extra, '$.stop_signal') AS stop_signal,
       score AS reward, passed,
       TRY_CAST(json_extract(extra, '$.reward.components.state') AS DOUBLE) AS state,
       TRY_CAST(json_extract(extra, '$.reward.components.actions') AS DOUBLE) AS actions,
       TRY_CAST(json_extract(extra, '$.reward.components.communicate') AS DOUBLE)
           AS communicate,
       TRY_CAST(json_extract(extra, '$.reward.components.assertions') AS DOUBLE) AS assertions,
       TRY_CAST(json_extract(extra, '$.reward.components.env_assertions') AS DOUBLE)
           AS env_assertions,
       json_extract_string(extra, '$.reward.state.diff_text') AS state_diff,
       CAST(json_extract(extra, '$.reward.state.left_out') AS VARCHAR[]) AS state_left_out,
       user_turns, turns, tool_calls, status, error_kind
FROM session_results WHERE protocol = 'instructed_user'
"""),
)

PROTOCOL = ProtocolReports("instructed_user", VIEWS, (), simulator=SimulatorChecks(
    premature="termination = 'done' AND passed IS DISTINCT FROM TRUE AND status = 'finished'"),
    compare=(
    Metric("score", "verified score", ("instructed_user",), "continuous", "s.score"),
    Metric("pass", "pass rate", ("instructed_user",), "binary", "CAST(s.passed AS INTEGER)")))
