"""Long terminal tables: rows padded without rich (`render.table_text`) come out as rich draws
them, boxed and compact, and any cell rich would have to fold or measure sends the whole
table back to rich."""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console

from benchpack.reports import render


def _console(width: int) -> Console:
    return Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None,
                   highlight=False, markup=False)


def _rows(n: int, seed: int, extra: str = "") -> list[list[str]]:
    rng = random.Random(seed)
    words = ["ep0.t1", "synth-01", "litellm:gpt-4o", "", "judge", "a b", "x" * 14]
    return [[rng.choice(words) + (extra if i == n // 2 and j == 1 else ""),
             rng.choice(words), str(rng.randrange(10 ** rng.randrange(1, 7))),
             f"${rng.random() * 100:.2f}", rng.choice(["", "12.5 %", "–"])]
            for i in range(n) for j in [1]]


TITLES = ["run (agent)", "session", "calls", "cost", "share of the priced cost"]
NUMERIC = [False, False, True, True, True]


def _rich(rows: list[list[str]], width: int) -> str:
    console = _console(width)
    table, _ = render.fitted_table(TITLES, NUMERIC, rows, width, "By session")
    with console.capture() as out:
        console.print(table)
    return out.get()


def _spy_rich(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The row counts of the tables rich lays out from now on (the fast path lays out one)."""
    drawn: list[int] = []
    real = render._rich_table

    def spy(titles, numeric, rows, layout, title):  # type: ignore[no-untyped-def]
        drawn.append(len(rows))
        return real(titles, numeric, rows, layout, title)

    monkeypatch.setattr(render, "_rich_table", spy)
    return drawn


@pytest.mark.parametrize(("width", "short"), [(140, False), (80, False), (44, True)])
def test_padded_rows_are_what_rich_draws(width: int, short: bool,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows(260, width)
    if short:  # narrow enough to be drawn compact (no box), every cell still fits
        rows = [[c[:4] for c in row] for row in rows]
        assert render.fit_columns(TITLES, NUMERIC, rows, width)[3]
    drawn = _spy_rich(monkeypatch)
    text, _ = render.table_text(TITLES, NUMERIC, rows, width, "By session", _console(width))
    assert drawn == [1]  # the fast path ran
    monkeypatch.undo()
    assert text == _rich(rows, width)


@pytest.mark.parametrize("width", [52, 40, 30])
def test_cells_that_fold_come_out_as_rich_folds_them(width: int,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows(260, width)
    drawn = _spy_rich(monkeypatch)
    text, _ = render.table_text(TITLES, NUMERIC, rows, width, "By session", _console(width))
    monkeypatch.undo()
    # rich drew the sample only: the first row and the first folded one (maybe the same)
    assert len(drawn) == 1 and drawn[0] <= 2
    assert text == _rich(rows, width)
    assert len(text.splitlines()) > 260 + 4  # rows of several lines were there


@pytest.mark.parametrize("odd", ["你好", " lead", "tab\there", "x" * 60, "two\nlines",
                                 "a very long label that folds between its words"])
def test_a_cell_rich_must_fold_or_measure_comes_out_as_rich_draws_it(odd: str) -> None:
    rows = _rows(260, 3, odd)
    text, _ = render.table_text(TITLES, NUMERIC, rows, 60, "By session", _console(60))
    assert text == _rich(rows, 60)


@pytest.mark.parametrize("n", [3, 10, 140])
def test_tables_from_three_rows_take_the_fast_path(n: int,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich lays out only the checked sample (issue 31: the 140-row by-session cost table went
    through rich whole, 0.14 s of `bench report cost --by name`); the text is rich's."""
    rows = _rows(n, n)
    drawn = _spy_rich(monkeypatch)
    text, _ = render.table_text(TITLES, NUMERIC, rows, 100, "By session", _console(100))
    monkeypatch.undo()
    assert len(drawn) == 1 and drawn[0] <= 2
    assert text == _rich(rows, 100)


def test_short_tables_are_rich_s() -> None:
    rows = _rows(20, 1)
    text, _ = render.table_text(TITLES, NUMERIC, rows, 100, "By session", _console(100))
    assert text == _rich(rows, 100)


def test_one_word_wider_than_its_column_folds_as_rich_folds_it() -> None:
    """A word with no space wider than its column (the by-session table's session names) is
    cut every `width` characters here, not laid out by rich: the same lines, left or right
    aligned, for any printable ASCII word and width."""
    from rich.text import Text

    rng = random.Random(7)
    alphabet = [chr(c) for c in range(33, 127)]
    words = ["ep119.t1199", "synth-01+rejudge-claude-3-5-sonnet", "1234567890123", "a", "ab",
             *("".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 40)))
               for _ in range(300))]
    for width in (1, 2, 3, 5, 10, 11, 17):
        console = _console(60)
        for numeric in (False, True):
            fast = render._FastRows(console, [numeric], [width], False)
            options = console.options.update(width=width, justify="right" if numeric else
                                             "left", overflow="fold", no_wrap=False,
                                             height=None)
            for word in words:
                rich_lines = ["".join(seg.text for seg in line)
                              for line in console.render_lines(Text(word), options, pad=True)]
                assert fast.cell(word, 0) == rich_lines, (word, width, numeric)


# ------------------------------------------------------------------------ JSON, a row a line

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_LEAF = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_KEY = (st.sampled_from(["rows", "explanations", "tables", "value"]) | st.text() | st.integers()
        | st.booleans() | st.none() | st.floats(allow_nan=False))
_JSON = st.recursive(_LEAF, lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(_KEY, inner, max_size=4), max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_json_a_row_a_line_parses_as_the_indented_dump(value: object) -> None:
    """`render.dumps_rows` writes what `json.dumps(indent=2)` writes, as a parser reads it,
    whatever the nesting, keys (ints as json writes them), escapes and empties."""
    import json

    assert json.loads(render.dumps_rows(value)) == json.loads(
        json.dumps(value, indent=2, ensure_ascii=False, default=str))


def test_json_rows_and_explanations_go_a_line_each_the_rest_indented() -> None:
    import datetime
    import json

    value = {"title": "t", "tables": [{"columns": [{"key": "a"}], "rows": [
        {"a": 1, "b": [1, 2]}, {"a": "ü", "b": None}]}],
        "explanations": [{"parts": [{"x": 1.5}]}], "when": datetime.date(2026, 12, 5), 3: {}}
    text = render.dumps_rows(value)
    assert text.splitlines() == [
        "{", '  "title": "t",', '  "tables": [', "    {", '      "columns": [', "        {",
        '          "key": "a"', "        }", "      ],", '      "rows": [',
        '        {"a": 1, "b": [1, 2]},', '        {"a": "ü", "b": null}', "      ]", "    }",
        "  ],", '  "explanations": [', '    {"parts": [{"x": 1.5}]}', "  ],",
        '  "when": "2026-12-05",', '  "3": {}', "}"]
    assert json.loads(text) == json.loads(json.dumps(value, indent=2, default=str))
    with pytest.raises(TypeError):
        render.dumps_rows({(1, 2): 0})
