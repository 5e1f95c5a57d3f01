"""When Krippendorff's α's interval cannot be trusted (`stats.alpha_caution`): the counts by
hand at both thresholds, the adversarial cases, the mark in the report's cells and JSON, and
`benchmarks/alpha_trust.py` (the simulation that chose the thresholds) at a tiny scale.

Hand computation (NO / YES, two raters, one item a session): an item where the raters
disagree adds 1 to (NO, YES) and 1 to (YES, NO), so 2 disagreeing pairable values; an item
both rate NO adds 2 to (NO, NO). 4 disagreeing items + 18 NO/NO + 30 YES/YES: 8 disagreeing
values, margins NO 4 + 36 = 40 and YES 4 + 60 = 64, so 40 values off the most common label
(YES): both exactly at their thresholds, no caution. One disagreeing item fewer: 6 (< 8).
One NO/NO item fewer: 38 off the most common label (< 40). Three raters on one item rating
(NO, NO, YES): each ordered pair counts 1/(m − 1) = ½, so (NO, YES) = 2·1·½ = 1, (YES, NO) = 1,
(NO, NO) = 2·1·½ = 1: 2 disagreeing values, 3 pairable values.
"""

from __future__ import annotations

import io
import json
import math

import pytest

from benchpack.reports import stats
from benchpack.reports.model import Column, Estimate
from benchpack.reports.render import UNTRUSTED, cell_text
from conftest import alpha_units, benchmark_script

YES_NO = ("NO", "YES")


units = alpha_units


def sample(disagree: int, no_no: int, yes_yes: int = 30) -> list[list[float]]:
    return units(*[("NO", "YES")] * disagree, *[("NO", "NO")] * no_no,
                 *[("YES", "YES")] * yes_yes)


def total(rows: list[list[float]]) -> list[list[float]]:
    cells = [sum(col) for col in zip(*rows, strict=True)]
    return [cells[:2], cells[2:]]


def test_counts_by_hand_at_both_thresholds() -> None:
    assert stats.ALPHA_MIN_DISAGREEING == 8 and stats.ALPHA_MIN_OFF_MODE == 40
    assert stats.alpha_counts(total(sample(4, 18))) == (8.0, 40.0)
    assert stats.alpha_caution(total(sample(4, 18))) is None
    assert stats.alpha_counts(total(sample(3, 18))) == (6.0, 39.0)
    why = stats.alpha_caution(total(sample(3, 19)))  # 6 disagreeing, 3 + 38 = 41 off
    assert why == ("6 disagreeing pairable values (fewer than 8): too few for the interval "
                   "to be trusted")
    why = stats.alpha_caution(total(sample(4, 17)))
    assert why == ("38 pairable values off the most common label (fewer than 40): too few "
                   "for the interval to be trusted")
    assert stats.alpha_counts(total(units(("NO", "NO", "YES")))) == (2.0, 1.0)


def test_the_interval_carries_the_caution_on_both_methods() -> None:
    """Silent: the very interval of `caution=False`. Fired: the same estimate and method, an
    interval that holds the resampled one, and the reason."""
    for exact_max in (None, 0):
        def ci(rows: list[list[float]], caution: bool = True,
               exact_max: int | None = exact_max) -> stats.BootstrapCI:
            return stats.krippendorff_alpha_ci(rows, "ordinal", YES_NO, resamples=200,
                                               exact_max=exact_max, caution=caution)

        fine = ci(sample(4, 18))
        assert fine.low is not None and fine.caution is None
        assert fine == ci(sample(4, 18), caution=False)
        marked, raw = ci(sample(4, 17)), ci(sample(4, 17), caution=False)
        assert marked.caution is not None and "38 pairable values" in marked.caution
        assert raw.caution is None and marked.estimate == raw.estimate
        assert marked.method == raw.method == ("jackknife" if exact_max == 0 else "percentile")
        assert marked.low <= raw.low and marked.high >= raw.high  # type: ignore[operator]


def test_alpha_one_with_a_rare_label_is_marked_and_widened() -> None:
    """No disagreement at all: α = 1 and every resample that has α has 1, so the resampled
    interval is the point — the case that covered 28 % in the simulation. 2 NO/NO + 50 YES/YES:
    n = 104, NO 4, YES 100, no disagreement of 52 pairs: Clopper–Pearson's upper bound is
    1 − 0.025^(1/52); one unit of disagreement rate moves α by (n − 1)·n / (2·4·100) (two
    labels: δ̄² cancels), so the low end is 1 − 103·104/800 · (1 − 0.025^(1/52)) ≈ 0.0830."""
    low = 1 - 103 * 104 / 800 * (1 - 0.025 ** (1 / 52))
    assert low == pytest.approx(0.0830, abs=1e-4)
    for exact_max in (None, 0):
        raw = stats.krippendorff_alpha_ci(sample(0, 2, 50), "ordinal", YES_NO, resamples=200,
                                          exact_max=exact_max, caution=False)
        assert raw.estimate == raw.low == raw.high == 1.0 and raw.caution is None
        ci = stats.krippendorff_alpha_ci(sample(0, 2, 50), "ordinal", YES_NO, resamples=200,
                                         exact_max=exact_max)
        assert ci.estimate == 1.0 and ci.high == 1.0
        assert ci.low == pytest.approx(low, abs=1e-12)
        assert ci.caution is not None and ci.caution.startswith("0 disagreeing")
        assert ci.caution.endswith("widened to the interval of the disagreement count")


def test_resampled_keeps_the_interval_and_the_mark() -> None:
    """`--alpha-ci resampled` (ProactBench's released analysis): the very interval of
    `caution=False`, still marked, and the report's context carries the choice to α."""
    from benchpack.reports.agreement import alpha_of_units
    from benchpack.reports.builtin import ReportContext

    for exact_max in (None, 0):
        raw = stats.krippendorff_alpha_ci(sample(4, 17), "ordinal", YES_NO, resamples=200,
                                          exact_max=exact_max, caution=False)
        kept = stats.krippendorff_alpha_ci(sample(4, 17), "ordinal", YES_NO, resamples=200,
                                           exact_max=exact_max, widen=False)
        assert (kept.estimate, kept.low, kept.high) == (raw.estimate, raw.low, raw.high)
        assert kept.caution is not None and kept.caution.endswith("not widened")
    ctx = ReportContext(None, [], resamples=200)
    widened = alpha_of_units(sample(0, 2, 50), YES_NO, ctx)
    ctx.alpha_ci = "resampled"
    resampled = alpha_of_units(sample(0, 2, 50), YES_NO, ctx)
    assert widened.low == pytest.approx(1 - 103 * 104 / 800 * (1 - 0.025 ** (1 / 52)))
    assert resampled.low == resampled.high == 1.0
    assert widened.caution and resampled.caution and resampled.caution != widened.caution


def test_count_interval_by_hand() -> None:
    """3 NO/YES + 19 NO/NO + 30 YES/YES: n = 104, NO 41, YES 63, 6 disagreeing values (3 of
    52 pairs); α̂ = 1 − 103·6/(2·41·63). Its Clopper–Pearson bounds solve the binomial tails
    P(X ≥ 3 | p_low) = P(X ≤ 3 | p_high) = 0.025 over 52, and α = 1 − p·103·104/(2·41·63)."""
    rows = sample(3, 19)
    matrix = total(rows)
    counted = stats.alpha_count_interval(matrix, lambda c, d: 0.0 if c == d else 1.0, 0.95)
    assert counted is not None
    low, high = counted
    scale = 103 * 104 / (2 * 41 * 63)
    p_high, p_low = (1 - low) / scale, (1 - high) / scale

    def tail(p: float, ks: range) -> float:
        return sum(math.comb(52, k) * p ** k * (1 - p) ** (52 - k) for k in ks)

    assert tail(p_low, range(3, 53)) == pytest.approx(0.025, abs=1e-9)
    assert tail(p_high, range(0, 4)) == pytest.approx(0.025, abs=1e-9)
    estimate = 1 - 103 * 6 / (2 * 41 * 63)
    assert low < estimate < high
    ci = stats.krippendorff_alpha_ci(rows, "ordinal", YES_NO, resamples=200)
    raw = stats.krippendorff_alpha_ci(rows, "ordinal", YES_NO, resamples=200, caution=False)
    assert ci.estimate == raw.estimate == pytest.approx(estimate)
    assert (ci.low, ci.high) == (min(raw.low, low), max(raw.high, high))  # type: ignore[type-var]


def test_count_interval_takes_at_least_a_chance_disagreement() -> None:
    """Three labels at the interval level (δ² = (c − d)²), margins 2 / 1 / 3 (n = 6), the
    only disagreements between labels 1 and 2 (δ² 1, 2 values: 1 of 3 pairs). E = Σ n_c n_d δ²
    = 2·(2·1·1 + 2·3·4 + 1·3·1) = 58; a chance disagreement's mean δ² is E / Σ n_c n_d = 58/22,
    more than the observed 1: it is the one used, so one unit of disagreement rate moves α by
    5·6·(58/22)/58. Level 0.5 checks that the level is used. One label only: E = 0, None."""
    matrix = [[2.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 2.0]]  # 6 values, 1 + 1 + 4
    assert [sum(r) for r in matrix] == [2.0, 1.0, 3.0]
    delta = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]  # interval δ² (c − d)², not the ordinal one

    def delta2(c: int, d: int) -> float:
        return float(delta[c][d] ** 2)

    expected = 2 * (2 * 1 * 1 + 2 * 3 * 4 + 1 * 3 * 1)
    chance = expected / (2 * (2 * 1 + 2 * 3 + 1 * 3))  # 58 / 22 > the observed δ² of 1
    counted = stats.alpha_count_interval(matrix, delta2, 0.5)
    assert counted is not None
    low, high = counted
    cp_low, cp_high = stats.clopper_pearson(1, 3, 0.5)  # 2 disagreeing of 6: 1 of 3 pairs
    assert low == pytest.approx(1 - cp_high * 5 * 6 * chance / expected, abs=1e-12)
    assert high == pytest.approx(1 - cp_low * 5 * 6 * chance / expected, abs=1e-12)
    assert stats.alpha_count_interval([[6.0, 0.0], [0.0, 0.0]], delta2, 0.95) is None


def test_count_interval_stops_at_minus_one() -> None:
    """Adversarial: 1 NO/NO item among 40 YES/YES, no disagreement: n = 82, NO 2, YES 80,
    one unit of disagreement rate moves α by 81·82/(2·2·80) ≈ 20.8, and Clopper–Pearson's
    upper bound over 41 pairs is 1 − 0.025^(1/41) ≈ 0.086, so the low end would be ≈ −0.79;
    at level 0.999 (upper bound 1 − 0.0005^(1/41) ≈ 0.169) it would be ≈ −2.5: no α of a
    population lies below −1, so the low end stops there (the ratio level aside)."""
    matrix = total(sample(0, 1, 40))
    def nominal(c: int, d: int) -> float:
        return 0.0 if c == d else 1.0

    scale = 81 * 82 / (2 * 2 * 80)
    low, _ = stats.alpha_count_interval(matrix, nominal, 0.95) or (None, None)
    assert low == pytest.approx(1 - scale * (1 - 0.025 ** (1 / 41)), abs=1e-12)
    assert stats.alpha_count_interval(matrix, nominal, 0.999) == (-1.0, 1.0)
    unclipped = stats.alpha_count_interval(matrix, nominal, 0.999, floor=None)
    assert unclipped is not None
    assert unclipped[0] == pytest.approx(1 - scale * (1 - 0.0005 ** (1 / 41)), abs=1e-12)
    assert unclipped[0] < -2


def test_one_label_and_one_session_have_no_interval_to_mark() -> None:
    one_label = stats.krippendorff_alpha_ci(units(*[("YES", "YES")] * 30), "ordinal", YES_NO,
                                            resamples=200)
    assert one_label.estimate is None and one_label.low is None and one_label.caution is None
    single = stats.krippendorff_alpha_ci(units(("NO", "YES")), "ordinal", YES_NO)
    assert single.low is None and single.caution is None


def test_two_sessions_are_marked() -> None:
    ci = stats.krippendorff_alpha_ci(units(("NO", "YES"), ("YES", "YES")), "ordinal", YES_NO,
                                     resamples=200)
    assert ci.estimate == pytest.approx(0.0)  # 1 − 3 · 2 / (2 · 1 · 3)
    assert ci.low is not None and ci.caution is not None
    assert "2 disagreeing" in ci.caution and "1 pairable values off" in ci.caution


def test_ordinal_three_labels_counts_every_off_diagonal_cell() -> None:
    scale = ("FAIL", "PARTIAL", "PASS")
    rows = units(("FAIL", "PASS"), ("PARTIAL", "PASS"), ("PASS", "PASS"), scale=scale)
    cells = [sum(col) for col in zip(*rows, strict=True)]
    matrix = [cells[0:3], cells[3:6], cells[6:9]]
    # 4 disagreeing values; margins FAIL 1, PARTIAL 1, PASS 4: 2 off the most common label
    assert stats.alpha_counts(matrix) == (4.0, 2.0)


def test_the_mark_in_text_and_json() -> None:
    column = Column("alpha", "α ordinal", "float")
    plain = Estimate(0.9, None, 0.8, 1.0, 50)
    marked = Estimate(0.9, None, 0.8, 1.0, 50, caution="why")
    assert cell_text(plain, column) == "0.90 [0.80, 1.00]"
    assert cell_text(marked, column) == f"0.90 [0.80, 1.00]{UNTRUSTED}"
    assert "caution" not in plain.as_dict()  # every other figure's JSON is as it was
    assert marked.as_dict()["caution"] == "why"
    # no interval shown, no mark
    assert cell_text(Estimate(0.9, None, None, None, 1, caution="why"), column) == "0.90"


@pytest.fixture(scope="module")
def trust():  # type: ignore[no-untyped-def]
    return benchmark_script("alpha_trust")


def test_the_simulation_at_a_tiny_scale(trust) -> None:  # type: ignore[no-untyped-def]
    """`benchmarks/alpha_trust.py` cannot rot: its rule is the library's (each replication's
    `caution` against the counts it dumped), and a design that fails today is flagged: two
    labels, 97 % YES, α 0.95, 2 raters, 50 sessions (it covered 28 % in 1,000 replications)."""
    out = io.StringIO()
    design = 22  # the grid's index of that design (scale, prevalence, α, raters)
    trust.simulate(6, 200, 0, out, only=design, sessions_of=(50, 1000))
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(records) == 12
    assert {(r["scale"], r["prevalence"], r["alpha"], r["raters"]) for r in records} == {
        ("two labels", "97% YES", 0.95, "2")}
    for r in records:
        assert trust.fires(r, stats.ALPHA_MIN_DISAGREEING, stats.ALPHA_MIN_OFF_MODE) == (
            r["caution"] is not None) or r["low"] is None
    small = [r for r in records if r["sessions"] == 50 and r["low"] is not None]
    assert small and all(r["caution"] is not None for r in small)
    lines, rates = trust.table(records)
    assert len(lines) == rates["designs"] == 2
    assert 0.0 <= rates["fires_on_fine"] <= 1.0 and 0.0 <= rates["silent_on_poor"] <= 1.0
