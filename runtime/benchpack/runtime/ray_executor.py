"""`bench run --executor ray`: the plan's episode chains run on a Ray cluster.

- **Unit of work**: an episode chain, as locally. `--ray-workers N` actors (`ChainWorker`,
  one CPU each, default: the cluster's CPUs) each run up to ⌈max_concurrency / N⌉ chains at a
  time with the same `chains.run_chain` the local executor uses: workspaces, HTTP services and
  harness processes live on the worker that runs the chain. The driver keeps `PREFETCH` more
  chains waiting on each worker, so one chain's end and the next one's start cost no round
  trip to the driver.
- **Results stream back**: the worker yields each session's rows as the session ends (a Ray
  streaming generator); the driver hands them to its one store writer, which commits each
  session in its own transaction, exactly as locally. Workers never open the store: what a
  resumed chain needs from it (the snapshot to restore, earlier sessions' transcripts and
  tables; with `--dialogue-from`, the other run's dialogue and trigger points) is read by the
  driver and shipped with the chain.
- **Worker death**: Ray does not retry chains (`max_task_retries=0`); the driver does, so a
  retry is matched against what it received: a chain whose worker died is resubmitted on a new
  worker without the sessions whose rows already came back (finished ones restored from their
  snapshot, errored ones keep their dependents skipped), so nothing finished is lost or stored
  twice. A chain whose worker dies `MAX_ATTEMPTS` times is left unfinished for `--resume`.
- **Response cache**: shared storage. Every worker opens the run's cache directory (absolute,
  resolved on the driver); the cache is SQLite in WAL mode, built for processes sharing it. On
  a multi-machine cluster give `--cache-dir` a path on storage all nodes mount; otherwise each
  node has its own cache (still correct, only fewer hits).
- **Limits** (`--max-per-model`, `--rpm`) hold cluster-wide: one `Limiter` actor owns the
  per-model semaphores and token buckets; each uncached call takes its permit and rate token
  in one awaited round trip and gives the permit back without waiting. Permits held by a
  worker that died, or granted to it after it died, are given back when the driver replaces
  it. A single worker without `--rpm` is the only caller, so its client's own semaphores
  hold the limit with no round trip.
- **Budget** (`--max-cost`): the `Limiter` also keeps the run's one `Budget`; each worker's
  `ClusterBudget` reserves a priced call's worst case there before the call and settles it
  after, so the bound holds across the cluster; the driver's summary reads the ledger.
- `ray.init()` (when the driver started the cluster itself, i.e. no `--ray-address` and no Ray
  already initialised) is paired with `ray.shutdown()` on every way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchpack.specs.plan import Plan, PlanSession

from . import tmpdirs
from .chains import run_chain
from .errors import EnvironmentProblem, UsageError
from .protocols.base import default_protocols
from .ray_limits import ClusterBudget, Limiter, use_cluster_limits
from .run_types import Progress, RunContext, RunOptions, make_agent, make_llm_client
from .store import SESSION_TABLES, SessionRows, Store

MAX_ATTEMPTS = 3
"""Workers a chain may lose before it is left for `--resume`."""

PREFETCH = 1
"""Chains the driver sends each worker beyond those it runs at once: they wait on the worker,
so a chain's end and the next one's start cost no driver round trip (≈ 4 ms a chain)."""

MISSING = ("--executor ray: Ray is not installed (hint: pip install 'benchpack[ray]')")


class RayUnavailable(EnvironmentProblem):
    """`--executor ray` without Ray installed (a one-line CLI error)."""


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable(MISSING) from None
    return ray


def check_options(options: RunOptions) -> None:
    """What the Ray executor refuses before anything runs."""
    if options.ray_workers is not None and options.ray_workers < 1:
        raise UsageError("--ray-workers: at least 1")
    import_ray()


# --------------------------------------------------------------------------- worker side


Preload = dict[tuple[str, str, int], dict[str, Any]]
"""(run id, session id, repeat) → what the worker may read of that session: `row`,
`transcript`, `tables`, `snapshot`."""


class PreloadedStore:
    """The store as a worker sees it: only what the driver shipped for its chains (this run's
    sessions finished before the chain started; with `--dialogue-from`, the other run's
    sessions of the chain). Keys are unique, so one per worker."""

    def __init__(self) -> None:
        self.rows: Preload = {}
        self.runs: set[str] = set()

    def add(self, preload: Preload) -> None:
        self.rows.update(preload)
        self.runs.update(k[0] for k in preload)

    def run_exists(self, run_id: str) -> dict[str, Any] | None:
        # the driver checked the run exists before anything ran; it shipped what it has
        return {"run_id": run_id} if run_id in self.runs else None

    def snapshot(self, run_id: str, episode: str, repeat: int, session_id: str
                 ) -> dict[str, Any] | None:
        return self.rows.get((run_id, session_id, repeat), {}).get("snapshot")

    def transcript(self, run_id: str, session_id: str, repeat: int) -> list[tuple[Any, ...]]:
        return list(self.rows.get((run_id, session_id, repeat), {}).get("transcript", []))

    def session_row(self, run_id: str, session_id: str, repeat: int) -> dict[str, Any] | None:
        return self.rows.get((run_id, session_id, repeat), {}).get("row")

    def session_table(self, table: str, run_id: str, session_id: str, repeat: int
                      ) -> list[tuple[Any, ...]]:
        item = self.rows.get((run_id, session_id, repeat), {})
        return list(item.get("tables", {}).get(table, []))


class ChainWorker:
    """One Ray actor: a run context of its own (agent, roles, LLM client, service pool, work
    directory) and the chains the driver gives it."""

    def __init__(self, options: RunOptions, plan: Plan, run_id: str,
                 alone: dict[str, list[str]], limiter: Any, holder: str, cwd: str,
                 per_worker: int, ledger: Any) -> None:
        with contextlib.suppress(OSError):  # relative paths in --agent mean the driver's
            os.chdir(cwd)
        self.holder = holder
        # chains running at once here; the driver sends `PREFETCH` more, which wait for a
        # place, so the next chain starts without a driver round trip between the two
        self.running = asyncio.Semaphore(per_worker)
        # chains start in the order the driver sent them (an async actor may begin its calls
        # in any order): plan order, as locally, which is what makes a run the budget stops
        # stop at the same session
        self.admitted = 0
        self.turn = asyncio.Condition()
        tmpdirs.sweep()  # what workers killed on this machine left behind
        self.work_dir = tmpdirs.temp_dir("benchpack-ray-")
        self.clients: list[Any] = []
        self.budget = (ClusterBudget(ledger, options.max_cost)
                       if options.max_cost is not None else None)

        def llm() -> Any:
            if not self.clients:
                client = make_llm_client(options)
                if limiter is not None:
                    use_cluster_limits(client, limiter, holder)
                client.budget = self.budget
                self.clients.append(client)
            return self.clients[0]

        self.store = PreloadedStore()
        self.agent = make_agent(options.agent, options, llm)
        self.ctx = RunContext(options, plan, self.store, run_id,  # type: ignore[arg-type]
                              self.agent, default_protocols(), self.work_dir, llm)
        self.ctx.alone = alone
        self.ctx.budget = self.budget  # exhausted: no new session starts here

    def pid(self) -> int:
        return os.getpid()

    async def run_chain(self, ticket: int, key: str, repeat: int, session_ids: list[str],
                        finished: set[tuple[str, str, int]], failed: set[str],
                        preload: Preload) -> Any:
        """An async generator: each session's rows as it ends. `ticket`: this worker's
        chains numbered from 0 in the order the driver sent them."""
        async with self.turn:
            await self.turn.wait_for(lambda: self.admitted == ticket)
        await self.running.acquire()  # the next ticket waits until this one has its place
        async with self.turn:
            self.admitted += 1
            self.turn.notify_all()
        try:
            async for rows in self._run_chain(key, repeat, session_ids, finished, failed,
                                              preload):
                yield rows
        finally:
            self.running.release()

    async def _run_chain(self, key: str, repeat: int, session_ids: list[str],
                         finished: set[tuple[str, str, int]], failed: set[str],
                         preload: Preload) -> Any:
        self.store.add(preload)
        sessions = [self.ctx.plan.sessions[sid] for sid in session_ids]
        queue: asyncio.Queue[SessionRows] = asyncio.Queue()
        stats = {"run": 0, "finished": 0, "errors": 0, "skipped": 0, "budget": 0}
        task = asyncio.ensure_future(run_chain(
            self.ctx, key, repeat, sessions, finished,
            lambda build, name, error: queue.put_nowait(build()), stats, failed=set(failed)))
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    yield getter.result()
                    continue
                getter.cancel()
                while not queue.empty():
                    yield queue.get_nowait()
                task.result()
                return
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    async def close(self) -> None:
        """What the local runner does at the end of a run, for this worker's share."""
        closing = getattr(self.agent, "aclose", None)
        if closing is not None:
            with contextlib.suppress(Exception):
                await closing()
        try:
            await self.ctx.services.close()
        except BaseException:
            self.ctx.services.kill_all()
        if self.budget is not None:
            with contextlib.suppress(Exception):
                await self.budget.drain()
        if self.clients and self.clients[0].cache is not None:
            cache = self.clients[0].cache
            cache.finish_soon()
            await asyncio.get_running_loop().run_in_executor(None, cache.close)
        shutil.rmtree(self.work_dir, ignore_errors=True)


# --------------------------------------------------------------------------- driver side


def preload_for(store: Store, run_id: str, episode: str, repeat: int,
                sessions: list[PlanSession], finished: set[tuple[str, str, int]]
                ) -> Preload:
    """What a worker needs from the store to continue a chain: for each finished session, its
    transcript, row and tables (earlier-session context), and the snapshot when the next
    session is to run (the environment is restored from it)."""
    out: Preload = {}
    for i, s in enumerate(sessions):
        if (s.id, s.fingerprint, repeat) not in finished:
            continue
        item: dict[str, Any] = {
            "transcript": store.transcript(run_id, s.id, repeat),
            "row": store.session_row(run_id, s.id, repeat),
            "tables": {t: store.session_table(t, run_id, s.id, repeat) for t in SESSION_TABLES}}
        after = sessions[i + 1] if i + 1 < len(sessions) else None
        if after is not None and (after.id, after.fingerprint, repeat) not in finished:
            item["snapshot"] = store.snapshot(run_id, episode, repeat, s.id)
        out[(run_id, s.id, repeat)] = item
    return out


def dialogue_for(store: Store, other: str, repeat: int, sessions: list[PlanSession]
                 ) -> Preload:
    """`--dialogue-from OTHER`: what `trigger_rubric` reads of the other run for these
    sessions (its row, transcript and trigger points, of this repeat else repeat 0, as
    `_from_run` looks for them); the other run itself is known to exist."""
    out: Preload = {(other, "", -1): {}}  # the run exists even when it lacks these sessions
    for s in sessions:
        for r in dict.fromkeys((repeat, 0)):
            row = store.session_row(other, s.id, r)
            if row is not None:
                out[(other, s.id, r)] = {
                    "row": row, "transcript": store.transcript(other, s.id, r),
                    "tables": {"triggers": store.session_table("triggers", other, s.id, r)}}
                break
    return out


class _Pool:
    """The driver's workers: slots of actors, each with a number of free chain places."""

    def __init__(self, ray: Any, make: Any, n: int, per_worker: int) -> None:
        self.ray, self.make, self.per_worker = ray, make, per_worker
        self.generation = [0] * n
        self.tickets = [0] * n
        self.actors = [make(i, 0) for i in range(n)]
        self.free = [per_worker] * n
        self.ready = asyncio.Condition()

    async def take(self) -> int:
        async with self.ready:
            await self.ready.wait_for(lambda: max(self.free) > 0)
            i = max(range(len(self.free)), key=lambda k: self.free[k])
            self.free[i] -= 1
            return i

    async def give(self, i: int) -> None:
        async with self.ready:
            self.free[i] += 1
            self.ready.notify_all()

    def ticket(self, i: int) -> int:
        """The number of the next chain sent to slot `i`'s worker (`ChainWorker.run_chain`):
        taken just before the call is sent, with no await between the two."""
        self.tickets[i] += 1
        return self.tickets[i] - 1

    def replace(self, i: int, generation: int) -> None:
        """The worker of slot `i` died (once per death, however many chains saw it)."""
        if self.generation[i] != generation:
            return
        self.tickets[i] = 0
        with contextlib.suppress(Exception):
            self.ray.kill(self.actors[i], no_restart=True)
        self.generation[i] += 1
        self.actors[i] = self.make(i, self.generation[i])


async def run_chains(ctx: RunContext, chains: list[tuple[str, int, list[PlanSession]]],
                     finished: set[tuple[str, str, int]], progress: Progress,
                     stats: dict[str, int]) -> None:
    """Run `chains` on Ray; the store writer of `ctx` commits each session as it comes back.
    `stats` is kept as the local executor keeps it (from the rows received)."""
    ray = import_ray()
    options = ctx.options
    started_here = not ray.is_initialized()
    if started_here:
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                  "configure_logging": False}
        if options.ray_address:
            kwargs["address"] = options.ray_address
        else:  # workers import what the driver can (python: agents, test modules)
            kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": os.pathsep.join(
                p for p in [os.getcwd(), *sys.path] if p)}}
            if options.ray_workers:
                kwargs["num_cpus"] = options.ray_workers
        try:  # on the main thread: Ray installs its signal handlers there
            ray.init(**kwargs)
        except Exception as exc:  # a token-protected cluster, another Ray version…: not a bug
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            where = f"--ray-address {options.ray_address}" if options.ray_address else \
                "--executor ray"
            raise EnvironmentProblem(f"{where}: cannot join the Ray cluster ({type(exc).__name__}"
                                     f"{': ' + first if first else ''}) (hint: check the "
                                     "address, the cluster's authentication and that it runs "
                                     "the same Ray and Python versions)") from None
    try:
        await _run_on_cluster(ray, ctx, chains, finished, progress, stats)
    finally:
        if started_here:
            ray.shutdown()


async def _run_on_cluster(ray: Any, ctx: RunContext,
                          chains: list[tuple[str, int, list[PlanSession]]],
                          finished: set[tuple[str, str, int]], progress: Progress,
                          stats: dict[str, int]) -> None:
    from ray.exceptions import RayError, RayTaskError

    options = ctx.options
    store = ctx.store
    n = options.ray_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    n = max(1, min(n, len(chains) or 1))
    per_worker = max(1, math.ceil(max(1, options.max_concurrency) / n))
    slots = per_worker + PREFETCH
    # paths the workers resolve must mean what they mean on the driver
    shipped = replace(options, cache_dir=str(Path(options.cache_dir or ".bench-cache").resolve()),
                      announce=None, ending=None)
    limiter = ray.remote(Limiter).options(num_cpus=0, max_concurrency=10_000).remote(
        options.max_concurrent_per_model, options.max_cost)
    # one worker calls the models at a time (a replacement starts after its predecessor
    # died), so its client's own semaphores are the cluster's: no actor round trip per call
    # (≈ 3 ms on a loaded machine). Not with --rpm: a replacement's fresh token bucket would
    # allow a second burst within the second its predecessor spent one.
    limits = None if n == 1 and not options.requests_per_minute else limiter
    plan_ref = ray.put(ctx.plan)
    worker_cls = ray.remote(ChainWorker)
    cwd = os.getcwd()

    def make(slot: int, generation: int) -> Any:
        return worker_cls.options(num_cpus=1, max_concurrency=slots + 1,
                                  max_restarts=0, max_task_retries=0).remote(
            shipped, plan_ref, ctx.run_id, ctx.alone, limits, f"w{slot}.{generation}", cwd,
            per_worker, limiter)

    pool = _Pool(ray, make, n, slots)
    lost = 0

    def received(rows: SessionRows, name: str) -> None:
        status = rows.session.get("status")
        error = status != "finished"
        if rows.session.get("error_kind") == "budget":
            stats["budget"] += 1
        if status == "skipped":
            stats["skipped"] += 1
        else:
            stats["run"] += 1
            stats["finished" if not error else "errors"] += 1
        store.submit(rows, progress.committed(name, error=error))

    async def chain(key: str, repeat: int, sessions: list[PlanSession]) -> None:
        nonlocal lost
        got: dict[str, bool] = {}  # session id → finished, for rows received this invocation
        done_keys = set(finished)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            todo = [s for s in sessions if s.id not in got or got[s.id]]
            if all((s.id, s.fingerprint, repeat) in done_keys for s in todo):
                return
            preload: Preload = {}
            # a fresh chain needs nothing from the store: waiting for the writer to commit
            # (flush) would put a commit on every chain's critical path
            if any((s.id, s.fingerprint, repeat) in done_keys for s in todo) or (
                    options.dialogue_from == ctx.run_id):
                await asyncio.to_thread(store.flush)  # what came back is durable before reads
                preload = await asyncio.to_thread(
                    preload_for, store, ctx.run_id, sessions[0].episode, repeat, todo,
                    done_keys)
            if options.dialogue_from:
                preload.update(await asyncio.to_thread(
                    dialogue_for, store, options.dialogue_from, repeat, todo))
            failed = {sid for sid, ok in got.items() if not ok}
            slot = await pool.take()
            generation = pool.generation[slot]
            try:
                gen = pool.actors[slot].run_chain.options(num_returns="streaming").remote(
                    pool.ticket(slot), key, repeat, [s.id for s in todo], done_keys, failed,
                    preload)
                async for ref in gen:
                    rows: SessionRows = await ref
                    s = ctx.plan.sessions[rows.session_id]
                    ok = rows.session.get("status") == "finished"
                    got[s.id] = ok
                    if ok:
                        done_keys.add((s.id, s.fingerprint, repeat))
                    received(rows, s.name)
                return
            except RayTaskError as exc:  # our own code failed on the worker: a bug, not a death
                raise exc.as_instanceof_cause() from None  # type: ignore[no-untyped-call]
            except RayError:
                pool.replace(slot, generation)
                with contextlib.suppress(RayError):
                    await limiter.release_all.remote(f"w{slot}.{generation}")
                if attempt == MAX_ATTEMPTS:
                    lost += sum(1 for s in sessions if s.id not in got)
            finally:
                await pool.give(slot)

    sem = asyncio.Semaphore(n * slots)  # what the pool takes: preloads wait here, not in memory

    async def limited(key: str, repeat: int, sessions: list[PlanSession]) -> None:
        async with sem:
            await chain(key, repeat, sessions)

    try:
        await asyncio.gather(*(limited(k, r, ss) for k, r, ss in chains))
    finally:
        closing = [a.close.remote() for a in pool.actors]
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*closing, return_exceptions=True), 30)
        try:
            if ctx.budget is not None:  # the summary's spend is the cluster's, from its ledger
                for k, v in (await limiter.budget_state.remote()).items():
                    setattr(ctx.budget, k, v)
        finally:
            for a in [*pool.actors, limiter]:
                with contextlib.suppress(Exception):
                    ray.kill(a, no_restart=True)
    stats["lost"] = lost
