"""Temporary directories a killed run does not leave behind.

A run makes directories in the system's temporary directory: its own work directory, one per
harness opening and python toolset worker, sockets of HTTP services, a Ray worker's, and a
scratch directory per sandboxed call (python graders and tools, the shell) and per replayed
state check (`temporary`). Every
`finally` removes them, but a SIGKILL (the OOM killer, a CI job's hard timeout, `kill -9`) runs
none: each killed run left them, with whatever the sessions wrote, for good.

So each such directory is named after the process that made it — its pid, that process's start
time, and a tag of this boot and PID namespace — and every `bench run` (and Ray worker) first
removes those whose maker is gone: no process with that pid, or one started at another time
(the pid was reused). A directory of another boot, another PID namespace (a container sharing
/tmp), another user, or without the name is never touched. Without /proc (not Linux) names
carry no owner and nothing is swept.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

_NAME = re.compile(r"^(?:benchpack-|bp-svc-)(?:[a-z0-9]+-)*o([0-9a-z]+)\.([0-9a-z]+)\.([0-9a-f]{6})-")
"""A swept name: one of our prefixes, then `o<pid>.<start>.<machine>-` (base 36, hex)."""

_owner: tuple[int, str | None] | None = None


def temp_dir(prefix: str, dir: str | Path | None = None) -> Path:
    """`tempfile.mkdtemp(prefix=…)` with this process's owner tag after `prefix`."""
    tag = owner_tag()
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{tag}-" if tag else prefix, dir=dir))


@contextlib.contextmanager
def temporary(prefix: str, dir: str | Path | None = None) -> Iterator[Path]:
    """`tempfile.TemporaryDirectory(prefix=…)` named with this process's owner tag: removed
    on the way out, and by the next run's `sweep` when a SIGKILL skipped the way out. For
    the scratch directory of one call (a sandboxed grader, the shell, a replayed state
    check). `prefix` must start with `benchpack-` to be swept."""
    path = temp_dir(prefix, dir)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.asynccontextmanager
async def atemporary(prefix: str, dir: str | Path | None = None) -> AsyncIterator[Path]:
    """`temporary` for a coroutine: the directory is removed in a thread, which the way out
    awaits, so the event loop runs other sessions meanwhile. Removing a state check's replay
    directory at the end of each τ² session held the loop (issue 31: `rmdir` waits on the
    file system's journal, behind the store's commits), and a tool call of another session
    waited with it."""
    import asyncio

    path = temp_dir(prefix, dir)
    try:
        yield path
    finally:
        await asyncio.to_thread(shutil.rmtree, path, True)


def owner_tag() -> str | None:
    """`o<pid>.<start time>.<boot and PID namespace>` of this process, None without /proc.
    Computed again in a forked child (another pid)."""
    global _owner
    pid = os.getpid()
    if _owner is None or _owner[0] != pid:
        start, where = _start_time(pid), _machine()
        _owner = (pid, None if start is None or where is None
                  else f"o{_base36(pid)}.{_base36(start)}.{where}")
    return _owner[1]


def sweep(root: str | Path | None = None) -> list[Path]:
    """Remove the directories in `root` (default: the temporary directory) whose maker has
    ended; returns them. Errors are skipped: sweeping is housekeeping, never a reason to
    stop a run."""
    where = _machine()
    if where is None:
        return []
    base = Path(root) if root is not None else Path(tempfile.gettempdir())
    uid = os.getuid()
    removed: list[Path] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        match = _NAME.match(entry.name)
        if match is None or match.group(3) != where:
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(
                    follow_symlinks=False).st_uid != uid:
                continue
            pid, start = int(match.group(1), 36), int(match.group(2), 36)
        except (OSError, ValueError):
            continue
        if _alive(pid, start):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.lexists(entry.path):
            removed.append(Path(entry.path))
    return removed


def _alive(pid: int, start: int) -> bool:
    status = _status(pid)
    if status is None:
        return False
    state, started = status
    return state != b"Z" and started in (start, None)  # unreadable: keep it


def _start_time(pid: int) -> int | None:
    status = _status(pid)
    return None if status is None else status[1]


def _status(pid: int) -> tuple[bytes, int | None] | None:
    """(state, start time) of `pid` from /proc (fields 3 and 22 of proc(5)); None when there is
    no such process; a start time of None when the line cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after the last ')'
    fields = stat[stat.rfind(b")") + 2:].split()
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return (fields[0] if fields else b"?"), None


def _machine() -> str | None:
    """This boot and PID namespace, hashed: pids and start times compare only within them."""
    with contextlib.suppress(OSError):
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
        return hashlib.sha1(f"{boot}:{namespace}".encode()).hexdigest()[:6]
    return None


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out
