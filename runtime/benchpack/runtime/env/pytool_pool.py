"""Warm python tool workers, lent again between episodes of one run (issue 31).

Starting a sandboxed toolset worker costs a sandbox, an interpreter, its imports and a replica of
the service tables (a τ²-bench retail database: ~0.2 s alone, ~1 s when ten episodes start at
once on two cores), and every episode of a tool-heavy pack starts one — two with a `state`
reward, whose gold replay runs in an environment of its own. So a worker whose episode ended is
not killed but reset and kept (`WorkerPool.give`): in the same sandbox (its own uid, `/work` and
`/tmp`), the worker empties `/work` and `/tmp`, puts its environment variables back, imports the
pack module again into a fresh module (no global of the last episode survives) and reloads its
replica from the tables it was started with. It is lent (`take`) only to a worker of the same
toolset (source, file name, `atomic`, `plain_errors`) whose service holds exactly those tables:
the *same row objects* (a service never changes a row in place, so identity is equality, checked
in microseconds instead of hashing a database) and the same key counters. Anything else starts
a worker as before.

A worker is reused at most `MAX_USES` times (its CPU limit is per process) and only when it
ended between calls; one that fails to reset is killed. `close` / `kill_all` end the idle ones
(the runner calls them with the HTTP service pool's, on every way out of a run); bwrap's
`--die-with-parent` covers a runner killed outright, as for any worker.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import shutil
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..sandbox import kill_process

if TYPE_CHECKING:
    from .services import ServiceState

MAX_USES = 50
"""Episodes one worker process serves before it is let go."""
MAX_IDLE = 16
"""Idle workers kept per run (the oldest goes first)."""
RESET_TIMEOUT_S = 20.0


@dataclass(eq=False)
class IdleWorker:
    """A started worker between two episodes: its process, files and stderr tail, the tables
    it was started with and how often it has served."""

    key: tuple[Any, ...]
    proc: asyncio.subprocess.Process
    directory: Path | None
    drain: asyncio.Task[None] | None
    stderr: collections.deque[bytes]
    base: dict[str, list[Any]]
    info: dict[str, Any]
    uses: int
    loop: asyncio.AbstractEventLoop
    ready: asyncio.Future[bool] | None = field(default=None)

    def kill(self) -> None:
        kill_process(self.proc)
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        if self.drain is not None:
            self.drain.cancel()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)


def same_rows(a: dict[str, list[Any]], b: dict[str, list[Any]]) -> bool:
    """Whether two `ServiceState.live_rows()` hold the very same row objects, in order."""
    return a.keys() == b.keys() and all(
        len(a[t]) == len(b[t]) and all(x is y for x, y in zip(a[t], b[t], strict=True))
        for t in a)


class WorkerPool:
    """The idle python tool workers of one run (module docstring)."""

    def __init__(self) -> None:
        self._idle: list[IdleWorker] = []
        self._reaping: set[asyncio.Task[Any]] = set()
        self.lent = 0
        """How many times a worker was lent again (a measure, for tests and benchmarks)."""
        _POOLS.add(self)

    def give(self, worker: IdleWorker) -> None:
        """Keep `worker` (its episode is over): ask it to reset now, so it is ready when the
        next episode's first call comes."""
        if worker.uses >= MAX_USES or worker.proc.returncode is not None \
                or worker.proc.stdin is None:
            worker.kill()
            self._reap(worker)
            return
        try:
            worker.proc.stdin.write(b'{"reset": true}\n')
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            worker.kill()
            self._reap(worker)
            return
        worker.ready = asyncio.ensure_future(_await_reset(worker))
        self._idle.append(worker)
        while len(self._idle) > MAX_IDLE:
            old = self._idle.pop(0)
            old.kill()
            self._reap(old)

    async def take(self, key: tuple[Any, ...], state: ServiceState | None
                   ) -> IdleWorker | None:
        """An idle worker for `key` whose replica is `state`'s tables, reset and ready; None
        when there is none."""
        if state is None:
            return None
        loop = asyncio.get_running_loop()
        live = state.live_rows()
        info = state.key_info()
        for i, idle in enumerate(self._idle):
            if idle.key != key or idle.loop is not loop or idle.info != info \
                    or not same_rows(idle.base, live):
                continue
            del self._idle[i]
            ok = False
            with contextlib.suppress(Exception):
                ok = bool(await idle.ready) if idle.ready is not None else False
            if ok and idle.proc.returncode is None:
                self.lent += 1
                return idle
            idle.kill()
            self._reap(idle)
            return None
        return None

    def _reap(self, idle: IdleWorker) -> None:
        with contextlib.suppress(RuntimeError):  # no running loop: nothing to reap with
            task = asyncio.get_running_loop().create_task(idle.proc.wait())
            self._reaping.add(task)
            task.add_done_callback(self._reaping.discard)

    async def close(self) -> None:
        """Kill every idle worker and wait until they are reaped."""
        idle, self._idle = self._idle, []
        for w in idle:
            if w.ready is not None:
                w.ready.cancel()
            w.kill()
        waits = [w.proc.wait() for w in idle]
        if waits or self._reaping:
            await asyncio.gather(*waits, *self._reaping, return_exceptions=True)

    def kill_all(self) -> None:
        idle, self._idle = self._idle, []
        for w in idle:
            if w.ready is not None:
                w.ready.cancel()
            with contextlib.suppress(Exception):
                w.kill()


async def _await_reset(worker: IdleWorker) -> bool:
    """The worker's answer to the reset: True when it is ready for the next episode."""
    assert worker.proc.stdout is not None
    try:
        line = await asyncio.wait_for(worker.proc.stdout.readline(), RESET_TIMEOUT_S)
        answer = json.loads(line) if line else None
    except (TimeoutError, ValueError):
        return False
    return isinstance(answer, dict) and answer.get("ready") is True


_POOLS: weakref.WeakSet[WorkerPool] = weakref.WeakSet()


def kill_idle() -> None:
    """Every pool's idle workers (the interpreter is exiting)."""
    for pool in list(_POOLS):
        pool.kill_all()


__all__ = ["MAX_USES", "IdleWorker", "WorkerPool", "kill_idle", "same_rows"]
