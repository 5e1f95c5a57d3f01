"""A loaded YAML file and the positions in it.

Positions come from the same parser's node tree (`yaml.compose`), built only for files that
have something to report (`SourceFile.locate`), so clean packs never pay for position tracking.
Kept apart from parsing (`yamlparse.py`) and loading (`loader.py`) because every later stage
holds `SourceFile`s and locates diagnostics in them, long after loading is done.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .diagnostics import Diagnostics, PathPart
from .yamlparse import MERGE_TAG, FastLoader


@dataclass
class SourceFile:
    """One YAML file of a pack."""

    path: Path
    shown: str
    """Path as shown in diagnostics."""
    raw: bytes
    text: str = ""
    data: Any = None
    kind: str = "fragment"
    """`pack` for the root file, `fragment` for included files."""
    literal: bool = False
    """Marked `# benchpack: literal`: no text in it is rendered (`literal.py`)."""
    literal_paths: set[tuple[PathPart, ...]] = field(default_factory=set)
    """Paths of values tagged `!literal`."""
    _node: Any = field(default=None, repr=False)
    _node_failed: bool = False

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()

    def locate(self, path: tuple[PathPart, ...], at_key: bool = False) -> tuple[int, int] | None:
        """1-based (line, column) of the node at `path`, or of its deepest existing ancestor.
        Containers are located at their key (their value starts on the next line)."""
        node = self._composed()
        if node is None:
            return None
        best = (1, 1)
        for i, part in enumerate(path):
            last = i == len(path) - 1
            if isinstance(node, yaml.SequenceNode):
                if not (isinstance(part, int) and 0 <= part < len(node.value)):
                    break
                node = node.value[part]
                best = node_mark(node)
            elif isinstance(node, yaml.MappingNode):
                pair = find_key(node, part)
                if pair is None:
                    break
                key, node = pair
                container = isinstance(node, (yaml.MappingNode, yaml.SequenceNode))
                best = node_mark(key if (last and at_key) or container else node)
            else:
                break
        return best

    def _composed(self) -> Any:
        """The file's YAML node tree (libyaml marks), built on first use."""
        if self._node is None and not self._node_failed:
            try:
                self._node = yaml.compose(self.text, Loader=FastLoader)
            except (yaml.YAMLError, RecursionError):
                self._node_failed = True
        return self._node


def node_mark(node: Any) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def find_key(node: Any, part: PathPart) -> tuple[Any, Any] | None:
    """The (key, value) nodes for `part` in a mapping node, following `<<` merges; the last
    occurrence wins, as in the loaded data."""
    want = str(part)
    found = None
    merges = []
    for k, v in node.value:
        if k.tag == MERGE_TAG:
            merges.append(v)
        elif isinstance(k, yaml.ScalarNode) and key_text(k) == want:
            found = (k, v)
    for m in merges if found is None else []:
        for source in m.value if isinstance(m, yaml.SequenceNode) else [m]:
            if isinstance(source, yaml.MappingNode):
                found = found or find_key(source, part)
    return found


def key_text(node: Any) -> str:
    """str() of the key the loader builds from a scalar node (`1`, `None`, `True`…)."""
    kind = node.tag.rsplit(":", 1)[-1]
    try:
        if kind == "null":
            return "None"
        if kind == "bool":
            return str(node.value.lower() == "true")
        if kind == "int":
            text = node.value.replace("_", "")
            base = {"0o": 8, "0x": 16}.get(text[:2], 10)
            return str(int(text[2:] if base != 10 else text, base))
        if kind == "float":
            return str(float(node.value.replace("_", "")))
    except ValueError:
        pass
    return str(node.value)


def locate_all(diags: Diagnostics, files: list[SourceFile]) -> None:
    """Fill in line/column for diagnostics that only know their JSON path."""
    by_shown = {f.shown: f for f in files}
    for d in diags.items:
        if d.line is not None:
            continue
        src = by_shown.get(d.file)
        if src is None or not src.text:
            continue
        pos = src.locate(d.path, d.at_key) if d.path else (1, 1)
        if pos:
            d.line, d.col = pos
