"""A directory an agent's file operations are confined to (the base of `Workspace`).

Every agent-supplied path is relative to the root. Paths are first normalised lexically (an
absolute path, a NUL byte, or a `..` that climbs above the root is refused outright), then
resolved on disk, following every symbolic link including linked parent directories; a path
whose resolution leaves the root is refused too. All refusals raise `ToolError` with a message
for the agent.

Agents are strangers: every walk of the tree visits at most `MAX_WALK_ENTRIES` entries and
`MAX_WALK_DEPTH` levels and stops at the caller's `deadline`.

Files are opened relative to a descriptor of the root, one component at a time, none of them
followed if it is a link (`O_NOFOLLOW`): the path checks above and the open cannot be split by
a process (a command-line agent, say) swapping a directory for a link out of the workspace —
the open then fails instead of reading or writing outside. Only regular files are read or
written (a FIFO would block the tool for good), and errors never show the host path of the
root, only workspace-relative paths. Files larger than `MAX_FILE_BYTES` can be neither read
nor written by the agent.
"""

from __future__ import annotations

import difflib
import errno
import os
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from .errors import ToolError

MAX_FILE_BYTES = 2 * 1024 * 1024
"""Largest file the agent may read or write (2 MB)."""
MAX_PATH_CHARS = 4096
MAX_WALK_ENTRIES = 20_000
"""Most directory entries one `list_files`, `glob` or `grep` call visits."""
MAX_WALK_DEPTH = 64
"""Deepest directory level a walk descends to."""


def remove_path(p: Path) -> None:
    if p.is_symlink() or not p.is_dir():
        p.unlink()
    else:
        shutil.rmtree(p)


def decode_text(data: bytes) -> str | None:
    """UTF-8 text, or None for bytes that are not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


class ConfinedRoot:
    """The root, the path checks, the walks and the confined reads and writes."""


    def __init__(self, root: Path | str, *, clear: bool = False, absent: bool = False) -> None:
        """`absent`: the caller knows `root` does not exist (a name of its own in a directory
        it made), so nothing asks the file system."""
        self._path = Path(root)
        self._root: Path | None = None
        self._read: set[str] = set()
        self._written: set[str] = set()
        # A directory that does not exist yet is made at first use, so a session that never
        # touches its workspace (no files, no file tools, no harness) costs no directory:
        # mkdir waits on the file system's journal while the store commits, 0.8 ms per
        # session of 1,000 one-call sessions (benchmarks/http_bench.py). Even the check
        # costs: lstat gives up the interpreter lock, and the event loop waits to get it back
        # from the store's writer thread (0.2-0.4 ms a session at 64 in flight, profiled).
        if not absent and os.path.lexists(self._path):
            _ = self.root
            if clear:
                self.clear()

    @property
    def root(self) -> Path:
        """The workspace directory (resolved), made on first use."""
        if self._root is None:
            self._path.mkdir(parents=True, exist_ok=True)
            self._root = self._path.resolve()
        return self._root

    # ------------------------------------------------------------------ confinement

    def clear(self) -> None:
        """Delete everything inside the root (never follows links out of it)."""
        if self._root is None:
            return
        for child in list(self.root.iterdir()):
            remove_path(child)

    def normalise(self, path: Any, *, allow_root: bool = False) -> str:
        """Check an agent-supplied path lexically and return it relative to the root, in POSIX
        form (`.` for the root itself, only with `allow_root`)."""
        if not isinstance(path, str):
            raise ToolError(f"a path must be a string, got {type(path).__name__}")
        if "\x00" in path:
            raise ToolError("the path contains a NUL byte")
        if len(path) > MAX_PATH_CHARS:
            raise ToolError(f"the path is too long ({len(path)} characters)")
        if path == "":
            if allow_root:
                return "."
            raise ToolError("the path is empty; give a path relative to the workspace root, "
                            "e.g. `notes/todo.md`")
        if path.startswith("/") or os.path.isabs(path):
            raise ToolError(f"`{path}` is an absolute path; paths are relative to the workspace "
                            "root (e.g. `notes/todo.md`, or `.` for the root)")
        parts: list[str] = []
        for part in PurePosixPath(path).parts:
            if part == "..":
                if not parts:
                    raise ToolError(f"`{path}` leaves the workspace; only paths inside it can be "
                                    "used")
                parts.pop()
            elif part != ".":
                parts.append(part)
        rel = "/".join(parts) or "."
        if rel == "." and not allow_root:
            raise ToolError(f"`{path}` is the workspace root, not a file")
        return rel

    def resolve(self, path: Any, *, allow_root: bool = False) -> tuple[str, Path]:
        """(normalised relative path, real path on disk) for an agent-supplied path, or
        `ToolError` if it is malformed or escapes the root, through `..` or any symbolic link."""
        rel = self.normalise(path, allow_root=allow_root)
        full = self.root if rel == "." else self.root / rel
        try:
            real = full.resolve()  # follows every existing link, linked parent dirs included
        except (OSError, RuntimeError):  # symlink loops: RuntimeError before 3.13
            # the exception text holds the host path of the root: never shown to the agent
            raise ToolError(f"cannot resolve `{path}`: a loop of symbolic links") from None
        if not real.is_relative_to(self.root):
            raise ToolError(f"`{path}` points outside the workspace (through a symbolic link); "
                            "only files inside the workspace can be used")
        return rel, real

    def _inside(self, p: Path) -> bool:
        try:
            return p.resolve().is_relative_to(self.root)
        except (OSError, RuntimeError):
            return False

    def _walk(self, start: Path, deadline: float | None = None,
              bound: WalkBound | None = None) -> Iterator[tuple[str, Path]]:
        """Files under `start` (a real directory inside the root), sorted, as (relative posix
        path, path). Linked directories are not descended; linked files count only when their
        target is a file inside the root."""
        for rel, p, is_dir in self._entries(start, deadline, bound):
            if not is_dir:
                yield rel, p

    def _entries(self, start: Path, deadline: float | None = None,
                 bound: WalkBound | None = None) -> Iterator[tuple[str, Path, bool]]:
        """Files and directories under `start`, depth first in name order, as (relative posix
        path, path, is a directory), within `bound` (which records a cut) and `deadline`."""
        bound = bound if bound is not None else WalkBound()

        def entries(d: Path) -> Iterator[os.DirEntry[str]]:
            try:
                with os.scandir(d) as it:
                    found = []
                    for e in it:
                        found.append(e)
                        if len(found) + bound.visited > MAX_WALK_ENTRIES:
                            bound.cut = True
                            break
            except OSError:
                found = []
            return iter(sorted(found, key=lambda e: e.name))

        stack: list[Iterator[os.DirEntry[str]]] = [entries(start)]
        while stack:
            entry = next(stack[-1], None)
            if entry is None:
                stack.pop()
                continue
            bound.visited += 1
            if bound.visited > MAX_WALK_ENTRIES:
                bound.cut = True
                return
            if deadline is not None and time.monotonic() > deadline:
                raise ToolError("the call ran out of time while walking the workspace; ask for "
                                "less (a narrower path or pattern)")
            p = Path(entry.path)
            try:
                if entry.is_symlink():
                    if not self._inside(p) or not p.is_file():
                        continue
                elif entry.is_dir(follow_symlinks=False):
                    yield p.relative_to(self.root).as_posix(), p, True
                    if len(stack) >= MAX_WALK_DEPTH:
                        bound.cut = True
                    else:
                        stack.append(entries(p))
                    continue
                elif not entry.is_file(follow_symlinks=False):
                    continue
            except OSError:
                continue
            yield p.relative_to(self.root).as_posix(), p, False

    def _missing(self, rel: str) -> ToolError:
        paths = [r for (r, _), _ in zip(self._walk(self.root), range(5000), strict=False)]
        close = difflib.get_close_matches(rel, paths, n=3, cutoff=0.6)
        hint = f" (did you mean {', '.join(f'`{c}`' for c in close)}?)" if close else \
            " (use list_files or glob to see what exists)"
        return ToolError(f"no file `{rel}` in the workspace{hint}")

    def _open_beneath(self, rel: str, real: Path, flags: int, *, make_dirs: bool = False,
                      mode: int = 0o644) -> int:
        """A descriptor for `real` (a resolved path inside the root), opened component by
        component from the root with no link followed; `make_dirs` creates missing parents."""
        parts = real.relative_to(self.root).parts
        if not parts:
            raise ToolError(f"`{rel}` is the workspace root, not a file")
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for part in parts[:-1]:
                try:
                    nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                                  | os.O_CLOEXEC, dir_fd=fd)
                except NotADirectoryError:
                    # a link where the check saw a directory reports ENOTDIR, not ELOOP
                    if stat.S_ISLNK(os.lstat(part, dir_fd=fd).st_mode):
                        raise OSError(errno.ELOOP, "link in path") from None
                    raise
                except FileNotFoundError:
                    if not make_dirs:
                        raise
                    os.mkdir(part, 0o755, dir_fd=fd)
                    nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                                  | os.O_CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = nxt
            return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                           mode, dir_fd=fd)
        except FileExistsError:
            raise ToolError(f"cannot write `{rel}`: part of its parent path is a file, not a "
                            "directory") from None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise ToolError(f"`{rel}` changed while the tool ran (a symbolic link appeared "
                                "in its path); only files inside the workspace can be used") \
                    from None
            if exc.errno == errno.ENOTDIR:
                raise ToolError(f"cannot use `{rel}`: part of its parent path is a file, not a "
                                "directory") from None
            raise
        finally:
            os.close(fd)

    def _read_real(self, rel: str, real: Path, limit: int = MAX_FILE_BYTES) -> bytes:
        """A regular file's bytes, opened safely; `ToolError` for anything else."""
        try:
            fd = self._open_beneath(rel, real, os.O_RDONLY)
        except FileNotFoundError:
            raise self._missing(rel) from None
        except OSError as exc:
            raise ToolError(f"cannot read `{rel}`: {exc.strerror or 'error'}") from None
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise ToolError(f"`{rel}` is a directory; use list_files to see what it holds")
            if not stat.S_ISREG(st.st_mode):
                raise ToolError(f"`{rel}` is not a regular file (a FIFO, socket or device) and "
                                "cannot be read")
            if st.st_size > limit:
                raise ToolError(f"`{rel}` is too large to read ({st.st_size} bytes; the limit "
                                f"is {limit} bytes)")
            chunks, total = [], 0
            while total <= limit:  # the file may be growing: stop one byte past the limit
                chunk = os.read(fd, min(1 << 20, limit + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        except OSError as exc:
            raise ToolError(f"cannot read `{rel}`: {exc.strerror or 'error'}") from None
        finally:
            os.close(fd)
        if total > limit:
            raise ToolError(f"`{rel}` is too large to read (over {limit} bytes)")
        return b"".join(chunks)

    def _read_bytes(self, rel: str, real: Path) -> bytes:
        if not os.path.lexists(real):
            raise self._missing(rel)
        return self._read_real(rel, real)

    def _read_text(self, rel: str, real: Path) -> str:
        data = self._read_bytes(rel, real)
        text = decode_text(data)
        if text is None:
            raise ToolError(f"`{rel}` is a binary file ({len(data)} bytes) and cannot be read "
                            "as text")
        return text

    def _write_bytes(self, rel: str, real: Path, data: bytes) -> bool:
        """Write (creating parent directories); True when the file is new."""
        existed = os.path.lexists(real)
        try:
            fd = self._open_beneath(rel, real, os.O_WRONLY | os.O_CREAT, make_dirs=True)
        except IsADirectoryError:
            raise ToolError(f"`{rel}` is a directory; give a file path") from None
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO nobody reads
                raise ToolError(f"`{rel}` is not a regular file (a FIFO, socket or device) "
                                "and cannot be written") from None
            raise ToolError(f"cannot write `{rel}`: {exc.strerror or 'error'}") from None
        with os.fdopen(fd, "wb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ToolError(f"`{rel}` is not a regular file (a FIFO, socket or device) and "
                                "cannot be written")
            try:
                # truncate only now: O_TRUNC at open would empty a file we then refuse
                os.ftruncate(fh.fileno(), 0)
                fh.write(data)
            except OSError as exc:
                raise ToolError(f"cannot write `{rel}`: {exc.strerror or 'error'}") from None
        return not existed

    # ------------------------------------------------------------------ built-in tools


class WalkBound:
    """How much of the tree one call has visited, and whether a limit cut the walk short."""

    def __init__(self) -> None:
        self.visited = 0
        self.cut = False
