"""YAML text → data: PyYAML's libyaml loader restricted to the YAML 1.2 core schema, and the
limits and error messages around it.

Files go through PyYAML's libyaml-backed loader, restricted to the YAML 1.2 core schema so
that `no`, `on` or `2026-01-01` stay strings (not booleans or dates). Everything here works on
text alone (no files, no pack): the depth and alias-expansion limits are checked around the
parse, and libyaml's messages become located diagnostics with hints. Kept apart from reading
files and following includes (`loader.py`): it is the part that follows YAML's rules rather
than the pack's, and `sourcefile.py` composes positions with the same loader.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from . import literal
from .diagnostics import Diagnostics

MAX_EXPANDED_NODES = 20_000_000
MAX_DEPTH = 100
"""Deeper documents are refused with our own located diagnostic before any parser limit applies:
libyaml's recursive composer overflows the C stack past ~20,000 levels, PyYAML 6.0.4 refuses
1,000 flow levels with a message of its own, and deep data overflows Python's recursion later
(plan writing, JSON Schema validation). No pack needs 100 levels; data that does is not a pack's."""


class FastLoader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """Safe loader with YAML 1.2 core scalars and duplicate-key detection."""

    duplicates: list[tuple[Any, int, int]]
    has_merges: bool


# YAML 1.2 core schema: only true/false are booleans; no sexagesimals, no implicit dates.
FastLoader.yaml_implicit_resolvers = {}
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
FastLoader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL, list("tTfF"))
FastLoader.add_implicit_resolver("tag:yaml.org,2002:null", _NULL, ["~", "n", "N", ""])
FastLoader.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
FastLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
MERGE_TAG = "tag:yaml.org,2002:merge"
FastLoader.add_implicit_resolver(MERGE_TAG, re.compile(r"^(?:<<)$"), ["<"])


def _construct_int(loader: Any, node: Any) -> int:
    text = str(loader.construct_scalar(node)).replace("_", "")
    try:
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text)
    except ValueError:
        digits = text.lstrip("+-")
        problem = (f"the number has {len(digits)} digits; quote it to keep it as text"
                   if digits.isdigit() else f"`{text}` is not a whole number")
        raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark) from None


def _construct_checked(construct: Any, what: str) -> Any:
    """A PyYAML scalar constructor whose bad input (`!!float abc`) becomes a located error."""

    def checked(loader: Any, node: Any) -> Any:
        try:
            return construct(loader, node)
        except (ValueError, KeyError, TypeError):
            raise yaml.constructor.ConstructorError(
                None, None, f"`{node.value}` is not {what}", node.start_mark) from None

    return checked


def _construct_mapping(loader: Any, node: Any) -> dict[Any, Any]:
    # Duplicates are checked among the keys written in this mapping; a key that overrides one
    # pulled in by a `<<: *anchor` merge is the point of merging, not a duplicate.
    merged = 0
    if loader.has_merges and any(k.tag == MERGE_TAG for k, _ in node.value):
        own = sum(1 for k, _ in node.value if k.tag != MERGE_TAG)
        loader.flatten_mapping(node)
        merged = len(node.value) - own
    mapping: dict[Any, Any] = {}
    own_keys: set[Any] | None = set() if merged else None  # only needed next to merged keys
    for i, (key_node, value_node) in enumerate(node.value):
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a plain value, not a list or mapping",
                key_node.start_mark,
            ) from None
        if i >= merged:
            earlier = mapping if own_keys is None else own_keys
            # 1 and true are equal dict keys, yet different YAML keys: compare types on a hit
            if key in earlier and type(next(k for k in earlier if k == key)) is type(key):
                loader.duplicates.append((key, key_node.start_mark.line,
                                          key_node.start_mark.column))
            if own_keys is not None:
                own_keys.add(key)
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


FastLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
FastLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
FastLoader.add_constructor("tag:yaml.org,2002:float",
                            _construct_checked(yaml.SafeLoader.construct_yaml_float, "a number"))
FastLoader.add_constructor("tag:yaml.org,2002:bool",
                            _construct_checked(yaml.SafeLoader.construct_yaml_bool,
                                               "true or false"))
for _tag in ("timestamp", "binary", "set", "omap", "pairs"):
    FastLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", yaml.SafeLoader.construct_yaml_str)
FastLoader.add_constructor(literal.TAG, literal.construct)


# words of a libyaml problem → hint
_HINTS: list[tuple[str, str]] = [
    ("mapping values are not allowed",
     "a value containing `: ` must be quoted, or a key is indented wrongly"),
    ("expected <block end>", "check the indentation of this line against the one above"),
    ("did not find expected key", "check the indentation of this line against the one above"),
    ("did not find expected '-' indicator",
     "list items start with `- `; check the indentation against the line above"),
    ("did not find expected ',' or ']'",
     "close the `[` list, or quote an item that contains `,`, `[` or `]`"),
    ("did not find expected ',' or '}'",
     "close the `{` mapping, or quote a value that contains `,`, `{` or `}`"),
    ("could not find expected ':'",
     "a key needs `: ` after it; quote a value that spans lines, or use `|`"),
    ("found undefined alias", "define `&name` before using `*name`"),
    ("found unknown escape character",
     "in double quotes write `\\\\` for a backslash, or use single quotes"),
    ("found unhashable key", "keys must be plain strings"),
    ("plain value", "keys must be plain strings"),
    ("recursive", "an alias refers to its own anchor"),
    ("could not determine a constructor",
     "YAML tags (`!!python/…`, `!!set`, `!custom`…) are not supported in packs, except "
     "`!literal` (text never rendered as Jinja); remove the tag"),
    ("expected a scalar node",
     "YAML tags (`!!python/…`, `!!set`, `!custom`…) are not supported in packs; remove the tag"),
    ("tab character", "YAML indentation must use spaces, not tabs"),
]


def _explain(exc: yaml.MarkedYAMLError, text: str) -> tuple[str, str | None, Any]:
    """A libyaml error as (message, hint, mark to point at)."""
    mark = exc.problem_mark or exc.context_mark
    problem = (exc.problem or exc.context or "invalid YAML").strip()
    context = (exc.context or "").strip()
    if problem.startswith("but found another document"):
        return ("a pack file holds one YAML document, but this one has another after `---`",
                "remove the `---` line, or move the second document into its own file", mark)
    if "quoted scalar" in context and "end of stream" in problem:
        return ("a quoted string is never closed", "add the closing quote",
                exc.context_mark or mark)
    if context.startswith("found duplicate anchor"):
        return ("an `&anchor` name is used twice", "rename one of them", mark)
    if "cannot start any token" in problem and mark is not None:
        lines = text.splitlines()
        line = lines[mark.line] if mark.line < len(lines) else ""
        char = line[mark.column] if mark.column < len(line) else ""
        if char == "\t":
            return ("a tab character cannot indent YAML",
                    "YAML indentation must use spaces, not tabs", mark)
        return (f"`{char}` cannot start a value", "put the value in quotes", mark)
    for needle, hint in _HINTS:
        if needle in problem:
            return problem, hint, mark
    return problem, None, mark


_STRUCTURE_PREFIX = re.compile(r"^[ \t?:-]*", re.M)


def nesting_too_deep(text: str) -> tuple[int, int] | None:
    """Where (0-based line, column) the document first nests more than MAX_DEPTH collections, or
    None. Runs the event parser only when deep nesting is possible: a block level takes at least
    one column of indentation or `- `, a flow level an open bracket, so the longest structural
    prefix of a line plus the number of brackets bounds the depth from above."""
    prefix = max(map(len, _STRUCTURE_PREFIX.findall(text)), default=0)
    if prefix + text.count("[") + text.count("{") + 1 <= MAX_DEPTH:
        return None
    depth, resume = 0, 0
    start = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
    end = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    try:
        for event in yaml.parse(text, Loader=FastLoader):
            if isinstance(event, start):
                depth += 1
                if depth > MAX_DEPTH and event.start_mark is not None:
                    return event.start_mark.line, event.start_mark.column
            elif isinstance(event, end):
                depth -= 1
            if event.end_mark is not None:
                resume = event.end_mark.index
    except yaml.MarkedYAMLError as exc:
        # A parser with a nesting limit of its own (PyYAML ≥ 6.0.4 stops at 1,000 flow levels,
        # scanning ahead of the events) stops before our count reaches the node: find it by
        # counting the brackets after the last event.
        if _is_depth_limit(exc):
            return _bracket_depth(text, resume, depth)
        return None  # the real parse reports it, with its position
    except yaml.YAMLError:
        return None
    return None


def _bracket_depth(text: str, index: int, depth: int) -> tuple[int, int]:
    """Where flow brackets from `index` on (at `depth`) first exceed MAX_DEPTH (0-based)."""
    quote = ""
    for i in range(index, len(text)):
        ch = text[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, i)
                return line, i - (text.rfind("\n", 0, i) + 1)
        elif ch in "]}":
            depth -= 1
    return text.count("\n", 0, index), 0


def _is_depth_limit(exc: yaml.YAMLError) -> bool:
    words = f"{getattr(exc, 'problem', '')} {getattr(exc, 'context', '')} {exc}".lower()
    return "nesting" in words or "depth" in words


_DEPTH_HINT = ("flatten the structure: no pack needs more than 100 levels; keep deeply nested "
               "data in a fixture file and refer to it")


def parse_yaml(text: str, shown: str, diags: Diagnostics) -> tuple[bool, Any]:
    """Parse YAML text; (ok, data). Problems become diagnostics."""
    deep = nesting_too_deep(text)
    if deep is not None:
        diags.error("E001", f"the document nests more than {MAX_DEPTH} levels deep", shown,
                    hint=_DEPTH_HINT, line=deep[0] + 1, col=deep[1] + 1)
        return False, None
    loader = FastLoader(text)
    loader.duplicates = []
    loader.has_merges = "<<" in text
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        if _is_depth_limit(exc):  # a parser limit we did not foresee: still our message
            mark = exc.problem_mark or exc.context_mark
            diags.error("E001", f"the document nests more than {MAX_DEPTH} levels deep", shown,
                        hint=_DEPTH_HINT, line=mark.line + 1 if mark else 1,
                        col=mark.column + 1 if mark else 1)
            return False, None
        problem, hint, mark = _explain(exc, text)
        diags.error("E001", problem, shown, hint=hint,
                    line=mark.line + 1 if mark else 1, col=mark.column + 1 if mark else 1)
        return False, None
    except yaml.YAMLError as exc:
        diags.error("E001", str(exc).strip() or "invalid YAML", shown, line=1, col=1)
        return False, None
    except RecursionError:
        diags.error("E001", f"the document nests more than {MAX_DEPTH} levels deep", shown,
                    hint=_DEPTH_HINT, line=1, col=1)
        return False, None
    except Exception as exc:  # a constructor we did not wrap; still the author's YAML
        diags.error("E001", f"cannot read a value: {exc}", shown, line=1, col=1,
                    hint="remove explicit `!!` tags")
        return False, None
    finally:
        loader.dispose()
    for key, line, col in loader.duplicates:
        diags.error("E002", f"key `{key}` appears more than once in this mapping", shown,
                    hint="the second value would silently replace the first; keep one",
                    line=line + 1, col=col + 1)
    if loader.duplicates:
        return False, None
    # only aliases can make the expanded document larger than the text; skip the walk without them
    if "&" in text and "*" in text and _expanded_size(data) > MAX_EXPANDED_NODES:
        line, col = _first_alias(text)
        diags.error("E011", "aliases expand this document beyond 20 million nodes", shown,
                    hint="use fewer nested `*alias` references", line=line + 1, col=col + 1)
        return False, None
    return True, data


def _first_alias(text: str) -> tuple[int, int]:
    """Where the first `*alias` is (0-based): the expansion starts there."""
    for event in yaml.parse(text, Loader=FastLoader):
        if isinstance(event, yaml.AliasEvent) and event.start_mark is not None:
            return event.start_mark.line, event.start_mark.column
    return 0, 0


def _expanded_size(data: Any) -> int:
    """Node count with aliases expanded, computed in time linear in distinct nodes."""
    memo: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        node, done = stack.pop()
        if not isinstance(node, (dict, list)) or (id(node) in memo and not done):
            continue
        children = list(node.values()) if isinstance(node, dict) else node
        if done:
            total = 1
            for c in children:
                total += memo.get(id(c), 1) if isinstance(c, (dict, list)) else 1
                if total > MAX_EXPANDED_NODES:
                    break
            memo[id(node)] = total
        else:
            stack.append((node, True))
            stack.extend((c, False) for c in children if isinstance(c, (dict, list)))
    return memo.get(id(data), 1)
