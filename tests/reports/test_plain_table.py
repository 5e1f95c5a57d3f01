"""`bench query`'s table drawn without rich (`reports/plain_table.py`) must be rich's text,
character for character, or not be drawn at all (None: rich draws it)."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from benchpack.reports.plain_table import plain_stream, plain_table
from benchpack.reports.render import fitted_table


def _rich(titles: list[str], numeric: list[bool], rows: list[list[str]], width: int) -> str:
    """What `bench query` prints through rich on a pipe (its Console, a plain file)."""
    out = io.StringIO()
    table, _ = fitted_table(titles, numeric, rows, width)
    Console(file=out, width=width, markup=False, highlight=False).print(table)
    return out.getvalue()


def test_select_1_by_hand() -> None:
    text, dropped = plain_table(["1"], [True], [["1"]], 140) or ("", ["not drawn"])
    assert text == "┏━━━┓\n┃ 1 ┃\n┡━━━┩\n│ 1 │\n└───┘" and dropped == []


def test_padding_and_justification_by_hand() -> None:
    # the name column is 5 wide (`alpha`), n is 3 (`n` header, `100` data): text left,
    # numbers right, one space of padding inside each border
    got = plain_table(["name", "n"], [False, True], [["alpha", "7"], ["b", "100"]], 80)
    assert got == ("┏━━━━━━━┳━━━━━┓\n"
                   "┃ name  ┃   n ┃\n"
                   "┡━━━━━━━╇━━━━━┩\n"
                   "│ alpha │   7 │\n"
                   "│ b     │ 100 │\n"
                   "└───────┴─────┘", [])
    assert got[0] + "\n" == _rich(["name", "n"], [False, True], [["alpha", "7"], ["b", "100"]],
                                  80)


def test_what_rich_must_draw_is_left_to_it() -> None:
    assert plain_table(["t"], [False], [["a\nb"]], 80) is None  # two lines
    assert plain_table(["t"], [False], [["naïve"]], 80) is None  # not ASCII
    assert plain_table(["t"], [False], [["x" * 200]], 80) is None  # folded
    assert plain_table([":smile:"], [False], [["x"]], 80) is None  # an emoji code
    assert plain_table(["a long header"], [False], [["x"]], 40) is not None
    assert plain_table([f"c{i}" for i in range(30)], [False] * 30, [["v" * 9] * 30], 60) \
        is None  # compact or dropped columns: rich's layout


def test_plain_streams() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert plain_stream(io.StringIO())
    assert not plain_stream(Tty())
    latin = io.TextIOWrapper(io.BytesIO(), encoding="latin-1")
    assert not plain_stream(latin)  # rich draws an ASCII box there


_CELL = st.one_of(
    st.text(alphabet="abc XYZ019.-_", max_size=12),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=6),
    st.sampled_from(["", " ", "NULL", "2026-12-04 18:00:00", "x" * 60, "a b", " a", "1.5e-07"]),
)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_plain_is_rich_or_none(data: st.DataObject) -> None:
    cols = data.draw(st.integers(1, 7))
    titles = data.draw(st.lists(st.one_of(st.text(alphabet="abcdef _", min_size=0, max_size=14),
                                          st.sampled_from(["count_star()", "a:b", "é"])),
                                min_size=cols, max_size=cols))
    numeric = data.draw(st.lists(st.booleans(), min_size=cols, max_size=cols))
    rows = data.draw(st.lists(st.lists(_CELL, min_size=cols, max_size=cols), max_size=6))
    width = data.draw(st.integers(40, 160))
    got = plain_table(titles, numeric, rows, width)
    if got is not None:
        assert got[0] + "\n" == _rich(titles, numeric, rows, width)
        assert got[1] == fitted_table(titles, numeric, rows, width)[1]
