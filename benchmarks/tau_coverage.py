"""Coverage of `bench report agreement`'s Kendall τ interval (rank stability: the agents'
rankings under two judges), simulated with a known truth through `validity.kendall_tau_ci`,
the function the report calls.

What is simulated. K agents pass each trigger with probability p_k = 0.3 … 0.7 (evenly spaced)
under judge A; judge B scores the same agents with p_k ± `shift` (odd agents up, even agents
down), so the true τ-b between the two rankings is known (1 when `shift` is 0). Each agent runs
the same `sessions` sessions of 1-4 triggers; a fifth of the sessions have one trigger SKIPPED,
in no N (a unit is (Σ score, scored triggers), as the report counts it). Each judge's verdicts
are independent draws. Printed per design: the share of replications whose 95 % interval holds
the true τ, with its normal Monte-Carlo margin, and the mean width. Target (issue 25's for
intervals): coverage ≥ 93 %.

Usage: python benchmarks/tau_coverage.py [--reps 1000] [--resamples 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import random

from benchpack.reports.validity import kendall_tau_b, kendall_tau_ci

DESIGNS = ((4, 50, 0.08), (6, 50, 0.08), (6, 200, 0.08), (4, 50, 0.0), (6, 50, 0.0),
           (6, 200, 0.0))
"""(agents, sessions, shift)."""


def coverage(agents: int, sessions: int, shift: float, reps: int, resamples: int,
             seed: int) -> tuple[float, float, float, int, float, float]:
    """(true τ, coverage, mean width, replications with an interval, and the coverage and mean
    width of the interval whose upper end, when within one discordant pair of 1 — 2 / C(K, 2)
    — is taken as 1: an exploration, not what the report prints)."""
    rng = random.Random(seed)
    pa = [0.3 + 0.4 * k / (agents - 1) for k in range(agents)]
    pb = [p + (shift if k % 2 else -shift) for k, p in enumerate(pa)]
    truth = kendall_tau_b(pa, pb)
    assert truth is not None
    held = width = done = snapped = snapped_width = 0.0
    step = 2 / (agents * (agents - 1) / 2)
    for r in range(reps):
        under_a: dict[str, dict[str, tuple[float, float]]] = {}
        under_b: dict[str, dict[str, tuple[float, float]]] = {}
        for k in range(agents):
            a, b = {}, {}
            for s in range(sessions):
                n = rng.randint(1, 4)
                scored = n - 1 if n > 1 and rng.random() < 0.2 else n  # one SKIPPED
                a[f"s{s}"] = (float(sum(rng.random() < pa[k] for _ in range(scored))),
                              float(scored))
                b[f"s{s}"] = (float(sum(rng.random() < pb[k] for _ in range(scored))),
                              float(scored))
            under_a[f"agent{k}"], under_b[f"agent{k}"] = a, b
        ci = kendall_tau_ci(under_a, under_b, resamples=resamples, seed=seed * 100_003 + r)
        if ci.low is None or ci.high is None:
            continue
        done += 1
        held += ci.low <= truth <= ci.high
        width += ci.high - ci.low
        high = 1.0 if ci.high >= 1 - step - 1e-9 else ci.high
        snapped += ci.low <= truth <= high
        snapped_width += high - ci.low
    return (truth, held / done, width / done, int(done), snapped / done,
            snapped_width / done)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print("agents sessions  shift  true τ  coverage (± MC)   mean width  reps  "
          "upper snapped to 1: coverage, width")
    for i, (agents, sessions, shift) in enumerate(DESIGNS):
        truth, p, w, done, ps, ws = coverage(agents, sessions, shift, args.reps,
                                             args.resamples, args.seed + i)
        margin = 1.96 * (p * (1 - p) / done) ** 0.5
        flag = "" if p + margin >= 0.93 else "  below 93 %"
        print(f"{agents:6d} {sessions:8d} {shift:6.2f} {truth:7.3f}  {p:6.3f} ± {margin:.3f}"
              f"   {w:10.3f} {done:5d}  {ps:6.3f} {ws:6.3f}{flag}", flush=True)


if __name__ == "__main__":
    main()
