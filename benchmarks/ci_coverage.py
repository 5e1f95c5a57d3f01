"""Coverage of the reports' intervals, simulated: how often a nominal 95 % interval holds the
true value, the percentile bootstrap (what the reports used) against the intervals they use now
(`stats.headline_interval`: exact Clopper–Pearson for proportions, widened by the design effect
of clusters; estimate ± t(G−1)·√(G/(G−1))·clustered SE for other means, with a quarter cluster
at each bound). The error rates of `bench compare`'s tests, and these intervals over episodes
of several sessions, are `stat_sim.py`'s.

Scenarios (sessions are the clusters):
- pass rate 0.95, 10 sessions; 0.5, 10 sessions; 0.5, 30 sessions (one repeat each)
- pass rate 0.755, 10 sessions × 3 repeats, repeats correlated (a session passes with
  probability 0.95 or 0.3)
- skewed continuous scores, 10 sessions: min(1, Exp(mean 0.2)), true mean (1 − e⁻⁵)/5

Usage: python benchmarks/ci_coverage.py [--reps 1000] [--resamples 2000] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from benchpack.reports.stats import bootstrap_ci, headline_interval


@dataclass(frozen=True)
class Scenario:
    name: str
    truth: float
    binary: bool
    draw: Callable[[random.Random], list[list[float]]]
    """One simulated run: a list of sessions, each the list of its repeats' values."""


def _bernoulli(p: float, sessions: int) -> Callable[[random.Random], list[list[float]]]:
    return lambda rng: [[float(rng.random() < p)] for _ in range(sessions)]


def _correlated(rng: random.Random) -> list[list[float]]:
    out = []
    for _ in range(10):
        p = 0.95 if rng.random() < 0.7 else 0.3
        out.append([float(rng.random() < p) for _ in range(3)])
    return out


def _skewed(rng: random.Random) -> list[list[float]]:
    return [[min(1.0, rng.expovariate(5.0))] for _ in range(10)]


SCENARIOS = (
    Scenario("pass rate 0.95, n = 10", 0.95, True, _bernoulli(0.95, 10)),
    Scenario("pass rate 0.5, n = 10", 0.5, True, _bernoulli(0.5, 10)),
    Scenario("pass rate 0.5, n = 30", 0.5, True, _bernoulli(0.5, 30)),
    Scenario("pass rate 0.755, 10 sessions × 3 correlated repeats", 0.7 * 0.95 + 0.3 * 0.3,
             True, _correlated),
    Scenario("skewed scores (capped exponential), n = 10", (1 - math.exp(-5.0)) / 5.0, False,
             _skewed),
)


@dataclass(frozen=True)
class Coverage:
    scenario: str
    bootstrap: float
    ours: float
    method: str
    degenerate: float
    """Share of runs whose bootstrap interval has zero width."""


def coverage(s: Scenario, reps: int, resamples: int, seed: int) -> Coverage:
    rng = random.Random(seed)
    boot = ours = degenerate = 0
    method = ""
    for _ in range(reps):
        run = s.draw(rng)
        # the same bootstrap seed each time (its resample indices are cached): the runs differ
        b = bootstrap_ci(run, "unit_mean", resamples=resamples, seed=0)
        assert b.low is not None and b.high is not None
        boot += b.low <= s.truth <= b.high
        degenerate += b.low == b.high
        u = headline_interval([(math.fsum(x), len(x)) for x in run], binary=s.binary)
        method = u.method if u.method != "none" else method
        ours += u.low is not None and u.high is not None and u.low <= s.truth <= u.high
    return Coverage(s.name, boot / reps, ours / reps, method, degenerate / reps)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(f"coverage of nominal 95 % intervals over {args.reps} simulated runs "
          f"(bootstrap: {args.resamples} resamples)")
    print(f"{'scenario':<52} {'bootstrap':>9} {'ours':>6}  method (bootstrap zero-width)")
    for s in SCENARIOS:
        c = coverage(s, args.reps, args.resamples, args.seed)
        print(f"{c.scenario:<52} {c.bootstrap:>9.1%} {c.ours:>6.1%}  {c.method} "
              f"({c.degenerate:.0%})")


if __name__ == "__main__":
    main()
