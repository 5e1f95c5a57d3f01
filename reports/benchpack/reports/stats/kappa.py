"""Agreement between raters: Cohen's κ with CIs (Krippendorff's α: `alpha`; rank
correlation: `rank`)."""

from __future__ import annotations

import itertools
import math
import operator
import random
import statistics
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, Literal, TypeVar

from .resampling import BootstrapCI, bootstrap_counts_joint, quantile

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
        patterns, tally = row_patterns(np.asarray(clusters, dtype=np.int64))
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


def row_patterns(rows: Any) -> tuple[Any, Any]:
    """The distinct rows of a 2-D float array in lexicographic order and how often each
    occurs: `np.unique(rows, axis=0, return_counts=True)`, the same arrays, by a lexsort and
    a comparison of neighbours (np.unique sorts the rows as structured records: 1.8 → 0.5 ms
    for 1,769 sessions, 48 calls in `agreement --humans` on 1 M turns)."""
    import numpy as np

    ordered = rows[np.lexsort(rows.T[::-1])]  # the last key sorts first: column 0
    starts = np.flatnonzero(np.concatenate(
        [[True], (ordered[1:] != ordered[:-1]).any(axis=1)]))
    return ordered[starts], np.diff(np.append(starts, len(ordered)))
