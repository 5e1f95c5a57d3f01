"""Renderers: terminal tables (rich), Markdown and JSON. HTML lives in `html.py`."""

from __future__ import annotations

import io
import json
from typing import Any

from .model import Column, Estimate, ReportResult, Table

DASH = "–"


def _num(value: float, kind: str) -> str:
    if kind == "pct":
        return f"{100 * value:.1f}"
    if kind == "int":
        return f"{int(value):,}"
    if kind == "money":
        return f"${value:.4f}"
    if kind == "seconds":
        return f"{value:.2f} s"
    if kind == "float":
        return f"{value:.2f}"
    return str(value)


def cell_text(value: Any, column: Column) -> str:
    """A cell as text: percentages as 0–100 with one decimal, estimates as
    `value ± std [low, high]`, unknown as –."""
    if value is None:
        return DASH
    if isinstance(value, Estimate):
        if value.value is None:
            return DASH
        kind = column.kind if column.kind != "text" else "float"
        text = _num(value.value, kind)
        if value.std is not None:
            text += f" ± {_num(value.std, kind)}"
        if value.low is not None and value.high is not None and value.n > 1:
            text += f" [{_num(value.low, kind)}, {_num(value.high, kind)}]"
        return text
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) and column.kind != "text":
        return _num(value, column.kind)
    return str(value)


def _pct_note(table: Table) -> list[str]:
    shown = table.rows and any(c.kind == "pct" for c in table.columns)
    return ["Percentages are shown as 0–100."] if shown else []


def to_markdown(result: ReportResult) -> str:
    out = [f"# {result.title}", "", result.description, "",
           f"Runs: {', '.join(result.runs)}", ""]
    for note in result.notes:
        out += [f"> {note}", ""]
    for table in result.tables:
        out += [f"## {table.title}", ""]
        if not table.rows:
            out += ["(no data)", ""]
        else:
            out.append("| " + " | ".join(c.title for c in table.columns) + " |")
            out.append("| " + " | ".join("---" if c.kind == "text" else "---:"
                                         for c in table.columns) + " |")
            for row in table.rows:
                cells = [cell_text(v, c).replace("|", "\\|")
                         for v, c in zip(row, table.columns, strict=True)]
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
        for note in [*table.notes, *_pct_note(table)]:
            out += [f"*{note}*", ""]
    return "\n".join(out).rstrip() + "\n"


def to_json(result: ReportResult) -> str:
    return json.dumps(result.as_dict(), indent=2, ensure_ascii=False, default=str) + "\n"


def to_terminal(result: ReportResult, width: int | None = None) -> str:
    import shutil

    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

    buf = io.StringIO()
    width = width or max(100, shutil.get_terminal_size((140, 40)).columns)
    # store text (error messages, names) is data, never console markup: `[/x]` in a judge's
    # error would otherwise raise MarkupError; and with no colours, highlighting is wasted work
    console = Console(file=buf, width=width, force_terminal=False, color_system=None,
                      highlight=False, markup=False)
    console.print(Text.assemble((result.title, "bold"), f" — {result.description}"))
    console.print(f"runs: {', '.join(result.runs)}")
    for table in result.tables:
        rt = RichTable(title=table.title, title_justify="left", show_lines=False)
        for c in table.columns:
            rt.add_column(c.title, justify="left" if c.kind == "text" else "right",
                          overflow="fold")
        for row in table.rows:
            rt.add_row(*[Text(cell_text(v, c)) for v, c in zip(row, table.columns, strict=True)])
        if not table.rows:
            console.print(f"\n{table.title}: (no data)")
        else:
            console.print()
            console.print(rt)
        for note in [*table.notes, *_pct_note(table)]:
            console.print(f"  {note}", style="dim")
    return buf.getvalue()


def render(result: ReportResult, fmt: str) -> str:
    if fmt == "md":
        return to_markdown(result)
    if fmt == "json":
        return to_json(result)
    if fmt == "table":
        return to_terminal(result)
    if fmt == "html":
        from .html import render_page

        return render_page([result])
    raise ValueError(f"unknown format `{fmt}` (table, md, json, html)")
