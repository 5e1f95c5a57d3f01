"""The run store: one DuckDB file, one writer, every finished session committed whole.

DuckDB allows a single writing process and no concurrent readers of the file, so the runtime
owns the connection from one writer thread: sessions finish on the event loop, hand their rows
to the writer queue, and are durable once their transaction commits. A run killed at any moment
loses only sessions whose transaction had not committed; `--resume` reruns exactly those.

Group commits: a transaction costs ≈ 7 ms CPU whatever it holds, so the writer holds a finished
session for up to `GROUP_COMMIT_S` and commits it with those finishing meanwhile (at most
`GROUP_MAX` per transaction). A finished session is durable:
- at most `GROUP_COMMIT_S` (plus one commit) after it was submitted;
- before it is reported finished: `on_commit` (the progress bar) runs after its commit;
- before the run reports anything: `flush()` commits what waits at once, without the window,
  and the runner calls it at the end, on Ctrl-C and SIGTERM; `close()` (every other exit path,
  exceptions included) commits it too;
- in submission order: batches are FIFO and atomic, so a committed session's predecessors in
  its episode (submitted first) committed with it or before it, and a resume never finds a
  later session without the earlier one. A SIGKILL loses at most the sessions of the last
  `GROUP_COMMIT_S`, none of which had been reported finished.

The schema, its version and migrations are in `storeschema.py`.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchpack.specs.limits import STORED_TEXT_BYTES
from benchpack.specs.storefile import is_lock, write_request_path
from benchpack.specs.storeformat import DDL as DDL
from benchpack.specs.storeformat import SCHEMA_VERSION as SCHEMA_VERSION
from benchpack.specs.storeformat import SESSION_TABLES as SESSION_TABLES

from .calltexts import CallText, encode_calls
from .limits import clip_json, clip_rows
from .redact import Redactor
from .snapblobs import BLOB_MIN_CHARS, BLOB_REF, join_state, split_state
from .storecheck import (
    DAMAGED_HINT,
    StoreDamagedError,
    StoreOpenError,
    check_complete,
    damage_reason,
    damaged,
    verify_blocks,
    writer_failure,
)
from .storeend import checkpoint, in_background
from .storeinsert import columns, described, insert_rows, no_pandas_retries
from .storeschema import check_ours, migrate

__all__ = ["BLOB_MIN_CHARS", "BLOB_REF", "DAMAGED_HINT", "SessionRows", "Store",
           "StoreDamagedError", "StoreOpenError", "check_complete", "connect",
           "damage_reason", "damaged", "join_state", "split_state", "verify_blocks"]

def _json(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, default=str)


@dataclass
class SessionRows:
    """Everything one finished session writes, committed in one transaction."""

    run_id: str
    session_id: str
    repeat: int
    session: dict[str, Any]
    tables: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    snapshot: tuple[str, dict[str, Any]] | None = None
    """(episode, state) of the episode environment after this session, for resume."""
    call_texts: list[CallText] = field(default_factory=list)
    """Prompts and replies of the `llm_calls` rows, by seq (stored in `blobs`, `calltexts`)."""


def connect(path: str | Path, read_only: bool = False) -> Any:
    """A connection to the store at `path`; for writing, with the schema created or migrated.
    Refuses directories, non-DuckDB files and DuckDB databases of other programs."""
    import duckdb

    no_pandas_retries()

    p = Path(path)
    if p.is_dir():
        raise StoreOpenError(f"{p}: is a directory; --db takes a DuckDB file, e.g. "
                             f"{p / 'bench.duckdb'}")
    try:
        if not read_only:
            p.parent.mkdir(parents=True, exist_ok=True)
        con = (duckdb.connect(str(p), read_only=True) if read_only
               else _connect_writing(p, LOCK_WAIT_S))
    except OSError as exc:
        raise StoreOpenError(f"{p}: cannot create the store ({exc.strerror or exc})") from None
    except duckdb.Error as exc:
        why = damage_reason(exc)
        if why is not None:
            raise damaged(p, why) from None
        first = str(exc).splitlines()[0]
        if is_lock(first):
            raise StoreOpenError(
                f"{p}: another program holds the store ({first}) (hint: a `bench run` writing "
                "it keeps it until it ends, readers let go within seconds; wait for it, or "
                "pass another --db)") from None
        raise StoreOpenError(f"{p}: cannot open the store ({first}); is it a DuckDB file "
                             "written by `bench run`?") from None
    try:  # before anything is written: DDL on a cut file would build on the lost blocks
        check_complete(con, p)
    except BaseException:
        con.close()
        raise
    if not read_only:
        try:
            check_ours(con, p)
            con.execute("BEGIN TRANSACTION")  # one commit for the whole schema, not one per table
            try:
                con.execute(DDL)
                migrate(con, p)
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        except BaseException as exc:
            con.close()
            why = damage_reason(exc)
            if why is not None and not isinstance(exc, StoreOpenError):
                raise damaged(p, why) from None
            raise
    return con


LOCK_WAIT_S = 30.0
"""How long a writer opening the store waits for readers to let go (they never hold it for
long: a `bench view` page, a `bench query`); another writer holds it until it ends."""


def _connect_writing(p: Path, wait_s: float) -> Any:
    """A writing connection to `p`. While readers hold the file, `<store>.write-request` asks
    them to stay away (`benchpack.specs.storefile.writer_waiting`) and the open is retried:
    without it a viewer polled every second kept 5 `bench run`s out of 6 from starting
    (issue 27). Raises DuckDB's lock error after `wait_s` (another writer holds it)."""
    import duckdb

    request = write_request_path(p)
    deadline = time.monotonic() + wait_s
    asked = False
    delay = 0.01
    try:
        while True:
            try:
                return duckdb.connect(str(p))
            except duckdb.IOException as exc:
                if not is_lock(str(exc)) or time.monotonic() > deadline:
                    raise
            if not asked:
                with contextlib.suppress(OSError):
                    request.write_text(str(os.getpid()), encoding="utf-8")
                asked = True
            time.sleep(delay)
            delay = min(0.1, delay * 1.5)
    finally:
        if asked:
            with contextlib.suppress(OSError):
                request.unlink()


READ_REQUEST_SUFFIX = ".read-request"
"""`<store>.read-request`: a reader (`bench query`, `bench report`) asks a running writer to let
go of the file; `benchpack.reports.access` creates it (a test checks both sides agree)."""

YIELD_MAX_S = 10.0
"""Longest a writer stays away for one request (a stale request file is ignored after it)."""
GROUP_COMMIT_S = 0.25
"""Longest a finished session waits for others to share its transaction (module docstring)."""
GROUP_MAX = 256
"""Sessions per transaction at most (the window bounds the wait; 64 made 16 commits a run)."""
READER_LOOK_S = 0.05
"""How often a writer gathering a batch looks for a reader's request (then commits, steps aside)."""
_WAKE = object()
"""Queued by `flush`: a writer gathering a batch commits it at once instead of at its window."""


class _Final:
    """Queued by `finish_run`: the run's final row, for the last batch; the writer stops."""

    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row


class Store:
    """Owns the DuckDB connection. Reads happen before the run starts (resume state) and after
    it ends; during the run every write goes through the writer thread.

    DuckDB lets one process open a file for writing and nobody else open it meanwhile, even
    read-only. So the writer steps aside for readers: between commits (and every 0.1 s while
    idle) it looks for `<store>.read-request`; when a reader has created one, it closes its
    connection until the reader removes the file (or `YIELD_MAX_S` passes), then reopens —
    waiting for the reader's short read-only connection to close. A reader therefore waits at
    most about `READER_LOOK_S` and one commit; the run only pauses its writes, never loses them."""

    def __init__(self, path: str | Path, redactor: Redactor | None = None,
                 group_commit_s: float = GROUP_COMMIT_S) -> None:
        self.path = Path(path)
        self.group_commit_s = group_commit_s
        self.con = connect(self.path)
        self.redact = redactor if redactor is not None else Redactor.from_environment()
        """Applied to every string written (see `redact`): an agent, a provider error or a
        tool may echo a key, and whatever is stored ends in exports and reports."""
        self._request = Path(f"{self.path}{READ_REQUEST_SUFFIX}")
        self.yields = 0
        """How many times the writer stepped aside for a reader."""
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._blobs: set[str] | None = None
        """Hashes already in `blobs` (read at the first snapshot written)."""
        self._final_row: dict[str, Any] | None = None
        """The run's final row, for the writer's last transaction (`finish_run`)."""
        self._checkpoint: Callable[[], None] | None = None
        """Waits for `finish_run`'s checkpoint, running or done."""
        self._tools_texts: dict[int, dict[str, tuple[str, str]]] = {}
        """Per stored-text limit: tool list → its stored text and blob hash
        (`calltexts.encode_calls`), made once a run instead of once a session."""
        self._recorded: dict[str, set[tuple[str, str, int]]] = {}
        """(run, session, repeat) keys with rows already in the store: only those need their old
        rows deleted before a rerun (a DELETE scans whole tables, so new sessions skip it)."""

    # ------------------------------------------------------------------ run bookkeeping

    def verify(self) -> None:
        """Every data block read and checked (see `verify_blocks`)."""
        with self._lock:
            verify_blocks(self.con, self.path)

    def writer_error(self) -> Exception:
        """The writer thread's failure as the user sees it (`storecheck.writer_failure`)."""
        return writer_failure(self.path, self._error)

    @contextlib.contextmanager
    def reading(self) -> Iterator[Any]:
        """The connection, for queries of the caller's own (the run's summary): held so the
        writer thread does not close it under them to let a reader in (a viewer polled during
        the run's last moments ended it in "No open result set", exit 3)."""
        with self._lock:
            yield self.con

    def upsert_run(self, row: dict[str, Any]) -> None:
        with self._lock:
            self._put_run(self.con, row)

    def _put_run(self, con: Any, row: dict[str, Any]) -> None:
        cols = columns(con, "runs")
        values = self._clean([(_json(row[c]) if c == "config" else row.get(c)) for c in cols])
        con.execute(f"INSERT OR REPLACE INTO runs VALUES ({', '.join('?' * len(cols))})", values)

    def finish_run(self, row: dict[str, Any]) -> None:
        """The run's end: what waits for the writer and the run's final row committed in one
        transaction (a commit less at the end of the run), the writer stopped, and DuckDB's
        checkpoint started (`storeend`): nothing may write after it, or closing would
        checkpoint again. `close` waits for it. Raises the writer's failure, as `flush`."""
        if self._thread is None:
            self.upsert_run(row)
        else:
            self._queue.put(_Final(row))  # ends the window at once, and the writer
            self._thread.join()
            self._thread = None
            if self._error is not None:
                raise self.writer_error() from self._error
        self._checkpoint = checkpoint(self.con)

    def _checkpointed(self) -> None:
        wait, self._checkpoint = self._checkpoint, None
        if wait is not None:
            wait()

    def forget_starting(self, run_id: str) -> None:
        """Remove the run's row if it is still the placeholder of a run that never started
        (`status` starting: refused by a check, or interrupted before its first session)."""
        with self._lock:
            self.con.execute("DELETE FROM runs WHERE run_id = ? AND status = 'starting'",
                             [run_id])

    def run_count(self) -> int:
        with self._lock:
            row = self.con.execute("SELECT count(*) FROM runs").fetchone()
            return int(row[0]) if row else 0

    def run_exists(self, run_id: str) -> dict[str, Any] | None:
        with self._lock:
            cur = self.con.execute("SELECT * FROM runs WHERE run_id = ?", [run_id])
            row = cur.fetchone()
            if row is None:
                return None
            names = [d[0] for d in cur.description]
            return dict(zip(names, row, strict=True))

    def finished(self, run_id: str) -> set[tuple[str, str, int]]:
        """(session_id, fingerprint, repeat) triples already done in this run."""
        with self._lock:
            rows = self.con.execute(
                "SELECT session_id, fingerprint, repeat FROM sessions "
                "WHERE run_id = ? AND status = 'finished'", [run_id]).fetchall()
        return {(r[0], r[1], int(r[2])) for r in rows}

    def snapshot(self, run_id: str, episode: str, repeat: int, session_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self.con.execute(
                "SELECT state FROM snapshots WHERE run_id=? AND episode=? AND repeat=? "
                "AND session_id=?", [run_id, episode, repeat, session_id]).fetchone()
            if row is None:
                return None
            try:
                state: dict[str, Any] = join_state(json.loads(row[0]), self._fetch_blobs)
                return state
            except LookupError as exc:
                raise damaged(self.path, str(exc)) from None

    def _fetch_blobs(self, hashes: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for start in range(0, len(hashes), 256):
            part = hashes[start:start + 256]
            found.update(self.con.execute(
                f"SELECT hash, data FROM blobs WHERE hash IN ({', '.join('?' * len(part))})",
                part).fetchall())
        return found

    def transcript(self, run_id: str, session_id: str, repeat: int) -> list[tuple[Any, ...]]:
        with self._lock:
            return list(self.con.execute(
                "SELECT turn, role, content, tool_calls, tool_call_id, name FROM messages "
                "WHERE run_id=? AND session_id=? AND repeat=? ORDER BY seq",
                [run_id, session_id, repeat]).fetchall())

    def session_row(self, run_id: str, session_id: str, repeat: int) -> dict[str, Any] | None:
        with self._lock:
            cur = self.con.execute("SELECT * FROM sessions WHERE run_id=? AND session_id=? AND "
                                   "repeat=?", [run_id, session_id, repeat])
            row = cur.fetchone()
            if row is None:
                return None
            return dict(zip([d[0] for d in cur.description], row, strict=True))

    def session_rows(self, run_id: str) -> list[dict[str, Any]]:
        """Every `sessions` row of a run, by session id and repeat."""
        with self._lock:
            cur = self.con.execute("SELECT * FROM sessions WHERE run_id = ? ORDER BY session_id, "
                                   "repeat", [run_id])
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def session_table(self, table: str, run_id: str, session_id: str, repeat: int
                      ) -> list[tuple[Any, ...]]:
        """A session's rows of a child table, without the (run_id, session_id, repeat) prefix,
        in insertion order."""
        if table not in SESSION_TABLES:
            raise ValueError(f"`{table}` is not a per-session table")
        with self._lock:
            cols = columns(self.con, table)[3:]
            return list(self.con.execute(
                f"SELECT {', '.join(cols)} FROM {table} WHERE run_id=? AND session_id=? "
                "AND repeat=?", [run_id, session_id, repeat]).fetchall())

    # ------------------------------------------------------------------ the writer

    def start(self) -> None:
        self._thread = threading.Thread(target=self._writer, name="benchpack-store", daemon=True)
        self._thread.start()

    def submit(self, rows: SessionRows, on_commit: Callable[[], None] | None = None) -> None:
        """Queue a finished session for the writer. `on_commit` runs on the writer thread once
        the session's transaction has committed (never if it fails): report it done then."""
        if self._error is not None:
            raise self.writer_error() from self._error
        self._queue.put((rows, on_commit))

    def commit_soon(self) -> None:
        """Commit what waits without the window, not waiting for it (the run's end is near)."""
        if self._thread is not None:
            self._queue.put(_WAKE)

    def flush(self) -> None:
        """Wait until every submitted session is committed (at once: no group window)."""
        if self._thread is not None:
            self._queue.put(_WAKE)  # a writer gathering a batch commits now, not at its window
        self._queue.join()
        if self._error is not None:
            raise self.writer_error() from self._error

    def close(self) -> None:
        self._stop_writer()
        try:
            self._checkpointed()
        finally:
            with self._lock:
                self.con.close()

    def close_in_background(self) -> Callable[[], None]:
        """`close`, with DuckDB's part on a thread (`storeend.in_background`) while the caller
        goes on (the CLI prints the summary): what `finish_run`'s checkpoint has not done
        yet. Every row is committed before this returns; the function returned waits for the
        close and raises what it raised."""
        self._stop_writer()

        def closing() -> None:
            try:
                self._checkpointed()
            finally:
                with self._lock:
                    self.con.close()
        return in_background(closing, "benchpack-store-close")

    def _stop_writer(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def _known(self, run_id: str) -> set[tuple[str, str, int]]:
        known = self._recorded.get(run_id)
        if known is None:
            known = self._recorded[run_id] = {(run_id, r[0], int(r[1])) for r in self.con.execute(
                "SELECT DISTINCT session_id, repeat FROM sessions WHERE run_id = ? UNION "
                "SELECT DISTINCT session_id, repeat FROM messages WHERE run_id = ?",
                [run_id, run_id]).fetchall()}
        return known

    def write_now(self, rows: SessionRows) -> None:
        """Commit one session synchronously (tests use this directly)."""
        self.write_batch([rows])

    def write_batch(self, batch: list[SessionRows]) -> None:
        """Commit finished sessions in one transaction: every row of a session, or none of it
        (and the run's final row with them, when `finish_run` queued it).

        The writer calls this with one session whenever it keeps up; when sessions finish faster
        than commits complete, it groups the waiting ones (group commit), since DuckDB's cost
        is per statement, not per row."""
        run_row, self._final_row = self._final_row, None
        if not batch:
            if run_row is not None:
                self.upsert_run(run_row)
            return
        with self._lock:
            con = self.con
            con.execute("BEGIN TRANSACTION")
            try:
                for rows in batch:
                    if (rows.run_id, rows.session_id, rows.repeat) in self._known(rows.run_id):
                        key = [rows.run_id, rows.session_id, rows.repeat]
                        for table in (*SESSION_TABLES, "sessions", "snapshots"):
                            con.execute(f"DELETE FROM {table} WHERE run_id=? AND session_id=? "
                                        "AND repeat=?", key)
                if self._blobs is None:
                    self._blobs = {str(r[0]) for r in con.execute(
                        "SELECT DISTINCT hash FROM blobs").fetchall()}
                clean = self.redact if self.redact else (lambda text: text)
                limit = STORED_TEXT_BYTES.value  # once a batch: an environment lookup

                def clean_call(text: str) -> str:  # a message, tool list or reply: JSON
                    text = clean(text)
                    # 4 bytes a character at most: nearly every text is clearly under
                    return text if len(text) * 4 <= limit else clip_json(text,
                                                                         STORED_TEXT_BYTES)

                tools_memo = self._tools_texts.setdefault(limit, {})

                new_blobs: dict[str, str] = {}
                tables: dict[str, list[tuple[Any, ...]]] = {}
                for rows in batch:
                    if rows.call_texts:
                        texts, parts = encode_calls(rows.call_texts, clean_call, tools_memo)
                        new_blobs.update((h, d) for h, d in parts.items() if h not in self._blobs)
                        tables.setdefault("llm_call_texts", []).extend(
                            (rows.run_id, rows.session_id, rows.repeat, *t) for t in texts)
                for rows in batch:
                    for table, data in rows.tables.items():
                        tables.setdefault(table, []).extend(
                            map(self._clean, data) if self.redact else data)
                for table, data in tables.items():
                    insert_rows(con, table, self._clip(table, data))
                # a snapshot is only ever written with its session's rows, so a session not
                # yet `known` has none, and a known one's was deleted above: a plain INSERT
                # does what INSERT OR REPLACE did, in one statement and in batch order
                snapshots: list[tuple[Any, ...]] = []
                for r in batch:
                    if r.snapshot is None:
                        continue
                    stored, parts = split_state(r.snapshot[1], clean)
                    new_blobs.update((h, d) for h, d in parts.items() if h not in self._blobs)
                    snapshots.append((r.run_id, r.snapshot[0], r.repeat, r.session_id, stored))
                insert_rows(con, "blobs", list(new_blobs.items()))
                insert_rows(con, "snapshots", snapshots)
                cols = columns(con, "sessions")
                session_rows = []
                for rows in batch:
                    sess = dict(rows.session)
                    sess["extra"] = _json(sess.get("extra"))
                    session_rows.append(self._clean(list(map(sess.get, cols))))
                insert_rows(con, "sessions", self._clip("sessions", session_rows))
                if run_row is not None:
                    self._put_run(con, run_row)
                con.execute("COMMIT")
                self._blobs.update(new_blobs)
                for r in batch:
                    self._known(r.run_id).add((r.run_id, r.session_id, r.repeat))
            except BaseException:
                con.execute("ROLLBACK")
                raise

    def _clip(self, table: str, data: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """`data` with every text over its named limit clipped (`limits.clip_rows`): a 2 GB
        tool argument stored whole took the writer down (issue 27)."""
        return clip_rows(table, data, lambda: described(self.con, table))

    def _clean(self, row: Sequence[Any]) -> tuple[Any, ...]:
        """`row` with every string redacted (a tuple, as the rows are)."""
        if not self.redact:
            return tuple(row)
        r = self.redact
        return tuple(r(v) if type(v) is str else v for v in row)

    def _yield_to_readers(self) -> None:
        """Close the connection while a reader's request file exists, then reopen (see the
        class docstring). Runs on the writer thread between commits."""
        if not self._request.exists():
            return

        with self._lock:
            self.con.close()
            self.yields += 1
            deadline = time.monotonic() + YIELD_MAX_S
            while self._request.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            if self._request.exists():  # a reader that died without cleaning up
                with contextlib.suppress(OSError):
                    self._request.unlink()
            # the reader's read-only connection may still be open; new readers stay away
            # meanwhile (the write request), so a polled viewer cannot keep the run out
            self.con = _connect_writing(self.path, float("inf"))

    def _writer(self) -> None:
        while True:
            self._yield_to_readers()
            try:
                first = self._queue.get(timeout=0.1)
            except queue.Empty:
                continue
            batch: list[tuple[SessionRows, Callable[[], None] | None]] = []
            final = first.row if isinstance(first, _Final) else None
            stop = first is None or final is not None
            wakes = 1 if first is _WAKE else 0
            if not stop and first is not _WAKE:
                batch.append(first)
            deadline, look = time.monotonic() + self.group_commit_s, 0.0
            # `flush` and `close` end the window at once: they queue `_WAKE` or None behind
            # what waits; a reader's request ends it within READER_LOOK_S
            while not stop and not wakes and len(batch) < GROUP_MAX:
                now = time.monotonic()
                if now >= deadline:
                    break
                if now >= look:
                    if self._request.exists():
                        break
                    look = now + READER_LOOK_S
                try:
                    item = self._queue.get(timeout=min(deadline - now, READER_LOOK_S))
                except queue.Empty:
                    continue
                if item is None or isinstance(item, _Final):
                    stop = True
                    final = item.row if item is not None else None
                elif item is _WAKE:
                    wakes += 1
                else:
                    batch.append(item)
            try:
                if (batch or final is not None) and self._error is None:
                    self._final_row = final  # `write_batch` commits it with the batch
                    self.write_batch([rows for rows, _ in batch])
                    for _, on_commit in batch:
                        if on_commit is not None:
                            with contextlib.suppress(Exception):  # a report must not stop writes
                                on_commit()
            except BaseException as exc:  # surfaced to the event loop by submit/flush
                self._error = exc
            finally:
                for _ in range(len(batch) + wakes + (1 if stop else 0)):
                    self._queue.task_done()
            if stop:
                return
