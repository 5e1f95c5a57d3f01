"""A content-addressed cache of LLM responses on disk, in one SQLite database.

The key is the sha256 of the canonical JSON of everything that determines a response: model,
messages, tools, sampling params, seed and repeat index (so repeats are independent samples, and
re-running a finished repeat is served from disk). Entries are rows of `<dir>/responses.sqlite3`
(`key` primary key → `entry`, the canonical JSON of `{"format", "key", "value"}`); a row whose
entry does not parse or names another format or key is a miss, and the next `put` replaces it.

- A miss is answered from the set of keys in the database, read once and topped up with newer
  rows at most once a second when a key is not in it (so another process's entries are seen
  within a second); a hit is a point query on a connection kept open per thread (a thread
  never waits for another's write); the database is in WAL mode with a busy timeout, so
  `bench run` processes can share a cache directory (readers never block writers, writers
  queue).
- Writes are SQLite transactions: a killed run loses at most the entries it had not committed,
  never leaves half an entry. A file that is not a usable cache database (not SQLite, truncated,
  corrupted, another program's) is moved aside with a warning and the cache starts empty.
- I/O failures never fail a run: `get` misses and `put` gives up (counted in `errors`).
- Other files in the directory (e.g. an older one-file-per-entry layout) are ignored.

Values are plain JSON dicts chosen by the caller (`llm.LLMClient` stores the assistant message
and token usage, never credentials), masked by `redact` before they are kept: a reply that
echoes a key is stored with `***` (and served so from then on).

A commit still costs ~0.1 ms, so the LLM client uses `put_soon`: one job on the event loop's
default executor writes entries as they come, all those queued in one transaction (and waits
briefly for more before it ends), `get` serves entries not yet committed from memory, and
`asyncio.run` waits for the job before it returns. Keys hash the canonical JSON of each message
joined (`message_chunks`), so a caller holding an append-only history serialises each message
once, not once per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import logging
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CACHE_FORMAT = "benchpack-llm-cache/1"
_KEY_HEAD = '{"format":"' + CACHE_FORMAT + '","messages":'


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              default=str)
_DRAIN_LINGER_S = 0.1
"""How long an idle drain job waits for more entries before it ends. Ending completes its
future, which wakes the event loop (an extra wake-up in the middle of a model call, each costing
up to a millisecond of timer rounding); `asyncio.run` waits at most this long for it."""
_DRAIN_TICK_S = 0.02
"""The drain job looks for queued entries this often, on its own timer: waking it from the
event loop (an `Event`) made it compete for the GIL with the loop in the loop's busiest moment,
right after a response, and wrote one transaction per entry; a tick writes what gathered since
the last one, in one transaction, usually while the loop waits for a model."""


def canonical_json(obj: Any) -> str:
    """Deterministic JSON: sorted keys, no insignificant whitespace, UTF-8 kept as is."""
    return _CANONICAL.encode(obj)  # = json.dumps with these options, without a new encoder


def sha256_json(obj: Any) -> str:
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()


def message_chunks(messages: Iterable[Any]) -> list[str]:
    """`canonical_json` of each message (`json_list` of them is the list's), so digests can be
    built from chunks computed once per message."""
    return [canonical_json(m) for m in messages]


_GIL_SLICE = 2047
"""hashlib releases the GIL to hash 2048 bytes or more; the event loop thread then waits to get
it back from the run's I/O threads (often longer than hashing takes), so it feeds less."""


def sha256_text(text: str) -> str:
    """sha256 hex digest of `text` (UTF-8)."""
    data = text.encode("utf-8")
    if len(data) <= _GIL_SLICE:
        return hashlib.sha256(data).hexdigest()
    h = hashlib.sha256()
    view = memoryview(data)
    for start in range(0, len(data), _GIL_SLICE):
        h.update(view[start:start + _GIL_SLICE])
    return h.hexdigest()


def json_list(chunks: Sequence[str]) -> str:
    """The canonical JSON of a list from its items' canonical JSON (`message_chunks`)."""
    return "[" + ",".join(chunks) + "]"


def _scalar_json(value: Any) -> str:
    return str(value) if type(value) is int else canonical_json(value)


DB_NAME = "responses.sqlite3"
_APPLICATION_ID = 0x62706C63
"""`PRAGMA application_id` of a cache database ("bplc"): tells it from other SQLite files."""
_SCHEMA = "CREATE TABLE responses (key TEXT PRIMARY KEY, entry TEXT NOT NULL)"
_SELECT = "SELECT entry FROM responses WHERE key = ?"
_KNOWN_AFTER = "SELECT rowid, key FROM responses WHERE rowid > ? ORDER BY rowid"
_TOP_ROWID = "SELECT max(rowid) FROM responses"
_ALL_KEYS = "SELECT key FROM responses"  # a scan of the primary key's index (it covers it)
_KNOWN_REFRESH_S = 1.0
"""How often at most a miss looks for rows written since (by other processes)."""
_UPSERT = "INSERT OR REPLACE INTO responses (key, entry) VALUES (?, ?)"
_BUSY_TIMEOUT_S = 30.0
"""How long a write waits for another process's (readers never wait in WAL mode)."""
_BATCH_MAX = 512
"""Entries per write transaction at most."""
_CORRUPT = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})

_FileId = tuple[int, int] | None
_State = tuple[sqlite3.Connection, int, _FileId]
"""A connection, the `ResponseCache._generation` it was opened in, and the file it opened."""


class _Unusable(Exception):
    """The database file is corrupted or is not a cache database."""

    def __init__(self, reason: str, file_id: _FileId) -> None:
        super().__init__(reason)
        self.file_id = file_id


def _corrupt(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _CORRUPT


def _file_id(path: str) -> _FileId:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class ResponseCache:
    """See the module docstring. `enabled = False` makes every `get` a miss and `put` a no-op;
    nothing is opened or created before the first `get` or `put` of an enabled cache."""

    def __init__(self, directory: str | Path, *, enabled: bool = True,
                 redact: Callable[[str], str] | None = None) -> None:
        self.directory = Path(directory)
        self._redact = redact
        """Applied to each entry's text before it is kept or written (`specs.secrets`): a
        provider that echoes the key in its reply left it in plain text in the cache."""
        self.db_path = self.directory / DB_NAME
        self.enabled = enabled
        self.hits = 0
        self.misses = 0
        self.errors = 0
        self._db = str(self.db_path)
        self._pending: dict[str, str] = {}
        """key → entry of `put_soon` writes not yet committed (`get` serves them)."""
        self._queue: deque[tuple[str, str]] = deque()
        self._draining = False
        self._hurry = threading.Event()
        """Set by `finish_soon`: the drain job writes what is queued and ends without lingering."""
        self._lock = threading.Lock()
        self._local = threading.local()
        """`.state`: this thread's reading `_State`."""
        self._writer: _State | None = None
        self._write_lock = threading.Lock()
        """Held by the one thread writing with `_writer` (the drain job, or a `put`)."""
        self._generation = 0
        """Bumped when the database file is replaced: older connections are reopened."""
        self._warned = False
        self._known: set[int] = set()
        """`hash` of every key in the database as of the last read in `_surely_absent` (and of
        keys put since): a key not in it is a miss without a query."""
        self._known_rowid = 0
        self._known_at = -_KNOWN_REFRESH_S
        self._known_generation = -1

    @staticmethod
    def key(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
            params: dict[str, Any] | None, seed: int | None, repeat: int) -> str:
        return ResponseCache.key_of_chunks(model, message_chunks(messages),
                                           canonical_json(tools or []), params, seed, repeat)

    @staticmethod
    def key_of_chunks(model: str, chunks: Sequence[str], tools_json: str,
                      params: dict[str, Any] | None, seed: int | None, repeat: int) -> str:
        """`key` from the messages' `message_chunks` and the tools' canonical JSON (`[]` for
        none): the canonical JSON of the same object, keys in sorted order."""
        return sha256_text(
            f'{_KEY_HEAD}{json_list(chunks)},"model":{canonical_json(model)},"params":'
            f'{canonical_json(params or {})},"repeat":{_scalar_json(repeat)},"seed":'
            f'{_scalar_json(seed)},"tools":{tools_json}}}')

    # -------------------------------------------------------------- reading

    def get(self, key: str) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        entry: Any = self._pending.get(key)
        try:
            if entry is None:
                if self._surely_absent(key):
                    self.misses += 1
                    return None
                entry = self._select(key)
                if entry is None:
                    self.misses += 1
                    return None
            found = json.loads(entry)
        except (sqlite3.Error, OSError, ValueError, TypeError):  # unreadable or corrupted
            self.misses += 1
            self.errors += 1
            return None
        if (not isinstance(found, dict) or found.get("format") != CACHE_FORMAT
                or found.get("key") != key or not isinstance(found.get("value"), dict)):
            self.misses += 1
            return None
        self.hits += 1
        value: dict[str, Any] = found["value"]
        return value

    def _surely_absent(self, key: str) -> bool:
        """Whether `key` is in no row, known without a query: a miss costs a set lookup, not a
        query (which, releasing the GIL, makes the event loop wait to get it back — the cost
        of a cold run's every call). The key set is read once, then topped up with newer rows
        at most every `_KNOWN_REFRESH_S`, when a key is not in it: another process's entries
        are seen within that long."""
        if hash(key) in self._known:
            return False
        now = time.monotonic()
        if now - self._known_at < _KNOWN_REFRESH_S and self._known_generation == self._generation:
            return True
        self._known_at = now
        with self._lock:
            whole = self._known_generation != self._generation  # first read, or a new file
            if whole:
                self._known, self._known_rowid = set(), 0
                self._known_generation = self._generation
            after = self._known_rowid
        if whole:  # all keys from the key index, which is far smaller than the table
            top = self._query(_TOP_ROWID, ())[0][0] or 0
            rows = [(top, k) for (k,) in self._query(_ALL_KEYS, ())]
        else:  # newer rows: a seek in the table's rowid order
            rows = self._query(_KNOWN_AFTER, (after,))
        with self._lock:
            self._known.update(hash(k) for _, k in rows)
            if rows:
                self._known_rowid = max(self._known_rowid, rows[-1][0])
        return hash(key) not in self._known

    def _select(self, key: str) -> Any:
        rows = self._query(_SELECT, (key,))
        return rows[0][0] if rows else None

    def _query(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        """`sql`'s rows on this thread's reading connection."""
        state: _State | None = getattr(self._local, "state", None)
        if state is None or state[1] != self._generation:
            state = self._local.state = self._reopen(state)
        con, generation, file_id = state
        try:
            # fetchall steps the statement to its end, so no read transaction stays open
            return con.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            if _corrupt(exc):
                self._replace(generation, file_id, str(exc))
            raise

    # -------------------------------------------------------------- writing

    def _entry(self, key: str, value: dict[str, Any]) -> str | None:
        try:
            text = canonical_json({"format": CACHE_FORMAT, "key": key, "value": value})
        except (TypeError, ValueError):
            self.errors += 1
            return None
        # masking inside JSON strings keeps the entry JSON (`***` needs no escaping); the key
        # is a digest, never masked
        return self._redact(text) if self._redact is not None else text

    def put(self, key: str, value: dict[str, Any]) -> None:
        if not self.enabled:
            return
        entry = self._entry(key, value)
        if entry is not None:
            self._write([(key, entry)])
            with self._lock:
                self._known.add(hash(key))

    def put_soon(self, key: str, value: dict[str, Any]) -> None:
        """`put` without blocking the running event loop (see the module docstring); the value
        is serialised now, so later changes to it are not stored."""
        if not self.enabled:
            return
        entry = self._entry(key, value)
        if entry is None:
            return
        with self._lock:
            self._pending[key] = entry
            self._queue.append((key, entry))
            self._known.add(hash(key))
            start = not self._draining
            self._draining = True
        if not start:
            return
        self._hurry.clear()
        try:
            asyncio.get_running_loop().run_in_executor(None, self._drain)
        except RuntimeError:  # no running loop, or its executor is shutting down: write here
            self._drain(linger_s=0.0)

    def _drain(self, linger_s: float = _DRAIN_LINGER_S) -> None:
        """Write queued entries every `_DRAIN_TICK_S`, those gathered in one transaction; end
        when none came for `linger_s` (one job for a run of calls; 0: write and end)."""
        idle = 0.0
        while True:
            if linger_s > 0:
                self._hurry.wait(_DRAIN_TICK_S)
            if self._queue:
                idle = 0.0
                while self._queue:
                    batch: list[tuple[str, str]] = []
                    with contextlib.suppress(IndexError):
                        while len(batch) < _BATCH_MAX:
                            batch.append(self._queue.popleft())
                    self._write(batch)
                continue
            idle += _DRAIN_TICK_S
            if idle >= linger_s or self._hurry.is_set():
                with self._lock:
                    if not self._queue:
                        self._draining = False
                        return

    def finish_soon(self) -> None:
        """The caller is done (a run's last call has returned): the drain job writes what is
        queued and ends at once instead of lingering, so `asyncio.run` does not wait for it."""
        self._hurry.set()

    def _write(self, entries: list[tuple[str, str]]) -> None:
        """Store `entries` in one transaction (once more on a new file when this one turns out
        to be corrupted)."""
        try:
            with self._write_lock:
                for retry in (False, True):
                    state = self._writer
                    if state is None or state[1] != self._generation:
                        state = self._writer = self._reopen(state)
                    con, generation, file_id = state
                    try:
                        with con:  # commits, or rolls back on an exception
                            con.execute("BEGIN IMMEDIATE")
                            con.executemany(_UPSERT, entries)
                        break
                    except sqlite3.Error as exc:
                        if retry or not _corrupt(exc):
                            raise
                        self._replace(generation, file_id, str(exc))
        except (sqlite3.Error, OSError):
            self.errors += len(entries)
        finally:
            with self._lock:
                for key, entry in entries:
                    if self._pending.get(key) is entry:
                        del self._pending[key]

    # -------------------------------------------------------------- the database

    def _reopen(self, old: _State | None) -> _State:
        """A connection replacing `old` (None, or opened before the file was replaced or the
        cache closed); the database is created when missing."""
        if old is not None:
            with contextlib.suppress(sqlite3.Error):
                old[0].close()
        generation = self._generation
        try:
            try:
                con, file_id = self._connect()
            except _Unusable as exc:
                self._replace(generation, exc.file_id, str(exc))
                con, file_id = self._connect()
        except (sqlite3.Error, OSError, _Unusable) as exc:
            if not self._warned:
                self._warned = True
                log.warning("LLM response cache %s cannot be opened (%s); calls are not cached",
                            self._db, exc)
            raise sqlite3.OperationalError(str(exc)) from exc
        return con, self._generation, file_id

    def _connect(self) -> tuple[sqlite3.Connection, _FileId]:
        """A new connection to the database, created when missing; `_Unusable` when the file
        is not a cache database."""
        self.directory.mkdir(parents=True, exist_ok=True)
        # used by one thread at a time: each reading thread has its own, writers take turns
        con = sqlite3.connect(self._db, timeout=_BUSY_TIMEOUT_S, isolation_level=None,
                              check_same_thread=False)
        file_id = _file_id(self._db)
        try:
            if con.execute("PRAGMA application_id").fetchone()[0] != _APPLICATION_ID:
                self._create(con, file_id)  # before anything changes another program's file
            con.execute("PRAGMA journal_mode=WAL")
            # in WAL mode a commit survives a killed process without an fsync (not power loss)
            con.execute("PRAGMA synchronous=NORMAL")
        except BaseException as exc:
            con.close()
            if isinstance(exc, sqlite3.Error) and _corrupt(exc):
                raise _Unusable(str(exc), file_id) from exc
            raise
        return con, file_id

    @staticmethod
    def _create(con: sqlite3.Connection, file_id: _FileId) -> None:
        with con:
            con.execute("BEGIN IMMEDIATE")  # another process may be creating it too
            if con.execute("PRAGMA application_id").fetchone()[0] == _APPLICATION_ID:
                return
            if con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                raise _Unusable("another program's SQLite database", file_id)
            con.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
            con.execute(_SCHEMA)

    def _replace(self, generation: int, file_id: _FileId, reason: str) -> None:
        """Move the unusable database (with its WAL) aside so that the next connection starts
        an empty one; once per file, however many threads or processes find it broken."""
        with self._lock:
            if generation != self._generation:
                return  # another thread did it
            self._generation += 1
            if file_id is None or _file_id(self._db) != file_id:
                return  # another process did it
            self.errors += 1
            stem = f"{self._db}.unusable-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
            aside = next(f"{stem}-{n}" for n in itertools.count()
                         if not os.path.lexists(f"{stem}-{n}"))
            try:
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.replace(self._db + suffix, aside + suffix)
            except OSError as exc:
                log.warning("LLM response cache %s is unusable (%s) and could not be moved "
                            "aside (%s)", self._db, reason, exc)
                return
        log.warning("LLM response cache %s is unusable (%s): moved to %s, starting empty",
                    self._db, reason, aside)

    def close(self) -> None:
        """Close the writing connection and this thread's reading one (other threads close
        theirs on their next use or when they end); the cache reopens on the next call."""
        with self._lock:
            self._generation += 1
        with self._write_lock:
            states = [self._writer, getattr(self._local, "state", None)]
            self._writer = self._local.state = None
        for state in states:
            if state is not None:
                with contextlib.suppress(sqlite3.Error):
                    state[0].close()
