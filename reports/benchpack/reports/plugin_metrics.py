"""The run summary's tables for protocols installed as plug-ins (`benchpack.specs.plugins`):
their figures live in `sessions.extra` (a plug-in has no `sessions` column), declared by
their `ProtocolReports.metrics`. A store of built-in protocols only reads no entry point."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .builtin import metric_table
from .protocols import PROTOCOL_REPORTS, ProtocolReports, plugin_reports

if TYPE_CHECKING:
    from .builtin import ReportContext
    from .model import Table


def extra_figure(key: str) -> str:
    """SQL: the number `sessions.extra` holds under `key` (NULL when absent or not a number)."""
    quoted = key.replace('"', '""').replace("'", "''")
    return f"TRY_CAST(json_extract_string(extra, '$.\"{quoted}\"') AS DOUBLE)"


def plugin_protocols(ctx: ReportContext) -> list[tuple[str, ProtocolReports | None]]:
    """The protocols of the selected runs that are not built in, each with its plug-in's
    reports (None: no such plug-in installed here); entry points are read only if any."""
    if "protocols" not in ctx.memo:
        ctx.memo["protocols"] = [str(r[0]) for r in ctx.rows("""SELECT DISTINCT protocol
            FROM sessions WHERE run_id IN $runs ORDER BY protocol""")]
    found = [p for p in ctx.memo["protocols"] if p not in PROTOCOL_REPORTS]
    return [(name, plugin_reports(name)) for name in found]


def plugin_metric_tables(ctx: ReportContext) -> tuple[list[Table], list[str]]:
    """One table per plug-in protocol in the runs that declares metrics; and a note per
    protocol of the runs that is neither built in nor installed here (its figures unread)."""
    tables, notes = [], []
    for name, reports in plugin_protocols(ctx):
        if reports is None:
            notes.append(f"Sessions of protocol `{name}` are not in any table: no plug-in of "
                         "that name is installed here.")
            continue
        if not reports.metrics:
            continue
        quoted = name.replace("'", "''")
        tables.append(metric_table(
            ctx, f"{name} (plug-in protocol; macro over sessions)", f"protocol = '{quoted}'",
            [(extra_figure(key), key, title) for key, title in reports.metrics],
            [f"Figures the `{name}` plug-in stores in `sessions.extra`."], reports.judged))
    return tables, notes


__all__ = ["extra_figure", "plugin_metric_tables", "plugin_protocols"]
