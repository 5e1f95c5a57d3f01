"""Reading the files a pack names, and checking the paths it writes.

Every read is bounded (size checked with `stat` before reading, at most limit+1 bytes read,
regular files only) and every failure becomes a diagnostic, never an exception. Kept apart from
the YAML loading (`loader.py`) because the builder (`core.py`: data-file size limit, path
checks, near-name hints), `fix.py` and `http.py` use these limits and path checks on files
that are not YAML.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .diagnostics import Diagnostics, Fix, suggest_fix

MAX_FILE_BYTES = 10 * 1024 * 1024
"""YAML files larger than this are refused before reading (split them with `include:`)."""
MAX_DATA_BYTES = 64 * 1024 * 1024
"""Limit for other files a pack reads (fixtures, workspace sources, prompt templates)."""


def read_text(path: Path, shown: str, diags: Diagnostics, *, yaml_file: bool) -> tuple[bytes, str] | None:
    """Read a file as UTF-8 text, reporting problems instead of raising."""
    raw = read_bytes(path, shown, diags, MAX_FILE_BYTES if yaml_file else MAX_DATA_BYTES)
    if raw is None:
        return None
    if yaml_file and b"\x00" in raw:  # before decoding: binary files fail here, clearly
        line, col = offset_position(raw, raw.index(b"\x00"))
        diags.error("E003", "file contains NUL bytes; it looks binary", shown,
                    hint="pack files must be UTF-8 text", line=line, col=col)
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, col = offset_position(raw, exc.start)
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


def offset_position(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters, as editors count) of a byte offset."""
    start = raw.rfind(b"\n", 0, offset) + 1
    col = len(raw[start:offset].decode("utf-8", errors="replace")) + 1
    if raw.startswith(b"\xef\xbb\xbf") and start == 0:
        col -= 1  # the byte-order mark is invisible in editors
    return raw.count(b"\n", 0, offset) + 1, col


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
