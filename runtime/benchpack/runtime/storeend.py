"""The end of a run's store, out of the run's way (issue 31): DuckDB's checkpoint starts as
soon as the run's last row is written, on a cursor of its own, and the close runs on a thread
while the CLI prints. (Closing the connection used to checkpoint after the summary: on DuckDB
1.5.6 ~40-90 ms for a 1,000-session run, ~0.5 ms a column of each table written whatever the
rows; on 2.0.1 the checkpoint takes 14-17 ms for the same store.) On 1.5 the summary's queries
read while the checkpoint ran; on 2.0.1 the first of them waits for it (stamps: its answer 2-7
ms after the checkpoint's end). Starting the checkpoint after the summary instead, beside the
print, measured no better: of the ideal at c = 64 after start-up 84.6-86.5 % against
85.1-86.6 % (`http_bench.py`, five alternations of three rounds, 2026-12-05).

The checkpoint runs on one DuckDB thread: on 1.5.6 its default of one thread a core took twice
the CPU and the wall time for the same file, byte count and compression (16 batches of 64
one-call sessions on 2 cores: 94-105 ms against 44-49 ms, alternated); on 2.0.1 the two take
the same (14-16 ms), and one thread leaves the other core to the event loop's own end."""

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
