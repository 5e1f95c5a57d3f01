"""Load a pack's YAML files: bytes → text → data, following `include:` globs.

Clean files go through PyYAML's libyaml-backed loader (the fast path). Positions come from
ruamel.yaml's round-trip loader, and only for files that have something to report
(`SourceFile.locate`). Both loaders are restricted to the YAML 1.2 core schema so that
`no`, `on` or `2026-01-01` mean the same thing to both (strings, not booleans or dates).
"""

from __future__ import annotations

import glob
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .diagnostics import Diagnostics, PathPart, display_path

MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_EXPANDED_NODES = 20_000_000
GLOB_CHARS = re.compile(r"[*?\[]")


class _FastLoader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """Safe loader with YAML 1.2 core scalars and duplicate-key detection."""

    duplicates: list[tuple[Any, int, int]]


# YAML 1.2 core schema: only true/false are booleans; no sexagesimals, no implicit dates.
_FastLoader.yaml_implicit_resolvers = {}
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_FastLoader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL, list("tTfF"))
_FastLoader.add_implicit_resolver("tag:yaml.org,2002:null", _NULL, ["~", "n", "N", ""])
_FastLoader.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
_FastLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
_FastLoader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])


def _construct_int(loader: Any, node: Any) -> int:
    text = str(loader.construct_scalar(node)).replace("_", "")
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text)


def _construct_mapping(loader: Any, node: Any) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a plain value, not a list or mapping",
                key_node.start_mark,
            ) from None
        if key in mapping:
            loader.duplicates.append((key, key_node.start_mark.line, key_node.start_mark.column))
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


_FastLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_FastLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
for _tag in ("timestamp", "binary", "set", "omap", "pairs"):
    _FastLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", yaml.SafeLoader.construct_yaml_str)


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
    _rt: Any = field(default=None, repr=False)
    _rt_failed: bool = False

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()

    def locate(self, path: tuple[PathPart, ...], at_key: bool = False) -> tuple[int, int] | None:
        """1-based (line, column) of the node at `path`, or of its deepest existing ancestor.
        Containers are located at their key (their value starts on the next line)."""
        node = self._round_trip()
        if node is None:
            return None
        best = (1, 1)
        for i, part in enumerate(path):
            last = i == len(path) - 1
            lc = getattr(node, "lc", None)
            try:
                if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                    if lc is not None:
                        line, col = lc.item(part)
                        best = (line + 1, col + 1)
                    node = node[part]
                elif isinstance(node, dict) and part in node:
                    child = node[part]
                    if lc is not None:
                        use_key = (last and at_key) or isinstance(child, (dict, list))
                        line, col = lc.key(part) if use_key else lc.value(part)
                        best = (line + 1, col + 1)
                    node = child
                else:
                    break
            except Exception:  # positions are best effort; never fail a report over them
                break
        return best

    def _round_trip(self) -> Any:
        if self._rt is None and not self._rt_failed:
            from ruamel.yaml import YAML

            rt = YAML(typ="rt")
            rt.allow_duplicate_keys = True
            try:
                self._rt = rt.load(self.text)
            except Exception:
                self._rt_failed = True
        return self._rt


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


def read_text(path: Path, shown: str, diags: Diagnostics, *, yaml_file: bool) -> tuple[bytes, str] | None:
    """Read a file as UTF-8 text, reporting problems instead of raising."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            diags.error("E005", f"file is {size / 1e6:.1f} MB; the limit is {MAX_FILE_BYTES // 2**20} MiB",
                        shown, hint="split it with `include:` or move bulk data to a fixture file")
            return None
        raw = path.read_bytes()
    except FileNotFoundError:
        diags.error("E006", "file not found", shown)
        return None
    except IsADirectoryError:
        diags.error("E012", "expected a file but found a directory", shown)
        return None
    except OSError as exc:
        diags.error("E012", f"cannot read file: {exc.strerror or exc}", shown)
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        diags.error("E003", f"byte 0x{raw[exc.start]:02x} is not valid UTF-8", shown,
                    hint="save the file as UTF-8", line=line, col=col)
        return None
    if yaml_file and "\x00" in text:
        diags.error("E003", "file contains NUL bytes; it looks binary", shown,
                    hint="pack files must be UTF-8 text")
        return None
    return raw, text


def parse_yaml(text: str, shown: str, diags: Diagnostics) -> tuple[bool, Any]:
    """Parse YAML text; (ok, data). Problems become diagnostics."""
    loader = _FastLoader(text)
    loader.duplicates = []
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        hint = None
        if "\t" in problem or "'\\t'" in str(exc):
            hint = "YAML indentation must use spaces, not tabs"
        elif "mapping values are not allowed" in problem:
            hint = "a value containing `: ` must be quoted, or a key is indented wrongly"
        elif "expected <block end>" in problem:
            hint = "check the indentation of this line against the one above"
        elif "found unhashable key" in problem or "plain value" in problem:
            hint = "keys must be plain strings"
        elif "recursive" in problem:
            hint = "an alias refers to its own anchor"
        diags.error("E001", problem.strip(), shown, hint=hint,
                    line=mark.line + 1 if mark else None, col=mark.column + 1 if mark else None)
        return False, None
    except yaml.YAMLError as exc:
        diags.error("E001", str(exc).strip() or "invalid YAML", shown)
        return False, None
    except RecursionError:
        diags.error("E001", "document is nested too deeply", shown)
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
        diags.error("E011", "aliases expand this document beyond 20 million nodes", shown,
                    hint="use fewer nested `*alias` references")
        return False, None
    return True, data


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


def inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def load_pack(target: Path, diags: Diagnostics) -> LoadedPack | None:
    """Load pack.yaml and every file it includes. None when the root file is unusable."""
    pack_file = find_pack_file(target)
    root = pack_file.parent.resolve()
    shown = display_path(pack_file)
    if not pack_file.exists():
        hint = "run `bench init` to scaffold a pack" if target.is_dir() or not target.exists() else None
        diags.error("E006", "no pack.yaml here", shown, hint=hint)
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
            diags.error("E004", "file is empty", shown_path,
                        hint="a pack file needs at least `name:`" if kind == "pack"
                        else "add `personas:`, `episodes:`… or remove it from `include:`")
            return
        ok, data = parse_yaml(text, shown_path, diags)
        if not ok:
            return
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
            for target_path in expand_include(src, pattern, i, root, diags):
                if target_path.resolve() in [p.resolve() for p in [*stack, real]]:
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
    base = src.path.parent
    full = base / pattern
    if GLOB_CHARS.search(pattern):
        matches = sorted(Path(p) for p in glob.glob(str(full), recursive=True))
        matches = [m for m in matches if m.is_file()]
        if not matches:
            diags.error("E008", f"`{pattern}` matched no files", src.shown, ("include", index),
                        hint="check the pattern; paths are relative to this file")
        out = []
        for m in matches:
            if not inside(root, m):
                diags.error("E010", f"`{m}` is outside the pack directory", src.shown,
                            ("include", index))
                continue
            out.append(m)
        return out
    if not inside(root, full):
        diags.error("E010", f"`{pattern}` points outside the pack directory", src.shown,
                    ("include", index), hint="keep every pack file under the folder of pack.yaml")
        return []
    if not full.exists():
        diags.error("E006", f"included file `{pattern}` not found", src.shown, ("include", index),
                    hint=_near_file_hint(full))
        return []
    return [full]


def _near_file_hint(path: Path) -> str | None:
    from .diagnostics import did_you_mean

    try:
        siblings = [p.name for p in path.parent.iterdir()]
    except OSError:
        return "paths are relative to the file that names them"
    return did_you_mean(path.name, siblings) or "paths are relative to the file that names them"


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
