"""Load a pack's YAML files: bytes → text → data, following `include:` globs.

Files go through PyYAML's libyaml-backed loader, restricted to the YAML 1.2 core schema so
that `no`, `on` or `2026-01-01` stay strings (not booleans or dates). Positions come from the
same parser's node tree (`yaml.compose`), built only for files that have something to report
(`SourceFile.locate`), so clean packs never pay for position tracking.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import literal
from .diagnostics import Diagnostics, Fix, PathPart, display_path, suggest_fix

MAX_FILE_BYTES = 10 * 1024 * 1024
"""YAML files larger than this are refused before reading (split them with `include:`)."""
MAX_DATA_BYTES = 64 * 1024 * 1024
"""Limit for other files a pack reads (fixtures, workspace sources, prompt templates)."""
MAX_EXPANDED_NODES = 20_000_000
MAX_DEPTH = 100
"""Deeper documents are refused with our own located diagnostic before any parser limit applies:
libyaml's recursive composer overflows the C stack past ~20,000 levels, PyYAML 6.0.4 refuses
1,000 flow levels with a message of its own, and deep data overflows Python's recursion later
(plan writing, JSON Schema validation). No pack needs 100 levels; data that does is not a pack's."""
GLOB_CHARS = re.compile(r"[*?\[]")


class _FastLoader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """Safe loader with YAML 1.2 core scalars and duplicate-key detection."""

    duplicates: list[tuple[Any, int, int]]
    has_merges: bool


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
MERGE_TAG = "tag:yaml.org,2002:merge"
_FastLoader.add_implicit_resolver(MERGE_TAG, re.compile(r"^(?:<<)$"), ["<"])


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


_FastLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_FastLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_FastLoader.add_constructor("tag:yaml.org,2002:float",
                            _construct_checked(yaml.SafeLoader.construct_yaml_float, "a number"))
_FastLoader.add_constructor("tag:yaml.org,2002:bool",
                            _construct_checked(yaml.SafeLoader.construct_yaml_bool,
                                               "true or false"))
for _tag in ("timestamp", "binary", "set", "omap", "pairs"):
    _FastLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", yaml.SafeLoader.construct_yaml_str)
_FastLoader.add_constructor(literal.TAG, literal.construct)


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
                best = _mark(node)
            elif isinstance(node, yaml.MappingNode):
                pair = _find_key(node, part)
                if pair is None:
                    break
                key, node = pair
                container = isinstance(node, (yaml.MappingNode, yaml.SequenceNode))
                best = _mark(key if (last and at_key) or container else node)
            else:
                break
        return best

    def _composed(self) -> Any:
        """The file's YAML node tree (libyaml marks), built on first use."""
        if self._node is None and not self._node_failed:
            try:
                self._node = yaml.compose(self.text, Loader=_FastLoader)
            except (yaml.YAMLError, RecursionError):
                self._node_failed = True
        return self._node


def _mark(node: Any) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _find_key(node: Any, part: PathPart) -> tuple[Any, Any] | None:
    """The (key, value) nodes for `part` in a mapping node, following `<<` merges; the last
    occurrence wins, as in the loaded data."""
    want = str(part)
    found = None
    merges = []
    for k, v in node.value:
        if k.tag == MERGE_TAG:
            merges.append(v)
        elif isinstance(k, yaml.ScalarNode) and _key_text(k) == want:
            found = (k, v)
    for m in merges if found is None else []:
        for source in m.value if isinstance(m, yaml.SequenceNode) else [m]:
            if isinstance(source, yaml.MappingNode):
                found = found or _find_key(source, part)
    return found


def _key_text(node: Any) -> str:
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
    raw = read_bytes(path, shown, diags, MAX_FILE_BYTES if yaml_file else MAX_DATA_BYTES)
    if raw is None:
        return None
    if yaml_file and b"\x00" in raw:  # before decoding: binary files fail here, clearly
        line, col = _position(raw, raw.index(b"\x00"))
        diags.error("E003", "file contains NUL bytes; it looks binary", shown,
                    hint="pack files must be UTF-8 text", line=line, col=col)
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, col = _position(raw, exc.start)
        diags.error("E003", f"byte 0x{raw[exc.start]:02x} is not valid UTF-8", shown,
                    hint="save the file as UTF-8", line=line, col=col)
        return None
    return raw, text


def read_bytes(path: Path, shown: str, diags: Diagnostics, limit: int) -> bytes | None:
    """A file's bytes, or None after a diagnostic (missing, a directory, too large…)."""
    try:
        if path.is_dir():
            diags.error("E012", "expected a file but found a directory", shown, line=1, col=1)
            return None
        size = path.stat().st_size
        if size > limit:
            diags.error("E005", f"file is {size / 2**20:.1f} MiB; the limit is "
                        f"{limit // 2**20} MiB", shown, line=1, col=1,
                        hint="split it with `include:` or move bulk data to a fixture file"
                        if limit == MAX_FILE_BYTES else "keep bulk data small")
            return None
        # O_NONBLOCK: a FIFO swapped in after the checks must not block the open; fstat on
        # the open file refuses anything that is not a regular file
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:  # read at most limit+1 bytes: the file may be growing
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                diags.error("E012", "not a regular file (a FIFO, socket or device)", shown,
                            line=1, col=1)
                return None
            raw = fh.read(limit + 1)
        if len(raw) > limit:
            diags.error("E005", f"file is larger than {limit // 2**20} MiB", shown, line=1, col=1)
            return None
        return raw
    except FileNotFoundError:
        diags.error("E006", "file not found", shown, line=1, col=1)
    except OSError as exc:
        diags.error("E012", f"cannot read file: {exc.strerror or exc}", shown, line=1, col=1)
    return None


def _position(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters, as editors count) of a byte offset."""
    start = raw.rfind(b"\n", 0, offset) + 1
    col = len(raw[start:offset].decode("utf-8", errors="replace")) + 1
    if raw.startswith(b"\xef\xbb\xbf") and start == 0:
        col -= 1  # the byte-order mark is invisible in editors
    return raw.count(b"\n", 0, offset) + 1, col


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


def _too_deep(text: str) -> tuple[int, int] | None:
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
        for event in yaml.parse(text, Loader=_FastLoader):
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
    deep = _too_deep(text)
    if deep is not None:
        diags.error("E001", f"the document nests more than {MAX_DEPTH} levels deep", shown,
                    hint=_DEPTH_HINT, line=deep[0] + 1, col=deep[1] + 1)
        return False, None
    loader = _FastLoader(text)
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
    for event in yaml.parse(text, Loader=_FastLoader):
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


def pack_relative(path: Path, root: Path) -> str:
    """`path` relative to the pack root, with `/` separators on every platform."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except (ValueError, OSError):
        return False


def path_problem(rel: str) -> str | None:
    """Why a path written in a pack cannot name a file, if it cannot."""
    if "\x00" in rel:
        return "a file path cannot contain a NUL character"
    if len(rel) > 1024:
        return "a file path cannot be longer than 1024 characters"
    return None


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


def near_file(path: Path, written: str) -> tuple[str, Fix | None]:
    """Hint for a missing file, and the fix of `written` (the path as the pack has it) when
    exactly one file next to where it points has a close name."""
    fallback = "paths are relative to the file that names them"
    try:
        siblings = [p.name for p in path.parent.iterdir()]
    except OSError:
        return fallback, None
    hint, fix = suggest_fix(path.name, siblings)
    if fix is None or not (path.parent / fix.new).is_file() or not written.endswith(path.name):
        return hint or fallback, None
    return hint or fallback, Fix("replace_value", written,
                                 written[: len(written) - len(path.name)] + fix.new)


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
