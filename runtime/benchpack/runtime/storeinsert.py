"""How the store's rows go into DuckDB: one statement per table and batch, each column as one
JSON array DuckDB parses (`insert_rows`), and what DuckDB's Python binding would otherwise do per
value (`no_pandas_retries`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def no_pandas_retries() -> None:
    """DuckDB's binding tries `import pandas` for every bound parameter (16 times per insert)
    and a failed import is not remembered: each try walked sys.path again, ~60 % of an
    insert's CPU. When pandas is not installed, say so once (`import pandas` then fails at
    once, and `find_spec("pandas")` still answers None)."""
    import importlib.util
    import sys

    if "pandas" not in sys.modules and importlib.util.find_spec("pandas") is None:
        sys.modules["pandas"] = None  # type: ignore[assignment]


_COLUMNS: dict[str, list[tuple[str, str]]] = {}


def _described(con: Any, table: str) -> list[tuple[str, str]]:
    if table not in _COLUMNS:
        _COLUMNS[table] = [(r[0], r[1]) for r in con.execute(f"DESCRIBE {table}").fetchall()]
    return _COLUMNS[table]


def described(con: Any, table: str) -> list[tuple[str, str]]:
    """(name, SQL type) of each column of `table`, in order (read once per process)."""
    return _described(con, table)


def columns(con: Any, table: str) -> list[str]:
    return [name for name, _ in _described(con, table)]


_KINDS: dict[str, tuple[type, ...]] = {
    "VARCHAR": (str,), "JSON": (str,), "INTEGER": (int,), "BIGINT": (int,),
    "DOUBLE": (float, int), "BOOLEAN": (bool,)}


def _column_list(values: tuple[Any, ...], sql_type: str) -> list[Any] | None:
    """`values` as one list parameter of `sql_type`, or None when some value would need
    DuckDB's per-value conversion (then the caller binds values one by one)."""
    kinds = _KINDS.get(sql_type)
    if kinds is None:
        return None
    found = set(map(type, values))  # exact types: bool is not an int here
    found.discard(type(None))
    if not found.issubset(kinds):
        return None
    if int in found and sql_type == "DOUBLE":  # exactly what DuckDB's BIGINT → DOUBLE gives
        return [float(v) if type(v) is int else v for v in values]
    return list(values)


_AS_JSON: dict[str, str] = {"VARCHAR": "VARCHAR", "JSON": "VARCHAR", "INTEGER": "BIGINT",
                            "BIGINT": "BIGINT", "DOUBLE": "DOUBLE", "BOOLEAN": "BOOLEAN"}
"""The element type each column's values are parsed as from JSON. Integers are parsed as
BIGINT whatever the column, because `from_json` turns a value out of its declared range into
NULL silently, while the insert's own cast to INTEGER raises, as a bound list would."""

_INT64 = (-(1 << 63), (1 << 63) - 1)


def _json_list(values: list[Any], sql_type: str) -> str | None:
    """`values` (exact types already, see `_column_list`) as one JSON array DuckDB parses back
    to the same values, or None when JSON cannot carry them exactly (integers beyond int64)."""
    if _AS_JSON[sql_type] == "BIGINT" and any(
            v is not None and not _INT64[0] <= v <= _INT64[1] for v in values):
        return None
    # floats: repr round-trips and DuckDB's parser rounds correctly; NaN and ±Infinity are
    # written as such and read back (tests/runtime/test_store_insert.py)
    return json.dumps(values, ensure_ascii=False, check_circular=False)


def insert_rows(con: Any, table: str, data: Sequence[Sequence[Any]], chunk: int = 256) -> None:
    """All rows in one statement, each column as one JSON array parameter that DuckDB parses
    and unnests: converting Python values one by one into DuckDB values cost 5 µs each (a
    pandas probe per value), JSON text parsed inside DuckDB 0.4 µs (12× less for the writer
    thread, whose CPU competes with the event loop for the GIL). A column whose Python values do
    not all have the column's type, or that JSON cannot carry exactly, takes the multi-row
    VALUES path, so DuckDB casts each value exactly as before."""
    if not data:
        return
    described = _described(con, table)
    width = len(data[0])
    if width == len(described):
        params: list[str] = []
        for col, (_, sql_type) in zip(zip(*data, strict=True), described, strict=True):
            values = _column_list(col, sql_type)
            text = _json_list(values, sql_type) if values is not None else None
            if text is None:
                break
            params.append(text)
        else:
            # no casts on the parsed lists: the insert casts to the column type as it would
            # for a scalar
            picks = ", ".join(f"unnest(from_json(?, '[\"{_AS_JSON[t]}\"]'))"
                              for _, t in described)
            con.execute(f"INSERT INTO {table} SELECT {picks}", params)
            return
    one = "(" + ", ".join("?" * width) + ")"
    for start in range(0, len(data), chunk):
        part = data[start:start + chunk]
        con.execute(f"INSERT INTO {table} VALUES " + ", ".join([one] * len(part)),
                    [v for row in part for v in row])
