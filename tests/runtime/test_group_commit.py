"""Group commits in the store writer (issue 16 item 0) without losing anything finished.

One transaction per session cost ≈ 7 ms CPU when sessions finish one by one (DuckDB's COMMIT
and per-statement costs, not per row), so the writer holds a finished session for up to
`group_commit_s` to commit it with the ones finishing right after. What must still hold: a
session is durable before anyone is told it finished (`on_commit`), `flush()` and `close()`
commit at once whatever is waiting (Ctrl-C, SIGTERM and errors go through them), and a process
killed right after reporting a session finished has it in the store.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import duckdb

from benchpack.runtime.store import SessionRows, Store


def _rows(i: int) -> SessionRows:
    return SessionRows("run", f"s{i}", 0, {"run_id": "run", "session_id": f"s{i}", "repeat": 0,
                                           "status": "finished"})


def _stored(db: Path) -> set[str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {r[0] for r in con.execute("SELECT session_id FROM sessions").fetchall()}
    finally:
        con.close()


def _count_batches(store: Store) -> list[int]:
    """The sizes of the transactions `store` commits, appended as it writes them."""
    batches: list[int] = []
    write_batch = store.write_batch

    def counting(batch: list[SessionRows]) -> None:
        batches.append(len(batch))
        write_batch(batch)

    store.write_batch = counting  # type: ignore[method-assign]
    return batches


def test_sessions_finishing_one_by_one_share_a_transaction(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.duckdb", group_commit_s=0.5)
    batches = _count_batches(store)
    store.start()
    try:
        for i in range(6):  # each one well after the previous one's commit would have ended
            store.submit(_rows(i))
            time.sleep(0.03)
        store.flush()
    finally:
        store.close()
    assert sum(batches) == 6
    assert len(batches) <= 2, batches  # one transaction per session before: [1, 1, 1, 1, 1, 1]
    assert _stored(tmp_path / "db.duckdb") == {f"s{i}" for i in range(6)}


def test_on_commit_never_runs_before_the_commit(tmp_path: Path) -> None:
    db = tmp_path / "db.duckdb"
    store = Store(db, group_commit_s=0.3)
    seen: list[bool] = []
    done = threading.Event()

    def report() -> None:
        con = store.con  # the writer's own connection: sees exactly what committed
        seen.append(con.execute("SELECT count(*) FROM sessions").fetchone() == (1,))
        done.set()

    store.start()
    try:
        store.submit(_rows(0), report)
        assert done.wait(10)
    finally:
        store.close()
    assert seen == [True]


def test_flush_and_close_do_not_wait_for_the_group_window(tmp_path: Path) -> None:
    db = tmp_path / "db.duckdb"
    store = Store(db, group_commit_s=60.0)
    store.start()
    t = time.monotonic()
    store.submit(_rows(0))
    store.flush()  # what Ctrl-C, SIGTERM and the end of a run call
    assert time.monotonic() - t < 30
    store.submit(_rows(1))
    store.close()  # what an exception on the way out reaches
    assert time.monotonic() - t < 30
    assert _stored(db) == {"s0", "s1"}


CHILD = """
import sys, time
from benchpack.runtime.store import SessionRows, Store

store = Store(sys.argv[1], group_commit_s=float(sys.argv[2]))
store.start()

def reporter(i):
    def report():
        print(f"finished s{i}", flush=True)
    return report

for i in range(200):
    store.submit(SessionRows("run", f"s{i}", 0, {"run_id": "run", "session_id": f"s{i}",
                                                 "repeat": 0, "status": "finished"}),
                 reporter(i))
    time.sleep(0.005)
time.sleep(60)
"""


def test_a_kill_right_after_a_session_is_reported_loses_nothing(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(CHILD), encoding="utf-8")
    db = tmp_path / "db.duckdb"
    proc = subprocess.Popen([sys.executable, str(script), str(db), "0.2"],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None
    reported: set[str] = set()
    try:
        line = proc.stdout.readline()
        reported.add(line.split()[1])
        os.kill(proc.pid, signal.SIGKILL)  # right after the first report: no time to tidy up
    finally:
        proc.wait(30)
    reported |= {line.split()[1] for line in proc.stdout.read().splitlines() if line}
    assert reported
    assert reported <= _stored(db)


def test_flush_wakes_a_writer_gathering_a_batch_and_leaves_no_task_open(tmp_path: Path) -> None:
    """`flush` queues a wake-up: the writer commits what it gathered without waiting out its
    window (a minute here), and every wake-up is accounted for, so later flushes and the close
    neither hang nor over-count (`task_done` raising)."""
    db = tmp_path / "db.duckdb"
    store = Store(db, group_commit_s=60.0)
    store.start()
    try:
        for i in range(3):
            store.submit(_rows(i))
        flushing = threading.Thread(target=store.flush)
        flushing.start()
        flushing.join(20)
        assert not flushing.is_alive(), "flush waited for the group window"
        assert _stored_now(store) == {"s0", "s1", "s2"}
        store.flush()
        store.flush()  # nothing waits: both return at once
        for i in range(3, 5):
            store.submit(_rows(i))
        store.flush()
        assert store._queue.unfinished_tasks == 0
    finally:
        store.close()
    assert store._error is None
    assert _stored(db) == {f"s{i}" for i in range(5)}


def _stored_now(store: Store) -> set[str]:
    with store._lock:
        return {r[0] for r in store.con.execute("SELECT session_id FROM sessions").fetchall()}


def test_close_in_background_commits_first_then_closes_on_a_thread(tmp_path: Path) -> None:
    """Every submitted session is committed before `close_in_background` returns; DuckDB's
    close (its last checkpoint) runs on a non-daemon thread (the interpreter waits for it even
    if nobody does), and the returned waiter raises what the close raised."""
    db = tmp_path / "db.duckdb"
    store = Store(db, group_commit_s=60.0)
    store.start()
    for i in range(4):
        store.submit(_rows(i))
    real = store.con
    release = threading.Event()
    seen: list[set[str]] = []

    class Slow:
        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def close(self) -> None:
            seen.append({r[0] for r in real.execute("SELECT session_id FROM sessions")
                         .fetchall()})
            release.wait(20)
            real.close()
            raise RuntimeError("the last checkpoint failed")

    store.con = Slow()
    wait = store.close_in_background()
    closer = [t for t in threading.enumerate() if t.name == "benchpack-store-close"]
    assert len(closer) == 1 and not closer[0].daemon and closer[0].is_alive()
    release.set()
    try:
        wait()
    except RuntimeError as exc:
        assert "last checkpoint failed" in str(exc)
    else:
        raise AssertionError("the close's failure was lost")
    assert seen == [{"s0", "s1", "s2", "s3"}]
    assert _stored(db) == {"s0", "s1", "s2", "s3"}


def test_a_window_holds_up_to_256_sessions(tmp_path: Path) -> None:
    """Each transaction costs the writer ~14 ms of CPU whatever it holds (issue 31): sessions
    finishing within one window share one, up to 256 of them (64 before: a 1,000-session run at
    64 in flight made 16 commits instead of 4-5)."""
    store = Store(tmp_path / "db.duckdb", group_commit_s=60.0)
    batches = _count_batches(store)
    store.start()
    try:
        for i in range(300):
            store.submit(_rows(i))
        store.flush()
    finally:
        store.close()
    assert batches == [256, 44], batches
    assert len(_stored(tmp_path / "db.duckdb")) == 300


def test_a_reader_ends_the_window_it_arrives_in(tmp_path: Path) -> None:
    """With up to 256 sessions a window, a busy run's writer gathers for the whole window: it
    looks for a reader's request every `READER_LOOK_S` meanwhile, commits what it holds and
    steps aside (before, a request waited for the window's end: 60 s here)."""
    from benchpack.runtime.store import READ_REQUEST_SUFFIX

    db = tmp_path / "db.duckdb"
    store = Store(db, group_commit_s=60.0)
    store.start()
    request = Path(f"{db}{READ_REQUEST_SUFFIX}")
    try:
        store.submit(_rows(0))
        time.sleep(0.2)  # the writer is gathering its window
        request.touch()
        t = time.monotonic()
        while store.yields == 0 and time.monotonic() - t < 20:
            time.sleep(0.01)
        assert store.yields == 1, "the writer did not step aside within its window"
        assert _stored(db) == {"s0"}  # committed before it stepped aside
    finally:
        request.unlink(missing_ok=True)
        store.close()
