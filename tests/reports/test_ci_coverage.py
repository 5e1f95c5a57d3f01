"""The proportion interval keeps its promise where the percentile bootstrap does not
(`benchmarks/ci_coverage.py`, fewer simulated runs and a wide tolerance: ±2.5 points is about
4 standard errors of a coverage near 0.95 over 400 runs)."""

from __future__ import annotations

import pytest

from conftest import benchmark_script


@pytest.fixture(scope="module")
def bench():  # type: ignore[no-untyped-def]
    return benchmark_script("ci_coverage")


def _scenario(bench, name: str):  # type: ignore[no-untyped-def]
    return next(s for s in bench.SCENARIOS if s.name.startswith(name))


def test_pass_rate_095_at_n_10(bench) -> None:  # type: ignore[no-untyped-def]
    c = bench.coverage(_scenario(bench, "pass rate 0.95, n = 10"), 400, 500, 1)
    assert c.ours >= 0.93
    assert c.bootstrap < 0.6  # ~0.40: most resamples of 10 passes are all passes
    assert c.method == "clopper-pearson"


@pytest.mark.parametrize("name", ["pass rate 0.5, n = 10", "pass rate 0.5, n = 30",
                                  "pass rate 0.755"])
def test_proportions_cover_at_least_nominal(bench, name: str) -> None:  # type: ignore[no-untyped-def]
    c = bench.coverage(_scenario(bench, name), 400, 500, 2)
    assert c.ours >= 0.925


def test_skewed_scores_not_worse_than_the_bootstrap(bench) -> None:  # type: ignore[no-untyped-def]
    c = bench.coverage(_scenario(bench, "skewed"), 400, 500, 3)
    assert c.ours >= c.bootstrap - 0.01
