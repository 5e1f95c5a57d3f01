"""The write path's rows are named (issue 30 item 3): each session table's row type comes from
the one DDL, producers set fields by name, and a bare tuple never reaches the store."""

from __future__ import annotations

import duckdb
import pytest

from benchpack.runtime.session_rows import with_key
from benchpack.specs.storeformat import DDL, SESSION_KEY, SESSION_TABLES, row_type, table_columns


def test_each_session_tables_row_type_is_its_columns_after_the_key() -> None:
    con = duckdb.connect()
    con.execute(DDL)
    for (table,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall():
        described = tuple(r[0] for r in con.execute(f"DESCRIBE {table}").fetchall())
        assert table_columns(table) == described, table
    for table in SESSION_TABLES:
        assert SESSION_KEY + row_type(table)._fields == table_columns(table), table


def test_a_field_set_by_a_wrong_or_missing_name_fails_where_the_row_is_built() -> None:
    Msg = row_type("messages")
    with pytest.raises(TypeError):
        Msg(seq=0, turn=1, role="user", content="hi", tool_calls=None, tool_call_id=None,
            nmae="x")  # misnamed `name`
    with pytest.raises(TypeError):
        Msg(seq=0, turn=1, role="user", content="hi", tool_calls=None, tool_call_id=None)
    with pytest.raises(KeyError, match="not a session table"):
        row_type("runs")


def test_the_session_key_goes_in_front_and_a_bare_tuple_is_refused() -> None:
    row = row_type("triple_support")(gt_idx=2, pred_idx=5)
    assert with_key("triple_support", ("r", "s", 0), [row]) == [("r", "s", 0, 2, 5)]
    with pytest.raises(TypeError, match=r"`triple_support` row must be built as row_type"):
        with_key("triple_support", ("r", "s", 0), [(2, 5)])
    # another table's row of the same width is refused too: positions would mean other columns
    other = row_type("messages")(0, 1, "user", "hi", None, None, None)
    with pytest.raises(TypeError):
        with_key("turns", ("r", "s", 0), [other])


def test_a_named_row_pickles() -> None:
    import pickle

    row = row_type("llm_calls")(*range(14))
    assert pickle.loads(pickle.dumps(row)) == row and type(pickle.loads(pickle.dumps(row))) is type(row)
