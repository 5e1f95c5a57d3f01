"""The cluster-wide limits of a Ray run (`ray_executor`): one `Limiter` actor holds the
per-model concurrency permits, the `--rpm` token buckets and the `--max-cost` ledger; each
worker reaches it through `_ClusterSemaphore` (its client's per-model limits) and
`ClusterBudget` (its client's budget). Ray is not imported here: the actor handle is passed in.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


class _ClusterSemaphore:
    """`async with`: one of the model's cluster-wide permits (and, with `--rpm`, one rate
    token) held by this worker: one awaited actor round trip to take them, none to give the
    permit back (the release is sent, not waited for: nothing here depends on when the actor
    reads it, and the permit is free for others as soon as it does)."""

    def __init__(self, limiter: Any, model: str, holder: str, rpm: float | None) -> None:
        self.limiter, self.model, self.holder, self.rpm = limiter, model, holder, rpm
        self.late: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> None:
        ref = self.limiter.acquire.remote(self.model, self.holder, self.rpm)
        try:
            await ref
        except asyncio.CancelledError:
            # the actor grants the permit anyway once it can: give it back then, or it stays
            # held by this (live) worker for the rest of the run
            task = asyncio.ensure_future(self._release_when(ref))
            self.late.add(task)
            task.add_done_callback(self.late.discard)
            raise

    async def _release_when(self, ref: Any) -> None:
        with contextlib.suppress(Exception):
            await ref
            self.limiter.release.remote(self.model, self.holder)

    async def __aexit__(self, *exc: object) -> None:
        self.limiter.release.remote(self.model, self.holder)


def use_cluster_limits(client: Any, limiter: Any, holder: str) -> None:
    """Route the client's per-model limits through the `Limiter` actor (the rate token is
    taken with the permit, in the same round trip: `ModelLimits.rate` stays None)."""
    from .llm import ModelLimits

    cached: dict[str, Any] = {}

    def limits_for(model: str, uri: str) -> Any:
        limits = cached.get(uri)
        if limits is None:
            rpm_cfg = client.config.requests_per_minute
            rpm = rpm_cfg.get(uri, rpm_cfg.get(model, rpm_cfg.get("*")))
            limits = cached[uri] = ModelLimits(
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
