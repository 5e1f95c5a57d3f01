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
    headline: tuple[str, PooledHeadline] | None = None
    """(column key in `builtin.headline_table`, its figures): a headline column this protocol
    pools itself instead of averaging its sessions (trigger_rubric: ProactBench's weighted
    score over judged triggers, as its own report shows it)."""
