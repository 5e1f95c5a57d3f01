"""Reading a released JSONL file row by row, for the importers of the compiler (packs) and of
the runtime (runs), which may not import each other: one reader, so both locate a broken line
the same way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_jsonl(path: Path, error: type[Exception] = ValueError,
               what: str = "the released JSONL file") -> list[tuple[int, dict[str, Any]]]:
    """(line number, row) of every non-blank line. Any problem raises `error` with one located
    line (`path:line:col: message (hint)`); `what` names the file the user should give."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: no such file (give {what})") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{path}:{n}:{exc.colno}: not a JSON object ({exc.msg}) (is the file "
                        "complete? a truncated download ends mid-line)") from None
        if not isinstance(row, dict):
            raise error(f"{path}:{n}:1: a row must be a JSON object, found "
                        f"{type(row).__name__}")
        rows.append((n, row))
    if not rows:
        raise error(f"{path}: no rows (expected one JSON object per line)")
    return rows
