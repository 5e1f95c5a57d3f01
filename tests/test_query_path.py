"""`bench query`'s path (issue 31, start-up): the SQL is parsed by the store's own connection,
not by DuckDB's module-level parser (which opens an in-memory database first), and a mistake in
the SQL is still said before anything about the store, as when it was parsed first."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchpack.reports.access import StoreError
from benchpack.reports.api import run_query
from benchpack.runtime.store import Store
from benchpack.specs.storefile import duckdb_core


@pytest.fixture
def store(tmp_path: Path) -> Path:
    db = tmp_path / "s.duckdb"
    Store(db).close()
    return db


def test_a_query_on_a_store_never_uses_the_module_level_parser(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(sql: str) -> list[object]:
        raise AssertionError("the module-level parser opened an in-memory database")

    monkeypatch.setattr(duckdb_core(), "extract_statements", refused)
    assert run_query(store, "SELECT 2 AS x").rows == [(2,)]
    with pytest.raises(StoreError, match="the query has 2 statements"):
        run_query(store, "SELECT 1; SELECT 2")
    with pytest.raises(StoreError, match='query failed: Parser Error: syntax error at or near '
                                         '"SELEC"'):
        run_query(store, "SELEC 1")


@pytest.mark.parametrize("sql, said", [
    ("SELECT 1; SELECT 2", "the query has 2 statements"),
    ("SELEC 1", 'query failed: Parser Error: syntax error at or near "SELEC"'),
    ("SELECT 1", "no such store"),
])
def test_the_sql_s_mistake_is_said_before_a_missing_store(tmp_path: Path, sql: str,
                                                          said: str) -> None:
    with pytest.raises(StoreError, match=said):
        run_query(tmp_path / "none.duckdb", sql)


def test_the_sql_s_mistake_is_said_before_a_file_that_is_not_a_store(tmp_path: Path) -> None:
    other = tmp_path / "other.duckdb"
    con = duckdb_core().connect(str(other))
    con.execute("CREATE TABLE t (a INT)")
    con.close()
    with pytest.raises(StoreError, match="the query has 2 statements"):
        run_query(other, "SELECT 1; SELECT 2")
    with pytest.raises(StoreError) as exc:
        run_query(other, "SELECT 1")
    assert "statements" not in str(exc.value)
