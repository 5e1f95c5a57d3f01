"""Krippendorff's α above the exact-bootstrap limit: α ± z·SE with the delete-one-unit
jackknife SE (`stats.krippendorff_alpha_ci(..., exact_max=…)`, method "jackknife").

Hand computation (NO / YES, two ratings a unit): U1 = (NO, YES), U2 = (NO, NO),
U3 = U4 = (YES, YES). Pooled: n_NO = 3, n_YES = 5, n = 8, two off-diagonal coincidences, so
α = 1 − 7 · 2 / (2 · 3 · 5) = 8/15 (on two labels the ordinal δ² cancels). Without one unit
(n = 6): U1 → no disagreement left, α = 1; U2 → n_NO = 1, n_YES = 5: 1 − 5 · 2 / (2 · 5) = 0;
U3 or U4 → 3 and 3: 1 − 5 · 2 / (2 · 9) = 4/9. Their mean 17/36, squared deviations
(19² + 17² + 1 + 1) / 36² = 652 / 1296, SE² = (4 − 1)/4 · 652/1296 = 489/1296: SE = √489 / 36.
The interval is normal on the scale of log(1 − α): 1 − (7/15)·e^(±z·SE/(7/15)).
"""

from __future__ import annotations

import math
import random
import statistics

import pytest

from benchpack.reports import stats
from conftest import alpha_units, benchmark_script

YES_NO = ("NO", "YES")
LABELS = ("FAIL", "PARTIAL", "PASS")
Z95 = statistics.NormalDist().inv_cdf(0.975)


units = alpha_units


HAND = [("NO", "YES"), ("NO", "NO"), ("YES", "YES"), ("YES", "YES")]


def test_hand_computed_jackknife_se() -> None:
    ci = stats.krippendorff_alpha_ci(units(*HAND), "ordinal", YES_NO, exact_max=3,
                                     caution=False)  # 2 disagreeing values: marked, widened
    assert ci.method == "jackknife" and ci.resamples == 0 and ci.n_units == 4
    assert ci.estimate == pytest.approx(8 / 15, abs=1e-12)
    se = math.sqrt(489) / 36
    assert ci.low == pytest.approx(1 - 7 / 15 * math.exp(Z95 * se * 15 / 7), abs=1e-12)
    assert ci.high == pytest.approx(1 - 7 / 15 * math.exp(-Z95 * se * 15 / 7), abs=1e-12)
    assert ci.high < 1  # where 8/15 + 1.96 · 0.614 would pass the largest α there is


def test_at_the_limit_still_the_bootstrap() -> None:
    """`exact_max` units is still exact: the same interval as without a limit."""
    exact = stats.krippendorff_alpha_ci(units(*HAND), "ordinal", YES_NO)
    assert stats.krippendorff_alpha_ci(units(*HAND), "ordinal", YES_NO, exact_max=4) == exact
    assert exact.method == "percentile" and exact.resamples == 2000


def test_jackknife_against_alpha_of_the_ratings_without_each_unit() -> None:
    """An independent path: α₍ᵢ₎ from the raw ratings by `krippendorff_alpha` with unit i
    left out, the jackknife SE by its definition, on random ordinal data with units of 1-5
    ratings and repeated patterns."""
    rng = random.Random(7)
    for _ in range(20):
        raw = [tuple(rng.choice(LABELS) for _ in range(rng.randint(1, 5)))
               for _ in range(rng.randint(3, 40))]
        full = stats.krippendorff_alpha([list(u) for u in raw], "ordinal",
                                        categories=list(LABELS))
        left = [stats.krippendorff_alpha([list(u) for j, u in enumerate(raw) if j != i],
                                         "ordinal", categories=list(LABELS))
                for i in range(len(raw))]
        ci = stats.krippendorff_alpha_ci(units(*raw, scale=LABELS), "ordinal", LABELS,
                                         exact_max=0, caution=False)
        if full is None:
            assert ci.estimate is None and ci.low is None
            continue
        if any(a is None for a in left):  # no jackknife: the bootstrap instead
            assert ci.method == "percentile"
            continue
        n = len(raw)
        mean = sum(left) / n  # type: ignore[arg-type]
        se = math.sqrt((n - 1) / n * sum((a - mean) ** 2 for a in left))  # type: ignore[operator]
        assert ci.method == "jackknife"
        assert ci.estimate == pytest.approx(full, abs=1e-12)
        if full == 1:
            assert se == 0 and ci.low == ci.high == 1
            continue
        assert ci.low == pytest.approx(1 - (1 - full) * math.exp(Z95 * se / (1 - full)),
                                       rel=1e-9)
        assert ci.high == pytest.approx(1 - (1 - full) * math.exp(-Z95 * se / (1 - full)),
                                        rel=1e-9)


def test_all_units_identical_se_zero() -> None:
    """Adversarial: every unit the same matrix. Each α₍ᵢ₎ is the same number (n − 2 ratings
    instead of n: α = 1 − 7 · 8 / 32 = −0.75 against −0.8 for all ten), so the SE is 0 and
    the interval is the point, as every bootstrap resample is the same units too."""
    ci = stats.krippendorff_alpha_ci(units(*[("NO", "YES")] * 5), "ordinal", YES_NO,
                                     exact_max=0, caution=False)
    assert ci.method == "jackknife"
    assert ci.estimate == pytest.approx(-0.8, abs=1e-12)
    assert ci.low == ci.high == ci.estimate
    boot = stats.krippendorff_alpha_ci(units(*[("NO", "YES")] * 5), "ordinal", YES_NO,
                                       caution=False)
    assert boot.low == pytest.approx(-0.8) and boot.high == pytest.approx(-0.8)


def test_perfect_agreement_alpha_one_is_the_point() -> None:
    """Adversarial: units that disagree with each other but never within: α = 1, and α of
    every subset that has two values is 1 too — SE 0, the interval the point (never a
    division by 1 − α = 0)."""
    raw = [("NO", "NO"), ("YES", "YES", "YES"), ("NO", "NO"), ("YES", "YES")] * 3
    ci = stats.krippendorff_alpha_ci(units(*raw), "ordinal", YES_NO, exact_max=0,
                                     caution=False)
    assert ci.method == "jackknife"
    assert ci.estimate == ci.low == ci.high == 1.0
    # as the report prints it: no disagreement at all, so marked and widened below 1
    shown = stats.krippendorff_alpha_ci(units(*raw), "ordinal", YES_NO, exact_max=0)
    assert shown.caution and shown.low < 1.0 and shown.high == 1.0  # type: ignore[operator]


def test_one_category_only_alpha_undefined_no_interval() -> None:
    """Adversarial: every rating YES: α undefined, so no interval — never a number."""
    ci = stats.krippendorff_alpha_ci(units(*[("YES", "YES")] * 600), "ordinal", YES_NO,
                                     exact_max=10)
    assert ci.estimate is None and ci.low is None and ci.high is None
    assert ci.method == "jackknife" and ci.resamples == 0


def test_two_units() -> None:
    """Adversarial: two units. (NO, NO) and (YES, YES): without either, one value only, α
    undefined — no jackknife, the bootstrap (exact) instead. (NO, YES) and (NO, NO, YES):
    one unit alone has α = 0 ((m − 1)·D_o = D_e within a unit), so SE 0 — what the formula
    gives at two units, which the reports never meet (their limit is hundreds)."""
    apart = stats.krippendorff_alpha_ci(units(("NO", "NO"), ("YES", "YES")), "ordinal",
                                        YES_NO, exact_max=1, caution=False)
    assert apart.method == "percentile" and apart.resamples == 2000
    assert apart == stats.krippendorff_alpha_ci(units(("NO", "NO"), ("YES", "YES")),
                                                "ordinal", YES_NO, caution=False)
    mixed = stats.krippendorff_alpha_ci(units(("NO", "YES"), ("NO", "NO", "YES")), "ordinal",
                                        YES_NO, exact_max=1, caution=False)
    assert mixed.method == "jackknife"
    assert mixed.low == mixed.high == mixed.estimate


def test_no_unit_draws_above_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """What is computed, not how long: above the limit nothing is drawn."""
    from benchpack.reports.stats import alpha

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("drew resamples above the exact limit")

    monkeypatch.setattr(alpha, "unit_draw_totals", refuse)
    rng = random.Random(3)
    raw = [tuple(rng.choice(LABELS) for _ in range(rng.randint(2, 4))) for _ in range(300)]
    ci = stats.krippendorff_alpha_ci(units(*raw, scale=LABELS), "ordinal", LABELS,
                                     exact_max=299)
    assert ci.method == "jackknife" and ci.low is not None
    with pytest.raises(AssertionError, match="drew"):
        stats.krippendorff_alpha_ci(units(*raw, scale=LABELS), "ordinal", LABELS,
                                    exact_max=300)


def test_the_report_switches_above_its_limit_and_says_so() -> None:
    """`agreement`'s α: the bootstrap up to `ALPHA_EXACT_MAX` sessions (no method label, the
    figures as before), the jackknife above (labelled), `--exact-bootstrap N` raising it."""
    from benchpack.reports.agreement import ALPHA_EXACT_MAX, alpha_of_units, ci_note
    from benchpack.reports.builtin import ReportContext

    rng = random.Random(5)
    raw = [tuple(rng.choice(LABELS) for _ in range(rng.randint(1, 4)))
           for _ in range(ALPHA_EXACT_MAX + 1)]
    flat = units(*raw, scale=LABELS)
    ctx = ReportContext(con=None, runs=[])
    above = alpha_of_units(flat, LABELS, ctx)
    at = alpha_of_units(flat[:ALPHA_EXACT_MAX], LABELS, ctx)
    assert above.method == "jackknife" and at.method is None
    boot = stats.krippendorff_alpha_ci(flat[:ALPHA_EXACT_MAX], "ordinal", LABELS)
    assert (at.value, at.low, at.high) == (boot.estimate, boot.low, boot.high)
    raised = ReportContext(con=None, runs=[], exact_max=ALPHA_EXACT_MAX + 1)
    assert alpha_of_units(flat, LABELS, raised).method is None
    assert f"α: the bootstrap up to {ALPHA_EXACT_MAX} sessions" in ci_note(ctx)
    assert f"up to {ALPHA_EXACT_MAX + 1} sessions" in ci_note(raised)


def test_row_patterns_are_numpy_unique_rows() -> None:
    """`row_patterns` is `np.unique(axis=0, return_counts=True)`: the same rows in the same
    order (the bootstrap's draws map to patterns in that order) and the same counts."""
    import numpy as np

    from benchpack.reports.stats.kappa import row_patterns

    rng = np.random.default_rng(2)
    for _ in range(200):
        n, width = int(rng.integers(1, 300)), int(rng.choice([1, 4, 9]))
        rows = (rng.integers(0, 3, size=(n, width)) / rng.choice([1, 2, 3], size=(n, 1)))
        got, counts = row_patterns(rows + 0.0)
        want, tally = np.unique(rows + 0.0, axis=0, return_counts=True)
        assert np.array_equal(got, want) and np.array_equal(counts, tally)


def test_ragged_units_are_refused() -> None:
    with pytest.raises(ValueError, match="flattened 2×2"):
        stats.krippendorff_alpha_ci([[0.0, 1.0, 1.0, 0.0], [1.0]], "ordinal", YES_NO)
    with pytest.raises(ValueError, match="flattened 2×2"):
        stats.krippendorff_alpha_ci([[0.0, 1.0, 1.0]] * 3, "ordinal", YES_NO)


def test_the_coverage_simulation_at_a_tiny_scale() -> None:
    """`benchmarks/alpha_coverage.py` cannot rot: its truth is the α its data give on many
    sessions, by hand on the two-label model (P(agree) etc.: with every error label drawn from
    the prevalence, α = q²), and a few replications run through both intervals."""

    import numpy as np

    sim = benchmark_script("alpha_coverage")
    kinds = sim.SCALES["two labels"]["balanced"]
    q = sim.solve_q(kinds, 0.7)
    assert sim.true_alpha(kinds, q) == pytest.approx(0.7, abs=1e-9)
    assert q == pytest.approx(math.sqrt(0.7), abs=1e-9)
    units = sim.sessions_units(np.random.default_rng(0), kinds, q, 20_000, "2-4")
    sample = stats.krippendorff_alpha_ci(units, "ordinal", YES_NO, exact_max=0)
    assert sample.estimate == pytest.approx(0.7, abs=0.01)
    r = sim.coverage("ordinal", "balanced", 0.7, "2", 60, reps=4, resamples=200, seed=1)
    assert r["done"]["bootstrap"] == r["done"]["jackknife"] == 4 and r["fallback"] == 0
