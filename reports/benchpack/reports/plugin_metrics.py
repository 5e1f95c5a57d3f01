"""The run summary's tables for protocols installed as plug-ins (`benchpack.specs.plugins`):
their figures live in `sessions.extra` (a plug-in has no `sessions` column), declared by
their `ProtocolReports.metrics`. A store of built-in protocols only reads no entry point."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .builtin import metric_table
from .protocols import PROTOCOL_REPORTS, plugin_reports

if TYPE_CHECKING:
    from .builtin import ReportContext
    from .model import Table


def extra_figure(key: str) -> str:
    """SQL: the number `sessions.extra` holds under `key` (NULL when absent or not a number)."""
    quoted = key.replace('"', '""').replace("'", "''")
    return f"TRY_CAST(json_extract_string(extra, '$.\"{quoted}\"') AS DOUBLE)"


def plugin_metric_tables(ctx: ReportContext) -> tuple[list[Table], list[str]]:
    """One table per plug-in protocol in the runs that declares metrics; and a note per
    protocol of the runs that is neither built in nor installed here (its figures unread)."""
    found = [str(r[0]) for r in ctx.rows("""SELECT DISTINCT protocol FROM session_results
        WHERE run_id IN $runs ORDER BY protocol""") if r[0] not in PROTOCOL_REPORTS]
    tables, notes = [], []
    for name in found:
        reports = plugin_reports(name)
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
            [f"Figures the `{name}` plug-in stores in `sessions.extra`."]))
    return tables, notes


__all__ = ["extra_figure", "plugin_metric_tables"]
