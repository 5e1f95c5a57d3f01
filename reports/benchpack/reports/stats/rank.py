"""Rank correlation: Spearman's ρ between two rankings (judge swaps' rank stability)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing the average of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        shared = (start + end) / 2 + 1
        for pos in range(start, end + 1):
            out[order[pos]] = shared
        start = end + 1
    return out


def spearman_rho(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's ρ: Pearson correlation of average ranks (ties handled exactly).

    ``None`` for fewer than two pairs or when either side is constant.
    """
    if len(xs) != len(ys):
        raise ValueError(f"xs and ys differ in length ({len(xs)} vs {len(ys)})")
    if len(xs) < 2:
        return None
    rx, ry = ranks(xs), ranks(ys)
    mean = (len(xs) + 1) / 2  # the mean rank, with or without ties
    sxy = math.fsum((a - mean) * (b - mean) for a, b in zip(rx, ry, strict=True))
    sxx = math.fsum((a - mean) ** 2 for a in rx)
    syy = math.fsum((b - mean) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def rank_stability(scores_a: Mapping[str, float], scores_b: Mapping[str, float]) -> float | None:
    """Spearman ρ between two rankings of the same models (e.g. under two judges).

    Both mappings must score the same models: silently dropping one would change ρ.
    """
    if scores_a.keys() != scores_b.keys():
        only = sorted(scores_a.keys() ^ scores_b.keys())
        raise ValueError(f"the rankings score different models: {only}")
    names = sorted(scores_a)
    return spearman_rho([scores_a[m] for m in names], [scores_b[m] for m in names])
