"""A store file's integrity, shared by the runtime (which writes stores) and the reports (which
read them; they never import the runtime): DuckDB's words for a damaged file, a file cut short,
every data block read. Each side wraps these with its own error type."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

DAMAGED_HINT = "restore it from a copy, or start a new store with --db"
_DAMAGE_WORDS = ("corrupt", "checksum", "could not read enough bytes", "serializ",
                 "invalidated", "internal error", "fatal error")
_HEADER_BYTES = 3 * 4096
"""DuckDB's main header and its two database headers, before the first block."""


def damage_reason(exc: BaseException | None) -> str | None:
    """DuckDB's words for a damaged file (or a damaged file's internal assertion), from `exc` or
    the exception it was raised from; None for any other error (a lock, a bad query…)."""
    import duckdb

    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, duckdb.Error):
            text = str(exc).strip()
            first = text.splitlines()[0] if text else type(exc).__name__
            if isinstance(exc, duckdb.InternalException | duckdb.SerializationException |
                          duckdb.FatalException) or any(w in first.lower()
                                                         for w in _DAMAGE_WORDS):
                return first
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def damaged_message(path: str | Path, why: str) -> str:
    return f"{path}: the store is damaged ({why}) (hint: {DAMAGED_HINT})"


def check_complete(con: Any, path: str | Path,
                   damaged: Callable[[str | Path, str], Exception]) -> None:
    """A file cut short at a block boundary still opens, and answers every query that reads no
    lost block — with rows missing. DuckDB writes whole blocks: refuse a file that ends inside
    one, or before a block holding table data (raising `damaged(path, why)`). (Free blocks at
    the end may be cut off by DuckDB itself: the catalog's block count alone would refuse sound
    stores.)"""
    row = con.execute("PRAGMA database_size").fetchone()
    block_size, blocks = int(row[2]), int(row[3])
    size = Path(path).stat().st_size
    if blocks == 0 or size >= _HEADER_BYTES + block_size * blocks:
        return
    if size < _HEADER_BYTES or (size - _HEADER_BYTES) % block_size:
        raise damaged(path, f"the file ends inside a block, at byte {size:,}: it was cut short")
    last = -1
    try:  # a lost block of row-group pointers is met here
        for (table,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall():
            found = con.execute("SELECT max(block_id) FROM pragma_storage_info(?)",
                                [str(table)]).fetchone()[0]
            last = max(last, -1 if found is None else int(found))
    except Exception as exc:
        why = damage_reason(exc)
        if why is None:
            raise
        raise damaged(path, why) from None
    need = _HEADER_BYTES + block_size * (last + 1)
    if size < need:
        raise damaged(path, f"the file has {size:,} bytes, its table data needs {need:,}: "
                            "it was cut short")


def read_every_block(con: Any) -> None:
    """Read every row of every table, so DuckDB checks every data block's checksum (~0.15 s
    per 200 MB); DuckDB's error for a damaged block propagates."""
    tables = [str(r[0]) for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE NOT internal").fetchall()]
    for table in tables:
        # bit_xor, not sum: the same blocks read, without sum's 128-bit accumulator (half the
        # CPU on a 1 M-turn store)
        con.execute(f'SELECT bit_xor(hash(COLUMNS(*))) FROM "{table}"').fetchall()


def is_lock(text: str) -> bool:
    """DuckDB's lock conflict; not "block" (as in a corrupt block's message)."""
    return re.search(r"\block\b", text.lower()) is not None


# --------------------------------------------------------------------------- who may open it

WRITE_REQUEST_SUFFIX = ".write-request"
"""`<store>.write-request`: a writer (`bench run`, `--resume`, `rejudge`…) that found the file
held by readers (`bench view` pages, `bench query`) asks them to let go: readers do not open
the file while it exists, so readers that come and go all the time (a viewer polled every
second) cannot keep a run from starting. The writer removes it once it has the file. The
other direction is `<store>.read-request` (a reader asking a running writer to step aside)."""
WRITE_REQUEST_STALE_S = 120.0
"""A request older than this is from a writer that died waiting: ignored."""


def write_request_path(db: str | Path) -> Path:
    return Path(f"{db}{WRITE_REQUEST_SUFFIX}")


def writer_waiting(db: str | Path) -> bool:
    """Whether a live writer waits for the file (its request exists, is recent, and its
    process runs): a reader then waits before opening it."""
    import os
    import time

    path = write_request_path(db)
    try:
        age = time.time() - path.stat().st_mtime
        pid = int(path.read_text(encoding="utf-8").strip() or "0")
    except (OSError, ValueError):
        return False
    if age > WRITE_REQUEST_STALE_S or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True
