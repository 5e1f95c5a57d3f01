"""Data files a pack points at (fixtures, event logs, corpora, ground-truth graphs).

Pure parsers: text in, plain data out, every problem as a `DataError` whose message names the
line or row, so the builder can report it at the YAML key that names the file.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from pydantic import ValidationError

from .loader import MAX_DEPTH, type_name


class DataError(ValueError):
    """What is wrong with a data file, phrased for its author."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint
        """Replaces the caller's generic hint (what the file should look like)."""


DEPTH_HINT = (f"flatten the structure: no pack needs more than {MAX_DEPTH} levels; store a "
              "deep value as a JSON string")


def _no_constant(name: str) -> Any:
    raise DataError(f"`{name}` is not valid JSON; write null or a number")


def parse_json(text: str) -> Any:
    """Strict JSON (no NaN or Infinity, which would make the plan invalid JSON), nested at most
    `MAX_DEPTH` levels like a YAML document: every later stage (the plan, the runtime's copies
    of service rows, the store) walks values recursively."""
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise DataError(f"line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        data = None  # deeper than Python's own limit: located below
    except DataError:
        raise
    except ValueError as exc:  # integers longer than Python converts
        raise DataError(str(exc).split(";")[0]) from None
    if data is None or _too_deep(data):
        line, col = _deep_position(text)
        raise DataError(f"line {line} column {col}: nested more than {MAX_DEPTH} levels deep",
                        DEPTH_HINT)
    return data


def _too_deep(data: Any) -> bool:
    """Whether `data` nests more than MAX_DEPTH lists and objects (iteratively: no recursion
    limit applies, and the walk stops at the first too-deep value)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children: Any
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((v, depth + 1) for v in children if isinstance(v, dict | list))
    return False


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _deep_position(text: str) -> tuple[int, int]:
    """1-based line and column of the bracket opening level MAX_DEPTH + 1 (strings skipped);
    only called once a file is known to be too deep."""
    depth = 0
    for m in _JSON_TOKENS.finditer(text):
        ch = m.group()
        if ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                i = m.start()
                return text.count("\n", 0, i) + 1, i - (text.rfind("\n", 0, i) + 1) + 1
        elif ch in "]}":
            depth -= 1
    return 1, 1


def read_rows(name: str, text: str) -> list[dict[str, Any]]:
    """Rows of a fixture: a JSON list of objects (or an object holding exactly one such list),
    JSON Lines, or CSV with a header line."""
    rows: Any
    if name.endswith(".csv"):
        return _csv_rows(text)
    if name.endswith(".jsonl"):
        rows = []
        for i, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    rows.append(parse_json(line))
                except DataError as exc:
                    raise DataError(f"line {i}: {str(exc).removeprefix('line 1 ')}",
                                    exc.hint) from None
        where = "line"
    else:
        rows = parse_json(text)
        if isinstance(rows, dict):  # {"items": [...]} style fixtures
            lists = [v for v in rows.values() if isinstance(v, list)]
            if len(lists) != 1:
                raise DataError("expected a list of objects, or an object holding one list")
            rows = lists[0]
        where = "row"
    if not isinstance(rows, list):
        raise DataError(f"expected a list of objects, found {type_name(rows)}")
    for i, r in enumerate(rows, start=1):
        if not isinstance(r, dict):
            raise DataError(f"{where} {i} is {type_name(r)}, not an object")
    return rows


def _csv_rows(text: str) -> list[dict[str, Any]]:
    try:
        lines = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise DataError(f"not valid CSV: {exc}") from None
    lines = [row for row in lines if row]
    if not lines:
        return []
    header = lines[0]
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise DataError(f"column `{dup[0]}` appears twice in the header")
    out = []
    for i, row in enumerate(lines[1:], start=2):
        if len(row) != len(header):
            raise DataError(f"record {i} has {len(row)} fields; the header has {len(header)}")
        out.append(dict(zip(header, row, strict=True)))
    return out


def read_triples(name: str, text: str) -> list[dict[str, Any]]:
    """Ground-truth triples: TSV lines `head<TAB>relation<TAB>tail[<TAB>dimension]`, or JSON
    (`[{head, relation, tail}]` or `{triplets: [...]}`)."""
    if name.endswith((".tsv", ".txt")):
        out = []
        for i, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            x = line.split("\t")
            if len(x) not in (3, 4):
                raise DataError(f"line {i}: expected head<TAB>relation<TAB>tail")
            out.append({"head": x[0].strip(), "relation": x[1].strip(), "tail": x[2].strip(),
                        "dimension": x[3].strip() if len(x) > 3 else None})
        return out
    data = parse_json(text)
    if isinstance(data, dict):
        data = data.get("triplets", data.get("triples"))
    if not isinstance(data, list):
        raise DataError("expected a list of {head, relation, tail} objects")
    out = []
    for i, row in enumerate(data, start=1):
        if not isinstance(row, dict) or not all(
                isinstance(row.get(k), str) for k in ("head", "relation", "tail")):
            raise DataError(f"triple {i} is not an object with text `head`, `relation` and "
                            "`tail`")
        dim = row.get("dimension")
        out.append({"head": row["head"], "relation": row["relation"], "tail": row["tail"],
                    "dimension": None if dim is None else str(dim)})
    return out


def first_error(exc: ValidationError) -> str:
    """The first problem of a validation error, in one line."""
    errors = exc.errors(include_url=False)
    e = errors[0]
    where = ".".join(str(p) for p in e["loc"])
    text = f"`{where}`: {e['msg'][0].lower()}{e['msg'][1:]}" if where else e["msg"]
    return text + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")

