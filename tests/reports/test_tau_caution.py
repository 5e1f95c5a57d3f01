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


def test_the_spread_and_the_mark_by_hand() -> None:
    """`tau_spread`: under A the agents' figures 0, 0.5, 1 (spacing 0.5) move by 0.1 on
    average, 0.2 of their spacing; under B 0, 0.25, 0.5 (spacing 0.25) by 0.2 — 0.8, the larger.
    `tau_caution` marks from 9 agents and a spread of 0.7."""
    assert stats.TAU_WIDE_AGENTS == 9 and stats.TAU_MAX_SPREAD == 0.7
    got = stats.tau_spread([0.05, 0.1, 0.15], [0.0, 0.5, 1.0], [0.1, 0.2, 0.3], [0.5, 0.0, 0.25])
    assert got == pytest.approx(0.8, abs=1e-15)
    assert stats.tau_spread([0.1, 0.1], [0.0, 1.0], [0.1, 0.1], [0.3, 0.3]) == float("inf")
    assert stats.tau_caution(8, 5.0) is None
    assert stats.tau_caution(9, 0.6999) is None
    why = stats.tau_caution(9, 0.7)
    assert why is not None and why.startswith("9 agents whose figures move")
    assert "by 0.70 of their mean spacing" in why and "not to be trusted" in why


def _noisy(agents: int) -> tuple[dict[str, dict[str, tuple[float, float]]],
                                 dict[str, dict[str, tuple[float, float]]]]:
    """`agents` agents, 4 units of one item: agent k scores 0.2 + 0.02·k, plus 0.2 on half its
    units (which half alternates with k, and differs between the judges): figures 0.02 apart,
    each moved by ~0.05 over resamples of 4 units — a spread of ~2.5 spacings."""
    a = {f"g{k}": {f"u{u}": (0.2 + 0.02 * k + 0.2 * ((u + k) % 2), 1.0) for u in range(4)}
         for k in range(agents)}
    b = {f"g{k}": {f"u{u}": (0.2 + 0.02 * k + 0.2 * ((u // 2 + k) % 2), 1.0) for u in range(4)}
         for k in range(agents)}
    return a, b


def _spread_by_hand(a: dict[str, dict[str, tuple[float, float]]],
                    b: dict[str, dict[str, tuple[float, float]]], resamples: int,
                    seed: int) -> float:
    """Each agent's figure on every resample, one draw at a time in Python (one item a unit:
    a figure is the mean over the drawn units), its population SD, then `tau_spread`."""
    agents, units = sorted(a), sorted(next(iter(a.values())))
    draws = [row for block in unit_draw_counts(len(units), resamples, seed)
             for row in block.tolist()]
    sds, figs = [], []
    for judge in (a, b):
        for g in agents:
            on = [sum(c * judge[g][u][0] for c, u in zip(row, units, strict=True)) / len(units)
                  for row in draws]
            mean = sum(on) / len(on)
            sds.append((sum((x - mean) ** 2 for x in on) / len(on)) ** 0.5)
            figs.append(sum(judge[g][u][0] for u in units) / len(units))
    k = len(agents)
    return stats.tau_spread(sds[:k], figs[:k], sds[k:], figs[k:])


def test_through_kendall_tau_ci_nine_agents_marked() -> None:
    a, b = _noisy(9)
    spread = _spread_by_hand(a, b, 300, 2)
    assert spread > 2
    raw = validity.kendall_tau_ci(a, b, resamples=300, seed=2, caution=False)
    ci = validity.kendall_tau_ci(a, b, resamples=300, seed=2)
    assert ci.untrusted == stats.tau_caution(9, spread) and f"by {spread:.2f} of" in ci.untrusted
    # the interval itself is the raised one, as without the mark
    high, why = stats.tau_upper(raw.low, raw.high, raw.bias, 9)  # type: ignore[arg-type]
    assert (ci.low, ci.high) == (raw.low, high)
    assert ci.caution == "; ".join(w for w in (why, ci.untrusted) if w)
    assert raw.untrusted is None and raw.caution is None


def test_eight_agents_are_not_marked() -> None:
    """The same data with 8 agents: below `TAU_WIDE_AGENTS`, the interval and its reason are
    `tau_upper`'s alone, as before."""
    a, b = _noisy(8)
    raw = validity.kendall_tau_ci(a, b, resamples=300, seed=2, caution=False)
    ci = validity.kendall_tau_ci(a, b, resamples=300, seed=2)
    high, why = stats.tau_upper(raw.low, raw.high, raw.bias, 8)  # type: ignore[arg-type]
    assert ci.untrusted is None and (ci.high, ci.caution) == (high, why)


def test_the_map_at_a_tiny_scale(coverage) -> None:  # type: ignore[no-untyped-def]
    """`--map`: 12 agents at 50 sessions and τ 1 (the report's interval covered 77 % of 1,000
    replications, every one marked) and 9 at 200 (99.9 %, none marked)."""
    wide, narrow = coverage.Design(12, 50), coverage.Design(9, 200)
    assert wide in coverage.MAP and narrow in coverage.MAP
    got = coverage.coverage(wide, 12, 200, 3)
    assert got.done == 12 and got.marked == 1.0 and got.held_kept is None
    got = coverage.coverage(narrow, 12, 200, 3)
    assert got.marked == 0.0 and got.held_kept == got.held_raised
    assert coverage.coverage(coverage.Design(8, 50), 5, 100, 3).marked == 0.0
