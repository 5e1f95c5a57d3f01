"""Coverage of `bench report agreement`'s Kendall τ interval (rank stability: the agents'
rankings under two judges), simulated with a known truth through `validity.kendall_tau_ci`,
the function the report calls.

What is simulated. K agents pass each trigger with probability p_k = 0.3 … 0.7 (evenly spaced)
under judge A. Judge B scores the same agents either with p_k ± `shift` (odd agents up, even
agents down; the first six designs, the script's original ones) or with the pairs of
neighbours (i, i + 1) listed in `swaps` crossed: their mean kept, B's gap between them `gap`
times the spacing, reversed (1: their p exchanged; 0.5: half as far apart). The true τ-b
between the two rankings is known: 1 with no shift and no swap, 1 − 2·(swaps) / C(K, 2)
otherwise (0.8-0.94 for the designs below). Each agent runs the same `sessions` sessions of
1-4 triggers; a fifth of the sessions have one trigger SKIPPED, in no N (a unit is (Σ score,
scored triggers), as the report counts it). Each judge's verdicts are independent draws — the
worst case: judges re-judging the same transcripts share the agent's own noise. `--agree R`
runs the designs with that shared: B's verdict on a trigger is A's with probability R, else
an independent draw at the rate (p_B − R·p_A) / (1 − R) that keeps B's rate p_B.

Printed per design: the share of replications whose 95 % interval holds the true τ, with its
normal Monte-Carlo margin, and the mean width, for the percentile interval
(`kendall_tau_ci(caution=False)`) and for the interval the report prints (its upper end raised
by `stats.tau_upper`), and how often the report's was raised. Target (issue 25's for
intervals): coverage ≥ 93 %.

With 9 or more agents, also the share of replications the report marks ‡ as not to be
trusted (`stats.tau_caution`) and the report's coverage over the others.

Usage: python benchmarks/tau_coverage.py [--reps 1000] [--resamples 1000] [--seed 0]
           [--only INDEX …] [--wide | --map] [--agree R]
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass

from benchpack.reports.stats import TAU_WIDE_AGENTS, tau_upper
from benchpack.reports.validity import kendall_tau_b, kendall_tau_ci


@dataclass(frozen=True)
class Design:
    agents: int
    sessions: int
    shift: float = 0.0
    swaps: tuple[int, ...] = ()
    gap: float = 1.0

    def rates(self) -> tuple[list[float], list[float]]:
        """(p under A, p under B) of each agent."""
        pa = [0.3 + 0.4 * k / (self.agents - 1) for k in range(self.agents)]
        if self.shift:
            return pa, [p + (self.shift if k % 2 else -self.shift) for k, p in enumerate(pa)]
        pb = list(pa)
        spacing = 0.4 / (self.agents - 1)
        for i in self.swaps:
            mid = (pa[i] + pa[i + 1]) / 2
            pb[i], pb[i + 1] = mid + self.gap * spacing / 2, mid - self.gap * spacing / 2
        return pa, pb


def _grid(sessions: int) -> list[Design]:
    out = [Design(k, sessions) for k in (5, 6, 7, 8)]
    for k, swaps in ((5, (2,)), (6, (2,)), (7, (3,)), (7, (1, 4)), (8, (1, 5))):
        out += [Design(k, sessions, swaps=swaps), Design(k, sessions, swaps=swaps, gap=0.5)]
    return out


DESIGNS = (Design(4, 50, 0.08), Design(6, 50, 0.08), Design(6, 200, 0.08), Design(4, 50),
           Design(6, 50), Design(6, 200), *_grid(50), *_grid(200))
"""The script's first six designs, then 5-8 agents at true τ 1 and 0.8-0.9, 50 and 200
sessions."""
WIDE = tuple(Design(k, n, swaps=swaps) for n in (50, 200) for k in (10, 12)
             for swaps in ((), (2, k - 4)))
"""`--wide`: 10 and 12 agents, beyond what the rule was chosen on."""
MAP = tuple(Design(k, n, s, sw) for k in (9, 10, 11, 12) for n in (50, 100, 200)
            for s, sw in ((0.0, ()), (0.0, (2, k - 4)), (0.1, ()))) + tuple(
    Design(k, n, 0.1) for k in (4, 5, 6, 7, 8) for n in (50, 100, 200))
"""`--map`: 9-12 agents at 50, 100 and 200 sessions, τ 1, two pairs crossed (0.89-0.94) and
B shifted ± 0.1 (0.61-0.69); then 4-8 agents shifted ± 0.1 (τ 0.60-0.73). The even-numbered
designs of 9-12 agents chose `stats.TAU_MAX_SPREAD`, the odd ones checked it."""


@dataclass(frozen=True)
class Coverage:
    truth: float
    done: int
    """Replications with an interval."""
    held: float
    width: float
    """The percentile interval's coverage and mean width."""
    held_raised: float
    width_raised: float
    """The report's interval (`tau_upper`)."""
    raised: float
    """Share of replications whose upper end `tau_upper` raised."""
    marked: float = 0.0
    """Share of replications marked as not to be trusted (`stats.tau_caution`)."""
    held_kept: float | None = None
    """The report's coverage where not marked (None: every replication marked)."""


def coverage(design: Design, reps: int, resamples: int, seed: int,
             agree: float = 0.0) -> Coverage:
    rng = random.Random(seed)
    pa, pb = design.rates()
    truth = kendall_tau_b(pa, pb)
    assert truth is not None
    if agree:
        own = [(b - agree * a) / (1 - agree) for a, b in zip(pa, pb, strict=True)]
        if not all(0 <= p <= 1 for p in own):
            raise ValueError(f"--agree {agree}: B's rates cannot be kept")
    held = width = done = held_r = width_r = raised = marked = held_kept = 0.0
    for r in range(reps):
        under_a: dict[str, dict[str, tuple[float, float]]] = {}
        under_b: dict[str, dict[str, tuple[float, float]]] = {}
        for k in range(design.agents):
            a, b = {}, {}
            for s in range(design.sessions):
                n = rng.randint(1, 4)
                scored = n - 1 if n > 1 and rng.random() < 0.2 else n  # one SKIPPED
                if agree:
                    va = [rng.random() < pa[k] for _ in range(scored)]
                    vb = [v if rng.random() < agree else rng.random() < own[k] for v in va]
                    a[f"s{s}"], b[f"s{s}"] = (float(sum(va)), float(scored)), (
                        float(sum(vb)), float(scored))
                    continue
                a[f"s{s}"] = (float(sum(rng.random() < pa[k] for _ in range(scored))),
                              float(scored))
                b[f"s{s}"] = (float(sum(rng.random() < pb[k] for _ in range(scored))),
                              float(scored))
            under_a[f"agent{k}"], under_b[f"agent{k}"] = a, b
        ci = kendall_tau_ci(under_a, under_b, resamples=resamples, seed=seed * 100_003 + r,
                            caution=False)
        untrusted = None
        if design.agents >= TAU_WIDE_AGENTS:  # the mark needs the report's own call
            untrusted = kendall_tau_ci(under_a, under_b, resamples=resamples,
                                       seed=seed * 100_003 + r).untrusted
        if ci.low is None or ci.high is None or ci.bias is None:
            continue
        done += 1
        held += ci.low <= truth <= ci.high
        width += ci.high - ci.low
        high, why = tau_upper(ci.low, ci.high, ci.bias, ci.agents)
        held_r += ci.low <= truth <= high
        width_r += high - ci.low
        raised += why is not None
        marked += untrusted is not None
        held_kept += untrusted is None and ci.low <= truth <= high
    kept = done - marked
    return Coverage(truth, int(done), held / done, width / done, held_r / done,
                    width_r / done, raised / done, marked / done,
                    held_kept / kept if kept else None)


def margin(p: float, n: int) -> float:
    return 1.96 * (p * (1 - p) / n) ** 0.5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", type=int, nargs="*", help="these designs (indices) alone")
    ap.add_argument("--wide", action="store_true", help="10 and 12 agents instead")
    ap.add_argument("--map", action="store_true", help="9-12 agents and moderate τ instead")
    ap.add_argument("--agree", type=float, default=0.0,
                    help="B copies A's verdict with this probability (default 0: independent)")
    args = ap.parse_args()
    designs = MAP if args.map else WIDE if args.wide else DESIGNS
    print("   # agents sessions shift swaps gap  true τ | percentile: coverage (± MC) width | "
          "report's (raised): coverage (± MC) width raised | reps | marked ‡, coverage "
          "where not")
    for i, d in enumerate(designs):
        if args.only and i not in args.only:
            continue
        c = coverage(d, args.reps, args.resamples,
                     args.seed + i + (100 if args.wide else 200 if args.map else 0), args.agree)
        m, mr = margin(c.held, c.done), margin(c.held_raised, c.done)
        flag = "" if c.held_raised + mr >= 0.93 else "  below 93 %"
        swaps = ",".join(map(str, d.swaps)) or "-"
        print(f"{i:4d} {d.agents:6d} {d.sessions:8d} {d.shift:5.2f} {swaps:>5s} {d.gap:3.1f} "
              f"{c.truth:7.3f} | {c.held:6.3f} ± {m:.3f} {c.width:6.3f} | "
              f"{c.held_raised:6.3f} ± {mr:.3f} {c.width_raised:6.3f} {c.raised:6.3f} | "
              f"{c.done:5d}{flag}"
              + (f" | {c.marked:6.3f} " + ("-" if c.held_kept is None else f"{c.held_kept:6.3f}")
                 if d.agents >= TAU_WIDE_AGENTS else ""), flush=True)


if __name__ == "__main__":
    main()
