"""Staged disclosure's ground-truth graph: the agent's graph parsed (every repair and refusal),
the coverage metrics hand-computed, the match grader and the graph judge's output checks.
The end-to-end runs are in `test_staged_disclosure.py`."""

from __future__ import annotations

import pytest

from benchpack.runtime.graders.graph import (
    Coverage,
    Triple,
    match_coverage,
    norm_tokens,
    parse_graph,
    score_graph,
)
from benchpack.runtime.judges.base import ParseError
from benchpack.runtime.judges.staged import parse_coverage

# --------------------------------------------------------------------------- graph parsing

T = '{"head": "A", "relation": "r", "tail": "B"}'


@pytest.mark.parametrize(("text", "status", "n"), [
    (f"[{T}]", "ok", 1),
    ('[["A", "r", "B"], ["C", "r", 1713]]', "ok", 2),
    (f"```json\n[{T}]\n```", "ok", 1),
    (f'{{"qid": "task_1", "total": 1, "triplets": [{T}]}}', "ok", 1),
    (f'{{"triples": [{T}]}}', "ok", 1),
    (f"Here is the graph:\n[{T}]\nHope this helps!", "repaired", 1),
    (f"Sure.\n```json\n[{T}]\n```", "repaired", 1),
    (f'[{T}, {{"head": "A", "relation": "r"}}, ["x", "y"]]', "repaired", 1),
    (f"[{T}, {T.lower()}]", "ok", 1),                       # a duplicate, merged
    (f"[{T},", "malformed", 0),                              # truncated
    (f"[{T},]", "malformed", 0),                             # trailing comma
    ("[{'head': 'A', 'relation': 'r', 'tail': 'B'}]", "malformed", 0),
    ('{"answer": "A r B"}', "malformed", 0),
    ('[{"head": "A", "relation": "r", "tail": null}]', "malformed", 0),
    ("I could not build a graph.", "malformed", 0),
    ("[]", "empty", 0),
    ("   ", "empty", 0),
])
def test_parse_graph(text: str, status: str, n: int) -> None:
    parsed = parse_graph(text)
    assert (parsed.status, len(parsed.triples)) == (status, n), parsed.note


def test_parse_graph_keeps_values_and_counts_repairs() -> None:
    parsed = parse_graph('[["C", "published", 1713], {"head": " A ", "relation": "r", '
                         '"tail": "B", "source": "x"}, {"head": "a", "relation": "R", '
                         '"tail": "b"}, {"head": "A"}]')
    assert parsed.triples == [Triple("C", "published", "1713"), Triple("A", "r", "B")]
    assert parsed.status == "repaired" and parsed.duplicates == 1
    assert parsed.note == "dropped 1 item(s) that are not triples"


# --------------------------------------------------------------------------- metrics


def test_metrics_with_collective_and_compositional_support() -> None:
    cov = [Coverage(True, "direct", (0,)), Coverage(True, "collective", (1, 2)),
           Coverage(True, "compositional", (2, 3)), Coverage(False)]
    s = score_graph(cov, 5)
    # recall 3/4; predicted 0-3 support something, 4 does not: precision 4/5
    assert (s.recall, s.precision, s.covered, s.valid_predicted) == (0.75, 0.8, 3, 4)
    assert s.f1 == pytest.approx(2 * 0.75 * 0.8 / 1.55)


def test_metrics_duplicates_count_once() -> None:
    pred = parse_graph('[["Mill Room", "opens at", "7:30"], ["mill room", "Opens  at", "7:30"],'
                       ' ["Mill Room", "wifi", "fast"]]').triples
    assert len(pred) == 2
    s = score_graph(match_coverage([Triple("Mill Room", "opens at", "7:30")], pred), len(pred))
    assert (s.recall, s.precision) == (1.0, 0.5)
    assert s.f1 == pytest.approx(2 / 3)


@pytest.mark.parametrize("text", ["[]", "", '[{"head": "A", "relation": "r", "tail": "B"},'])
def test_empty_or_malformed_prediction_scores_zero(text: str) -> None:
    parsed = parse_graph(text)
    assert parsed.status in ("empty", "malformed")
    gt = [Triple("A", "r", "B"), Triple("C", "r", "D")]
    s = score_graph([Coverage(False) for _ in gt], len(parsed.triples))
    assert (s.recall, s.precision, s.f1) == (0.0, 0.0, 0.0)


def test_judge_errors_are_excluded_never_scored_uncovered() -> None:
    cov = [Coverage(True, "direct", (0,)), Coverage(False),
           Coverage(None, error="graph_judge: malformed output twice"),
           Coverage(None, error="graph_judge: malformed output twice")]
    s = score_graph(cov, 4)
    assert (s.recall, s.judged, s.judge_errors) == (0.5, 2, 2)
    assert s.precision is None and s.f1 is None and s.precision_lower_bound == 0.25


def test_match_grader() -> None:
    assert norm_tokens("Opening_Hours: 7:30!") == ("opening", "hour", "7", "30")
    assert norm_tokens("Categories, Buses") == ("category", "buse")
    gt = [Triple("Ferncup Café", "wifi speed", "80 Mbps"), Triple("Mill Room", "opens at", "7:30"),
          Triple("Mill Room", "coffee price", "4.50 euros"), Triple("Isaac Newton", "work",
                                                                     "Method of Fluxions")]
    pred = [Triple("ferncup café", "Wifi-Speed", "80 mbps."),          # direct
            Triple("The Mill Room", "opens at", "7:30 on weekdays"),   # subsumption
            Triple("Mill Room", "coffee price", "4.80 euros"),         # another value
            Triple("Newton", "work", "Method of Fluxions")]            # less specific
    cov = match_coverage(gt, pred)
    assert cov == [Coverage(True, "direct", (0,)), Coverage(True, "subsumption", (1,)),
                   Coverage(False), Coverage(False)]


def test_graph_judge_output_is_checked() -> None:
    ok = parse_coverage('{"coverage": [{"gt": 4, "covered": true, "kind": "collective", '
                        '"support": [2, 0, 2]}, {"gt": 5, "covered": false, "kind": null, '
                        '"support": []}]}', [4, 5], 3)
    assert ok == {4: Coverage(True, "collective", (0, 2)), 5: Coverage(False)}
    for bad in (
        '{"coverage": [{"gt": 4, "covered": true, "kind": "direct", "support": [3]}]}',
        '{"coverage": [{"gt": 4, "covered": true, "kind": "direct", "support": []}]}',
        '{"coverage": [{"gt": 4, "covered": true, "kind": "collective", "support": [1]}]}',
        '{"coverage": [{"gt": 4, "covered": true, "kind": "exact", "support": [1]}]}',
        '{"coverage": [{"gt": 4, "covered": false, "support": [1]}]}',
        '{"coverage": [{"gt": 5, "covered": false}]}',
        '{"coverage": [{"gt": 4, "covered": false}, {"gt": 4, "covered": false}]}',
    ):
        with pytest.raises(ParseError):
            parse_coverage(bad, [4], 3)
