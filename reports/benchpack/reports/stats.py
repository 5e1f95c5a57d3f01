"""Statistics for reports: pure Python (stdlib only), deterministic, checked against published tables.

Conventions shared by every function here:

- A statistic that is mathematically undefined for the input (no data, zero variance, chance
  agreement of 1) is returned as ``None``, never as NaN, so renderers show "–" instead of a
  number. Malformed input (negative counts, ``k > n``, ragged matrices) raises ``ValueError``.
- Ordinal categories are given in order, worst first (``["Fail", "Partial", "Pass"]``); matrix
  row/column ``i`` is the ``i``-th category.
- Bootstrap CIs resample *units* (clusters), never the observations inside them. Which unit
  each report resamples is listed in ``reports/README.md`` and on :func:`bootstrap_ci`.
"""

from __future__ import annotations

import bisect
import functools
import math
import operator
import random
import statistics
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, Literal, TypeVar, overload

__all__ = [
    "Agreement",
    "BootstrapCI",
    "MacroMicro",
    "MeanStd",
    "TriggerRates",
    "agreement",
    "bootstrap_ci",
    "bootstrap_counts",
    "cohen_kappa",
    "confusion_matrix",
    "kappa_cis",
    "krippendorff_alpha",
    "krippendorff_alpha_coincidence",
    "macro_micro",
    "mean_std",
    "normal_ci",
    "pass_at_k",
    "pass_at_k_over_tasks",
    "pass_hat_k",
    "pass_hat_k_over_tasks",
    "rank_stability",
    "ranks",
    "spearman_rho",
    "task_counts",
    "trigger_rates",
]

U = TypeVar("U")
L = TypeVar("L", bound=Hashable)

KappaWeights = Literal["linear", "quadratic"]
AlphaLevel = Literal["nominal", "ordinal", "interval", "ratio"]


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
    method: Literal["percentile", "normal"] = "percentile"
    """``"normal"`` when ``exact_max`` made it the normal approximation (``resamples`` is 0)."""


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
    low = _quantile(defined, (1.0 - level) / 2.0) if defined else None
    high = _quantile(defined, (1.0 + level) / 2.0) if defined else None
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
    return _bootstrap_counts(counts, lambda sample: [f(sample) for f in listed], len(listed),
                             level=level, resamples=resamples, seed=seed)


def _bootstrap_counts(
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
    rng = random.Random(seed)
    cuts, start = [], 0
    for c in counts:  # u ≥ cut: the draw is an item of this category or of a later one
        cuts.append(-(-start * 2**32 // n))
        start += c
    cuts.append(2**32)
    draws: list[list[float | None]] = [[] for _ in range(m)]
    for _ in range(resamples):
        sample = _count_draws(rng.randbytes(4 * n), cuts)
        for out, value in zip(draws, joint(sample), strict=True):
            out.append(value)
    results = []
    for out, estimate in zip(draws, joint(list(counts)), strict=True):
        defined = sorted(d for d in out if d is not None)
        results.append(BootstrapCI(
            estimate,
            _quantile(defined, (1.0 - level) / 2.0) if defined else None,
            _quantile(defined, (1.0 + level) / 2.0) if defined else None,
            level, resamples, n, seed, undefined=len(out) - len(defined)))
    return results


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


def _quantile(sorted_xs: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default, Hyndman–Fan type 7)."""
    h = (len(sorted_xs) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (h - lo) * (sorted_xs[hi] - sorted_xs[lo])


# --------------------------------------------------------------------------- agreement


def confusion_matrix(
    pairs: Iterable[tuple[L, L]] | Mapping[tuple[L, L], int], categories: Sequence[L]
) -> list[list[int]]:
    """Count ``(row_label, col_label)`` pairs into a k×k matrix ordered like ``categories``;
    a mapping gives each pair's count (pairs counted elsewhere, e.g. by SQL ``GROUP BY``).

    Rows are the first rater (e.g. human consensus), columns the second (e.g. the judge).
    """
    index = {c: i for i, c in enumerate(categories)}
    if len(index) != len(categories):
        raise ValueError("categories must be distinct")
    matrix = [[0] * len(categories) for _ in categories]
    counted = pairs.items() if isinstance(pairs, Mapping) else ((p, 1) for p in pairs)
    for (a, b), n in counted:
        if a not in index or b not in index:
            unknown = a if a not in index else b
            raise ValueError(f"label {unknown!r} is not one of {list(categories)!r}")
        if n < 0:
            raise ValueError(f"pair {(a, b)!r} has a negative count {n}")
        matrix[index[a]][index[b]] += n
    return matrix


def _check_square(confusion: Sequence[Sequence[float]]) -> int:
    k = len(confusion)
    if k == 0 or any(len(row) != k for row in confusion):
        raise ValueError("the confusion matrix must be square and non-empty")
    if any(cell < 0 for row in confusion for cell in row):
        raise ValueError("confusion matrix counts must be non-negative")
    return k


def cohen_kappa(
    confusion: Sequence[Sequence[float]], weights: KappaWeights | None = None
) -> float | None:
    """Cohen's κ from a k×k confusion matrix; ``weights`` linear or quadratic for ordinal scales.

    κ_w = 1 − Σ w·observed / Σ w·expected with disagreement weights ``w_ij`` = 1 − [i=j]
    (unweighted), |i−j|/(k−1) (linear) or ((i−j)/(k−1))² (quadratic), and expected counts from
    the margins (Cohen 1960, 1968). ``None`` when chance disagreement is zero (e.g. both raters
    used one category only) or the matrix is empty.
    """
    _check_weights(weights)
    k = _check_square(confusion)
    return _kappas([c for row in confusion for c in row], k, (weights,))[0]


def _check_weights(weights: object) -> None:
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")


@lru_cache(maxsize=64)
def _disagreement(k: int, weights: KappaWeights | None) -> tuple[float, ...]:
    """The k×k disagreement weights of :func:`cohen_kappa`, row by row."""
    out = []
    for i in range(k):
        for j in range(k):
            if weights is None:
                out.append(0.0 if i == j else 1.0)
            else:
                d = abs(i - j) / (k - 1)
                out.append(d if weights == "linear" else d * d)
    return tuple(out)


def _kappas(cells: Sequence[float], k: int,
            weights: Sequence[KappaWeights | None]) -> list[float | None]:
    """:func:`cohen_kappa` of a flattened k×k matrix for each of ``weights``, the margins
    computed once (the bootstrap's hot loop: products in C, summed exactly by fsum, so the
    figures are those of the cell-by-cell definition)."""
    rows = [math.fsum(cells[i * k:(i + 1) * k]) for i in range(k)]
    n = math.fsum(rows)
    if n == 0 or k == 1:
        return [None for _ in weights]
    cols = [math.fsum(cells[j::k]) for j in range(k)]
    row_of, col_of = _grid(k)
    row_margins = [rows[i] for i in row_of]
    col_margins = [cols[j] for j in col_of]
    out: list[float | None] = []
    for weight in weights:
        w = _disagreement(k, weight)
        observed = math.fsum(map(operator.mul, w, cells)) / n
        # w_ij · rows_i · cols_j, multiplied in that order
        expected = math.fsum(map(operator.mul, map(operator.mul, w, row_margins),
                                 col_margins)) / n**2
        out.append(None if expected == 0 else 1.0 - observed / expected)
    return out


@lru_cache(maxsize=16)
def _grid(k: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Row and column index of each cell of a flattened k×k matrix."""
    return (tuple(i for i in range(k) for _ in range(k)),
            tuple(j for _ in range(k) for j in range(k)))


def kappa_cis(
    confusion: Sequence[Sequence[int]],
    weights: Sequence[KappaWeights | None] = (None, "linear", "quadratic"),
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    exact_max: int | None = None,
) -> list[BootstrapCI]:
    """Cohen's κ of a confusion matrix of item counts for each of ``weights``, with a CI over
    items.

    Up to ``exact_max`` items (always with ``None``): the percentile bootstrap over items of
    :func:`bootstrap_counts`, the same resamples for every weighting. Above: the normal
    approximation that bootstrap converges to, κ ± z·SE with the large-sample standard error of
    Fleiss, Cohen & Everitt (1969) — the delta-method SE of κ when items are drawn with
    replacement, which is what the bootstrap does — clipped to [−1, 1] (``method="normal"``,
    ``seed`` only recorded). It costs nothing whatever the number of items, where the bootstrap
    costs items × resamples draws.
    """
    for w in weights:
        _check_weights(w)
    k = _check_square(confusion)
    flat = [int(c) for row in confusion for c in row]
    if exact_max is None or sum(flat) <= exact_max:
        return _bootstrap_counts(flat, partial(_kappas, k=k, weights=tuple(weights)),
                                 len(weights), level=level, resamples=resamples, seed=seed)
    return [_kappa_normal_ci(flat, k, w, level, seed) for w in weights]


def cluster_kappa_cis(
    clusters: Sequence[Sequence[int]],
    k: int,
    weights: Sequence[KappaWeights | None] = (None, "linear", "quadratic"),
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    exact_max: int | None = None,
) -> list[BootstrapCI]:
    """Cohen's κ per weighting with a percentile CI that resamples **clusters** (e.g. the
    sessions the items come from), each a flattened k×k matrix of its items' counts: a
    resample sums the drawn clusters' matrices. Items of one dialogue (its triggers, its
    repeats) share the dialogue, so resampling them one by one narrows the interval with every
    repeat; this one does not. The same resamples for every weighting. One cluster says
    nothing about the variation between clusters: the interval is then undefined (None).

    ``exact_max``: above this many clusters, the normal approximation of that bootstrap
    instead (``method="normal"``): κ ± z·SE with the linearised (delta-method) SE over cluster
    totals, √(Σ_c (∇κ · (x_c − N_c p̂))²) / N — the bootstrap's own spread, ddof 0 — clipped to
    [−1, 1]; resampling costs clusters × resamples × k² additions in pure Python."""
    for w in weights:
        _check_weights(w)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if any(len(c) != k * k for c in clusters):
        raise ValueError(f"each cluster must be a flattened {k}×{k} matrix")
    total = [sum(cells) for cells in zip(*clusters, strict=True)] if clusters else [0] * k * k
    n_items = sum(total)
    if not clusters or n_items == 0:
        return [BootstrapCI(None, None, None, level, resamples, 0, seed) for _ in weights]
    rng = random.Random(seed)
    draws: list[list[float | None]] = [[] for _ in weights]
    n = len(clusters)
    if n < 2:
        return [BootstrapCI(e, None, None, level, 0, n_items, seed)
                for e in _kappas(total, k, tuple(weights))]
    if exact_max is not None and n > exact_max:
        return [_cluster_kappa_normal_ci(clusters, total, k, w, level, seed) for w in weights]
    for _ in range(resamples):
        cells = [sum(c) for c in zip(*rng.choices(clusters, k=n), strict=True)]
        for out, value in zip(draws, _kappas(cells, k, tuple(weights)), strict=True):
            out.append(value)
    results = []
    for out, estimate in zip(draws, _kappas(total, k, tuple(weights)), strict=True):
        defined = sorted(d for d in out if d is not None)
        results.append(BootstrapCI(
            estimate, _quantile(defined, (1.0 - level) / 2.0) if defined else None,
            _quantile(defined, (1.0 + level) / 2.0) if defined else None,
            level, resamples, n_items, seed, undefined=len(out) - len(defined)))
    return results


def _cluster_kappa_normal_ci(clusters: Sequence[Sequence[int]], total: list[int], k: int,
                             weights: KappaWeights | None, level: float,
                             seed: int) -> BootstrapCI:
    """`cluster_kappa_cis` above `exact_max` clusters: the linearised SE over cluster totals."""
    n_items = sum(total)
    p = [c / n_items for c in total]
    kappa = _kappas(p, k, (weights,))[0]
    if kappa is None:
        return BootstrapCI(None, None, None, level, 0, n_items, seed, method="normal")
    h = 1e-6
    grad = []
    for j in range(k * k):  # κ is smooth in the cell shares: central differences suffice
        up, down = list(p), list(p)
        up[j] += h
        down[j] -= h
        hi, lo = _kappas(up, k, (weights,))[0], _kappas(down, k, (weights,))[0]
        grad.append(0.0 if hi is None or lo is None else (hi - lo) / (2 * h))
    spread = math.fsum(
        math.fsum(g * (x - sum(c) * q) for g, x, q in zip(grad, c, p, strict=True)) ** 2
        for c in clusters)
    half = statistics.NormalDist().inv_cdf((1.0 + level) / 2.0) * math.sqrt(spread) / n_items
    return BootstrapCI(kappa, max(kappa - half, -1.0), min(kappa + half, 1.0), level, 0,
                       n_items, seed, method="normal")


def _kappa_normal_ci(flat: list[int], k: int, weights: KappaWeights | None, level: float,
                     seed: int) -> BootstrapCI:
    """Weighted κ ± z·SE (Fleiss, Cohen & Everitt 1969, in agreement weights ``a = 1 − w``):
    Var = [Σ p_ij (a_ij − (ā_i + ā_j)(1 − κ))² − (κ − p_e(1 − κ))²] / (n (1 − p_e)²), with
    ā_i = Σ_j p_.j a_ij and ā_j = Σ_i p_i. a_ij."""
    n = sum(flat)
    kappa = _kappas(flat, k, (weights,))[0]
    if kappa is None:
        return BootstrapCI(None, None, None, level, 0, n, seed, method="normal")
    p = [c / n for c in flat]
    rows = [math.fsum(p[i * k:(i + 1) * k]) for i in range(k)]
    cols = [math.fsum(p[j::k]) for j in range(k)]
    a = [1.0 - w for w in _disagreement(k, weights)]
    p_e = math.fsum(a[i * k + j] * rows[i] * cols[j] for i in range(k) for j in range(k))
    a_row = [math.fsum(cols[j] * a[i * k + j] for j in range(k)) for i in range(k)]
    a_col = [math.fsum(rows[i] * a[i * k + j] for i in range(k)) for j in range(k)]
    spread = math.fsum(p[i * k + j] * (a[i * k + j] - (a_row[i] + a_col[j]) * (1 - kappa)) ** 2
                       for i in range(k) for j in range(k))
    var = (spread - (kappa - p_e * (1 - kappa)) ** 2) / (n * (1 - p_e) ** 2)
    half = statistics.NormalDist().inv_cdf((1.0 + level) / 2.0) * math.sqrt(max(var, 0.0))
    return BootstrapCI(kappa, max(kappa - half, -1.0), min(kappa + half, 1.0), level, 0, n,
                       seed, method="normal")


@dataclass(frozen=True, slots=True)
class Agreement:
    """Exact and within-one-step agreement on an ordinal scale."""

    exact: float | None
    within_one: float | None
    n: float


def agreement(confusion: Sequence[Sequence[float]]) -> Agreement:
    """Share of items on the diagonal (exact) and at most one category apart (within-one)."""
    k = _check_square(confusion)
    n = math.fsum(math.fsum(row) for row in confusion)
    if n == 0:
        return Agreement(None, None, 0)
    exact = math.fsum(confusion[i][i] for i in range(k))
    near = math.fsum(confusion[i][j] for i in range(k) for j in range(k) if abs(i - j) <= 1)
    return Agreement(exact / n, near / n, n)


def krippendorff_alpha(
    units: Iterable[Sequence[L | None]],
    level: AlphaLevel = "ordinal",
    *,
    categories: Sequence[L] | None = None,
) -> float | None:
    """Krippendorff's α from reliability data: one sequence of ratings per unit, ``None`` = missing.

    Coincidence-matrix formulation (Krippendorff, *Computing Krippendorff's Alpha-Reliability*,
    2011): units with fewer than two ratings are not pairable and drop out; α = 1 − D_o / D_e.
    Metrics: nominal (0/1), ordinal (rank-based: δ²_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)² over
    the coincidence margins n_g), interval ((c − k)²), ratio (((c − k)/(c + k))²).

    Ordinal needs an order: pass ``categories`` (worst first) or use sortable values. Interval
    and ratio need numeric values. ``None`` when there is no pairable disagreement to measure
    against (fewer than two distinct values among pairable ratings).
    """
    pairable = [[v for v in unit if v is not None] for unit in units]
    pairable = [vals for vals in pairable if len(vals) >= 2]
    if categories is not None:
        order: list[L] = list(categories)
        if len(set(order)) != len(order):
            raise ValueError("categories must be distinct")
        unknown = {v for vals in pairable for v in vals} - set(order)
        if unknown:
            raise ValueError(f"ratings {sorted(map(repr, unknown))} are not in categories")
    else:
        seen = {v for vals in pairable for v in vals}
        order = sorted(seen) if level != "nominal" else list(seen)  # type: ignore[type-var]
    index = {c: i for i, c in enumerate(order)}
    k = len(order)

    coincidence = [[0.0] * k for _ in range(k)]
    for vals in pairable:
        counts = Counter(index[v] for v in vals)
        m = len(vals)
        for c, n_c in counts.items():
            for d, n_d in counts.items():
                pairs = n_c * (n_d - 1) if c == d else n_c * n_d
                coincidence[c][d] += pairs / (m - 1)
    return krippendorff_alpha_coincidence(coincidence, level, order)


def krippendorff_alpha_coincidence(
    coincidence: Sequence[Sequence[float]], level: AlphaLevel, categories: Sequence[object]
) -> float | None:
    """Krippendorff's α from the coincidence matrix of reliability data (rows and columns in
    the order of ``categories``, worst first for ordinal): what :func:`krippendorff_alpha`
    builds from the units, for callers that count coincidences elsewhere (e.g. in SQL). A unit
    with ``m`` pairable ratings adds ``n_c · (n_d − [c = d]) / (m − 1)`` to cell (c, d); two
    raters' confusion matrix M gives M + Mᵀ."""
    k = len(categories)
    if len(coincidence) != k or any(len(row) != k for row in coincidence):
        raise ValueError(f"the coincidence matrix must be {k}×{k}, one row and column a "
                         "category")
    margins = [math.fsum(row) for row in coincidence]
    n = math.fsum(margins)

    delta2 = _alpha_metric(level, categories, margins)
    observed = math.fsum(
        coincidence[c][d] * delta2(c, d) for c in range(k) for d in range(k) if c != d
    )
    expected = math.fsum(
        margins[c] * margins[d] * delta2(c, d) for c in range(k) for d in range(k) if c != d
    )
    if expected == 0:
        return None
    return 1.0 - (n - 1) * observed / expected


def _alpha_metric(
    level: AlphaLevel, order: Sequence[object], margins: Sequence[float]
) -> Callable[[int, int], float]:
    """Squared difference function δ²(c, d) on category indices for one level of measurement."""
    if level == "nominal":
        return lambda c, d: 0.0 if c == d else 1.0
    if level == "ordinal":

        def ordinal(c: int, d: int) -> float:
            lo, hi = min(c, d), max(c, d)
            return (math.fsum(margins[lo : hi + 1]) - (margins[lo] + margins[hi]) / 2) ** 2

        return ordinal
    if level in ("interval", "ratio"):
        values = [_number(v) for v in order]
        if level == "interval":
            return lambda c, d: (values[c] - values[d]) ** 2

        def ratio(c: int, d: int) -> float:
            total = values[c] + values[d]
            return ((values[c] - values[d]) / total) ** 2 if total else 0.0

        return ratio
    raise ValueError(f"level must be nominal, ordinal, interval or ratio, got {level!r}")


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"interval and ratio levels need numeric ratings, got {value!r}")
    return float(value)


# --------------------------------------------------------------------------- rank correlation


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
