"""Renderers: terminal tables (rich), Markdown and JSON. HTML lives in `html.py`."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from typing import Any

from .cluster import cluster_name
from .model import Column, Estimate, ReportResult, Table

DASH = "–"
FEW = "†"
"""Marks a figure over fewer clusters than `stats.TOO_FEW_CLUSTERS` (the table notes say so)."""
UNTRUSTED = "‡"
"""Marks a CI that is printed but cannot be trusted (`Estimate.caution`; the notes say why)."""


def format_number(value: float, kind: str) -> str:
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
    if kind == "pvalue":  # three significant digits; below 0.001 the digits mean nothing
        return "<0.001" if value < 0.001 else f"{value:.3g}"
    return str(value)


def cell_text(value: Any, column: Column) -> str:
    """A cell as text: percentages as 0–100 with one decimal, estimates as
    `value ± std [low, high] (SE se; n N in G episodes)` (`†`: too few clusters; `‡` after
    the CI: not to be trusted, `Estimate.caution`), unknown
    as –."""
    if value is None:  # a cost is NULL only when a price was unknown: never a dash for $0
        return "unknown" if column.kind == "money" else DASH
    if isinstance(value, Estimate):
        if value.value is None:
            return DASH
        kind = column.kind if column.kind != "text" else "float"
        text = format_number(value.value, kind)
        if value.std is not None:
            text += f" ± {format_number(value.std, kind)}"
        if value.low is not None and value.high is not None and (value.clusters or value.n) > 1:
            text += f" [{format_number(value.low, kind)}, {format_number(value.high, kind)}]"
            if value.caution:
                text += UNTRUSTED
        if value.se is not None or value.clusters is not None:  # `(n 6 in 1 episode)` too
            text += f" ({sample_text(value, kind)})"
        if value.few and value.value is not None:
            text += FEW
        return text
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) and column.kind != "text":
        return format_number(value, column.kind)
    return str(value)


def sample_text(value: Estimate, kind: str) -> str:
    """`SE 3.1; n 30 in 10 episodes`: the clustered SE, the observations and the clusters they
    form, named beside every figure (`stats.CLUSTER`: one definition for every report)."""
    n = f"n {value.n:,}"
    if value.clusters is not None:
        n += f" in {value.clusters:,} {cluster_name(value.clusters)}"
    return f"SE {format_number(value.se, kind)}; {n}" if value.se is not None else n


def pct_note(table: Table) -> list[str]:
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
        for note in [*table.notes, *pct_note(table)]:
            out += [f"*{note}*", ""]
    return "\n".join(out).rstrip() + "\n"


def to_json(result: ReportResult) -> str:
    return dumps_rows(result.as_dict()) + "\n"


ONE_LINE = frozenset({"rows", "explanations"})
"""Keys whose lists `dumps_rows` writes an element a line: a table's rows, `explain`'s
sessions — what grows with the store."""


def dumps_rows(value: Any, indent: str = "", rows: bool = False) -> str:
    """`json.dumps(value, indent=2, ensure_ascii=False, default=str)`, but each element of a
    list under a `ONE_LINE` key on one line: `indent` makes `json` encode in Python, several
    times slower than its C encoder, which writes each element here (0.23 s of `explain`'s
    JSON on 1 M turns: 1,000 sessions' explanations, 1,468 rows). The same value when
    parsed."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        items = (f"{inner}{json.dumps(_key(k), ensure_ascii=False)}: "
                 f"{dumps_rows(v, inner, k in ONE_LINE and isinstance(v, list))}"
                 for k, v in value.items())
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list) and value:
        parts = (inner + (json.dumps(v, ensure_ascii=False, default=str) if rows
                          else dumps_rows(v, inner)) for v in value)
        return "[\n" + ",\n".join(parts) + f"\n{indent}]"
    return json.dumps(value, ensure_ascii=False, default=str)


def _key(key: Any) -> str:
    """A dict key as `json` writes it (it takes str, int, float, bool and None)."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def to_terminal(result: ReportResult, width: int | None = None) -> str:
    from rich.console import Console
    from rich.text import Text

    buf = io.StringIO()
    width = width or terminal_width()
    # store text (error messages, names) is data, never console markup: `[/x]` in a judge's
    # error would otherwise raise MarkupError; and with no colours, highlighting is wasted work
    console = Console(file=buf, width=width, force_terminal=False, color_system=None,
                      highlight=False, markup=False)
    console.print(Text.assemble((result.title, "bold"), f" — {result.description}"))
    console.print(f"runs: {', '.join(result.runs)}")
    for note in result.notes:  # e.g. the not-comparable banner: shown in every format
        # an address folded by the console is no longer one: left whole for the terminal
        console.print(note, soft_wrap=bool(_URL.search(note)))
    for table in result.tables:
        cells = [[cell_text(v, c) for v, c in zip(row, table.columns, strict=True)]
                 for row in table.rows]
        # columns of addresses (`bench compare`'s `bench view` links): a reference in the
        # table, the address whole on a line of its own below it
        links = [i for i, c in enumerate(table.columns) if c.kind == "text" and table.rows
                 and all(isinstance(r[i], str) and _URL.fullmatch(r[i]) for r in table.rows)]
        addresses = []
        for k, row in enumerate(cells, 1):
            for i in links:
                addresses.append(f"  [{k}] {row[i]}")
                row[i] = f"[{k}]"
        if not table.rows:
            dropped: list[str] = []
            console.print(f"\n{table.title}: (no data)")
        else:
            text, dropped = table_text([c.title for c in table.columns],
                                       [c.kind != "text" for c in table.columns], cells,
                                       width, table.title, console)
            console.print()
            buf.write(text)
        if dropped and table.rows:
            console.print(f"  not shown at {width} columns: {', '.join(dropped)} (a wider "
                          "terminal, or --format md)", style="dim")
        for line in addresses:
            console.print(line, soft_wrap=True)
        for note in [*table.notes, *pct_note(table)]:
            console.print(f"  {note}", style="dim")
    return buf.getvalue()


_URL = re.compile(r"https?://\S+")


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


# Header words shortened, in this order, when a table does not fit the terminal; a word never
# breaks mid-word ("repeat s"), and columns that still do not fit are left out and named.
PHRASES = {"(keyword heuristic: rules judge)": "(rules heuristic)"}
ABBREVIATIONS = {"repeats": "reps", "finished": "done", "skipped": "skip", "errors": "err",
                 "sessions": "sess", "tokens": "tok", "in/out": "i/o", "completed": "compl",
                 "inferred": "infer", "provided": "prov", "unresolved": "unres",
                 "intents": "int"}
_MIN_TEXT = 10
"""Text cells fold below their full length, but not below this (or their longest line)."""


def abbreviate(title: str) -> str:
    for long, short in PHRASES.items():
        title = title.replace(long, short)
    return " ".join(ABBREVIATIONS.get(w, w) for w in title.split())


def fit_columns(titles: list[str], numeric: list[bool], rows: list[list[str]], width: int
                ) -> tuple[list[str], list[int], list[int], bool]:
    """Headers, content widths and kept column indexes of a rich table `width` wide, and
    whether it must be drawn compact (no box, one space between columns).

    Each header gets at least its longest word, so rich wraps it between words only; a number
    never folds (a figure with a CI wraps between its parts); text folds down to `_MIN_TEXT`. When the minimums exceed the terminal the
    headers are abbreviated (`ABBREVIATIONS`), then the box goes, then columns are dropped
    from the right (never the first); the caller names the dropped ones."""
    def longest(text: str, words: bool) -> int:
        parts = text.split() if words else text.splitlines()
        return max((len(p) for p in parts), default=0)

    columns = list(zip(*rows, strict=True)) if rows else [()] * len(titles)
    data = [max(map(_longest_line, col), default=0) for col in columns]
    # a figure wraps between its parts (`87.2 ± 0.0 [80.0, 94.4]`), never inside a number
    figure = [max(map(_longest_word, col), default=0) for col in columns]

    def minimum(i: int, title: str) -> int:
        cells = figure[i] if numeric[i] else min(data[i], _MIN_TEXT)
        return max(longest(title, True), cells, 1)

    def space(keep: list[int], compact: bool) -> int:  # what borders and padding leave
        return width - (len(keep) - 1 if compact else 3 * len(keep) + 1)

    heads, keep, compact = list(titles), list(range(len(titles))), False
    for step in ("abbreviate", "compact"):
        if sum(minimum(i, heads[i]) for i in keep) <= space(keep, compact):
            break
        if step == "abbreviate":
            heads = [abbreviate(t) for t in titles]
        else:
            compact = True
    while len(keep) > 1 and sum(minimum(i, heads[i]) for i in keep) > space(keep, compact):
        keep.pop()
    mins = [minimum(i, heads[i]) for i in keep]
    wants = [max(len(heads[i]), data[i], m) for i, m in zip(keep, mins, strict=True)]
    spare = max(0, space(keep, compact) - sum(mins))
    slack = [w - m for w, m in zip(wants, mins, strict=True)]
    total = sum(slack)
    widths = [m + (s if total <= spare else s * spare // total)
              for m, s in zip(mins, slack, strict=True)]
    return [heads[i] for i in keep], widths, keep, compact


def _longest_line(text: str) -> int:
    """The longest line's length. A printable text has no line break (the separators
    `splitlines` cuts at are all unprintable): one line, measured without splitting (the
    33,000-row by-session cost table spent 1 s here)."""
    return len(text) if text.isprintable() else max(map(len, text.splitlines()), default=0)


def _longest_word(text: str) -> int:
    """The longest word's length (`split()`); a printable text's only whitespace is the
    space, so one without a space is one word."""
    if " " not in text and text.isprintable():
        return len(text)
    return max(map(len, text.split()), default=0)


def fitted_table(titles: list[str], numeric: list[bool], rows: list[list[str]], width: int,
                 title: str | None = None) -> tuple[Any, list[str]]:
    """A rich table of `rows` (cell text) that fits `width`, and the titles of the columns it
    had to leave out."""
    layout = fit_columns(titles, numeric, rows, width)
    return _rich_table(titles, numeric, rows, layout, title), [
        titles[i] for i in range(len(titles)) if i not in layout[2]]


def _rich_table(titles: list[str], numeric: list[bool], rows: list[list[str]],
                layout: tuple[list[str], list[int], list[int], bool], title: str | None) -> Any:
    from rich import box
    from rich.table import Table as RichTable
    from rich.text import Text

    heads, widths, keep, compact = layout
    rt = (RichTable(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                    padding=(0, 0)) if compact else
          RichTable(title=title, title_justify="left", show_lines=False))
    for i, head, w in zip(keep, heads, widths, strict=True):
        rt.add_column(head, justify="right" if numeric[i] else "left", width=w,
                      overflow="fold")
    for row in rows:
        rt.add_row(*[Text(row[i]) for i in keep])
    return rt


FAST_ROWS = 3
"""Tables of at least this many rows are drawn by `table_text`'s fast path when it can: rich
draws at most two of their rows (the checked sample), so from three rows on the rest is
saved (the 140-row by-session cost table of 1 M turns: 0.14 → 0.012 s; with 200 it went
through rich whole)."""


def table_text(titles: list[str], numeric: list[bool], rows: list[list[str]], width: int,
               title: str | None, console: Any) -> tuple[str, list[str]]:
    """The terminal text of a table (as `console` prints `fitted_table`'s rich table) and the
    titles of the columns left out. Rich lays out every cell, ~0.1 ms each: the 33,000-row
    by-session cost table of 1 M turns took 48 s. From `FAST_ROWS` rows on, a cell that is one
    printable line of one-column characters fitting its column is padded here, and any other
    is laid out by rich alone, once per distinct (text, column); rows are joined with the
    table's borders. Rich draws the header, the borders and a sample of rows (the first, and
    the first with a cell of several lines): the sample must come out as joined here, or
    rich draws the whole table after all."""
    layout = fit_columns(titles, numeric, rows, width)
    _, widths, keep, compact = layout
    dropped = [titles[i] for i in range(len(titles)) if i not in keep]
    if len(rows) >= FAST_ROWS:
        fast = _FastRows(console, [numeric[i] for i in keep], widths, compact)
        blocks = fast.blocks([[row[i] for i in keep] for row in rows])
        tall = next((k for k, b in enumerate(blocks) if len(b) > 1), 0)
        sample = sorted({0, tall})
        drawn = _draw(console, _rich_table(titles, numeric, [rows[k] for k in sample], layout,
                                           title)).split("\n")
        want = [line for k in sample for line in blocks[k]]
        at = next((i for i in range(len(drawn)) if drawn[i:i + len(want)] == want), None)
        if at is not None:
            body = [line for b in blocks for line in b]
            return "\n".join([*drawn[:at], *body, *drawn[at + len(want):]]), dropped
    return _draw(console, _rich_table(titles, numeric, rows, layout, title)), dropped


class _FastRows:
    """Rows of a table as rich lays them out (`table_text`): cells padded to their column,
    top-aligned, between the box's `│` (or single spaces when compact)."""

    def __init__(self, console: Any, numeric: list[bool], widths: list[int],
                 compact: bool) -> None:
        from rich.cells import cell_len

        self.console, self.numeric, self.widths, self.compact = console, numeric, widths, compact
        self.cell_len = cell_len
        self.blanks = [" " * w for w in widths]
        self.laid: dict[tuple[str, int], list[str]] = {}

    def cell(self, text: str, j: int) -> list[str]:
        w = self.widths[j]
        if len(text) <= w and text.isprintable() and text == text.strip() and (
                text.isascii() or self.cell_len(text) == len(text)):
            return [text.rjust(w) if self.numeric[j] else text.ljust(w)]
        key = (text, j)
        if key not in self.laid and w > 0 and text.isascii() and text.isprintable() and (
                " " not in text and text):
            # one word wider than its column: folded every `w` characters, as rich folds it
            # (the 4,761 session names of the by-session cost table: 0.4 s through rich)
            pad = str.rjust if self.numeric[j] else str.ljust
            self.laid[key] = [pad(text[i:i + w], w) for i in range(0, len(text), w)]
        if key not in self.laid:
            from rich.text import Text

            options = self.console.options.update(
                width=w, justify="right" if self.numeric[j] else "left", overflow="fold",
                no_wrap=False, height=None)
            self.laid[key] = ["".join(seg.text for seg in line)
                              for line in self.console.render_lines(Text(text), options,
                                                                    pad=True)]
        return self.laid[key]

    def column(self, texts: Sequence[str], j: int) -> list[str | list[str]]:
        """`cell` of every text of column `j`, a one-line cell as its line: the same test
        inline, column by column (cell by cell, the 400,000 cells of the by-session cost
        table took 1.6 s)."""
        w, cell_len = self.widths[j], self.cell_len
        pad = str.rjust if self.numeric[j] else str.ljust
        return [pad(t, w) if len(t) <= w and t.isprintable() and t == t.strip() and (
                    t.isascii() or cell_len(t) == len(t)) else self.cell(t, j) for t in texts]

    def blocks(self, rows: list[list[str]]) -> list[list[str]]:
        """`lines` of every row, laid out column by column."""
        if not rows:
            return []
        columns = [self.column(texts, j) for j, texts in enumerate(zip(*rows, strict=True))]
        sep, left, right = (" ", "", "") if self.compact else (" │ ", "│ ", " │")
        out = []
        for parts in zip(*columns, strict=True):
            if all(type(p) is str for p in parts):
                out.append([left + sep.join(parts) + right])
            else:
                out.append(self._lines([[p] if type(p) is str else p for p in parts]))
        return out

    def lines(self, row: list[str]) -> list[str]:
        return self._lines([self.cell(text, j) for j, text in enumerate(row)])

    def _lines(self, cells: list[list[str]]) -> list[str]:
        """Cells of one row (their lines) side by side, a shorter cell padded with blanks."""
        height = max(map(len, cells))
        padded = [c if len(c) == height else c + [blank] * (height - len(c))
                  for c, blank in zip(cells, self.blanks, strict=True)]
        sep, left, right = (" ", "", "") if self.compact else (" │ ", "│ ", " │")
        return [left + sep.join(parts) + right for parts in zip(*padded, strict=True)]


def _draw(console: Any, renderable: Any) -> str:
    with console.capture() as out:
        console.print(renderable)
    return str(out.get())


def terminal_width() -> int:
    """The terminal's columns (`COLUMNS` when set); 140 when output is not a terminal."""
    import shutil

    return max(40, shutil.get_terminal_size((140, 40)).columns)
