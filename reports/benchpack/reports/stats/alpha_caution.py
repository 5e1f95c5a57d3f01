"""When Krippendorff's α's interval cannot be trusted: too few disagreements, or too few
ratings off the most common label, for resampling the units to see how α varies.

α's bootstrap and jackknife intervals resample units; α rests on the pairable values that
disagree and on those of the rarer labels. When a sample holds a handful of them, most
resamples hold the same handful or none, and the interval is far too narrow (an α of 1 with a
rare label is the point [1, 1]). Simulated with a known α (`benchmarks/alpha_trust.py`, the
designs of `alpha_coverage.py`, 1,000 replications each, table in benchmarks/README.md): with
97 % PASS and α 0.95 the report's nominal 95 % interval covered 28-38 % at 50 sessions and
75-85 % at 200. The thresholds below were chosen there: where neither count is below its
threshold the interval covered ≥ 93 % on every design within Monte-Carlo noise; where one is,
the interval is marked, not dropped (on some designs it still covers)."""

from __future__ import annotations

import math
from collections.abc import Sequence

ALPHA_MIN_DISAGREEING = 8
"""Disagreeing pairable values (the off-diagonal total of the coincidence matrix: two raters
who disagree on one item add 2) below which α's interval is marked."""
ALPHA_MIN_OFF_MODE = 40
"""Pairable values not of the most common label (the coincidence total minus its largest
margin) below which α's interval is marked."""


def alpha_counts(coincidence: Sequence[Sequence[float]]) -> tuple[float, float]:
    """(disagreeing pairable values, pairable values off the most common label) of a summed
    coincidence matrix (rows and columns one category each, as
    `krippendorff_alpha_coincidence` takes it)."""
    k = len(coincidence)
    margins = [math.fsum(row) for row in coincidence]
    total = math.fsum(margins)
    disagreeing = math.fsum(coincidence[c][d] for c in range(k) for d in range(k) if c != d)
    return disagreeing, total - max(margins, default=0.0)


def alpha_caution(coincidence: Sequence[Sequence[float]]) -> str | None:
    """Why α's interval from this summed coincidence matrix cannot be trusted, or None: fewer
    than `ALPHA_MIN_DISAGREEING` disagreeing pairable values or fewer than
    `ALPHA_MIN_OFF_MODE` pairable values off the most common label."""
    disagreeing, off_mode = alpha_counts(coincidence)
    why = []
    if disagreeing < ALPHA_MIN_DISAGREEING:
        why.append(f"{disagreeing:g} disagreeing pairable values (fewer than "
                   f"{ALPHA_MIN_DISAGREEING})")
    if off_mode < ALPHA_MIN_OFF_MODE:
        why.append(f"{off_mode:g} pairable values off the most common label (fewer than "
                   f"{ALPHA_MIN_OFF_MODE})")
    if not why:
        return None
    return "; ".join(why) + ": too few for the interval to be trusted"
