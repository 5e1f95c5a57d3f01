"""`bench run`: schedule a plan's sessions against an agent and store everything in DuckDB.

Scheduling unit: an episode chain (one episode, one repeat). Sessions of a chain run in plan
order because they share the episode's workspace, services and memory; chains run concurrently
up to `max_concurrency`; per-model limits live in the LLM client. A failed session skips the
sessions that depend on it. `--resume RUN_ID` skips every (session, fingerprint, repeat) already
finished and restores the episode environment from the last finished session's snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable
from pathlib import Path

from benchpack.specs.plan import Plan

from .chains import ERROR_KINDS, error_kind_of, run_chain, run_one
from .planfile import load_plan
from .prewarm import prewarm_http_client
from .run_stages import (
    LazyClient,
    build_chains,
    execute,
    finalise,
    hold_to_budget,
    resolve_run,
    select_sessions,
    start_run,
    to_do,
)
from .run_types import (
    RUNS_VERSION,
    ClientOptions,
    Progress,
    RunContext,
    RunInterrupted,
    RunOptions,
    RunSummary,
    make_agent,
    make_llm_client,
    new_run_id,
    redactor_for,
)
from .store import Store, StoreDamagedError, damage_reason, damaged
from .summary import dumps_summary, summarise

__all__ = ["ERROR_KINDS", "RUNS_VERSION", "ClientOptions", "Progress", "RunContext",
           "RunInterrupted", "RunOptions", "RunSummary", "dumps_summary", "error_kind_of",
           "make_agent", "make_llm_client", "new_run_id", "redactor_for", "run_chain",
           "run_one", "run_plan", "run_plan_async", "summarise"]


async def run_plan_async(options: RunOptions) -> RunSummary:
    started = time.time()
    prewarm_http_client(options.api_base,
                        (options.agent, options.simulator, options.judge, options.planner))
    plan = load_plan(options.plan)
    fresh = not Path(options.db).exists()
    store = Store(options.db, redactor_for(options))
    stop_on_sigterm = _cancel_on_sigterm()
    summary: RunSummary | None = None
    made: dict[str, str] = {}
    """`starting`: the run id whose placeholder row this invocation wrote."""
    try:
        if options.resume:  # the run keeps the store's rows: they must all be readable
            store.verify()
        summary = await _run(options, plan, store, started, made)
        return summary
    except Exception as exc:  # a block found damaged mid-run (an index, a row group)
        why = damage_reason(exc)
        if why is None or isinstance(exc, StoreDamagedError):
            raise
        raise damaged(options.db, why) from None
    finally:
        stop_on_sigterm()
        if summary is None and "starting" in made:  # refused before it started: no trace
            with contextlib.suppress(Exception):
                store.forget_starting(made["starting"])
        try:  # a mistake stopped the run before its run row: leave no new store behind
            unused = fresh and store.run_count() == 0
        except Exception:  # keep the file: the original error is what matters
            unused = False
        if summary is not None and options.close_in_background and not unused:
            summary.wait_closed = _damage_named(store.close_in_background(), options.db)
        else:
            _damage_named(store.close, options.db)()
        if unused:
            for suffix in ("", ".wal"):
                Path(f"{options.db}{suffix}").unlink(missing_ok=True)


def _damage_named(close: Callable[[], None], db: str | Path) -> Callable[[], None]:
    """`close`, raising the user error naming the file when the last checkpoint met a damaged
    block."""
    def closing() -> None:
        try:
            close()
        except Exception as exc:
            why = damage_reason(exc)
            if why is None:
                raise
            raise damaged(db, why) from None
    return closing


def _cancel_on_sigterm() -> Callable[[], None]:
    """SIGTERM (`kill`, a CI job's timeout, systemd) stops the run as Ctrl-C does: the run task
    is cancelled, so every session's `finally` stops its harness and services and the run is
    marked interrupted. Python's default would exit at once and orphan every harness, which
    runs in a process group of its own. Returns the undo."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    if task is None:
        return lambda: None
    try:
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, Windows
        return lambda: None

    def undo() -> None:
        loop.remove_signal_handler(signal.SIGTERM)

    return undo


async def _run(options: RunOptions, plan: Plan, store: Store, started: float,
               made: dict[str, str]) -> RunSummary:
    """The run's stages in order (`run_stages.py` says what each owns)."""
    run = resolve_run(options, plan, store)
    selection = select_sessions(run.options, plan)
    llm = LazyClient(run.options)
    start = start_run(run, selection, plan, store, started, made, llm)
    chains, finished = build_chains(plan, selection.sessions, start.repeats, start.finished)
    total, todo = sum(len(c[2]) for c in chains), to_do(chains, finished)
    budget, estimate = hold_to_budget(start.ctx, chains, finished, llm)
    stats = await execute(start, chains, finished, todo, llm)
    return finalise(start, stats, total, todo, started, budget, estimate)


def run_plan(options: RunOptions) -> RunSummary:
    """Synchronous entry point (the CLI's)."""
    return asyncio.run(run_plan_async(options))


