"""Headline uncertainty: clustered standard errors (Miller 2024, "Adding Error Bars to Evals"),
intervals that keep their coverage at small n (Clopper–Pearson for proportions, widened by the
design effect of clusters, over the number of clusters at 0 % and 100 %; Student t for other
means, with a quarter cluster at each bound), and the flip rate of repeated tasks. The clusters
are episodes (`cluster.CLUSTER`); `benchmarks/stat_sim.py` measures every interval's coverage
with a known truth (≥ 93.7 % in every design it runs, where a pass rate at 100 % over 10
identical repeats of 10 tasks covered 38.5 % and per-session clusters 83.0 %).

Why not the percentile bootstrap for headline figures: simulated 1,000 times at nominal 95 %,
it covers a pass rate of 0.95 over 10 sessions about 40 % of the time (most resamples are all
passes, a zero-width interval) and skewed scores at n = 10 about 85 %
(`benchmarks/ci_coverage.py`). Clopper–Pearson never covers less than nominal for independent
items; Wilson, the usual alternative, covers 91 % at p = 0.95, n = 10, so it is not used.

Stdlib only: the regularized incomplete beta function (a continued fraction) gives both the
beta quantiles of Clopper–Pearson and Student t's quantiles.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..cluster import CLUSTER_NOTE

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


@functools.lru_cache(maxsize=4096)
def t_ppf(p: float, df: float) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom: P(|T| > t) =
    I_{df/(df+t²)}(df/2, 1/2). Kept per (p, df): a report asks it for every figure of every
    run, mostly at a few levels and session counts (33 calls, 0.017 s of the 1 M-turn
    summary), and the answer is a pure function of its arguments."""
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
    """Clustered standard error (Miller 2024, CR0), ``None`` without data or from one
    cluster (whose spread says nothing about how clusters vary)."""
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
    """Proportions: SE² clustered (CR1) / SE² of independent items, floored at 1; n / G at
    0 % and 100 %."""

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
    clusters: Iterable[Hashable] | None = None,
) -> Uncertainty:
    """Estimate, clustered SE and interval from one ``(sum, count)`` per unit (its
    observations' sum and number; a unit with count 0 is dropped). ``clusters``: each unit's
    cluster, in the same order (units of one cluster are not independent: an episode's
    sessions); None: every unit is its own cluster.

    ``macro``: the estimate is the mean of the units' means (each unit weighs the same, as the
    reports average sessions), else the pooled Σ sum / Σ count (e.g. triggers). The SE is
    Miller's clustered SE of that estimate, the CR0 sandwich over clusters: Σ_g (Σ_{u∈g} w_u
    (m_u − x̄))² / (Σ w)² with weight w_u = 1 (macro) or count_u (pooled) — for the pooled mean
    of one-unit clusters exactly :func:`clustered_se`.

    ``binary`` (every observation 0 or 1): the exact interval of a proportion over the
    effective sample size n / deff, with the design effect deff = SE² · G/(G − 1) / (p(1 −
    p)/n) floored at 1 (clusters never make an interval narrower than independent items
    would; one observation a cluster is independent items, deff 1). At 0 % and 100 % the
    design effect cannot be estimated (every observation is alike, SE = 0): the effective n is
    then the number of clusters, as if every cluster's observations were one (12 tasks passing
    on 10 identical repeats are 12 passes, not 120: that interval covered 38.5 % of true
    rates of 0.95). Floored, an interval is not invariant to repeating every cluster's
    observations: repeats raise the design effect by their number, lifting it above a floor
    the single copy was held at.

    Other means: x̄ ± t_{G−1}·√(G/(G−1))·SE (the small-sample factor and Student t with G − 1
    degrees of freedom, so that two clusters are not treated as many), with ``bounds`` a
    pseudo-observation of a quarter cluster at each bound in x̄ and SE (`BOUND_WEIGHT`),
    clipped to ``bounds``. One cluster says nothing about how clusters vary: no interval
    (``method="none"``)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    pairs = [(float(s), float(c)) for s, c in totals]
    keys: list[Hashable] = list(range(len(pairs))) if clusters is None else list(clusters)
    if len(keys) != len(pairs):
        raise ValueError(f"{len(pairs)} units but {len(keys)} cluster keys")
    if not all(c for _, c in pairs):
        keys = [k for (_, c), k in zip(pairs, keys, strict=True) if c]
        pairs = [(s, c) for s, c in pairs if c]
    n_obs = round(math.fsum(c for _, c in pairs))
    if not pairs:
        return Uncertainty(None, None, None, None, 0, 0, level, "none")
    # each unit's value and weight (1: macro, its count: pooled), the units grouped into
    # their clusters once for both means below
    values = [s / c for s, c in pairs]
    weights = None if macro else [c for _, c in pairs]
    groups = _Groups(keys)
    est, se, g = groups.mean(values, weights)
    if g < 2:  # one cluster: its spread is no SE (printing SE 0 would claim certainty)
        return Uncertainty(est, None, None, None, n_obs, g, level, "none")
    if binary:
        p = min(max(est, 0.0), 1.0)
        iid = p * (1.0 - p) / n_obs
        if n_obs == g:  # one observation a cluster: independent items, no effect to estimate
            deff = 1.0
        elif iid > 0:
            # the small-sample factor G/(G − 1) (CR1), as the t intervals have it: without it
            # 6 clusters of 3 independent repeats covered 91.9 % (`benchmarks/stat_sim.py`)
            deff = se * se * g / (g - 1) / iid
            # rounding must not widen independent items' interval by 1 ulp of a design effect
            deff = 1.0 if deff < 1.0 + 1e-9 else deff
        else:  # every observation alike: how alike a cluster's are cannot be estimated
            deff = n_obs / g
        n_eff = n_obs / deff
        interval = clopper_pearson if method == "clopper-pearson" else wilson
        low, high = interval(p * n_eff, n_eff, level)
        return Uncertainty(est, se, low, high, n_obs, g, level, method, deff)
    centre, spread = est, se
    if bounds is not None:
        # a quarter of an average cluster at each bound (the bounded-score analogue of
        # Agresti–Coull's added successes and failures): scores near a bound whose rare far
        # values the sample has not shown (a task that usually scores 0.99 and sometimes 0)
        # otherwise get a t interval that covers 75–85 % (`benchmarks/stat_sim.py`)
        pseudo = BOUND_WEIGHT * (len(values) if weights is None else math.fsum(weights)) / g
        centre, spread, _ = groups.mean(values, weights, (bounds, pseudo))
    half = t_ppf((1.0 + level) / 2.0, g - 1) * math.sqrt(g / (g - 1)) * spread
    low, high = centre - half, centre + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return Uncertainty(est, se, low, high, n_obs, g, level, "t")


BOUND_WEIGHT = 0.25
"""The weight, in average clusters, of the pseudo-observation the t interval of a bounded
score adds at each bound. Measured (`benchmarks/stat_sim.py`, and capped-exponential scores):
coverage of a mean score near 1 from 75–85 % to ≥ 95 % at 6–30 clusters; mid-range scores'
intervals widen by under 5 % from 0.2 of spread up, more where every score is nearly equal."""


class _Groups:
    """Units grouped into their clusters (`headline_interval`), for the clustered mean of
    their values: most clusters hold one unit (99,167 units in 87,743 episodes on the 1 M-turn
    store), whose deviation is its own sum (fsum of one float is that float), so only the
    others are listed and summed."""

    def __init__(self, keys: Sequence[Hashable]) -> None:
        first: dict[Hashable, int] = {}
        more: dict[int, list[int]] = {}
        for i, k in enumerate(keys):
            j = first.setdefault(k, i)
            if j != i:
                more.setdefault(j, [j]).append(i)
        self.clusters = len(first)
        self.single = [i for i in first.values() if i not in more] if more else None
        self.more = list(more.values())

    def mean(self, values: list[float], weights: list[float] | None,
             bounds: tuple[tuple[float, float], float] | None = None
             ) -> tuple[float, float, int]:
        """(weighted mean, CR0 clustered SE, clusters) of the units' `values` (`weights` None:
        each weighs 1), with `bounds` = ((low, high), w) a unit of weight w at each bound, each
        its own cluster: the SE is √Σ_g (Σ_{u∈g} w_u (m_u − x̄))² / Σ w (Miller 2024, eq. 4,
        with weights). Every sum is an fsum, correctly rounded, so it is the same float
        whatever the order of its terms."""
        if weights is None:  # w = 1: w·m and w·(m − x̄) are m and m − x̄ exactly
            products, ws = values, None
        else:
            products, ws = [m * w for m, w in zip(values, weights, strict=True)], weights
        extra: list[tuple[float, float]] = []
        if bounds is not None:
            (low, high), w = bounds
            extra = [(low, w), (high, w)]
        # n weights of 1 sum to n exactly (n < 2**53): fsum, exact, gives the same float
        total = math.fsum([*(ws if ws is not None else [float(len(values))]),
                           *(w for _, w in extra)])
        est = math.fsum([*products, *(m * w for m, w in extra)]) / total
        if ws is None:
            dev = [m - est for m in values]
        else:
            dev = [w * (m - est) for m, w in zip(values, ws, strict=True)]
        squares = ([d ** 2 for d in dev] if self.single is None
                   else [dev[i] ** 2 for i in self.single])
        squares += [math.fsum([dev[i] for i in g]) ** 2 for g in self.more]
        squares += [(w * (m - est)) ** 2 for m, w in extra]
        se = math.sqrt(math.fsum(squares)) / total
        return est, se, self.clusters + len(extra)


def interval_note(level: float, unit: str = "sessions") -> str:
    """What the reports say about their intervals (one sentence per table); `unit` is what the
    figure averages (sessions, tasks, triggers)."""
    return (f"(SE …; n N in G episodes) = clustered standard error (Miller 2024, CR0) of the "
            f"figure's N observations (it averages {unit}) in G episodes; [ ] = {level:.0%} "
            f"CI: proportions (pass/fail figures) exact Clopper–Pearson over n / design effect "
            f"(at 0 % and 100 %, over the number of episodes), other means estimate ± "
            f"t(G−1)·√(G/(G−1))·SE, clipped to 0–100; none from one episode; "
            f"† = fewer than {TOO_FEW_CLUSTERS} episodes: too few for any interval to mean "
            f"much; {CLUSTER_NOTE}")


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
