"""Running episode chains: the local executor's unit of work, and the session runner every
executor shares (the Ray executor runs the same `run_sessions` on its workers).

An episode chain is one episode at one repeat: its sessions run in plan order because they
share the episode's workspace, services and memory. A failed session skips the sessions that
depend on it; a session already finished (`--resume`) is skipped and the environment restored
from the last finished session's snapshot when a later session needs it.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from pathlib import Path

from benchpack.specs.plan import PlanSession

from .budget import BUDGET_ERROR
from .env import EpisodeEnvironment, ToolBox
from .graders.guards import needs_guards, session_guards
from .judges.base import JudgeError
from .protocols.base import ProtocolResult
from .run_types import Progress, RunContext
from .session import ChainMemory, SessionContext, grade_checklist, session_brief
from .session_rows import build_rows, session_identity
from .store import SessionRows
from .types import LLMCallRecord

Sink = Callable[[Callable[[], SessionRows], str, bool], None]
"""Where a chain hands each finished session: (what builds its rows, session name, errored).
Locally the store's writer, the rows built a few loop turns later (`StoreSink`); on a Ray
worker, the stream back to the driver, built at once."""

BOOKKEEPING_TURNS = 3
"""Loop turns between a session's end and the building of its rows. The chain's slot is free
at its end, so the chain that takes it starts in the next turn and sends its request then, or
in the one after where aiohttp writes the body from a task of its own (Python 3.11 with a
foreign task factory, `openai_direct.eager_body_writes`); a third turn puts the rows after
those writes, even for the last session ending in a turn of many. Built
at once, a turn's finished sessions all built and queued their rows before any replacement
request left (issue 31: 64 in flight, answers arrive ~7-40 to a turn)."""


class StoreSink:
    """The local executor's sink: rows are built and queued for the store's writer in one batch
    `BOOKKEEPING_TURNS` loop turns after the first of them is handed over, so the requests
    that replace the finished sessions leave first. The store commits them as before; a
    session is finished (for `--resume`) once committed, so what a kill can lose is what it
    could (the writer's window is ~60 turns). `drain` builds what waits now: the run's end and
    every way out call it before the store's last commit."""

    def __init__(self, ctx: RunContext, progress: Progress) -> None:
        self.ctx, self.progress = ctx, progress
        self.waiting: list[tuple[Callable[[], SessionRows], str, bool]] = []
        self.failure: BaseException | None = None
        """The first failure building or queueing rows (a bug, the writer's failure): raised
        to the next chain handing a session over, and by `drain`."""
        self._due = False

    def __call__(self, build: Callable[[], SessionRows], name: str, error: bool) -> None:
        if self.failure is not None:
            raise self.failure
        self.waiting.append((build, name, error))
        if not self._due:
            self._due = True
            asyncio.get_running_loop().call_soon(self._turn, BOOKKEEPING_TURNS - 1)

    def _turn(self, left: int) -> None:
        if left:
            asyncio.get_running_loop().call_soon(self._turn, left - 1)
        else:
            self._build()

    def _build(self) -> None:
        self._due = False
        waiting, self.waiting = self.waiting, []
        for build, name, error in waiting:  # one failure does not lose the others' rows
            try:
                self.ctx.store.submit(build(), self.progress.committed(name, error=error))
            except Exception as exc:
                self.failure = self.failure or exc

    def drain(self) -> None:
        self._build()
        if self.failure is not None:
            raise self.failure


async def run_chain(ctx: RunContext, key: str, repeat: int, sessions: list[PlanSession],
                    finished: set[tuple[str, str, int]], sink: Sink,
                    stats: dict[str, int], failed: set[str] | None = None) -> None:
    """`failed`: sessions of the chain already stored as errors in this invocation (a chain
    resubmitted after its Ray worker died): their dependents are skipped, as they were."""
    episode_id = sessions[0].episode
    env_root = ctx.work_dir / f"{key.replace('/', '_')}-r{repeat}"
    chain = ChainMemory(ctx.store, ctx.run_id, repeat)
    failed = set(failed or ())
    last_done: str | None = None
    envs: list[EpisodeEnvironment] = []
    try:
        await run_sessions(ctx, sessions, repeat, episode_id, env_root, chain, finished,
                           failed, last_done, sink, stats, envs)
    finally:  # every exit path, a cancelled run included: the chain's HTTP services go back
        # to the pool (reset before their next use) and no toolset worker is left behind
        for e in envs:
            e.release_processes()
            await e.aclose()


async def run_sessions(ctx: RunContext, sessions: list[PlanSession], repeat: int,
                        episode_id: str, env_root: Path, chain: ChainMemory,
                        finished: set[tuple[str, str, int]], failed: set[str],
                        last_done: str | None, sink: Sink,
                        stats: dict[str, int], envs: list[EpisodeEnvironment]) -> None:
    plan = ctx.plan
    env: EpisodeEnvironment | None = None
    # the chain's directory is a name of its own in a work directory the run made: nothing
    # can be there before the chain's first environment (a later one, after a resumed
    # session, may find what the first left)
    absent = ctx.work_dir_made
    for s in sessions:
        if ctx.budget is not None and ctx.budget.exhausted:
            return  # left unstarted, so `--resume` runs them; nothing to store
        done = (s.id, s.fingerprint, repeat) in finished
        if done:
            last_done = s.id
            env = None  # restored lazily from the snapshot when a later session needs it
            continue
        if any(d in failed for d in s.depends_on):
            failed.add(s.id)
            stats["skipped"] += 1
            skipped = _skipped_rows(ctx, s, repeat, [d for d in s.depends_on if d in failed])
            sink(functools.partial(_same, skipped), s.name, True)
            continue
        if env is None:
            env = EpisodeEnvironment.create(plan, s.environment, env_root, absent=absent)
            absent = False
            env.process_pool = ctx.services
            env.tool_workers = ctx.services.tool_workers
            envs.append(env)
            if last_done is not None:
                snap = ctx.store.snapshot(ctx.run_id, episode_id, repeat, last_done)
                if snap is not None:
                    env.restore(snap)
        build, ok, kind = await run_one(ctx, s, repeat, env, chain)
        stats["run"] += 1
        if kind == "budget":
            # stopped before a call: stored as an error of kind `budget` (so the inventory
            # has it) and rerun by `--resume`; its dependents wait for it, unstarted
            stats["budget"] += 1
            stats["errors"] += 1
            sink(build, s.name, True)
            return
        if ok:
            stats["finished"] += 1
            last_done = s.id
        else:
            stats["errors"] += 1
            failed.add(s.id)
        sink(build, s.name, not ok)


async def run_one(ctx: RunContext, s: PlanSession, repeat: int, env: EpisodeEnvironment,
                  chain: ChainMemory) -> tuple[Callable[[], SessionRows], bool, str | None]:
    """Run session `s`: (what builds its rows, finished, its error kind). The rows are built
    by the caller's sink, when it chooses (`StoreSink`: after the next requests leave); what
    they hold is settled here, the end time included."""
    plan = ctx.plan
    started = time.time()
    calls: list[LLMCallRecord] = []
    env.add_session_files(s.files)
    toolbox = ToolBox(plan, s, env, allow_python=ctx.options.allow_python)
    prior = [m for pid in s.prior_sessions for m in chain.transcript(pid)
             if m.role in ("user", "assistant") and m.content]
    brief = session_brief(plan, s, repeat, toolbox, prior, plan.defaults.seed_for(repeat))
    brief.recorder = calls.append
    sctx = SessionContext(ctx, plan, s, repeat, ctx.agent, brief, toolbox, env, calls.append,
                          chain)
    if s.id in ctx.alone:
        sctx.extra.update(context="alone", missing_dependencies=ctx.alone[s.id])
    if needs_guards(s):  # before the agent acts: what holds now, it did not bring about
        sctx.guards = session_guards(s, env.workspace.files(),
                                     {name: svc.snapshot() for name, svc in env.services.items()})
    result: ProtocolResult
    error: str | None = None
    kind: str | None = None
    try:
        await env.ensure_processes()  # HTTP services: a start failure names the service
        interpreter = ctx.protocols.get(s.protocol)
        result = await interpreter.run(sctx)
        # a session that errored is rerun on resume: grading it would only spend judge calls
        checklist = (await grade_checklist(sctx) if result.termination != "error"
                     else ([], None, None, None, 0, 0))
    except Exception as exc:  # a protocol or grader bug: this session errors, the run goes on
        error = f"{type(exc).__name__}: {exc}"
        kind = error_kind_of(exc)
        result = ProtocolResult(termination="error", error=error)
        checklist = ([], None, None, None, 0, 0)
    finally:
        await sctx.close()
    if result.termination == "error" and error is None:
        error = result.error or next((r.error for r in sctx.replies if r.error), "agent error")
    ok = result.termination != "error"
    if not ok and kind is None:
        kind = result.error_kind or ("agent" if any(r.stop_reason == "error"
                                                    for r in sctx.replies) else "infrastructure")
    if kind == "agent" and endpoint_failed(calls):
        kind = "infrastructure"
        error = f"the model endpoint failed (infrastructure, not scored): {error}"
    refused = next((c.error for c in calls if c.error and c.error.startswith(BUDGET_ERROR)),
                   None)
    if refused is not None:  # whichever role's call it was, the session is not finished:
        # a judge item or an agent turn cut short by the budget must not be scored
        ok, kind, error = False, "budget", refused
        result = ProtocolResult(termination="error", error=refused)
    # only written to the store (serialised by its writer): the live rows, not a copy
    snapshot = env.snapshot(rows="live") if ok else None
    if snapshot is not None and env.processes:
        try:
            snapshot["processes"] = await env.snapshot_processes()
        except Exception as exc:  # without its state the session cannot be resumed after
            ok, snapshot, kind = False, None, "infrastructure"
            error = f"{type(exc).__name__}: {exc}"
            result = ProtocolResult(termination="error", error=error)
    ended = time.time()
    chain.remember(s.id, sctx.messages, result)

    def build() -> SessionRows:
        return build_rows(sctx, result, checklist, calls, started, "finished" if ok else "error",
                          error, snapshot, error_kind=kind, finished=ended)
    return build, ok, kind


ERROR_KINDS = ("agent", "infrastructure", "simulator", "judge", "budget")
"""Whose error ended a session. Only `agent` (the evaluated agent crashed or sent malformed
output) is the agent's failure and scores the protocol's worst score; the others are excluded
from the figures and counted beside them, and rerun by `--resume`. `infrastructure` includes
the agent's model endpoint failing for good (`endpoint_failed`). `budget`: `--max-cost` refused
a call of the session (rerun by `--resume`)."""


def endpoint_failed(calls: list[LLMCallRecord]) -> bool:
    """Whether the agent's model endpoint failed for good in this session (after retries, or
    refusing its credentials): a session the agent "errored" in because its model could not
    be reached was never evaluated. The endpoint is the evaluator's — benchpack's client
    calling it for the `litellm:` agent, or relaying a harness's calls through the model proxy
    (`cmd2:`) — so it is infrastructure: excluded, counted, rerun by `--resume`. A harness
    that crashes by itself, or an agent whose own service fails, records no such call and
    stays the agent's failure."""
    return any(c.role == "agent" and c.endpoint_failure for c in calls)


def error_kind_of(exc: BaseException) -> str:
    """The kind of an exception that ended a session outside the agent's own turns (those come
    back as errored replies): a judge or user-side role that gave up, else infrastructure."""
    if isinstance(exc, JudgeError):
        return "judge" if exc.role == "judge" else "simulator"
    return "infrastructure"


def _same(rows: SessionRows) -> SessionRows:
    return rows


def _skipped_rows(ctx: RunContext, s: PlanSession, repeat: int, because: list[str]) -> SessionRows:
    now = time.time()
    return SessionRows(run_id=ctx.run_id, session_id=s.id, repeat=repeat, session={
        **session_identity(ctx.run_id, ctx.agent_name, s, repeat),
        "status": "skipped", "termination": "dependency_failed",
        "error": "skipped: dependency failed: " + ", ".join(because),
        "turns": 0, "user_turns": 0, "assistant_turns": 0, "tool_calls": 0, "compactions": 0,
        "judge_errors": 0, "grader_errors": 0, "prompt_tokens": 0, "completion_tokens": 0,
        "cost": 0.0, "started_at": now, "finished_at": now, "duration_s": 0.0, "extra": None})

