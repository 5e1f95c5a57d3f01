"""Statistics of judge and simulator validity (issue 15, items 4 and 5). Pure Python, seeded.

- `ppi_mean`: prediction-powered inference of a mean (Angelopoulos, Bates, Fannjiang, Jordan
  & Zrnic, "Prediction-powered inference", Science 382, 2023): the judge's labels on every unit
  plus the human labels of a subset give θ̂ = mean(judge on all) + mean(human − judge on the
  labelled), whose second term (the *rectifier*) removes the judge's bias as measured on the
  labelled units. Its CI is the normal interval of the paper, θ̂ ± z·SE.
- `kendall_tau_b`, `kendall_tau_ci` (`kendall_tau_cis`: several at once): rank agreement of
  the agents under two judges, with a seeded percentile bootstrap over the units both judges
  scored, its upper end raised where the resamples are biased low (`stats.tau_upper`).
- `leaks` (from `benchpack.specs.text`): whether a user message gives away a hidden text
  near-verbatim (Chinese too), on the tokenisation the compiler's leak lints use.

Undefined figures come back as `None`, never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from benchpack.specs.text import LEAK_MIN_TOKENS, LEAK_SHARE, VERBATIM_MIN, leaks

PPI_CITATION = ("prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, "
                "\"Prediction-powered inference\", Science 382, 2023)")


@dataclass(frozen=True)
class PPIEstimate:
    estimate: float | None
    low: float | None
    high: float | None
    se: float | None
    judge_mean: float | None
    """Mean of the judge's labels over every unit (the uncorrected figure)."""
    rectifier: float | None
    """mean(human − judge) over the labelled units: the judge's measured bias, negated."""
    n_all: int
    n_labelled: int
    clusters: int


def ppi_mean(judge: Sequence[float], labelled: Mapping[int, float], *,
             clusters: Sequence[Hashable] | None = None, level: float = 0.95,
             bounds: tuple[float, float] | None = (0.0, 1.0)) -> PPIEstimate:
    """PPI of a mean. `judge[i]` is the judge's value of unit i (every unit); `labelled` maps
    the indices of the human-labelled units to the human value.

    θ̂ = (1/N)·Σ_all f_i + (1/n)·Σ_labelled (y_i − f_i). The labelled units are a subset of all
    units (not a disjoint set as in the paper's notation), so the two means are correlated; the
    SE is the influence-function (sandwich) SE of θ̂ that counts that covariance: each unit
    contributes ψ_i = (f_i − f̄)/N + [i labelled]·(r_i − r̄)/n, Var = G/(G−1)·Σ_g (Σ_{i∈g} ψ_i)²
    over the G clusters (`clusters[i]`, e.g. the session of a trigger; default: every unit its
    own), which for unclustered units is s_f²/N + s_r²/n + 2·cov(f, r)/N up to the G/(G−1)
    factor. The CI is θ̂ ± z·SE, clipped to `bounds` (a rate cannot leave [0, 1]); the estimate
    itself is not clipped. Needs ≥ 2 labelled units and ≥ 2 clusters for a CI."""
    n_all, n_lab = len(judge), len(labelled)
    if any(i < 0 or i >= n_all for i in labelled):
        raise ValueError("labelled units must be indices of the judged units")
    if clusters is not None and len(clusters) != n_all:
        raise ValueError("one cluster per judged unit")
    if n_all == 0 or n_lab == 0:
        mean = sum(judge) / n_all if n_all else None
        return PPIEstimate(None, None, None, None, mean, None, n_all, n_lab, 0)
    f_bar = sum(judge) / n_all
    rect = {i: y - judge[i] for i, y in labelled.items()}
    r_bar = sum(rect.values()) / n_lab
    theta = f_bar + r_bar
    keys = list(clusters) if clusters is not None else list(range(n_all))
    psi: dict[Hashable, float] = {}
    for i, f in enumerate(judge):
        contribution = (f - f_bar) / n_all
        if i in rect:
            contribution += (rect[i] - r_bar) / n_lab
        psi[keys[i]] = psi.get(keys[i], 0.0) + contribution
    squares = sum(v * v for v in psi.values()) if n_lab >= 2 and len(psi) >= 2 else None
    return _ppi_estimate(theta, f_bar, r_bar, n_all, n_lab, len(psi), squares, level, bounds)


def ppi_mean_totals(totals: Sequence[tuple[int, float, int, float]], *, level: float = 0.95,
                    bounds: tuple[float, float] | None = (0.0, 1.0)) -> PPIEstimate:
    """`ppi_mean` from each cluster's totals `(N_g, F_g, n_g, R_g)`: its judged units, the sum
    of the judge's values over them, its labelled units and the sum of (y − f) over those —
    what SQL sums per session, so that no unit is fetched. ψ summed over a cluster is
    (F_g − N_g·f̄)/N + (R_g − n_g·r̄)/n; clusters without judged units do not count. θ̂, f̄
    and r̄ are those of `ppi_mean` to the bit when the sums are exact (values of 0, ½ and 1,
    as the reports' labels); the SE's last bits may differ (its sums run in another order)."""
    n_all = sum(t[0] for t in totals)
    n_lab = sum(t[2] for t in totals)
    if n_all == 0 or n_lab == 0:
        mean = math.fsum(t[1] for t in totals) / n_all if n_all else None
        return PPIEstimate(None, None, None, None, mean, None, n_all, n_lab, 0)
    f_bar = math.fsum(t[1] for t in totals) / n_all
    r_bar = math.fsum(t[3] for t in totals) / n_lab
    theta = f_bar + r_bar
    psi = [(f - n * f_bar) / n_all + (r - m * r_bar) / n_lab for n, f, m, r in totals if n]
    squares = math.fsum(v * v for v in psi) if n_lab >= 2 and len(psi) >= 2 else None
    return _ppi_estimate(theta, f_bar, r_bar, n_all, n_lab, len(psi), squares, level, bounds)


def _ppi_estimate(theta: float, f_bar: float, r_bar: float, n_all: int, n_lab: int, g: int,
                  squares: float | None, level: float,
                  bounds: tuple[float, float] | None) -> PPIEstimate:
    """The estimate with its CI from Σ_g ψ_g² over the `g` clusters (`squares`; None: too few
    labelled units or clusters for one): SE = √(G/(G−1)·Σ ψ²), θ̂ ± z·SE clipped to
    `bounds`."""
    if squares is None:
        return PPIEstimate(theta, None, None, None, f_bar, r_bar, n_all, n_lab, g)
    se = math.sqrt(max(g / (g - 1) * squares, 0.0))
    z = NormalDist().inv_cdf(0.5 + level / 2)
    low, high = theta - z * se, theta + z * se
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return PPIEstimate(theta, low, high, se, f_bar, r_bar, n_all, n_lab, g)


# --------------------------------------------------------------------------- Kendall τ


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def kendall_tau_b(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Kendall's τ-b (ties in either ranking corrected): (C − D) / √((P − T_x)(P − T_y)) over
    the P pairs, T_x / T_y the pairs tied in x / y. `None` with fewer than 2 items or when
    either ranking is all ties."""
    if len(xs) != len(ys):
        raise ValueError("the two rankings need the same items")
    n = len(xs)
    concordant = discordant = tied_x = tied_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            sx, sy = _sign(xs[i] - xs[j]), _sign(ys[i] - ys[j])
            if sx == 0:
                tied_x += 1
            if sy == 0:
                tied_y += 1
            if sx * sy > 0:
                concordant += 1
            elif sx * sy < 0:
                discordant += 1
    pairs = n * (n - 1) // 2
    denominator = (pairs - tied_x) * (pairs - tied_y)
    if n < 2 or denominator == 0:
        return None
    return (concordant - discordant) / math.sqrt(denominator)


@dataclass(frozen=True)
class TauCI:
    tau: float | None
    low: float | None
    high: float | None
    agents: int
    units: int
    resamples: int
    """Resamples in which τ was defined (a resample where one judge ties every agent is
    left out and counted apart)."""
    bias: float | None = None
    """Mean of the resampled τs minus `tau` (None without resamples)."""
    raised: str | None = None
    """Why `high` is above the percentile's upper end (`stats.tau_upper`), or None."""
    untrusted: str | None = None
    """Why the interval cannot be trusted (`stats.tau_caution`: many agents whose figures
    move more under resampling than they are apart), or None."""

    @property
    def caution(self) -> str | None:
        """What the report marks ‡: `raised` and `untrusted`, joined by "; "; or None."""
        return "; ".join(w for w in (self.raised, self.untrusted) if w) or None


Figure = Mapping[str, tuple[float, float]]
"""unit → (sum, count) of one agent's values on that unit under one judge; the agent's figure
is Σ sum / Σ count over the units (a session mean when count is 1, pooled triggers otherwise)."""


def _figure(units: Figure, draw: Sequence[str]) -> float | None:
    total = count = 0.0
    for u in draw:
        if u in units:
            s, c = units[u]
            total += s
            count += c
    return total / count if count else None


def kendall_tau_ci(under_a: Mapping[str, Figure], under_b: Mapping[str, Figure], *,
                   level: float = 0.95, resamples: int = 2000, seed: int = 0,
                   caution: bool = True) -> TauCI:
    """τ-b between the agents' rankings under judge A (`under_a[agent]`) and judge B, with a
    percentile bootstrap CI over units: the units (sessions, the same plan ids for every agent)
    are resampled with replacement, every agent's figure under both judges recomputed on the
    same draw, τ recomputed. Units are the union over agents, in sorted order, so the draws do
    not depend on the order the store returned them. The upper end is raised where the
    resamples are biased low (`stats.tau_upper`; `raised` then says why), and the interval
    marked where it cannot be trusted (`stats.tau_caution`, `untrusted`); ``caution=False``:
    the percentile interval as it is (what `benchmarks/tau_coverage.py` compares with)."""
    return kendall_tau_cis([(under_a, under_b)], level=level, resamples=resamples,
                           seed=seed, caution=caution)[0]


def kendall_tau_cis(pairs: Sequence[tuple[Mapping[str, Figure], Mapping[str, Figure]]], *,
                    level: float = 0.95, resamples: int = 2000, seed: int = 0,
                    caution: bool = True) -> list[TauCI]:
    """`kendall_tau_ci` of each (under A, under B) of `pairs`, the same numbers: figures over
    the same number of units (a report's trigger scores per type, its verified score and pass
    rate) draw the same resamples, so their columns go into one product a block — one conversion
    of the draws and one einsum, where each figure had its own (each element is still summed
    over the units in the same order: the same bits)."""
    out: list[TauCI | None] = [None] * len(pairs)
    # per number of units: (call, kept agents, their columns). A resample draws unit
    # positions 0..n−1 (`unit_draw_counts(n, …)`), so figures over other units of the same
    # number draw the same resamples too: their columns share the product (on 1 M turns two
    # sets of figures over 952 sessions each: one pass over those draws less)
    shared: dict[int, list[tuple[int, float, list[int], Any]]] = {}
    for call, (under_a, under_b) in enumerate(pairs):
        agents = sorted(set(under_a) & set(under_b))
        all_units = sorted({u for a in agents for u in (*under_a[a], *under_b[a])}, key=str)
        xs = [_figure(under_a[a], all_units) for a in agents]
        ys = [_figure(under_b[a], all_units) for a in agents]
        keep = [i for i, (x, y) in enumerate(zip(xs, ys, strict=True))
                if x is not None and y is not None]
        tau = kendall_tau_b([xs[i] for i in keep], [ys[i] for i in keep])  # type: ignore[misc]
        if tau is None or len(all_units) < 2:
            out[call] = TauCI(tau, None, None, len(keep), len(all_units), 0)
            continue
        shared.setdefault(len(all_units), []).append(
            (call, tau, keep, _tau_columns(under_a, under_b, agents, keep, all_units)))
    for n, calls in shared.items():
        for call, ci in zip((c[0] for c in calls),
                            _tau_bootstrap(n, calls, level, resamples, seed, caution),
                            strict=True):
            out[call] = ci
    return [ci for ci in out if ci is not None]


def _tau_columns(under_a: Mapping[str, Figure], under_b: Mapping[str, Figure],
                 agents: list[str], keep: list[int], all_units: list[str]) -> Any:
    """Each kept agent's (sum, count) per unit under each judge, side by side in one matrix
    (sums under A, counts under A, sums under B, counts under B): an agent's figure on a
    resample is Σ draws·sum ÷ Σ draws·count, as `_figure` sums over the drawn units."""
    import numpy as np

    at = {u: i for i, u in enumerate(all_units)}
    m = len(keep)
    columns = np.zeros((len(all_units), 4 * m))
    for judge, figures in enumerate((under_a, under_b)):
        for j, i in enumerate(keep):
            figure = figures[agents[i]]
            if not figure:
                continue
            # an agent's units and (sum, count) pairs converted at once (each number as
            # float() converts it), where one assignment a unit took 0.05 s on 1 M turns
            rows = np.fromiter(map(at.__getitem__, figure), dtype=np.intp, count=len(figure))
            pairs = np.array(list(figure.values()), dtype=float).reshape(len(figure), 2)
            columns[rows, 2 * judge * m + j] = pairs[:, 0]
            columns[rows, (2 * judge + 1) * m + j] = pairs[:, 1]
    return columns


def _tau_bootstrap(n: int, calls: list[tuple[int, float, list[int], Any]], level: float,
                   resamples: int, seed: int, caution: bool) -> list[TauCI]:
    """The percentile CIs of the `calls` over the same `n` units: one product a block for all
    their columns; with `caution`, each upper end as `stats.tau_upper` raises it and, with
    `stats.TAU_WIDE_AGENTS` or more agents, the interval marked as `stats.tau_caution` says
    (from each agent's figures on the resamples)."""
    import numpy as np

    from .stats import TAU_WIDE_AGENTS, tau_caution, tau_spread, tau_upper
    from .stats.resampling import unit_draw_counts

    columns = np.concatenate([c[3] for c in calls], axis=1)
    ends = np.cumsum([c[3].shape[1] for c in calls])[:-1]
    # equal columns multiplied once: counts are often the same under both judges and, for
    # session means, for every agent (all 1)
    first: dict[bytes, int] = {}
    where = [first.setdefault(columns[:, j].tobytes(), len(first))
             for j in range(columns.shape[1])]
    distinct = columns
    if len(first) < len(where):  # C order, as einsum sums in another order over an F-order one
        distinct = np.ascontiguousarray(columns[:, [where.index(d) for d in range(len(first))]])
    taus: list[list[float]] = [[] for _ in calls]
    # the agents' figures on every resample, kept only where `tau_caution` can fire
    wide = [caution and len(c[2]) >= TAU_WIDE_AGENTS for c in calls]
    drawn_figures: list[list[Any]] = [[] for _ in calls]
    for block in unit_draw_counts(n, resamples, seed):
        # einsum, not `@`: a BLAS product spreads over threads that spin, 40 % slower in all
        # on 2 shared cores; one product for every column group (each element summed over
        # the units in the same order as one product a group: the same bits)
        drawn = block.astype(float)  # a float × float einsum is twice an int × float one
        products = np.einsum("ij,jk->ik", drawn, distinct)
        if distinct is not columns:
            products = products[:, where]
        for call, part in enumerate(np.split(products, ends, axis=1)):
            sx, cx, sy, cy = np.split(part, 4, axis=1)
            taus[call].extend(_tau_rows(sx, cx, sy, cy))
            if wide[call]:
                full = cx.all(axis=1) & cy.all(axis=1)
                drawn_figures[call].append(np.concatenate(
                    [sx[full] / cx[full], sy[full] / cy[full]], axis=1))
    results = []
    alpha = (1 - level) / 2
    for (_, tau, keep, cols), drawn_taus, figs in zip(calls, taus, drawn_figures, strict=True):
        if not drawn_taus:
            results.append(TauCI(tau, None, None, len(keep), n, 0))
            continue
        drawn_taus.sort()
        # each resample's difference summed: exactly 0 when every resample gives τ itself
        bias = math.fsum(t - tau for t in drawn_taus) / len(drawn_taus)
        low, high = _quantile(drawn_taus, alpha), _quantile(drawn_taus, 1 - alpha)
        why = untrusted = None
        if caution:
            high, why = tau_upper(low, high, bias, len(keep))
        if figs:
            m = len(keep)
            spread = np.concatenate(figs).std(axis=0).tolist()
            sums = cols.sum(axis=0)
            fig_a = (sums[:m] / sums[m:2 * m]).tolist()
            fig_b = (sums[2 * m:3 * m] / sums[3 * m:]).tolist()
            untrusted = tau_caution(m, tau_spread(spread[:m], fig_a, spread[m:], fig_b))
        results.append(TauCI(tau, low, high, len(keep), n, len(drawn_taus), bias, why,
                             untrusted))
    return results


def _tau_rows(sx: Any, cx: Any, sy: Any, cy: Any) -> list[float]:
    """`kendall_tau_b` of every resample (a row: the agents' sums and counts under each
    judge) at once, in numpy, leaving out the rows where an agent has no drawn unit (no
    figure) or τ is undefined: the same comparisons, integer counts and final division as
    `kendall_tau_b`, so the same floats."""
    import numpy as np

    full = cx.all(axis=1) & cy.all(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        x, y = sx[full] / cx[full], sy[full] / cy[full]
    m = x.shape[1]
    rows = x.shape[0]
    score = np.zeros(rows, dtype=np.int64)
    tied_x = np.zeros(rows, dtype=np.int64)
    tied_y = np.zeros(rows, dtype=np.int64)
    for i in range(m):
        for j in range(i + 1, m):
            a, b = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
            tied_x += a == 0
            tied_y += b == 0
            score += (a * b).astype(np.int64)  # +1 concordant, −1 discordant, 0 tied
    pairs = m * (m - 1) // 2
    denominator = (pairs - tied_x) * (pairs - tied_y)
    defined = denominator != 0
    taus: list[float] = (score[defined] / np.sqrt(denominator[defined].astype(float))).tolist()
    return taus


def _quantile(xs: Sequence[float], q: float) -> float:
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


# --------------------------------------------------------------------------- leaks
# `leaks` lives with the tokenisation (`benchpack.specs.text`) so that the runtime can decide
# it once per session at run time (`sessions.extra.intent_leaks`) and the same rule answers
# here for stores written before that.

__all__ = [
    "LEAK_MIN_TOKENS",
    "LEAK_SHARE",
    "PPI_CITATION",
    "VERBATIM_MIN",
    "PPIEstimate",
    "TauCI",
    "kendall_tau_b",
    "kendall_tau_ci",
    "kendall_tau_cis",
    "leaks",
    "ppi_mean",
    "ppi_mean_totals",
]
