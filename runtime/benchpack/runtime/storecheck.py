"""A store file's integrity: DuckDB's words for a damaged file, a file cut short, every data
block read. Split from `store` (which re-exports these names); the checks themselves are
`benchpack.specs.storefile`, shared with the reports (which never import the runtime)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchpack.specs.storefile import (
    DAMAGED_HINT,
    damage_reason,
    damaged_message,
    verify_once,
)
from benchpack.specs.storefile import check_complete as _check_complete

from .errors import EnvironmentProblem, UsageError

__all__ = [
    "DAMAGED_HINT",
    "StoreDamagedError",
    "StoreOpenError",
    "check_complete",
    "damage_reason",
    "damaged",
    "verify_blocks",
    "writer_failure",
]


class StoreOpenError(UsageError):
    """The store file cannot be opened, or it is not a benchpack store (a user error: the CLI
    reports it as one)."""


class StoreDamagedError(StoreOpenError):
    """The store file is cut short or corrupted; nothing more is read from or written to it."""




def damaged(path: str | Path, why: str) -> StoreDamagedError:
    return StoreDamagedError(damaged_message(path, why))


def check_complete(con: Any, path: str | Path) -> None:
    """A file cut short (see `benchpack.specs.storefile.check_complete`) is damaged."""
    _check_complete(con, path, damaged)


def verify_blocks(con: Any, path: str | Path) -> None:
    """Every data block read and its checksum checked: before `--resume` adds to a store whose
    rows it would keep. Once per state of the file (`verify_once`)."""
    try:
        verify_once(con, path)
    except Exception as exc:
        why = damage_reason(exc)
        if why is None:
            raise
        raise damaged(path, why) from None


def writer_failure(path: str | Path, error: BaseException | None) -> Exception:
    """The store writer thread's failure, as the user error it is when the file is damaged, or
    the environment problem when the disk is full or gone; anything else is a bug."""
    why = damage_reason(error)
    if why is not None:
        return damaged(path, why)
    text = str(error)
    if isinstance(error, OSError) or any(w in text for w in (
            "No space left", "Disk quota", "Read-only file system", "Input/output error")):
        return EnvironmentProblem(f"{path}: the store cannot be written "
                                  f"({text.splitlines()[0] if text else error!r}); "
                                  "what committed is kept (hint: free space, then "
                                  "--resume the run)")
    return RuntimeError(f"store writer failed: {error}")
