"""What one protocol contributes to the reports stage."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..model import BuiltinReport, Estimate, Metric, View

if TYPE_CHECKING:
    from ..builtin import ReportContext

PooledHeadline = Callable[["ReportContext"], dict[str, Estimate]]
"""The report context → run id → the figure of a headline column the protocol pools itself."""


@dataclass(frozen=True)
class SimulatorChecks:
    """What the `simulator` report counts of a protocol's simulated user. Each figure is SQL:
    `premature` a condition over a `sessions` row, the others aggregates over the report's
    per-session rows, which hold the `sessions` columns and `s_leaks`, `retries`
    (`extra.simulator_leaks`, `extra.simulator_retries`), `n` (the session's intents) and `il`
    (`extra.intent_leaks` where it has intents). None: the store cannot tell (–)."""

    premature: str | None = None
    """The simulated user stopped before the scenario was done."""
    leak_sessions: str | None = None
    """Sessions with a leak of hidden content."""
    leaked: str = "0"
    """Hidden items leaked."""
    hidden: str = "0"
    """Hidden items there were (0: not counted)."""
    leaked_text: str = "{leaked} caught"
    """How the report words `leaked` of `hidden`."""
    off_script: str | None = None
    """Off-script user turns."""
    scan: Callable[[ReportContext, list[str]], dict[str, tuple[int, int, int]]] | None = None
    """For stores written before the runtime decided leaks: (report, runs) → run → (sessions
    with a leak, leaked, hidden) over the sessions whose leaks `needs_scan` says are not
    stored."""
    needs_scan: str = "0"
    """An aggregate: sessions of a run `scan` must count."""


@dataclass(frozen=True)
class ProtocolReports:
    name: str
    """The protocol, as `protocol:` names it in a pack (and its module in every stage)."""
    views: tuple[View, ...] = ()
    """SQL views over its sessions' rows. They may read the generic views (`session_results`…)
    and the existing protocols' views, which are created before them (`views.VIEW_ORDER`)."""
    reports: tuple[BuiltinReport, ...] = ()
    """Its built-in reports (`bench report NAME`), listed after the existing ones."""
    compare: tuple[Metric, ...] = ()
    """Its `bench compare` units (`compare.METRICS` gathers them)."""
    simulator: SimulatorChecks | None = None
    """What the `simulator` report counts of its simulated user (None: nothing of its own)."""
    metrics: tuple[tuple[str, str], ...] = ()
    """(key, title) of the figures a plug-in protocol keeps in `sessions.extra` (it has no
    column of its own), each a share in [0, 1]: `bench report summary` shows their macro mean
    and interval over the protocol's scored sessions, in a table of the protocol's own."""
    judged: bool = True
    """Whether the run's judge decides `metrics`; a `rules` judge's figures are then marked as
    its keyword heuristic. False: the protocol computes them itself (exact counts, say), and
    no judge's name belongs on them."""
    headline: tuple[str, PooledHeadline] | None = None
    """(column key in `builtin.headline_table`, its figures): a headline column this protocol
    pools itself instead of averaging its sessions (trigger_rubric: ProactBench's weighted
    score over judged triggers, as its own report shows it)."""
