"""`bench run --executor ray`: the plan's episode chains run on a Ray cluster.

- **Unit of work**: an episode chain, as locally. `--ray-workers N` actors (`ChainWorker`,
  one CPU each, default: the cluster's CPUs) each run up to ⌈max_concurrency / N⌉ chains at a
  time with the same `chains.run_chain` the local executor uses: workspaces, HTTP services and
  harness processes live on the worker that runs the chain.
- **Results stream back**: the worker yields each session's rows as the session ends (a Ray
  streaming generator); the driver hands them to its one store writer, which commits each
  session in its own transaction, exactly as locally. Workers never open the store: what a
  resumed chain needs from it (the snapshot to restore, earlier sessions' transcripts and
  tables) is read by the driver and shipped with the chain.
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
  per-model semaphores and token buckets; each uncached call asks it (two actor round trips).
  Permits held by a worker that died are given back when the driver replaces it.
- `ray.init()` (when the driver started the cluster itself, i.e. no `--ray-address` and no Ray
  already initialised) is paired with `ray.shutdown()` on every way out.

Not yet on Ray: `--max-cost` (the budget is per process) and `--dialogue-from` (it reads
another run's transcripts from the store while sessions run); both are refused up front.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchpack.specs.plan import Plan, PlanSession

from .chains import run_chain
from .protocols.base import default_protocols
from .run_types import Progress, RunContext, RunOptions, make_agent, make_llm_client
from .store import SESSION_TABLES, SessionRows, Store

MAX_ATTEMPTS = 3
"""Workers a chain may lose before it is left for `--resume`."""

PREFETCH = 1
"""Chains the driver sends each worker beyond those it runs at once: they wait on the worker,
so a chain's end and the next one's start cost no driver round trip (≈ 4 ms a chain)."""

MISSING = ("--executor ray: Ray is not installed (hint: pip install 'benchpack[ray]')")


class RayUnavailable(ValueError):
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
        raise ValueError("--ray-workers: at least 1")
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


class _ClusterSemaphore:
    """`async with`: one of the model's cluster-wide permits (and, with `--rpm`, one rate
    token) held by this worker: one awaited actor round trip to take them, none to give the
    permit back (the release is sent, not waited for: nothing here depends on when the actor
    reads it, and the permit is free for others as soon as it does)."""

    def __init__(self, limiter: Any, model: str, holder: str, rpm: float | None) -> None:
        self.limiter, self.model, self.holder, self.rpm = limiter, model, holder, rpm

    async def __aenter__(self) -> None:
        ref = self.limiter.acquire.remote(self.model, self.holder, self.rpm)
        try:
            await ref
        except asyncio.CancelledError:
            # the actor grants the permit anyway once it can: give it back then, or it stays
            # held by this (live) worker for the rest of the run
            asyncio.ensure_future(self._release_when(ref))
            raise

    async def _release_when(self, ref: Any) -> None:
        with contextlib.suppress(Exception):
            await ref
            self.limiter.release.remote(self.model, self.holder)

    async def __aexit__(self, *exc: object) -> None:
        self.limiter.release.remote(self.model, self.holder)


def use_cluster_limits(client: Any, limiter: Any, holder: str) -> None:
    """Route the client's per-model limits through the `Limiter` actor (the rate token is
    taken with the permit, in the same round trip: `_ModelLimits.rate` stays None)."""
    from .llm import _ModelLimits

    cached: dict[str, Any] = {}

    def limits_for(model: str, uri: str) -> Any:
        limits = cached.get(uri)
        if limits is None:
            rpm_cfg = client.config.requests_per_minute
            rpm = rpm_cfg.get(uri, rpm_cfg.get(model, rpm_cfg.get("*")))
            limits = cached[uri] = _ModelLimits(
                _ClusterSemaphore(limiter, model, holder, rpm or None),  # type: ignore[arg-type]
                None)
        return limits

    client._limits_for = limits_for


class ClusterBudget:
    """`--max-cost` on a worker: the run's one ledger is the `Limiter` actor's `Budget`; this
    worker's client charges it as the local client charges its own (`budget.Budget`): the
    worst case reserved before the call (one awaited round trip, only for calls not answered
    from the cache), settled after it (sent, not awaited: the next reservation, and `close`,
    wait for it, so the ledger and the driver's summary see every charge in order)."""

    def __init__(self, ledger: Any, limit: float) -> None:
        self.ledger, self.limit = ledger, limit
        self.exhausted = False
        self.pending: set[Any] = set()

    async def areserve(self, model: str, messages: list[dict[str, Any]],
                       tools: list[dict[str, Any]] | None, params: dict[str, Any]) -> float:
        from .budget import BudgetExceeded, worst_case_cost

        if self.exhausted:  # what the ledger would say, without asking it
            raise BudgetExceeded(f"--max-cost ${self.limit:.4f} reached earlier in this run")
        worst = worst_case_cost(model, messages, tools, params)
        if self.pending:  # the ledger must see this worker's earlier calls settled first, as
            await self.drain()  # the local budget would (an async actor may reorder calls)
        reserved, refused = await self.ledger.reserve.remote(model, worst)
        if refused is not None:
            self.exhausted = True
            raise BudgetExceeded(refused)
        return float(reserved)

    def settle(self, model: str, reserved: float, cost: float | None, answered: bool) -> None:
        task = asyncio.ensure_future(self._settle(
            self.ledger.settle.remote(model, reserved, cost, answered)))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    @staticmethod
    async def _settle(ref: Any) -> None:
        await ref

    async def drain(self) -> None:
        await asyncio.gather(*list(self.pending), return_exceptions=True)


class Limiter:
    """Cluster-wide per-model concurrency and requests-per-minute, and the `--max-cost`
    ledger (an async Ray actor)."""

    def __init__(self, max_per_model: int, max_cost: float | None = None) -> None:
        from .budget import Budget

        self.budget = Budget(max_cost) if max_cost is not None else None
        self.max_per_model = max(1, max_per_model)
        self.sems: dict[str, asyncio.Semaphore] = {}
        self.rates: dict[str, Any] = {}
        self.held: dict[tuple[str, str], int] = {}
        self.dead: set[str] = set()

    async def acquire(self, model: str, holder: str, rpm: float | None = None) -> None:
        """The model's permit, then (with `rpm`) its rate token, as the local client takes
        them; one call, so one round trip for the worker."""
        sem = self.sems.setdefault(model, asyncio.Semaphore(self.max_per_model))
        await sem.acquire()
        if holder in self.dead:  # it died while waiting: nobody will release this one
            sem.release()
            return
        self.held[(model, holder)] = self.held.get((model, holder), 0) + 1
        if rpm:
            await self.rate(model, rpm)

    def release(self, model: str, holder: str) -> None:
        n = self.held.get((model, holder), 0)
        if n:  # a dead holder's permits were given back already
            self.held[(model, holder)] = n - 1
            self.sems[model].release()

    def release_all(self, holder: str) -> int:
        """A worker died: give back the permits it held (and any it was still waiting for)."""
        self.dead.add(holder)
        freed = 0
        for (model, h), n in list(self.held.items()):
            if h == holder:
                for _ in range(n):
                    self.sems[model].release()
                freed += n
                del self.held[(model, h)]
        return freed

    async def rate(self, model: str, rpm: float) -> None:
        from .llm import RateLimiter

        limiter = self.rates.get(model)
        if limiter is None:
            limiter = self.rates[model] = RateLimiter(rpm)
        await limiter.acquire()

    def reserve(self, model: str, worst: float | None) -> tuple[float, str | None]:
        """(the amount reserved, None), or (0, why) when the call is refused."""
        from .budget import BUDGET_ERROR, BudgetExceeded

        assert self.budget is not None
        try:
            return self.budget.reserve_worst(model, worst), None
        except BudgetExceeded as exc:
            return 0.0, exc.message.removeprefix(BUDGET_ERROR)

    def settle(self, model: str, reserved: float, cost: float | None, answered: bool) -> None:
        assert self.budget is not None
        self.budget.settle(model, reserved, cost, answered)

    def budget_state(self) -> dict[str, Any]:
        """What the driver's summary reports. A dead worker's reservations stay reserved: its
        call may have reached the provider, so it counts at its worst case."""
        b = self.budget
        assert b is not None
        return {"spent": b.spent, "reserved": b.reserved, "exhausted": b.exhausted,
                "paid_calls": b.paid_calls, "unpriced_calls": b.unpriced_calls,
                "unpriced_models": set(b.unpriced_models)}

    def in_use(self) -> dict[str, int]:
        return {m: self.max_per_model - s._value for m, s in self.sems.items()}


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
        self.work_dir = Path(tempfile.mkdtemp(prefix="benchpack-ray-"))
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

    async def run_chain(self, key: str, repeat: int, session_ids: list[str],
                        finished: set[tuple[str, str, int]], failed: set[str],
                        preload: Preload) -> Any:
        """An async generator: each session's rows as it ends."""
        async with self.running:
            async for rows in self._run_chain(key, repeat, session_ids, finished, failed,
                                              preload):
                yield rows

    async def _run_chain(self, key: str, repeat: int, session_ids: list[str],
                         finished: set[tuple[str, str, int]], failed: set[str],
                         preload: Preload) -> Any:
        self.store.add(preload)
        sessions = [self.ctx.plan.sessions[sid] for sid in session_ids]
        queue: asyncio.Queue[SessionRows] = asyncio.Queue()
        stats = {"run": 0, "finished": 0, "errors": 0, "skipped": 0, "budget": 0}
        task = asyncio.ensure_future(run_chain(
            self.ctx, key, repeat, sessions, finished,
            lambda rows, name, error: queue.put_nowait(rows), stats, failed=set(failed)))
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

    def replace(self, i: int, generation: int) -> None:
        """The worker of slot `i` died (once per death, however many chains saw it)."""
        if self.generation[i] != generation:
            return
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
        ray.init(**kwargs)  # on the main thread: Ray installs its signal handlers there
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
                      announce=None)
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
                    key, repeat, [s.id for s in todo], done_keys, failed, preload)
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
