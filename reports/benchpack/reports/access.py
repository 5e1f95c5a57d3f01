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
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchpack.specs.storefile import DAMAGED_HINT as DAMAGED_HINT  # re-exported for readers
from benchpack.specs.storefile import check_complete as _check_complete
from benchpack.specs.storefile import damage_reason, damaged_message, read_every_block
from benchpack.specs.storefile import is_lock as _is_lock

from .views import check_schema, install_views

READ_REQUEST_SUFFIX = ".read-request"


class StoreError(Exception):
    """The store cannot be read (missing, locked for too long, not a benchpack store)."""


def damaged(path: str | Path, why: str) -> StoreError:
    return StoreError(damaged_message(path, why))


def check_complete(con: Any, path: str | Path) -> None:
    """A file cut short (see `benchpack.specs.storefile.check_complete`) is damaged."""
    _check_complete(con, path, damaged)


def verify_blocks(con: Any, path: str | Path) -> None:
    """Every data block read and its checksum checked: a report must not leave out rows it
    could not read (DuckDB's error propagates; `open_store` says the store is damaged)."""
    read_every_block(con)


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
def open_store(db: str | Path, *, wait_s: float = 30.0, views: bool | tuple[str, ...] = True,
               verify: bool = False) -> Iterator[Any]:
    """A read-only connection to `db` with the report views installed (TEMP views); with
    `views=False` only the store's schema version is checked (a query that names no view);
    with a tuple of names, only those views (a query that reads those alone).
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
            if views is True:
                install_views(con)
            elif views:
                install_views(con, only=views)
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
