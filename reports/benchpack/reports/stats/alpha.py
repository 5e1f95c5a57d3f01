"""Krippendorff's α with its CIs: the bootstrap over units, the jackknife normal interval
above a size, and the caution where too few disagreements leave either untrustworthy
(`caution`). Split from `kappa`, whose cluster matrices' `row_patterns` it shares."""

from __future__ import annotations

import dataclasses
import math
import operator
import statistics
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, Literal, TypeVar

from .caution import alpha_caution, alpha_count_interval
from .kappa import row_patterns
from .resampling import BootstrapCI, quantile, unit_draw_totals

L = TypeVar("L", bound=Hashable)

AlphaLevel = Literal["nominal", "ordinal", "interval", "ratio"]


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


def krippendorff_alpha_ci(
    units: Sequence[Sequence[float]],
    level_of_measurement: AlphaLevel,
    categories: Sequence[object],
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    exact_max: int | None = None,
    caution: bool = True,
    widen: bool = True,
) -> BootstrapCI:
    """Krippendorff's α with a percentile bootstrap CI over **units**: each unit a flattened
    k×k coincidence matrix (its cells as :func:`krippendorff_alpha_coincidence` adds them; all
    zero for a unit with fewer than two ratings, which still is a unit that can be drawn).
    A resample draws as many units with replacement, sums their matrices and recomputes α —
    margins and δ² included, so nothing is linearised; resamples where α is undefined (one
    value only) are left out of the percentiles and counted in ``undefined``. This is the
    method of ProactBench's released analysis (units = items, 10,000 resamples there).

    α is a function of the summed matrix only, so units with the same matrix are one pattern
    and a resample is a weighted sum over the distinct matrices: the draws of each unit
    (`unit_draw_counts`, numpy) summed per pattern, every resample's matrix one product and
    its α computed at once (16 calls of the 1 M-turn benchmark's agreement report: 13 s
    one resample at a time, 1.0 s; the patterns' draws as differences of running totals,
    `unit_draw_totals`, not summed per pattern). Fewer than two
    units say nothing about the variation between units: no interval.

    ``exact_max``: above this many units, the normal approximation instead
    (``method="jackknife"``, :func:`_alpha_jackknife_ci`), which costs one α per pattern where
    the bootstrap costs units × resamples draws; the bootstrap still where a unit's removal
    leaves α undefined. ``None``: always resample. Either way, where too few disagreements or
    rare values leave the interval untrustworthy (`alpha_caution`), it is widened to take in
    the interval of the disagreement count (`alpha_count_interval`) and ``caution`` says so;
    ``caution=False``: the resampled interval as it is (what the benchmarks compare with);
    ``widen=False``: that interval, still marked where the rule fires (the report's
    `--alpha-ci resampled`, ProactBench's released analysis)."""
    k = len(categories)
    import numpy as np

    # the distinct matrices in sorted order and how many units hold each (`row_patterns`,
    # rows sorted as `sorted` sorts tuples; + 0.0 makes a −0.0 the 0.0 it equals), where a
    # Counter of tuples took 0.15 s of `agreement --humans`' 48 calls on 1 M turns
    if units:
        try:
            rows = np.array(units, dtype=float)
        except ValueError:  # ragged
            rows = np.zeros(0)
        if rows.ndim != 2 or rows.shape[1] != k * k:
            raise ValueError(f"each unit must be a flattened {k}×{k} coincidence matrix")
        found, tally = row_patterns(rows + 0.0)
        counts: list[int] = tally.tolist()
        columns = [tuple(col) for col in found.T.tolist()]
    else:
        counts, columns = [], [() for _ in range(k * k)]

    # the summed coincidences, once: α and `_cautioned` read them
    cells = [math.fsum(map(operator.mul, counts, col)) for col in columns]
    coincidence = [cells[r * k:(r + 1) * k] for r in range(k)]
    estimate = krippendorff_alpha_coincidence(coincidence, level_of_measurement, categories)

    n = len(units)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n < 2:
        return BootstrapCI(estimate if n else None, None, None, level, 0, n, seed)
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    cells_of = np.array(columns, dtype=float).T  # patterns × k²
    if exact_max is not None and n > exact_max:
        jackknife = _alpha_jackknife_ci(cells_of, counts, estimate,
                                        level_of_measurement, categories, level, seed)
        if jackknife is not None:
            return _cautioned(jackknife, coincidence, level_of_measurement,
                              categories, widen) if caution else jackknife
    # the units lie grouped by pattern: a pattern's weight in a resample is the draws of its
    # slice of units, the difference of the running totals at the slices' ends; every
    # resample's α computed at once (`_alpha_rows`)
    ends = np.cumsum(counts) - 1
    # in C order, as einsum's sums run in another order over a Fortran-ordered operand (a
    # column gather gives one): the same bits as before for the same resamples
    weights = np.concatenate([np.diff(block[:, ends].astype(np.int64), axis=1,
                                      prepend=0).astype(float, order="C")
                              for block in unit_draw_totals(n, resamples, seed)])
    # einsum, not `@`: BLAS's threads spin on a shared machine (`validity.kendall_tau_ci`)
    draws = _alpha_rows(np.einsum("ij,jk->ik", weights, cells_of), level_of_measurement,
                        categories)
    defined = sorted(d for d in draws if d is not None)
    ci = BootstrapCI(estimate,
                     quantile(defined, (1.0 - level) / 2.0) if defined else None,
                     quantile(defined, (1.0 + level) / 2.0) if defined else None,
                     level, resamples, n, seed, undefined=len(draws) - len(defined))
    return _cautioned(ci, coincidence, level_of_measurement, categories,
                      widen) if caution else ci


def _cautioned(ci: BootstrapCI, coincidence: list[list[float]],
               level_of_measurement: AlphaLevel, categories: Sequence[object],
               widen: bool = True) -> BootstrapCI:
    """`ci` as it is, or where `alpha_caution` finds too few disagreements or rare values in
    the summed coincidences for it to be trusted, widened to take in the interval of the
    disagreement count (`alpha_count_interval`) and marked with `caution` (only an
    interval: none stays none)."""
    if ci.low is None or ci.high is None:
        return ci
    caution = alpha_caution(coincidence)
    if caution is None:
        return ci
    if not widen:
        return dataclasses.replace(ci, caution=caution + "; the resampled interval, not widened")
    delta2 = _alpha_metric(level_of_measurement, categories, [math.fsum(r) for r in coincidence])
    counted = alpha_count_interval(coincidence, delta2, ci.level,
                                   None if level_of_measurement == "ratio" else -1.0)
    if counted is None:
        return dataclasses.replace(ci, caution=caution)
    return dataclasses.replace(ci, low=min(ci.low, counted[0]), high=max(ci.high, counted[1]),
                               caution=caution + "; widened to the interval of the "
                               "disagreement count")


def _alpha_jackknife_ci(patterns: Any, counts: Sequence[int], estimate: float | None,
                        level_of_measurement: AlphaLevel, categories: Sequence[object],
                        level: float, seed: int) -> BootstrapCI | None:
    """α's normal interval with the delete-one-unit jackknife SE (Quenouille–Tukey): α₍ᵢ₎ is
    α of the summed coincidences without unit i, ᾱ their mean, SE² = (N − 1)/N · Σᵢ (α₍ᵢ₎ −
    ᾱ)² — for a smooth statistic the spread the bootstrap over units converges to (the
    jackknife's slightly larger, not smaller). Units with the same matrix (`patterns`, one
    row each, `counts` units) share α₍ᵢ₎: one α per pattern. The interval is normal on the
    scale of log(1 − α), SE/(1 − α) there (delta method), mapped back: 1 − (1 − α)·e^(±z·SE/
    (1 − α)). α cannot exceed 1 and near 1 its sampling distribution has a long lower tail;
    α ± z·SE undercovered there (`benchmarks/alpha_coverage.py`, 97 % PASS, α 0.95: 87.8 %
    at 400 sessions, the bootstrap 91.3 %, this interval 90.2 %; 90.4 / 91.7 / 95.3 % at
    1,000). SE 0 (every
    α₍ᵢ₎ the same, e.g. α = 1): the point. `estimate` None (no variation): no interval. None
    when removing some unit leaves α undefined (all of a value in one unit): no jackknife."""
    import numpy as np

    n = sum(counts)
    if estimate is None:
        return BootstrapCI(None, None, None, level, 0, n, seed, method="jackknife")
    total = [math.fsum(map(operator.mul, counts, col)) for col in patterns.T.tolist()]
    left = _alpha_rows(np.asarray(total)[None, :] - patterns, level_of_measurement,
                       categories)
    known = [a for a in left if a is not None]
    if len(known) < len(left):
        return None
    mean = math.fsum(map(operator.mul, counts, known)) / n
    spread = math.fsum(c * (a - mean) ** 2 for c, a in zip(counts, known, strict=True))
    se = math.sqrt((n - 1) / n * spread)
    low = high = estimate
    if se > 0 and estimate < 1:  # α = 1: no disagreement anywhere, every α₍ᵢ₎ is 1 too
        stretch = statistics.NormalDist().inv_cdf((1.0 + level) / 2.0) * se / (1 - estimate)
        low, high = 1 - (1 - estimate) * math.exp(stretch), 1 - (1 - estimate) * math.exp(
            -stretch)
    return BootstrapCI(estimate, low, high, level, 0, n, seed, method="jackknife")


def _alpha_rows(cells: Any, level: AlphaLevel, categories: Sequence[object]
                ) -> list[float | None]:
    """`krippendorff_alpha_coincidence` of every row of `cells` (resamples × k², numpy),
    vectorised for the nominal and ordinal levels (the reports' own), row by row otherwise.
    The same formula; sums in another order (differences of a few ulps)."""
    import numpy as np

    k = len(categories)
    if level not in ("nominal", "ordinal"):
        return [krippendorff_alpha_coincidence([row[r * k:(r + 1) * k] for r in range(k)],
                                               level, categories) for row in cells.tolist()]
    coincidence = cells.reshape(-1, k, k)
    margins = coincidence.sum(axis=2)
    total = margins.sum(axis=1)
    observed = np.zeros(len(cells))
    expected = np.zeros(len(cells))
    for c in range(k):
        for d in range(k):
            if c == d:
                continue
            if level == "nominal":
                delta2 = np.ones(len(cells))
            else:
                lo, hi = min(c, d), max(c, d)
                delta2 = (margins[:, lo:hi + 1].sum(axis=1)
                          - (margins[:, lo] + margins[:, hi]) / 2) ** 2
            observed += coincidence[:, c, d] * delta2
            expected += margins[:, c] * margins[:, d] * delta2
    out: list[float | None] = []
    for n_, o, e in zip(total.tolist(), observed.tolist(), expected.tolist(), strict=True):
        out.append(None if e == 0 else 1.0 - (n_ - 1) * o / e)
    return out


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
