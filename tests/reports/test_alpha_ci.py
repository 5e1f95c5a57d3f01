"""Issue 15 item 4: Krippendorff's α with a seeded percentile bootstrap CI over units
(`stats.krippendorff_alpha_ci`), the method of ProactBench's released analysis (resample the
items with replacement, recompute α, drop undefined resamples, 2.5 / 97.5 percentiles).

Hand computation (FAIL / PARTIAL / PASS, PARTIAL unused): U1 = (F, P), U2 = (F, F),
U3 = (P, P). Pooled: n_F = n_P = 3, n = 6, o_FP = o_PF = 1 (U1 adds 1·1/(2 − 1)), δ²(F, P) =
(3 + 0 + 3 − 3)² = 9, so α = 1 − 5 · 2·9 / (2 · 3·3·9) = 1 − 10/18 = 4/9. Resamples are 3 units
drawn from 3: {U1, U1, U1} (probability 1/27) has only disagreement: α = 1 − 5 · 2·3·9 / (2·9·9)
= −2/3, the smallest value any resample takes; {U2, U2, U3} and {U2, U3, U3} (3/27 each) have
none and both values: α = 1, the largest. Both extremes are drawn more often than 2.5 % of the
time, so the 95 % interval is exactly [−2/3, 1] (for the seeds below: the draws are counted).
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from benchpack.reports import stats

LABELS = ("FAIL", "PARTIAL", "PASS")


def units(*raw: tuple[str, ...]) -> list[list[float]]:
    """Flattened coincidence matrices, one a unit, as `krippendorff_alpha` counts them."""
    out = []
    index = {c: i for i, c in enumerate(LABELS)}
    for vals in raw:
        cells = [0.0] * 9
        m = len(vals)
        for i, a in enumerate(vals):
            for j, b in enumerate(vals):
                if i != j and m >= 2:
                    cells[index[a] * 3 + index[b]] += 1 / (m - 1)
        out.append(cells)
    return out


U3 = units(("FAIL", "PASS"), ("FAIL", "FAIL"), ("PASS", "PASS"))


@pytest.mark.parametrize("seed", [0, 1, 2026])
def test_hand_computed_alpha_and_its_interval(seed: int) -> None:
    ci = stats.krippendorff_alpha_ci(U3, "ordinal", LABELS, seed=seed, resamples=2000)
    assert ci.estimate == pytest.approx(4 / 9, abs=1e-12)
    assert ci.low == pytest.approx(-2 / 3, abs=1e-12)
    assert ci.high == pytest.approx(1.0, abs=1e-12)
    assert ci.n_units == 3 and ci.resamples == 2000 and ci.seed == seed
    # {U2,U2,U2}, {U3,U3,U3}: one value only, α undefined (2/27 of the resamples)
    assert 0 < ci.undefined < 2000 * 4 / 27


def test_estimate_equals_alpha_of_the_ratings() -> None:
    raw = [("PASS", "PASS", "PARTIAL"), ("FAIL", "PASS"), ("PARTIAL", "PARTIAL"),
           ("PASS", "FAIL", "PARTIAL", "PASS"), ("FAIL",)]
    ci = stats.krippendorff_alpha_ci(units(*raw), "ordinal", LABELS)
    assert ci.estimate == pytest.approx(
        stats.krippendorff_alpha([list(u) for u in raw], "ordinal", categories=list(LABELS)),
        abs=1e-12)
    assert ci.n_units == 5  # the unpairable unit is a unit of the resampling, as released
    assert ci.low is not None and ci.high is not None
    assert ci.low <= ci.estimate <= ci.high


def test_deterministic_for_a_seed_and_seed_dependent() -> None:
    rng = random.Random(7)
    raw = [tuple(rng.choice(LABELS) for _ in range(rng.randint(1, 4))) for _ in range(40)]
    a = stats.krippendorff_alpha_ci(units(*raw), "ordinal", LABELS, seed=3)
    b = stats.krippendorff_alpha_ci(units(*raw), "ordinal", LABELS, seed=3)
    c = stats.krippendorff_alpha_ci(units(*raw), "ordinal", LABELS, seed=4)
    assert (a.low, a.high) == (b.low, b.high)
    assert (a.low, a.high) != (c.low, c.high)


def test_matches_a_brute_force_bootstrap_in_distribution() -> None:
    """Differential: the percentiles of α recomputed from the ratings of resampled units (the
    released script's way, with another RNG) agree with ours to Monte-Carlo precision."""
    rng = random.Random(11)
    raw = [tuple(rng.choice(LABELS[:2] if i % 3 else LABELS) for _ in range(rng.randint(1, 4)))
           for i in range(30)]
    ours = stats.krippendorff_alpha_ci(units(*raw), "ordinal", LABELS, resamples=4000,
                                       caution=False)  # the resampling itself
    draw = random.Random(5)
    values = []
    for _ in range(4000):
        pick = [list(raw[draw.randrange(len(raw))]) for _ in raw]
        a = stats.krippendorff_alpha(pick, "ordinal", categories=list(LABELS))
        if a is not None:
            values.append(a)
    values.sort()
    lo = values[int(0.025 * (len(values) - 1))]
    hi = values[int(0.975 * (len(values) - 1))]
    assert ours.low == pytest.approx(lo, abs=0.04) and ours.high == pytest.approx(hi, abs=0.04)


def test_all_raters_agree_alpha_undefined_and_no_interval() -> None:
    """Adversarial: every rater says PASS everywhere ('Done.'-style raters): no variation, so
    α is undefined — never 1, never 0 — and so is every resample."""
    ci = stats.krippendorff_alpha_ci(units(*[("PASS", "PASS")] * 10), "ordinal", LABELS)
    assert ci.estimate is None and ci.low is None and ci.high is None
    assert ci.undefined == ci.resamples


@pytest.mark.parametrize("raw", [[], [("FAIL", "PASS")], [("FAIL",), ("PASS",)]])
def test_too_few_units_gives_no_interval(raw: list[tuple[str, ...]]) -> None:
    ci = stats.krippendorff_alpha_ci(units(*raw), "ordinal", LABELS)
    assert ci.low is None and ci.high is None


def test_many_distinct_units_take_the_general_path() -> None:
    """More distinct unit patterns than the count-based resampler holds (254): the same
    estimate, a sane interval, deterministic."""
    rng = random.Random(1)
    raw = [tuple(rng.choice(LABELS) for _ in range(rng.randint(2, 30))) for _ in range(600)]
    flat = units(*raw)
    assert len({tuple(u) for u in flat}) > 254
    ci = stats.krippendorff_alpha_ci(flat, "ordinal", LABELS, resamples=300)
    assert ci.estimate == pytest.approx(stats.krippendorff_alpha(
        [list(u) for u in raw], "ordinal", categories=list(LABELS)), abs=1e-12)
    assert ci.low is not None and ci.high is not None and ci.low <= ci.estimate <= ci.high
    assert ci == stats.krippendorff_alpha_ci(flat, "ordinal", LABELS, resamples=300)


def test_exhaustive_extremes_are_reachable() -> None:
    """The hand computation's extremes are the smallest and largest α over every multiset of
    three of U1–U3 (so no resample can fall outside [−2/3, 1])."""
    values = []
    for pick in itertools.combinations_with_replacement(range(3), 3):
        cells = [math.fsum(U3[i][j] for i in pick) for j in range(9)]
        a = stats.krippendorff_alpha_coincidence([cells[0:3], cells[3:6], cells[6:9]],
                                                 "ordinal", LABELS)
        if a is not None:
            values.append(a)
    assert min(values) == pytest.approx(-2 / 3) and max(values) == pytest.approx(1.0)


def test_general_path_resamples_are_the_units_drawn() -> None:
    """Past 254 patterns, each resample's α is that of the drawn units' summed matrices (the
    pattern weights are the draws of each pattern's units)."""
    from benchpack.reports.stats.alpha import krippendorff_alpha_coincidence
    from benchpack.reports.stats.resampling import quantile, unit_draw_counts

    rng = random.Random(2)
    raw = [tuple(rng.choice(LABELS) for _ in range(rng.randint(2, 30))) for _ in range(400)]
    flat = units(*raw)
    assert len({tuple(u) for u in flat}) > 254
    ci = stats.krippendorff_alpha_ci(flat, "ordinal", LABELS, resamples=200, seed=5)
    # the function orders units by pattern before drawing
    ordered = sorted(tuple(float(x) for x in u) for u in flat)
    draws = []
    for block in unit_draw_counts(len(ordered), 200, 5):
        for row in block.tolist():
            cells = [sum(c * u[j] for c, u in zip(row, ordered, strict=True)) for j in range(9)]
            draws.append(krippendorff_alpha_coincidence(
                [cells[0:3], cells[3:6], cells[6:9]], "ordinal", LABELS))
    defined = sorted(d for d in draws if d is not None)
    assert ci.low == pytest.approx(quantile(defined, 0.025), abs=1e-9)
    assert ci.high == pytest.approx(quantile(defined, 0.975), abs=1e-9)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_of_every_resample_at_once_is_alpha_row_by_row(level: str) -> None:
    import numpy as np

    from benchpack.reports.stats.alpha import _alpha_rows, krippendorff_alpha_coincidence

    rng = random.Random(4)
    cats: tuple[object, ...] = (0, 1, 2) if level == "interval" else LABELS
    rows = [[rng.choice([0.0, 0.5, 1.0, 2.0, 3.5]) for _ in range(9)] for _ in range(200)]
    rows += [[0.0] * 9, [4.0, 0, 0, 0, 0, 0, 0, 0, 0]]  # nothing to pair; one value only
    got = _alpha_rows(np.array(rows), level, cats)  # type: ignore[arg-type]
    want = [krippendorff_alpha_coincidence([r[0:3], r[3:6], r[6:9]], level,  # type: ignore[arg-type]
                                           cats) for r in rows]
    assert [g is None for g in got] == [w is None for w in want]
    assert got[-2:] == [None, None]
    assert all(g == pytest.approx(w, abs=1e-12) for g, w in zip(got, want, strict=True)
               if w is not None)
