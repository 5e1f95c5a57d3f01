"""What one protocol contributes to the reports stage."""

from __future__ import annotations

from dataclasses import dataclass

from ..model import BuiltinReport, View


@dataclass(frozen=True)
class ProtocolReports:
    name: str
    """The protocol, as `protocol:` names it in a pack (and its module in every stage)."""
    views: tuple[View, ...] = ()
    """SQL views over its sessions' rows. They may read the generic views (`session_results`…)
    and the existing protocols' views, which are created before them (`views.VIEW_ORDER`)."""
    reports: tuple[BuiltinReport, ...] = ()
    """Its built-in reports (`bench report NAME`), listed after the existing ones."""
