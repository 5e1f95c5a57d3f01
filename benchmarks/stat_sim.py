"""Error rates of `bench compare`'s tests and of the headline intervals, simulated with a known
truth through the code the CLI runs: every replication writes two runs of synthetic
verified-outcome sessions into an in-memory store (the store's own DDL and the report views),
then calls `compare.compare` (what `bench compare` renders) and the `pass-k` report (what
`bench report pass-k` renders) and reads their p-values and intervals.

What is simulated. A pack is a sample of G episodes from a population of tasks of
heterogeneous difficulty: each session's pass probability (and mean score) is drawn from
DIFFICULTY (`mixed`: 0.1 … 0.9, or `easy`: 0.9, 0.95, 1.0, where 0 % / 100 % runs are common).
The compared agent B passes with probability `shifted(p)` (A/B) or `p` (A/A: nothing differs).
Each session runs `repeats` times, `independent` (a fresh draw each repeat) or `deterministic`
(temperature 0: one draw per session and agent, repeated). An episode holds one session, or
several sharing one difficulty (`episodes of 3`: sessions of one episode are alike, the case
a per-session cluster gets wrong). A session's score is a Beta draw around its difficulty,
its pass/fail a Bernoulli draw of it.

What is printed, per design and figure: the share of replications where the test rejected at
α = 0.05 (false-positive rate in A/A designs, power in A/B) and where the 95 % interval held the
truth (coverage), each with its Clopper–Pearson 95 % Monte-Carlo interval, and the share where
the tool refused the figure (no p, no interval). Targets (issue 25): every A/A rate ≤ 5 % + its
Monte-Carlo error, every coverage ≥ 93 %.

Usage: python benchmarks/stat_sim.py [--reps 1000] [--designs NAME…] [--seed 0] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

DIFFICULTY = {"mixed": (0.1, 0.3, 0.5, 0.7, 0.9), "easy": (0.9, 0.95, 1.0)}
"""Pass probabilities (and mean scores) a session is drawn from, each equally likely."""
SHIFT = 0.15
"""A/B: B's pass probability is min(0.97, p + SHIFT) (mean 0.13 better on `mixed`)."""
SCORE_CONCENTRATION = 4.0
"""A session's score per repeat is Beta(μκ, (1 − μ)κ) around its difficulty μ (1.0 at μ = 1)."""
ALPHA, LEVEL = 0.05, 0.95


@dataclass(frozen=True)
class Design:
    name: str
    clusters: int
    mode: str
    """`independent` or `deterministic` repeats."""
    shift: bool
    """A/B (B better) rather than A/A."""
    difficulty: str = "mixed"
    sessions: int = 1
    """Sessions per episode (sharing the episode's difficulty)."""
    repeats: int = 3


def designs() -> list[Design]:
    out = []
    for g in (6, 12, 30):
        for mode in ("independent", "deterministic"):
            for shift in (False, True):
                ab = "A/B" if shift else "A/A"
                out.append(Design(f"{ab} G={g} {mode}", g, mode, shift))
    for g in (6, 12, 30):
        out.append(Design(f"A/A G={g} deterministic easy", g, "deterministic", False, "easy"))
    out.append(Design("A/A G=10 deterministic easy ×10", 10, "deterministic", False, "easy",
                      repeats=10))
    out.append(Design("A/A G=12 independent episodes of 3", 12, "independent", False,
                      sessions=3))
    out.append(Design("A/A G=12 deterministic episodes of 3", 12, "deterministic", False,
                      sessions=3))
    return out


# --------------------------------------------------------------------------- truth


def _shifted(p: float, shift: bool) -> float:
    return min(0.97, p + SHIFT) if shift and p < 0.97 else p


def truths(d: Design) -> dict[str, float]:
    """The population values each interval estimates (exact: the levels are equally likely)."""
    levels = DIFFICULTY[d.difficulty]
    k = d.repeats

    def mean(f: Callable[[float], float]) -> float:
        return math.fsum(f(p) for p in levels) / len(levels)

    det = d.mode == "deterministic"
    return {
        "pass": mean(lambda p: _shifted(p, d.shift) - p),
        "score": mean(lambda p: _shifted(p, d.shift) - p),
        "mean score": mean(lambda p: p),
        "pass@1": mean(lambda p: p),
        "pass@k": mean(lambda p: p if det else 1 - (1 - p) ** k),
        "pass^k": mean(lambda p: p if det else p ** k),
        "flip rate": 0.0 if det else mean(lambda p: 1 - p ** k - (1 - p) ** k),
    }


# --------------------------------------------------------------------------- the store


def _score(rng: random.Random, mu: float) -> float:
    if mu >= 1.0:
        return 1.0
    return rng.betavariate(mu * SCORE_CONCENTRATION, (1 - mu) * SCORE_CONCENTRATION)


def _agent_rows(rng: random.Random, d: Design, run: str, difficulty: list[list[float]],
                shift: bool) -> Iterator[tuple[Any, ...]]:
    for e, episode in enumerate(difficulty):
        for s, p0 in enumerate(episode):
            p = _shifted(p0, shift)
            fixed = (rng.random() < p, _score(rng, p))
            for r in range(d.repeats):
                passed, score = (fixed if d.mode == "deterministic"
                                 else (rng.random() < p, _score(rng, p)))
                yield (run, f"e{e}.s{s}", r, f"ep{e}", f"s{s}", score, passed)


class SimStore:
    """An in-memory store with the real schema and report views, holding every replication
    of one design as its own pair of runs (`r<i>a`, `r<i>b`)."""

    def __init__(self) -> None:
        import duckdb

        from benchpack.reports.views import install_views
        from benchpack.specs.storeformat import DDL, SCHEMA_VERSION

        self.con = duckdb.connect()
        self.con.execute(DDL)
        self.con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
        install_views(self.con)

    def add(self, runs: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
        # literal VALUES lists: binding Python lists makes DuckDB probe for numpy and pandas on
        # every call; every value here is generated, never user text
        self.con.execute("INSERT INTO runs VALUES " + ", ".join(
            f"('{run}', {i}, 0, 'sim', 'h', 'sim', '1', '0', '{run}', 'sim', 'litellm:judge', "
            "3, '{}', 'finished')" for i, run in enumerate(runs)))
        for i in range(0, len(rows), 20_000):
            values = ", ".join(f"('{r}', '{s}', {k}, '{e}', '{n}', {x!r}, {str(p).upper()})"
                               for r, s, k, e, n, x, p in rows[i:i + 20_000])
            self.con.execute(
                f"""INSERT INTO sessions (run_id, session_id, repeat, episode, name, score,
                       passed, protocol, status, agent, fingerprint)
                   SELECT *, 'verified_outcome', 'finished', col0, 'f' FROM (VALUES {values})""")


# --------------------------------------------------------------------------- replications


@dataclass
class Tally:
    """Counts of one figure in one design."""

    n: int = 0
    hits: int = 0
    refused: int = 0

    def add(self, hit: bool | None) -> None:
        self.n += 1
        if hit is None:
            self.refused += 1
        elif hit:
            self.hits += 1


@dataclass
class Result:
    design: Design
    reject: dict[str, Tally] = field(default_factory=dict)
    cover: dict[str, Tally] = field(default_factory=dict)
    seconds: float = 0.0


def _covers(low: float | None, high: float | None, truth: float) -> bool | None:
    if low is None or high is None:
        return None
    return low - 1e-12 <= truth <= high + 1e-12


def simulate(rng: random.Random, d: Design, reps: int) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Every replication's two runs: the pack (its sessions' difficulty) is drawn afresh each
    time and shared by both agents, as two agents run on one pack."""
    runs: list[str] = []
    rows: list[tuple[Any, ...]] = []
    levels = DIFFICULTY[d.difficulty]
    for rep in range(reps):
        # sessions of one episode alike: the episode, not the session, is the sampled unit
        difficulty = [[rng.choice(levels)] * d.sessions for _ in range(d.clusters)]
        a, b = f"r{rep}a", f"r{rep}b"
        runs += [a, b]
        rows += [*_agent_rows(rng, d, a, difficulty, False),
                 *_agent_rows(rng, d, b, difficulty, d.shift)]
    return runs, rows


COMPARED = ("score", "pass")
HEADLINE = (("mean score", "score"), ("pass@1", "pass1"), ("pass@k", "passk"),
            ("pass^k", "pass_hat_k"), ("flip rate", "flip"))
"""Figure name → column of the pass-k report's table."""


def run_design(d: Design, reps: int, seed: int) -> Result:
    from benchpack.reports.builtin import ReportContext
    from benchpack.reports.compare import CompareOptions, compare_pairs
    from benchpack.reports.protocols.verified_outcome import pass_k

    started = time.perf_counter()
    store = SimStore()
    runs, rows = simulate(random.Random(f"{seed}:{d.name}"), d, reps)
    store.add(runs, rows)
    res, truth = Result(d), truths(d)
    pairs = [(runs[i], runs[i + 1]) for i in range(0, len(runs), 2)]
    # what `bench compare A B` computes for each pair (the CLI's defaults: 2,000 resamples,
    # seed 0), read in one pass over the store
    for row in compare_pairs(store.con, pairs, CompareOptions(runs=[], metrics=COMPARED)):
        key = row.metric.key
        res.reject.setdefault(key, Tally()).add(None if row.p is None else row.p < ALPHA)
        res.cover.setdefault(f"Δ {key}", Tally()).add(
            _covers(row.diff.low, row.diff.high, truth[key]))
    # `bench report pass-k` over every baseline run at once: one row a run
    table = pass_k(ReportContext(store.con, runs[::2])).tables[0]
    cols = [c.key for c in table.columns]
    for cells in table.rows:
        named = dict(zip(cols, cells, strict=True))
        for name, key in HEADLINE:
            est = named[key]
            res.cover.setdefault(name, Tally()).add(_covers(est.low, est.high, truth[name]))
    store.con.close()
    res.seconds = time.perf_counter() - started
    return res


# --------------------------------------------------------------------------- the table


def mc_interval(hits: int, n: int) -> tuple[float, float]:
    from benchpack.reports.stats import clopper_pearson

    return clopper_pearson(hits, n, LEVEL) if n else (0.0, 1.0)


def _rate(t: Tally) -> str:
    judged = t.n - t.refused
    if not judged:
        return "refused"
    lo, hi = mc_interval(t.hits, judged)
    text = f"{t.hits / judged:6.1%} [{lo:5.1%}, {hi:5.1%}]"
    return text + (f" ({t.refused / t.n:.0%} refused)" if t.refused else "")


def verdict(d: Design, kind: str, t: Tally) -> str:
    """`ok` / `MISSED` against issue 25's targets: an A/A rejection rate whose Monte-Carlo
    interval lies above 5 %, or a coverage whose interval lies below 93 %, is missed. Each
    figure at 95 %, as the targets are stated: over the 150 figures of a full run, a chance
    miss of a figure right at its target is to be expected now and then at a small `--reps`
    (the first 200 replications of "episodes of 3" give 8.5 % false positives, all 1,000
    give 4.7 %); rerun with more replications before believing one."""
    judged = t.n - t.refused
    if not judged:
        return "refused"
    lo, hi = mc_interval(t.hits, judged)
    if kind == "reject":
        return "power" if d.shift else ("ok" if lo <= ALPHA else "MISSED")
    return "ok" if hi >= 0.93 else "MISSED"


def table(results: list[Result]) -> list[str]:
    lines = [f"{'design':<40} {'figure':<11} {'what':<15} {'rate [MC 95 %]':<30} verdict"]
    for r in results:
        for key, t in r.reject.items():
            what = "power" if r.design.shift else "false positive"
            lines.append(f"{r.design.name:<40} {key:<11} {what:<15} {_rate(t):<30} "
                         f"{verdict(r.design, 'reject', t)}")
        for key, t in r.cover.items():
            lines.append(f"{r.design.name:<40} {key:<11} {'coverage':<15} {_rate(t):<30} "
                         f"{verdict(r.design, 'cover', t)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--designs", nargs="*", help="substrings of design names to run")
    ap.add_argument("--json", help="also write the counts as JSON to this file")
    args = ap.parse_args(argv)
    chosen = [d for d in designs()
              if not args.designs or any(s in d.name for s in args.designs)]
    print(f"{args.reps} replications per design, seed {args.seed}; tests at α = {ALPHA}, "
          f"intervals at {LEVEL:.0%}")
    results = []
    for d in chosen:
        r = run_design(d, args.reps, args.seed)
        results.append(r)
        print("\n".join(table([r])[1 if results[:-1] else 0:]), flush=True)
        print(f"  ({r.seconds:.1f} s)", file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump([{"design": r.design.name,
                        "reject": {k: vars(t) for k, t in r.reject.items()},
                        "cover": {k: vars(t) for k, t in r.cover.items()}} for r in results],
                      fh, indent=1)
    missed = sum(line.endswith("MISSED") for line in table(results))
    print(f"{missed} figure(s) missed the targets (each judged at 95 %: see `verdict`)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
