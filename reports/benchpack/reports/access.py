"""Opening a run store for reading, and choosing the runs a report covers.

DuckDB lets one process write a database file and nobody else open it meanwhile, even read-only.
While `bench run` writes a store, readers ask it to step aside: they create
`<store>.read-request` and retry; the run's writer checks for that file after each commit,
closes its connection until the file is gone (or a few seconds pass), then carries on. So
`bench report` / `bench query` work during a run, waiting at most about one session commit.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .views import check_schema, install_views

READ_REQUEST_SUFFIX = ".read-request"


class StoreError(Exception):
    """The store cannot be read (missing, locked for too long, not a benchpack store)."""


DAMAGED_HINT = "restore it from a copy, or start a new store with --db"
_DAMAGE_WORDS = ("corrupt", "checksum", "could not read enough bytes", "serializ",
                 "invalidated", "internal error", "fatal error")
_HEADER_BYTES = 3 * 4096
"""DuckDB's main header and its two database headers, before the first block."""


def damage_reason(exc: BaseException | None) -> str | None:
    """DuckDB's words for a damaged file, from `exc` or the exception it came from; None for
    any other error. A copy of `benchpack.runtime.store.damage_reason` (reports never import the
    runtime; a test checks both agree)."""
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


def damaged(path: str | Path, why: str) -> StoreError:
    return StoreError(f"{path}: the store is damaged ({why}) (hint: {DAMAGED_HINT})")


def check_complete(con: Any, path: str | Path) -> None:
    """A file cut short at a block boundary still opens, and answers every query that reads no
    lost block — with rows missing. DuckDB writes whole blocks: refuse a file that ends inside
    one, or before a block holding table data. (Free blocks at the end may be cut off by DuckDB
    itself: the catalog's block count alone would refuse sound stores.)"""
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


def verify_blocks(con: Any, path: str | Path) -> None:
    """Read every row of every table, so DuckDB checks every data block's checksum (~0.15 s
    per 200 MB): a report must not leave out rows it could not read."""
    tables = [str(r[0]) for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE NOT internal").fetchall()]
    for table in tables:
        con.execute(f'SELECT sum(hash(COLUMNS(*))) FROM "{table}"').fetchall()


def _is_lock(text: str) -> bool:
    """DuckDB's lock conflict; not "block" (as in a corrupt block's message)."""
    return re.search(r"\block\b", text.lower()) is not None


def read_request_path(db: str | Path) -> Path:
    return Path(f"{db}{READ_REQUEST_SUFFIX}")


def existing_store(db: str | Path) -> Path:
    """`db` as a path, or a `StoreError` when there is no store file there."""
    path = Path(db)
    if path.is_dir():
        raise StoreError(f"{path}: is a directory; --db takes the store's DuckDB file")
    if not path.exists():
        raise StoreError(f"{path}: no such store (run `bench run … --db {path}` first)")
    return path


@contextlib.contextmanager
def open_store(db: str | Path, *, wait_s: float = 30.0, views: bool = True,
               verify: bool = False) -> Iterator[Any]:
    """A read-only connection to `db` with the report views installed (TEMP views); with
    `views=False` only the store's schema version is checked (a query that names no view).
    A damaged file (cut short, or a checksum failing on any read made in the `with` block, or
    on any data block with `verify`) raises `damaged`."""
    import duckdb

    path = existing_store(db)
    request = read_request_path(path)
    deadline = time.monotonic() + wait_s
    con = None
    asked = False
    delay = 0.02
    try:
        while con is None:
            try:
                con = duckdb.connect(str(path), read_only=True)
            except duckdb.Error as exc:
                why = damage_reason(exc)
                if why is not None:
                    raise damaged(path, why) from None
                if not isinstance(exc, duckdb.IOException) or not _is_lock(str(exc)):
                    raise StoreError(f"{path}: cannot open: {exc}") from None
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"{path} is being written by a running `bench run` that did not let go "
                        f"within {wait_s:.0f} s; try again, or pass a longer --wait") from None
                if not asked:
                    request.write_text(str(os.getpid()), encoding="utf-8")
                    asked = True
                time.sleep(delay)
                delay = min(0.25, delay * 1.5)
    finally:
        if asked:
            with contextlib.suppress(OSError):
                request.unlink()
    try:
        try:
            check_complete(con, path)
            if verify:
                verify_blocks(con, path)
            if views:
                install_views(con)
            else:
                check_schema(con)
        except StoreError:
            raise
        except Exception as exc:
            why = damage_reason(exc)
            raise (damaged(path, why) if why else StoreError(f"{path}: {exc}")) from None
        try:
            yield con
        except Exception as exc:  # a read in the caller's block met a damaged block
            why = damage_reason(exc)
            if why is None:
                raise
            raise damaged(path, why) from None
    finally:
        con.close()


def select_runs(con: Any, patterns: list[str] | tuple[str, ...]) -> list[str]:
    """Run ids matching `patterns` (exact ids or globs; `all` for every run), oldest first.
    With no pattern: the most recent run."""
    rows = con.execute("SELECT run_id FROM runs ORDER BY created_at, run_id").fetchall()
    ids = [str(r[0]) for r in rows]
    if not ids:
        raise StoreError("the store has no runs yet")
    if not patterns:
        return [ids[-1]]
    if "all" in patterns:
        return ids
    chosen = [i for i in ids if any(i == p or fnmatch.fnmatchcase(i, p) for p in patterns)]
    missing = [p for p in patterns if not any(i == p or fnmatch.fnmatchcase(i, p) for i in ids)]
    if missing:
        known = ", ".join(ids[-5:])
        raise StoreError(f"no run matches {', '.join(missing)} (latest runs: {known})")
    return chosen
