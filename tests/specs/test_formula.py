"""The score-formula language: hand-computed values, unknowns, refusals with positions, fuzzing."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchpack.specs.formula import MAX_CHARS, Formula, Problem, parse

CLAW = "safety * max(0.8 * completion + 0.2 * robustness, completion)"


def ok(text: str, **kw: object) -> Formula:
    f = parse(text, **kw)  # type: ignore[arg-type]
    assert isinstance(f, Formula), f
    return f


def bad(text: str, **kw: object) -> Problem:
    p = parse(text, **kw)  # type: ignore[arg-type]
    assert isinstance(p, Problem), p
    return p


# --------------------------------------------------------------------------- values by hand


@pytest.mark.parametrize("values, expected", [
    # 0.8·0.5 + 0.2·1 = 0.6 > 0.5 → robustness lifts completion
    ({"safety": 1, "completion": 0.5, "robustness": 1}, 0.6),
    # 0.8·0.5 + 0.2·0 = 0.4 < 0.5 → max keeps completion: robustness never lowers a score
    ({"safety": 1, "completion": 0.5, "robustness": 0}, 0.5),
    # the safety gate zeroes everything
    ({"safety": 0, "completion": 1, "robustness": 1}, 0.0),
    # a half-safe run: 0.5 · max(0.8·0.9 + 0.2·0.4, 0.9) = 0.5 · max(0.8, 0.9) = 0.45
    ({"safety": 0.5, "completion": 0.9, "robustness": 0.4}, 0.45),
    # an agent that did nothing
    ({"safety": 1, "completion": 0, "robustness": 0}, 0.0),
])
def test_claw_formula_by_hand(values: dict[str, float], expected: float) -> None:
    f = ok(CLAW)
    assert f.names == {"safety", "completion", "robustness"}
    assert f.evaluate(values) == pytest.approx(expected)


def test_an_unscored_component_makes_the_formula_unknown_never_zero() -> None:
    f = ok(CLAW)
    out = f.run({"safety": 1, "completion": 0.5, "robustness": None})
    assert out.value is None and "robustness" in out.reason
    assert f.evaluate({"safety": 1, "completion": float("nan"), "robustness": 1}) is None
    # a failed gate decides the product: 0 · (any finite score) = 0, nothing is invented
    assert f.evaluate({"safety": 0, "completion": None, "robustness": 1}) == 0
    assert f.evaluate({"safety": None, "completion": 0, "robustness": 0}) == 0
    assert f.evaluate({"safety": None, "completion": 0.5, "robustness": 1}) is None
    # a value the caller forgot is unknown, not 0
    assert f.run({"safety": 1, "completion": 1}).value is None


@pytest.mark.parametrize("text, values, expected", [
    ("a + b * c", {"a": 1, "b": 2, "c": 3}, 7),
    ("(a + b) * c", {"a": 1, "b": 2, "c": 3}, 9),
    ("a / b", {"a": 1, "b": 4}, 0.25),
    ("-a + +b", {"a": 1, "b": 3}, 2),
    ("abs(a - b)", {"a": 0.2, "b": 0.7}, 0.5),
    ("clamp(a, 0, 1)", {"a": 1.7}, 1),
    ("clamp(a, 0, 1)", {"a": -3}, 0),
    ("clamp(a, 0, 1)", {"a": 0.3}, 0.3),
    ("min(a, b, c)", {"a": 3, "b": 1, "c": 2}, 1),
    ("max(a, b, c)", {"a": 3, "b": 1, "c": 2}, 3),
    ("if(a >= 0.5, 1, 0)", {"a": 0.5}, 1),
    ("if(a >= 0.5, 1, 0)", {"a": 0.49}, 0),
    ("0 < a <= 1", {"a": 1}, 1),
    ("0 < a <= 1", {"a": 0}, 0),
    ("a == b", {"a": 1, "b": 1.0}, 1),
    ("a != b", {"a": 1, "b": 1.0}, 0),
    ("a and b", {"a": 1, "b": 0.2}, 1),
    ("a and b", {"a": 1, "b": 0}, 0),
    ("a or b", {"a": 0, "b": 0}, 0),
    ("not a", {"a": 0}, 1),
    ("not a", {"a": 0.1}, 0),
    ("a", {"a": True}, 1),
    ("安全 * 完成度", {"安全": 1, "完成度": 0.7}, 0.7),
    ("0.5 * a\n  + 0.5 * b", {"a": 1, "b": 0}, 0.5),
])
def test_operators_by_hand(text: str, values: dict[str, float], expected: float) -> None:
    assert ok(text).evaluate(values) == pytest.approx(expected)


def test_unknowns_stay_unknown_except_where_the_result_is_decided_without_them() -> None:
    assert ok("if(a, b, c)").evaluate({"a": 1, "b": 0.4, "c": None}) == 0.4
    assert ok("if(a, b, c)").evaluate({"a": 0, "b": 0.4, "c": None}) is None
    assert ok("if(a, b, c)").evaluate({"a": None, "b": 1, "c": 1}) is None
    assert ok("a and b").evaluate({"a": 0, "b": None}) == 0
    assert ok("a and b").evaluate({"a": 1, "b": None}) is None
    assert ok("a or b").evaluate({"a": None, "b": 1}) == 1
    assert ok("a or b").evaluate({"a": None, "b": 0}) is None
    assert ok("a * b").evaluate({"a": 0, "b": None}) == 0
    assert ok("a * b").evaluate({"a": 0.5, "b": None}) is None
    for text in ("min(a, b)", "max(a, b)", "a + b", "a - b", "a / b", "a < b", "abs(b)",
                 "not b"):
        assert ok(text).evaluate({"a": 0, "b": None}) is None, text


def test_division_by_zero_and_non_finite_results_are_unknown_with_a_reason() -> None:
    out = ok("a / (b - c)").run({"a": 1, "b": 0.5, "c": 0.5})
    assert out.value is None and "division by zero" in out.reason and "b - c" in out.reason
    out = ok("a * 1e308 * 10").run({"a": 1})
    assert out.value is None and "finite" in out.reason
    out = ok("clamp(a, 1, 0)").run({"a": 0.5})
    assert out.value is None and "clamp" in out.reason
    out = ok("a").run({"a": "high"})  # type: ignore[dict-item]
    assert out.value is None and "not a number" in out.reason


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("text, col, words", [
    ("a.b", 1, "attributes"),
    ("x + a[0]", 5, "subscripts"),
    ("lambda: 1", 1, "lambdas"),
    ("[a for a in b]", 1, "comprehensions"),
    ("'text'", 1, "string"),
    ("a ** 2", 1, "`**`"),
    ("a % 2", 1, "`%`"),
    ("a // 2", 1, "`//`"),
    ("~a", 1, "`~`"),
    ("a in b", 1, "compare"),
    ("a is b", 1, "compare"),
    ("x if y else z", 1, "if(cond, a, b)"),
    ("True", 1, "1 for true"),
    ("None", 1, "1 for true"),
    ("1j", 1, "cannot appear"),
    ("__import__('os')", 1, "unknown function"),
    ("eval(a)", 1, "unknown function"),
    ("a.__class__", 1, "attributes"),
    ("mni(a, b)", 1, "did you mean `min`"),
    ("min(a)", 1, "at least 2"),
    ("clamp(a, 0)", 1, "clamp(x, lo, hi)"),
    ("if(a, b)", 1, "if(cond, a, b)"),
    ("max(*a)", 1, "plain arguments"),
    ("max(a=1, b=2)", 1, "plain arguments"),
    ("min + 1", 1, "is a function"),
    ("_secret", 1, "cannot start with `_`"),
    ("(a := 1)", 2, "`:=`"),
    ("a, b", 1, "tuples"),
    ("{a: b}", 1, "dicts"),
    ("f'{a}'", 1, "strings"),
    ("9" * 400, 1, "too large"),
    ("", 1, "empty"),
    ("   ", 1, "empty"),
])
def test_refusals_name_the_column(text: str, col: int, words: str) -> None:
    p = bad(text)
    assert p.col == col, p
    assert words in str(p), p


def test_syntax_errors_point_into_the_authors_text_across_lines_and_if() -> None:
    assert (bad("a + (b").line, bad("a + (b").col) == (1, 5)
    assert bad("min(a,,b)").col == 7
    p = bad("a +\n  b.c")
    assert (p.line, p.col) == (2, 3)
    # `if(` is spelt differently inside; columns after it must not drift
    assert bad("if(x, y, z.q)").col == 10
    assert bad("if(x, if(y, 1, 2), q.q)").col == 20
    # columns count characters, not UTF-8 bytes
    assert bad("安全 * a.b").col == 6
    assert "syntax error" in bad("1 +").message


def test_known_names_are_checked_with_a_suggestion() -> None:
    p = bad("saftey * completion", known=["safety", "completion"])
    assert p.col == 1 and "`saftey`" in p.message and "did you mean `safety`" in p.hint
    p = bad("safety * zzz", known=["safety"])
    assert p.col == 10 and "known: safety" in p.hint
    assert ok("safety", known=["safety", "unused"]).names == {"safety"}


def test_size_and_depth_are_bounded() -> None:
    assert "longer than" in bad("a+" * MAX_CHARS + "a").message
    assert "nested too deeply" in bad("-" * 100 + "a").message
    assert "nested too deeply" in bad("(" * 300 + "a" + ")" * 300).message \
        or "syntax error" in bad("(" * 300 + "a" + ")" * 300).message
    assert "parts" in bad("+".join(["a"] * 450)).message or \
        "nested" in bad("+".join(["a"] * 450)).message


# --------------------------------------------------------------------------- fuzzing


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=120))
def test_no_text_crashes_parse(text: str) -> None:
    assert isinstance(parse(text), (Formula, Problem))


_atoms = st.sampled_from(["a", "b", "c", "0", "1", "0.5", "1e308", "-1"])
_ops = st.sampled_from([" + ", " - ", " * ", " / ", " < ", " == ", " and ", " or "])


@st.composite
def _formulas(draw: st.DrawFn, depth: int = 0) -> str:
    if depth > 4 or draw(st.booleans()):
        return draw(_atoms)
    kind = draw(st.integers(0, 4))
    x, y = draw(_formulas(depth + 1)), draw(_formulas(depth + 1))
    if kind == 0:
        return f"({x}{draw(_ops)}{y})"
    if kind == 1:
        return f"{draw(st.sampled_from(['min', 'max']))}({x}, {y})"
    if kind == 2:
        return f"if({x}, {y}, {draw(_formulas(depth + 1))})"
    if kind == 3:
        return f"clamp({x}, 0, 1)"
    return f"(not {x})"


_value = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True),
                   st.integers(-10, 10), st.booleans())


@settings(max_examples=400, deadline=None)
@given(_formulas(), st.fixed_dictionaries({"a": _value, "b": _value, "c": _value}))
def test_generated_formulas_evaluate_to_a_finite_number_or_none(
        text: str, values: dict[str, object]) -> None:
    f = ok(text)
    out = f.run(values)  # type: ignore[arg-type]
    assert out.value is None or math.isfinite(out.value)
    assert (out.value is None) == bool(out.reason)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", ".", "(", ")", "[", "]", "_", "'", "lambda", ":", "if",
                                 ",", "__class__", "import", "*", "**", " ", "0", "min"]),
                max_size=25))
def test_token_soup_never_escapes(tokens: list[str]) -> None:
    f = parse("".join(tokens))
    if isinstance(f, Formula):
        assert all(not n.startswith("_") for n in f.names)
        out = f.run({n: 1 for n in f.names})
        assert out.value is None or math.isfinite(out.value)


def test_python_syntax_warnings_do_not_leak(recwarn: pytest.WarningsRecorder) -> None:
    parse("0if(a, b, c)")
    parse("1and a")
    assert not [w for w in recwarn if issubclass(w.category, SyntaxWarning)]
