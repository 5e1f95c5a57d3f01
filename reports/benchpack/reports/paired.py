"""Statistics of paired comparisons (`bench compare`): paired differences with a clustered
standard error, the cluster sign-flip test (exact), McNemar's exact test and a paired cluster
bootstrap (kept for reference: neither respects clusters at small G), Holm and
Benjamini–Hochberg adjustment, and the minimum detectable effect.

Why the sign-flip test: simulated A/A comparisons (nothing differs) of agents deterministic per
task rejected at α = 0.05 23.9 % of the time with McNemar over repeat-matched pairs (one
discordant task counted once per repeat) and 13.8 % with the paired cluster bootstrap over 6
clusters (8.7 % over 12); the sign-flip test over clusters is exact at every G
(`benchmarks/stat_sim.py`, reports/README.md).

Pure Python (stdlib only; scipy/statsmodels are not dependencies), deterministic for a seed.
Undefined figures (too few clusters, no variation) come back as `None`, never NaN.

Conventions: a difference is B − A (the compared run minus the baseline). A *unit* is what is
paired (a session, its repeats averaged; a trigger); a *cluster* is the independent unit the
protocol defines (episode / scenario / task): units of one cluster share a persona, a memory or
a dialogue, so their differences are correlated and the standard error must not treat them as
independent (Miller 2024, "Adding Error Bars to Evals", §2.2).
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction

MIN_CLUSTERS_TEST = 6
"""Fewest clusters `bench compare` gives a p for. Below it the exact sign-flip test cannot
reach p < 0.05 (its smallest two-sided p is 2/2^G ≥ 0.0625 at G ≤ 5): a p there could only
ever say "not significant", which reads as "no difference" to many; the table says why
instead."""

POWER = 0.80
ALPHA = 0.05


# --------------------------------------------------------------------------- distributions


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 3e-16:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Student's t distribution function with `df` degrees of freedom."""
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(q: float, df: float) -> float:
    """The q-quantile of Student's t (bisection on `t_cdf`, to 1e-12)."""
    if not 0.0 < q < 1.0:
        raise ValueError("q must be in (0, 1)")
    if q < 0.5:
        return -t_quantile(1.0 - q, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < q:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < q:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


# --------------------------------------------------------------------------- tests


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p: the binomial test of b successes in b + c discordant pairs
    at ½ (b: A passed and B failed; c: A failed and B passed). No discordant pair → 1. What
    `sign_flip` gives when every cluster is one pair (the tests check it)."""
    if b < 0 or c < 0:
        raise ValueError("counts must be non-negative")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    # exact integer arithmetic: the tail is a sum of binomial coefficients over 2^n
    tail = term = 1
    for i in range(k):  # C(n, i + 1) from C(n, i): exact, without k big binomials afresh
        term = term * (n - i) // (i + 1)
        tail += term
    return min(1.0, float(Fraction(2 * tail, 2 ** n)))  # exact even past 2^1023


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment (family-wise error); None entries are left out of the
    family and stay None."""
    idx = sorted((i for i, p in enumerate(pvalues) if p is not None),
                 key=lambda i: (pvalues[i], i))
    m = len(idx)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(idx):
        p = pvalues[i]
        assert p is not None
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def benjamini_hochberg(pvalues: Sequence[float | None]) -> list[float | None]:
    """Benjamini–Hochberg step-up adjustment (false discovery rate); None entries stay None."""
    idx = sorted((i for i, p in enumerate(pvalues) if p is not None),
                 key=lambda i: (pvalues[i], i))
    m = len(idx)
    out: list[float | None] = [None] * len(pvalues)
    running = 1.0
    for rank in range(m - 1, -1, -1):
        i = idx[rank]
        p = pvalues[i]
        assert p is not None
        running = min(running, m * p / (rank + 1))
        out[i] = min(1.0, running)
    return out


CORRECTIONS = {"holm": holm, "bh": benjamini_hochberg}


# --------------------------------------------------------------------------- differences


@dataclass(frozen=True)
class PairedDiff:
    n: int
    """Paired units."""
    clusters: int
    mean_a: float | None
    mean_b: float | None
    delta: float | None
    """Mean over paired units of B − A."""
    sd: float | None
    """Sample SD (ddof 1) of the unit differences."""
    se: float | None
    """Clustered (CR1) standard error of `delta`; None with fewer than two clusters."""
    low: float | None
    high: float | None
    """delta ± t(level, clusters − 1) · se."""
    df: int | None


def _cluster_sums(pairs: Sequence[tuple[Hashable, float, float]]
                  ) -> list[tuple[float, int]]:
    sums: dict[Hashable, list[float]] = {}
    for cluster, a, b in pairs:
        s = sums.setdefault(cluster, [0.0, 0])
        s[0] += b - a
        s[1] += 1
    return [(s[0], int(s[1])) for s in sums.values()]


def clustered_se(pairs: Sequence[tuple[Hashable, float, float]]) -> float | None:
    """CR1 clustered SE of the mean difference: √(G/(G−1) · Σ_g (S_g − n_g·d̄)²) / N, S_g the
    sum of a cluster's differences. With one unit a cluster this is the textbook paired SE,
    sd(d)/√n; with fewer than two clusters it is undefined (None)."""
    sums = _cluster_sums(pairs)
    g, n = len(sums), sum(k for _, k in sums)
    if g < 2:
        return None
    dbar = sum(s for s, _ in sums) / n
    ss = sum((s - k * dbar) ** 2 for s, k in sums)
    return math.sqrt(g / (g - 1) * ss) / n


def paired_difference(pairs: Sequence[tuple[Hashable, float, float]], level: float = 0.95
                      ) -> PairedDiff:
    """`pairs` = (cluster, value in A, value in B), one per paired unit."""
    n = len(pairs)
    if not n:
        return PairedDiff(0, 0, None, None, None, None, None, None, None, None)
    diffs = [b - a for _, a, b in pairs]
    delta = math.fsum(diffs) / n
    sd = (math.sqrt(math.fsum((d - delta) ** 2 for d in diffs) / (n - 1)) if n > 1 else None)
    clusters = len({c for c, _, _ in pairs})
    se = clustered_se(pairs)
    low = high = df = None
    if se is not None:
        df = clusters - 1
        half = t_quantile(0.5 + level / 2.0, df) * se
        low, high = delta - half, delta + half
    return PairedDiff(n, clusters, math.fsum(a for _, a, _ in pairs) / n,
                      math.fsum(b for _, _, b in pairs) / n, delta, sd, se, low, high, df)


def cluster_bootstrap_p(pairs: Sequence[tuple[Hashable, float, float]], *,
                        resamples: int = 2000, seed: int = 0,
                        min_clusters: int = MIN_CLUSTERS_TEST) -> float | None:
    """Two-sided p of H0 "no difference" by the paired cluster bootstrap: clusters of unit
    differences are resampled with replacement (seeded) and the mean difference recomputed.
    Not used by `bench compare` any more: it rejected 12.7 % of A/A comparisons over 6
    clusters (`sign_flip` is exact);
    p = (1 + #{|Δ* − Δ̂| ≥ |Δ̂|}) / (1 + R), the bootstrap distribution shifted to the null.
    Identical runs give p = 1; otherwise None below `min_clusters` clusters
    (see MIN_CLUSTERS_TEST)."""
    sums = sorted(_cluster_sums(pairs), key=lambda t: (t[1], t[0]))
    g = len(sums)
    if not g:
        return None
    n = sum(k for _, k in sums)
    delta = sum(s for s, _ in sums) / n
    if all(b == a for _, a, b in pairs):
        return 1.0  # no difference at all: no evidence against H0, whatever the clusters
    if g < max(2, min_clusters):
        return None
    # the draws of `random.Random(seed).randrange(g)`, without its per-call argument checks
    # (half the time of a comparison on a large store): rejection sampling of getrandbits,
    # exactly as randrange does it, so seeded p-values stay those printed before
    getrandbits, bits = random.Random(seed).getrandbits, g.bit_length()
    totals, counts = [s for s, _ in sums], [k for _, k in sums]
    # a tolerance, so that equal differences summed in another order still count as ≥
    eps = 1e-12 * max(1.0, abs(delta))
    extreme = 0
    for _ in range(resamples):
        tot, cnt = 0.0, 0
        for _ in range(g):
            i = getrandbits(bits)
            while i >= g:
                i = getrandbits(bits)
            tot += totals[i]
            cnt += counts[i]
        if abs(tot / cnt - delta) >= abs(delta) - eps:
            extreme += 1
    return (1 + extreme) / (1 + resamples)


EXACT_WORK = 100_000
"""Partial sums `sign_flip_p` may visit to enumerate the flip distribution exactly (about
0.05 s). Pass/fail differences lie on a lattice (repeats' means are multiples of 1/repeats), so
their distribution stays small: exact up to a few hundred clusters. Continuous scores double
it with every cluster: exact up to about 15. Past the budget, `resamples` random flips
(seeded): a p of (1 + b)/(1 + R) is still a valid p-value (Phipson & Smyth 2010), its error
under H0 at most α."""


@dataclass(frozen=True)
class SignFlip:
    p: float | None
    method: str
    """`exact` (every sign pattern counted), `random` (`resamples` random patterns), `equal`
    (no cluster differs: p = 1), `too few` (fewer clusters than the test needs: no p)."""
    differing: int
    """Clusters whose differences do not sum to 0: the test rests on these (the smallest
    p it can give is 2/2^differing)."""


def sign_flip_p(pairs: Sequence[tuple[Hashable, float, float]], *, resamples: int = 2000,
                seed: int = 0, min_clusters: int = MIN_CLUSTERS_TEST) -> float | None:
    """The p-value of `sign_flip`."""
    return sign_flip(pairs, resamples=resamples, seed=seed, min_clusters=min_clusters).p


def sign_flip(pairs: Sequence[tuple[Hashable, float, float]], *, resamples: int = 2000,
              seed: int = 0, min_clusters: int = MIN_CLUSTERS_TEST) -> SignFlip:
    """Two-sided p of H0 "within each cluster the two runs are exchangeable" by the cluster
    sign-flip (randomisation) test: under H0 each cluster's summed difference S_g is as likely
    to be −S_g, so T = |Σ S_g| (N·|Δ|) is compared with its distribution over the 2^G sign
    patterns. Exact for any G (no asymptotics: that is what kept the bootstrap at 12.7 % false
    positives over 6 clusters); clusters whose differences sum to 0 add nothing and drop out.
    With one unit of one repeat a cluster, pass/fail differences are ±1 or 0 and this is
    McNemar's exact test (b, c = the +1s and −1s). Identical runs give p = 1; otherwise None
    below `min_clusters` clusters (see MIN_CLUSTERS_TEST)."""
    sums = [s for s, _ in _cluster_sums(pairs)]
    if not sums:
        return SignFlip(None, "too few", 0)
    if all(b == a for _, a, b in pairs):
        return SignFlip(1.0, "equal", 0)
    scale = max(abs(x) for x in sums)
    differing = sum(1 for x in sums if abs(x) > scale * 1e-9)
    if len(sums) < max(2, min_clusters):
        return SignFlip(None, "too few", differing)
    if scale == 0.0:
        return SignFlip(1.0, "equal", 0)
    # integer keys on a grid far finer than any real difference, so that equal sums reached in
    # another order are one key; `slack` grid steps absorb the rounding of G terms
    quantum = scale * 1e-9
    steps = sorted(round(abs(x) / quantum) for x in sums if round(abs(x) / quantum))
    observed = abs(round(math.fsum(sums) / quantum))
    slack = len(steps) + 1
    dist: dict[int, int] = {0: 1}
    work = 0
    for i, k in enumerate(steps):
        work += 2 * len(dist)
        # what is left costs at least as much as this step again per step: stop early
        if work + 2 * len(dist) * (len(steps) - i - 1) > EXACT_WORK:
            return SignFlip(_sign_flip_mc(sums, observed * quantum, slack * quantum, resamples,
                                          seed), "random", differing)
        nxt: dict[int, int] = {}
        for t, c in dist.items():
            nxt[t + k] = nxt.get(t + k, 0) + c
            nxt[t - k] = nxt.get(t - k, 0) + c
        dist = nxt
    extreme = sum(c for t, c in dist.items() if abs(t) >= observed - slack)
    return SignFlip(min(1.0, float(Fraction(extreme, 2 ** len(steps)))), "exact", differing)


def _sign_flip_mc(sums: list[float], observed: float, slack: float, resamples: int, seed: int
                  ) -> float:
    """`resamples` random sign patterns; Σ ε_g S_g = 2·Σ_{ε_g = +1} S_g − Σ S_g."""
    getrandbits = random.Random(seed).getrandbits
    g, total = len(sums), math.fsum(sums)
    extreme = 0
    for _ in range(resamples):
        signs = format(getrandbits(g), "b").zfill(g)  # one pass over the bits, not G shifts
        plus = sum(x for x, sign in zip(sums, signs, strict=True) if sign == "1")
        extreme += abs(2.0 * plus - total) >= observed - slack
    return (1 + extreme) / (1 + resamples)


def mde(se: float | None, df: int | None, *, alpha: float = ALPHA, power: float = POWER
        ) -> float | None:
    """Minimum detectable effect of a two-sided test at `alpha` with `power`:
    (t(1 − α/2, df) + t(power, df)) · SE — the true difference the comparison would detect
    80 % of the time, given the observed paired spread and number of clusters. None when the
    SE is undefined or 0 (no variation: nothing to scale)."""
    if se is None or df is None or se <= 0:
        return None
    return (t_quantile(1 - alpha / 2, df) + t_quantile(power, df)) * se
