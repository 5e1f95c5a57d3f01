"""Headline uncertainty: clustered standard errors (Miller 2024, "Adding Error Bars to Evals"),
intervals that keep their coverage at small n (Clopper–Pearson for proportions, widened by the
design effect of clusters; Student t for other means), and the flip rate of repeated tasks.

Why not the percentile bootstrap for headline figures: simulated 1,000 times at nominal 95 %,
it covers a pass rate of 0.95 over 10 sessions about 40 % of the time (most resamples are all
passes, a zero-width interval) and skewed scores at n = 10 about 85 %
(`benchmarks/ci_coverage.py`). Clopper–Pearson never covers less than nominal for independent
items; Wilson, the usual alternative, covers 91 % at p = 0.95, n = 10, so it is not used.

Stdlib only: the regularized incomplete beta function (a continued fraction) gives both the
beta quantiles of Clopper–Pearson and Student t's quantiles.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

TOO_FEW_CLUSTERS = 10
"""Below this many independent units (clusters) a figure is flagged `few`: any interval is then
mostly width — Clopper–Pearson over 9 items is at least 0.3 wide, a t interval's standard error
rests on < 10 deviations, and a design effect estimated from < 10 clusters is itself noise."""

ProportionMethod = Literal["clopper-pearson", "wilson"]

PROPORTION_METHOD: ProportionMethod = "clopper-pearson"
"""What the reports use for proportions (named in their notes)."""


# --------------------------------------------------------------------------- special functions


def _beta_cf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes
    §6.4), converging fast for x < (a + 1) / (a + b + 2)."""
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
                    -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) for a, b > 0, 0 ≤ x ≤ 1."""
    if a <= 0 or b <= 0:
        raise ValueError(f"betainc needs a, b > 0, got a={a}, b={b}")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_cf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_cf(b, a, 1.0 - x) / b


def beta_ppf(q: float, a: float, b: float) -> float:
    """The q-quantile of Beta(a, b): I_x(a, b) = q by Newton's method on the CDF (its
    derivative is the beta density), started at the normal approximation and kept inside a
    bracket that halves whenever a step would leave it — as robust as bisection, and a few
    steps instead of fifty (a report computes hundreds of these)."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q}")
    if q in (0.0, 1.0):
        return q
    lo, hi = 0.0, 1.0
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1.0))
    x = mean + statistics.NormalDist().inv_cdf(q) * math.sqrt(var)
    x = min(max(x, 1e-300), 1.0 - 1e-16)
    log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    for _ in range(200):
        f = betainc(a, b, x) - q
        if f < 0:
            lo = x
        else:
            hi = x
        if f == 0 or hi - lo <= 4e-16 * max(x, 1e-300):
            break
        log_pdf = (a - 1.0) * math.log(x) + (b - 1.0) * math.log1p(-x) - log_beta
        # where the density under- or overflows a Newton step means nothing: halve instead
        step = f / math.exp(log_pdf) if -700.0 < log_pdf < 700.0 else None
        nxt = x - step if step else (lo + hi) / 2.0
        if not lo < nxt < hi:
            nxt = (lo + hi) / 2.0
        if abs(nxt - x) <= 1e-15 * max(x, 1e-300):
            x = nxt
            break
        x = nxt
    return x


def t_ppf(p: float, df: float) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom: P(|T| > t) =
    I_{df/(df+t²)}(df/2, 1/2)."""
    if df <= 0:
        raise ValueError(f"df must be positive, got {df}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if p == 0.5:
        return 0.0
    x = beta_ppf(2.0 * min(p, 1.0 - p), df / 2.0, 0.5)
    t = math.sqrt(df * (1.0 - x) / x) if x > 0 else math.inf
    return t if p > 0.5 else -t


# --------------------------------------------------------------------------- proportions


def _check_proportion(successes: float, n: float, level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"need n > 0 and 0 <= successes <= n, got {successes} of {n}")


def clopper_pearson(successes: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper–Pearson 1934) interval of a binomial proportion: the beta quantiles
    B(α/2; x, n − x + 1) and B(1 − α/2; x + 1, n − x), 0 and 1 at the edges. Counts may be
    fractional (an effective sample size after a design effect)."""
    _check_proportion(successes, n, level)
    alpha = 1.0 - level
    low = 0.0 if successes <= 0 else beta_ppf(alpha / 2.0, successes, n - successes + 1.0)
    high = 1.0 if successes >= n else beta_ppf(1.0 - alpha / 2.0, successes + 1.0,
                                                 n - successes)
    return low, high


def wilson(successes: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """The Wilson (1927) score interval of a binomial proportion."""
    _check_proportion(successes, n, level)
    z = statistics.NormalDist().inv_cdf((1.0 + level) / 2.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


# --------------------------------------------------------------------------- clustered SE


def clustered_se(clusters: Sequence[Sequence[float]]) -> float | None:
    """Miller (2024), eq. 4: the cluster-robust standard error of the mean of all observations,
    SE² = SE²_CLT + (1/n²) Σ_c Σ_i Σ_{j≠i} (s_ic − s̄)(s_jc − s̄), with SE²_CLT = Σ (s − s̄)² / n²
    (population variance over n), i.e. Σ_c (Σ_i (s_ic − s̄))² / n² — the CR0 sandwich. One
    observation per cluster gives the ordinary σ/√n. ``None`` without observations."""
    obs = [float(x) for c in clusters for x in c]
    n = len(obs)
    if not n:
        return None
    mean = math.fsum(obs) / n
    clt = math.fsum((x - mean) ** 2 for x in obs) / n ** 2
    cross = math.fsum(
        (xi - mean) * (xj - mean)
        for c in clusters for i, xi in enumerate(c) for j, xj in enumerate(c) if i != j) / n ** 2
    return math.sqrt(max(clt + cross, 0.0))


@dataclass(frozen=True, slots=True)
class Uncertainty:
    """A headline figure with its uncertainty."""

    estimate: float | None
    se: float | None
    """Clustered standard error (Miller 2024, CR0), ``None`` without data."""
    low: float | None
    high: float | None
    n: int
    """Observations (e.g. session runs, triggers, graded repeats)."""
    clusters: int
    """Independent units the SE and the interval rest on."""
    level: float
    method: str
    """``"clopper-pearson"`` / ``"wilson"`` (a proportion; with a design effect when it is
    above 1), ``"t"`` (estimate ± t_{G−1}·√(G/(G−1))·SE), or ``"none"`` (no interval: fewer
    than 2 clusters for a mean)."""
    design_effect: float | None = None
    """Proportions: SE² clustered / SE² of independent items (floored at 1)."""

    @property
    def few(self) -> bool:
        """Fewer than `TOO_FEW_CLUSTERS` clusters: the interval is mostly width."""
        return self.clusters < TOO_FEW_CLUSTERS


def headline_interval(
    totals: Iterable[tuple[float, float]],
    *,
    binary: bool,
    macro: bool = True,
    level: float = 0.95,
    bounds: tuple[float, float] | None = (0.0, 1.0),
    method: ProportionMethod = PROPORTION_METHOD,
) -> Uncertainty:
    """Estimate, clustered SE and interval from one ``(sum, count)`` per cluster (its
    observations' sum and number; a cluster with count 0 is dropped).

    ``macro``: the estimate is the mean of the clusters' means (each cluster weighs the same,
    as the reports average sessions), else the pooled Σ sum / Σ count (e.g. triggers). The SE
    is Miller's clustered SE of that estimate: Σ_c (w_c (m_c − x̄))² / (Σ w)² with weight w_c =
    1 (macro) or count_c (pooled) — for the pooled mean exactly :func:`clustered_se`.

    ``binary`` (every observation 0 or 1): the exact interval of a proportion, over the
    effective sample size n / deff, with the design effect deff = SE² / (p(1 − p)/n) floored
    at 1 (clusters never make an interval narrower than independent items would). Floored, an interval is not invariant to
    repeating every cluster's observations: repeats raise the design effect by their number,
    lifting it above a floor the single copy was held at. Otherwise
    x̄ ± t_{G−1}·√(G/(G−1))·SE (the small-sample factor and Student t with G − 1 degrees of
    freedom, so that two clusters are not treated as many), clipped to ``bounds``."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    units = [(float(s), float(c)) for s, c in totals if c]
    n_obs = round(math.fsum(c for _, c in units))
    g = len(units)
    if not g:
        return Uncertainty(None, None, None, None, 0, 0, level, "none")
    if macro:
        means = [s / c for s, c in units]
        est = math.fsum(means) / g
        se = math.sqrt(math.fsum((m - est) ** 2 for m in means)) / g
    else:
        total = math.fsum(c for _, c in units)
        est = math.fsum(s for s, _ in units) / total
        se = math.sqrt(math.fsum((s - est * c) ** 2 for s, c in units)) / total
    if binary:
        p = min(max(est, 0.0), 1.0)
        iid = p * (1.0 - p) / n_obs
        deff = se * se / iid if iid > 0 else 1.0
        # rounding must not widen independent items' interval by 1 ulp of a design effect
        deff = 1.0 if deff < 1.0 + 1e-9 else deff
        n_eff = n_obs / deff
        interval = clopper_pearson if method == "clopper-pearson" else wilson
        low, high = interval(p * n_eff, n_eff, level)
        return Uncertainty(est, se, low, high, n_obs, g, level, method, deff)
    if g < 2:
        return Uncertainty(est, se, None, None, n_obs, g, level, "none")
    half = t_ppf((1.0 + level) / 2.0, g - 1) * math.sqrt(g / (g - 1)) * se
    low, high = est - half, est + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return Uncertainty(est, se, low, high, n_obs, g, level, "t")


def interval_note(level: float, unit: str) -> str:
    """What the reports say about their intervals (one sentence per table)."""
    return (f"(SE …; n N in G) = clustered standard error (Miller 2024, CR0) of the figure's N "
            f"observations in G {unit}; [ ] = {level:.0%} "
            f"CI: proportions (pass/fail figures) exact Clopper–Pearson over n / design effect, "
            f"other means estimate ± t(G−1)·√(G/(G−1))·SE over G {unit}, clipped to 0–100; "
            f"† = fewer than {TOO_FEW_CLUSTERS} {unit}: too few for any interval to mean much")


# --------------------------------------------------------------------------- repeats


@dataclass(frozen=True, slots=True)
class FlipRate:
    """Tasks whose outcome changes across repeats."""

    flips: int
    """Tasks with both a pass and a fail among their graded repeats."""
    tasks: int
    """Tasks with at least 2 graded repeats (a task run once cannot flip)."""
    rate: float | None


def flip_rate(counts: Iterable[tuple[int, int]]) -> FlipRate:
    """Share of tasks with ``0 < c < n`` among the ``(n, c)`` tasks with ``n >= 2`` repeats."""
    multi = [(n, c) for n, c in counts if n >= 2]
    if any(not 0 <= c <= n for n, c in multi):
        raise ValueError("need 0 <= c <= n for every task")
    flips = sum(1 for n, c in multi if 0 < c < n)
    return FlipRate(flips, len(multi), flips / len(multi) if multi else None)
