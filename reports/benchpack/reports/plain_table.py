"""`bench query`'s table without rich, when rich would draw it plainly (issue 31, start-up).

Importing rich's console and table costs ~40 ms of CPU, a sixth of what `bench query` may take
(≤ 3× the click + rich floor). Written to a pipe or a file, rich draws `render.fitted_table`'s
table with no styles, and for the common table — every header and cell one line of printable
ASCII that fits its column, drawn boxed — its text is simple enough to make here, character
for character. Anything else (a terminal, a non-UTF-8 stream, a cell to wrap or fold, wide
characters, the compact layout of a narrow width) returns None and rich draws it.
`tests/test_plain_table.py` compares both on generated tables.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from .render import fit_columns


def plain_stream(stream: TextIO | Any) -> bool:
    """Whether rich would take `stream` for a plain file: not a terminal (rich's own tests:
    `TTY_COMPATIBLE`, `FORCE_COLOR`, `isatty`), UTF-8 (else rich draws an ASCII box)."""
    if os.environ.get("TTY_COMPATIBLE") == "1" or "FORCE_COLOR" in os.environ:
        return False
    if "ipykernel" in sys.modules or os.name == "nt":  # Jupyter; legacy Windows consoles
        return False
    encoding = (getattr(stream, "encoding", None) or "utf-8").lower()
    isatty = getattr(stream, "isatty", None)
    try:
        terminal = bool(isatty()) if isatty is not None else False
    except ValueError:
        terminal = False
    return not terminal and encoding.startswith("utf")


def _simple(text: str, width: int) -> bool:
    return len(text) <= width and text.isascii() and text.isprintable() and text == text.strip()


def plain_table(titles: list[str], numeric: list[bool], rows: list[list[str]],
                width: int) -> tuple[str, list[str]] | None:
    """The text rich prints for `fitted_table(titles, numeric, rows, width)` on a plain
    stream (without the final newline), and the titles of the columns left out; None when
    rich must draw it."""
    heads, widths, keep, compact = fit_columns(titles, numeric, rows, width)
    if compact or not keep:
        return None
    # a header is given to rich as a string: `:name:` would become an emoji
    if not all(_simple(h, w) and ":" not in h for h, w in zip(heads, widths, strict=True)):
        return None
    right = [numeric[i] for i in keep]
    lines = []
    for row in rows:
        cells = []
        for j, i in enumerate(keep):
            text, w = row[i], widths[j]
            if not _simple(text, w):
                return None
            cells.append(text.rjust(w) if right[j] else text.ljust(w))
        lines.append("│ " + " │ ".join(cells) + " │")
    header = [h.rjust(w) if r else h.ljust(w) for h, w, r in zip(heads, widths, right,
                                                                  strict=True)]
    bars = [w + 2 for w in widths]
    out = ["┏" + "┳".join("━" * b for b in bars) + "┓",
           "┃ " + " ┃ ".join(header) + " ┃",
           "┡" + "╇".join("━" * b for b in bars) + "┩",
           *lines,
           "└" + "┴".join("─" * b for b in bars) + "┘"]
    return "\n".join(out), [titles[i] for i in range(len(titles)) if i not in keep]
