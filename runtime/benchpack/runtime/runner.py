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
import hashlib
import json
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchpack.specs.plan import Plan, PlanSession
from benchpack.specs.toolsets import PyToolImpl

from .budget import BUDGET_ERROR
from .env import EpisodeEnvironment, ToolBox
from .env.service_pool import ServicePool, needs_replay, process_services
from .graders.python import REFUSED as PYTHON_REFUSED
from .judges.base import JudgeError, Templates, templates_fingerprint
from .planfile import load_plan
from .protocols.base import ProtocolRegistry, ProtocolResult, default_protocols
from .roles import Roles
from .session import (
    ChainMemory,
    SessionContext,
    build_rows,
    grade_checklist,
    session_brief,
    session_identity,
)
from .store import SessionRows, Store, StoreDamagedError, damage_reason, damaged
from .types import AgentAdapter, LLMCallRecord

RUNS_VERSION = 1


@dataclass(kw_only=True)
class ClientOptions:
    """How a command's one LLM client talks to providers: `bench run` and `bench rejudge`
    share these (and `make_llm_client`)."""

    api_base: str | None = None
    api_key_env: str | None = None
    """Name of the environment variable holding the API key (the key itself is never stored)."""
    cache_dir: str | Path | None = None
    use_cache: bool = True
    max_retries: int = 4
    max_concurrent_per_model: int = 8
    requests_per_minute: dict[str, float] = field(default_factory=dict)
    timeout_s: float = 120.0
    retry_backoff_s: float = 1.0
    llm_backend: Any = None
    """Programmatic use only: an LLM backend replacing litellm (tests, benchmarks)."""


@dataclass
class RunOptions(ClientOptions):
    plan: str | Path
    agent: str
    simulator: str | None = None
    """User simulator URI (`rules`, `scripted:<file>`, `litellm:<model>`); default: the pack's
    `defaults.models.simulator`, else `rules`."""
    judge: str | None = None
    """Judge URI; default: the pack's `defaults.models.judge`, else `rules`."""
    planner: str | None = None
    """Trigger-rubric planner URI; default: the pack's, else the simulator's."""
    db: str | Path = "bench.duckdb"
    run_id: str | None = None
    resume: bool = False
    repeats: int | None = None
    max_concurrency: int = 4
    allow_python: bool = False
    sessions: list[str] = field(default_factory=list)
    """Only run sessions whose id or name matches one of these globs."""
    alone: bool = False
    """Run the `sessions` selected without the sessions they depend on (which are otherwise
    pulled in): those lacking context are marked `extra.context = "alone"` and kept out of the
    headline figures."""
    work_dir: str | Path | None = None
    progress: bool = True
    trigger_mode: str = "auto"
    """Trigger rubrics: `live` (planner + user agent), `offline` (replay a fixed dialogue,
    regenerate the trigger turns only), or `auto` (offline when a dialogue is available)."""
    dialogue_from: str | None = None
    """Trigger rubrics, offline: take the fixed dialogues from this earlier run's transcripts
    (same store) instead of the pack's authored ones."""
    graph_grader: str = "auto"
    """Staged disclosure: `llm` (coverage judge), `match` (deterministic normalised matching),
    or `auto` (`match` when the judge is `rules`, else `llm`)."""
    max_cost: float | None = None
    """USD this invocation may spend on LLM calls (`budget.Budget`); None: no limit."""
    force: bool = False
    """Start even when the estimate exceeds `max_cost` (the guard still stops the run)."""
    announce: Callable[[str], None] | None = None
    """Where the cost estimate is told before the run starts (the CLI: stderr)."""


@dataclass
class RunSummary:
    run_id: str
    db: Path
    sessions_total: int
    sessions_run: int
    sessions_skipped_resume: int
    finished: int
    errors: int
    skipped_deps: int
    proc: float | None
    """Headline figures, each the mean over the sessions of the protocol that defines it
    (ablation variants left out): PROC and COMP (intent tracking; COMP wherever there is a
    checklist), verified-outcome score, triple F1; and the trigger score, ProactBench's
    weighted score pooled over judged triggers (`bench report triggers`)."""
    comp: float | None
    score: float | None
    f1: float | None
    trigger_score: float | None
    judge_errors: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    llm_calls: int
    cache_hits: int
    wall_s: float
    repeats: int = 1
    pass_counts: list[tuple[int, int]] = field(default_factory=list)
    """Verified outcome, per task: (graded repeats n, passes c) — the inputs of pass@k and
    pass^k, which `benchpack.reports.stats` computes."""
    first_errors: list[str] = field(default_factory=list)
    """`<session>: <error>` for the first few distinct session errors (what to fix first)."""
    alone: int = 0
    """Finished sessions run with `--alone` without their dependencies (not in the figures)."""
    heuristic_judge: bool = False
    """The judge was `rules`: the scores it decided are a keyword heuristic, to be labelled."""
    grader_errors: int = 0
    """Checklist items a rule or python grader could not grade (neither passed nor failed:
    COMP and scores leave them out)."""
    python_refused: int = 0
    """Of those, python graders not run for want of `--allow-python`."""
    agent_errors: int = 0
    """Errored sessions whose error was the agent's: scored as failures in the figures."""
    ablation_variants: int = 0
    """Of the `finished` sessions, the ablation variants (left out of the headline figures)."""
    excluded: dict[str, int] = field(default_factory=dict)
    """Errored sessions left out of the figures, by error kind (infrastructure, simulator,
    judge, budget; `unclassified` for errors stored before error kinds)."""
    unpriced_calls: int = 0
    """LLM calls answered by a model litellm has no price for: `cost` leaves them out."""
    max_cost: float | None = None
    estimate: float | None = None
    """`--max-cost`: the estimated cost of what this invocation was to run."""
    spent: float = 0.0
    """What this invocation's LLM calls cost (priced calls; unpriced ones are counted apart)."""
    budget_stopped: int = 0
    """Sessions stopped by the budget (stored as errors of kind `budget`; `--resume` reruns
    them); nonzero means the run stopped before the end."""

    def as_dict(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in self.__dict__.items()}


class RunInterrupted(Exception):
    """Ctrl-C (SIGINT) stopped a run. The sessions committed before it stay in the store and
    the run is marked `interrupted`; `--resume run_id` runs the rest (the sessions cut short
    left no rows, so nothing is stored twice)."""

    def __init__(self, run_id: str, db: Path, done: int, total: int) -> None:
        super().__init__(f"run {run_id} interrupted: {done} of {total} sessions done")
        self.run_id, self.db, self.done, self.total = run_id, db, done, total


class RunContext:
    """Everything shared by the sessions of one run. Built once; no process-wide singletons."""

    def __init__(self, options: RunOptions, plan: Plan, store: Store, run_id: str,
                 agent: AgentAdapter, protocols: ProtocolRegistry, work_dir: Path,
                 llm: Callable[[], Any]) -> None:
        self.options = options
        self.plan = plan
        self.store = store
        self.run_id = run_id
        self.agent = agent
        self.agent_name = agent.name
        self.protocols = protocols
        self.templates = Templates(plan.prompts)
        models = plan.defaults.models
        self.roles = Roles.resolve(
            {"simulator": options.simulator, "judge": options.judge, "planner": options.planner},
            {"simulator": models.simulator, "judge": models.judge, "planner": models.planner},
            self.templates, llm, plan.defaults.seed)
        self.work_dir = work_dir
        self.alone: dict[str, list[str]] = {}
        """Sessions run with `--alone` → the sessions they depend on that did not run."""
        self.llm = llm
        """The run's one LLM client (created on first use: litellm is slow to import)."""
        self.services = ServicePool(plan, work_dir)
        """The run's HTTP service instances (issue 12, section 2)."""
        self.budget: Any = None
        """`--max-cost`: the run's `budget.Budget`, shared with its LLM client."""


def redactor_for(options: ClientOptions) -> Any:
    """What the store masks: every key in the environment, the `--api-key-env` one whatever
    its name, and keys inside `--api-base`."""
    from .redact import Redactor

    return Redactor.from_environment(extra_names=[options.api_key_env], urls=[options.api_base])


def make_llm_client(options: ClientOptions) -> Any:
    from .cache import ResponseCache
    from .llm import LLMClient, LLMConfig

    cache_dir = Path(options.cache_dir) if options.cache_dir else Path(".bench-cache")
    cache = ResponseCache(cache_dir)
    cache.enabled = options.use_cache
    api_key = os.environ.get(options.api_key_env) if options.api_key_env else None
    if api_key is None and options.api_base and not os.environ.get("OPENAI_API_KEY"):
        # local OpenAI-compatible servers (vLLM, llama.cpp, Ollama…) ignore the key, but the
        # OpenAI client refuses to send a request without one
        api_key = "no-key"
    config = LLMConfig(api_base=options.api_base, api_key=api_key,
                       max_retries=options.max_retries, timeout_s=options.timeout_s,
                       max_concurrent_per_model=options.max_concurrent_per_model,
                       requests_per_minute=dict(options.requests_per_minute),
                       backoff_base_s=options.retry_backoff_s)
    return LLMClient(config, cache=cache, backend=options.llm_backend)


def make_agent(spec: str, options: RunOptions, llm: Callable[[], Any]) -> AgentAdapter:
    """The agent adapter for `spec` (`<scheme>:<argument>`, see `agents.registry`)."""
    from .agents.registry import AgentContext, default_agent_registry

    return default_agent_registry().create(spec, AgentContext(llm=llm, options=options))


def new_run_id(plan: Plan, agent: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    tail = hashlib.sha256(f"{plan.pack.content_hash}{agent}{uuid.uuid4()}".encode()).hexdigest()
    return f"{plan.pack.name}-{stamp}-{tail[:6]}"


def _with_dependencies(plan: Plan, ids: set[str]) -> set[str]:
    """`ids` plus every session they depend on or take prior transcripts from, transitively:
    a session run without them would be judged on a context it never had."""
    out, todo = set(ids), list(ids)
    while todo:
        s = plan.sessions[todo.pop()]
        for d in [*s.depends_on, *s.prior_sessions]:
            if d in plan.sessions and d not in out:
                out.add(d)
                todo.append(d)
    return out


def _select(plan: Plan, patterns: list[str]) -> list[str]:
    import fnmatch

    ids = list(plan.sessions)
    if not patterns:
        return ids
    return [i for i in ids if any(fnmatch.fnmatchcase(i, p) or
                                  fnmatch.fnmatchcase(plan.sessions[i].name, p) for p in patterns)]


class Progress:
    """A progress bar on stderr (nothing when disabled or there is nothing to do)."""

    def __init__(self, total: int, enabled: bool, label: str = "bench run") -> None:
        self.total = total
        self.done = 0
        self.errors = 0
        self._bar: Any = None
        self._task: Any = None
        if enabled and total:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as Bar

            self._bar = Bar(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
                            TextColumn("ETA"), TimeRemainingColumn(), transient=False)
            self._task = self._bar.add_task("run", total=total, info="")
            self._bar.start()

    def committed(self, info: str, error: bool = False) -> Callable[[], None]:
        """What the store calls (on its writer thread) once a session is durable: the bar
        advances on the event loop then, never before the session's commit."""
        loop = asyncio.get_running_loop()

        def report() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is watching
                loop.call_soon_threadsafe(self.advance, info, error)
        return report

    def advance(self, info: str, error: bool = False) -> None:
        self.done += 1
        self.errors += int(error)
        if self._bar is not None:
            self._bar.update(self._task, advance=1,
                             info=f"{info[:40]}" + (f" [red]{self.errors} err" if self.errors else ""))

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()


async def run_plan_async(options: RunOptions) -> RunSummary:
    started = time.time()
    plan = load_plan(options.plan)
    fresh = not Path(options.db).exists()
    store = Store(options.db, redactor_for(options))
    stop_on_sigterm = _cancel_on_sigterm()
    try:
        if options.resume:  # the run keeps the store's rows: they must all be readable
            store.verify()
        return await _run(options, plan, store, started)
    except Exception as exc:  # a block found damaged mid-run (an index, a row group)
        why = damage_reason(exc)
        if why is None or isinstance(exc, StoreDamagedError):
            raise
        raise damaged(options.db, why) from None
    finally:
        stop_on_sigterm()
        try:  # a mistake stopped the run before its run row: leave no new store behind
            unused = fresh and store.run_count() == 0
        except Exception:  # keep the file: the original error is what matters
            unused = False
        try:
            store.close()
        except Exception as exc:  # the last checkpoint met a damaged block
            why = damage_reason(exc)
            if why is None:
                raise
            raise damaged(options.db, why) from None
        if unused:
            for suffix in ("", ".wal"):
                Path(f"{options.db}{suffix}").unlink(missing_ok=True)


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


async def _run(options: RunOptions, plan: Plan, store: Store, started: float) -> RunSummary:
    if options.resume:
        if not options.run_id:
            raise ValueError("--resume needs the RUN_ID to continue")
        existing = store.run_exists(options.run_id)
        if existing is None:
            raise ValueError(f"no run `{options.run_id}` in {options.db}")
        run_id = options.run_id
        if existing.get("pack_name") != plan.pack.name:  # a recompiled plan of it is fine
            raise ValueError(f"--resume {run_id}: that run is of pack `{existing.get('pack_name')}`"
                             f", this plan of `{plan.pack.name}`; pass the plan it ran "
                             f"({existing.get('plan_path')})")
        if options.repeats is None:
            options.repeats = int(existing.get("repeats") or 1)
        _inherit_roles(options, existing)
    else:
        run_id = options.run_id or new_run_id(plan, options.agent)
        if store.run_exists(run_id):
            raise ValueError(f"run `{run_id}` already exists in {options.db}; pass --resume "
                             "to continue it or choose another --run-id")
    if options.dialogue_from:  # checked per session too; here so a typo stops the whole run
        if options.trigger_mode == "live":
            raise ValueError("--dialogue-from replays a fixed dialogue; use --trigger-mode "
                             "offline or auto")
        if store.run_exists(options.dialogue_from) is None:
            raise ValueError(f"--dialogue-from: no run `{options.dialogue_from}` in "
                             f"{options.db}")
    selected = set(_select(plan, options.sessions))
    unmatched = [p for p in options.sessions if not _select(plan, [p])]
    if unmatched:
        names = sorted({s.name for s in plan.sessions.values()})
        shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
        raise ValueError(f"--session {', '.join(unmatched)} matches no session of the plan "
                         f"(its sessions: {shown}; ids and names take * globs)")
    missing: dict[str, list[str]] = {}
    if options.sessions and not options.alone:
        selected = _with_dependencies(plan, selected)
    elif options.sessions:
        for sid in selected:
            lacking = sorted(_with_dependencies(plan, {sid}) - selected)
            if lacking:
                missing[sid] = lacking
    _check_allow_python(plan, selected, options.allow_python)
    _check_process_services(plan, selected, options.allow_python)
    repeats = options.repeats or plan.defaults.repeats
    work_dir = Path(options.work_dir) if options.work_dir else Path(
        tempfile.mkdtemp(prefix="benchpack-"))
    clients: list[Any] = []

    budget: Any = None

    def llm() -> Any:
        if not clients:
            clients.append(make_llm_client(options))
            clients[0].budget = budget
        return clients[0]

    agent = make_agent(options.agent, options, llm)
    check = getattr(agent, "check_plan", None)
    if check is not None:  # a script naming no plan session: one located error, nothing run
        check([(s.id, s.name) for s in plan.sessions.values()])
    ctx = RunContext(options, plan, store, run_id, agent, default_protocols(), work_dir, llm)
    ctx.alone = missing
    if options.resume:
        # one run, one agent: sessions of two agents under one name mix their figures
        if existing and existing.get("agent") and existing["agent"] != options.agent:
            raise ValueError(f"run `{run_id}` was run with --agent {existing['agent']}; "
                             f"resume it with the same agent (or start a new run)")
        for role in ("simulator", "judge"):
            if existing and existing.get(role) and existing[role] != ctx.roles.uri(role):
                raise ValueError(f"run `{run_id}` was run with --{role} {existing[role]}; "
                                 f"resume it with the same {role} (or start a new run)")
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in options.__dict__.items()
              if k not in ("api_key_env", "llm_backend")}
    config["api_key_env"] = options.api_key_env  # the variable's name, never its value
    config["prompt_templates"] = templates_fingerprint(plan.prompts)  # for `bench compare`
    # what the run promised, so reports can account for every (session, repeat) that never
    # ran; a resumed run keeps what earlier invocations promised
    earlier = (store.run_exists(run_id) or {}).get("config") or {}
    if isinstance(earlier, str):
        earlier = json.loads(earlier)
    config["planned_sessions"] = sorted(set(selected) | set(earlier.get("planned_sessions", ())))

    row = {"run_id": run_id, "created_at": started, "updated_at": started,
           "plan_path": str(options.plan), "plan_hash": plan.pack.content_hash,
           "pack_name": plan.pack.name, "pack_version": plan.pack.version,
           "benchpack_version": plan.benchpack_version, "agent": options.agent,
           "simulator": ctx.roles.uri("simulator"), "judge": ctx.roles.uri("judge"),
           "repeats": repeats,
           "config": config, "status": "running"}
    existing = store.run_exists(run_id)
    if existing:
        row["created_at"] = existing["created_at"]
    finished = store.finished(run_id)

    chains: list[tuple[str, int, list[PlanSession]]] = []
    by_episode: dict[str, tuple[list[PlanSession], list[PlanSession]]] = {}
    for s in plan.sessions.values():  # in plan (dependency) order
        if s.id in selected:
            members_, variants_ = by_episode.setdefault(s.episode, ([], []))
            (members_ if s.variant.ablation is None else variants_).append(s)
    for ep in plan.episodes.values():
        members, variants = by_episode.get(ep.id, ([], []))
        for r in range(repeats):
            if members:
                chains.append((ep.id, r, members))
            for v in variants:  # ablation variants run alone in a fresh environment
                chains.append((f"{ep.id}~{v.name}", r, [v]))
    for _, r, ss in chains:
        if needs_replay(plan, ss[0].environment) and any(
                (s.id, s.fingerprint, r) not in finished for s in ss):
            # a service without `state` endpoints cannot be put back as it was after the last
            # finished session: the episode re-runs from its start (reruns replace their rows)
            ids = {s.id for s in ss}
            finished = {k for k in finished if not (k[2] == r and k[0] in ids)}
    total = sum(len(c[2]) for c in chains)
    todo = sum(1 for _, r, ss in chains for s in ss if (s.id, s.fingerprint, r) not in finished)
    estimate = None
    if options.max_cost is not None:  # before the run row: a refused run leaves nothing behind
        from .budget import Budget, estimate_run, unpriced_note
        estimate = estimate_run(ctx, chains, finished)
        if options.announce is not None:
            options.announce(f"estimated cost: {estimate.describe()}; --max-cost "
                             f"${options.max_cost:.4f}" + unpriced_note(estimate))
        if estimate.cost > options.max_cost and not options.force:
            raise ValueError(
                f"--max-cost ${options.max_cost:.4f}: the run is estimated at "
                f"${estimate.cost:.4f} ({estimate.sessions} session runs) (hint: raise "
                "--max-cost, run fewer sessions with --session or fewer --repeats, or pass "
                "--force to start anyway: the run still stops before a call could exceed "
                "the budget)")
        budget = ctx.budget = Budget(options.max_cost)
        if clients:
            clients[0].budget = budget
    store.upsert_run(row)
    progress = Progress(todo, options.progress)
    stats = {"run": 0, "finished": 0, "errors": 0, "skipped": 0, "budget": 0}
    sem = asyncio.Semaphore(max(1, options.max_concurrency))
    store.start()

    async def chain(key: str, repeat: int, sessions: list[PlanSession]) -> None:
        async with sem:
            await run_chain(ctx, key, repeat, sessions, finished, progress, stats)

    try:
        await asyncio.gather(*(chain(k, r, ss) for k, r, ss in chains))
        if clients and clients[0].cache is not None:
            clients[0].cache.finish_soon()  # no call follows: write the last entries now
        store.flush()
        await asyncio.sleep(0)  # let the last commits' progress reports run
    except (asyncio.CancelledError, KeyboardInterrupt):
        # Ctrl-C: asyncio.run cancels us once the sessions in flight are cancelled. Keep what
        # committed and say so in the store, or every report would show the run `running`.
        store.flush()
        row["updated_at"] = time.time()
        row["status"] = "interrupted"
        store.upsert_run(row)
        now = store.finished(run_id)
        done = sum(1 for _, r, ss in chains for s in ss if (s.id, s.fingerprint, r) in now)
        raise RunInterrupted(run_id, Path(options.db), done, total) from None
    finally:
        progress.stop()
        closing = getattr(agent, "aclose", None)
        if closing is not None:  # an adapter's run-wide servers (cmd2's model proxy)
            with contextlib.suppress(Exception):
                await closing()
        try:  # HTTP services stop on every way out (Ctrl-C and errors included)
            await ctx.services.close()
        except BaseException:
            ctx.services.kill_all()
            raise
        finally:
            shutil.rmtree(work_dir, ignore_errors=True) if not options.work_dir else None
    row["updated_at"] = time.time()
    # stopped by the budget: `interrupted`, as Ctrl-C leaves it, since `--resume` continues it
    row["status"] = ("interrupted" if stats["budget"] else
                     "finished" if stats["errors"] == 0 and stats["skipped"] == 0 else "partial")
    store.upsert_run(row)
    summary = summarise(store, run_id, total, stats, total - todo, time.time() - started,
                        repeats)
    if budget is not None:
        summary.max_cost, summary.spent = budget.limit, budget.spent
        summary.estimate = estimate.cost if estimate is not None else None
        summary.budget_stopped = stats["budget"]
    return summary


async def run_chain(ctx: RunContext, key: str, repeat: int, sessions: list[PlanSession],
                    finished: set[tuple[str, str, int]], progress: Progress,
                    stats: dict[str, int]) -> None:
    episode_id = sessions[0].episode
    env_root = ctx.work_dir / f"{key.replace('/', '_')}-r{repeat}"
    chain = ChainMemory(ctx.store, ctx.run_id, repeat)
    failed: set[str] = set()
    last_done: str | None = None
    envs: list[EpisodeEnvironment] = []
    try:
        await _run_sessions(ctx, sessions, repeat, episode_id, env_root, chain, finished,
                            failed, last_done, progress, stats, envs)
    finally:  # every exit path, a cancelled run included: the chain's HTTP services go back
        # to the pool (reset before their next use) and no toolset worker is left behind
        for e in envs:
            e.release_processes()
            await e.aclose()


async def _run_sessions(ctx: RunContext, sessions: list[PlanSession], repeat: int,
                        episode_id: str, env_root: Path, chain: ChainMemory,
                        finished: set[tuple[str, str, int]], failed: set[str],
                        last_done: str | None, progress: Progress,
                        stats: dict[str, int], envs: list[EpisodeEnvironment]) -> None:
    plan = ctx.plan
    env: EpisodeEnvironment | None = None
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
            ctx.store.submit(_skipped_rows(ctx, s, repeat, [d for d in s.depends_on
                                                             if d in failed]),
                             progress.committed(s.name, error=True))
            continue
        if env is None:
            env = EpisodeEnvironment.create(plan, s.environment, env_root)
            env.process_pool = ctx.services
            envs.append(env)
            if last_done is not None:
                snap = ctx.store.snapshot(ctx.run_id, episode_id, repeat, last_done)
                if snap is not None:
                    env.restore(snap)
        rows, ok = await run_one(ctx, s, repeat, env, chain)
        stats["run"] += 1
        if rows.session.get("error_kind") == "budget":
            # stopped before a call: stored as an error of kind `budget` (so the inventory
            # has it) and rerun by `--resume`; its dependents wait for it, unstarted
            stats["budget"] += 1
            stats["errors"] += 1
            ctx.store.submit(rows, progress.committed(s.name, error=True))
            return
        if ok:
            stats["finished"] += 1
            last_done = s.id
        else:
            stats["errors"] += 1
            failed.add(s.id)
        ctx.store.submit(rows, progress.committed(s.name, error=not ok))


async def run_one(ctx: RunContext, s: PlanSession, repeat: int, env: EpisodeEnvironment,
                  chain: ChainMemory) -> tuple[SessionRows, bool]:
    plan = ctx.plan
    started = time.time()
    calls: list[LLMCallRecord] = []
    env.add_session_files(s.files)
    toolbox = ToolBox(plan, s, env, allow_python=ctx.options.allow_python)
    prior = [m for pid in s.prior_sessions for m in chain.transcript(pid)
             if m.role in ("user", "assistant") and m.content]
    brief = session_brief(plan, s, repeat, toolbox, prior, plan.defaults.seed)
    brief.recorder = calls.append
    sctx = SessionContext(ctx, plan, s, repeat, ctx.agent, brief, toolbox, env, calls.append,
                          chain)
    if s.id in ctx.alone:
        sctx.extra.update(context="alone", missing_dependencies=ctx.alone[s.id])
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
    refused = next((c.error for c in calls if c.error and c.error.startswith(BUDGET_ERROR)),
                   None)
    if refused is not None:  # whichever role's call it was, the session is not finished:
        # a judge item or an agent turn cut short by the budget must not be scored
        ok, kind, error = False, "budget", refused
        result = ProtocolResult(termination="error", error=refused)
    snapshot = env.snapshot() if ok else None
    if snapshot is not None and env.processes:
        try:
            snapshot["processes"] = await env.snapshot_processes()
        except Exception as exc:  # without its state the session cannot be resumed after
            ok, snapshot, kind = False, None, "infrastructure"
            error = f"{type(exc).__name__}: {exc}"
            result = ProtocolResult(termination="error", error=error)
    rows = build_rows(sctx, result, checklist, calls, started, "finished" if ok else "error",
                      error, snapshot, error_kind=kind)
    chain.remember(s.id, sctx.messages, result)
    return rows, ok


def _check_allow_python(plan: Plan, selected: set[str], allow_python: bool) -> None:
    """Python toolsets and the shell run code: without --allow-python every call would fail,
    so the run stops before it starts, naming what needs it."""
    if allow_python:
        return
    needs = sorted({t for sid in selected for t in plan.sessions[sid].tools
                    if (t == "shell" and t not in plan.tools)
                    or isinstance(getattr(plan.tools.get(t), "impl", None), PyToolImpl)})
    if needs:
        shown = ", ".join(f"`{t}`" for t in needs[:5]) + (", …" if len(needs) > 5 else "")
        raise ValueError(f"this plan's sessions offer tools that run code ({shown}: python "
                         "toolsets or the shell); pass --allow-python to run them in the "
                         "sandbox")


def _check_process_services(plan: Plan, selected: set[str], allow_python: bool) -> None:
    """HTTP services are pack code: refuse, before anything runs, to run them without
    `--allow-python` (naming them)."""
    if allow_python:
        return
    envs = {plan.sessions[sid].environment for sid in selected}
    names = sorted({n for e in envs for n in process_services(plan, e)})
    if names:
        which = ", ".join(f"`{n}`" for n in names)
        many = len(names) > 1
        raise ValueError(f"HTTP service{'s' if many else ''} {which}: {'they run' if many else 'it runs'} "
                         "the pack's own code (a process, in the sandbox), which needs "
                         f"--allow-python (pass it to run {'them' if many else 'it'})")


ERROR_KINDS = ("agent", "infrastructure", "simulator", "judge", "budget")
"""Whose error ended a session. Only `agent` (the evaluated agent crashed or sent malformed
output) is the agent's failure and scores the protocol's worst score; the others are excluded
from the figures and counted beside them. `budget`: `--max-cost` refused a call of the session
(rerun by `--resume`)."""


def error_kind_of(exc: BaseException) -> str:
    """The kind of an exception that ended a session outside the agent's own turns (those come
    back as errored replies): a judge or user-side role that gave up, else infrastructure."""
    if isinstance(exc, JudgeError):
        return "judge" if exc.role == "judge" else "simulator"
    return "infrastructure"


def _skipped_rows(ctx: RunContext, s: PlanSession, repeat: int, because: list[str]) -> SessionRows:
    now = time.time()
    return SessionRows(run_id=ctx.run_id, session_id=s.id, repeat=repeat, session={
        **session_identity(ctx.run_id, ctx.agent_name, s, repeat),
        "status": "skipped", "termination": "dependency_failed",
        "error": "skipped: dependency failed: " + ", ".join(because),
        "turns": 0, "user_turns": 0, "assistant_turns": 0, "tool_calls": 0, "compactions": 0,
        "judge_errors": 0, "grader_errors": 0, "prompt_tokens": 0, "completion_tokens": 0,
        "cost": 0.0, "started_at": now, "finished_at": now, "duration_s": 0.0, "extra": None})


def _inherit_roles(options: RunOptions, existing: dict[str, Any]) -> None:
    """A resumed run keeps the simulator, judge and planner it was started with unless they are
    given again, so its sessions are not judged by two judges."""
    config = existing.get("config") or {}
    if isinstance(config, str):
        config = json.loads(config)
    for role in ("simulator", "judge", "planner"):
        if getattr(options, role) is None and config.get(role) is not None:
            setattr(options, role, config[role])


_FULL = "coalesce(json_extract_string(extra, '$.context'), '') <> 'alone'"
"""Not a `--alone` session (run without the sessions it depends on)."""


def summarise(store: Store, run_id: str, total: int, stats: dict[str, int], resumed: int,
              wall: float, repeats: int = 1) -> RunSummary:
    con = store.con
    row = con.execute(
        # headline figures over finished sessions and those the agent errored in (stored with
        # the protocol's worst score); other errors are unknown, excluded and counted. Each
        # the mean over sessions of their repeats' mean, ablation variants left out: what
        # `bench report summary` shows (its `headline` view). `--alone` sessions lacked their
        # context: never averaged with full-context ones
        "WITH per AS (SELECT session_id, avg(coalesce(proc_group, proc)) AS proc, "
        "avg(comp) AS comp, avg(score) AS score, avg(f1) AS f1 FROM sessions WHERE "
        "run_id = ? AND ablation IS NULL AND (status = 'finished' OR error_kind = 'agent') "
        f"AND {_FULL} GROUP BY session_id) "
        "SELECT (SELECT avg(proc) FROM per), (SELECT avg(comp) FROM per), "
        "(SELECT avg(score) FROM per), coalesce(sum(judge_errors), 0), "
        "count(*) FILTER (WHERE status = 'finished'), count(*) FILTER (WHERE status='error'), "
        "count(*) FILTER (WHERE status='skipped'), (SELECT avg(f1) FROM per), "
        # ProactBench's trigger score: pooled over judged triggers, not a mean of sessions
        "(SELECT avg(t.score) FROM triggers t JOIN sessions x USING (run_id, session_id, "
        "repeat) WHERE t.run_id = ? AND t.label IN ('PASS', 'PARTIAL', 'FAIL') AND "
        "x.ablation IS NULL AND (x.status = 'finished' OR x.error_kind = 'agent') AND "
        f"{_FULL.replace('(extra', '(x.extra')}) "
        "FROM sessions WHERE run_id = ?", [run_id, run_id, run_id]).fetchone()
    kinds = dict(con.execute(
        "SELECT coalesce(error_kind, 'unclassified'), count(*) FROM sessions WHERE run_id = ? "
        "AND status = 'error' GROUP BY ALL", [run_id]).fetchall())
    llm = con.execute(
        "SELECT count(*), coalesce(sum(prompt_tokens),0), coalesce(sum(completion_tokens),0), "
        "coalesce(sum(cost),0), count(*) FILTER (WHERE cache_hit), count(*) FILTER (WHERE "
        "cost IS NULL AND error IS NULL AND NOT coalesce(cache_hit, false)) FROM llm_calls "
        "WHERE run_id = ?", [run_id]).fetchone()
    # verified outcome: per session, graded repeats and passes (a NULL `passed` is ungraded)
    # tasks as the `verified_tasks` view folds them (style variants into their base), so
    # this summary and `bench report pass-k` count the same (n, c)
    counts = con.execute(
        "SELECT count(passed), count(*) FILTER (WHERE passed) FROM sessions WHERE run_id = ? "
        "AND protocol IN ('verified_outcome', 'instructed_user') AND (status = 'finished' OR "
        "error_kind = 'agent') "
        f"AND {_FULL} GROUP BY coalesce(base_session, session_id) ORDER BY "
        "coalesce(base_session, session_id)", [run_id]).fetchall()
    graders = con.execute(
        "SELECT coalesce(sum(grader_errors), 0) FROM sessions WHERE run_id = ?",
        [run_id]).fetchone()
    refused = con.execute(
        "SELECT count(*) FROM checklist_results WHERE run_id = ? AND error = ?",
        [run_id, PYTHON_REFUSED]).fetchone()
    first_errors = con.execute(
        "SELECT arg_min(name, started_at), error FROM sessions WHERE run_id = ? AND "
        "status = 'error' GROUP BY error ORDER BY min(started_at) LIMIT 3", [run_id]).fetchall()
    judge = con.execute("SELECT judge FROM runs WHERE run_id = ?", [run_id]).fetchone()
    alone = con.execute(
        "SELECT count(*) FROM sessions WHERE run_id = ? AND status = 'finished' AND "
        "json_extract_string(extra, '$.context') = 'alone'", [run_id]).fetchone()
    return RunSummary(
        heuristic_judge=bool(judge and judge[0] == "rules"), alone=int(alone[0] if alone else 0),
        run_id=run_id, db=store.path, sessions_total=total, sessions_run=stats["run"],
        sessions_skipped_resume=resumed, finished=int(row[4]), errors=int(row[5]),
        skipped_deps=int(row[6]), proc=row[0], comp=row[1], score=row[2], f1=row[7],
        trigger_score=row[8],
        judge_errors=int(row[3]), prompt_tokens=int(llm[1]), completion_tokens=int(llm[2]),
        cost=float(llm[3]), llm_calls=int(llm[0]), cache_hits=int(llm[4]), wall_s=wall,
        unpriced_calls=int(llm[5]),
        repeats=repeats, pass_counts=[(int(n), int(c)) for n, c in counts if n],
        grader_errors=int(graders[0]) if graders else 0,
        python_refused=int(refused[0]) if refused else 0,
        first_errors=[f"{name}: {str(error).strip().splitlines()[0][:200]}"
                      for name, error in first_errors if error],
        agent_errors=int(kinds.pop("agent", 0)),
        ablation_variants=int(con.execute(
            "SELECT count(*) FROM sessions WHERE run_id = ? AND status = 'finished' AND "
            "ablation IS NOT NULL", [run_id]).fetchone()[0]),
        excluded={str(k): int(v) for k, v in sorted(kinds.items())})


def run_plan(options: RunOptions) -> RunSummary:
    """Synchronous entry point (the CLI's)."""
    return asyncio.run(run_plan_async(options))


def dumps_summary(summary: RunSummary) -> str:
    return json.dumps(summary.as_dict(), indent=2)
