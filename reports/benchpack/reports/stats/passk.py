"""pass@k, pass^k (one definition) and ProactBench trigger rates."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import TypeVar

L = TypeVar("L", bound=Hashable)

# --------------------------------------------------------------------------- pass@k, pass^k


def _check_counts(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task with ``c`` of ``n`` runs passing: 1 − C(n−c, k)/C(n, k).

    The probability that at least one of ``k`` runs drawn without replacement passes
    (Chen et al. 2021). Integer binomials and one final division: correctly rounded for any ``n``.
    """
    _check_counts(n, c, k)
    total = math.comb(n, k)
    return (total - math.comb(n - c, k)) / total


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k for one task: C(c, k)/C(n, k), the chance that all of ``k`` drawn runs pass.

    The estimator τ-bench reports; it needs ``n >= k`` runs per task.
    """
    _check_counts(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def task_counts(results: Iterable[tuple[L, bool]]) -> dict[L, tuple[int, int]]:
    """``(task, passed)`` rows → ``{task: (n_runs, n_passed)}`` for the pass@k aggregations."""
    counts: dict[L, tuple[int, int]] = {}
    for task, passed in results:
        n, c = counts.get(task, (0, 0))
        counts[task] = (n + 1, c + bool(passed))
    return counts


def _mean_over_tasks(
    counts: Iterable[tuple[int, int]], k: int, estimator: Callable[[int, int, int], float]
) -> float | None:
    per_task = [estimator(n, c, k) for n, c in counts]
    return statistics.fmean(per_task) if per_task else None


def pass_at_k_over_tasks(counts: Iterable[tuple[int, int]], k: int) -> float | None:
    """Mean per-task pass@k over ``(n_runs, n_passed)`` tasks (every task weighs the same)."""
    return _mean_over_tasks(counts, k, pass_at_k)


def pass_hat_k_over_tasks(counts: Iterable[tuple[int, int]], k: int) -> float | None:
    """Mean per-task pass^k over ``(n_runs, n_passed)`` tasks (every task weighs the same)."""
    return _mean_over_tasks(counts, k, pass_hat_k)


PASS_K_DEFINITION = ("unbiased per task, pass@k = 1 − C(n−c,k)/C(n,k), pass^k = C(c,k)/C(n,k), "
                     "averaged over tasks; k = the run's repeats; pass@k and pass^k over the "
                     "tasks with ≥ k graded runs (an agent's error is a graded fail)")
"""The one definition `bench run` and `bench report pass-k` both state."""


@dataclass(frozen=True, slots=True)
class PassK:
    """pass@1, pass@k and pass^k of one run under `PASS_K_DEFINITION`."""

    k: int
    tasks: int
    """Tasks with at least one graded run: what pass@1 averages."""
    tasks_k: int
    """Tasks with at least ``k`` graded runs: what pass@k and pass^k average."""
    pass_at_1: float | None
    pass_at_k: float | None
    pass_hat_k: float | None


def pass_k_summary(counts: Iterable[tuple[int, int]], k: int) -> PassK:
    """`PassK` of ``(n_runs, n_passed)`` per task with ``k`` = the run's repeats. A task with
    fewer graded runs (only when errors outside the agent were excluded) cannot give an
    unbiased pass@k: it is left out of pass@k and pass^k and counted (``tasks − tasks_k``),
    never averaged with a smaller k."""
    if k < 1:
        raise ValueError(f"need k >= 1, got {k}")
    graded = [(n, c) for n, c in counts if n > 0]
    full = [(n, c) for n, c in graded if n >= k]
    return PassK(k, len(graded), len(full), pass_at_k_over_tasks(graded, 1),
                 pass_at_k_over_tasks(full, k), pass_hat_k_over_tasks(full, k))


# --------------------------------------------------------------------------- ProactBench triggers


@dataclass(frozen=True, slots=True)
class TriggerRates:
    """ProactBench trigger metrics over ``n`` judged triggers (rates are ``None`` when ``n == 0``)."""

    n: int
    pass_rate: float | None
    """PASS / n."""
    partial_rate: float | None
    """PARTIAL / n."""
    fail_rate: float | None
    """FAIL / n."""
    weighted: float | None
    """(PASS + 0.5·PARTIAL) / n: Pass=1, Partial=0.5, Fail=0."""


def trigger_rates(pass_: int, partial: int, fail: int) -> TriggerRates:
    """Pass, partial, fail rates and weighted score; skipped triggers are not counted at all."""
    if min(pass_, partial, fail) < 0:
        raise ValueError("trigger counts must be non-negative")
    n = pass_ + partial + fail
    if n == 0:
        return TriggerRates(0, None, None, None, None)
    return TriggerRates(n, pass_ / n, partial / n, fail / n, (pass_ + 0.5 * partial) / n)
