"""Issue 27: `bench run` starts and finishes while `bench view` is polled on every page
(`benchmarks/view_poll_bench.py`; measured there with 10 runs). Before, a run started while the
viewer served pages failed on DuckDB's lock (5 times out of 6 in the probe, 1 of 6 with this
script): the viewer's short read-only connections kept the writer out."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_runs_start_and_finish_while_every_page_is_polled(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from view_poll_bench import measure
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    row = measure(runs=3, pollers=3, work=tmp_path)
    assert row["runs_ok"] == 3, row["runs"]
    assert row["pages"] > 20 and row["pages_ok"] == row["pages"], row["not_ok"]
