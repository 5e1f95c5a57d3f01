"""Judge and simulator validity statistics (`reports/validity.py`): PPI by hand, Kendall τ by
hand and against an independent reference, leak detection in English and Chinese."""

from __future__ import annotations

import itertools
import math
import random
from statistics import NormalDist
from typing import Any

import pytest

from benchpack.reports import validity

Z95 = NormalDist().inv_cdf(0.975)


def test_ppi_by_hand_ten_units_four_labelled() -> None:
    # judge: 7 of 10 pass; humans on units 0..3 say 1, 0, 0, 1 where the judge said 1, 1, 1, 0
    judge = [1, 1, 1, 0, 1, 1, 1, 1, 0, 0]
    humans = {0: 1.0, 1: 0.0, 2: 0.0, 3: 1.0}
    est = validity.ppi_mean(judge, humans)
    # θ̂ = 0.7 + mean(0, −1, −1, +1) = 0.7 − 0.25 = 0.45
    assert est.judge_mean == pytest.approx(0.7)
    assert est.rectifier == pytest.approx(-0.25)
    assert est.estimate == pytest.approx(0.45)
    # SE: s_f²/N + s_r²/n + 2 cov(f, r)/N with ddof 0, times G/(G − 1), G = N = 10.
    # f: mean .7, var0 = .21. r = (0, −1, −1, 1), mean −.25, var0 = (.0625 + .5625·2 +
    # 1.5625)/4 = .6875; the cross term Σ_labelled (f − f̄)(r − r̄) / (N·n):
    f_dev = [0.3, 0.3, 0.3, -0.7]
    r_dev = [0.25, -0.75, -0.75, 1.25]
    cross = sum(a * b for a, b in zip(f_dev, r_dev, strict=True))  # .075 − .225·2 − .875
    var = 10 / 9 * (0.21 * 10 / 100 + 0.6875 * 4 / 16 + 2 * cross / (10 * 4))
    assert cross == pytest.approx(-1.25)
    assert est.se == pytest.approx(math.sqrt(var))
    assert est.se == pytest.approx(0.38061, abs=1e-5)  # √(10/9 · 0.130375)
    # 0.45 ± 1.96 · 0.3806 = [−0.296, 1.196]: clipped to the rate's range
    assert (est.low, est.high) == (0.0, 1.0)


def test_ppi_unclipped_ci_by_hand() -> None:
    # no bounds: the interval is θ̂ ± z·SE exactly
    judge = [1, 1, 1, 0, 1, 1, 1, 1, 0, 0]
    est = validity.ppi_mean(judge, {0: 1.0, 1: 0.0, 2: 0.0, 3: 1.0}, bounds=None)
    assert est.low == pytest.approx(0.45 - Z95 * 0.3806062, abs=1e-5)
    assert est.high == pytest.approx(0.45 + Z95 * 0.3806062, abs=1e-5)


def test_ppi_corrects_a_judge_that_passes_everything() -> None:
    # adversarial: the judge says PASS on all 100 units; humans fail half of the 20 they rated
    judge = [1.0] * 100
    humans = {i: float(i % 2) for i in range(20)}
    est = validity.ppi_mean(judge, humans)
    assert est.judge_mean == 1.0
    assert est.estimate == pytest.approx(0.5)  # the human rate, not the judge's 1.0
    assert est.high is not None and est.high < 1.0  # the judge's figure is ruled out
    # the judge is constant, so only the rectifier varies: SE = sd0(r)·√(G/(G−1))/n ·√n
    assert est.se == pytest.approx(math.sqrt(100 / 99 * 0.25 / 20))


def test_ppi_a_perfect_judge_changes_nothing() -> None:
    judge = [1.0, 0.0, 0.5, 1.0, 0.0, 1.0]
    est = validity.ppi_mean(judge, {0: 1.0, 2: 0.5, 4: 0.0})
    assert est.estimate == pytest.approx(sum(judge) / 6)
    assert est.rectifier == 0.0


def test_ppi_clusters_pool_a_sessions_triggers() -> None:
    # the same data as one unit per session vs two identical triggers per session: θ̂ equal,
    # and clustering by session keeps the SE from shrinking by √2
    judge = [1.0, 0.0, 1.0, 1.0, 0.0]
    humans = {0: 0.0, 1: 0.0, 2: 1.0}
    one = validity.ppi_mean(judge, humans)
    doubled = [v for v in judge for _ in range(2)]
    humans2 = {2 * i + k: y for i, y in humans.items() for k in range(2)}
    naive = validity.ppi_mean(doubled, humans2)
    clustered = validity.ppi_mean(doubled, humans2, clusters=[i // 2 for i in range(10)])
    assert naive.estimate == pytest.approx(one.estimate)
    assert clustered.se == pytest.approx(one.se)
    assert naive.se is not None and one.se is not None and naive.se < 0.8 * one.se


def test_ppi_undefined_cases() -> None:
    assert validity.ppi_mean([1.0, 0.0], {}).estimate is None
    one = validity.ppi_mean([1.0, 0.0, 1.0], {0: 0.0})
    assert one.estimate == pytest.approx(2 / 3 - 1) and one.low is None  # n = 1: no CI
    with pytest.raises(ValueError):
        validity.ppi_mean([1.0], {3: 1.0})


def test_ppi_from_cluster_totals_by_hand() -> None:
    # the ten units above, each its own cluster, given as (N_g, Σf, n_g, Σ(y − f)) totals
    judge = [1, 1, 1, 0, 1, 1, 1, 1, 0, 0]
    humans = {0: 1.0, 1: 0.0, 2: 0.0, 3: 1.0}
    totals = [(1, float(f), int(i in humans), humans[i] - f if i in humans else 0.0)
              for i, f in enumerate(judge)]
    est = validity.ppi_mean_totals(totals)
    assert (est.judge_mean, est.rectifier, est.estimate) == (0.7, -0.25, 0.7 - 0.25)
    assert est.se == pytest.approx(0.38061, abs=1e-5) and (est.low, est.high) == (0.0, 1.0)
    # the same units in two sessions of five: ψ_g = (F_g − N_g·f̄)/N + (R_g − n_g·r̄)/n.
    # session 1 (units 0-4): F 4, rated 4, R = 0 − 1 − 1 + 1 = −1; session 2: F 3, none rated.
    # ψ_1 = (4 − 3.5)/10 + (−1 + 1)/4 = 0.05, ψ_2 = (3 − 3.5)/10 = −0.05;
    # Var = 2/1 · (0.0025 + 0.0025) = 0.01, SE 0.1
    two = validity.ppi_mean_totals([(5, 4.0, 4, -1.0), (5, 3.0, 0, 0.0)], bounds=None)
    assert two.estimate == 0.7 - 0.25 and two.clusters == 2
    assert two.se == pytest.approx(0.1, abs=1e-15)
    assert two.low == pytest.approx(0.45 - Z95 * 0.1)
    same = validity.ppi_mean([float(f) for f in judge], humans,
                             clusters=[i // 5 for i in range(10)], bounds=None)
    assert same.se == pytest.approx(0.1, abs=1e-15)


def test_ppi_from_cluster_totals_equals_the_unit_by_unit_estimate() -> None:
    """What the agreement report now sums per session in SQL against `ppi_mean` over the
    units: θ̂, f̄ and r̄ to the bit (sums of 0, ½ and 1 are exact), the SE to rounding;
    adversarial cases among them: clusters without judged units, without labelled ones, one
    cluster, one labelled unit, no labelled unit."""
    rng = random.Random(31)
    for case in range(400):
        sessions = rng.randint(1, 12)
        judge: list[float] = []
        humans: dict[int, float] = {}
        clusters: list[int] = []
        for g in range(sessions):
            for _ in range(rng.randint(0, 6)):
                if rng.random() < [0.0, 0.3, 0.9][case % 3]:
                    humans[len(judge)] = rng.choice([0.0, 0.5, 1.0])
                judge.append(rng.choice([0.0, 0.5, 1.0]))
                clusters.append(g)
        totals = [(clusters.count(g),
                   sum(f for f, c in zip(judge, clusters, strict=True) if c == g),
                   sum(1 for i in humans if clusters[i] == g),
                   sum(y - judge[i] for i, y in humans.items() if clusters[i] == g))
                  for g in range(sessions)]
        a = validity.ppi_mean(judge, humans, clusters=clusters)
        b = validity.ppi_mean_totals(totals)
        assert (a.estimate, a.judge_mean, a.rectifier) == (b.estimate, b.judge_mean,
                                                           b.rectifier), case
        assert (a.n_all, a.n_labelled, a.clusters) == (b.n_all, b.n_labelled, b.clusters)
        for x, y in ((a.se, b.se), (a.low, b.low), (a.high, b.high)):
            assert (x is None) == (y is None), case
            if x is not None:
                assert y == pytest.approx(x, rel=1e-12, abs=1e-14), case


def test_ppi_coverage_by_simulation() -> None:
    # a biased noisy judge (passes 30 % of true fails): the PPI CI covers the true rate
    rng = random.Random(1)
    covered = 0
    reps = 600
    for _ in range(reps):
        truth = [1.0 if rng.random() < 0.4 else 0.0 for _ in range(200)]
        judge = [1.0 if y or rng.random() < 0.3 else 0.0 for y in truth]
        labelled = {i: truth[i] for i in rng.sample(range(200), 40)}
        est = validity.ppi_mean(judge, labelled, bounds=None)
        assert est.low is not None and est.high is not None
        covered += est.low <= 0.4 <= est.high
    assert 0.92 <= covered / reps <= 0.98


# --------------------------------------------------------------------------- Kendall τ


def test_kendall_tau_by_hand() -> None:
    # 4 agents: A B C D scored 4 3 2 1 by one judge, 4 2 3 1 by the other: one of 6 pairs
    # swapped → (5 − 1)/6
    assert validity.kendall_tau_b([4, 3, 2, 1], [4, 2, 3, 1]) == pytest.approx(4 / 6)
    assert validity.kendall_tau_b([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # a tie: x = (1, 1, 2), y = (1, 2, 3): C = 2, D = 0, P = 3, T_x = 1 → 2/√(2·3)
    assert validity.kendall_tau_b([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / math.sqrt(6))
    assert validity.kendall_tau_b([1, 1], [1, 2]) is None
    assert validity.kendall_tau_b([1], [1]) is None


def _tau_reference(xs: list[float], ys: list[float]) -> float | None:
    """τ-b from its definition as a correlation of pairwise sign matrices."""
    def sgn(v: float) -> int:
        return (v > 0) - (v < 0)

    a = [sgn(xs[i] - xs[j]) for i, j in itertools.permutations(range(len(xs)), 2)]
    b = [sgn(ys[i] - ys[j]) for i, j in itertools.permutations(range(len(xs)), 2)]
    den = math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / den if den else None


def test_kendall_tau_against_reference_on_random_data() -> None:
    try:
        from scipy.stats import kendalltau  # type: ignore[import-not-found]
    except ImportError:
        kendalltau = None
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(2, 9)
        xs = [float(rng.randint(0, 4)) for _ in range(n)]
        ys = [float(rng.randint(0, 4)) for _ in range(n)]
        got = validity.kendall_tau_b(xs, ys)
        want = _tau_reference(xs, ys)
        if want is None:
            assert got is None
            continue
        assert got == pytest.approx(want)
        if kendalltau is not None:
            assert got == pytest.approx(kendalltau(xs, ys).statistic)


def test_kendall_tau_ci_is_seeded_and_brackets() -> None:
    # three agents, 8 sessions each, clearly separated under both judges
    def agent(level: float) -> dict[str, tuple[float, float]]:
        return {f"s{i}": (level + 0.05 * (i % 3), 1.0) for i in range(8)}

    a = {"x": agent(0.2), "y": agent(0.5), "z": agent(0.8)}
    b = {"x": agent(0.1), "y": agent(0.6), "z": agent(0.7)}
    ci = validity.kendall_tau_ci(a, b, resamples=300, seed=3)
    assert ci.tau == 1.0 and ci.low == 1.0 and ci.high == 1.0 and ci.agents == 3
    # swapped under B: τ = −1/3 (x y z vs y x z... here z x y: pairs xy −, xz +, yz −)
    b2 = {"x": agent(0.5), "y": agent(0.1), "z": agent(0.7)}
    ci2 = validity.kendall_tau_ci(a, b2, resamples=300, seed=3)
    assert ci2.tau == pytest.approx(1 / 3)
    again = validity.kendall_tau_ci(a, b2, resamples=300, seed=3)
    assert (ci2.low, ci2.high) == (again.low, again.high)


def test_kendall_tau_ci_noisy_units_widen() -> None:
    rng = random.Random(5)
    a = {ag: {f"s{i}": (float(rng.random() < p), 1.0) for i in range(12)}
         for ag, p in (("x", 0.4), ("y", 0.5), ("z", 0.6))}
    b = {ag: {u: (float(rng.random() < 0.5), 1.0) for u in units} for ag, units in a.items()}
    ci = validity.kendall_tau_ci(a, b, resamples=400, seed=0)
    assert ci.low is not None and ci.high is not None
    assert ci.low < ci.high and ci.low >= -1.0 and ci.high <= 1.0


# --------------------------------------------------------------------------- leaks


@pytest.mark.parametrize(("secret", "message", "leaked"), [
    ("I also need a receipt emailed to my work address",
     "Sure — and I also need a receipt emailed to my work address, thanks.", True),
    ("I also need a receipt emailed to my work address",
     "also need the receipt emailed to my work address", True),  # near-verbatim
    ("I also need a receipt emailed to my work address", "Book the 9am train please.", False),
    ("我还需要把发票寄到公司地址", "好的，另外我还需要把发票寄到公司地址。", True),
    ("我还需要把发票寄到公司地址", "我 还 需要 把发票 寄到 公司 地址", True),  # re-spaced
    ("我还需要把发票寄到公司地址", "请帮我订明天上午的火车票。", False),
    ("yes", "yes please", False),  # too short to give anything away
])
def test_leaks(secret: str, message: str, leaked: bool) -> None:
    assert validity.leaks(secret, message) is leaked


def test_kendall_tau_ci_resamples_are_the_units_drawn() -> None:
    """The bootstrap's matrix form gives, resample by resample, the τ of the figures a loop
    over the drawn units computes (`_figure`, units missing for an agent included), so the
    percentiles are those of the loop's τs."""
    from benchpack.reports.stats.resampling import unit_draw_counts

    rng = random.Random(7)
    units = [f"s{i}" for i in range(15)]
    a = {ag: {u: (rng.random(), 1.0 + (i % 2)) for i, u in enumerate(units) if rng.random() < 0.9}
         for ag in ("x", "y", "z", "w")}
    b = {ag: {u: (rng.random(), 1.0) for u in units if rng.random() < 0.9} for ag in a}
    ci = validity.kendall_tau_ci(a, b, resamples=300, seed=11)
    every = sorted({u for f in (*a.values(), *b.values()) for u in f})
    agents = sorted(a)
    taus = []
    for block in unit_draw_counts(len(every), 300, 11):
        for row in block.tolist():
            draw = [u for u, c in zip(every, row, strict=True) for _ in range(c)]
            bx = [validity._figure(a[g], draw) for g in agents]
            by = [validity._figure(b[g], draw) for g in agents]
            if None in bx or None in by:
                continue
            t = validity.kendall_tau_b(bx, by)  # type: ignore[arg-type]
            if t is not None:
                taus.append(t)
    taus.sort()
    assert ci.resamples == len(taus) > 250
    assert ci.low == pytest.approx(validity._quantile(taus, 0.025), abs=1e-12)
    assert ci.high == pytest.approx(validity._quantile(taus, 0.975), abs=1e-12)


def test_kendall_tau_cis_together_are_each_alone() -> None:
    """Figures over the same units share one product a block (`kendall_tau_cis`); each
    result is the one its own call gives, to the bit, whichever figures share it (units in
    common, a subset, undefined τ, one unit)."""
    rng = random.Random(21)
    units = [f"s{i}" for i in range(40)]

    def figures(over: list[str]) -> dict[str, dict[str, tuple[float, float]]]:
        return {ag: {u: (float(rng.randint(0, 3)), float(rng.randint(1, 3))) for u in over
                     if rng.random() < 0.9} for ag in ("x", "y", "z", "w")}

    tied = {ag: {u: (1.0, 1.0) for u in units} for ag in ("x", "y")}
    calls = [(figures(units), figures(units)), (figures(units[:20]), figures(units[:20])),
             (figures(units), figures(units)), (tied, figures(units)),
             (figures(units[:1]), figures(units[:1])), (figures(units), figures(units))]
    for caution in (True, False):
        together = validity.kendall_tau_cis(calls, resamples=300, seed=4, caution=caution)
        alone = [validity.kendall_tau_ci(a, b, resamples=300, seed=4, caution=caution)
                 for a, b in calls]
        assert together == alone
        assert [ci.low is None for ci in together] == [False, False, False, True, True, False]
    # not all the same interval (the percentile's: with 4 agents of random figures every
    # upper end is raised to 1, `stats.tau_upper`)
    assert len({(ci.low, ci.high) for ci in together}) > 2


def test_kendall_tau_cis_over_as_many_other_units_share_the_draws(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Figures over other units of the same number draw the same resamples (positions
    0..n−1): they share one bootstrap — one pass over the draws a number of units, not one a
    list of units — and each result is still the one its own call gives, to the bit."""
    rng = random.Random(8)

    def figures(over: list[str]) -> dict[str, dict[str, tuple[float, float]]]:
        return {ag: {u: (rng.random() * rng.randint(1, 3), float(rng.randint(1, 3)))
                     for u in over if rng.random() < 0.9} for ag in ("x", "y", "z")}

    first = [f"s{i}" for i in range(30)]
    other = [f"t{i}" for i in range(30)]  # as many units, none in common
    calls = [(figures(first), figures(first)), (figures(other), figures(other)),
             (figures(first[:12]), figures(first[:12]))]
    alone = [validity.kendall_tau_ci(a, b, resamples=300, seed=2) for a, b in calls]
    sizes: list[int] = []
    real = validity._tau_bootstrap

    def counting(n: int, *args: Any) -> Any:
        sizes.append(n)
        return real(n, *args)

    monkeypatch.setattr(validity, "_tau_bootstrap", counting)
    together = validity.kendall_tau_cis(calls, resamples=300, seed=2)
    assert together == alone
    assert sorted(sizes) == [12, 30]  # the two lists of 30 units in one bootstrap
    assert together[0] != together[1]  # different figures, different intervals


def test_unit_draws_are_seeded_counts_of_n_draws() -> None:
    from benchpack.reports.stats.resampling import unit_draw_counts

    blocks = list(unit_draw_counts(5, 600, 3, chunk=256))
    assert [b.shape for b in blocks] == [(256, 5), (256, 5), (88, 5)]
    rows = [r for b in blocks for r in b.tolist()]
    assert all(sum(r) == 5 and min(r) >= 0 for r in rows)
    again = [r for b in unit_draw_counts(5, 600, 3) for r in b.tolist()]
    assert rows == again
    assert rows != [r for b in unit_draw_counts(5, 600, 4) for r in b.tolist()]
    # each unit drawn once a resample on average; 1 − (4/5)^5 ≈ 67 % of the units drawn
    means = [sum(r[i] for r in rows) / len(rows) for i in range(5)]
    assert all(0.85 < m < 1.15 for m in means)
    drawn = sum(c > 0 for r in rows for c in r) / (5 * len(rows))
    assert abs(drawn - (1 - 0.8 ** 5)) < 0.03
