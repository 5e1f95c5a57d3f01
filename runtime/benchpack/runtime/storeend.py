"""The end of a run's store, out of the run's way (issue 31): DuckDB's checkpoint started as
soon as the run's last row is written, on a cursor of its own, so the summary's queries read
meanwhile (DuckDB reads while it checkpoints); and the close on a thread while the CLI prints.
Closing the connection checkpoints whatever was written since: ~40-90 ms for a 1,000-session
run, ~0.5 ms a column of each table written whatever the rows, which the run's end waited for
after the summary.

The checkpoint runs on one DuckDB thread: with its default of one thread a core it took twice
the CPU and the wall time for the same file, byte count and compression (16 batches of 64
one-call sessions on 2 cores: 94-105 ms against 44-49 ms, alternated)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .storecheck import damage_reason


def checkpoint(con: Any) -> Callable[[], None]:
    """`CHECKPOINT` started on a thread (`in_background`); the function returned waits for it
    and raises the damage it met (any other failure, such as a transaction still open, is left
    to the close, which checkpoints)."""
    # set before the thread starts, while nothing else runs on the connection (the setting is
    # the database's): nothing after the run's last rows needs DuckDB's parallelism, the
    # summary's queries read a few thousand rows
    con.execute("SET threads = 1")

    def run() -> None:
        import duckdb

        try:
            cur = con.cursor()
            try:
                cur.execute("CHECKPOINT")
            finally:
                cur.close()
        except duckdb.Error as exc:
            if damage_reason(exc) is not None:
                raise

    return in_background(run, "benchpack-checkpoint")


def in_background(work: Callable[[], None], name: str) -> Callable[[], None]:
    """`work` started on a thread (not a daemon: the interpreter waits for it anyway); the
    function returned waits for it and raises what it raised."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # handed to the waiter, which raises it
            failed.append(exc)

    thread = threading.Thread(target=run, name=name)
    thread.start()

    def wait() -> None:
        thread.join()
        if failed:
            raise failed[0]
    return wait
