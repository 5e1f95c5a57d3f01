"""The episode workspace: a directory the agent's file tools work in, confined to its root
(`confined.ConfinedRoot`: the path checks, walks, and reads and writes that cannot leave it).

The built-in file tools are methods here and return JSON-serialisable dicts:

- `read_file(path, offset=0, limit=None)` returns the file's text **plain** (no line-number
  prefixes, so `edit_file` can be given exact text copied from it) with `start_line`,
  `end_line` (1-based, inclusive) and `total_lines`. `offset` is the number of lines to skip,
  `limit` the number of lines to return. A binary file gives what `binary.describe_binary`
  makes of it (a zip's listing, a PDF's text, or base64 with its media type).
- `write_file`, `edit_file`, `list_files` (recursive list of files), `glob`, `grep` (regex,
  line by line, capped).

Glob patterns become one RE2 expression matched against each visited path (pathlib's glob
backtracks per `**`: five of them over a 40-level tree took 55 s), and grep patterns are RE2
(`benchpack.specs.regex`: linear time, so `(a+)+$` cannot stall a run; backreferences and
lookaround are refused).

Reads and writes are tracked for the intent-tracking judge (`take_io`).
"""

from __future__ import annotations

import base64
import binascii
import os
import time
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from benchpack.specs.plan import PlanFile
from benchpack.specs.regex import HINT as REGEX_HINT
from benchpack.specs.regex import RegexError, compile_regex

from .binary import describe_binary, sniff
from .confined import (
    MAX_FILE_BYTES,
    ConfinedRoot,
    WalkBound,
    decode_text,
)
from .errors import ToolError
from .globs import glob_match, glob_regex

MAX_LISTED = 1000
"""Most paths `list_files` and `glob` return."""
MAX_GREP_MATCHES = 200
"""Most matching lines `grep` returns."""
MAX_GREP_LINE = 300
"""Matching lines are cut to this many characters."""
BASE64_PREFIX = "base64:"
"""Marks a base64-encoded (binary) file in `snapshot()` and `files()`."""


def _int_arg(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ToolError(f"`{name}` must be an integer ≥ {minimum}, got {value!r}")
    return value


def _str_arg(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ToolError(f"`{name}` must be a string, got {type(value).__name__}")
    return value


class Workspace(ConfinedRoot):
    """A per-episode directory that persists across the episode's sessions."""

    def read_file(self, path: Any, offset: Any = 0, limit: Any = None) -> dict[str, Any]:
        """The file's text, plain (no line numbers). `offset`: lines to skip; `limit`: most
        lines to return (all when None)."""
        rel, real = self.resolve(path)
        offset = _int_arg(offset if offset is not None else 0, "offset", 0)
        if limit is not None:
            limit = _int_arg(limit, "limit", 1)
        data = self._read_bytes(rel, real)
        text = decode_text(data) if sniff(data) is None else None
        if text is None:  # a zip's listing, a PDF's text, or base64 (`binary`)
            self._read.add(rel)
            return {"path": rel, **describe_binary(data, rel)}
        lines = text.splitlines(keepends=True)
        total = len(lines)
        if offset and offset >= total:
            raise ToolError(f"offset {offset} is past the end of `{rel}` ({total} lines)")
        chunk = lines[offset:offset + limit] if limit is not None else lines[offset:]
        self._read.add(rel)
        return {"path": rel, "content": "".join(chunk), "start_line": offset + 1,
                "end_line": offset + len(chunk), "total_lines": total}

    def write_file(self, path: Any, content: Any) -> dict[str, Any]:
        """Create or overwrite a text file (parent directories are created)."""
        text = _str_arg(content, "content")
        data = text.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise ToolError(f"content is too large ({len(data)} bytes; the limit is "
                            f"{MAX_FILE_BYTES} bytes)")
        rel, real = self.resolve(path)
        created = self._write_bytes(rel, real, data)
        self._written.add(rel)
        return {"path": rel, "bytes": len(data), "created": created}

    def edit_file(self, path: Any, old: Any, new: Any, count: Any = 1) -> dict[str, Any]:
        """Replace exact text. `count` is how many occurrences of `old` you expect (the edit
        fails unless there are exactly that many); `count=0` replaces every occurrence."""
        old_s = _str_arg(old, "old")
        new_s = _str_arg(new, "new")
        n_expected = _int_arg(count if count is not None else 1, "count", 0)
        if old_s == "":
            raise ToolError("`old` is empty; give the exact text to replace (use write_file to "
                            "create a file)")
        rel, real = self.resolve(path)
        text = self._read_text(rel, real)
        found = text.count(old_s)
        if found == 0:
            raise ToolError(f"`old` text was not found in `{rel}`; read the file and copy the "
                            "exact text to replace (whitespace and line breaks matter)")
        if n_expected == 1 and found > 1:
            raise ToolError(f"`old` text occurs {found} times in `{rel}`; include more "
                            f"surrounding text to make it unique, or pass count={found} to "
                            "replace every occurrence")
        if n_expected not in (0, found):
            raise ToolError(f"`old` text occurs {found} times in `{rel}`, not {n_expected}; "
                            f"pass count={found} (or 0) to replace them all")
        data = text.replace(old_s, new_s).encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise ToolError(f"the edited file would be too large ({len(data)} bytes; the limit "
                            f"is {MAX_FILE_BYTES} bytes)")
        self._write_bytes(rel, real, data)
        self._written.add(rel)
        return {"path": rel, "replaced": found}

    def list_files(self, path: Any = ".", *, deadline: float | None = None) -> dict[str, Any]:
        """Every file under `path` (recursive), relative to the workspace root."""
        rel, real = self.resolve("." if path is None else path, allow_root=True)
        if not real.exists():
            raise self._missing(rel)
        if real.is_file():
            return {"path": rel, "files": [rel], "truncated": False}
        files: list[str] = []
        bound = WalkBound()
        truncated = False
        for frel, _ in self._walk(real, deadline, bound):
            if len(files) >= MAX_LISTED:
                truncated = True
                break
            files.append(frel)
        return {"path": rel, "files": files, "truncated": truncated or bound.cut}

    def glob(self, pattern: Any, *, deadline: float | None = None) -> dict[str, Any]:
        """Paths matching a glob pattern relative to the root (`**` matches any depth);
        directories end with `/`."""
        pat = _str_arg(pattern, "pattern")
        if not pat or "\x00" in pat:
            raise ToolError("give a glob pattern such as `**/*.md`")
        if len(pat) > 1000:
            raise ToolError("the glob pattern is too long (1000 characters at most)")
        if pat.startswith("/") or os.path.isabs(pat):
            raise ToolError(f"`{pat}` is absolute; patterns are relative to the workspace root")
        if ".." in PurePosixPath(pat).parts:
            raise ToolError(f"`{pat}` leaves the workspace; `..` is not allowed in patterns")
        rx = glob_regex(pat)
        out: list[str] = []
        bound = WalkBound()
        truncated = False
        for rel, _, is_dir in self._entries(self.root, deadline, bound):
            if rx.search(rel) is None:
                continue
            if len(out) >= MAX_LISTED:
                truncated = True
                break
            out.append(rel + "/" if is_dir else rel)
        return {"pattern": pat, "matches": sorted(out), "truncated": truncated or bound.cut}

    def grep(self, pattern: Any, path: Any = ".", glob: Any = None, *,
             deadline: float | None = None) -> dict[str, Any]:
        """Lines matching a regular expression (RE2 syntax) in text files under `path`,
        optionally only files whose path (or name, for a pattern without `/`) matches `glob`."""
        pat = _str_arg(pattern, "pattern")
        if len(pat) > 1000:
            raise ToolError("the pattern is too long (1000 characters at most)")
        try:
            rx = compile_regex(pat)
        except RegexError as exc:
            raise ToolError(f"{exc} ({REGEX_HINT})") from None
        name_glob = None if glob is None else _str_arg(glob, "glob")
        rel, real = self.resolve("." if path is None else path, allow_root=True)
        if not real.exists():
            raise self._missing(rel)
        bound = WalkBound()
        candidates: Iterable[tuple[str, Path]] = [(rel, real)] if real.is_file() else \
            self._walk(real, deadline, bound)
        matches: list[dict[str, Any]] = []
        truncated = False
        searched = 0
        for frel, fp in candidates:
            if name_glob and not glob_match(frel, name_glob):
                continue
            try:
                text = decode_text(self._read_real(frel, fp.resolve()))
            except (ToolError, OSError, RuntimeError, ValueError):
                continue
            if text is None:
                continue
            searched += 1
            hit = False
            for no, line in enumerate(text.splitlines(), 1):
                if rx.search(line):
                    if len(matches) >= MAX_GREP_MATCHES:
                        truncated = True
                        break
                    hit = True
                    matches.append({"path": frel, "line": no, "text": line[:MAX_GREP_LINE]})
            if hit:
                self._read.add(frel)
            if truncated:
                break
            if deadline is not None and time.monotonic() > deadline:
                raise ToolError("the call ran out of time; ask for less (a narrower path, "
                                "glob or pattern)")
        return {"pattern": pat, "matches": matches, "truncated": truncated or bound.cut,
                "files_searched": searched}

    # ------------------------------------------------------------------ tracking and state

    def take_io(self) -> tuple[set[str], set[str]]:
        """(files read, files written) by the tools since the last call; resets both."""
        read, written = self._read, self._written
        self._read, self._written = set(), set()
        return read, written

    def materialise(self, files: Iterable[PlanFile]) -> None:
        """Write plan files (utf-8 or base64) into the workspace, overwriting. Not tracked as
        agent I/O."""
        for f in files:
            rel, real = self.resolve(f.path)
            if f.encoding == "base64":
                data = base64.b64decode(f.content)
            else:
                data = f.content.encode("utf-8")
            self._write_bytes(rel, real, data)

    def read_text(self, path: str) -> str | None:
        """A file's text for graders and judges (None if missing, binary or outside); not
        tracked as agent I/O."""
        try:
            rel, real = self.resolve(path)
            return self._read_text(rel, real)
        except ToolError:
            return None

    def _contents(self, exact: bool) -> dict[str, str]:
        out: dict[str, str] = {}
        if self._root is None:  # never made: nothing was ever written
            return out
        for rel, p in self._walk(self.root):
            try:
                # graders see every file, however large (the agent's 2 MB limit is not theirs)
                data = self._read_real(rel, p.resolve(), limit=1 << 40)
            except (ToolError, OSError, RuntimeError, ValueError):
                continue
            text = decode_text(data)
            if text is None or (exact and text.startswith(BASE64_PREFIX)):
                out[rel] = BASE64_PREFIX + base64.b64encode(data).decode("ascii")
            else:
                out[rel] = text
        return out

    def files(self) -> dict[str, str]:
        """Final contents for graders: path → text (`base64:`-prefixed for binary files)."""
        return self._contents(exact=False)

    def snapshot(self) -> dict[str, str]:
        """Path → text, `base64:`-prefixed for binary files (and for text files that happen
        to start with `base64:`, so `restore` is exact). JSON-serialisable."""
        return self._contents(exact=True)

    def restore(self, snapshot: dict[str, str]) -> None:
        """Replace the workspace's contents with a `snapshot()`; resets I/O tracking."""
        self.clear()
        for path, content in snapshot.items():
            rel, real = self.resolve(path)
            if content.startswith(BASE64_PREFIX):
                try:
                    data = base64.b64decode(content[len(BASE64_PREFIX):], validate=True)
                except (binascii.Error, ValueError):
                    data = content.encode("utf-8")
            else:
                data = content.encode("utf-8")
            self._write_bytes(rel, real, data)
        self._read, self._written = set(), set()


def snapshot_files(snapshot: dict[str, str]) -> dict[str, str]:
    """What `Workspace.files()` returned for the workspace a `snapshot()` was taken of: a
    text file that only looked like base64 comes back as its text."""
    out = {}
    for path, content in snapshot.items():
        if content.startswith(BASE64_PREFIX):
            try:
                text = decode_text(base64.b64decode(content[len(BASE64_PREFIX):], validate=True))
            except (binascii.Error, ValueError):
                text = None
            if text is not None and text.startswith(BASE64_PREFIX):
                content = text
        out[path] = content
    return out


__all__ = ["BASE64_PREFIX", "MAX_FILE_BYTES", "MAX_GREP_LINE", "MAX_GREP_MATCHES", "MAX_LISTED",
           "Workspace", "snapshot_files"]
