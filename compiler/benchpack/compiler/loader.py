"""Load a pack's YAML files: bytes → text → data, following `include:` globs.

The steps live in their own modules, re-exported here so `from .loader import …` keeps working:
`files.py` reads bytes and checks paths, `yamlparse.py` turns text into data (YAML 1.2 core
schema, limits, libyaml's errors explained), `sourcefile.py` holds a loaded file and locates
diagnostics in it. This module walks pack.yaml and its includes.
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import literal
from .diagnostics import Diagnostics, display_path
from .files import (
    MAX_DATA_BYTES,
    MAX_FILE_BYTES,
    inside,
    near_file,
    pack_relative,
    path_problem,
    read_bytes,
    read_text,
)
from .sourcefile import SourceFile, locate_all
from .yamlparse import (
    MAX_DEPTH,
    MAX_EXPANDED_NODES,
    MERGE_TAG,
    parse_yaml,
)

__all__ = [
    "GLOB_CHARS",
    "MAX_DATA_BYTES",
    "MAX_DEPTH",
    "MAX_EXPANDED_NODES",
    "MAX_FILE_BYTES",
    "MERGE_TAG",
    "LoadedPack",
    "SourceFile",
    "expand_include",
    "find_pack_file",
    "inside",
    "load_pack",
    "locate_all",
    "near_file",
    "pack_relative",
    "parse_yaml",
    "path_problem",
    "read_bytes",
    "read_text",
    "type_name",
]

GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass
class LoadedPack:
    root: Path
    """Directory of pack.yaml; every file the pack uses must stay inside it."""
    files: list[SourceFile]
    """pack.yaml first, then included files in include order."""
    data_files: dict[Path, bytes] = field(default_factory=dict)
    """Other files read while compiling (workspace sources, fixtures…), for the content hash."""

    def by_shown(self, shown: str) -> SourceFile | None:
        for f in self.files:
            if f.shown == shown:
                return f
        return None


def find_pack_file(target: Path) -> Path:
    if target.is_dir():
        for name in ("pack.yaml", "pack.yml"):
            if (target / name).is_file():
                return target / name
        return target / "pack.yaml"
    return target


def load_pack(target: Path, diags: Diagnostics) -> LoadedPack | None:
    """Load pack.yaml and every file it includes. None when the root file is unusable."""
    pack_file = find_pack_file(target)
    root = pack_file.parent.resolve()
    shown = display_path(pack_file)
    if not pack_file.exists():
        if target.is_dir():
            diags.error("E006", "no pack.yaml in this directory", shown, line=1, col=1,
                        hint=f"run `bench init {target}` to scaffold a pack")
        else:
            diags.error("E006", "no such file or directory", display_path(target), line=1,
                        col=1, hint="give a pack directory or its pack.yaml")
        return None
    loaded = LoadedPack(root=root, files=[])
    seen: set[Path] = set()

    def visit(path: Path, kind: str, stack: list[Path]) -> None:
        real = path.resolve()
        shown_path = display_path(path)
        if real in seen:
            return
        seen.add(real)
        read = read_text(path, shown_path, diags, yaml_file=True)
        if read is None:
            return
        raw, text = read
        src = SourceFile(path=real, shown=shown_path, raw=raw, text=text, kind=kind)
        loaded.files.append(src)
        if not text.strip() or all(
            not line.strip() or line.lstrip().startswith("#") for line in text.splitlines()
        ):
            diags.error("E004", "file is empty", shown_path, line=1, col=1,
                        hint="a pack file needs at least `name:`" if kind == "pack"
                        else "add `personas:`, `episodes:`… or remove it from `include:`")
            return
        ok, data = parse_yaml(text, shown_path, diags)
        if not ok:
            return
        if literal.TAG in text:
            data, src.literal_paths = literal.extract(data)
        src.literal = literal.marked(text)
        if not isinstance(data, dict):
            diags.error("E009", f"the top level must be a mapping of keys, found {type_name(data)}",
                        shown_path, line=1, col=1)
            return
        src.data = data
        includes = data.get("include", [])
        if not isinstance(includes, list):
            return  # schema validation reports it
        for i, pattern in enumerate(includes):
            if not isinstance(pattern, str) or not pattern.strip():
                continue
            is_glob = bool(GLOB_CHARS.search(pattern))
            for target_path in expand_include(src, pattern, i, root, diags):
                if target_path.resolve() in [p.resolve() for p in [*stack, real]]:
                    if is_glob:
                        continue  # `*.yaml` in pack.yaml means the other files, not itself
                    chain = " → ".join(display_path(p) for p in [*stack, real, target_path])
                    diags.error("E007", f"include loop: {chain}", shown_path, ("include", i),
                                hint="remove one of these includes")
                    continue
                visit(target_path, "fragment", [*stack, real])

    visit(pack_file, "pack", [])
    if loaded.files:
        loaded.files[0].kind = "pack"
    return loaded


def expand_include(src: SourceFile, pattern: str, index: int, root: Path,
                   diags: Diagnostics) -> list[Path]:
    problem = path_problem(pattern)
    if problem:
        diags.error("E104", problem, src.shown, ("include", index))
        return []
    base = src.path.parent
    full = base / pattern
    if GLOB_CHARS.search(pattern):
        fixed = Path(*[part for part in _until_glob(Path(pattern).parts)])
        if not inside(root, base / fixed):  # never walk directories outside the pack
            diags.error("E010", f"`{pattern}` points outside the pack directory", src.shown,
                        ("include", index),
                        hint="keep every pack file under the folder of pack.yaml")
            return []
        matches = sorted(Path(p) for p in glob.glob(str(full), recursive=True))
        matches = [m for m in matches if m.is_file()]
        if not matches:
            diags.error("E008", f"`{pattern}` matched no files", src.shown, ("include", index),
                        hint="check the pattern; paths are relative to this file")
        out = []
        for m in matches:
            if not inside(root, m):  # a symlink or `..` after the first wildcard
                diags.error("E010", f"`{display_path(m)}` is outside the pack directory",
                            src.shown, ("include", index))
                continue
            out.append(m)
        return out
    if not inside(root, full):
        diags.error("E010", f"`{pattern}` points outside the pack directory", src.shown,
                    ("include", index), hint="keep every pack file under the folder of pack.yaml")
        return []
    if not full.exists():
        hint, fix = near_file(full, pattern)
        diags.error("E006", f"included file `{pattern}` not found", src.shown, ("include", index),
                    hint=hint, fix=fix)
        return []
    if full.is_dir():
        diags.error("E012", f"`{pattern}` is a directory, not a YAML file", src.shown,
                    ("include", index),
                    hint=f"include the files in it with `{pattern.rstrip('/')}/*.yaml`")
        return []
    if not full.is_file():  # a FIFO would block the compiler for good; devices never end
        diags.error("E012", f"`{pattern}` is not a regular file (a FIFO, socket or device)",
                    src.shown, ("include", index), hint="include YAML files only")
        return []
    return [full]


def _until_glob(parts: tuple[str, ...]) -> list[str]:
    out = []
    for part in parts:
        if GLOB_CHARS.search(part):
            break
        out.append(part)
    return out


def type_name(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__
