"""The stages of one `bench run`, in order: resolve the run, select its sessions, start it (the
agent, the run context and row), build the chains, hold it to its budget, execute, finalise.

`runner._run` calls them one after the other. Each reads the options it is given and never
changes them: what a resumed run inherits (its repeats, simulator, judge, planner) is a new
options object (`dataclasses.replace`), so every later stage sees one settled set of options.
The order of their side effects is the run's contract: nothing is written before the options
are checked, the `starting` row precedes the agent's (slow) import, a refusal over the budget
or the machine leaves no run row, and the run row precedes the first session.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchpack.specs.origin_label import RUN_CONFIG_KEY as ORIGIN_KEY
from benchpack.specs.plan import Plan, PlanSession

from . import tmpdirs
from .chains import StoreSink, run_chain
from .env.service_pool import needs_replay
from .errors import UsageError
from .judges.base import templates_fingerprint
from .preflight import check_allow_python, check_machine, check_process_services
from .protocols.base import default_protocols
from .run_types import (
    Progress,
    RunContext,
    RunInterrupted,
    RunOptions,
    RunSummary,
    make_agent,
    make_llm_client,
    new_run_id,
)
from .summary import summarise

if TYPE_CHECKING:
    from .budget import Budget, PlanEstimate
    from .store import Store

Chain = tuple[str, int, list[PlanSession]]
"""(chain key, repeat, its sessions in plan order): the scheduling unit."""
Finished = set[tuple[str, str, int]]
"""(session id, fingerprint, repeat) of the sessions already finished."""


@dataclass(frozen=True)
class ResolvedRun:
    options: RunOptions
    """The options with what a resumed run inherits filled in."""
    run_id: str
    existing: dict[str, Any] | None
    """The resumed run's row (None for a new run)."""


@dataclass(frozen=True)
class Selection:
    sessions: set[str]
    """The sessions to run: those `--session` names, with what they depend on unless
    `--alone`."""
    missing: dict[str, list[str]]
    """With `--alone`: session → the dependencies left out."""


@dataclass
class LazyClient:
    """The run's LLM client, made on first use (a scripted run never imports litellm); the
    budget reaches it whether it is made before or after the budget is set."""

    options: RunOptions
    budget: Budget | None = None
    made: list[Any] = field(default_factory=list)

    def __call__(self) -> Any:
        if not self.made:
            self.made.append(make_llm_client(self.options))
            self.made[0].budget = self.budget
        return self.made[0]

    def set_budget(self, budget: Budget) -> None:
        self.budget = budget
        if self.made:
            self.made[0].budget = budget


@dataclass(frozen=True)
class Started:
    ctx: RunContext
    agent: Any
    row: dict[str, Any]
    """The run row as it is written once the checks pass (`status` running)."""
    finished: Finished
    repeats: int
    selected: set[str]


def resolve_run(options: RunOptions, plan: Plan, store: Store) -> ResolvedRun:
    """The run id, and for `--resume` the run it continues: its pack must be this plan's, and
    it keeps its repeats, simulator, judge and planner unless they are given again."""
    existing = None
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
        options = replace(options, **inherited(options, existing))
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
    return ResolvedRun(options, run_id, existing)


def inherited(options: RunOptions, existing: dict[str, Any]) -> dict[str, Any]:
    """What a resumed run keeps of the run it continues: its repeats, and the simulator, judge
    and planner it was started with unless they are given again, so its sessions are not judged
    by two judges."""
    out: dict[str, Any] = {}
    if options.repeats is None:
        out["repeats"] = int(existing.get("repeats") or 1)
    config = existing.get("config") or {}
    if isinstance(config, str):
        config = json.loads(config)
    for role in ("simulator", "judge", "planner"):
        if getattr(options, role) is None and config.get(role) is not None:
            out[role] = config[role]
    return out


def select_sessions(options: RunOptions, plan: Plan) -> Selection:
    """The sessions `--session` names (every session without it), and what the options must
    allow for them: `--allow-python` for pack code, a known executor."""
    selected = set(matching(plan, options.sessions))
    unmatched = [p for p in options.sessions if not matching(plan, [p])]
    if unmatched:
        names = sorted({s.name for s in plan.sessions.values()})
        shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
        raise UsageError(f"--session {', '.join(unmatched)} matches no session of the plan "
                         f"(its sessions: {shown}; ids and names take * globs)")
    missing: dict[str, list[str]] = {}
    if options.sessions and not options.alone:
        selected = with_dependencies(plan, selected)
    elif options.sessions:
        for sid in selected:
            lacking = sorted(with_dependencies(plan, {sid}) - selected)
            if lacking:
                missing[sid] = lacking
    check_allow_python(plan, selected, options.allow_python)
    if options.executor == "ray":
        from .ray_executor import check_options
        check_options(options)
    elif options.executor != "local":
        raise UsageError(f"--executor {options.executor}: not an executor (hint: local or ray)")
    check_process_services(plan, selected, options.allow_python)
    return Selection(selected, missing)


def with_dependencies(plan: Plan, ids: set[str]) -> set[str]:
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


def matching(plan: Plan, patterns: list[str]) -> list[str]:
    import fnmatch

    ids = list(plan.sessions)
    if not patterns:
        return ids
    return [i for i in ids if any(fnmatch.fnmatchcase(i, p) or
                                  fnmatch.fnmatchcase(plan.sessions[i].name, p) for p in patterns)]


def starting_row(run_id: str, started: float, options: RunOptions, plan: Plan
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


def start_run(run: ResolvedRun, selection: Selection, plan: Plan, store: Store,
              started: float, made: dict[str, str], llm: LazyClient) -> Started:
    """The `starting` row (a new run), the agent, the run context, and the run row to write
    once the budget and the machine are checked."""
    options, run_id, existing = run.options, run.run_id, run.existing
    # a temporary work directory is made just before the sessions start (`execute`): a run
    # refused before then (a mistake in the options, --max-cost, a resume mismatch) used to
    # leave an empty one behind each time
    work_dir = Path(options.work_dir) if options.work_dir else Path(
        tempfile.gettempdir(), "benchpack-not-made-yet")
    if not options.resume:
        # the run's row, before anything slow (the agent's import, the cost estimate, the
        # machine checks): a run killed from here on is one `--resume RUN_ID` finds (issue
        # 27). A refusal below removes it again (`run_plan_async`)
        store.upsert_run(starting_row(run_id, started, options, plan))
        made["starting"] = run_id
    agent = make_agent(options.agent, options, llm)
    check = getattr(agent, "check_plan", None)
    if check is not None:  # a script naming no plan session: one located error, nothing run
        check([(s.id, s.name) for s in plan.sessions.values()])
    ctx = RunContext(options, plan, store, run_id, agent, default_protocols(), work_dir, llm)
    ctx.alone = selection.missing
    if options.resume:
        # one run, one agent: sessions of two agents under one name mix their figures
        if existing and existing.get("agent") and existing["agent"] != options.agent:
            raise UsageError(f"run `{run_id}` was run with --agent {existing['agent']}; "
                             f"resume it with the same agent (or start a new run)")
        for role in ("simulator", "judge"):
            if existing and existing.get(role) and existing[role] != ctx.roles.uri(role):
                raise UsageError(f"run `{run_id}` was run with --{role} {existing[role]}; "
                                 f"resume it with the same {role} (or start a new run)")
    repeats = options.repeats or plan.defaults.repeats
    row = {"run_id": run_id, "created_at": started, "updated_at": started,
           "plan_path": str(options.plan), "plan_hash": plan.pack.content_hash,
           "pack_name": plan.pack.name, "pack_version": plan.pack.version,
           "benchpack_version": plan.benchpack_version, "agent": options.agent,
           "simulator": ctx.roles.uri("simulator"), "judge": ctx.roles.uri("judge"),
           "repeats": repeats,
           "config": run_config(ctx, selection.sessions), "status": "running"}
    stored = store.run_exists(run_id)
    if stored:
        row["created_at"] = stored["created_at"]
    return Started(ctx, agent, row, store.finished(run_id), repeats, selection.sessions)


def run_config(ctx: RunContext, selected: set[str]) -> dict[str, Any]:
    """The run row's `config`: the options, and what `bench compare` and reports read."""
    options, plan, store = ctx.options, ctx.plan, ctx.store
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in options.__dict__.items()
              if k not in ("api_key_env", "llm_backend")}
    config["api_key_env"] = options.api_key_env  # the variable's name, never its value
    config["prompt_templates"] = templates_fingerprint(plan.prompts)  # for `bench compare`
    config["role_files"] = ctx.roles.file_digests()  # scripted roles compare by content
    if plan.pack.origin is not None:  # the pack's `origin:` label, which every report shows
        config[ORIGIN_KEY] = plan.pack.origin.as_config()
    # what the run promised, so reports can account for every (session, repeat) that never
    # ran; a resumed run keeps what earlier invocations promised
    earlier = (store.run_exists(ctx.run_id) or {}).get("config") or {}
    if isinstance(earlier, str):
        earlier = json.loads(earlier)
    config["planned_sessions"] = sorted(set(selected) | set(earlier.get("planned_sessions", ())))
    return config


def build_chains(plan: Plan, selected: set[str], repeats: int, finished: Finished
                 ) -> tuple[list[Chain], Finished]:
    """One chain per (episode, repeat) of the selected sessions, and one per ablation variant
    and repeat (a variant runs alone in a fresh environment); and the finished sessions a
    chain can resume after (an episode whose services cannot be restored re-runs whole)."""
    chains: list[Chain] = []
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
    return chains, finished


def to_do(chains: list[Chain], finished: Finished) -> int:
    return sum(1 for _, r, ss in chains for s in ss if (s.id, s.fingerprint, r) not in finished)


def hold_to_budget(ctx: RunContext, chains: list[Chain], finished: Finished, llm: LazyClient
                   ) -> tuple[Budget | None, PlanEstimate | None]:
    """With `--max-cost`: the run's estimate, refused above the limit unless `--force`, and
    the budget every call is checked against. Before the run row: a refused run leaves
    nothing behind."""
    options = ctx.options
    if options.max_cost is None:
        return None, None
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
    llm.set_budget(budget)
    return budget, estimate


async def execute(start: Started, chains: list[Chain], finished: Finished, todo: int,
                  llm: LazyClient) -> dict[str, int]:
    """Check the machine, write the run row, run the chains, write the final row with the last
    sessions (`Store.finish_run`); the run's counts (`run`, `finished`, `errors`, `skipped`,
    `budget`, with Ray `lost`). Interrupted (Ctrl-C, SIGTERM)
    or broken (a full disk, a bug), the run row says `interrupted` and what committed stays."""
    ctx, agent, row = start.ctx, start.agent, start.row
    options, plan, store = ctx.options, ctx.plan, ctx.store
    # what the run needs from the machine, once, before its row and first session: a lack is
    # one line and exit 1, never a run of errors (or of silent failures) — preflight.py
    await check_machine(plan, start.selected, allow_python=options.allow_python,
                        executor=options.executor, ray_address=options.ray_address)
    store.upsert_run(row)
    progress = Progress(todo, options.progress)
    stats = {"run": 0, "finished": 0, "errors": 0, "skipped": 0, "budget": 0}
    sem = asyncio.Semaphore(max(1, options.max_concurrency))
    sink = StoreSink(ctx, progress)
    store.start()

    started = [0]

    async def chain(key: str, repeat: int, sessions: list[PlanSession]) -> None:
        async with sem:
            started[0] += 1
            if len(chains) - started[0] in (0, max(1, options.max_concurrency)):
                # the last chain starts (and, a round before, the last but one round's):
                # what waits for the writer is committed now, while the last sessions run,
                # so that the run's end commits only those (the 0.25 s window let up to 256
                # sessions wait for the end, ~45 ms of commit; one commit of them at the
                # last chain's start could outlast the last round under load); the rows
                # that wait to be built (`StoreSink`) go with them
                sink.drain()
                store.commit_soon()
                if started[0] == len(chains) and options.ending is not None:
                    with contextlib.suppress(Exception):  # the caller's: never the run's end
                        options.ending()
            await run_chain(ctx, key, repeat, sessions, finished, sink, stats)

    tmpdirs.sweep()  # what runs killed by SIGKILL left in the temporary directory
    work_dir = ctx.work_dir
    if not options.work_dir:
        work_dir = ctx.work_dir = ctx.services.work_dir = tmpdirs.temp_dir("benchpack-")
        ctx.work_dir_made = True
    try:
        if options.executor == "ray":
            from .ray_executor import run_chains
            await run_chains(ctx, chains, finished, progress, stats)
        else:
            await asyncio.gather(*(chain(k, r, ss) for k, r, ss in chains))
        sink.drain()  # the last sessions' rows, before the run's final row
        if llm.made and llm.made[0].cache is not None:
            llm.made[0].cache.finish_soon()  # no call follows: write the last entries now
        # the run's final row goes in the last sessions' transaction, and the store's
        # checkpoint starts at once, beside what is left: the summary's reads (issue 31)
        row["updated_at"] = time.time()
        row["status"] = final_status(stats)
        store.finish_run(row)
        await asyncio.sleep(0)  # let the last commits' progress reports run
    except (asyncio.CancelledError, KeyboardInterrupt):
        # Ctrl-C: asyncio.run cancels us once the sessions in flight are cancelled. Keep what
        # committed and say so in the store, or every report would show the run `running`.
        with contextlib.suppress(Exception):  # sessions that ended before the interruption
            sink.drain()
        store.flush()
        row["updated_at"] = time.time()
        row["status"] = "interrupted"
        store.upsert_run(row)
        now = store.finished(ctx.run_id)
        done = sum(1 for _, r, ss in chains for s in ss if (s.id, s.fingerprint, r) in now)
        raise RunInterrupted(ctx.run_id, Path(options.db), done,
                             sum(len(c[2]) for c in chains)) from None
    except Exception:
        # the store writer failed (a full disk) or a bug: the run is not `running` any more;
        # what committed stays, and `--resume` runs the rest
        with contextlib.suppress(Exception):
            sink.drain()
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
    return stats


def final_status(stats: dict[str, int]) -> str:
    """The run row's status once its chains are done: stopped by the budget, or sessions lost
    with Ray workers that kept dying, `interrupted`; some errored or skipped, `partial`."""
    return ("interrupted" if stats["budget"] or stats.get("lost") else
            "finished" if stats["errors"] == 0 and stats["skipped"] == 0 else "partial")


def finalise(start: Started, stats: dict[str, int], total: int, todo: int, started: float,
             budget: Budget | None, estimate: PlanEstimate | None) -> RunSummary:
    """The run's summary (its final row was written by `execute`, with its last sessions)."""
    ctx = start.ctx
    summary = summarise(ctx.store, ctx.run_id, total, stats, total - todo,
                        time.time() - started, start.repeats)
    if budget is not None:
        summary.max_cost, summary.spent = budget.limit, budget.spent
        summary.estimate = estimate.cost if estimate is not None else None
        summary.budget_stopped = stats["budget"]
    if stats.get("lost"):
        summary.first_errors.insert(0, f"{stats['lost']} session runs not run: their Ray "
                                    f"worker died at every attempt; --resume {ctx.run_id} "
                                    "runs them")
    return summary
