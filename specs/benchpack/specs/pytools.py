"""The tools a Python tool module offers, read without running it.

A pack's toolset module (`toolsets: [{module: tools/shop.py, service: shop}]`) is code written by
strangers: the compiler must never import it. `read_tools` parses it with `ast` and returns, for
every public top-level function (`def` or `async def` whose name does not start with `_`), the
tool an agent sees — name, description, JSON Schema of its parameters — or located problems.

Parameters map from their type hints (plain names, `typing.X` and string annotations alike):

| hint | JSON Schema |
| --- | --- |
| `str` `int` `float` `bool` | `string` `integer` `number` `boolean` |
| `list[T]` / `List[T]` (`list`: any items) | `array` of T |
| `dict[str, T]` / `Dict[str, T]` (`dict`: any values) | `object` with values T |
| `Literal["a", 1]` | `enum` (with `type` when the values share one) |
| `T \\| None`, `Optional[T]`, `Union[A, B]` | `anyOf` (`null` for None) |

A parameter with a default is not required (its default goes into the schema when it is a
literal). The parameter annotated `State` (from `benchpack_tools`) receives the service state
at run time and is not shown to the agent. The description is the docstring's text before its
first section; a Google-style `Args:` section gives each parameter its description.

Anything else — no annotation, `*args`/`**kwargs`, positional-only parameters, an unsupported
type, a missing docstring, a syntax error — is a `ToolProblem` with a 1-based line and column
in the module, a message naming the function and parameter, and a hint. Pure: no execution,
no file access (the caller passes the source).

A function the caller gives a definition for (`given`: the toolset's `specs:` file, e.g. an
imported benchmark's own tool descriptions) is offered with exactly that description and
parameters schema; its docstring and type hints are then not read, so neither may be missing
(only the `State` annotation still matters).
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass, field
from typing import Any

TOOL_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"
"""Same as `pack.TOOL_NAME_PATTERN` (a test keeps them equal): what model APIs accept."""
STATE_TYPE = "State"

_SCALARS = {"str": {"type": "string"}, "int": {"type": "integer"},
            "float": {"type": "number"}, "bool": {"type": "boolean"}}
_SUPPORTED = "str, int, float, bool, list[T], dict[str, T], Literal[...], T | None"
_SECTIONS = {"args", "arguments", "parameters", "params", "returns", "return", "raises",
             "yields", "example", "examples", "note", "notes", "see also", "warning",
             "warnings", "todo", "attributes", "references"}
_ARG_LINE = re.compile(r"^\s*\*{0,2}(?P<name>\w+)\s*(?:\((?P<type>[^)]*)\))?\s*:\s*(?P<desc>.*)$")


@dataclass(frozen=True)
class ToolProblem:
    """Something in the module that cannot become a tool (1-based line and column)."""

    line: int
    col: int
    message: str
    hint: str = ""
    severity: str = "error"
    """`error` (the toolset cannot be used) or `warning`."""


@dataclass(frozen=True)
class PyToolSpec:
    """One public function as a tool."""

    name: str
    """The function's name (the toolset's prefix is the caller's business)."""
    description: str
    parameters: dict[str, Any]
    """JSON Schema (an object) of what the agent passes."""
    state_param: str | None
    """The parameter that receives the `State`, if any."""
    is_async: bool
    line: int
    col: int


@dataclass
class ModuleTools:
    tools: list[PyToolSpec] = field(default_factory=list)
    problems: list[ToolProblem] = field(default_factory=list)

    @property
    def errors(self) -> list[ToolProblem]:
        return [p for p in self.problems if p.severity == "error"]


class _Unsupported(Exception):
    def __init__(self, node: ast.AST, message: str, hint: str) -> None:
        super().__init__(message)
        self.node = node
        self.message = message
        self.hint = hint


def _dotted(node: ast.AST) -> str | None:
    """`typing.Optional` → "Optional", `List` → "List", anything else → None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id in ("typing", "t", "typing_extensions", "benchpack_tools"):
        return node.attr
    return None


def _args(node: ast.AST) -> list[ast.AST]:
    return list(node.elts) if isinstance(node, ast.Tuple) else [node]


def _is_none(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and node.value is None) or \
        (isinstance(node, ast.Name) and node.id == "NoneType")


def _any_of(options: list[dict[str, Any]]) -> dict[str, Any]:
    unique: list[dict[str, Any]] = []
    for o in options:
        if o not in unique:
            unique.append(o)
    return unique[0] if len(unique) == 1 else {"anyOf": unique}


def type_schema(node: ast.AST, where: str) -> dict[str, Any]:
    """The JSON Schema of one annotation; `_Unsupported` (naming `where`) otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:  # a string annotation ("str", or a whole module under PEP 563)
            inner = ast.parse(node.value.strip(), mode="eval").body
        except SyntaxError:
            raise _Unsupported(node, f"{where}: the annotation {node.value!r} is not a valid "
                                     "type expression", f"use one of {_SUPPORTED}") from None
        ast.copy_location(inner, node)
        for sub in ast.walk(inner):  # problems inside point at the string itself
            sub.lineno, sub.col_offset = node.lineno, node.col_offset  # type: ignore[attr-defined]
        return type_schema(inner, where)
    if _is_none(node):
        return {"type": "null"}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _any_of([*_flat(type_schema(node.left, where)),
                        *_flat(type_schema(node.right, where))])
    name = _dotted(node)
    if name is not None:
        if name in _SCALARS:
            return dict(_SCALARS[name])
        if name in ("list", "List"):
            return {"type": "array"}
        if name in ("dict", "Dict"):
            return {"type": "object"}
        if name == STATE_TYPE:
            raise _Unsupported(node, f"{where}: `State` can only annotate the parameter that "
                                     "receives the state, not be part of a type",
                               "annotate the state parameter with plain `State`")
    if isinstance(node, ast.Subscript):
        base = _dotted(node.value)
        args = _args(node.slice)
        if base in ("list", "List", "Sequence") and len(args) == 1:
            return {"type": "array", "items": type_schema(args[0], where)}
        if base in ("dict", "Dict", "Mapping") and len(args) == 2:
            key = _dotted(args[0])
            if key != "str":
                raise _Unsupported(args[0], f"{where}: dictionary keys must be `str` (JSON "
                                            "object keys are strings)",
                                   "write `dict[str, T]`")
            return {"type": "object", "additionalProperties": type_schema(args[1], where)}
        if base == "Optional" and len(args) == 1:
            return _any_of([*_flat(type_schema(args[0], where)), {"type": "null"}])
        if base == "Union":
            return _any_of([o for a in args for o in _flat(type_schema(a, where))])
        if base == "Literal":
            values = []
            for a in args:
                if not (isinstance(a, ast.Constant) and (a.value is None or isinstance(
                        a.value, str | int | float | bool))):
                    raise _Unsupported(a, f"{where}: `Literal` values must be strings, numbers, "
                                          "booleans or None", 'write e.g. `Literal["a", "b"]`')
                values.append(a.value)
            out: dict[str, Any] = {"enum": values}
            kinds = {_json_type(v) for v in values}
            if len(kinds) == 1:
                out["type"] = kinds.pop()
            return out
        if base == "Annotated" and args:
            return type_schema(args[0], where)
    shown = ast.unparse(node)
    raise _Unsupported(node, f"{where}: the type `{shown}` cannot be given to an agent as JSON",
                       f"use one of {_SUPPORTED}")


def _flat(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return list(schema["anyOf"]) if set(schema) == {"anyOf"} else [schema]


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(description, parameter → description) from a Google-style docstring: the text before
    the first section header, and the entries of `Args:` (continuation lines indented more
    than the entry are joined to it)."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    entry_indent: int | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        header = stripped[:-1].strip().lower() if stripped.endswith(":") else None
        if header in _SECTIONS and indent == 0:
            section, entry_indent, current = header, None, None
            continue
        if section is None:
            summary.append(line)
            continue
        if section not in ("args", "arguments", "parameters", "params") or not stripped:
            continue
        if entry_indent is None:
            entry_indent = indent
        m = _ARG_LINE.match(line)
        if indent <= entry_indent and m:
            current = m.group("name")
            params[current] = m.group("desc").strip()
        elif current is not None and indent > entry_indent:
            params[current] = f"{params[current]} {stripped}".strip()
    text = "\n".join(summary).strip()
    return re.sub(r"\n{3,}", "\n\n", text), params


def _literal_default(node: ast.AST) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def _is_state(node: ast.AST | None) -> bool:
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.strip() in (STATE_TYPE, f"benchpack_tools.{STATE_TYPE}")
    return _dotted(node) == STATE_TYPE


def _function_tool(fn: ast.FunctionDef | ast.AsyncFunctionDef,
                   problems: list[ToolProblem],
                   given: tuple[str, dict[str, Any]] | None = None) -> PyToolSpec | None:
    def bad(node: ast.AST, message: str, hint: str) -> None:
        problems.append(ToolProblem(getattr(node, "lineno", fn.lineno),
                                    getattr(node, "col_offset", fn.col_offset) + 1, message, hint))

    before = len(problems)
    a = fn.args
    if not re.match(TOOL_NAME_PATTERN, fn.name):
        bad(fn, f"tool function `{fn.name}`: the name cannot be a tool name (ASCII letters, "
                "digits, `_` and `-`, at most 64 characters)",
            "rename it, or start it with `_` to keep it private")
    for p in a.posonlyargs:
        bad(p, f"tool function `{fn.name}`: parameter `{p.arg}` is positional-only (before "
               "`/`); agents pass arguments by name", "remove the `/`")
    if a.vararg is not None:
        bad(a.vararg, f"tool function `{fn.name}`: `*{a.vararg.arg}` cannot be described to "
                      "an agent", "list each parameter by name with its type")
    if a.kwarg is not None:
        bad(a.kwarg, f"tool function `{fn.name}`: `**{a.kwarg.arg}` cannot be described to an "
                     "agent", "list each parameter by name with its type")
    description, documented = parse_docstring(ast.get_docstring(fn, clean=False))
    if given is not None:
        description, documented = given[0], {}
    elif not description:
        bad(fn, f"tool function `{fn.name}` has no docstring; the agent needs a description",
            'add a docstring: a summary line, then an `Args:` section describing each parameter')
    positional = [*a.posonlyargs, *a.args]
    defaults: dict[str, ast.AST] = dict(zip([p.arg for p in positional][::-1], a.defaults[::-1],
                                            strict=False))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
                     if d is not None})
    state: str | None = None
    props: dict[str, Any] = {}
    required: list[str] = []
    for p in [*a.args, *a.kwonlyargs]:
        where = f"tool function `{fn.name}`, parameter `{p.arg}`"
        if _is_state(p.annotation):
            if state is not None:
                bad(p, f"{where}: only one parameter may receive the `State`",
                    "remove the second `State` parameter")
            state = p.arg
            continue
        if given is not None:
            continue  # the given schema describes the parameters
        if p.annotation is None:
            bad(p, f"{where} has no type annotation", f"annotate it, e.g. `{p.arg}: str` "
                                                       f"(supported: {_SUPPORTED})")
            continue
        try:
            schema = type_schema(p.annotation, where)
        except _Unsupported as exc:
            bad(exc.node, exc.message, exc.hint)
            continue
        if documented.get(p.arg):
            schema = {**schema, "description": documented[p.arg]}
        if p.arg in defaults:
            ok, value = _literal_default(defaults[p.arg])
            if ok and value is not None:
                schema = {**schema, "default": value}
        else:
            required.append(p.arg)
        props[p.arg] = schema
    known = {p.arg for p in [*positional, *a.kwonlyargs]}
    for name in documented:
        if name not in known:
            problems.append(ToolProblem(fn.lineno, fn.col_offset + 1,
                                        f"tool function `{fn.name}`: the docstring describes "
                                        f"`{name}`, which is not a parameter",
                                        "fix the name in `Args:` or remove the entry",
                                        "warning"))
    if any(p.severity == "error" for p in problems[before:]):
        return None
    parameters: dict[str, Any] = {"type": "object", "properties": props,
                                  "additionalProperties": False}
    if required:
        parameters["required"] = required
    if given is not None:
        parameters = given[1]
    return PyToolSpec(fn.name, description, parameters, state,
                      isinstance(fn, ast.AsyncFunctionDef), fn.lineno, fn.col_offset + 1)


def read_tools(source: str, filename: str = "<module>",
               given: dict[str, tuple[str, dict[str, Any]]] | None = None) -> ModuleTools:
    """Every public function of the module `source` as a tool, and the problems found (all of
    them: one bad function does not hide another's). `given`: function → (description,
    parameters schema) offered instead of what the docstring and type hints say."""
    out = ModuleTools()
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        out.problems.append(ToolProblem(exc.lineno or 1, exc.offset or 1,
                                        f"syntax error: {exc.msg}",
                                        "the module must be valid Python 3"))
        return out
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        out.problems.append(ToolProblem(1, 1, f"cannot parse the module: {exc}",
                                        "the module must be valid Python 3 text"))
        return out
    seen: dict[str, int] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or \
                node.name.startswith("_"):
            continue
        if node.name in seen:
            out.problems.append(ToolProblem(node.lineno, node.col_offset + 1,
                                            f"tool function `{node.name}` is defined twice "
                                            f"(first on line {seen[node.name]})",
                                            "rename or remove one of them"))
            out.tools = [t for t in out.tools if t.name != node.name]
            continue
        seen[node.name] = node.lineno
        tool = _function_tool(node, out.problems, (given or {}).get(node.name))
        if tool is not None:
            out.tools.append(tool)
    if not seen and not out.problems:
        out.problems.append(ToolProblem(1, 1, "the module defines no public function, so it "
                                              "offers no tool",
                                        "define functions at the top level; names starting "
                                        "with `_` are private"))
    return out
