"""A report's statements run beside its others (issue 31): on a second cursor of its
connection, in a thread, while the report goes on.

Why: most of a report's statements read tables of one DuckDB row group (`sessions`,
`triggers`, `intent_status`: under 122,880 rows each on 1 M turns), which DuckDB scans on one
core, and the statistics after them are Python on the same core; the machine has two. The
summary's notes and pooled trigger score (~0.13 s CPU) run beside its headline means (~0.2
s). DuckDB lets go of the GIL while a statement runs, and a cursor is a connection of its
own, so the two do not wait for each other. The figures are the same: the same statements
and the same Python on the same rows; only when they run changes. `half_threads`: the two
cursors on half the DuckDB threads each (over such tables a second thread only partitions
their hash tables)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .builtin import ReportContext


@contextlib.contextmanager
def beside(ctx: ReportContext, *calls: Callable[[ReportContext], Any]
           ) -> Iterator[Callable[[int], Any]]:
    """Run `calls` one after another on `ctx.beside()` (a cursor of its connection) in a
    thread while the `with` block goes on; the block gets `result(i)`, which waits for the
    i-th call and returns what it returned (or raises what it raised). On a connection that
    gives no such cursor (`views.LazyViews` does; a plain DuckDB connection has none of its
    TEMP views, a test's logging wrapper none of its statements) the calls run first, here,
    in order. However the block ends, the thread is waited for and the cursor closed."""
    from .views import LazyViews

    if not isinstance(ctx.con, LazyViews):
        found = [call(ctx) for call in calls]
        yield found.__getitem__
        return
    side = ctx.beside()
    results: list[Any] = [None] * len(calls)
    errors: list[BaseException | None] = [None] * len(calls)
    done = [threading.Event() for _ in calls]

    def work() -> None:
        failed: BaseException | None = None
        for i, call in enumerate(calls):
            try:
                if failed is None:
                    results[i] = call(side)
            except BaseException as exc:  # handed to the caller by `result`
                failed = exc
            errors[i] = failed
            done[i].set()

    def result(i: int) -> Any:
        done[i].wait()
        if errors[i] is not None:
            raise errors[i]  # type: ignore[misc]
        return results[i]

    thread = threading.Thread(target=work, name="report-beside", daemon=True)
    thread.start()
    try:
        yield result
    finally:
        thread.join()
        with contextlib.suppress(Exception):
            side.con.close()


@contextlib.contextmanager
def half_threads(con: Any) -> Iterator[None]:
    """The block's statements on half the connection's DuckDB threads (one on this 2-core
    machine), the count given back after it: the block runs two cursors side by side
    (`beside`), each then on its share of the cores rather than both asking for all of them.
    For statements whose inputs are small tables of one row group (a report's TEMP table of
    a few ten thousand rows, `human_ratings`, `sessions` on 1 M turns) a second thread mostly
    splits the hash tables into partitions it then merges: `agreement --humans`' three
    statements over its rated items took 0.078 s CPU (0.070 s wall) with two threads on 1 M
    turns, 0.056 s with one. For two big statements side by side (`cost --by`'s two passes
    over every call, the summary's run costs beside its means), one thread each on 2 cores
    cost 0.32 + 0.15 s CPU against 0.55-0.66 s one after the other on two threads. Half,
    not one: on a machine of more cores the passes over every call keep several threads
    each (a row group a thread).
    The setting is the database's, not the cursor's: set it around a `beside` block, never
    from inside one. A connection whose settings are locked
    (`access.LOCKED`, `bench view`'s, whose requests share one database) keeps its threads."""
    threads, locked = con.execute(
        "SELECT current_setting('threads'), current_setting('lock_configuration')").fetchone()
    half = max(1, int(threads) // 2)
    if half == int(threads) or locked:
        yield
        return
    con.execute(f"SET threads = {half}")
    try:
        yield
    finally:
        con.execute(f"SET threads = {int(threads)}")
