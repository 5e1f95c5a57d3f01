"""Opening a run store for reading, and choosing the runs a report covers.

DuckDB lets one process write a database file and nobody else open it meanwhile, even read-only.
While `bench run` writes a store, readers ask it to step aside: they create
`<store>.read-request` and retry; the run's writer checks for that file after each commit,
closes its connection until the file is gone (or a few seconds pass), then carries on. So
`bench report` / `bench query` work during a run, waiting at most about one session commit.
The other way round, a writer that finds readers holding the file (a `bench run` starting while
`bench view` serves pages) creates `<store>.write-request`, and readers do not open the file
while it exists: readers come and go, and would otherwise keep it out.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchpack.specs.storefile import DAMAGED_HINT as DAMAGED_HINT  # re-exported for readers
from benchpack.specs.storefile import check_complete as _check_complete
from benchpack.specs.storefile import (
    damage_reason,
    damaged_message,
    duckdb_core,
    verify_once,
    writer_waiting,
)
from benchpack.specs.storefile import is_lock as _is_lock

from .views import LazyViews, ViewError, check_schema, install_views

READ_REQUEST_SUFFIX = ".read-request"

LOCKED: dict[str, Any] = {"enable_external_access": False, "lock_configuration": True}
"""The settings user SQL runs with: a read-only store does not make the file system read-only
(`COPY … TO`, `ATTACH`, `read_csv`, extensions reach any file the user can), and locked, no
query can turn that back on. Given when the connection opens, not set after: DuckDB shares one
database instance between a process's connections to a file, so a `SET` on one request's
connection locked the next one's `SET` out (every other viewer request answered 500)."""


class StoreError(Exception):
    """The store cannot be read (missing, locked for too long, not a benchpack store)."""


def damaged(path: str | Path, why: str) -> StoreError:
    return StoreError(damaged_message(path, why))


def check_complete(con: Any, path: str | Path) -> None:
    """A file cut short (see `benchpack.specs.storefile.check_complete`) is damaged."""
    _check_complete(con, path, damaged)


def verify_blocks(con: Any, path: str | Path) -> None:
    """Every data block read and its checksum checked: a report must not leave out rows it
    could not read (DuckDB's error propagates; `open_store` says the store is damaged). Once
    per state of the file (`verify_once`)."""
    verify_once(con, path)


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
               verify: bool = False, config: dict[str, Any] | None = None) -> Iterator[Any]:
    """A read-only connection to `db` with the report views (TEMP views, each created when a
    statement first names it: `views.LazyViews`); with
    `views=False` only the store's schema version is checked (a query that names no view);
    with a tuple of names, only those views (a query that reads those alone). `config`:
    DuckDB settings fixed when the connection opens (`LOCKED`: what `bench query` and
    `bench view` read with).
    A damaged file (cut short, or a checksum failing on any read made in the `with` block, or
    on any data block with `verify`) raises `damaged`."""
    path = existing_store(db)
    con = _connect(path, wait_s, config)
    try:
        with _prepared(con, path, views, verify) as ready:
            yield ready
    finally:
        con.close()


def _connect(path: Path, wait_s: float, config: dict[str, Any] | None) -> Any:
    """A read-only connection, asking a running writer to step aside (module docstring) and
    letting a writer that waits for the file in first."""
    duckdb = duckdb_core()

    request = read_request_path(path)
    deadline = time.monotonic() + wait_s
    asked = False
    delay = 0.02
    try:
        while True:
            if writer_waiting(path) and time.monotonic() < deadline:
                # a `bench run` is starting (or reopening after stepping aside): let it in
                # first, or readers polling all the time would keep it out (issue 27)
                time.sleep(0.02)
                continue
            try:
                return duckdb.connect(str(path), read_only=True, config=dict(config or {}))
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


@contextlib.contextmanager
def _prepared(con: Any, path: Path, views: bool | tuple[str, ...], verify: bool,
              checked: bool = False) -> Iterator[Any]:
    """`con` checked whole (unless `checked`), with the views asked for; a damaged block met
    in the caller's block raises `damaged`."""
    try:
        if not checked:
            check_complete(con, path)
        if verify:
            verify_blocks(con, path)
        if views is True:
            # each view created when a statement first names it (most reports read a few)
            con = LazyViews(con, check_schema(con), path)
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
    except ViewError as exc:  # a view created in the caller's block (`LazyViews`)
        raise StoreError(f"{path}: {exc}") from None
    except Exception as exc:  # a read in the caller's block met a damaged block
        why = damage_reason(exc)
        if why is None:
            if isinstance(exc, duckdb_core().BinderException):
                # a column or table the store lacks (a store edited by hand): with the views
                # created lazily, a report's own statement can be the first to meet it, where
                # creating every view at open said `<store>: why`
                raise StoreError(f"{path}: {str(exc).strip().splitlines()[0]}") from None
            raise
        raise damaged(path, why) from None


class SharedReader:
    """Read-only connections to one store for the threads of one process (`bench view`'s
    requests): each request gets a connection of its own (a cursor: its own temp views), all
    of one database instance that this class opens and closes — the last request out closes
    it, so a run's writer can have the file between requests.

    Why not `open_store` per request: DuckDB shares one instance between a process's
    connections to a file, and opening and closing them from many threads at once let a
    `bench run` write the file under a reader that still had it (POSIX file locks are the
    process's, not the connection's): pages then read a file "cut short" (issue 27). Here the
    instance is opened and closed under one lock, and a writer waiting for the file
    (`writer_waiting`) stops new requests from joining it, so it closes as soon as those in
    flight end."""

    def __init__(self, db: str | Path, *, wait_s: float = 30.0,
                 config: dict[str, Any] | None = None) -> None:
        self.path = existing_store(db)
        self.wait_s = wait_s
        self.config = dict(config or {})
        self._lock = threading.Lock()
        self._base: Any = None
        self._users = 0

    @contextlib.contextmanager
    def connection(self, *, views: bool | tuple[str, ...] = True) -> Iterator[Any]:
        cur = self._join()
        try:
            with _prepared(cur, self.path, views, False, checked=True) as ready:
                yield ready
        finally:
            with contextlib.suppress(Exception):
                cur.close()
            self._leave()

    def _join(self) -> Any:
        deadline = time.monotonic() + self.wait_s
        while True:
            with self._lock:
                if self._base is not None and not (writer_waiting(self.path)
                                                   and time.monotonic() < deadline):
                    self._users += 1
                    return self._base.cursor()
                if self._base is None:
                    existing_store(self.path)
                    base = _connect(self.path, max(0.0, deadline - time.monotonic()),
                                    self.config)
                    try:
                        check_complete(base, self.path)
                    except BaseException:
                        base.close()
                        raise
                    self._base, self._users = base, 1
                    return base.cursor()
            time.sleep(0.02)  # a writer waits: the requests in flight end, then it gets in

    def _leave(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._base is not None:
                base, self._base = self._base, None
                base.close()


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
