"""`benchmarks/stat_sim.py` at a tiny scale (so the simulation cannot rot): its truths by hand,
its store read by the CLI's code, and its verdicts. The measured rates (1,000 replications
a design) are in reports/README.md; this only checks the machinery."""

from __future__ import annotations

import random

import pytest

from conftest import benchmark_script


@pytest.fixture(scope="module")
def sim():  # type: ignore[no-untyped-def]
    return benchmark_script("stat_sim")


def test_truths_by_hand(sim) -> None:  # type: ignore[no-untyped-def]
    d = sim.Design("x", 6, "independent", True)
    t = sim.truths(d)
    # mixed levels 0.1 … 0.9: B gains 0.15 on four, 0.07 on 0.9 (capped at 0.97)
    assert t["pass"] == pytest.approx((4 * 0.15 + 0.07) / 5)
    assert t["pass@1"] == pytest.approx(0.5)
    assert t["pass^k"] == pytest.approx(sum(p ** 3 for p in (0.1, 0.3, 0.5, 0.7, 0.9)) / 5)
    det = sim.truths(sim.Design("y", 6, "deterministic", False, "easy"))
    assert det["pass@k"] == det["pass^k"] == det["pass@1"] == pytest.approx(0.95)
    assert det["flip rate"] == 0.0 and det["pass"] == 0.0


def test_the_store_is_read_by_the_cli_code(sim) -> None:  # type: ignore[no-untyped-def]
    """The rows `compare_pairs` gives a pair are those `bench compare A B` computes."""
    from benchpack.reports.compare import CompareOptions, compare

    d = sim.Design("z", 6, "deterministic", True)
    runs, rows = sim.simulate(random.Random(1), d, 2)
    store = sim.SimStore()
    store.add(runs, rows)
    found, _ = compare(store.con, CompareOptions(runs=runs[:2], metrics=("score", "pass")))
    assert [r.metric.key for r in found] == ["score", "pass"]
    assert all(r.diff.clusters == 6 and r.diff.n == 6 for r in found)
    assert all(r.test.startswith(("sign-flip", "–")) for r in found)


def test_a_small_run_and_its_verdicts(sim) -> None:  # type: ignore[no-untyped-def]
    res = sim.run_design(sim.Design("A/A G=6 deterministic", 6, "deterministic", False), 8, 0)
    assert set(res.reject) == {"score", "pass"}
    assert set(res.cover) == {"Δ score", "Δ pass", "mean score", "pass@1", "pass@k", "pass^k",
                              "flip rate"}
    assert all(t.n == 8 for t in [*res.reject.values(), *res.cover.values()])
    # the verdicts against the targets: an A/A rate whose Monte-Carlo interval lies above 5 %
    # is missed, a coverage whose interval lies below 93 %
    aa = sim.Design("a", 6, "independent", False)
    assert sim.verdict(aa, "reject", sim.Tally(1000, 50)) == "ok"
    assert sim.verdict(aa, "reject", sim.Tally(1000, 90)) == "MISSED"
    assert sim.verdict(aa, "cover", sim.Tally(1000, 925)) == "ok"
    assert sim.verdict(aa, "cover", sim.Tally(1000, 880)) == "MISSED"
    assert sim.verdict(aa, "cover", sim.Tally(10, 0, 10)) == "refused"
    assert any("MC 95 %" in line for line in sim.table([res]))
