"""Sandboxed Jinja rendering of pack text fields.

The compiler never executes pack content: templates run in an immutable sandbox with
StrictUndefined, so a typo in a variable name is an error, not an empty string, and templates
cannot reach Python internals or mutate the objects they are given.

Jinja's sandbox does not bound resources, so this module adds budgets: every `for` loop draws
from a per-field iteration budget (the template's syntax tree is rewritten so that loops
iterate through a counter), output is streamed and cut off at a size limit, and the operations
that amplify text (`*`, `%`, `~`, `+`, `str.format`, padding, `replace`, `join` and the filters
that pad or join) are refused when their result would exceed that limit, before it is built.
Lists cost memory by their text, not their length (`[s] * n`, literals of literals): printed
values and the filters that serialise or copy structures are measured first (`_text_size`).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import Any

from jinja2 import (
    StrictUndefined,
    TemplateSyntaxError,
    UndefinedError,
    nodes,
    pass_environment,
    pass_eval_context,
)
from jinja2.exceptions import SecurityError, TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

from .diagnostics import suggest
from .literal import HINT as LITERAL_HINT
from .loader import type_name

MAX_OUTPUT_CHARS = 1_000_000
"""Longest text a template may produce, and longest intermediate string or list."""
MAX_LOOP_STEPS = 100_000
"""Loop iterations one text field may run, over all its loops."""
MAX_RANGE = 10_000
_LOOP = "_benchpack_loop"
_CONCAT = "_benchpack_concat"
_PADDING = frozenset({"ljust", "rjust", "center", "zfill"})
# %-formatting and format-spec width/precision, e.g. `%-*.3f`, `{:>99999}`
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")
_FORMAT_SPEC = re.compile(r"^(?:.?[<>=^])?[+\- ]?z?#?0?(\d*)[,_]?(?:\.(\d+))?")


def _too_large(what: str) -> SecurityError:
    return SecurityError(f"{what} would exceed {MAX_OUTPUT_CHARS:,} characters")


def _check_size(size: int, what: str) -> None:
    if size > MAX_OUTPUT_CHARS:
        raise _too_large(what)


def _text_size(value: Any, limit: int = MAX_OUTPUT_CHARS) -> int:
    """About how long `str(value)` would be, found without building it, stopping once past
    `limit`. Lists hold references, so `[s] * n` and literals of literals cost little memory
    while their text grows with every level: printing, `~`, `%`, `format`, `tojson`,
    `pprint`, `string` and `join` are measured with this before they build anything."""
    total = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            total += len(v) + 4  # quotes and a separator inside a container
        elif isinstance(v, list | tuple | set | frozenset):
            total += 2 + len(v)
            if total > limit:
                return total
            stack.extend(v)
        elif isinstance(v, dict):
            total += 2 + 2 * len(v)
            if total > limit:
                return total
            for k, x in v.items():
                stack.append(k)
                stack.append(x)
        else:
            total += 24  # numbers, None, objects: their repr is short
        if total > limit:
            return total
    return total


def _check_text(value: Any, what: str) -> None:
    _check_size(_text_size(value), what)


def _ints(values: Iterable[Any]) -> list[int]:
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]


def _check_percent(fmt: str, args: Any) -> None:
    """`fmt % args`: refuse widths and precisions beyond the size limit."""
    star = False
    for m in _PERCENT_SPEC.finditer(fmt):
        for group in m.groups():
            if group == "*":
                star = True
            elif group and int(group) > MAX_OUTPUT_CHARS:
                raise _too_large("a %-format width")
    if star:
        values = args if isinstance(args, tuple) else (args,)
        if any(abs(v) > MAX_OUTPUT_CHARS for v in _ints(values)):
            raise _too_large("a %-format width")


def _check_format(fmt: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """`fmt.format(...)`: refuse widths and precisions beyond the size limit, including
    nested ones such as `{:>{width}}`."""
    try:
        fields = list(string.Formatter().parse(fmt))
    except ValueError:
        return  # the real call reports the malformed format string
    for _, _, spec, _ in fields:
        if not spec:
            continue
        if "{" in spec:
            if any(abs(v) > MAX_OUTPUT_CHARS for v in _ints([*args, *kwargs.values()])):
                raise _too_large("a format width")
            continue
        m = _FORMAT_SPEC.match(spec)
        if m and any(g and int(g) > MAX_OUTPUT_CHARS for g in m.groups()):
            raise _too_large("a format width")


def _check_replace(text: str, old: str, new: str, count: int = -1) -> None:
    hits = (text.count(old) if old else len(text) + 1)
    if count is not None and count >= 0:
        hits = min(hits, count)
    _check_size(len(text) + hits * (len(new) - len(old)), "replace()")


def _check_join(sep: str, items: list[Any]) -> None:
    total = len(sep) * max(0, len(items) - 1)
    for x in items:
        total += len(x) if isinstance(x, str) else _text_size(x)
        _check_size(total, "join()")


class _Env(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "%", "+"})

    def call(self, context: Any, obj: Any, *args: Any, **kwargs: Any) -> Any:
        owner = getattr(obj, "__self__", None)
        name = getattr(obj, "__name__", "")
        if isinstance(owner, str):
            if name in _PADDING and args and isinstance(args[0], int):
                _check_size(args[0], f"{name}()")
            elif name == "expandtabs":
                size = args[0] if args and isinstance(args[0], int) else 8
                _check_size(len(owner) + owner.count("\t") * size, "expandtabs()")
            elif name == "replace" and len(args) >= 2 and all(isinstance(a, str) for a in args[:2]):
                _check_replace(owner, args[0], args[1], *(a for a in args[2:3] if isinstance(a, int)))
            elif name == "join" and args:
                items = list(args[0])
                _check_join(owner, items)
                args = (items, *args[1:])
        return super().call(context, obj, *args, **kwargs)

    def finalize_value(self, value: Any) -> Any:
        """Every printed `{{ value }}`: a structure's text is measured before it is built."""
        if isinstance(value, list | tuple | dict | set | frozenset):
            _check_text(value, "a printed value")
        return value

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, str) and isinstance(n, int):
                    _check_size(len(seq) * n, "repetition")
                elif isinstance(seq, list | tuple) and isinstance(n, int):
                    # the text of the repeated list, not its length: `[s] * n` is n copies of s
                    _check_size(_text_size(seq) * max(n, 0), "repetition")
        elif operator == "+" and isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
            _check_size(len(left) + len(right), "concatenation")
        elif operator == "**" and isinstance(left, int) and isinstance(right, int) and (
                right > 100 or left.bit_length() * max(right, 0) > 100_000):
            raise SecurityError("power too large in a pack template")
        elif operator == "%" and isinstance(left, str):
            _check_percent(left, right)
            _check_size(len(left) + _text_size(right), "a %-format")
        return super().call_binop(context, operator, left, right)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        fmt = super().wrap_str_format(value)
        if fmt is None:
            return None
        template: str = value.__self__
        is_map = value.__name__ == "format_map"

        def checked(*args: Any, **kwargs: Any) -> str:
            if is_map and args and isinstance(args[0], dict):
                _check_format(template, (), args[0])
            else:
                _check_format(template, args, kwargs)
            _check_size(len(template) + _text_size([args, kwargs]), "format()")
            return fmt(*args, **kwargs)

        return checked


def _range(*args: int) -> range:
    rng = range(*args)
    if len(rng) > MAX_RANGE:
        raise SecurityError(f"range() of more than {MAX_RANGE:,} numbers in a pack template")
    return rng


def _concat(*parts: Any) -> str:
    """`a ~ b`: checked string concatenation."""
    _check_text(list(parts), "concatenation")
    out = [str(p) for p in parts]
    _check_size(sum(map(len, out)), "concatenation")
    return "".join(out)


class _LoopBudget:
    """Iterations left for one rendered field, shared by all its loops."""

    def __init__(self) -> None:
        self.left = MAX_LOOP_STEPS

    def __call__(self, iterable: Iterable[Any]) -> Iterator[Any]:
        for item in iterable:
            self.left -= 1
            if self.left < 0:
                raise SecurityError(f"loops ran more than {MAX_LOOP_STEPS:,} iterations")
            yield item


def _checked_filters(env: _Env) -> None:
    f = env.filters
    base = {k: f[k] for k in ("center", "indent", "format", "replace", "join", "wordwrap",
                              "tojson", "pprint", "string", "batch", "slice", "sum", "list")}

    def measured(name: str, what: Callable[[Any], int]) -> Callable[..., Any]:
        """`name` with its input measured first: it builds text or copies as big as that."""
        inner = base[name]
        wrapped: Callable[..., Any]
        if getattr(inner, "jinja_pass_arg", None) is not None:
            def wrapped(first: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
                _check_size(what(value), f"the {name} filter")
                return inner(first, value, *args, **kwargs)
            wrapped.jinja_pass_arg = inner.jinja_pass_arg  # type: ignore[attr-defined]
        else:
            def wrapped(value: Any, *args: Any, **kwargs: Any) -> Any:
                _check_size(what(value), f"the {name} filter")
                return inner(value, *args, **kwargs)
        return wrapped

    def count(value: Any) -> int:
        # copies of a sequence: each item costs a list slot or a small list of its own
        return 20 * len(value) if hasattr(value, "__len__") else 0

    f.update({name: measured(name, _text_size) for name in ("tojson", "pprint", "string")})
    f.update({name: measured(name, count) for name in ("batch", "slice", "list")})
    f["sum"] = measured("sum", _text_size)  # sum(start=[]) concatenates lists

    def center(value: Any, width: int = 80) -> str:
        _check_size(width if isinstance(width, int) else 0, "center")
        return str(base["center"](value, width))

    def indent(value: Any, width: int | str = 4, *args: Any, **kwargs: Any) -> str:
        pad = width if isinstance(width, int) else len(str(width))
        _check_size(len(str(value)) + (str(value).count("\n") + 1) * pad, "indent")
        return str(base["indent"](value, width, *args, **kwargs))

    def format_(value: Any, *args: Any, **kwargs: Any) -> str:
        _check_percent(str(value), kwargs or args)
        return str(base["format"](value, *args, **kwargs))

    @pass_eval_context
    def replace(ctx: Any, s: Any, old: Any, new: Any, count: int | None = None) -> str:
        _check_replace(str(s), str(old), str(new), -1 if count is None else count)
        return str(base["replace"](ctx, s, old, new, count))

    @pass_eval_context
    def join(ctx: Any, value: Iterable[Any], d: str = "", attribute: Any = None) -> str:
        items = list(value)
        _check_join(str(d), items)
        return str(base["join"](ctx, items, d, attribute))

    @pass_environment
    def wordwrap(env_: Any, s: Any, width: int = 79, break_long_words: bool = True,
                 wrapstring: str | None = None, break_on_hyphens: bool = True) -> str:
        text = str(s)
        breaks = len(text) // max(width if isinstance(width, int) else 1, 1) + 1
        _check_size(len(text) + breaks * len(str(wrapstring or "\n")), "wordwrap")
        return str(base["wordwrap"](env_, s, width, break_long_words, wrapstring,
                                    break_on_hyphens))

    f.update({"center": center, "indent": indent, "format": format_, "replace": replace,
              "join": join, "wordwrap": wordwrap})


ENV: _Env = _Env(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True,
           finalize=lambda value: ENV.finalize_value(value))
ENV.globals.pop("lipsum", None)  # a text generator: no use in packs, easy to make huge
ENV.globals["range"] = _range
_checked_filters(ENV)


class RenderError(Exception):
    def __init__(self, code: str, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint


_UNKNOWN_NAME = re.compile(r"No (filter|test) named '([^']+)'")


def needs_render(text: str) -> bool:
    return "{{" in text or "{%" in text or "{#" in text


class _Budgeted(NodeTransformer):
    """Route every loop through the iteration budget and every `~` through `_concat`, and
    tell whether the output must be streamed (loops, or many printed values: a 10 MB value
    printed a thousand times must stop at the size limit, not be built first)."""

    def __init__(self) -> None:
        self.stream = False
        self.printed = 0

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = _call(_LOOP, [node.iter], node.lineno)
        self.stream = True
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        self.stream = True
        return _call(_CONCAT, list(node.nodes), node.lineno)

    def visit_Output(self, node: nodes.Output) -> nodes.Node:
        self.generic_visit(node)
        self.printed += sum(1 for n in node.nodes if not isinstance(n, nodes.TemplateData))
        self.stream = self.stream or self.printed > 4
        return node


def _call(name: str, args: list[Any], lineno: int) -> nodes.Call:
    return nodes.Call(nodes.Name(name, "load", lineno=lineno), args, [], None, None,
                      lineno=lineno)


@lru_cache(maxsize=4096)
def _compile(source: str) -> tuple[Any, bool]:
    """The template, and whether its output must be streamed under the budgets."""
    budgeted = _Budgeted()
    tree = budgeted.visit(ENV.parse(source))
    tree.set_environment(ENV)
    code = ENV.compile(tree)
    return ENV.template_class.from_code(ENV, code, ENV.make_globals(None)), budgeted.stream


def _explain_undefined(source: str, context: dict[str, Any], error: str) -> tuple[str, str]:
    """`{{ vars.tema }}` → ("`vars.tema` is undefined", "did you mean `vars.team`?")."""
    names = sorted(k for k in context if k not in (_LOOP, _CONCAT))
    m = re.match(r"'(.+)' is undefined$", error)
    if m:
        found = suggest(m.group(1), names)
        return (f"`{m.group(1)}` is undefined",
                f"did you mean `{found}`?" if found else
                "available names: " + ", ".join(f"`{n}`" for n in names) + "; " + LITERAL_HINT)
    m = re.search(r"has no attribute '(.+)'$", error)
    if m:
        attr = m.group(1)
        for node in ENV.parse(source).find_all(nodes.Getattr):
            owner = _dotted(node.node)
            if node.attr != attr or owner is None:
                continue
            value: Any = context
            for part in owner.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if not isinstance(value, dict):
                return (f"`{owner}.{attr}` is undefined",
                        f"`{owner}` is {type_name(value)}, not a mapping")
            keys = sorted(str(k) for k in value)
            found = suggest(attr, keys)
            hint = (f"did you mean `{owner}.{found}`?" if found else
                    f"`{owner}` has " + ", ".join(f"`{k}`" for k in keys) if keys else
                    f"`{owner}` is empty")
            return f"`{owner}.{attr}` is undefined", hint
    return (f"template uses an undefined value: {error}",
            "available names: " + ", ".join(f"`{n}`" for n in names) + "; " + LITERAL_HINT)


def _dotted(node: nodes.Node) -> str | None:
    """`vars.team` for the expression node of `vars.team`, None for anything else."""
    if isinstance(node, nodes.Name):
        return str(node.name)
    if isinstance(node, nodes.Getattr):
        inner = _dotted(node.node)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def check_syntax(source: str) -> RenderError | None:
    """Parse a template without running it (prompt overrides are rendered at run time)."""
    try:
        ENV.parse(source)
    except TemplateSyntaxError as exc:
        return RenderError("E208", f"template syntax error on template line {exc.lineno}: {exc.message}")
    return None


def render(source: str, context: dict[str, Any]) -> str:
    """Render one text field. Raises RenderError with a diagnostic code."""
    if not needs_render(source):
        return source
    try:
        template, stream = _compile(source)
        if stream:  # so that runaway output stops at the size limit
            chunks: list[str] = []
            size = 0
            for chunk in template.generate({**context, _LOOP: _LoopBudget(),
                                            _CONCAT: _concat}):
                size += len(chunk)
                if size > MAX_OUTPUT_CHARS:
                    raise _too_large("template output")
                chunks.append(chunk)
            out = "".join(chunks)
        else:  # a few printed values, no loops: the output is small enough to build
            out = template.render(context)
            if len(out) > MAX_OUTPUT_CHARS:
                raise _too_large("template output")
    except TemplateSyntaxError as exc:
        unknown = _UNKNOWN_NAME.match(exc.message or "")
        if unknown:  # the braces are fine: the name after `|` (or `is`) is not Jinja's
            kind, name = unknown.group(1).lower(), unknown.group(2)
            known = sorted(ENV.filters if kind == "filter" else ENV.tests)
            found = suggest(name, known)
            raise RenderError("E208", f"no {kind} named `{name}`",
                              f"did you mean `{found}`?" if found else
                              f"Jinja's built-in {kind}s: " + ", ".join(f"`{k}`" for k in known)
                              ) from None
        raise RenderError("E208", f"template syntax error: {exc.message}",
                          "close every `{{` with `}}` and every `{%` with `%}`; " + LITERAL_HINT
                          ) from None
    except UndefinedError as exc:
        message, hint = _explain_undefined(source, context, exc.message or "")
        raise RenderError("E209", message, hint) from None
    except SecurityError as exc:
        unsafe = "unsafe" in str(exc)  # the sandbox refused Python internals, not a budget
        raise RenderError("E210", f"template not allowed: {exc}",
                          "pack templates see only their variables, filters and tests, never "
                          "Python internals; " + LITERAL_HINT if unsafe else
                          "pack templates are budgeted (about 1 MB of text, "
                          f"{MAX_LOOP_STEPS:,} loop steps); write big content into a file "
                          "of the pack instead of generating it") from None
    except TemplateError as exc:
        raise RenderError("E208", f"template error: {exc}") from None
    except Exception as exc:  # arithmetic errors and the like inside expressions
        raise RenderError("E208", f"template failed: {type(exc).__name__}: {exc}") from None
    return out
