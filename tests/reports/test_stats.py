"""benchpack.reports.stats against hand-computed values, published tables and brute force
(the properties every input must keep are in `test_stats_properties.py`)."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Callable
from fractions import Fraction

import pytest

from benchpack.reports.stats import (
    AlphaLevel,
    KappaWeights,
    agreement,
    bootstrap_ci,
    bootstrap_counts,
    cohen_kappa,
    confusion_matrix,
    kappa_cis,
    krippendorff_alpha,
    krippendorff_alpha_coincidence,
    macro_micro,
    mean_std,
    normal_ci,
    pass_at_k,
    pass_at_k_over_tasks,
    pass_hat_k,
    pass_hat_k_over_tasks,
    rank_stability,
    ranks,
    spearman_rho,
    task_counts,
    trigger_rates,
)

ORDER = ["Fail", "Partial", "Pass"]

# DESIGN.md / ProactBench Table 11: human consensus (rows) vs judge (cols), Fail/Partial/Pass
DESIGN_MATRIX = [[8, 2, 0], [1, 6, 3], [3, 7, 15]]


# --------------------------------------------------------------------------- agreement


def test_design_matrix_reproduces_the_published_agreement_table() -> None:
    assert round(cohen_kappa(DESIGN_MATRIX) or 0, 2) == 0.45
    assert round(cohen_kappa(DESIGN_MATRIX, "linear") or 0, 2) == 0.52
    assert round(cohen_kappa(DESIGN_MATRIX, "quadratic") or 0, 2) == 0.59
    a = agreement(DESIGN_MATRIX)
    assert (round(100 * (a.exact or 0), 1), round(100 * (a.within_one or 0), 1)) == (64.4, 93.3)
    assert a.n == 45


def test_design_matrix_kappas_equal_the_hand_computed_fractions() -> None:
    # margins rows (10, 10, 25), cols (12, 15, 18), n = 45
    # unweighted: p_o = 29/45, p_e = (120 + 150 + 450)/2025 → κ = (1305 − 720)/(2025 − 720)
    assert cohen_kappa(DESIGN_MATRIX) == pytest.approx(float(Fraction(585, 1305)), abs=1e-15)
    # linear: observed Σw·o = 13·½ + 3·1 = 9.5; expected Σw·r·c/n = (825·½ + 480)/45
    assert cohen_kappa(DESIGN_MATRIX, "linear") == pytest.approx(1 - 9.5 * 45 / 892.5, abs=1e-15)
    # quadratic: observed 13·¼ + 3 = 6.25; expected (825·¼ + 480)/45
    assert cohen_kappa(DESIGN_MATRIX, "quadratic") == pytest.approx(
        1 - 6.25 * 45 / 686.25, abs=1e-15
    )
    assert agreement(DESIGN_MATRIX).exact == 29 / 45
    assert agreement(DESIGN_MATRIX).within_one == 42 / 45


def test_confusion_matrix_from_label_pairs_feeds_kappa() -> None:
    pairs = [(r, c) for i, r in enumerate(ORDER) for j, c in enumerate(ORDER)
             for _ in range(DESIGN_MATRIX[i][j])]
    random.Random(3).shuffle(pairs)
    assert confusion_matrix(pairs, ORDER) == DESIGN_MATRIX
    with pytest.raises(ValueError, match="'Great' is not one of"):
        confusion_matrix([("Pass", "Great")], ORDER)


def test_kappa_extremes_and_undefined_cases() -> None:
    assert cohen_kappa([[5, 0], [0, 3]]) == 1.0
    assert cohen_kappa([[0, 4], [4, 0]]) == -1.0
    assert cohen_kappa([[4, 0], [0, 0]]) is None  # both raters used one category: no chance model
    assert cohen_kappa([[0, 0], [0, 0]]) is None
    # independence gives κ = 0 whatever the weights
    for weights in (None, "linear", "quadratic"):
        assert cohen_kappa([[2, 4, 6], [1, 2, 3], [3, 6, 9]], weights) == pytest.approx(0, abs=1e-12)
    with pytest.raises(ValueError, match="square"):
        cohen_kappa([[1, 2], [3]])
    with pytest.raises(ValueError, match="non-negative"):
        cohen_kappa([[1, -1], [0, 1]])
    with pytest.raises(ValueError, match="weights"):
        cohen_kappa([[1]], "cubic")  # type: ignore[arg-type]


def test_within_one_step_ignores_two_step_disagreements_on_four_categories() -> None:
    m = [[1, 1, 1, 1], [0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 1]]
    a = agreement(m)
    assert (a.exact, a.within_one) == (4 / 8, 5 / 8)
    assert agreement([[0]]).exact is None


# --------------------------------------------------------------------------- Krippendorff's α

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers × 12 units,
# missing values as None. Published: nominal .743, ordinal .815, interval .849, ratio .797.
K_UNITS: list[list[int | None]] = [
    [1, 1, None, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
    [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [None, 5, 5, 5], [None, None, 1, 1],
    [None, None, 3, None],
]


def test_krippendorff_textbook_example_matches_hand_computation() -> None:
    # Pairable values n = 40 (unit 12 has one value), margins n_1..n_5 = 9, 13, 10, 5, 3.
    # Nominal: off-diagonal coincidences come from units 2 (6/3), 6 (12/3) and 8 (6/3) = 8;
    # expected Σ_{c≠k} n_c n_k = 40² − (81 + 169 + 100 + 25 + 9) = 1216 → α = 1 − 39·8/1216.
    assert krippendorff_alpha(K_UNITS, "nominal") == pytest.approx(1 - 39 * 8 / 1216, abs=1e-12)
    # Interval: observed Σ o δ² = 2 + 40/3 + 2 = 52/3; expected Σ n_c n_k (c−k)² =
    # 2(n Σ n_c c² − (Σ n_c c)²) = 2(40·306 − 100²) = 4480 → α = 1 − 39·(52/3)/4480.
    assert krippendorff_alpha(K_UNITS, "interval") == pytest.approx(
        1 - 39 * 52 / 3 / 4480, abs=1e-12
    )


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_krippendorff_textbook_example_matches_published_values(level: str, published: float) -> None:
    assert round(krippendorff_alpha(K_UNITS, level) or 0, 3) == published  # type: ignore[arg-type]


def test_ordinal_alpha_uses_ranks_not_values() -> None:
    relabel = {1: 1, 2: 10, 3: 11, 4: 50, 5: 51}
    stretched = [[None if v is None else relabel[v] for v in unit] for unit in K_UNITS]
    assert krippendorff_alpha(stretched, "ordinal") == pytest.approx(
        krippendorff_alpha(K_UNITS, "ordinal"), abs=1e-12
    )
    assert krippendorff_alpha(stretched, "interval") != pytest.approx(
        krippendorff_alpha(K_UNITS, "interval"), abs=1e-3
    )
    names = ["a", "b", "c", "d", "e"]  # alphabetical order would be wrong for an ordinal scale
    named = [[None if v is None else names[v - 1] for v in unit] for unit in K_UNITS]
    assert krippendorff_alpha(named, "ordinal", categories=names) == pytest.approx(
        krippendorff_alpha(K_UNITS, "ordinal"), abs=1e-12
    )


def test_alpha_ignores_coder_order_and_unpairable_units() -> None:
    shuffled = [list(reversed(unit)) for unit in K_UNITS] + [[None, 4], []]
    for level in ("nominal", "ordinal", "interval"):
        assert krippendorff_alpha(shuffled, level) == pytest.approx(
            krippendorff_alpha(K_UNITS, level), abs=1e-12
        )


def test_alpha_undefined_and_invalid_input() -> None:
    assert krippendorff_alpha([[1, 1], [1, 1, 1]], "nominal") is None
    assert krippendorff_alpha([[1], [2]], "ordinal") is None
    with pytest.raises(ValueError, match="not in categories"):
        krippendorff_alpha([["Pass", "Great"]], categories=ORDER)
    with pytest.raises(ValueError, match="numeric"):
        krippendorff_alpha([["Pass", "Fail"]], "interval")


# --------------------------------------------------------------------------- Spearman


def test_spearman_without_ties_matches_the_classic_formula() -> None:
    # d = (−1, 1, −1, 1, 0): ρ = 1 − 6·4/(5·24) = 0.8
    assert spearman_rho([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8, abs=1e-12)
    assert spearman_rho([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)


def test_spearman_with_ties_uses_average_ranks() -> None:
    assert ranks([10, 20, 20, 20, 5]) == [2.0, 4.0, 4.0, 4.0, 1.0]
    # ranks x (1, 2.5, 2.5, 4), y (1, 3, 2, 4): Σxy = 4.5, Σx² = 4.5, Σy² = 5 (centred on 2.5)
    # → ρ = 4.5/√22.5 = √0.9; the no-ties shortcut 1 − 6Σd²/(n(n²−1)) would give 0.95
    assert spearman_rho([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(math.sqrt(0.9), abs=1e-12)


def test_spearman_undefined_and_rank_stability() -> None:
    assert spearman_rho([1, 1, 1], [1, 2, 3]) is None
    assert spearman_rho([1], [1]) is None
    with pytest.raises(ValueError, match="differ in length"):
        spearman_rho([1, 2], [1, 2, 3])
    judge_a = {"m1": 0.52, "m2": 0.27, "m3": 0.30, "m4": 0.12}
    judge_b = {"m4": 0.10, "m3": 0.25, "m2": 0.33, "m1": 0.36}
    assert rank_stability(judge_a, judge_b) == pytest.approx(0.8)  # m2/m3 swap
    with pytest.raises(ValueError, match=r"\['m5'\]"):
        rank_stability(judge_a, {**judge_b, "m5": 0.4})


# --------------------------------------------------------------------------- pass@k, pass^k


def test_pass_at_k_and_pass_hat_k_closed_forms() -> None:
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 − C(3,2)/C(5,2)
    assert pass_hat_k(5, 2, 2) == pytest.approx(1 / 10)  # C(2,2)/C(5,2)
    assert pass_at_k(5, 2, 4) == 1.0  # fewer failures than draws
    assert pass_hat_k(5, 2, 3) == 0.0
    assert pass_at_k(7, 3, 1) == pass_hat_k(7, 3, 1) == pytest.approx(3 / 7)
    # big binomials stay exact: C(199,100)/C(200,100) = 100/200
    assert pass_at_k(200, 1, 100) == 0.5
    for bad in ((5, 6, 1), (5, -1, 1), (5, 2, 0), (5, 2, 6)):
        with pytest.raises(ValueError):
            pass_at_k(*bad)


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_and_pass_hat_k_match_enumeration_of_all_k_subsets(n: int) -> None:
    for c in range(n + 1):
        runs = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            subsets = list(itertools.combinations(runs, k))
            any_pass = Fraction(sum(any(s) for s in subsets), len(subsets))
            all_pass = Fraction(sum(all(s) for s in subsets), len(subsets))
            assert pass_at_k(n, c, k) == pytest.approx(float(any_pass), abs=1e-15)
            assert pass_hat_k(n, c, k) == pytest.approx(float(all_pass), abs=1e-15)


def test_pass_at_k_aggregates_over_tasks_with_equal_weight() -> None:
    counts = task_counts([("t1", True), ("t1", False), ("t1", True), ("t2", False),
                          ("t2", False), ("t2", True)])
    assert counts == {"t1": (3, 2), "t2": (3, 1)}
    assert pass_at_k_over_tasks(counts.values(), 2) == pytest.approx((1.0 + 2 / 3) / 2)
    assert pass_hat_k_over_tasks(counts.values(), 2) == pytest.approx((1 / 3 + 0) / 2)
    assert pass_at_k_over_tasks([], 1) is None


# --------------------------------------------------------------------------- means and rates


def test_mean_std_uses_the_sample_std() -> None:
    r = mean_std([2, 4, 4, 4, 5, 5, 7, 9])
    assert (r.mean, r.n) == (5.0, 8)
    assert r.std == pytest.approx(math.sqrt(32 / 7))
    assert mean_std([3.0]).std is None
    assert mean_std([]).mean is None


def test_macro_and_micro_differ_when_units_differ_in_size() -> None:
    # PROC per session: (completed + inferred, intents)
    r = macro_micro([(1, 2), (3, 3), (0, 1)])
    assert r.macro == pytest.approx(0.5)
    assert r.micro == pytest.approx(4 / 6)
    assert macro_micro([]).macro is None
    with pytest.raises(ValueError, match="positive denominator"):
        macro_micro([(0, 0)])


def test_trigger_rates() -> None:
    r = trigger_rates(3, 2, 5)
    assert (r.n, r.pass_rate, r.partial_rate, r.fail_rate, r.weighted) == (10, 0.3, 0.2, 0.5, 0.4)
    assert trigger_rates(0, 0, 0).weighted is None


# --------------------------------------------------------------------------- bootstrap


def _binary_units(n: int, successes: int) -> list[list[float]]:
    return [[1.0]] * successes + [[0.0]] * (n - successes)


def test_bootstrap_is_deterministic_for_a_seed_and_contains_the_estimate() -> None:
    units = _binary_units(200, 137)
    a = bootstrap_ci(units, seed=7)
    assert a == bootstrap_ci(units, seed=7)
    assert a != bootstrap_ci(units, seed=8)
    assert a.estimate == 137 / 200
    assert a.low is not None and a.high is not None
    assert a.low < a.estimate < a.high
    # the binomial normal approximation: ±1.96·√(p(1−p)/n) ≈ ±0.064
    assert a.high - a.low == pytest.approx(2 * 1.96 * math.sqrt(0.685 * 0.315 / 200), rel=0.15)


def test_bootstrap_width_shrinks_with_more_units() -> None:
    small = bootstrap_ci(_binary_units(50, 30), resamples=1000)
    large = bootstrap_ci(_binary_units(5000, 3000), resamples=1000)
    assert small.estimate == large.estimate == 0.6
    assert (large.high or 0) - (large.low or 0) < ((small.high or 0) - (small.low or 0)) / 5


def test_cluster_resampling_is_wider_than_observation_resampling_on_clustered_data() -> None:
    # 10 sessions of 50 identical outcomes: the information is in 10 sessions, not 500 outcomes
    sessions = [[float(i % 2)] * 50 for i in range(10)]
    clustered = bootstrap_ci(sessions, resamples=1000)
    flat = bootstrap_ci([[x] for s in sessions for x in s], resamples=1000)
    assert clustered.estimate == flat.estimate == 0.5
    cw = (clustered.high or 0) - (clustered.low or 0)
    fw = (flat.high or 0) - (flat.low or 0)
    assert cw > 0.5 and fw < 0.1


def test_builtin_statistics_draw_the_same_resamples_as_a_callable() -> None:
    rng = random.Random(1)
    units = [[rng.random() for _ in range(rng.randint(1, 4))] for _ in range(40)]

    def pooled(sample: list[list[float]]) -> float:
        return math.fsum(math.fsum(u) for u in sample) / sum(len(u) for u in sample)

    def macro(sample: list[list[float]]) -> float:
        return math.fsum(math.fsum(u) / len(u) for u in sample) / len(sample)

    for name, fn in (("mean", pooled), ("unit_mean", macro)):
        fast = bootstrap_ci(units, name, resamples=300, seed=3)  # type: ignore[call-overload]
        slow = bootstrap_ci(units, fn, resamples=300, seed=3)
        assert fast.estimate == pytest.approx(slow.estimate, abs=1e-12)
        assert fast.low == pytest.approx(slow.low, abs=1e-12)
        assert fast.high == pytest.approx(slow.high, abs=1e-12)
    assert bootstrap_ci(units, "mean").estimate != pytest.approx(
        bootstrap_ci(units, "unit_mean").estimate, abs=1e-6
    )


def test_bootstrap_ratio_statistic_pools_numerators_and_denominators() -> None:
    # PROC micro: per session (resolved intents, intents)
    units = [[(1.0, 2.0)], [(3.0, 3.0)], [(0.0, 1.0), (2.0, 2.0)]]
    ci = bootstrap_ci(units, "ratio", resamples=500)
    assert ci.estimate == pytest.approx(6 / 8)
    assert ci.low is not None and ci.high is not None and ci.estimate is not None
    assert 1 / 3 <= ci.low <= ci.estimate <= ci.high <= 1.0
    undefined = bootstrap_ci([[(1.0, 0.0)], [(1.0, 1.0)]], "ratio", resamples=500)
    # resamples of only the first unit have no denominator; the others give 2/1 or 1/1
    assert undefined.estimate == 2.0
    assert 0 < undefined.undefined < 500
    assert (undefined.low, undefined.high) == (1.0, 2.0)


def test_bootstrap_edge_cases() -> None:
    empty = bootstrap_ci([], seed=1)
    assert (empty.estimate, empty.low, empty.high, empty.n_units) == (None, None, None, 0)
    one = bootstrap_ci([[0.2, 0.4]])
    assert one.low == one.high == one.estimate == pytest.approx(0.3)
    with pytest.raises(ValueError, match="level"):
        bootstrap_ci([[1.0]], level=1.0)
    with pytest.raises(ValueError, match="unit_mean"):
        bootstrap_ci([[1.0], []], "unit_mean")


def test_normal_ci_by_hand() -> None:
    # equal denominators: mean 0.75, SE = √(Σ(x − 0.75)²) / 4 = √0.75 / 4, high clipped to 1
    ci = normal_ci([(0.0, 1.0), (1.0, 1.0), (1.0, 1.0), (1.0, 1.0)])
    half = 1.959963984540054 * math.sqrt(0.75) / 4
    assert (ci.estimate, ci.low, ci.high) == pytest.approx((0.75, 0.75 - half, 1.0))
    assert (ci.method, ci.resamples, ci.n_units) == ("normal", 0, 4)
    # a pooled ratio: R = 4/7, residuals num − R·den = −1/7, 5/7, −4/7; no resample can
    # exceed the largest unit ratio 3/4
    ratio = normal_ci([(1.0, 2.0), (3.0, 4.0), (0.0, 1.0)], level=0.9)
    half = 1.6448536269514722 * math.sqrt(42 / 49) / 7
    assert 4 / 7 + half > 0.75
    assert (ratio.estimate, ratio.low, ratio.high) == pytest.approx((4 / 7, 4 / 7 - half, 0.75))
    # weights stand for repeated units
    counts = {1.0: 3, 0.5: 2, 0.0: 5}
    expanded = normal_ci([(x, 1.0) for x, c in counts.items() for _ in range(c)])
    weighted = normal_ci([(x, 1.0) for x in counts], weights=list(counts.values()))
    assert (weighted.estimate, weighted.low, weighted.high, weighted.n_units) == pytest.approx(
        (expanded.estimate, expanded.low, expanded.high, 10))
    empty = normal_ci([(1.0, 0.0)])
    assert (empty.estimate, empty.low, empty.high) == (None, None, None)
    with pytest.raises(ValueError, match="weights"):
        normal_ci([(1.0, 1.0)], weights=[1, 2])


def test_exact_max_switches_to_the_normal_approximation_above_it() -> None:
    units = [[random.Random(i).random()] for i in range(60)]
    assert bootstrap_ci(units, "unit_mean", exact_max=60) == bootstrap_ci(units, "unit_mean")
    above = bootstrap_ci(units, "unit_mean", exact_max=59)
    assert above.method == "normal" and above.resamples == 0 and above.n_units == 60
    assert above == normal_ci([(u[0], 1.0) for u in units])
    # a callable statistic always resamples
    assert bootstrap_ci(units, lambda s: s[0][0], exact_max=1).method == "percentile"


def test_one_value_everywhere_gives_the_resampling_loop_s_zero_width_interval() -> None:
    for units in ([[0.1]], [[0.1]] * 7, [[0.1, 0.1]] * 3):
        ci = bootstrap_ci(units, "mean")
        assert ci.low == ci.high == sum([math.fsum(units[0])] * len(units)) / (
            len(units[0]) * len(units))


@pytest.mark.parametrize("case", ["binary .5", "binary .9", "trigger scores", "proc x3",
                                  "clusters", "ratio"])
def test_normal_approximation_agrees_with_the_exact_bootstrap_on_a_mid_size_case(
    case: str
) -> None:
    """What the reports use above `BOOTSTRAP_EXACT_MAX` units: 400 units, the exact percentile
    bootstrap (2,000 resamples) vs its normal approximation — within a fifth of a half-width
    (the percentile endpoints' own Monte-Carlo noise is about a tenth)."""
    rng = random.Random(case)
    statistic = "unit_mean" if case == "proc x3" else "ratio" if case == "ratio" else "mean"
    units: list[list[float]] | list[list[tuple[float, float]]]
    if case.startswith("binary"):
        p = float(case.split()[1])
        units = [[float(rng.random() < p)] for _ in range(400)]
    elif case == "trigger scores":
        units = [[rng.choice([1.0, 1.0, 0.5, 0.0])] for _ in range(400)]
    elif case == "proc x3":  # a session's PROC over three repeats, 1–5 intents each
        units = [[rng.randint(0, n) / n for n in (rng.randint(1, 5),) * 3] for _ in range(400)]
    elif case == "clusters":  # sessions of 1–6 turns, pooled
        units = [[float(rng.random() < 0.3)] * rng.randint(1, 6) for _ in range(400)]
    else:  # micro PROC: (resolved, intents) per session
        units = [[(float(rng.randint(0, n)), float(n)) for n in (rng.randint(1, 5),)]
                 for _ in range(400)]
    exact = bootstrap_ci(units, statistic)  # type: ignore[call-overload]
    approx = bootstrap_ci(units, statistic, exact_max=50)  # type: ignore[call-overload]
    assert (exact.method, approx.method) == ("percentile", "normal")
    assert approx.estimate == pytest.approx(exact.estimate, rel=1e-12)
    half = (exact.high - exact.low) / 2
    assert abs(approx.low - exact.low) <= 0.2 * half
    assert abs(approx.high - exact.high) <= 0.2 * half


def test_bootstrap_kappa_over_items() -> None:
    items = [(r, c) for i, r in enumerate(ORDER) for j, c in enumerate(ORDER)
             for _ in range(DESIGN_MATRIX[i][j])]
    ci = bootstrap_ci(items, lambda s: cohen_kappa(confusion_matrix(s, ORDER), "quadratic"),
                      resamples=2000, seed=2026)
    assert ci.estimate == pytest.approx(0.59, abs=0.005)
    # published (10,000 item-level resamples): [0.34, 0.79]
    assert ci.low == pytest.approx(0.34, abs=0.04)
    assert ci.high == pytest.approx(0.79, abs=0.04)


def test_confusion_matrix_from_counted_pairs_equals_the_listed_pairs() -> None:
    pairs = [("Fail", "Fail")] * 8 + [("Pass", "Partial")] * 7 + [("Partial", "Pass")] * 3
    counted = {("Fail", "Fail"): 8, ("Pass", "Partial"): 7, ("Partial", "Pass"): 3}
    assert confusion_matrix(counted, ORDER) == confusion_matrix(pairs, ORDER)
    with pytest.raises(ValueError, match="not one of"):
        confusion_matrix({("Fail", "Maybe"): 1}, ORDER)
    with pytest.raises(ValueError, match="negative count"):
        confusion_matrix({("Fail", "Pass"): -1}, ORDER)


def test_alpha_from_coincidences_equals_alpha_from_units() -> None:
    """Krippendorff's 4×12 example through its coincidence matrix, counted by hand as
    n_c·(n_d − [c=d])/(m−1) per unit; and for two raters the confusion matrix M gives M + Mᵀ."""
    coincidence = [[0.0] * 5 for _ in range(5)]
    for unit in K_UNITS:
        values = [v for v in unit if v is not None]
        if len(values) < 2:
            continue
        for c in range(1, 6):
            for d in range(1, 6):
                n_c, n_d = values.count(c), values.count(d)
                coincidence[c - 1][d - 1] += n_c * (n_d - (c == d)) / (len(values) - 1)
    levels: list[AlphaLevel] = ["nominal", "ordinal", "interval", "ratio"]
    for level in levels:
        assert krippendorff_alpha_coincidence(coincidence, level, [1, 2, 3, 4, 5]) == (
            pytest.approx(krippendorff_alpha(K_UNITS, level), abs=1e-12))
    m = DESIGN_MATRIX
    both = [[m[i][j] + m[j][i] for j in range(3)] for i in range(3)]
    units = [[ORDER[i], ORDER[j]] for i in range(3) for j in range(3) for _ in range(m[i][j])]
    assert krippendorff_alpha_coincidence(both, "ordinal", ORDER) == krippendorff_alpha(
        units, "ordinal", categories=ORDER)
    with pytest.raises(ValueError, match="3×3"):
        krippendorff_alpha_coincidence([[1.0, 0.0], [0.0, 1.0]], "ordinal", ORDER)


def _kappa_delta_se(matrix: list[list[int]], weights: KappaWeights | None) -> float:
    """The delta-method SE of κ by numerical differentiation: Var = (Σ p g² − (Σ p g)²) / n
    with g = ∂κ/∂p over the cells (multinomial sampling of the items)."""
    flat = [c for row in matrix for c in row]
    n = sum(flat)
    p = [c / n for c in flat]

    def kappa(q: list[float]) -> float:
        value = cohen_kappa([q[i * 3:(i + 1) * 3] for i in range(3)], weights)
        assert value is not None
        return value

    h = 1e-6
    grads = []
    for x in range(9):
        if not p[x]:  # an empty cell weighs nothing
            grads.append(0.0)
            continue
        up, down = list(p), list(p)
        up[x] += h
        down[x] -= h
        grads.append((kappa(up) - kappa(down)) / (2 * h))
    mean = sum(pi * g for pi, g in zip(p, grads, strict=True))
    return math.sqrt((sum(pi * g * g for pi, g in zip(p, grads, strict=True)) - mean**2) / n)


def test_kappa_normal_ci_uses_the_delta_method_se() -> None:
    """Above `exact_max` items: κ ± 1.96·SE, the SE of Fleiss, Cohen & Everitt equal to the
    delta-method SE computed by numerical differentiation."""
    big = [[c * 40 for c in row] for row in DESIGN_MATRIX]  # 1,800 items, κ as DESIGN.md's
    z = statistics.NormalDist().inv_cdf(0.975)
    cis = kappa_cis(big, exact_max=500)
    weightings: tuple[KappaWeights | None, ...] = (None, "linear", "quadratic")
    for ci, weights, published in zip(cis, weightings, (0.45, 0.52, 0.59), strict=True):
        assert ci.method == "normal" and ci.resamples == 0 and ci.n_units == 1800
        assert round(ci.estimate or 0, 2) == published
        se = _kappa_delta_se(big, weights)
        assert (ci.high or 0) - (ci.estimate or 0) == pytest.approx(z * se, rel=1e-6)
        assert (ci.estimate or 0) - (ci.low or 0) == pytest.approx(z * se, rel=1e-6)
    # perfect agreement: zero width, clipped to κ ≤ 1; nothing to compare: undefined
    (perfect,) = kappa_cis([[600, 0], [0, 400]], [None], exact_max=10)
    assert (perfect.estimate, perfect.low, perfect.high) == (1.0, 1.0, 1.0)
    assert kappa_cis([[900, 0], [0, 0]], [None], exact_max=10)[0].estimate is None


def test_kappa_cis_up_to_exact_max_is_the_item_bootstrap() -> None:
    """Up to `exact_max` items the report's κ CIs are `bootstrap_counts` with `cohen_kappa`,
    bit for bit (the same resamples for the three weightings)."""
    flat = [c for row in DESIGN_MATRIX for c in row]
    def kappa(weights: KappaWeights | None) -> Callable[[list[int]], float | None]:
        return lambda s: cohen_kappa([s[i * 3:(i + 1) * 3] for i in range(3)], weights)

    by_hand = bootstrap_counts(flat, [kappa(w) for w in (None, "linear", "quadratic")], seed=3)
    assert kappa_cis(DESIGN_MATRIX, seed=3, exact_max=45) == by_hand
    assert kappa_cis(DESIGN_MATRIX, seed=3) == by_hand
    assert all(ci.method == "percentile" for ci in by_hand)
    assert all(ci.method == "normal" for ci in kappa_cis(DESIGN_MATRIX, exact_max=44))


@pytest.mark.parametrize("matrix", [
    [[60, 15, 3], [18, 75, 18], [3, 21, 180]],  # judge vs judge, 3 labels, about 80 % exact
    [[40, 6], [4, 50]],                          # YES / NO, 90 %
    [[8, 2], [1, 89]],                           # YES / NO, skewed: 97 % YES
])
def test_kappa_normal_ci_agrees_with_the_bootstrap_from_500_items(matrix: list[list[int]]
                                                                  ) -> None:
    """What the agreement report uses above 500 items, measured at 500 items (the scale of
    the matrix): the endpoints within a fifth of the bootstrap's half-width (its own
    Monte-Carlo noise with 2,000 resamples is about a tenth)."""
    total = sum(map(sum, matrix))
    scaled = [[round(c * 500 / total) for c in row] for row in matrix]
    weights: tuple[KappaWeights | None, ...] = (
        (None, "linear", "quadratic") if len(matrix) == 3 else (None,))
    exact = kappa_cis(scaled, weights, seed=11)
    approx = kappa_cis(scaled, weights, exact_max=100)
    for e, a in zip(exact, approx, strict=True):
        assert (e.method, a.method) == ("percentile", "normal") and a.estimate == e.estimate
        half = ((e.high or 0) - (e.low or 0)) / 2
        assert abs((a.low or 0) - (e.low or 0)) <= 0.2 * half
        assert abs((a.high or 0) - (e.high or 0)) <= 0.2 * half
