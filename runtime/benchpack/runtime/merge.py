"""`bench merge STORE… -o OUT`: the runs of several stores (made on separate machines, or by
hand-sharded plans) in one new store, row for row.

An input of an older schema version is migrated first, in a temporary copy (the input is never
changed). Refused, each with a one-line `MergeError` and nothing written: an input that is not a
store, is damaged (cut short, or a block failing its checksum: every block is read first), or of
a newer schema version than this benchpack writes, a run id in two inputs, a
(run, session, repeat) in two inputs, an existing OUT. Snapshot blobs (content-addressed) are
copied once; human ratings rows already present are not copied again.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from . import tmpdirs
from .errors import UsageError
from .store import (
    SCHEMA_VERSION,
    StoreDamagedError,
    StoreOpenError,
    check_complete,
    connect,
    damage_reason,
    damaged,
    verify_blocks,
)


class MergeError(UsageError):
    pass


def _tables(con: Any, schema: str) -> list[str]:
    return [str(r[0]) for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND NOT internal "
        "ORDER BY table_name", [schema]).fetchall()]


def merge_stores(inputs: list[str | Path], out: str | Path) -> dict[str, int]:
    """Merge `inputs` into the new store `out`; returns rows copied per table."""
    out = Path(out)
    if not inputs:
        raise MergeError("bench merge: no store to merge (hint: bench merge A.duckdb "
                         "B.duckdb -o OUT.duckdb)")
    if out.exists():
        raise MergeError(f"{out}: already exists; merge into a new file (hint: another -o)")
    with tmpdirs.temporary("benchpack-merge-") as scratch:
        return _merge([Path(p) for p in inputs], out, scratch)


def _merge(paths: list[Path], out: Path, scratch: Path) -> dict[str, int]:
    import duckdb

    seen_runs: dict[str, Path] = {}
    seen_keys: dict[tuple[str, str, int], Path] = {}
    for p in paths:
        if not p.is_file():
            raise MergeError(f"{p}: no such store")
        if p.resolve() == out.resolve():
            raise MergeError(f"{p}: is the output; merge into a new file")
        try:
            con = duckdb.connect(str(p), read_only=True)
        except duckdb.Error as exc:
            if damage_reason(exc) is not None:
                raise damaged(p, str(damage_reason(exc))) from None
            raise MergeError(f"{p}: cannot open it ({str(exc).splitlines()[0]}); is it a "
                             "store written by `bench run`?") from None
        try:
            # every block read (and its checksum checked) before anything is written: a
            # damaged input met mid-copy ended the merge in DuckDB's error, exit 3
            _readable(con, p)
            here = (con.execute("SELECT current_database()").fetchone() or ("",))[0]
            if "meta" not in _tables(con, here):
                raise MergeError(f"{p}: not a benchpack store (no `meta` table)")
            row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = int(row[0]) if row else None
            if version is None or version > SCHEMA_VERSION:
                raise MergeError(
                    f"{p}: store schema {version}, this benchpack writes {SCHEMA_VERSION} "
                    "(hint: merge with the benchpack that wrote it, or upgrade benchpack)")
            for (run_id,) in con.execute("SELECT run_id FROM runs").fetchall():
                if run_id in seen_runs:
                    raise MergeError(f"{p}: run `{run_id}` is also in {seen_runs[run_id]}; "
                                     "a run id may come from one store only")
                seen_runs[run_id] = p
            for run_id, sid, repeat in con.execute(
                    "SELECT run_id, session_id, repeat FROM sessions").fetchall():
                key = (run_id, sid, int(repeat))
                if key in seen_keys:
                    raise MergeError(f"{p}: session {sid} repeat {repeat} of run `{run_id}` "
                                     f"is also in {seen_keys[key]}")
                seen_keys[key] = p
        finally:
            con.close()
        if version < SCHEMA_VERSION:  # the store's own migrations, on a copy
            copy = scratch / f"{len(list(scratch.iterdir()))}-{p.name}"
            shutil.copyfile(p, copy)
            if Path(f"{p}.wal").is_file():
                shutil.copyfile(f"{p}.wal", f"{copy}.wal")
            try:
                connect(copy).close()
            except StoreOpenError as exc:
                raise MergeError(f"{p}: cannot migrate it from schema {version}: {exc}") from None
            paths[paths.index(p)] = copy
    try:
        target = connect(out)
    except StoreOpenError as exc:
        raise MergeError(str(exc)) from None
    copied: dict[str, int] = {}
    try:
        here = target.execute("SELECT current_database()").fetchone()[0]
        mine = [t for t in _tables(target, here) if t != "meta"]
        for i, p in enumerate(paths):  # DuckDB attaches outside transactions
            target.execute(f"ATTACH '{_quote(p)}' AS src{i} (READ_ONLY)")
        target.execute("BEGIN TRANSACTION")  # all or nothing
        for i in range(len(paths)):
            alias = f"src{i}"
            theirs = set(_tables(target, alias))
            for t in mine:
                if t not in theirs:
                    continue
                before = target.execute(f"SELECT count(*) FROM main.{t}").fetchone()[0]
                if t in ("blobs", "human_ratings"):  # shared by content: once
                    target.execute(f"INSERT INTO main.{t} BY NAME (SELECT * FROM "
                                   f"{alias}.{t} EXCEPT SELECT * FROM main.{t})")
                else:
                    target.execute(f"INSERT INTO main.{t} BY NAME SELECT * FROM {alias}.{t}")
                after = target.execute(f"SELECT count(*) FROM main.{t}").fetchone()[0]
                copied[t] = copied.get(t, 0) + int(after - before)
        target.execute("COMMIT")
    except BaseException:
        target.close()
        out.unlink(missing_ok=True)
        Path(f"{out}.wal").unlink(missing_ok=True)
        raise
    target.close()
    return copied


def _readable(con: Any, p: Path) -> None:
    """`p` whole: not cut short, every data block's checksum right (else `damaged`)."""
    try:
        check_complete(con, p)
        verify_blocks(con, p)
    except StoreDamagedError:
        raise
    except Exception as exc:
        why = damage_reason(exc)
        if why is None:
            raise
        raise damaged(p, why) from None


def _quote(p: Path) -> str:
    return str(p).replace("'", "''")
