"""Exploration (issue 41 follow-up): per replication, the resampled τs' summaries and the
candidate upper ends, written as rows for offline analysis. Not the report's code path for
the data: numpy draws the verdicts (faster); the τs are computed as `kendall_tau_ci` does.

Usage: python benchmarks/tau_explore.py OUT.tsv [--reps 1000] [--resamples 1000]
           [--part 0/2]
"""

from __future__ import annotations

import argparse
import math
from statistics import NormalDist

import numpy as np

from benchpack.reports.stats import tau_upper
from benchpack.reports.stats.resampling import unit_draw_counts
from benchpack.reports.validity import _quantile, _tau_rows, kendall_tau_b
from tau_coverage import DESIGNS, MAP, Design


def one(design: Design, rng: np.random.Generator, resamples: int, seed: int) -> list[float]:
    pa, pb = design.rates()
    k, n = design.agents, design.sessions
    trig = rng.integers(1, 5, size=(k, n))
    skip = (trig > 1) & (rng.random((k, n)) < 0.2)
    cnt = (trig - skip).astype(float)
    sa = rng.binomial(cnt.astype(int), np.array(pa)[:, None]).astype(float)
    sb = rng.binomial(cnt.astype(int), np.array(pb)[:, None]).astype(float)
    cols = np.concatenate([sa.T, cnt.T, sb.T, cnt.T], axis=1)  # units × 4k
    xs, ys = sa.sum(1) / cnt.sum(1), sb.sum(1) / cnt.sum(1)
    tau = kendall_tau_b(xs.tolist(), ys.tolist())
    taus: list[float] = []
    fig_sd = []
    for block in unit_draw_counts(n, resamples, seed):
        prod = np.einsum("ij,jk->ik", block.astype(float), cols)
        sx, cx, sy, cy = np.split(prod, 4, axis=1)
        taus.extend(_tau_rows(sx, cx, sy, cy))
        fig_sd.append(np.concatenate([sx / cx, sy / cy], axis=1))
    figs = np.concatenate(fig_sd)
    sd = figs.std(axis=0)  # each agent's figure's spread over the resamples, A then B
    spac_a = (xs.max() - xs.min()) / (k - 1)
    spac_b = (ys.max() - ys.min()) / (k - 1)
    ratio_a = sd[:k].mean() / spac_a if spac_a else math.inf
    ratio_b = sd[k:].mean() / spac_b if spac_b else math.inf
    # neighbour swaps: share of resamples in which adjacent (in the sample) agents swap
    taus.sort()
    assert tau is not None
    bias = math.fsum(t - tau for t in taus) / len(taus)
    low, high = _quantile(taus, 0.025), _quantile(taus, 0.975)
    raised, _ = tau_upper(low, high, bias, k)
    basic = min(1.0, 2 * tau - _quantile(taus, 0.025))
    below = sum(t < tau for t in taus) / len(taus)
    at = sum(t == tau for t in taus) / len(taus)
    z0 = NormalDist().inv_cdf(min(max(below + at / 2, 1e-6), 1 - 1e-6))
    q = NormalDist().cdf(2 * z0 + 1.959964)
    bc_high = _quantile(taus, q)
    ql = NormalDist().cdf(2 * z0 - 1.959964)
    bc_low = _quantile(taus, ql)
    tsd = float(np.std(taus))
    return [tau, low, high, bias, raised, basic, bc_low, bc_high, tsd, ratio_a, ratio_b,
            below, at]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--part", default="0/1")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--old", action="store_true", help="tau_coverage.DESIGNS instead")
    args = ap.parse_args()
    part, parts = map(int, args.part.split("/"))
    with open(args.out, "w") as f:
        for i, d in enumerate(DESIGNS if args.old else MAP, 100 if args.old else 0):
            if i % parts != part:
                continue
            pa, pb = d.rates()
            truth = kendall_tau_b(pa, pb)
            rng = np.random.default_rng(args.seed * 1000 + i)
            for r in range(args.reps):
                row = one(d, rng, args.resamples, args.seed * 100_003 + i * 10_007 + r)
                f.write("\t".join(map(str, [i, d.agents, d.sessions, d.shift,
                                            ",".join(map(str, d.swaps)) or "-", truth, *row]))
                        + "\n")
            f.flush()
            print(i, d, flush=True)


if __name__ == "__main__":
    main()
