"""Protocol registry of the reports stage: one module per protocol, the same name as its
pack-language models (`benchpack.specs.protocols.<name>`), its compile step
(`benchpack.compiler.protocols.<name>`) and its runtime interpreter
(`benchpack.runtime.protocols.<name>`). Each module defines `PROTOCOL` (a `ProtocolReports`: its
views and its built-in reports); `views.VIEWS` and `registry.default_reports()` are built from
`PROTOCOL_REPORTS`, so adding a protocol's reports is its module plus one entry here.

A protocol installed as a plug-in (`benchpack.specs.plugins`) is not in `PROTOCOL_REPORTS`
(reading the entry points costs ~0.1 s, which `bench query` does not pay): `plugin_reports`
loads its `ProtocolReports` when a report meets its sessions."""

from __future__ import annotations

from functools import cache

from . import (
    instructed_user,
    intent_tracking,
    staged_disclosure,
    trigger_rubric,
    verified_outcome,
)
from .base import ProtocolReports

PROTOCOL_REPORTS: dict[str, ProtocolReports] = {
    p.name: p for p in (intent_tracking.PROTOCOL, staged_disclosure.PROTOCOL,
                        trigger_rubric.PROTOCOL, verified_outcome.PROTOCOL,
                        instructed_user.PROTOCOL)
}



@cache
def plugin_reports(name: str) -> ProtocolReports | None:
    """The reports of plug-in protocol `name`; None when no such plug-in is installed (a
    store can hold sessions of a plug-in this machine lacks)."""
    from benchpack.specs.plugins import PluginError, is_plugin, plugin  # not at import

    if not is_plugin(name):
        return None
    reports = plugin(name).reports()
    if not isinstance(reports, ProtocolReports) or reports.name != name:
        raise PluginError(f"protocol plug-in `{name}`: reports() must return a ProtocolReports "
                        f"named `{name}`")
    return reports


__all__ = ["PROTOCOL_REPORTS", "ProtocolReports", "plugin_reports"]
