"""When `bench report agreement`'s Krippendorff α interval cannot be trusted, and whether
`stats.alpha_caution` says so: the designs and generator of `alpha_coverage.py` (2 or 2-4
raters, ordinal and two labels, balanced and 97 % PASS/YES, α 0.3 / 0.7 / 0.95, 50-1,000
sessions), the interval the report prints (`stats.krippendorff_alpha_ci` with
`ALPHA_EXACT_MAX`: the percentile bootstrap up to 400 sessions, the jackknife above), and per
replication the counts a warning can read off the summed coincidences: disagreeing pairable
values (`disagree`), pairable values off the most common label (`n` minus the largest margin),
the sessions holding a disagreement or a value off the most common label.

Printed per design: coverage % of the nominal 95 % interval over every replication, how often
`alpha_caution` fires, coverage where it stays silent and where it fires (each with its count);
then the rule's error rates: how often it fires on designs that cover ≥ 93 %, how often it is
silent on designs that do not, and the designs whose silent coverage is below 93 % (by more
than Monte-Carlo noise: the point + 1.96 SE). The thresholds (`ALPHA_MIN_DISAGREEING`,
`ALPHA_MIN_OFF_MODE`) were chosen from a dump of this script (`--dump`, then `--load` it with
other thresholds via `--min-disagreeing` / `--min-off-mode`).

Usage: python benchmarks/alpha_trust.py [--reps 1000] [--resamples 1000] [--seed 0]
           [--dump FILE | --load FILE] [--min-disagreeing N] [--min-off-mode N]
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alpha_coverage import ALPHAS, RATERS, SCALES, sessions_units, solve_q, true_alpha
from benchpack.reports.agreement import ALPHA_EXACT_MAX
from benchpack.reports.stats import (
    ALPHA_MIN_DISAGREEING,
    ALPHA_MIN_OFF_MODE,
    alpha_counts,
    krippendorff_alpha_ci,
)

SESSIONS = (50, 100, 200, 400, 1000)


def counts_of(units: list[list[float]], k: int) -> dict[str, Any]:
    rows = np.asarray(units).reshape(len(units), k, k)
    total = rows.sum(axis=0)
    margins = total.sum(axis=1)
    modal = int(np.argmax(margins))
    off = rows.sum(axis=(1, 2)) - np.trace(rows, axis1=1, axis2=2)
    nonmodal = rows.sum(axis=2).sum(axis=1) - rows.sum(axis=2)[:, modal]
    disagree, _ = alpha_counts(total.tolist())
    return {"n": float(margins.sum()), "disagree": disagree,
            "margins": margins.tolist(), "s_disagree": int((off > 1e-12).sum()),
            "s_nonmodal": int((nonmodal > 1e-12).sum()), "total": total.ravel().tolist()}


def simulate(reps: int, resamples: int, seed: int, out: Any, only: int | None = None,
             sessions_of: tuple[int, ...] = SESSIONS) -> None:
    """One JSON line per replication to `out`; `only`: that design of the grid alone."""
    grid = list(itertools.product(SCALES, ("balanced", "skewed"), ALPHAS, RATERS))
    for i, (scale, skew, target, raters) in enumerate(grid):
        if only is not None and i != only:
            continue
        prevalence = next(p for p in SCALES[scale] if (p == "balanced") == (skew == "balanced"))
        kinds = SCALES[scale][prevalence]
        q = solve_q(kinds, target)
        truth = true_alpha(kinds, q)
        k = len(kinds[0])
        cats = ("FAIL", "PARTIAL", "PASS") if k == 3 else ("NO", "YES")
        for sessions in sessions_of:
            start = time.perf_counter()
            rng = np.random.default_rng(seed * 1_000_003 + i * 1009 + sessions)
            for _ in range(reps):
                units = sessions_units(rng, kinds, q, sessions, raters)
                ci = krippendorff_alpha_ci(units, "ordinal", cats, resamples=resamples, seed=0,
                                           exact_max=ALPHA_EXACT_MAX)
                jk = krippendorff_alpha_ci(units, "ordinal", cats, resamples=resamples, seed=0,
                                           exact_max=0, caution=False)
                raw = ci if ci.caution is None else krippendorff_alpha_ci(
                    units, "ordinal", cats, resamples=resamples, seed=0,
                    exact_max=ALPHA_EXACT_MAX, caution=False)
                rec = {"design": i, "scale": scale, "prevalence": prevalence, "alpha": target,
                       "raters": raters, "sessions": sessions, "truth": truth,
                       "estimate": ci.estimate, "low": ci.low, "high": ci.high,
                       "method": ci.method, "raw_low": raw.low, "raw_high": raw.high,
                       "jk_low": jk.low, "jk_high": jk.high,
                       "jk_method": jk.method, "caution": ci.caution, **counts_of(units, k)}
                out.write(json.dumps(rec) + "\n")
            out.flush()
            print(f"{scale:11s} {prevalence:9s} {target:4.2f} {raters:4s} {sessions:5d} "
                  f"({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)


def fires(rec: dict[str, Any], min_disagreeing: float, min_off_mode: float) -> bool:
    """`stats.alpha_caution`'s rule at these thresholds, from the counts it reads."""
    return bool(rec["disagree"] < min_disagreeing
                or rec["n"] - max(rec["margins"]) < min_off_mode)


def table(records: list[dict[str, Any]], min_disagreeing: float = ALPHA_MIN_DISAGREEING,
          min_off_mode: float = ALPHA_MIN_OFF_MODE) -> tuple[list[str], dict[str, Any]]:
    """The per-design lines and the rule's error rates over the replications with an
    interval. "before": the resampled interval as it was (`caution=False`); "after": the
    printed one (widened where the rule fires; the same where it is silent)."""
    designs: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for rec in records:
        if rec["low"] is not None and rec["high"] is not None:
            key = (rec["scale"], rec["prevalence"], rec["alpha"], rec["raters"], rec["sessions"])
            designs.setdefault(key, []).append(rec)
    lines = []
    fine = [0, 0]  # replications of designs covering ≥ 93 % before: fired, all
    poor = [0, 0]  # of designs below 93 % before: silent, all
    short = []  # silent coverage below 93 % beyond noise
    after_short = []  # printed coverage below 93 % beyond noise
    for key, recs in designs.items():
        before = [r.get("raw_low", r["low"]) <= r["truth"] <= r.get("raw_high", r["high"])
                  for r in recs]
        after = [r["low"] <= r["truth"] <= r["high"] for r in recs]
        fire = [fires(r, min_disagreeing, min_off_mode) for r in recs]
        silent = [h for h, f in zip(before, fire, strict=True) if not f]
        fired = [(h, g) for h, g, f in zip(before, after, fire, strict=True) if f]
        cover = sum(before) / len(before)
        if cover >= 0.93:
            fine[0] += len(fired)
            fine[1] += len(recs)
        else:
            poor[0] += len(silent)
            poor[1] += len(recs)
        quiet = sum(silent) / len(silent) if silent else math.nan
        if silent and _below(quiet, len(silent)):
            short.append(key)
        printed = sum(after) / len(after)
        if _below(printed, len(after)):
            after_short.append(key)
        loud = (f"{100 * sum(h for h, _ in fired) / len(fired):5.1f} → "
                f"{100 * sum(g for _, g in fired) / len(fired):5.1f}" if fired
                else "      –      ")
        lines.append(f"{key[0]:10s} {key[1]:8s} {key[2]:4.2f} {key[3]:3s} {key[4]:5d}  "
                     f"{100 * cover:5.1f} → {100 * printed:5.1f}  "
                     f"{100 * len(fired) / len(recs):5.1f}  "
                     + (f"{100 * quiet:5.1f}" if silent else "    –")
                     + f" ({len(silent):4d})  {loud} ({len(fired):4d})")
    return lines, {"fires_on_fine": fine[0] / fine[1] if fine[1] else 0.0,
                   "silent_on_poor": poor[0] / poor[1] if poor[1] else 0.0,
                   "short": short, "after_short": after_short, "designs": len(designs)}


def _below(share: float, n: int) -> bool:
    """Below 93 % by more than Monte-Carlo noise (the point + 1.96 SE, the SE at least that
    of 93 %)."""
    return share + 1.96 * math.sqrt(max(share * (1 - share), 0.93 * 0.07) / n) < 0.93


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dump", help="write one JSON line per replication here")
    ap.add_argument("--load", help="read such a dump instead of simulating")
    ap.add_argument("--min-disagreeing", type=float, default=ALPHA_MIN_DISAGREEING)
    ap.add_argument("--min-off-mode", type=float, default=ALPHA_MIN_OFF_MODE)
    args = ap.parse_args()
    if args.load is not None:
        with open(args.load) as f:
            records = [json.loads(line) for line in f]
    else:
        buffer = io.StringIO()
        simulate(args.reps, args.resamples, args.seed, buffer)
        if args.dump:
            Path(args.dump).write_text(buffer.getvalue())
        records = [json.loads(line) for line in buffer.getvalue().splitlines()]
    lines, rates = table(records, args.min_disagreeing, args.min_off_mode)
    print(f"rule: fewer than {args.min_disagreeing:g} disagreeing pairable values or fewer "
          f"than {args.min_off_mode:g} off the most common label")
    print("scale      prev.    α    raters sess.  cover before → after  fires %  "
          "silent cover (n)  fired: before → after (n)")
    print("\n".join(lines))
    print(f"fires on {100 * rates['fires_on_fine']:.1f} % of the replications of designs "
          f"covering ≥ 93 %; silent on {100 * rates['silent_on_poor']:.1f} % of those of "
          f"designs below; silent coverage below 93 % beyond Monte-Carlo noise on "
          f"{len(rates['short'])} of {rates['designs']} designs {rates['short']}; the printed "
          f"interval's on {len(rates['after_short'])} {rates['after_short']}")


if __name__ == "__main__":
    main()
