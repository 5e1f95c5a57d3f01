"""Agreement between raters: Cohen's κ with CIs, Krippendorff's α with CIs (rank correlation:
`rank`)."""

from __future__ import annotations

import dataclasses
import itertools
import math
import operator
import random
import statistics
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, Literal, TypeVar

from .caution import alpha_caution, alpha_count_interval
from .resampling import BootstrapCI, bootstrap_counts_joint, quantile, unit_draw_totals

L = TypeVar("L", bound=Hashable)

KappaWeights = Literal["linear", "quadratic"]
AlphaLevel = Literal["nominal", "ordinal", "interval", "ratio"]


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
        return bootstrap_counts_joint(flat, partial(_kappas, k=k, weights=tuple(weights)),
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
    sessions the items come from), each a flattened k×k matrix of its items' counts (a list
    of them, or a numpy integer array one a row: above `exact_max` it is never made a list of
    lists, 0.01-0.02 s of the 1 M-turn agreement report): a resample sums the drawn clusters'
    matrices. Items of one dialogue (its triggers, its
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
    if getattr(clusters, "ndim", None) == 2:  # a numpy array, one cluster a row
        if clusters.shape[1] != k * k:  # type: ignore[attr-defined]
            raise ValueError(f"each cluster must be a flattened {k}×{k} matrix")
        # the integer column sums, as Python ints: the same totals as summing the rows' lists
        total = clusters.sum(axis=0).tolist()  # type: ignore[attr-defined]
        if exact_max is None or len(clusters) <= exact_max:
            clusters = clusters.tolist()  # type: ignore[attr-defined]  # resampled as lists
    else:
        if any(len(c) != k * k for c in clusters):
            raise ValueError(f"each cluster must be a flattened {k}×{k} matrix")
        total = [sum(cells) for cells in zip(*clusters, strict=True)] if clusters else [0] * k * k
    n_items = sum(total)
    if not len(clusters) or n_items == 0:
        return [BootstrapCI(None, None, None, level, resamples, 0, seed) for _ in weights]
    rng = random.Random(seed)
    draws: list[list[float | None]] = [[] for _ in weights]
    n = len(clusters)
    if n < 2:
        return [BootstrapCI(e, None, None, level, 0, n_items, seed)
                for e in _kappas(total, k, tuple(weights))]
    if exact_max is not None and n > exact_max:
        import numpy as np

        # each distinct cluster matrix's x − N_c·p̂ and how many clusters hold it, the same
        # for every weighting: made once, in numpy (the same IEEE operations as a Python loop,
        # so the same floats); sessions of a few items repeat the same few matrices
        patterns, tally = _row_patterns(np.asarray(clusters, dtype=np.int64))
        shares = [c / n_items for c in total]
        deviation = patterns - patterns.sum(axis=1, keepdims=True) * np.asarray(shares)
        return [_cluster_kappa_normal_ci(deviation, tally.tolist(), shares, n_items, k, w,
                                         level, seed) for w in weights]
    for _ in range(resamples):
        cells = [sum(c) for c in zip(*rng.choices(clusters, k=n), strict=True)]
        for out, value in zip(draws, _kappas(cells, k, tuple(weights)), strict=True):
            out.append(value)
    results = []
    for out, estimate in zip(draws, _kappas(total, k, tuple(weights)), strict=True):
        defined = sorted(d for d in out if d is not None)
        results.append(BootstrapCI(
            estimate, quantile(defined, (1.0 - level) / 2.0) if defined else None,
            quantile(defined, (1.0 + level) / 2.0) if defined else None,
            level, resamples, n_items, seed, undefined=len(out) - len(defined)))
    return results


def _cluster_kappa_normal_ci(deviation: Any, repeats: list[int], p: list[float],
                             n_items: int, k: int, weights: KappaWeights | None, level: float,
                             seed: int) -> BootstrapCI:
    """`cluster_kappa_cis` above `exact_max` clusters: the linearised SE over cluster totals
    (`deviation`: each distinct cluster matrix's cells minus its items times the pooled
    shares `p`, held by `repeats` clusters)."""
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
    import numpy as np

    # each term g·(x − N_c·q) in numpy (the same IEEE operations, so the same floats), each
    # cluster's terms summed by fsum, which rounds once whatever the order: the same sums as
    # a Python loop over the clusters, which took 0.2 s of the 1 M-turn agreement report; a
    # distinct matrix's square repeated for each cluster holding it, so the outer fsum sums
    # the very same terms
    terms = np.asarray(grad) * deviation
    squares = [v ** 2 for v in map(math.fsum, terms.tolist())]
    spread = math.fsum(itertools.chain.from_iterable(map(itertools.repeat, squares, repeats)))
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

    # the distinct matrices in sorted order and how many units hold each (`_row_patterns`,
    # rows sorted as `sorted` sorts tuples; + 0.0 makes a −0.0 the 0.0 it equals), where a
    # Counter of tuples took 0.15 s of `agreement --humans`' 48 calls on 1 M turns
    if units:
        try:
            rows = np.array(units, dtype=float)
        except ValueError:  # ragged
            rows = np.zeros(0)
        if rows.ndim != 2 or rows.shape[1] != k * k:
            raise ValueError(f"each unit must be a flattened {k}×{k} coincidence matrix")
        found, tally = _row_patterns(rows + 0.0)
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


def _row_patterns(rows: Any) -> tuple[Any, Any]:
    """The distinct rows of a 2-D float array in lexicographic order and how often each
    occurs: `np.unique(rows, axis=0, return_counts=True)`, the same arrays, by a lexsort and
    a comparison of neighbours (np.unique sorts the rows as structured records: 1.8 → 0.5 ms
    for 1,769 sessions, 48 calls in `agreement --humans` on 1 M turns)."""
    import numpy as np

    ordered = rows[np.lexsort(rows.T[::-1])]  # the last key sorts first: column 0
    starts = np.flatnonzero(np.concatenate(
        [[True], (ordered[1:] != ordered[:-1]).any(axis=1)]))
    return ordered[starts], np.diff(np.append(starts, len(ordered)))


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
