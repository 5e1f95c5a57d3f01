"""Coverage of `bench report agreement`'s Krippendorff α intervals with a known truth, through
`stats.krippendorff_alpha_ci`, the function the report calls: the percentile bootstrap over
sessions (the exact method) beside its normal approximation with the delete-one-session
jackknife SE (`exact_max=0`; normal on the scale of log(1 − α)), and beside the plain
α ± z·SE with the same SE (which the log scale replaced), at several numbers of sessions —
what `ALPHA_EXACT_MAX` in `reports/…/agreement.py` was chosen from.

What is simulated. A session holds 1-4 items; each item has a true label z drawn from the
session's prevalence (two kinds of session, equally likely, whose prevalences average the
design's: sessions differ, so items of one session are alike, the case that makes the session
the unit). Each rating is z with probability q, otherwise a label drawn from the overall
prevalence. Raters: `2` (two judges rate every item, as judge against judge) or `2-4` (an
item has 1-4 ratings, a tenth of the items one rating only: units without pairs, as against
humans). Scales: ordinal FAIL/PARTIAL/PASS and two labels (NO/YES); prevalence balanced or
skewed (97 % PASS / YES). The true α is the population α of that model,
1 − Σ P_cd δ²_cd / Σ p_c p_d δ²_cd with P the probability of an ordered pair of ratings of one
item and p its margins (δ² ordinal on p), which q is solved for (0.3, 0.7, 0.95): it does not
depend on how many ratings an item has.

Printed per design: the share of replications whose 95 % interval holds the true α, with its
normal Monte-Carlo margin (1.96·SE), for the three intervals, the mean widths of the first
two, how many replications had an interval (α undefined: none) and in how many the jackknife
fell back to the bootstrap (a session's removal left α undefined; counted in the jackknife
column as the report would show it, left out of the α ± z·SE one). An α of 1 (no
disagreement in the sample) has the point as its interval in the jackknife columns. The bootstrap uses one seed for every
replication, as the report does (its draws do not depend on the data, so the coverage over
replications is unbiased), which lets its draws be reused. Target (issue 25): coverage ≥ 93 %
and no worse than the bootstrap beyond Monte-Carlo noise. The intervals are the resampled ones
(`caution=False`); where too few disagreements leave them untrustworthy the report widens and
marks them (`stats.alpha_caution`), measured by `alpha_trust.py`.

Usage: python benchmarks/alpha_coverage.py [--reps 1000] [--resamples 1000] [--seed 0]
                                           [--sessions 50 100 200 400 1000] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from statistics import NormalDist
from typing import Any

import numpy as np

from benchpack.reports.stats import krippendorff_alpha_ci

SCALES = {
    "ordinal": {"balanced": ((0.5, 0.3, 0.2), (0.1, 0.3, 0.6)),
                "97% PASS": ((0.03, 0.03, 0.94), (0.0, 0.0, 1.0))},
    "two labels": {"balanced": ((0.7, 0.3), (0.3, 0.7)),
                   "97% YES": ((0.06, 0.94), (0.0, 1.0))},
}
"""scale → prevalence → the two kinds of session's label probabilities (worst first)."""
ALPHAS = (0.3, 0.7, 0.95)
RATERS = ("2", "2-4")


def pair_matrix(kinds: tuple[tuple[float, ...], ...], q: float) -> Any:
    """P_cd: the probability that two ratings of one item are (c, d)."""
    overall = np.mean(np.array(kinds), axis=0)
    k = len(overall)
    given = q * np.eye(k) + (1 - q) * overall[None, :]  # row z: P(label | z)
    out = np.zeros((k, k))
    for kind in kinds:
        for z in range(k):
            out += kind[z] / len(kinds) * np.outer(given[z], given[z])
    return out


def true_alpha(kinds: tuple[tuple[float, ...], ...], q: float) -> float:
    """The population ordinal α (the limit of the sample α over ever more sessions)."""
    pairs = pair_matrix(kinds, q)
    p = pairs.sum(axis=1)
    k = len(p)
    observed = expected = 0.0
    for c in range(k):
        for d in range(k):
            lo, hi = min(c, d), max(c, d)
            delta2 = (p[lo:hi + 1].sum() - (p[lo] + p[hi]) / 2) ** 2
            observed += pairs[c, d] * delta2
            expected += p[c] * p[d] * delta2
    return 1.0 - observed / expected


def solve_q(kinds: tuple[tuple[float, ...], ...], target: float) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(60):  # α grows with q
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if true_alpha(kinds, mid) < target else (lo, mid)
    return (lo + hi) / 2


def sessions_units(rng: Any, kinds: tuple[tuple[float, ...], ...], q: float, sessions: int,
                   raters: str) -> list[list[float]]:
    """Each session's flattened coincidence matrix, as the report's SQL sums it."""
    k = len(kinds[0])
    overall = np.mean(np.array(kinds), axis=0)
    items = rng.integers(1, 5, size=sessions)
    owner = np.repeat(np.arange(sessions), items)
    kind = rng.integers(0, len(kinds), size=sessions)[owner]
    cum = np.cumsum(np.array(kinds), axis=1)
    truth = np.minimum((rng.random(len(owner))[:, None] > cum[kind]).sum(axis=1), k - 1)
    if raters == "2":
        m = np.full(len(owner), 2)
    else:
        m = rng.integers(2, 5, size=len(owner))
        m[rng.random(len(owner)) < 0.1] = 1
    slots = np.arange(4)[None, :] < m[:, None]  # items × 4 rating slots
    keep = rng.random(slots.shape) < q
    noise = np.minimum((rng.random(slots.shape)[..., None] > np.cumsum(overall)[None, None, :])
                       .sum(axis=2), k - 1)
    labels = np.where(keep, truth[:, None], noise)
    counts = np.stack([((labels == c) & slots).sum(axis=1) for c in range(k)], axis=1)
    step = np.where(m >= 2, m - 1, 1).astype(float)
    cells = (counts[:, :, None] * (counts[:, None, :] - np.eye(k, dtype=np.int64)[None]))
    cells = np.where((m >= 2)[:, None, None], cells / step[:, None, None], 0.0)
    out = np.zeros((sessions, k * k))
    np.add.at(out, owner, cells.reshape(len(owner), k * k))
    return (out + 0.0).tolist()


def coverage(scale: str, prevalence: str, target: float, raters: str, sessions: int,
             reps: int, resamples: int, seed: int) -> dict[str, Any]:
    kinds = SCALES[scale][prevalence]
    q = solve_q(kinds, target)
    truth = true_alpha(kinds, q)
    cats = ("FAIL", "PARTIAL", "PASS")[-len(kinds[0]):] if len(kinds[0]) == 3 else ("NO", "YES")
    rng = np.random.default_rng(seed)
    held = {"bootstrap": 0, "jackknife": 0, "symmetric": 0}
    width = {"bootstrap": 0.0, "jackknife": 0.0, "symmetric": 0.0}
    done = {"bootstrap": 0, "jackknife": 0, "symmetric": 0}
    z = NormalDist().inv_cdf(0.975)
    fallback = 0
    for _ in range(reps):
        units = sessions_units(rng, kinds, q, sessions, raters)
        for name, exact_max in (("bootstrap", None), ("jackknife", 0)):
            ci = krippendorff_alpha_ci(units, "ordinal", cats, resamples=resamples, seed=0,
                                       exact_max=exact_max, caution=False)
            if name == "jackknife" and ci.method != "jackknife":
                fallback += 1
            if ci.low is None or ci.high is None:
                continue
            done[name] += 1
            held[name] += ci.low <= truth <= ci.high
            width[name] += ci.high - ci.low
            if name == "jackknife" and ci.method == "jackknife":
                # α ± z·SE with the same SE, read back from the log(1 − α) interval
                low = high = ci.estimate
                if ci.estimate < 1 and ci.high < 1:
                    se = -math.log((1 - ci.high) / (1 - ci.estimate)) * (1 - ci.estimate) / z
                    low, high = ci.estimate - z * se, min(ci.estimate + z * se, 1.0)
                done["symmetric"] += 1
                held["symmetric"] += low <= truth <= high
                width["symmetric"] += high - low
    return {"truth": truth, "q": q, "held": held, "width": width, "done": done,
            "fallback": fallback}


def _cell(held: int, done: int) -> str:
    if not done:
        return "      –       "
    p = held / done
    return f"{100 * p:5.1f} ± {196 * math.sqrt(p * (1 - p) / done):3.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sessions", type=int, nargs="+", default=[50, 100, 200, 400, 1000])
    ap.add_argument("--quick", action="store_true", help="one design per scale and raters")
    args = ap.parse_args()
    print("scale       prevalence  raters true α  sessions  bootstrap %    jackknife %   "
          "α ± z·SE %    width b / j    reps  fallback", flush=True)
    grid = list(itertools.product(SCALES, ("balanced", "skewed"), ALPHAS, RATERS))
    if args.quick:
        grid = [g for g in grid if g[2] == 0.7 and g[1] == "balanced"]
    for i, (scale, skew, target, raters) in enumerate(grid):
        prevalence = next(p for p in SCALES[scale] if (p == "balanced") == (skew == "balanced"))
        for sessions in args.sessions:
            start = time.perf_counter()
            r = coverage(scale, prevalence, target, raters, sessions, args.reps,
                         args.resamples, args.seed * 1_000_003 + i * 1009 + sessions)
            b, j = r["done"]["bootstrap"], r["done"]["jackknife"]
            pb = r["held"]["bootstrap"] / b if b else 0.0
            pj = r["held"]["jackknife"] / j if j else 0.0
            margin = 1.96 * math.sqrt(pb * (1 - pb) / b + pj * (1 - pj) / j) if b and j else 0
            flag = "  bootstrap < 93 %" if b and pb < 0.93 else ""
            if j and pj < 0.93:
                flag += "  jackknife < 93 %"
            if j and pj < pb - margin:
                flag += "  jackknife < bootstrap"
            wb = r["width"]["bootstrap"] / b if b else float("nan")
            wj = r["width"]["jackknife"] / j if j else float("nan")
            sy = r["done"]["symmetric"]
            print(f"{scale:11s} {prevalence:11s} {raters:6s} {r['truth']:6.3f} {sessions:9d}  "
                  f"{_cell(r['held']['bootstrap'], b)}  {_cell(r['held']['jackknife'], j)}  "
                  f"{_cell(r['held']['symmetric'], sy)}  "
                  f"{wb:.3f} / {wj:.3f}  {min(b, j):5d}  {r['fallback']:4d}{flag}"
                  f"   ({time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
