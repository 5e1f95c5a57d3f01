"""A store file's integrity, shared by the runtime (which writes stores) and the reports (which
read them; they never import the runtime): DuckDB's words for a damaged file, a file cut short,
every data block read. Each side wraps these with its own error type."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

DAMAGED_HINT = "restore it from a copy, or start a new store with --db"
_DAMAGE_WORDS = ("corrupt", "checksum", "could not read enough bytes", "serializ",
                 "invalidated", "internal error", "fatal error")
_HEADER_BYTES = 3 * 4096
"""DuckDB's main header and its two database headers, before the first block."""


def duckdb_core() -> Any:
    """DuckDB for a reader that only connects, queries and catches DuckDB's errors: the
    `duckdb` package when something has imported it already, else its compiled core `_duckdb`
    (duckdb ≥ 1.4), whose connections, functions and exception classes are the very objects the
    package re-exports. The package's own `__init__` costs ~35 ms more than the core on this
    machine (`duckdb._version` imports `importlib.metadata` to read its version,
    `_dbapi_type_object` builds DB-API type objects), a fifth of `bench query`'s whole start-up,
    for nothing a query uses. `tests/test_startup.py` checks that the names readers use are the
    package's own objects; an older duckdb without `_duckdb` gets the package."""
    loaded = sys.modules.get("duckdb")
    if loaded is not None:
        return loaded
    try:
        import _duckdb as core
    except ImportError:
        import duckdb as core  # type: ignore[no-redef]
    return core


def damage_reason(exc: BaseException | None) -> str | None:
    """DuckDB's words for a damaged file (or a damaged file's internal assertion), from `exc` or
    the exception it was raised from; None for any other error (a lock, a bad query…)."""
    duckdb = duckdb_core()

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
    """Read every row of every table, so DuckDB checks every data block's checksum (1.3-1.4 s
    for the 168 MB of 1 M turns, `benchmarks/report_bench.py`, load 2); DuckDB's error for a damaged block propagates."""
    tables = [str(r[0]) for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE NOT internal").fetchall()]
    for table in tables:
        # bit_xor, not sum: the same blocks read, without sum's 128-bit accumulator (half the
        # CPU on a 1 M-turn store)
        con.execute(f'SELECT bit_xor(hash(COLUMNS(*))) FROM "{table}"').fetchall()


# --------------------------------------------------------------------------- checked once

def store_identity(path: str | Path) -> list[Any] | None:
    """What changes whenever the bytes of `path` (or of its WAL) can have changed: device,
    inode, size, modification and status-change times. The status-change time (ctime) is set
    by the kernel on every write, truncation, rename or `utime`, and no program can set it
    back, so a file with the same identity has not been written since (a copy is another
    inode). None when the file cannot be read."""
    out: list[Any] = []
    for p in (Path(path), Path(f"{path}.wal")):
        try:
            st = p.stat()
        except FileNotFoundError:
            out.append(None)
            continue
        except OSError:
            return None
        out.append([st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns])
    return out if out[0] is not None else None


def store_facts_dir() -> Path:
    """Where what was learnt once about a store file is kept (`known_sound`): beside the
    compile cache (`$BENCHPACK_CACHE_DIR`, else `$XDG_CACHE_HOME` or `~/.cache`/benchpack)."""
    import os

    base = os.environ.get("BENCHPACK_CACHE_DIR")
    if base:
        return Path(base) / "stores"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "benchpack" / "stores"


def _facts_path(path: str | Path) -> Path:
    import hashlib

    key = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:32]
    return store_facts_dir() / f"{key}.json"


def store_facts(path: str | Path, identity: list[Any] | None) -> dict[str, Any]:
    """What was recorded about `path` while it had `identity` (empty when it has changed
    since, or nothing was recorded)."""
    import json

    if identity is None:
        return {}
    try:
        record = json.loads(_facts_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RuntimeError):  # RuntimeError: no home directory
        return {}
    if not isinstance(record, dict) or record.get("identity") != identity:
        return {}
    facts = record.get("facts")
    return facts if isinstance(facts, dict) else {}


def record_store_facts(path: str | Path, identity: list[Any] | None,
                       facts: dict[str, Any]) -> None:
    """Add `facts` to what is known about `path` with `identity`, unless the file changed in
    the meantime (its identity now differs). Best effort: a cache that cannot be written only
    means the work is done again next time."""
    import json
    import os

    if identity is None or store_identity(path) != identity:
        return
    merged = {**store_facts(path, identity), **facts}
    try:
        target = _facts_path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"path": str(Path(path).resolve()), "identity": identity,
                                   "facts": merged}), encoding="utf-8")
        os.replace(tmp, target)
    except (OSError, RuntimeError):  # RuntimeError: no home directory
        return


def verify_once(con: Any, path: str | Path) -> bool:
    """`read_every_block`, unless a previous check found the file sound and it has not been
    written since (`store_identity`): reading 1 M turns' blocks costs ~1 s, which every report
    paid again over the same unchanged file. Returns whether the blocks were read now.

    What this gives up: damage below the file system (a disk flipping bits of a file nobody
    writes) in a block no report reads, found only once the file changes; DuckDB still checks
    the checksum of every block it does read. Any write to the file — a run, a truncation, a
    tool patching bytes and restoring the modification time — changes its ctime, and the next
    read checks every block again."""
    identity = store_identity(path)
    if identity is not None and store_facts(path, identity).get("blocks_sound"):
        return False
    read_every_block(con)
    record_store_facts(path, identity, {"blocks_sound": True})
    return True


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
