"""benchpack.reports.stats against ProactBench's released data and published tables.

Reads the peer-data samples in place (never copied into the repository); skipped when they are
absent. ``BENCHPACK_PEER_DATA`` overrides the location.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from benchpack.reports.stats import (
    bootstrap_ci,
    cohen_kappa,
    confusion_matrix,
    krippendorff_alpha,
    trigger_rates,
)

PEER = Path(os.environ.get("BENCHPACK_PEER_DATA", "/work/shared/peer-data")) / "proactbench"
HUMAN = PEER / "dataset" / "human_eval"
EVAL = PEER / "dataset" / "eval"

pytestmark = pytest.mark.skipif(not PEER.is_dir(), reason=f"peer data not present at {PEER}")

ORDER = ["Fail", "Partial", "Pass"]
TYPES = ["EMERGENT", "CRITICAL", "RECOVERY"]


def _analysis() -> dict[str, Any]:
    stats: dict[str, Any] = json.loads((HUMAN / "analysis_stats.json").read_text())["per_trigger_type"]
    return stats


def _trigger_type(item_id: str) -> str:
    # the item id ends in the trigger turn; this split reproduces the released per-type rating
    # counts (83 / 83 / 109): turns 1–3 Emergent, 4–6 Critical, 7+ Recovery
    turn = int(item_id.rsplit("__t", 1)[1])
    return "EMERGENT" if turn <= 3 else "CRITICAL" if turn <= 6 else "RECOVERY"


def _ratings_by_type() -> dict[str, list[list[str]]]:
    by_item: dict[str, list[str]] = defaultdict(list)
    for path in sorted((HUMAN / "results").glob("A*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                by_item[row["item_id"]].append(row["score"])
    by_type: dict[str, list[list[str]]] = defaultdict(list)
    for item, scores in by_item.items():
        by_type[_trigger_type(item)].append(scores)
    return by_type


def _matrix(published: dict[str, Any]) -> list[list[int]]:
    cells = published["confusion_matrix"]
    return [[int(cells[r][c]) for c in ORDER] for r in ORDER]


@pytest.mark.parametrize("trigger_type", TYPES)
def test_consensus_kappa_reproduces_the_released_analysis(trigger_type: str) -> None:
    published = _analysis()[trigger_type]
    m = _matrix(published)
    assert sum(map(sum, m)) == published["n_items"]
    # the released figure is unweighted κ (linear/quadratic give different values)
    assert cohen_kappa(m) == pytest.approx(published["cohen_kappa_consensus_vs_judge"], abs=1e-12)
    items = [(r, c) for i, r in enumerate(ORDER) for j, c in enumerate(ORDER) for _ in range(m[i][j])]
    ci = bootstrap_ci(items, lambda s: cohen_kappa(confusion_matrix(s, ORDER)),
                      resamples=10_000, seed=2026)
    low, high = published["cohen_kappa_ci95"]
    assert ci.low == pytest.approx(low, abs=0.02)
    assert ci.high == pytest.approx(high, abs=0.02)


@pytest.mark.parametrize("trigger_type", TYPES)
def test_ordinal_alpha_reproduces_the_released_analysis_from_raw_ratings(trigger_type: str) -> None:
    published = _analysis()[trigger_type]
    units = _ratings_by_type()[trigger_type]
    assert sum(map(len, units)) == published["n_ratings"]
    alpha = krippendorff_alpha(units, "ordinal", categories=ORDER)
    assert alpha == pytest.approx(published["krippendorff_alpha"], abs=1e-12)
    ci = bootstrap_ci(units, lambda s: krippendorff_alpha(s, "ordinal", categories=ORDER),
                      resamples=10_000, seed=2026)
    low, high = published["krippendorff_alpha_ci95"]
    assert ci.low == pytest.approx(low, abs=0.02)
    assert ci.high == pytest.approx(high, abs=0.02)


def test_items_with_two_or_more_ratings_match_the_paper_table_9_counts() -> None:
    by_type = _ratings_by_type()
    counts = {t: sum(len(u) >= 2 for u in by_type[t]) for t in TYPES}
    assert counts == {"EMERGENT": 17, "CRITICAL": 14, "RECOVERY": 19}


# Paper Table 3 (1,000 trigger-level resamples): per model, for Overall / Emergent / Critical /
# Recovery: pass %, CI low, CI high, weighted %.
TABLE_3 = {
    "gpt-5.5": "61.5 57.4 65.4 69.8 68.7 62.7 75.1 73.1 75.4 69.8 80.6 83.2 37.2 30.4 44.0 50.0",
    "qwen__qwen3.5-397b-a17b":
        "52.5 48.6 56.3 60.6 72.9 66.3 78.9 76.9 63.0 57.0 68.7 73.5 17.0 12.1 22.5 26.6",
    "claude-opus-4-7":
        "51.9 48.1 55.8 60.6 72.1 66.2 78.1 78.6 58.6 52.6 64.7 70.5 22.5 16.8 28.8 29.6",
    "gemini-3.1-pro-preview":
        "50.4 46.5 54.3 58.3 70.2 63.1 76.8 77.3 65.5 59.5 71.6 76.5 11.5 7.3 16.2 16.5",
    "qwen__qwen3.5-9b":
        "48.0 43.6 52.2 57.0 72.8 66.1 78.9 77.2 51.4 44.3 58.4 64.6 15.4 10.3 21.2 24.7",
    "kimi-k2.6": "47.5 43.6 51.6 54.3 67.4 60.6 73.6 73.1 64.4 58.2 70.7 73.6 7.4 3.7 11.6 12.4",
    "xiaomi__mimo-v2.5-pro":
        "44.9 40.9 48.8 52.8 65.7 59.7 72.1 71.6 53.2 47.2 59.3 64.3 13.1 8.4 17.8 19.1",
    "deepseek__deepseek-v4-flash":
        "44.3 40.6 48.2 53.5 61.7 55.7 68.2 66.7 50.6 44.2 57.1 64.5 18.3 13.6 24.1 26.4",
    "gemini-2.5-pro":
        "42.5 38.5 46.6 50.3 66.2 59.7 72.1 73.1 48.3 41.8 55.2 62.1 10.5 6.3 14.7 12.0",
    "o4-mini-2025-04-16":
        "38.6 35.1 42.8 47.4 52.7 46.3 59.7 57.7 44.8 38.4 51.3 58.8 16.2 11.0 22.0 22.5",
    "gemini-2.5-flash":
        "35.3 31.4 38.9 44.2 60.7 53.2 67.2 65.7 37.9 31.5 44.0 55.0 5.2 2.6 8.4 8.6",
    "gpt-4o": "20.5 17.3 23.6 31.3 33.8 27.9 40.3 42.5 18.5 13.8 23.7 36.0 8.9 5.2 12.6 13.9",
    "meta-llama__llama-4-maverick":
        "13.1 10.6 15.9 22.5 22.4 16.4 28.4 29.1 14.2 9.9 19.0 31.9 2.1 0.5 4.2 4.2",
    "Qwen2.5-7B-Instruct":
        "11.5 9.0 14.1 21.6 21.9 15.9 27.4 31.8 6.5 3.9 9.9 17.9 6.8 3.7 10.5 15.4",
    "Llama-3.2-8B-Instruct":
        "11.2 8.7 13.6 20.5 25.9 19.9 32.8 37.3 6.9 3.9 10.3 18.8 1.0 0.0 2.6 5.0",
    "Qwen3-1.7B": "10.3 7.9 12.7 22.0 20.4 14.9 25.9 31.8 6.5 3.4 9.5 21.1 4.2 1.6 7.3 12.8",
}


def _counts(stats: dict[str, dict[str, int]], types: list[str]) -> tuple[int, int, int]:
    return (sum(stats[t]["PASS"] for t in types), sum(stats[t]["PARTIAL"] for t in types),
            sum(stats[t]["FAIL"] for t in types))


@pytest.mark.parametrize("model", sorted(TABLE_3))
def test_trigger_rates_reproduce_the_released_metrics_and_table_3(model: str) -> None:
    released = json.loads((EVAL / f"{model}_proactivity_bench_metrics.json").read_text())
    stats, metrics = released["aggregate_trigger_stats"], released["metrics"]
    table = [float(x) for x in TABLE_3[model].split()]
    for i, group in enumerate(["OVERALL", *TYPES]):
        r = trigger_rates(*_counts(stats, TYPES if group == "OVERALL" else [group]))
        key = f"eval/proactivity_{group.lower()}"
        assert r.pass_rate == pytest.approx(metrics[f"{key}_pass_rate"], abs=1e-12)
        assert r.weighted == pytest.approx(metrics[f"{key}_weighted_score"], abs=1e-12)
        if group != "OVERALL":
            assert r.partial_rate == pytest.approx(metrics[f"{key}_partial_rate"], abs=1e-12)
            assert r.n == metrics[f"{key}_total"]
        pass_pct, low, high, weighted_pct = table[4 * i : 4 * i + 4]
        assert round(100 * (r.pass_rate or 0), 1) == pass_pct
        assert round(100 * (r.weighted or 0), 1) == weighted_pct
        # one unit per trigger; Monte-Carlo noise on both sides keeps this approximate
        p, partial, fail = _counts(stats, TYPES if group == "OVERALL" else [group])
        ci = bootstrap_ci([[1.0]] * p + [[0.0]] * (partial + fail), resamples=1000, seed=0)
        assert 100 * (ci.low or 0) == pytest.approx(low, abs=1.5)
        assert 100 * (ci.high or 0) == pytest.approx(high, abs=1.5)
