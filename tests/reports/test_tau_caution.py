"""Kendall τ's raised upper end (`stats.tau_upper`): the rule by hand at its edges, through
`validity.kendall_tau_ci` on a bootstrap whose resamples can be counted by hand, and
`benchmarks/tau_coverage.py` (the simulation that chose it) at a tiny scale.

Hand computation (6 agents: C(6, 2) = 15 pairs, one discordant pair moves τ-b by 2/15, so
1 − 2/15 = 13/15 is the last value below 1). Upper end 11/15 with the resamples 0.02 below
the sample's τ on average: 11/15 + 0.04 = 0.7733, short of 13/15, so raised only. With 0.07:
11/15 + 0.14 = 0.8733 ≥ 13/15: taken as 1. Upper end 13/15 and no bias: taken as 1.
"""

from __future__ import annotations

import pytest

from benchpack.reports import stats, validity
from benchpack.reports.stats.resampling import unit_draw_counts
from conftest import benchmark_script


def test_the_rule_by_hand() -> None:
    assert stats.TAU_MIN_AGENTS == 4
    high, why = stats.tau_upper(0.6, 11 / 15, -0.02, 6)
    assert high == pytest.approx(11 / 15 + 0.04, abs=1e-15)
    assert why is not None and "0.02 below" in why and "taken as 1" not in why
    high, why = stats.tau_upper(0.6, 11 / 15, -0.07, 6)
    assert high == 1.0
    assert why is not None and "0.07 below" in why and "C(6, 2)) of 1: taken as 1" in why
    assert why.startswith("the percentile interval's upper end 0.733 is biased low")
    high, why = stats.tau_upper(0.6, 13 / 15, 0.0, 6)
    assert high == 1.0 and why is not None and "below" not in why
    # τ-b computes 13/15 as 13/√(15·15); either float is within one pair of 1
    assert stats.tau_upper(0.6, 13 / 225 ** 0.5, 0.0, 6)[0] == 1.0
    assert stats.tau_upper(0.6, 1 - 2 / 15, 0.0, 6)[0] == 1.0
    # 4 agents: 6 pairs, within one pair of 1 is 2/3 and above
    assert stats.tau_upper(0.0, 2 / 3, 0.0, 4) == (1.0, stats.tau_upper(0.0, 2 / 3, 0.0, 4)[1])
    assert stats.tau_upper(0.0, 1 / 3, 0.0, 4) == (1 / 3, None)


def test_where_the_rule_leaves_the_interval() -> None:
    # short of 13/15 with no bias; a positive bias is not a reason to raise
    assert stats.tau_upper(0.5, 13 / 15 - 1e-6, 0.0, 6) == (13 / 15 - 1e-6, None)
    assert stats.tau_upper(0.6, 11 / 15, 0.05, 6) == (11 / 15, None)
    # already 1; a point interval (the resamples agree to the level); 3 agents
    assert stats.tau_upper(0.6, 1.0, -0.1, 6) == (1.0, None)
    assert stats.tau_upper(13 / 15, 13 / 15, -0.01, 6) == (13 / 15, None)
    assert stats.tau_upper(-1 / 3, 1 / 3, -0.1, 3) == (1 / 3, None)


def _three_units() -> tuple[dict[str, dict[str, tuple[float, float]]],
                            dict[str, dict[str, tuple[float, float]]]]:
    """6 agents, 3 units of one item. Judge A ranks them 0 < 1 < … < 5 on every unit; judge B
    swaps agents 2 and 3 on every unit, and 4 and 5 on unit u2 only (5 vs 4 there, 4 vs 5
    elsewhere). Agent 4 under B averages 4 + c/3 and agent 5 5 − c/3 over a draw of 3 units
    with c copies of u2, so they are discordant iff c ≥ 2: τ* is 11/15 then, 13/15 otherwise
    (probability 7/27 and 20/27), and over the sample (c = 1) τ̂ = 13/15."""
    order_b = {"u0": [0, 1, 3, 2, 4, 5], "u1": [0, 1, 3, 2, 4, 5], "u2": [0, 1, 3, 2, 5, 4]}
    a = {f"g{k}": {u: (float(k), 1.0) for u in order_b} for k in range(6)}
    b = {f"g{k}": {u: (float(order_b[u][k]), 1.0) for u in order_b} for k in range(6)}
    return a, b


def test_through_kendall_tau_ci_by_hand() -> None:
    a, b = _three_units()
    raw = validity.kendall_tau_ci(a, b, resamples=400, seed=5, caution=False)
    ci = validity.kendall_tau_ci(a, b, resamples=400, seed=5)
    assert raw.tau == ci.tau == pytest.approx(13 / 15)
    assert (raw.low, raw.high) == (pytest.approx(11 / 15), pytest.approx(13 / 15))
    assert raw.caution is None
    # the resamples with two or three copies of u2 (units in sorted order: u2 is column 2)
    drawn = [row[2] >= 2 for block in unit_draw_counts(3, 400, 5) for row in block.tolist()]
    share = sum(drawn) / len(drawn)
    assert 0.2 < share < 0.32  # about 7/27
    assert raw.bias == ci.bias == pytest.approx(-2 / 15 * share, abs=1e-12)
    # 13/15 + 2·(2/15)·share is past 13/15: raised, then taken as 1
    assert (ci.low, ci.high) == (raw.low, 1.0)
    assert ci.caution is not None and "taken as 1" in ci.caution
    assert f"{2 / 15 * share:.3g} below" in ci.caution
    together = validity.kendall_tau_cis([(a, b), (a, a)], resamples=400, seed=5)
    assert together[0] == ci
    assert together[1].tau == together[1].low == together[1].high == 1.0
    assert together[1].caution is None and together[1].bias == 0.0


def test_three_agents_are_left_as_they_were() -> None:
    """The rank-stability test's 3 agents (`test_judge_validity`): nothing changes."""
    a, b = _three_units()
    three_a = {g: a[g] for g in ("g2", "g3", "g4")}
    three_b = {g: b[g] for g in ("g2", "g3", "g4")}
    raw = validity.kendall_tau_ci(three_a, three_b, resamples=300, seed=1, caution=False)
    ci = validity.kendall_tau_ci(three_a, three_b, resamples=300, seed=1)
    assert ci == raw and ci.caution is None and ci.tau == pytest.approx(1 / 3)


@pytest.fixture(scope="module")
def coverage():  # type: ignore[no-untyped-def]
    return benchmark_script("tau_coverage")


def test_the_simulation_at_a_tiny_scale(coverage) -> None:  # type: ignore[no-untyped-def]
    """`benchmarks/tau_coverage.py` cannot rot: its report column is the library's rule, and
    the design that fails today is flagged — 8 agents, 50 sessions, true τ 1 (the percentile
    interval covered 12 % of 1,000 replications, raised 94 %)."""
    design = coverage.Design(8, 50)
    assert design in coverage.DESIGNS
    got = coverage.coverage(design, 30, 200, 3)
    assert got.truth == 1.0 and got.done == 30
    assert got.held < 0.5 and got.held_raised > 0.8
    assert got.width_raised > got.width and 0 < got.raised <= 1
    swapped = coverage.Design(6, 50, swaps=(2,))
    pa, pb = swapped.rates()
    assert validity.kendall_tau_b(pa, pb) == pytest.approx(13 / 15)
    assert pb[2] == pytest.approx(pa[3]) and pb[3] == pytest.approx(pa[2])
    # `--agree`: B copies A's verdicts with that probability, its own draws keeping B's rate
    # — impossible where B's rates are ±0.08 from A's at 0.3 with 0.8 copied (0.3 − 0.4 < 0)
    assert coverage.coverage(design, 10, 100, 3, agree=0.8).done == 10
    with pytest.raises(ValueError, match="cannot be kept"):
        coverage.coverage(coverage.Design(4, 50, 0.08), 1, 100, 0, agree=0.8)
