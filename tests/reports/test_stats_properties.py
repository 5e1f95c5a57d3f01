"""benchpack.reports.stats: properties every input keeps (hypothesis): κ within [-1, 1] and
symmetric in raters, κ and α 1 on perfect agreement, α never above 1, Spearman symmetric,
bounded and rank-invariant, pass@k monotone in k, bootstrap intervals ordered and inside the
data's range."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchpack.reports.stats import (
    agreement,
    bootstrap_ci,
    cohen_kappa,
    krippendorff_alpha,
    pass_at_k,
    pass_hat_k,
    spearman_rho,
)

# --------------------------------------------------------------------------- properties

matrices = st.integers(2, 4).flatmap(
    lambda k: st.lists(st.lists(st.integers(0, 20), min_size=k, max_size=k),
                       min_size=k, max_size=k)
)
weight_kinds = st.sampled_from([None, "linear", "quadratic"])


@given(matrices, weight_kinds)
def test_kappa_lies_in_minus_one_one_and_is_symmetric_in_raters(
    m: list[list[int]], weights: str | None
) -> None:
    kappa = cohen_kappa(m, weights)  # type: ignore[arg-type]
    if kappa is not None:
        assert -1 - 1e-12 <= kappa <= 1
        transposed = [list(col) for col in zip(*m, strict=True)]
        assert cohen_kappa(transposed, weights) == pytest.approx(kappa, abs=1e-12)  # type: ignore[arg-type]
    a = agreement(m)
    if a.exact is not None and a.within_one is not None:
        assert 0 <= a.exact <= a.within_one <= 1


@given(st.lists(st.integers(1, 20), min_size=2, max_size=4), weight_kinds)
def test_kappa_is_one_on_perfect_agreement(diagonal: list[int], weights: str | None) -> None:
    m = [[diagonal[i] if i == j else 0 for j in range(len(diagonal))] for i in range(len(diagonal))]
    assert cohen_kappa(m, weights) == 1.0  # type: ignore[arg-type]


@given(st.lists(st.tuples(st.integers(1, 5), st.integers(2, 4)), min_size=2, max_size=12),
       st.sampled_from(["nominal", "ordinal", "interval", "ratio"]))
def test_alpha_is_one_on_perfect_agreement(units: list[tuple[int, int]], level: str) -> None:
    data: list[list[int | None]] = [[value] * coders + [None] for value, coders in units]
    alpha = krippendorff_alpha(data, level)  # type: ignore[arg-type]
    if len({value for value, _ in units}) < 2:
        assert alpha is None
    else:
        assert alpha == pytest.approx(1.0, abs=1e-12)


@given(st.lists(st.lists(st.one_of(st.none(), st.integers(1, 4)), min_size=1, max_size=5),
                max_size=15),
       st.sampled_from(["nominal", "ordinal", "interval"]))
def test_alpha_never_exceeds_one(data: list[list[int | None]], level: str) -> None:
    alpha = krippendorff_alpha(data, level)  # type: ignore[arg-type]
    assert alpha is None or alpha <= 1 + 1e-12


pairs_of_lists = st.integers(2, 12).flatmap(
    lambda n: st.tuples(st.lists(st.integers(0, 6), min_size=n, max_size=n),
                        st.lists(st.integers(0, 6), min_size=n, max_size=n))
)


@given(pairs_of_lists)
def test_spearman_is_symmetric_bounded_and_rank_invariant(xy: tuple[list[int], list[int]]) -> None:
    xs, ys = xy
    rho = spearman_rho(xs, ys)
    assert rho == spearman_rho(ys, xs)
    if rho is not None:
        assert -1 <= rho <= 1
        assert spearman_rho([x**3 + 7 for x in xs], ys) == pytest.approx(rho, abs=1e-12)
        assert spearman_rho(xs, xs) == pytest.approx(1.0)


@given(st.integers(2, 12).flatmap(lambda n: st.permutations(range(n))))
def test_spearman_without_ties_equals_the_d_squared_formula(perm: list[int]) -> None:
    n = len(perm)
    d2 = sum((i - p) ** 2 for i, p in enumerate(perm))
    assert spearman_rho(list(range(n)), perm) == pytest.approx(1 - 6 * d2 / (n * (n * n - 1)))


@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_k_is_monotone_in_k(nc: tuple[int, int]) -> None:
    n, c = nc
    at = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    hat = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(at))
    assert all(a + 1e-12 >= b for a, b in itertools.pairwise(hat))
    assert all(h <= c / n + 1e-12 <= a + 2e-12 for h, a in zip(hat, at, strict=True))


@settings(max_examples=30)
@given(st.lists(st.lists(st.floats(0, 1), min_size=1, max_size=3), min_size=1, max_size=30),
       st.integers(0, 2**32))
def test_bootstrap_interval_is_ordered_and_within_the_data_range(
    units: list[list[float]], seed: int
) -> None:
    ci = bootstrap_ci(units, resamples=200, seed=seed)
    lo_data = min(min(u) for u in units)
    hi_data = max(max(u) for u in units)
    assert ci.low is not None and ci.high is not None
    assert lo_data - 1e-12 <= ci.low <= ci.high <= hi_data + 1e-12
