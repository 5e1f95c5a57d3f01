"""Headline uncertainty (stats.uncertainty): every statistic against a hand computation, the
special functions against exact sums and published tables, and scipy / statsmodels where they
are installed (they are not dependencies: those tests skip without them)."""

from __future__ import annotations

import math
import random

import pytest

from benchpack.reports.stats import (
    TOO_FEW_CLUSTERS,
    betainc,
    clopper_pearson,
    clustered_se,
    flip_rate,
    headline_interval,
    pass_hat_k,
    t_ppf,
    wilson,
)


def test_wilson_9_of_10_by_hand() -> None:
    # z = 1.959964: centre (0.9 + z²/20) / (1 + z²/10) = 0.78899, half-width
    # z / (1 + z²/10) · sqrt(0.009 + z²/400) = 0.19313
    low, high = wilson(9, 10)
    assert low == pytest.approx(0.59585, abs=5e-5)
    assert high == pytest.approx(0.98212, abs=5e-5)


def test_clopper_pearson_0_of_10_by_hand() -> None:
    # x = 0: the upper end solves (1 − p)^10 = 0.025, p = 1 − 0.025^(1/10)
    low, high = clopper_pearson(0, 10)
    assert low == 0.0
    assert high == pytest.approx(1 - 0.025 ** 0.1, abs=1e-12)
    assert high == pytest.approx(0.30850, abs=5e-5)
    low, high = clopper_pearson(10, 10)
    assert (low, high) == (pytest.approx(0.025 ** 0.1, abs=1e-12), 1.0)


@pytest.mark.parametrize(("x", "n"), [(1, 10), (9, 10), (3, 7), (15, 30), (29, 30), (50, 200)])
def test_clopper_pearson_ends_solve_the_binomial_tails(x: int, n: int) -> None:
    def tail_at_least(p: float) -> float:
        return math.fsum(math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(x, n + 1))

    low, high = clopper_pearson(x, n)
    assert tail_at_least(low) == pytest.approx(0.025, abs=1e-9)
    assert 1 - tail_at_least(high) + math.comb(n, x) * high ** x * (1 - high) ** (n - x) \
        == pytest.approx(0.025, abs=1e-9)
    assert clopper_pearson(9, 10) == (pytest.approx(0.55498, abs=5e-5),
                                      pytest.approx(0.99747, abs=5e-5))


@pytest.mark.parametrize(("df", "t"), [(1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622),
                                       (29, 2.0452), (1000, 1.9623)])
def test_t_quantiles_match_the_printed_table(df: int, t: float) -> None:
    assert t_ppf(0.975, df) == pytest.approx(t, abs=1e-4)
    assert t_ppf(0.025, df) == pytest.approx(-t, abs=1e-4)


def test_betainc_by_hand() -> None:
    assert betainc(1, 1, 0.3) == pytest.approx(0.3)          # uniform
    assert betainc(2, 1, 0.5) == pytest.approx(0.25)         # x²
    assert betainc(1, 3, 0.5) == pytest.approx(1 - 0.5 ** 3)  # 1 − (1 − x)³


def test_clustered_se_on_three_clusters_by_hand() -> None:
    # s̄ = 3/5 = 0.6; per-cluster sums of deviations −0.2, 0.8, −0.6: SE² = 1.04 / 25.
    # Miller's two terms: SE²_CLT = 1.2 / 25, cross terms 2·0.4·(−0.6) + 2·0.4·0.4 = −0.16 / 25
    clusters = [[1, 0], [1, 1], [0]]
    assert clustered_se(clusters) == pytest.approx(math.sqrt(1.04) / 5)
    assert clustered_se([[1], [0], [1], [1], [0]]) == pytest.approx(math.sqrt(0.24 / 5))
    # two clusters: s̄ = 0.5, sums of deviations −0.4 and 0.4: SE = √0.32 / 3
    assert clustered_se([[0.2, 0.4], [0.9]]) == pytest.approx(math.sqrt(0.32) / 3)
    assert clustered_se([]) is None
    pooled = headline_interval([(1, 2), (2, 2), (0, 1)], binary=True, macro=False)
    assert pooled.se == pytest.approx(math.sqrt(1.04) / 5)
    assert (pooled.n, pooled.clusters) == (5, 3)


def test_design_effect_of_perfectly_correlated_repeats_by_hand() -> None:
    # 4 sessions × 3 identical repeats (3 pass, 1 fails): SE² = 0.75/16 (CR0), × 4/3 (CR1)
    # = 0.0625; iid SE² = 0.1875/12 = 0.015625: design effect 4, n_eff 3, 2.25 passes — never
    # narrower than the interval of 3 passes in 4 independent items
    u = headline_interval([(3, 3), (3, 3), (0, 3), (3, 3)], binary=True)
    assert u.estimate == 0.75
    assert u.design_effect == pytest.approx(4.0)
    assert (u.low, u.high) == (pytest.approx(clopper_pearson(2.25, 3)[0]),
                               pytest.approx(clopper_pearson(2.25, 3)[1]))
    assert u.low < clopper_pearson(3, 4)[0] < clopper_pearson(9, 12)[0]
    assert u.method == "clopper-pearson" and u.few
    # independent items (one a cluster): design effect 1, the textbook interval of 9/10
    iid = headline_interval([(1, 1)] * 9 + [(0, 1)], binary=True)
    assert iid.design_effect == 1.0
    assert (iid.low, iid.high) == clopper_pearson(9, 10)


def test_all_passing_clusters_count_once_each() -> None:
    # issue 25: 12 tasks passing on every one of 10 identical repeats gave [97.0, 100], the
    # interval of 120 items; now the 12 tasks: lower end 0.025^(1/12) = 0.73535
    u = headline_interval([(10, 10)] * 12, binary=True)
    assert (u.estimate, u.high, u.clusters, u.n) == (1.0, 1.0, 12, 120)
    assert u.low == pytest.approx(0.025 ** (1 / 12), abs=1e-12)
    assert u.low == pytest.approx(0.73535, abs=5e-5)
    assert u.design_effect == pytest.approx(10.0)
    nothing = headline_interval([(0, 10)] * 12, binary=True)
    assert nothing.high == pytest.approx(1 - 0.025 ** (1 / 12), abs=1e-12)
    # sessions grouped into episodes: 6 sessions in 2 episodes, all passing → 2 trials
    two = headline_interval([(3, 3)] * 6, binary=True, clusters="aaabbb")
    assert (two.clusters, two.low) == (2, pytest.approx(0.025 ** 0.5, abs=1e-12))


def test_one_cluster_has_no_interval() -> None:
    # 8 sessions of one episode: how episodes vary is unknown, whatever the figure
    for binary, totals in ((True, [(1, 2)] * 8), (False, [(0.7, 1)] * 4 + [(0.2, 1)] * 4)):
        u = headline_interval(totals, binary=binary, clusters=["ep"] * 8)
        assert (u.low, u.high, u.method, u.clusters, u.n) == (None, None, "none", 1, 16 if
                                                                  binary else 8)


def test_macro_figure_clustered_by_episode_by_hand() -> None:
    # sessions (mean over repeats): e1 {0.2, 0.4}, e2 {0.9}; macro mean over 3 sessions 0.5;
    # deviations per episode: (−0.3 − 0.1)/3, 0.4/3 → SE² = (0.16 + 0.16)/9
    u = headline_interval([(0.4, 2), (0.8, 2), (0.9, 1)], binary=False, bounds=None,
                          clusters=["e1", "e1", "e2"])
    assert u.estimate == pytest.approx(0.5)
    assert u.se == pytest.approx(math.sqrt(0.32) / 3)
    half = 12.706205 * math.sqrt(2) * math.sqrt(0.32) / 3
    assert (u.low, u.high) == (pytest.approx(0.5 - half, abs=1e-5),
                               pytest.approx(0.5 + half, abs=1e-5))
    assert (u.n, u.clusters) == (5, 2)
    # each session its own episode: the SE of 3 session means
    alone = headline_interval([(0.4, 2), (0.8, 2), (0.9, 1)], binary=False, bounds=None)
    assert alone.se == pytest.approx(math.sqrt(0.09 + 0.01 + 0.16) / 3)


def test_bounded_scores_get_a_quarter_cluster_at_each_bound_by_hand() -> None:
    # 4 clusters scoring 0.9, 1, 1, 1 in [0, 1]: pseudo-weight 0.25·4/4 = 0.25 at 0 and at 1
    # centre (3.9 + 0.25)/4.5 = 0.92222; deviations 0.9 − c, 3 × (1 − c), 0.25·(0 − c),
    # 0.25·(1 − c): SE² = Σ²/4.5²; half = t(3)·√(4/3)·SE
    c = 4.15 / 4.5
    devs = [0.9 - c, 1 - c, 1 - c, 1 - c, 0.25 * (0 - c), 0.25 * (1 - c)]
    se = math.sqrt(sum(d * d for d in devs)) / 4.5
    half = 3.182446 * math.sqrt(4 / 3) * se
    u = headline_interval([(0.9, 1), (1.0, 1), (1.0, 1), (1.0, 1)], binary=False)
    assert u.estimate == pytest.approx(0.975)
    assert u.se == pytest.approx(math.sqrt(3 * 0.025 ** 2 + 0.075 ** 2) / 4)
    assert (u.low, u.high) == (pytest.approx(c - half, abs=1e-5), 1.0)
    # without the pseudo-observations the same data gave [0.895, 1]: the interval of a score
    # that rarely falls far cannot end near the few values seen
    assert u.low < 0.975 - 3.182446 * math.sqrt(4 / 3) * u.se


def test_t_interval_on_three_clusters_by_hand() -> None:
    # means 0.2, 0.5, 0.8: SE = √0.18 / 3; × √(3/2) = sd/√3 = 0.3/√3; t(2) = 4.302653
    u = headline_interval([(0.2, 1), (0.5, 1), (0.8, 1)], binary=False, bounds=None)
    assert u.se == pytest.approx(math.sqrt(0.18) / 3)
    half = 4.302653 * 0.3 / math.sqrt(3)
    assert (u.low, u.high) == (pytest.approx(0.5 - half, abs=1e-6),
                               pytest.approx(0.5 + half, abs=1e-6))
    clipped = headline_interval([(0.2, 1), (0.5, 1), (0.8, 1)], binary=False)
    assert (clipped.low, clipped.high) == (0.0, 1.0)
    one = headline_interval([(0.4, 2)], binary=False)
    assert (one.estimate, one.low, one.high, one.method) == (0.2, None, None, "none")


def test_few_clusters_flag() -> None:
    assert headline_interval([(1, 1)] * (TOO_FEW_CLUSTERS - 1), binary=True).few
    assert not headline_interval([(1, 1)] * TOO_FEW_CLUSTERS, binary=True).few
    assert headline_interval([], binary=True).estimate is None


def test_flip_rate_on_three_tasks_three_repeats() -> None:
    # task a passes 3/3, b 1/3 (flips), c 0/3: one of three tasks flips
    table = {"a": [1, 1, 1], "b": [0, 1, 0], "c": [0, 0, 0]}
    f = flip_rate((len(v), sum(v)) for v in table.values())
    assert (f.flips, f.tasks, f.rate) == (1, 3, pytest.approx(1 / 3))
    assert flip_rate([(1, 1), (1, 0)]).rate is None  # one repeat cannot flip


def test_pass_hat_k_tau2_estimator_differs_from_claws_power() -> None:
    # 2 of 3 repeats pass, k = 2: τ² C(2,2)/C(3,2) = 1/3; Claw-Anything's (c/n)^k = 4/9
    assert pass_hat_k(3, 2, 2) == pytest.approx(1 / 3)
    assert pytest.approx(4 / 9) == (2 / 3) ** 2


def test_against_scipy_and_statsmodels_when_installed() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = random.Random(7)
    for _ in range(50):
        n = rng.randint(1, 300)
        x = rng.randint(0, n)
        lo, hi = clopper_pearson(x, n)
        ref = scipy_stats.binomtest(x, n).proportion_ci(0.95, method="exact")
        assert (lo, hi) == (pytest.approx(ref.low, abs=1e-9), pytest.approx(ref.high, abs=1e-9))
        ref_w = scipy_stats.binomtest(x, n).proportion_ci(0.95, method="wilson")
        assert wilson(x, n) == (pytest.approx(ref_w.low, abs=1e-9),
                                pytest.approx(ref_w.high, abs=1e-9))
        df = rng.uniform(1, 200)
        assert t_ppf(0.975, df) == pytest.approx(scipy_stats.t.ppf(0.975, df), rel=1e-9)
        a, b, z = rng.uniform(0.1, 50), rng.uniform(0.1, 50), rng.random()
        import scipy.special

        assert betainc(a, b, z) == pytest.approx(scipy.special.betainc(a, b, z), abs=1e-10)


def test_clustered_se_against_statsmodels_when_installed() -> None:
    sm = pytest.importorskip("statsmodels.api")
    rng = random.Random(3)
    clusters = [[rng.random() for _ in range(rng.randint(1, 4))] for _ in range(12)]
    y = [x for c in clusters for x in c]
    groups = [i for i, c in enumerate(clusters) for _ in c]
    fit = sm.OLS(y, [[1.0]] * len(y)).fit(cov_type="cluster", cov_kwds={
        "groups": groups, "use_correction": False})
    assert clustered_se(clusters) == pytest.approx(float(fit.bse[0]), rel=1e-9)


def test_beta_quantiles_invert_the_cdf_over_many_shapes() -> None:
    from benchpack.reports.stats import beta_ppf

    rng = random.Random(1)
    for _ in range(500):
        a, b, q = rng.uniform(0.05, 2000), rng.uniform(0.05, 2000), rng.random()
        assert betainc(a, b, beta_ppf(q, a, b)) == pytest.approx(q, abs=1e-11)
    # the t quantile far in the tail (density underflow near the end of the bracket)
    t = t_ppf(0.975, 0.5)
    assert betainc(0.25, 0.5, 0.5 / (0.5 + t * t)) == pytest.approx(0.05, abs=1e-12)
