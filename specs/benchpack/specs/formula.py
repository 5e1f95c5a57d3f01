"""The score-formula language: arithmetic over named score components.

A formula combines named components (each a number, usually in 0–1) into one score, e.g. Claw's
`safety * max(0.8 * completion + 0.2 * robustness, completion)`. It is parsed with Python's `ast`
in eval mode and evaluated by walking an allow-listed set of nodes — never `eval`, so a pack
cannot reach attributes, subscripts, strings, lambdas or any Python object.

The language:

- numbers (`0.8`, `10`), component names (any Python identifier, Chinese included);
- `+ - * /`, unary `-` and `+`, parentheses;
- comparisons `< <= > >= == !=` (chains allowed: `0 < x <= 1`), `and`, `or`, `not`;
  a truth value is the number 1 or 0, and any non-zero number is true;
- `min(a, b, …)`, `max(a, b, …)`, `abs(x)`, `clamp(x, lo, hi)`, `if(cond, then, else)`.

Unknown values: a component that could not be scored (None, NaN) makes every number computed
from it unknown, and the formula's value None — never 0, which would be a made-up score. Only
where the result is decided without the unknown does it stay known: `if` evaluates the branch
its condition picks, `0 and x` is 0, `1 or x` is 1 and `0 * x` is 0 whatever `x` is (a score is
a finite number), so a failed safety gate still zeroes a product. Division by zero and a
result that is not a finite number are unknown too, with the reason in `Outcome.reason`.

`parse` returns a `Formula` or a `Problem` with the 1-based line and column of the mistake in
the formula text (the compiler adds the YAML position); `parse(text, known=names)` also refuses
names that are not among the known components, suggesting the nearest.
"""

from __future__ import annotations

import ast
import difflib
import math
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import cast

MAX_CHARS = 2000
"""Longest formula text: a score formula is a line or two, not a program."""
MAX_NODES = 400
MAX_DEPTH = 40
"""Deepest nesting of operations; keeps every walk of the tree far from Python's recursion
limit."""
FUNCTIONS: dict[str, tuple[int, int | None]] = {
    "min": (2, None), "max": (2, None), "abs": (1, 1), "clamp": (3, 3), "if": (3, 3),
}
"""Allowed functions and their (fewest, most) arguments."""

# `if` is a Python keyword, so `if(c, a, b)` cannot be parsed as a call; it is spelt with a
# name no author can write (a leading `_` is refused below) before parsing.
_IF = "_if"
_IF_CALL = re.compile(r"(?<![\w.])if(?=\s*\()")
_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


@dataclass(frozen=True)
class Problem:
    """Why a formula text is refused, and where (1-based, in characters of the formula)."""

    col: int
    message: str
    hint: str = ""
    line: int = 1

    def __str__(self) -> str:
        return f"{self.line}:{self.col}: {self.message}" + (f" ({self.hint})" if self.hint else "")


@dataclass(frozen=True)
class Outcome:
    """A formula's value, and when it is unknown (None), why."""

    value: float | None
    reason: str = ""


class _Unknown(Exception):
    """A value the formula cannot know; carries the reason out of the walk."""


@dataclass(frozen=True)
class Formula:
    text: str
    names: frozenset[str]
    """Component names the formula reads (not the function names)."""
    _tree: ast.expr

    def evaluate(self, values: Mapping[str, float | int | bool | None]) -> float | None:
        """The formula's value for these component values, or None when it is unknown."""
        return self.run(values).value

    def run(self, values: Mapping[str, float | int | bool | None]) -> Outcome:
        """The value with the reason it is unknown, if it is."""
        try:
            v = _eval(self._tree, values)
        except _Unknown as exc:
            return Outcome(None, str(exc))
        if not math.isfinite(v):
            return Outcome(None, f"the result {v} is not a finite number")
        return Outcome(v)


def parse(text: str, known: Iterable[str] | None = None) -> Formula | Problem:
    """`text` as a formula, or the first problem with it. With `known`, every name must be one
    of them."""
    if not isinstance(text, str) or not text.strip():
        return Problem(1, "the formula is empty", "write e.g. `0.5 * a + 0.5 * b`")
    if len(text) > MAX_CHARS:
        return Problem(MAX_CHARS + 1, f"the formula is longer than {MAX_CHARS} characters",
                       "a score formula combines a few components; split the logic")
    src, shifts = _spell_if(text)
    try:
        # one line (a newline becomes a space, keeping offsets) lets a formula span lines as
        # YAML block scalars do, without parentheses that would blame a wrong bracket
        with warnings.catch_warnings():
            # `0if` and the like warn on stderr; the author gets a Problem or nothing
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(src.replace("\r", " ").replace("\n", " "), mode="eval")
    except SyntaxError as exc:
        msg = (exc.msg or "invalid syntax").replace("'_if'", "'if'")
        line, col = _position(text, shifts, (exc.offset or 1) - 1)
        return Problem(col, f"syntax error: {msg}", _syntax_hint(text), line)
    except (RecursionError, MemoryError, ValueError):
        return Problem(1, "the formula is nested too deeply", f"at most {MAX_DEPTH} levels")
    body = tree.body
    found = _check(body, src, shifts)
    if isinstance(found, Problem):
        return found
    names = frozenset(found)
    if known is not None:
        known = set(known)
        for node in ast.walk(body):
            if isinstance(node, ast.Name) and node.id != _IF and node.id not in known:
                near = difflib.get_close_matches(node.id, sorted(known), n=1, cutoff=0.6)
                hint = (f"did you mean `{near[0]}`?" if near else
                        "known: " + (", ".join(sorted(known)) or "none"))
                return _at(node, src, shifts, f"unknown component `{node.id}`", hint)
    return Formula(text, names, body)


# --------------------------------------------------------------------------- positions


def _spell_if(text: str) -> tuple[str, list[int]]:
    """`text` with `if(` spelt `_if(`, and the offsets in the new text where a `_` was
    inserted."""
    parts: list[str] = []
    shifts: list[int] = []
    last = 0
    for m in _IF_CALL.finditer(text):
        parts.append(text[last:m.start()])
        shifts.append(m.start() + len(shifts))
        parts.append(_IF)
        last = m.end()
    parts.append(text[last:])
    return "".join(parts), shifts


def _position(text: str, shifts: list[int], offset: int) -> tuple[int, int]:
    """1-based (line, column) in the author's `text` of a 0-based character offset in the
    spelt source."""
    offset -= sum(1 for at in shifts if at < offset)
    offset = min(max(offset, 0), len(text))
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _at(node: ast.AST, src: str, shifts: list[int], message: str, hint: str = "") -> Problem:
    # `ast` counts columns in UTF-8 bytes; the author counts characters
    chars = len(src.encode()[:getattr(node, "col_offset", 0)].decode(errors="ignore"))
    line, col = _position(_unspell(src, shifts), shifts, chars)
    return Problem(col, message, hint, line)


def _unspell(src: str, shifts: list[int]) -> str:
    for at in reversed(shifts):
        src = src[:at] + src[at + 1:]
    return src


def _syntax_hint(text: str) -> str:
    if re.search(r"\bif\b.*\belse\b", text):
        return "write `if(cond, a, b)`, not `a if cond else b`"
    if "**" in text or "^" in text:
        return "there is no power operator; multiply"
    if re.search(r"['\"]", text):
        return "strings have no place in a score formula"
    return "numbers, component names, + - * /, comparisons, and/or/not, " \
           "min/max/abs/clamp/if(…)"


# --------------------------------------------------------------------------- checking


def _check(body: ast.expr, src: str, shifts: list[int]) -> set[str] | Problem:
    """The component names of an allowed tree, or the first node outside the language."""
    names: set[str] = set()
    count = 0
    stack: list[tuple[ast.AST, int]] = [(body, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            return Problem(1, f"the formula has more than {MAX_NODES} parts",
                           "a score formula combines a few components")
        if depth > MAX_DEPTH:
            return _at(node, src, shifts, "the formula is nested too deeply",
                       f"at most {MAX_DEPTH} levels")
        bad = _refuse(node, src, shifts)
        if bad is not None:
            return bad
        if isinstance(node, ast.Name):
            names.add(node.id)
            continue
        if isinstance(node, ast.Call):
            children: list[ast.AST] = list(node.args)
        elif isinstance(node, ast.BinOp):
            children = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp):
            children = [node.operand]
        elif isinstance(node, ast.BoolOp):
            children = list(node.values)
        elif isinstance(node, ast.Compare):
            children = [node.left, *node.comparators]
        else:
            children = []
        stack.extend((c, depth + 1) for c in reversed(children))
    return names


def _refuse(node: ast.AST, src: str, shifts: list[int]) -> Problem | None:
    """A problem when `node` is outside the language."""
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            what = "a string" if isinstance(v, (str, bytes)) else f"`{v!r}`"
            hint = ("write 1 for true and 0 for false" if isinstance(v, bool) or v is None
                    else "only numbers and component names")
            return _at(node, src, shifts, f"{what} cannot appear in a score formula", hint)
        try:
            if not math.isfinite(float(v)):
                raise OverflowError
        except OverflowError:
            return _at(node, src, shifts, "this number is too large", "")
        return None
    if isinstance(node, ast.Name):
        if node.id == _IF:
            return _at(node, src, shifts, "`if` is a function: write `if(cond, a, b)`")
        if node.id.startswith("_"):
            return _at(node, src, shifts, f"`{node.id}`: a component name cannot start with `_`")
        if node.id in FUNCTIONS:
            return _at(node, src, shifts, f"`{node.id}` is a function, not a component",
                       f"call it: `{node.id}(…)`")
        return None
    if isinstance(node, ast.BinOp):
        if type(node.op) in _BIN:
            return None
        op = {ast.Pow: "**", ast.Mod: "%", ast.FloorDiv: "//", ast.BitXor: "^",
              ast.BitAnd: "&", ast.BitOr: "|", ast.MatMult: "@", ast.LShift: "<<",
              ast.RShift: ">>"}.get(type(node.op), type(node.op).__name__)
        return _at(node, src, shifts, f"the operator `{op}` is not allowed",
                   "use + - * / and min/max/abs/clamp")
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
            return None
        return _at(node, src, shifts, "the operator `~` is not allowed", "use `not`")
    if isinstance(node, ast.BoolOp):
        return None
    if isinstance(node, ast.Compare):
        for cmp in node.ops:
            if type(cmp) not in _CMP:
                return _at(node, src, shifts, "only < <= > >= == != compare numbers",
                           "`in` and `is` have nothing to compare in a formula")
        return None
    if isinstance(node, ast.Call):
        func = node.func
        if not isinstance(func, ast.Name):
            return _at(node, src, shifts, "only min, max, abs, clamp and if can be called")
        name = "if" if func.id == _IF else func.id
        if name not in FUNCTIONS:
            near = difflib.get_close_matches(name, list(FUNCTIONS), n=1)
            return _at(node, src, shifts, f"unknown function `{name}`",
                       f"did you mean `{near[0]}`?" if near else
                       "functions: min, max, abs, clamp, if")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            return _at(node, src, shifts, f"`{name}` takes plain arguments",
                       "no `name=` or `*` arguments")
        lo, hi = FUNCTIONS[name]
        n = len(node.args)
        if n < lo or (hi is not None and n > hi):
            want = f"{lo}" if lo == hi else f"at least {lo}"
            usage = {"clamp": "clamp(x, lo, hi)", "if": "if(cond, a, b)", "abs": "abs(x)"}
            return _at(node, src, shifts, f"`{name}` takes {want} arguments, not {n}",
                       usage.get(name, f"{name}(a, b, …)"))
        return None
    what = {ast.Attribute: "attributes (`a.b`)", ast.Subscript: "subscripts (`a[b]`)",
            ast.Lambda: "lambdas", ast.IfExp: "`a if cond else b`",
            ast.ListComp: "comprehensions", ast.GeneratorExp: "comprehensions",
            ast.SetComp: "comprehensions", ast.DictComp: "comprehensions",
            ast.JoinedStr: "strings", ast.List: "lists", ast.Tuple: "tuples",
            ast.Dict: "dicts", ast.Set: "sets", ast.NamedExpr: "`:=`", ast.Await: "`await`",
            ast.Starred: "`*`", ast.Slice: "slices"}.get(type(node), type(node).__name__)
    hint = "write `if(cond, a, b)`" if isinstance(node, ast.IfExp) else \
        "numbers, component names, + - * /, comparisons, and/or/not, min/max/abs/clamp/if(…)"
    return _at(node, src, shifts, f"{what} cannot appear in a score formula", hint)


# --------------------------------------------------------------------------- evaluation


def _num(v: object, name: str) -> float:
    if v is None:
        raise _Unknown(f"`{name}` has no score")
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise _Unknown(f"`{name}` is not a number: {v!r}") from None
    if math.isnan(f):
        raise _Unknown(f"`{name}` has no score (NaN)")
    return f


def _truth(x: float) -> bool:
    return x != 0


def _eval(node: ast.expr, values: Mapping[str, object]) -> float:
    if isinstance(node, ast.Constant):
        return float(cast(float, node.value))
    if isinstance(node, ast.Name):
        if node.id not in values:
            raise _Unknown(f"no value for `{node.id}`")
        return _num(values[node.id], node.id)
    if isinstance(node, ast.BinOp):
        op = type(node.op)
        if op is ast.Mult:
            # scores are finite, so a known 0 factor decides the product: a failed safety
            # gate zeroes `safety * completion` even when completion could not be scored
            factors: list[float] = []
            missing: list[_Unknown] = []
            for sub in (node.left, node.right):
                try:
                    factors.append(_eval(sub, values))
                except _Unknown as exc:
                    missing.append(exc)
            if missing:
                if 0.0 in factors:
                    return 0.0
                raise missing[0]
        a, b = _eval(node.left, values), _eval(node.right, values)
        if op is ast.Add:
            return a + b
        if op is ast.Sub:
            return a - b
        if op is ast.Mult:
            return a * b
        if b == 0:
            raise _Unknown(f"division by zero in `{ast.unparse(node).replace('_if(', 'if(')}`")
        return a / b
    if isinstance(node, ast.UnaryOp):
        x = _eval(node.operand, values)
        if isinstance(node.op, ast.Not):
            return 0.0 if _truth(x) else 1.0
        return -x if isinstance(node.op, ast.USub) else x
    if isinstance(node, ast.BoolOp):
        # Kleene logic: an unknown operand matters only when the known ones do not decide
        is_and = isinstance(node.op, ast.And)
        unknown: _Unknown | None = None
        for sub in node.values:
            try:
                t = _truth(_eval(sub, values))
            except _Unknown as exc:
                unknown = unknown or exc
                continue
            if t != is_and:
                return 0.0 if is_and else 1.0
        if unknown is not None:
            raise unknown
        return 1.0 if is_and else 0.0
    if isinstance(node, ast.Compare):
        left = _eval(node.left, values)
        ok = True
        for cmp, right_node in zip(node.ops, node.comparators, strict=True):
            right = _eval(right_node, values)
            ok = ok and _compare(type(cmp), left, right)
            left = right
        return 1.0 if ok else 0.0
    if isinstance(node, ast.Call):
        name = cast(ast.Name, node.func).id  # parse() let only named calls in
        if name == _IF:
            cond = _truth(_eval(node.args[0], values))
            return _eval(node.args[1] if cond else node.args[2], values)
        args = [_eval(a, values) for a in node.args]
        if name == "min":
            return min(args)
        if name == "max":
            return max(args)
        if name == "abs":
            return abs(args[0])
        x, lo, hi = args
        if lo > hi:
            raise _Unknown(f"clamp with lo {lo:g} above hi {hi:g}")
        return min(max(x, lo), hi)
    raise _Unknown(f"cannot evaluate {type(node).__name__}")  # parse() let nothing else in


def _compare(op: type, a: float, b: float) -> bool:
    if op is ast.Lt:
        return a < b
    if op is ast.LtE:
        return a <= b
    if op is ast.Gt:
        return a > b
    if op is ast.GtE:
        return a >= b
    if op is ast.Eq:
        return a == b
    return a != b


__all__ = ["FUNCTIONS", "Formula", "Outcome", "Problem", "parse"]
