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


def test_sessions_finishing_one_by_one_share_a_transaction(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.duckdb", group_commit_s=0.5)
    batches: list[int] = []
    write_batch = store.write_batch

    def counting(batch: list[SessionRows]) -> None:
        batches.append(len(batch))
        write_batch(batch)

    store.write_batch = counting  # type: ignore[method-assign]
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
