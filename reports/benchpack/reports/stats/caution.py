"""When Krippendorff's α's interval cannot be trusted: too few disagreements, or too few
ratings off the most common label, for resampling the units to see how α varies.

α's bootstrap and jackknife intervals resample units; α rests on the pairable values that
disagree and on those of the rarer labels. When a sample holds a handful of them, most
resamples hold the same handful or none, and the interval is far too narrow (an α of 1 with a
rare label is the point [1, 1]). Simulated with a known α (`benchmarks/alpha_trust.py`, the
designs of `alpha_coverage.py`, 1,000 replications each, table in benchmarks/README.md): with
97 % PASS and α 0.95 the report's nominal 95 % interval covered 28-38 % at 50 sessions and
75-85 % at 200. The thresholds below were chosen there: where neither count is below its
threshold the interval covered ≥ 93 % on every design within Monte-Carlo noise; where one is,
the interval is widened to take in the interval of the disagreement count
(`alpha_count_interval`) and marked: widened, every simulated design covered ≥ 93 % within
noise, but the replications where the rule fired are a selection (too few disagreements
for their design) whose coverage is not calibrated.

Kendall τ's percentile interval (rank stability, `validity.kendall_tau_ci`) is biased low
near τ = 1: noise in the agents' figures can only break a concordant ranking, so the sample
τ falls below the true one and the resampled τs fall further below the sample's. Simulated
with a known τ (`benchmarks/tau_coverage.py`, 4-8 agents, true τ 0.67-1, 50 and 200
sessions, 1,000 replications each, table in benchmarks/README.md) it covered as little as
12 % (8 agents, 50 sessions, τ 1) and 85-92 % at τ 0.86-0.90; in an exploration of the same
designs every miss but 2 of 34,000 had the truth above the upper end. `tau_upper` raises
that end and the report marks it; raised, every design covered ≥ 93.9 %."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from .uncertainty import clopper_pearson

ALPHA_MIN_DISAGREEING = 8
"""Disagreeing pairable values (the off-diagonal total of the coincidence matrix: two raters
who disagree on one item add 2) below which α's interval is marked."""
ALPHA_MIN_OFF_MODE = 40
"""Pairable values not of the most common label (the coincidence total minus its largest
margin) below which α's interval is marked."""


def alpha_counts(coincidence: Sequence[Sequence[float]]) -> tuple[float, float]:
    """(disagreeing pairable values, pairable values off the most common label) of a summed
    coincidence matrix (rows and columns one category each, as
    `krippendorff_alpha_coincidence` takes it)."""
    k = len(coincidence)
    margins = [math.fsum(row) for row in coincidence]
    total = math.fsum(margins)
    disagreeing = math.fsum(coincidence[c][d] for c in range(k) for d in range(k) if c != d)
    return disagreeing, total - max(margins, default=0.0)


def alpha_caution(coincidence: Sequence[Sequence[float]]) -> str | None:
    """Why α's interval from this summed coincidence matrix cannot be trusted, or None: fewer
    than `ALPHA_MIN_DISAGREEING` disagreeing pairable values or fewer than
    `ALPHA_MIN_OFF_MODE` pairable values off the most common label."""
    disagreeing, off_mode = alpha_counts(coincidence)
    why = []
    if disagreeing < ALPHA_MIN_DISAGREEING:
        why.append(f"{disagreeing:g} disagreeing pairable values (fewer than "
                   f"{ALPHA_MIN_DISAGREEING})")
    if off_mode < ALPHA_MIN_OFF_MODE:
        why.append(f"{off_mode:g} pairable values off the most common label (fewer than "
                   f"{ALPHA_MIN_OFF_MODE})")
    if not why:
        return None
    return "; ".join(why) + ": too few for the interval to be trusted"


def alpha_count_interval(coincidence: Sequence[Sequence[float]],
                         delta2: Callable[[int, int], float], level: float,
                         floor: float | None = -1.0) -> tuple[float, float] | None:
    """α's interval from the count of disagreements alone, for where `alpha_caution` fires:
    1 − α = (n − 1)·O / E with O = Σ_{c≠d} C_cd δ²_cd and E = Σ_{c≠d} n_c n_d δ²_cd, written
    as (n − 1)·o·δ̄² / E, o the disagreeing pairable values and δ̄² their mean δ² — at least
    that of a chance disagreement, E / Σ_{c≠d} n_c n_d (a handful of disagreements between
    neighbouring labels says little about the distant ones; with none, δ̄² is that). The
    disagreements are taken as a binomial count, o / 2 of n / 2 (two raters: the disagreeing
    items of the items), and its Clopper–Pearson interval at `level` mapped to α. It ignores
    that sessions cluster, so the report takes it together with the resampled interval (their
    union): on the simulated designs where the rule fires, coverage rose to ≥ 93 % on every
    one (benchmarks/README.md). None where E is 0 (α undefined). The low end is at least
    `floor`: −1 by default, below which no population α of the nominal, ordinal or interval
    level lies (their δ² is a squared difference of scores, so D_o ≤ 2·D_e); None for the
    ratio level, whose δ² is not."""
    k = len(coincidence)
    margins = [math.fsum(row) for row in coincidence]
    n = math.fsum(margins)
    pairs = [(c, d) for c in range(k) for d in range(k) if c != d]
    expected = math.fsum(margins[c] * margins[d] * delta2(c, d) for c, d in pairs)
    if expected == 0 or n < 2:
        return None
    disagreeing = math.fsum(coincidence[c][d] for c, d in pairs)
    mean_delta2 = expected / math.fsum(margins[c] * margins[d] for c, d in pairs)
    if disagreeing > 0:
        mean_delta2 = max(mean_delta2, math.fsum(coincidence[c][d] * delta2(c, d)
                                                 for c, d in pairs) / disagreeing)
    low, high = clopper_pearson(min(disagreeing, n) / 2, n / 2, level)
    scale = (n - 1) * n * mean_delta2 / expected  # 1 − α per unit of disagreement rate
    bottom = 1.0 - high * scale
    return (bottom if floor is None else max(floor, bottom)), 1.0 - low * scale


TAU_MIN_AGENTS = 4
"""Agents from which `tau_upper` raises τ's upper end. With 2 or 3 agents one discordant
pair spans the whole range or two thirds of it, and the percentile interval covered 100 % at
3 agents in simulation."""


def tau_upper(low: float, high: float, bias: float, agents: int) -> tuple[float, str | None]:
    """τ's upper end as the report prints it, and why it was raised (None: as it was), from
    the percentile interval [`low`, `high`] and the resamples' bias, `bias` = mean of the
    resampled τs − the sample's τ. With at least `TAU_MIN_AGENTS` agents and an interval that
    is not a point: raised by 2·|bias| where the bias is negative (the percentile interval is
    centred near τ̂ + bias, a bias-corrected τ near τ̂ − bias: 2·|bias| apart), then taken as
    1 when within one discordant pair of it, 2 / C(K, 2) (τ-b of K untied agents takes no
    value between 1 − 2 / C(K, 2) and 1, and at τ = 1 the upper end stopped one such step
    short in most misses). Neither step alone held 93 % on the simulated designs (raised
    only: 85 % at 7-8 agents and τ 1; to 1 only: 80 % there and 86-92 % at τ 0.86-0.90). A
    point interval (the resamples agree on τ to the level) is left as it is: leaving it cost
    no coverage on any design, and taking [13/15, 13/15] to [13/15, 1] would say that every
    resample's discordant pair might be none."""
    if agents < TAU_MIN_AGENTS or high >= 1.0 or low == high:
        return high, None
    why = []
    raised = high
    if bias < 0:
        raised = min(1.0, high - 2.0 * bias)
        why.append(f"the resampled τs average {-bias:.3g} below the sample's: raised by "
                   "twice that")
    step = 2.0 / (agents * (agents - 1) // 2)
    if 1.0 > raised >= 1.0 - step - 1e-9:  # 1e-9: τ-b's floats (13/15 and 1 − 2/15)
        raised = 1.0
        why.append(f"within one discordant pair (2 / C({agents}, 2)) of 1: taken as 1")
    if raised == high:
        return high, None
    return raised, (f"the percentile interval's upper end {high:.3g} is biased low near τ = 1; "
                    + "; ".join(why))


TAU_WIDE_AGENTS = 9
"""Agents from which `tau_caution` looks at the figures' spread: with 4-8 agents the raised
interval covered ≥ 93.9 % on every simulated design (τ 0.6-1, 50-200 sessions), however
noisy the figures; with 9-12 it did not (benchmarks/README.md)."""
TAU_MAX_SPREAD = 0.7
"""`tau_spread` from which `tau_caution` marks τ's interval (with `TAU_WIDE_AGENTS` or more
agents). Chosen on half of the 36 simulated designs of 9-12 agents (50/100/200 sessions, τ
0.61-1; the even-numbered ones: 0.75 let one through at 86 %) and checked on the other
half: where the spread was below it the report's interval covered ≥ 94.5 % there, ≥ 93.0 %
on all 36 (`tau_coverage.py --map`: ≥ 92.1 %, each within its Monte-Carlo margin)."""


def tau_spread(spread_a: Sequence[float], figures_a: Sequence[float],
               spread_b: Sequence[float], figures_b: Sequence[float]) -> float:
    """How far the agents' figures move under resampling against how far apart they are:
    under each judge, the agents' mean standard deviation over the resamples (`spread_*`, one
    per agent) divided by the mean spacing of their figures ((max − min) / (K − 1)); the
    larger of the two judges. Near 1, neighbouring agents change places in most resamples:
    τ's resamples then measure their own noise more than the rankings' agreement. Infinite
    where a judge gives every agent the same figure."""
    out = 0.0
    for spread, figures in ((spread_a, figures_a), (spread_b, figures_b)):
        spacing = (max(figures) - min(figures)) / (len(figures) - 1)
        if spacing <= 0:
            return math.inf
        out = max(out, math.fsum(spread) / len(spread) / spacing)
    return out


def tau_caution(agents: int, spread: float) -> str | None:
    """Why τ's interval cannot be trusted, or None: `TAU_WIDE_AGENTS` or more agents whose
    `tau_spread` is at least `TAU_MAX_SPREAD`. Where it fired in simulation (9-12 agents,
    mostly 50-100 sessions) the report's interval, raised (`tau_upper`), covered 75-100 % by
    design, 89 % of those replications in all; where it did not, ≥ 92.1 %."""
    if agents < TAU_WIDE_AGENTS or spread < TAU_MAX_SPREAD:
        return None
    return (f"{agents} agents whose figures move under resampling by {spread:.2f} of their "
            f"mean spacing ({TAU_MAX_SPREAD:g} or more): in simulation such intervals covered "
            "as little as 75 %, raised; not to be trusted")
