"""Means, macro/micro averages and resampling CIs (the bootstrap and its normal approximation)."""

from __future__ import annotations

import bisect
import functools
import math
import random
import statistics
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, TypeVar, overload

U = TypeVar("U")

# --------------------------------------------------------------------------- mean ± std


@dataclass(frozen=True, slots=True)
class MeanStd:
    """Mean and sample standard deviation (ddof=1) of ``n`` values."""

    mean: float | None
    """``None`` when there are no values."""
    std: float | None
    """``None`` when ``n < 2``: one run says nothing about run-to-run spread."""
    n: int


def mean_std(values: Iterable[float]) -> MeanStd:
    """Mean ± sample std over repeated runs (ddof=1; ``std`` is ``None`` for fewer than 2 values)."""
    xs = [float(v) for v in values]
    if not xs:
        return MeanStd(None, None, 0)
    std = statistics.stdev(xs) if len(xs) > 1 else None
    return MeanStd(statistics.fmean(xs), std, len(xs))


# --------------------------------------------------------------------------- macro / micro


@dataclass(frozen=True, slots=True)
class MacroMicro:
    """Two different averages of per-unit ratios; reports show both and say which is which."""

    macro: float | None
    """Mean of the per-unit ratios (every unit weighs the same)."""
    micro: float | None
    """Pooled ratio sum(numerators) / sum(denominators) (every observation weighs the same)."""
    n_units: int


def macro_micro(units: Iterable[tuple[float, float]]) -> MacroMicro:
    """Macro and micro averages of ``(numerator, denominator)`` units.

    PROC: one unit per session, ``(completed + inferred, intents)``; the macro figure is the
    protocol's PROC, the micro figure the pooled status distribution. For plain values grouped
    by unit pass ``(sum(values), len(values))``.
    """
    pairs = [(float(a), float(b)) for a, b in units]
    if any(den <= 0 for _, den in pairs):
        raise ValueError("every unit needs a positive denominator")
    if not pairs:
        return MacroMicro(None, None, 0)
    macro = statistics.fmean(num / den for num, den in pairs)
    micro = math.fsum(num for num, _ in pairs) / math.fsum(den for _, den in pairs)
    return MacroMicro(macro, micro, len(pairs))


# --------------------------------------------------------------------------- bootstrap


@dataclass(frozen=True, slots=True)
class BootstrapCI:
    """A point estimate with a percentile bootstrap confidence interval."""

    estimate: float | None
    """The statistic on the original units (``None`` for no units or an undefined statistic)."""
    low: float | None
    high: float | None
    level: float
    resamples: int
    n_units: int
    seed: int
    undefined: int = 0
    """Resamples on which the statistic was undefined; they are left out of the percentiles."""
    method: Literal["percentile", "normal", "jackknife"] = "percentile"
    """``"normal"`` when ``exact_max`` made it the normal approximation (``resamples`` is 0);
    ``"jackknife"``: the normal approximation with a delete-one-unit jackknife SE (α)."""
    caution: str | None = None
    """Why the interval cannot be trusted although it was computed (α: `alpha_caution`)."""


@overload
def bootstrap_ci(
    units: Sequence[Sequence[float]],
    statistic: Literal["mean", "unit_mean"] = "mean",
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    exact_max: int | None = None,
) -> BootstrapCI: ...


@overload
def bootstrap_ci(
    units: Sequence[Sequence[tuple[float, float]]],
    statistic: Literal["ratio"],
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    exact_max: int | None = None,
) -> BootstrapCI: ...


@overload
def bootstrap_ci(
    units: Sequence[U],
    statistic: Callable[[list[U]], float | None],
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    exact_max: int | None = None,
) -> BootstrapCI: ...


def bootstrap_ci(
    units: Sequence[Any],
    statistic: str | Callable[[list[Any]], float | None] = "mean",
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    exact_max: int | None = None,
) -> BootstrapCI:
    """Percentile bootstrap CI that resamples whole units with replacement, seeded.

    ``units`` is one entry per resampling unit:

    - ``"mean"``: each unit a list of observations; the statistic is the pooled mean of all
      observations in the resample (clusters of different sizes weigh by size).
    - ``"unit_mean"``: each unit a non-empty list of observations; the statistic is the mean of
      the per-unit means (macro).
    - ``"ratio"``: each unit a list of ``(numerator, denominator)`` pairs; the statistic is
      ``sum(numerators) / sum(denominators)`` over the resample (pooled rates).
    - a callable: it receives the resampled list of units and returns the statistic (or
      ``None`` when undefined), e.g. Cohen's κ over resampled items.

    Which unit to resample — the independent one: **sessions** for ProactBench per-type pass
    rates and weighted scores (one unit per session holding ``(passes or weighted sum, judged
    triggers)`` over all its repeats, ``"ratio"``) and for PROC / COMP (one unit per session
    holding its repeats); **tasks** for pass@k / pass^k (one unit per task holding its
    per-task estimate); **sessions** for judge agreement κ (`cluster_kappa_cis`), items only
    where each session holds one item.

    The same seed gives the same interval; the built-in statistics and an equivalent callable
    draw the same resamples. An empty ``units`` gives all-``None``; a single unit gives a
    zero-width interval.

    ``exact_max``: with a built-in statistic and more units than this, the interval is instead
    the normal approximation the percentile bootstrap converges to (:func:`normal_ci`), since
    resampling costs ``units × resamples`` draws in pure Python. ``None``: always resample.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    n = len(units)
    if n == 0:
        return BootstrapCI(None, None, None, level, resamples, 0, seed)
    rng = random.Random(seed)
    if callable(statistic):
        estimate = statistic(list(units))
        draws = [statistic(rng.choices(units, k=n)) for _ in range(resamples)]
    else:
        totals = _unit_totals(units, statistic)
        if exact_max is not None and n > exact_max:
            return normal_ci(totals, level=level, seed=seed)
        estimate, draws = _bootstrap_pooled(totals, seed, resamples)
    defined = sorted(d for d in draws if d is not None)
    low = quantile(defined, (1.0 - level) / 2.0) if defined else None
    high = quantile(defined, (1.0 + level) / 2.0) if defined else None
    return BootstrapCI(
        estimate, low, high, level, resamples, n, seed, undefined=len(draws) - len(defined)
    )


def _unit_totals(units: Sequence[object], statistic: str) -> list[tuple[float, float]]:
    """Reduce each unit to ``(numerator, denominator)`` so a resample is two sums."""
    totals: list[tuple[float, float]] = []
    for unit in units:
        if not isinstance(unit, Sequence):
            raise ValueError("each unit must be a list of observations")
        if statistic == "mean":
            totals.append((math.fsum(unit), float(len(unit))))
        elif statistic == "unit_mean":
            if not unit:
                raise ValueError("'unit_mean' needs at least one observation per unit")
            totals.append((statistics.fmean(unit), 1.0))
        elif statistic == "ratio":
            totals.append(
                (math.fsum(num for num, _ in unit), math.fsum(den for _, den in unit))
            )
        else:
            raise ValueError(f"unknown statistic {statistic!r}")
    return totals


def normal_ci(
    totals: Sequence[tuple[float, float]],
    *,
    level: float = 0.95,
    seed: int = 0,
    weights: Sequence[int] | None = None,
) -> BootstrapCI:
    """Normal-approximation CI of the pooled ratio ``R = sum(num) / sum(den)`` of units given
    as ``(num, den)`` totals (``weights``: how many units each total stands for, default one).

    R ± z·SE with the plug-in (delta-method) standard error ``sqrt(sum((num − R·den)²)) /
    sum(den)`` — for equal denominators the mean's ``σ/√n`` (ddof 0), the spread of the
    bootstrap distribution this stands in for — clipped to the range of the per-unit ratios,
    which no resample can leave. ``seed`` is only recorded."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    counts = [1] * len(totals) if weights is None else list(weights)
    if len(counts) != len(totals) or any(c < 0 for c in counts):
        raise ValueError("weights must be one non-negative count per total")
    n = sum(counts)
    den_total = math.fsum(c * den for c, (_, den) in zip(counts, totals, strict=True))
    if not den_total:
        return BootstrapCI(None, None, None, level, 0, n, seed, method="normal")
    estimate = math.fsum(c * num for c, (num, _) in zip(counts, totals, strict=True)) / den_total
    se = math.sqrt(math.fsum(c * (num - estimate * den) ** 2
                             for c, (num, den) in zip(counts, totals, strict=True))) / den_total
    half = statistics.NormalDist().inv_cdf((1.0 + level) / 2.0) * se
    ratios = [num / den for c, (num, den) in zip(counts, totals, strict=True) if c and den]
    low, high = max(estimate - half, min(ratios)), min(estimate + half, max(ratios))
    return BootstrapCI(estimate, low, high, level, 0, n, seed, method="normal")


@functools.lru_cache(maxsize=32)
def _resample_indices(seed: int, n: int, resamples: int) -> tuple[tuple[int, ...], ...]:
    """The unit indices of every resample: exactly the draws `Random(seed).choices` makes over
    n units, computed once and shared by every figure with the same (seed, n, resamples) —
    a report computes many such figures, and drawing is most of a bootstrap's cost."""
    rng = random.Random(seed)
    rand = rng.random
    return tuple(tuple(math.floor(rand() * n) for _ in range(n)) for _ in range(resamples))


def _bootstrap_pooled(
    totals: list[tuple[float, float]], seed: int, resamples: int
) -> tuple[float | None, list[float | None]]:
    """Resample ``sum(num) / sum(den)`` over precomputed unit totals."""
    n = len(totals)
    den_total = math.fsum(den for _, den in totals)
    estimate = math.fsum(num for num, _ in totals) / den_total if den_total else None
    dens = {den for _, den in totals}
    if len(dens) == 1:
        # equal denominators (singleton or equal-size units): one float sum per resample
        scale = dens.pop() * n
        if scale == 0:
            return estimate, [None] * resamples
        nums = [num for num, _ in totals]
        if len(set(nums)) == 1:  # every resample is the same sum (e.g. one unit per group)
            return estimate, [sum(nums) / scale] * resamples
        pick = nums.__getitem__
        return estimate, [sum(map(pick, idx)) / scale
                          for idx in _resample_indices(seed, n, resamples)]
    # complex numbers carry numerator and denominator through a single C-level sum
    packed = [complex(num, den) for num, den in totals]
    take = packed.__getitem__
    draws: list[float | None] = []
    for idx in _resample_indices(seed, n, resamples):
        s = sum(map(take, idx))
        draws.append(s.real / s.imag if s.imag else None)
    return estimate, draws


def bootstrap_counts(
    counts: Sequence[int],
    statistics: Sequence[Callable[[list[int]], float | None]],
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> list[BootstrapCI]:
    """Percentile bootstrap CIs over items that each fall into one of at most 254 categories,
    e.g. the cells of a confusion matrix (flattened): each resample draws ``sum(counts)`` items
    with replacement, and every statistic receives the same resampled counts per category.

    The same as ``bootstrap_ci`` over the list of items with a statistic of their counts, but
    fast for many items: item ``⌊u·n / 2³²⌋`` is drawn for a random 32-bit ``u`` (equal odds up
    to n/2³²), and the draws are counted per category in C (`_count_draws`). Deterministic for
    a seed; undefined (``None``) statistics are left out of the percentiles, as there.
    """
    listed = list(statistics)
    return bootstrap_counts_joint(counts, lambda sample: [f(sample) for f in listed], len(listed),
                             level=level, resamples=resamples, seed=seed)


def bootstrap_counts_joint(
    counts: Sequence[int],
    joint: Callable[[list[int]], Sequence[float | None]],
    m: int,
    *,
    level: float,
    resamples: int,
    seed: int,
) -> list[BootstrapCI]:
    """:func:`bootstrap_counts` of ``m`` statistics that ``joint`` computes together."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if any(c < 0 for c in counts) or len(counts) > 254:
        raise ValueError("counts must be non-negative, for at most 254 categories")
    n = sum(counts)
    if n == 0:
        return [BootstrapCI(None, None, None, level, resamples, 0, seed) for _ in range(m)]
    draws: list[list[float | None]] = [[] for _ in range(m)]
    for sample in _count_samples(counts, resamples, seed):
        for out, value in zip(draws, joint(sample), strict=True):
            out.append(value)
    results = []
    for out, estimate in zip(draws, joint(list(counts)), strict=True):
        defined = sorted(d for d in out if d is not None)
        results.append(BootstrapCI(
            estimate,
            quantile(defined, (1.0 - level) / 2.0) if defined else None,
            quantile(defined, (1.0 + level) / 2.0) if defined else None,
            level, resamples, n, seed, undefined=len(out) - len(defined)))
    return results


def _count_samples(counts: Sequence[int], resamples: int, seed: int) -> list[list[int]]:
    """The resampled counts `bootstrap_counts` draws (seeded; at most 254 categories, not all
    empty): a statistic that can take them all at once (`krippendorff_alpha_ci`) gets the same
    resamples."""
    n = sum(counts)
    rng = random.Random(seed)
    cuts, start = [], 0
    for c in counts:  # u ≥ cut: the draw is an item of this category or of a later one
        cuts.append(-(-start * 2**32 // n))
        start += c
    cuts.append(2**32)
    return [_count_draws(rng.randbytes(4 * n), cuts) for _ in range(resamples)]


_MIXED = 255


@lru_cache(maxsize=64)
def _byte_table(cuts: tuple[int, ...]) -> bytes:
    """Category of each leading byte of a big-endian 32-bit draw, or `_MIXED` when a category
    boundary falls inside that byte's range."""
    table = []
    for b in range(256):
        lo, hi = b << 24, (b + 1) << 24
        c = bisect.bisect_right(cuts, lo) - 1
        table.append(c if hi <= cuts[c + 1] else _MIXED)
    return bytes(table)


def _count_draws(data: bytes, cuts: list[int]) -> list[int]:
    """Per-category counts of the big-endian 32-bit draws in `data`: the leading byte decides
    (bytes.translate and bytes.count run in C), except for the few draws whose leading byte
    straddles a category boundary, which are decoded one by one."""
    k = len(cuts) - 1
    cats = data[0::4].translate(_byte_table(tuple(cuts)))
    counts = [cats.count(c) for c in range(k)]
    pos = cats.find(_MIXED)
    while pos >= 0:
        u = int.from_bytes(data[4 * pos:4 * pos + 4], "big")
        counts[bisect.bisect_right(cuts, u) - 1] += 1
        pos = cats.find(_MIXED, pos + 1)
    return counts


def quantile(sorted_xs: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default, Hyndman–Fan type 7)."""
    h = (len(sorted_xs) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (h - lo) * (sorted_xs[hi] - sorted_xs[lo])


def unit_draw_counts(n: int, resamples: int, seed: int, chunk: int = 256) -> Iterator[Any]:
    """For a bootstrap over `n` units: `resamples` rows, in blocks of at most `chunk`, each the
    number of times every unit was drawn in `n` draws with replacement (a numpy int array,
    rows × n). Seeded (numpy's PCG64). What the resamplers whose statistic is a weighted sum
    over units use (`kendall_tau_ci`, `krippendorff_alpha_ci` past 254 unit patterns): one
    matrix product a block instead of a Python loop over every draw (2 × 2,619 units and
    2,000 resamples: 3.5 s a call before)."""
    import numpy as np

    for block, totals in _draw_blocks(n, resamples, seed, chunk):
        if block is None:  # kept as running totals: the counts are their differences
            yield np.diff(totals, axis=1, prepend=np.zeros((len(totals), 1), totals.dtype)
                          ).astype(np.int64)
        else:
            yield block


def unit_draw_totals(n: int, resamples: int, seed: int, chunk: int = 256) -> Iterator[Any]:
    """The draws of `unit_draw_counts` as running totals over the units: entry (r, j) is how
    often resample r drew one of units 0..j (a numpy int array, rows × n). The draws of a
    run of consecutive units are the difference of two totals — how
    `krippendorff_alpha_ci` counts the draws of each pattern's units without summing them
    (`np.add.reduceat` took 0.4 s of `agreement --humans` on 1 M turns)."""
    import numpy as np

    for block, totals in _draw_blocks(n, resamples, seed, chunk):
        yield np.cumsum(block, axis=1) if totals is None else totals


def _draw_blocks(n: int, resamples: int, seed: int, chunk: int) -> Iterator[tuple[Any, Any]]:
    """(counts, running totals) of each block: the counts as drawn (None when the totals are
    kept in `_DRAWS`), the totals when kept (None when too big to keep)."""
    key = (n, resamples, seed, chunk)
    if not (n < 2**16 and resamples * n * 2 <= _DRAWS_KEPT_BYTES):
        yield from _drawn(n, resamples, seed, chunk, keep=False)
        return
    with _DRAWS_LOCK:
        kept = _DRAWS.pop(key, None)
        if kept is None:
            # drawn whole under the lock: a report and what it runs beside it on another
            # thread (`aside.beside`) asking for the same draws make them once
            kept = [totals for _, totals in _drawn(n, resamples, seed, chunk, keep=True)]
        _DRAWS[key] = kept  # most recently used
        while sum(2 * k[0] * k[1] for k in _DRAWS) > _DRAWS_KEPT_BYTES:
            _DRAWS.pop(next(iter(_DRAWS)))
    # the same draws, made here or again: the same numbers
    for totals in kept:
        yield None, totals


def _drawn(n: int, resamples: int, seed: int, chunk: int, keep: bool
           ) -> Iterator[tuple[Any, Any]]:
    import numpy as np

    gen = np.random.default_rng(seed)
    done = 0
    while done < resamples:
        rows = min(chunk, resamples - done)
        draws = gen.integers(0, n, size=(rows, n))
        # one bincount for the whole block: row r's draws shifted by r·n (in place)
        draws += np.arange(rows)[:, None] * n
        block = np.bincount(draws.ravel(), minlength=rows * n).reshape(rows, n)
        # a running total is at most n < 2¹⁶
        yield block, (np.cumsum(block, axis=1, dtype=np.uint16) if keep else None)
        done += rows


_DRAWS: dict[tuple[int, int, int, int], list[Any]] = {}
_DRAWS_LOCK = threading.Lock()
"""`_DRAWS` is read and trimmed by a report's statistics and by those it runs beside them
(`aside.beside`: the agreement report's rank stability), on two threads."""
_DRAWS_KEPT_BYTES = 64 * 2**20
"""`unit_draw_counts` keeps its latest draws (n, resamples, seed), as 16-bit running totals
over the units (`unit_draw_totals`), up to 64 MB in all, the least recently used dropped
first: the reports ask for the same ones again
and again — a run pair's figures over the same sessions (the agreement report's Kendall τ of
the four trigger scores, of the verified score and pass rate), each judge pair's α over the
sessions of each item kind — and drawing them cost 0.9 s of its 4 s CPU on 1 M turns (when
only the last two were kept, the second judge pair drew the first one's sizes again: 1 M-turn
store, 16 α and 8 τ over 13 sizes of 714-4,761 sessions, 57 MB at 2,000 resamples). A
generator left before its end keeps nothing."""
