"""When Krippendorff's α's interval cannot be trusted (`stats.alpha_caution`): the counts by
hand at both thresholds, the adversarial cases, the mark in the report's cells and JSON, and
`benchmarks/alpha_trust.py` (the simulation that chose the thresholds) at a tiny scale.

Hand computation (NO / YES, two raters, one item a session): an item where the raters
disagree adds 1 to (NO, YES) and 1 to (YES, NO), so 2 disagreeing pairable values; an item
both rate NO adds 2 to (NO, NO). 4 disagreeing items + 18 NO/NO + 30 YES/YES: 8 disagreeing
values, margins NO 4 + 36 = 40 and YES 4 + 60 = 64, so 40 values off the most common label
(YES): both exactly at their thresholds, no caution. One disagreeing item fewer: 6 (< 8).
One NO/NO item fewer: 38 off the most common label (< 40). Three raters on one item rating
(NO, NO, YES): each ordered pair counts 1/(m − 1) = ½, so (NO, YES) = 2·1·½ = 1, (YES, NO) = 1,
(NO, NO) = 2·1·½ = 1: 2 disagreeing values, 3 pairable values.
"""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from pathlib import Path

import pytest

from benchpack.reports import stats
from benchpack.reports.model import Column, Estimate
from benchpack.reports.render import UNTRUSTED, cell_text

YES_NO = ("NO", "YES")


def units(*raw: tuple[str, ...], scale: tuple[str, ...] = YES_NO) -> list[list[float]]:
    """Flattened coincidence matrices, one a unit, as `krippendorff_alpha` counts them."""
    k = len(scale)
    index = {c: i for i, c in enumerate(scale)}
    out = []
    for vals in raw:
        cells = [0.0] * (k * k)
        m = len(vals)
        for i, a in enumerate(vals):
            for j, b in enumerate(vals):
                if i != j:
                    cells[index[a] * k + index[b]] += 1 / (m - 1)
        out.append(cells)
    return out


def sample(disagree: int, no_no: int, yes_yes: int = 30) -> list[list[float]]:
    return units(*[("NO", "YES")] * disagree, *[("NO", "NO")] * no_no,
                 *[("YES", "YES")] * yes_yes)


def total(rows: list[list[float]]) -> list[list[float]]:
    cells = [sum(col) for col in zip(*rows, strict=True)]
    return [cells[:2], cells[2:]]


def test_counts_by_hand_at_both_thresholds() -> None:
    assert stats.ALPHA_MIN_DISAGREEING == 8 and stats.ALPHA_MIN_OFF_MODE == 40
    assert stats.alpha_counts(total(sample(4, 18))) == (8.0, 40.0)
    assert stats.alpha_caution(total(sample(4, 18))) is None
    assert stats.alpha_counts(total(sample(3, 18))) == (6.0, 39.0)
    why = stats.alpha_caution(total(sample(3, 19)))  # 6 disagreeing, 3 + 38 = 41 off
    assert why == ("6 disagreeing pairable values (fewer than 8): too few for the interval "
                   "to be trusted")
    why = stats.alpha_caution(total(sample(4, 17)))
    assert why == ("38 pairable values off the most common label (fewer than 40): too few "
                   "for the interval to be trusted")
    assert stats.alpha_counts(total(units(("NO", "NO", "YES")))) == (2.0, 1.0)


def test_the_interval_carries_the_caution_on_both_methods() -> None:
    for exact_max in (None, 0):
        fine = stats.krippendorff_alpha_ci(sample(4, 18), "ordinal", YES_NO, resamples=200,
                                           exact_max=exact_max)
        assert fine.low is not None and fine.caution is None
        marked = stats.krippendorff_alpha_ci(sample(4, 17), "ordinal", YES_NO, resamples=200,
                                             exact_max=exact_max)
        assert marked.caution is not None and "38 pairable values" in marked.caution
        # the numbers are the unmarked computation's: the mark is all that changes
        assert marked.method == ("jackknife" if exact_max == 0 else "percentile")


def test_alpha_one_with_a_rare_label_is_marked() -> None:
    """No disagreement at all: α = 1 and every resample that has α has 1, so the interval is
    the point — the case that covered 28 % in the simulation."""
    for exact_max in (None, 0):
        ci = stats.krippendorff_alpha_ci(sample(0, 2, 50), "ordinal", YES_NO, resamples=200,
                                         exact_max=exact_max)
        assert ci.estimate == ci.low == ci.high == 1.0
        assert ci.caution is not None and ci.caution.startswith("0 disagreeing")


def test_one_label_and_one_session_have_no_interval_to_mark() -> None:
    one_label = stats.krippendorff_alpha_ci(units(*[("YES", "YES")] * 30), "ordinal", YES_NO,
                                            resamples=200)
    assert one_label.estimate is None and one_label.low is None and one_label.caution is None
    single = stats.krippendorff_alpha_ci(units(("NO", "YES")), "ordinal", YES_NO)
    assert single.low is None and single.caution is None


def test_two_sessions_are_marked() -> None:
    ci = stats.krippendorff_alpha_ci(units(("NO", "YES"), ("YES", "YES")), "ordinal", YES_NO,
                                     resamples=200)
    assert ci.estimate == pytest.approx(0.0)  # 1 − 3 · 2 / (2 · 1 · 3)
    assert ci.low is not None and ci.caution is not None
    assert "2 disagreeing" in ci.caution and "1 pairable values off" in ci.caution


def test_ordinal_three_labels_counts_every_off_diagonal_cell() -> None:
    scale = ("FAIL", "PARTIAL", "PASS")
    rows = units(("FAIL", "PASS"), ("PARTIAL", "PASS"), ("PASS", "PASS"), scale=scale)
    cells = [sum(col) for col in zip(*rows, strict=True)]
    matrix = [cells[0:3], cells[3:6], cells[6:9]]
    # 4 disagreeing values; margins FAIL 1, PARTIAL 1, PASS 4: 2 off the most common label
    assert stats.alpha_counts(matrix) == (4.0, 2.0)


def test_the_mark_in_text_and_json() -> None:
    column = Column("alpha", "α ordinal", "float")
    plain = Estimate(0.9, None, 0.8, 1.0, 50)
    marked = Estimate(0.9, None, 0.8, 1.0, 50, caution="why")
    assert cell_text(plain, column) == "0.90 [0.80, 1.00]"
    assert cell_text(marked, column) == f"0.90 [0.80, 1.00]{UNTRUSTED}"
    assert "caution" not in plain.as_dict()  # every other figure's JSON is as it was
    assert marked.as_dict()["caution"] == "why"
    # no interval shown, no mark
    assert cell_text(Estimate(0.9, None, None, None, 1, caution="why"), column) == "0.90"


@pytest.fixture(scope="module")
def trust():  # type: ignore[no-untyped-def]
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "alpha_trust.py"
    spec = importlib.util.spec_from_file_location("alpha_trust", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_simulation_at_a_tiny_scale(trust) -> None:  # type: ignore[no-untyped-def]
    """`benchmarks/alpha_trust.py` cannot rot: its rule is the library's (each replication's
    `caution` against the counts it dumped), and a design that fails today is flagged: two
    labels, 97 % YES, α 0.95, 2 raters, 50 sessions (it covered 28 % in 1,000 replications)."""
    out = io.StringIO()
    design = 22  # the grid's index of that design (scale, prevalence, α, raters)
    trust.simulate(6, 200, 0, out, only=design, sessions_of=(50, 1000))
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(records) == 12
    assert {(r["scale"], r["prevalence"], r["alpha"], r["raters"]) for r in records} == {
        ("two labels", "97% YES", 0.95, "2")}
    for r in records:
        assert trust.fires(r, stats.ALPHA_MIN_DISAGREEING, stats.ALPHA_MIN_OFF_MODE) == (
            r["caution"] is not None) or r["low"] is None
    small = [r for r in records if r["sessions"] == 50 and r["low"] is not None]
    assert small and all(r["caution"] is not None for r in small)
    lines, rates = trust.table(records)
    assert len(lines) == rates["designs"] == 2
    assert 0.0 <= rates["fires_on_fine"] <= 1.0 and 0.0 <= rates["silent_on_poor"] <= 1.0
