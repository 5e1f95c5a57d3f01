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
import json
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchpack.specs.origin_label import RUN_CONFIG_KEY as ORIGIN_KEY
from benchpack.specs.plan import Plan, PlanSession

from . import tmpdirs
from .chains import ERROR_KINDS, error_kind_of, run_chain, run_one, store_sink
from .env.service_pool import needs_replay
from .errors import UsageError
from .judges.base import templates_fingerprint
from .planfile import load_plan
from .preflight import check_allow_python, check_machine, check_process_services
from .prewarm import prewarm_http_client
from .protocols.base import default_protocols
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


async def run_plan_async(options: RunOptions) -> RunSummary:
    started = time.time()
    prewarm_http_client(options.api_base)
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


def _starting_row(run_id: str, started: float, options: RunOptions, plan: Plan
                  ) -> dict[str, Any]:
    """A run's row before its checks are done (`status` starting): enough for `--resume` to
    find it and for its checks (the pack, the agent); the full row replaces it at the start."""
    return {"run_id": run_id, "created_at": started, "updated_at": started,
            "plan_path": str(options.plan), "plan_hash": plan.pack.content_hash,
            "pack_name": plan.pack.name, "pack_version": plan.pack.version,
            "benchpack_version": plan.benchpack_version, "agent": options.agent,
            "simulator": options.simulator, "judge": options.judge,
            "repeats": options.repeats or plan.defaults.repeats, "config": {},
            "status": "starting"}


async def _run(options: RunOptions, plan: Plan, store: Store, started: float,
               made: dict[str, str]) -> RunSummary:
    if options.resume:
        if not options.run_id:
            raise UsageError("--resume needs the RUN_ID to continue")
        existing = store.run_exists(options.run_id)
        if existing is None:
            raise UsageError(f"no run `{options.run_id}` in {options.db}")
        run_id = options.run_id
        if existing.get("pack_name") != plan.pack.name:  # a recompiled plan of it is fine
            raise UsageError(f"--resume {run_id}: that run is of pack `{existing.get('pack_name')}`"
                             f", this plan of `{plan.pack.name}`; pass the plan it ran "
                             f"({existing.get('plan_path')})")
        if options.repeats is None:
            options.repeats = int(existing.get("repeats") or 1)
        _inherit_roles(options, existing)
    else:
        run_id = options.run_id or new_run_id(plan, options.agent)
        if store.run_exists(run_id):
            raise UsageError(f"run `{run_id}` already exists in {options.db}; pass --resume "
                             "to continue it or choose another --run-id")
    if options.dialogue_from:  # checked per session too; here so a typo stops the whole run
        if options.trigger_mode == "live":
            raise UsageError("--dialogue-from replays a fixed dialogue; use --trigger-mode "
                             "offline or auto")
        if store.run_exists(options.dialogue_from) is None:
            raise UsageError(f"--dialogue-from: no run `{options.dialogue_from}` in "
                             f"{options.db}")
    selected = set(_select(plan, options.sessions))
    unmatched = [p for p in options.sessions if not _select(plan, [p])]
    if unmatched:
        names = sorted({s.name for s in plan.sessions.values()})
        shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
        raise UsageError(f"--session {', '.join(unmatched)} matches no session of the plan "
                         f"(its sessions: {shown}; ids and names take * globs)")
    missing: dict[str, list[str]] = {}
    if options.sessions and not options.alone:
        selected = _with_dependencies(plan, selected)
    elif options.sessions:
        for sid in selected:
            lacking = sorted(_with_dependencies(plan, {sid}) - selected)
            if lacking:
                missing[sid] = lacking
    check_allow_python(plan, selected, options.allow_python)
    if options.executor == "ray":
        from .ray_executor import check_options
        check_options(options)
    elif options.executor != "local":
        raise UsageError(f"--executor {options.executor}: not an executor (hint: local or ray)")
    check_process_services(plan, selected, options.allow_python)
    repeats = options.repeats or plan.defaults.repeats
    # a temporary work directory is made just before the sessions start (below): a run
    # refused before then (a mistake in the options, --max-cost, a resume mismatch) used to
    # leave an empty one behind each time
    work_dir = Path(options.work_dir) if options.work_dir else Path(
        tempfile.gettempdir(), "benchpack-not-made-yet")
    clients: list[Any] = []

    budget: Any = None

    def llm() -> Any:
        if not clients:
            clients.append(make_llm_client(options))
            clients[0].budget = budget
        return clients[0]

    if not options.resume:
        # the run's row, before anything slow (the agent's import, the cost estimate, the
        # machine checks): a run killed from here on is one `--resume RUN_ID` finds (issue
        # 27). A refusal below removes it again (`run_plan_async`)
        store.upsert_run(_starting_row(run_id, started, options, plan))
        made["starting"] = run_id
    agent = make_agent(options.agent, options, llm)
    check = getattr(agent, "check_plan", None)
    if check is not None:  # a script naming no plan session: one located error, nothing run
        check([(s.id, s.name) for s in plan.sessions.values()])
    ctx = RunContext(options, plan, store, run_id, agent, default_protocols(), work_dir, llm)
    ctx.alone = missing
    if options.resume:
        # one run, one agent: sessions of two agents under one name mix their figures
        if existing and existing.get("agent") and existing["agent"] != options.agent:
            raise UsageError(f"run `{run_id}` was run with --agent {existing['agent']}; "
                             f"resume it with the same agent (or start a new run)")
        for role in ("simulator", "judge"):
            if existing and existing.get(role) and existing[role] != ctx.roles.uri(role):
                raise UsageError(f"run `{run_id}` was run with --{role} {existing[role]}; "
                                 f"resume it with the same {role} (or start a new run)")
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in options.__dict__.items()
              if k not in ("api_key_env", "llm_backend")}
    config["api_key_env"] = options.api_key_env  # the variable's name, never its value
    config["prompt_templates"] = templates_fingerprint(plan.prompts)  # for `bench compare`
    config["role_files"] = ctx.roles.file_digests()  # scripted roles compare by content
    if plan.pack.origin is not None:  # the pack's `origin:` label, which every report shows
        config[ORIGIN_KEY] = plan.pack.origin.model_dump(mode="json")
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
            raise UsageError(
                f"--max-cost ${options.max_cost:.4f}: the run is estimated at "
                f"${estimate.cost:.4f} ({estimate.sessions} session runs) (hint: raise "
                "--max-cost, run fewer sessions with --session or fewer --repeats, or pass "
                "--force to start anyway: the run still stops before a call could exceed "
                "the budget)")
        budget = ctx.budget = Budget(options.max_cost)
        if clients:
            clients[0].budget = budget
    # what the run needs from the machine, once, before its row and first session: a lack is
    # one line and exit 1, never a run of errors (or of silent failures) — preflight.py
    await check_machine(plan, selected, allow_python=options.allow_python,
                        executor=options.executor, ray_address=options.ray_address)
    store.upsert_run(row)
    progress = Progress(todo, options.progress)
    stats = {"run": 0, "finished": 0, "errors": 0, "skipped": 0, "budget": 0}
    sem = asyncio.Semaphore(max(1, options.max_concurrency))
    sink = store_sink(ctx, progress)
    store.start()

    async def chain(key: str, repeat: int, sessions: list[PlanSession]) -> None:
        async with sem:
            await run_chain(ctx, key, repeat, sessions, finished, sink, stats)

    tmpdirs.sweep()  # what runs killed by SIGKILL left in the temporary directory
    if not options.work_dir:
        work_dir = ctx.work_dir = ctx.services.work_dir = tmpdirs.temp_dir("benchpack-")
    try:
        if options.executor == "ray":
            from .ray_executor import run_chains
            await run_chains(ctx, chains, finished, progress, stats)
        else:
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
    except Exception:
        # the store writer failed (a full disk) or a bug: the run is not `running` any more;
        # what committed stays, and `--resume` runs the rest
        with contextlib.suppress(Exception):
            row["updated_at"] = time.time()
            row["status"] = "interrupted"
            store.upsert_run(row)
        raise
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
    # stopped by the budget, or sessions lost with Ray workers that kept dying: `interrupted`
    row["status"] = ("interrupted" if stats["budget"] or stats.get("lost") else
                     "finished" if stats["errors"] == 0 and stats["skipped"] == 0 else "partial")
    store.upsert_run(row)
    summary = summarise(store, run_id, total, stats, total - todo, time.time() - started,
                        repeats)
    if budget is not None:
        summary.max_cost, summary.spent = budget.limit, budget.spent
        summary.estimate = estimate.cost if estimate is not None else None
        summary.budget_stopped = stats["budget"]
    if stats.get("lost"):
        summary.first_errors.insert(0, f"{stats['lost']} session runs not run: their Ray "
                                    f"worker died at every attempt; --resume {run_id} runs them")
    return summary


def _inherit_roles(options: RunOptions, existing: dict[str, Any]) -> None:
    """A resumed run keeps the simulator, judge and planner it was started with unless they are
    given again, so its sessions are not judged by two judges."""
    config = existing.get("config") or {}
    if isinstance(config, str):
        config = json.loads(config)
    for role in ("simulator", "judge", "planner"):
        if getattr(options, role) is None and config.get(role) is not None:
            setattr(options, role, config[role])


def run_plan(options: RunOptions) -> RunSummary:
    """Synchronous entry point (the CLI's)."""
    return asyncio.run(run_plan_async(options))


