"""The store's column-wise inserts store exactly what row-by-row inserts would."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchpack.runtime.store import insert_rows

DDL = ("CREATE TABLE t (s VARCHAR, i INTEGER, d DOUBLE, b BOOLEAN, j JSON, l BIGINT);"
       "CREATE TABLE r (s VARCHAR, i INTEGER, d DOUBLE, b BOOLEAN, j JSON, l BIGINT)")

ROWS: list[tuple[Any, ...]] = [
    ("plain", 1, 0.5, True, '{"b": 1,  "a": [1, 2]}', 2**40),
    (None, None, None, None, None, None),
    ("é\x00 line\nbreak", -3, 2, False, '"text"', 0),  # an int in a DOUBLE column
    ("", 2**31 - 1, 1e300, None, "null", -(2**62)),
]


def _rows(con: Any, table: str) -> list[tuple[Any, ...]]:
    return [tuple((type(v).__name__, v) for v in row)
            for row in con.execute(f"SELECT * FROM {table}").fetchall()]


def _row_by_row(con: Any, table: str, rows: list[tuple[Any, ...]]) -> None:
    for row in rows:
        con.execute(f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?, ?)", list(row))


@pytest.mark.parametrize("rows", [
    ROWS,
    [ROWS[1]] * 3,  # every column all NULL
    [("x", 1, 1, False, "[]", 7)],  # a DOUBLE column of ints only
    [(5, True, 1, 0, '{"k": "v"}', 1.0)],  # values of other types: DuckDB casts them
    [(5, 1, 1.5, True, "1", 1), ("a", 2, 2, False, "2", 2)],  # mixed types in one column
    # what JSON has no plain literal for, and what it cannot carry exactly
    [("𝄞 \"q\" \\ 中", 0, float("inf"), True, '"\\u00e9"', 2**63 - 1),
     ("\t", 0, float("-inf"), False, "[]", -(2**63)), ("", 0, -0.0, None, "{}", None),
     ("", 0, 5e-324, None, "{}", None), ("", 0, 0.1 + 0.2, None, "{}", None)],
])
def test_column_wise_equals_row_by_row(tmp_path: Path, rows: list[tuple[Any, ...]]) -> None:
    con = duckdb.connect(str(tmp_path / "x.duckdb"))
    con.execute(DDL)
    insert_rows(con, "t", rows)
    _row_by_row(con, "r", rows)
    assert _rows(con, "t") == _rows(con, "r")
    assert len(_rows(con, "t")) == len(rows)


def test_nan_survives(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "x.duckdb"))
    con.execute(DDL)
    insert_rows(con, "t", [("x", 1, float("nan"), True, "1", 1)])
    assert math.isnan(con.execute("SELECT d FROM t").fetchone()[0])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(
    st.one_of(st.none(), st.text()), st.one_of(st.none(), st.integers(-2**31, 2**31 - 1)),
    st.one_of(st.none(), st.floats(allow_nan=False)), st.one_of(st.none(), st.booleans()),
    st.one_of(st.none(), st.sampled_from(['{"a": [1, 2.5]}', '"中"', "null", "[]"])),
    st.one_of(st.none(), st.integers(-2**63, 2**63 - 1))), min_size=1, max_size=20))
def test_any_values_store_as_bound_one_by_one(rows: list[tuple[Any, ...]]) -> None:
    if any("\ud800" <= c <= "\udfff" for r in rows if r[0] for c in r[0]):
        return  # lone surrogates: no UTF-8 for them, refused either way
    con = duckdb.connect()
    con.execute(DDL)
    insert_rows(con, "t", rows)
    _row_by_row(con, "r", rows)
    got, want = _rows(con, "t"), _rows(con, "r")
    assert got == want
    # -0.0 == 0.0: compare signs too
    assert [math.copysign(1, r[2]) for r in con.execute("SELECT * FROM t").fetchall()
            if r[2] is not None] == [math.copysign(1, r[2]) for r in rows if r[2] is not None]


@pytest.mark.parametrize("bad", [
    ("x", 2**40, 0.0, True, "1", 1),  # out of range for INTEGER
    ("x", 1, 0.0, True, "1", 2**70),  # beyond BIGINT (JSON would read it as NULL)
    ("x", 1, 0.0, True, "{not json", 1),
])
def test_values_the_column_cannot_hold_fail_as_before(tmp_path: Path,
                                                      bad: tuple[Any, ...]) -> None:
    con = duckdb.connect(str(tmp_path / "x.duckdb"))
    con.execute(DDL)
    with pytest.raises(duckdb.Error):
        _row_by_row(con, "r", [bad])
    with pytest.raises(duckdb.Error):
        insert_rows(con, "t", [ROWS[0], bad])
    assert _rows(con, "t") == []


def test_inserts_do_not_search_sys_path_for_pandas_each_time(tmp_path) -> None:
    """DuckDB's Python binding tries `import pandas` for every bound parameter (16 tries per
    insert); without pandas installed each failed try walks sys.path again, which took ~60 %
    of an insert's CPU and a quarter of a whole `bench run`'s. After `connect`, a missing pandas
    is known to be missing."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("pandas") is not None:
        pytest.skip("pandas is installed: DuckDB finds it once and caches it")
    probe = f"""
import sys
from benchpack.runtime.store import connect
tries = []
class Spy:
    def find_spec(self, name, path=None, target=None):
        if name == "pandas":
            tries.append(name)
        return None
con = connect({str(tmp_path / 's.duckdb')!r})
con.execute("CREATE TABLE t (a INTEGER, b VARCHAR)")
sys.meta_path.insert(0, Spy())
for _ in range(5):
    con.execute("INSERT INTO t SELECT unnest(?), unnest(?)", [[1, 2], ["x", "y"]])
print(len(tries))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"
