"""Literal text: pack values that are never rendered as Jinja.

Imported data and code snippets contain `{{`, `{%` and `{#` that are not templates. An author
marks them in one of two ways:

- the YAML tag `!literal` on a value, a list or a mapping: that value, and everything under a
  list or mapping, is taken verbatim (`request: !literal "Fix {{ user.name }}"`);
- a comment `# benchpack: literal` among the comment lines that head a file, before its first
  key: nothing in that file is rendered (for a whole imported fragment).

The loader turns tagged values back into plain ones and keeps the paths they were at, so the
rest of the compiler sees ordinary data; `Builder.render` skips a literal path.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

TAG = "!literal"
HINT = ("if the braces are meant verbatim, tag the value `!literal` (`key: !literal \"…\"`) or "
        "start the file with `# benchpack: literal`")
_MARKER = re.compile(r"#\s*benchpack\s*:\s*literal\s*$")


class _Text(str):
    pass


class _Map(dict):  # type: ignore[type-arg]
    pass


class _List(list):  # type: ignore[type-arg]
    pass


def construct(loader: Any, node: Any) -> Any:
    """The `!literal` constructor: the value as usual, in a type that remembers the tag."""
    if isinstance(node, yaml.ScalarNode):
        return _Text(loader.construct_scalar(node))
    if isinstance(node, yaml.SequenceNode):
        return _List(loader.construct_sequence(node, deep=True))
    # our mapping constructor, with its duplicate-key checks
    return _Map(loader.yaml_constructors["tag:yaml.org,2002:map"](loader, node))


def marked(text: str) -> bool:
    """Whether the comment lines heading `text` include `# benchpack: literal`."""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            return False
        if _MARKER.fullmatch(stripped):
            return True
    return False


def extract(data: Any) -> tuple[Any, set[tuple[Any, ...]]]:
    """`data` with tagged values replaced by plain ones, and the paths they were at."""
    paths: set[tuple[Any, ...]] = set()
    plain: dict[type, type] = {_Text: str, _Map: dict, _List: list}

    def walk(value: Any, path: tuple[Any, ...]) -> Any:
        if type(value) in plain:
            paths.add(path)
            value = plain[type(value)](value)
        if isinstance(value, dict):
            for k in list(value):
                value[k] = walk(value[k], (*path, k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                value[i] = walk(v, (*path, i))
        return value

    return walk(data, ()), paths


def is_literal(paths: set[tuple[Any, ...]], path: tuple[Any, ...]) -> bool:
    """Whether `path` is at or under one of the literal `paths`."""
    return any(path[:n] in paths for n in range(len(path) + 1))
