"""`bench validate --fix`: apply the compiler's unambiguous fixes in place.

Each affected file is loaded with ruamel.yaml in round-trip mode and the fixes are applied to
that tree. A file is written back only when the result equals the original bytes with nothing
but the fixed tokens replaced: before any change, ruamel's re-dump of the untouched document
must reproduce the file exactly (otherwise — a byte-order mark, CRLF line endings, a flow
mapping spread over several lines, unusual indentation — ruamel would reformat the author's
file, so the fix is reported as an edit to make by hand), and after the change, the re-dump
must equal the original with each token replaced at its own line and column.

Nothing in a pack is executed; only files of the pack that the compiler read are written, and
never through a symlink or outside the pack directory.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import os
import re
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import (
    DoubleQuotedScalarString,
    PlainScalarString,
    SingleQuotedScalarString,
)
from ruamel.yaml.tokens import CommentToken

from .api import CompileResult, validate_pack
from .diagnostics import Diagnostic, Fix, PathPart
from .loader import inside

# (mapping indent, sequence indent, dash offset): the layouts ruamel is tried with, most
# common first (`key:` then `  - item` is what `bench init` writes)
_LAYOUTS = ((2, 4, 2), (2, 2, 0), (4, 4, 2), (4, 6, 4), (4, 4, 0), (3, 3, 0))
_DOC_START = re.compile(r"^---(?:[ \t]|$)", re.M)
MAX_PASSES = 3
"""Fixing a key can reveal errors inside its value (they were hidden while it was unknown)."""


@dataclass
class FixOutcome:
    """One fix, applied or left to the author."""

    file: str
    line: int | None
    col: int | None
    code: str
    fix: Fix
    path: tuple[PathPart, ...]
    reason: str | None = None
    """Why it was not applied; None when it was (or, in a dry run, would be)."""

    def format(self, dry_run: bool = False) -> str:
        """`file:line: renamed `a` → `b``; in a dry run `would rename …`; when left to the
        author `file:line:col: rename `a` → `b` by hand (why)`."""
        where = self.file + (f":{self.line}" if self.line is not None else "")
        if self.reason is None:
            return f"{where}: " + ("would " if dry_run else "") + self.fix.describe(not dry_run)
        if self.line is not None:
            where += f":{self.col or 1}"
        return f"{where}: {self.fix.describe(done=False)} by hand ({self.reason})"

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "col": self.col, "code": self.code,
                "kind": self.fix.kind, "path": list(self.path), "old": self.fix.old,
                "new": self.fix.new, "reason": self.reason}


@dataclass
class FixReport:
    fixed: list[FixOutcome] = field(default_factory=list)
    """Applied (in a dry run: would be applied)."""
    manual: list[FixOutcome] = field(default_factory=list)
    """Left to the author, each with the exact edit and the reason."""
    written: list[str] = field(default_factory=list)
    dry_run: bool = False
    result: CompileResult | None = None
    """The validation after fixing (in a dry run: of the pack as it is)."""
    texts: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False)
    """File as shown → (text before the first fix, text after the last)."""

    @property
    def diffs(self) -> dict[str, str]:
        """File as shown → unified diff of the fixes."""
        return {shown: "".join(difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True),
            f"a/{shown}", f"b/{shown}")) for shown, (before, after) in self.texts.items()}

    def as_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "fixed": [f.as_dict() for f in self.fixed],
                "manual": [f.as_dict() for f in self.manual], "written": self.written,
                "diffs": self.diffs,
                "diagnostics": [d.as_dict() for d in self.result.diagnostics]
                if self.result else []}


def fix_pack(target: str | Path, *, dry_run: bool = False, strict: bool = False) -> FixReport:
    """Validate `target`, apply its fixes, validate again (repeating while fixes reveal more
    fixable errors, up to MAX_PASSES); a dry run computes the diffs and writes nothing."""
    result = validate_pack(target, strict=strict)
    report = FixReport(dry_run=dry_run)
    for _ in range(1 if dry_run else MAX_PASSES):
        step = apply_fixes(result, dry_run=dry_run)
        report.fixed += step.fixed
        report.manual = step.manual  # what the latest validation still offers
        report.texts.update({f: (report.texts.get(f, t)[0], t[1]) for f, t in step.texts.items()})
        report.written += [f for f in step.written if f not in report.written]
        if dry_run or not step.written:
            break
        result = validate_pack(target, strict=strict)
    report.result = result
    report.fixed.sort(key=lambda f: (f.file, f.line or 0, f.col or 0))
    return report


def apply_fixes(result: CompileResult, *, dry_run: bool = False) -> FixReport:
    """Apply the fixes of `result`'s diagnostics to the pack's files (one pass)."""
    report = FixReport(dry_run=dry_run, result=result)
    by_file: dict[str, list[Diagnostic]] = {}
    for d in result.diagnostics:
        if d.fix is not None:
            by_file.setdefault(d.file, []).append(d)
    for shown, diags in by_file.items():
        _fix_file(shown, diags, result, report)
    return report


def _outcome(d: Diagnostic, reason: str | None = None) -> FixOutcome:
    assert d.fix is not None
    return FixOutcome(d.file, d.line, d.col, d.code, d.fix, d.path, reason)


def _fix_file(shown: str, diags: list[Diagnostic], result: CompileResult,
              report: FixReport) -> None:
    unique: dict[tuple[PathPart, ...], Diagnostic] = {}
    for d in diags:
        unique.setdefault(d.path, d)  # the same node reported twice (a style matrix…)
    diags = list(unique.values())

    def manual(reason: str, which: Sequence[Diagnostic] = diags) -> None:
        report.manual.extend(_outcome(d, reason) for d in which)

    source = result.fix_sources.get(shown)
    if source is None or result.root is None:
        return manual("the file is not part of the checked pack")
    path, digest = source
    if path.is_symlink() or not inside(result.root, path) or not path.is_file():
        return manual("the file is outside the pack directory")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return manual(f"cannot read it: {exc.strerror or exc}")
    if hashlib.sha256(raw).hexdigest() != digest:
        return manual("the file changed since it was checked; run the command again")
    loaded = _round_trip(raw)
    if isinstance(loaded, str):
        return manual(loaded)
    yaml, doc, text = loaded

    edits: list[tuple[int, int, str, str]] = []
    applied: list[Diagnostic] = []
    for d in sorted(diags, key=lambda d: (d.line or 0, d.col or 0)):
        outcome = _apply(doc, d, text)
        if isinstance(outcome, str):
            manual(outcome, [d])
        else:
            edits.append(outcome)
            applied.append(d)
    if not applied:
        return None
    _shift_comments(doc, edits)
    expected = _splice(text, edits)
    fixed = _dump(yaml, doc, text)
    if fixed != expected:
        return manual("ruamel.yaml would change more than the fix in this file", applied)
    report.fixed.extend(_outcome(d) for d in applied)
    report.texts[shown] = (text, fixed)
    if report.dry_run:
        return None
    try:
        _write(path, fixed.encode("utf-8"))
    except OSError as exc:
        report.fixed = [f for f in report.fixed if f.file != shown]
        return manual(f"cannot write it: {exc.strerror or exc}", applied)
    report.written.append(shown)
    return None


def _round_trip(raw: bytes) -> tuple[YAML, Any, str] | str:
    """(the ruamel instance, the document, the text) when ruamel re-dumps the file unchanged;
    otherwise why it would not."""
    if raw.startswith(b"\xef\xbb\xbf"):
        return "the file starts with a byte-order mark, which ruamel.yaml would drop"
    if b"\r" in raw:
        return "the file has Windows (CRLF) line endings, which ruamel.yaml would rewrite"
    text = raw.decode("utf-8")
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 2**31  # never fold a long line
    yaml.explicit_start = bool(_DOC_START.search(text))
    try:
        doc = yaml.load(text)
    except Exception as exc:  # ruamel's errors have no common base worth naming
        return f"ruamel.yaml cannot read it: {str(exc).splitlines()[0] if str(exc) else exc}"
    first = None
    for mapping, sequence, offset in _LAYOUTS:
        yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
        out = _dump(yaml, doc, text)
        if out == text:
            return yaml, doc, text
        first = first if first is not None else out
    line = _first_difference(text, first or "")
    return (f"ruamel.yaml would reformat the file (line {line} first, e.g. a flow mapping over "
            "several lines, unusual indentation or spacing)")


def _dump(yaml: YAML, doc: Any, text: str) -> str:
    buf = io.StringIO()
    yaml.dump(doc, buf)
    out = buf.getvalue()
    # a missing newline at the end of the file is the one difference that is kept exactly
    return out[:-1] if not text.endswith("\n") and out.endswith("\n") else out


def _first_difference(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False), start=1):
        if x != y:
            return i
    return min(len(a.splitlines()), len(b.splitlines())) + 1


def _apply(doc: Any, d: Diagnostic, text: str) -> tuple[int, int, str, str] | str:
    """Apply `d.fix` to the tree; the text edit (line, col, old token, new token) it amounts to,
    or why it cannot be applied."""
    fix = d.fix
    assert fix is not None
    if not d.path:
        return "the fix names no place in the file"
    parent = doc
    for part in d.path[:-1]:
        parent = _child(parent, part)
        if parent is None:
            return "the place it names is not in the file"
    last = d.path[-1]
    if isinstance(parent, CommentedMap):
        key = next((k for k in parent if isinstance(k, str) and k == str(last)), None)
        if key is None:
            return "the place it names is not in the file"
        if getattr(parent, "merge", None):
            return "the mapping takes keys from a `<<:` merge"
        if fix.kind == "rename_key":
            if key != fix.old:
                return "the key is no longer there"
            if fix.new in parent:
                return f"a key `{fix.new}` exists already"
            line, col = parent.lc.key(key)
            token = _tokens(text, line, col, key, fix.old, fix.new)
            if isinstance(token, str):
                return token
            _rename(parent, key, _like(key, fix.new))
            return (line, col, *token)
        value = parent[key]
        line, col = parent.lc.value(key)
    elif isinstance(parent, CommentedSeq) and isinstance(last, int) and fix.kind == "replace_value":
        if not 0 <= last < len(parent):
            return "the place it names is not in the file"
        value = parent[last]
        line, col = parent.lc.item(last)
    else:
        return "the place it names is not in the file"
    if fix.kind != "replace_value" or not isinstance(value, str) or value != fix.old:
        return "the value is no longer there"
    token = _tokens(text, line, col, value, fix.old, fix.new)
    if isinstance(token, str):
        return token
    new = _like(value, fix.new)
    if isinstance(parent, CommentedMap):
        parent[key] = new
    else:
        parent[last] = new
    return (line, col, *token)


def _child(node: Any, part: PathPart) -> Any:
    if isinstance(node, CommentedMap):
        return next((v for k, v in node.items() if isinstance(k, str) and k == str(part)), None)
    if isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return None


def _tokens(text: str, line: int, col: int, node: Any, old: str,
            new: str) -> tuple[str, str] | str:
    """The source text of the scalar at (line, col) and its replacement in the same style."""
    lines = text.split("\n")
    rest = lines[line][col:] if line < len(lines) else ""
    if getattr(getattr(node, "anchor", None), "value", None):
        return "the value carries an `&anchor`"
    if isinstance(node, SingleQuotedScalarString):
        written, wanted = "'" + old.replace("'", "''") + "'", "'" + new.replace("'", "''") + "'"
    elif isinstance(node, DoubleQuotedScalarString):
        if any(c in old + new for c in '\\"'):
            return "the quoted text has escapes"
        written, wanted = f'"{old}"', f'"{new}"'
    elif type(node) in (str, PlainScalarString):
        written, wanted = old, new
    else:
        return "the value is written as a block (`|` or `>`)"
    if not rest.startswith(written):
        return "the value spans several lines or is written in an unusual way"
    return written, wanted


def _like(node: Any, new: str) -> Any:
    """`new` in the scalar style (quotes) of `node`."""
    return type(node)(new) if isinstance(node, SingleQuotedScalarString
                                         | DoubleQuotedScalarString) else new


def _rename(mapping: CommentedMap, old: Any, new: Any) -> None:
    """Rename a key in place: same position, same value, same comments."""
    position = list(mapping).index(old)
    value = mapping[old]
    comment = mapping.ca.items.pop(old, None)
    del mapping[old]
    mapping.insert(position, new, value)
    if comment is not None:
        mapping.ca.items[new] = comment


def _shift_comments(doc: Any, edits: list[tuple[int, int, str, str]]) -> None:
    """Move end-of-line comments right of an edited token by the change in its length: ruamel
    keeps a comment at its column, the author's text keeps it after the token."""
    shifts: dict[int, list[tuple[int, int]]] = {}
    for line, col, old, new in edits:
        shifts.setdefault(line, []).append((col, len(new) - len(old)))
    marks: dict[int, Any] = {}
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, CommentedMap | CommentedSeq):
            stack.extend(node.values() if isinstance(node, CommentedMap) else node)
            found = [node.ca.comment, list(node.ca.items.values()), node.ca.end]
            while found:
                item = found.pop()
                if isinstance(item, list | tuple):
                    found.extend(item)
                elif isinstance(item, CommentToken) and item.start_mark is not None:
                    marks[id(item.start_mark)] = item.start_mark
    for mark in marks.values():
        for col, delta in shifts.get(mark.line, ()):
            if mark.column > col:
                mark.column += delta


def _splice(text: str, edits: list[tuple[int, int, str, str]]) -> str:
    """`text` with each token replaced at its 0-based (line, col)."""
    lines = text.split("\n")
    for line, col, old, new in sorted(edits, reverse=True):  # right to left within a line
        lines[line] = lines[line][:col] + new + lines[line][col + len(old):]
    return "\n".join(lines)


def _write(path: Path, data: bytes) -> None:
    """Replace the file's content atomically, keeping its permissions."""
    mode = stat.S_IMODE(path.stat().st_mode)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


__all__ = ["FixOutcome", "FixReport", "apply_fixes", "fix_pack"]
