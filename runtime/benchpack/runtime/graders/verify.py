"""Verified-outcome scoring: soft score, pass threshold, pass@k and pass^k."""

from __future__ import annotations

from collections.abc import Sequence
from math import comb
from typing import Any


def soft_score(items: Sequence[tuple[float, str, float | None]], verify: dict[str, Any],
               cap_hits: Sequence[float]) -> tuple[float | None, bool | None]:
    """Weighted outcome mean × outcome_weight + weighted process mean × (1 − outcome_weight).
    A group with no scored item gives its weight to the other; items without a score (judge or
    grader errors) are left out; the lowest triggered cap bounds the result."""

    def mean(aspect: str) -> float | None:
        pairs = [(w, s) for w, a, s in items if a == aspect and s is not None]
        total = sum(w for w, _ in pairs)
        return sum(w * s for w, s in pairs) / total if total else None

    outcome, process = mean("outcome"), mean("process")
    if outcome is None and process is None:
        return None, None
    ow = float(verify.get("outcome_weight", 0.7))
    if outcome is None:
        score = process or 0.0
    elif process is None:
        score = outcome
    else:
        score = ow * outcome + (1 - ow) * process
    if cap_hits:
        score = min(score, min(cap_hits))
    return score, score >= float(verify.get("pass_threshold", 0.75))


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased estimator of P(at least one of k samples passes) from n runs with c passes:
    1 − C(n−c, k) / C(n, k)."""
    if k > n or n <= 0 or k <= 0:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """Unbiased estimator of P(all of k samples pass) from n runs with c passes:
    C(c, k) / C(n, k) (τ-bench's pass^k). With n == k it is 1 when every run passed."""
    if k > n or n <= 0 or k <= 0:
        return None
    return comb(c, k) / comb(n, k)
