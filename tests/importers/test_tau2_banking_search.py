"""banking_knowledge's searches as τ²'s (issue 24, `search-results`): with --tau2 the import
writes τ²'s search tools and text answers (`knowledge_tools`), the documents in the order τ²
loads them (`in_tau2_order`), and `bench parity tau2-retrieval` compares every answer's text
with τ²'s environment's (`compare_texts`, hand-made here; the real thing gated on
BENCH_TAU2_CHECKOUT and BENCH_TAU2_PYTHON). Measured on τ²-bench a2c0247: 1966 answers (bm25
703, grep 280, bm25_grep 983), 4 tool definitions, 0 mismatches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from benchpack.cli.main import cli
from benchpack.compiler import compile_pack
from benchpack.compiler.importers import ImportError_
from benchpack.compiler.importers.tau2_banking_texts import in_tau2_order, knowledge_tools
from benchpack.runtime.tau2bench.retrieval_text import compare_texts
from conftest import TAU2_CHECKOUT as CHECKOUT
from conftest import TAU2_PYTHON as PYTHON
from conftest import needs_tau2

DOCS = [{"id": "a", "title": "A", "text": "x"}, {"id": "b", "title": "B", "text": "y"},
        {"id": "c", "title": "C", "text": "z"}]


def test_documents_follow_tau2s_load_order_and_other_sets_are_refused() -> None:
    got = in_tau2_order(DOCS, {"knowledge_order": ["c", "a", "b"]})
    assert [d["id"] for d in got] == ["c", "a", "b"]
    with pytest.raises(ImportError_, match="other documents"):
        in_tau2_order(DOCS, {"knowledge_order": ["c", "a"]})
    with pytest.raises(ImportError_, match="other documents"):
        in_tau2_order(DOCS, {"knowledge_order": ["c", "a", "b", "d"]})


def _extract(first: bool = True) -> dict[str, Any]:
    params = {"type": "object", "properties": {"query": {"type": "string"}}}
    return {"knowledge_tools": {
        "search": {"name": "KB_search", "description": "Search it.", "parameters": params,
                   "position": 0 if first else 3},
        "grep": {"name": "grep", "description": "Grep it:\n'a|b'", "parameters": {
            "type": "object", "properties": {"pattern": {"type": "string"}}},
            "position": 1 if first else 4}}}


def test_the_knowledge_blocks_lines_are_tau2s_definitions() -> None:
    lines = knowledge_tools(_extract())
    block = yaml.safe_load("kb:\n" + lines)["kb"]
    assert block["results"] == {"format": "text", "fill": True, "timing": True}
    assert block["tools"]["first"] is True
    assert block["tools"]["grep"] == {"name": "grep", "description": "Grep it:\n'a|b'",
                                      "parameters": {"type": "object", "properties": {
                                          "pattern": {"type": "string"}}}}
    assert yaml.safe_load("kb:\n" + knowledge_tools(_extract(first=False)))["kb"]["tools"][
        "first"] is False
    with pytest.raises(ImportError_, match="KB_search and grep"):
        knowledge_tools({"knowledge_tools": {"search": {}}})


def _plan(description: str = "Search it.") -> dict[str, Any]:
    impl = {"kind": "knowledge", "knowledge": "kb", "operation": "search", "top_k": 2,
            "format": "text", "fill": True, "timing": True}
    return {"knowledge": {"kb": {"name": "kb", "sha256": "hand-made-parity", "documents": DOCS}},
            "tools": {"KB_search": {"name": "KB_search", "description": description,
                                    "parameters": {"type": "object"}, "impl": impl}},
            "environments": {"bank": {"tools": ["KB_search", "other"]}}}


ANSWER = ("1. A\n   ID: a\n   Score: 0.0000\n   Content: x\n\n"
          "2. B\n   ID: b\n   Score: 0.0000\n   Content: y\n")


def _tau2(answer: str, description: str = "Search it.") -> dict[str, Any]:
    return {"bm25": {"tools": [{"name": "KB_search", "description": description,
                               "parameters": {"type": "object"}}],
                     "answers": [answer]}}


CALLS = {"bm25": [("KB_search", {"query": "nothing"})]}


def test_compare_sets_aside_only_the_milliseconds() -> None:
    same = compare_texts({"bm25": _plan()}, "bank", "kb", _tau2(
        ANSWER + "\n\n[Timing: retrieval=7ms, reranking=0ms, total=8ms]"), CALLS)
    assert (same.compared, same.tools_compared, same.timed, same.mismatches) == (1, 1, 1, [])
    # adversarial: τ²'s line without its reranking stage, a missing entry, another description
    for answer in (ANSWER + "\n\n[Timing: retrieval=7ms, total=8ms]",
                   ANSWER[:ANSWER.index("2.")] + "\n\n[Timing: retrieval=1ms, reranking=0ms, "
                   "total=1ms]", ANSWER):
        bad = compare_texts({"bm25": _plan()}, "bank", "kb", _tau2(answer), CALLS)
        assert len(bad.mismatches) == 1 and bad.timed == 0, answer
    wrong = compare_texts({"bm25": _plan("Mine.")}, "bank", "kb", _tau2(
        ANSWER + "\n\n[Timing: retrieval=7ms, reranking=0ms, total=8ms]"), CALLS)
    assert [m["tool"] for m in wrong.mismatches] == ["KB_search"] and "places" in \
        wrong.mismatches[0]


@needs_tau2
def test_imported_with_tau2_the_answers_are_tau2s(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["parity", "tau2-retrieval", "--tau2", str(CHECKOUT),
                                 "--tau2-python", str(PYTHON), "--json"])
    assert r.exit_code == 0, r.output[-3000:]
    report = json.loads(r.output[r.output.index("{"):])
    texts = report["texts"]
    assert texts["mismatches"] == [] and texts["tools_compared"] == 4
    assert texts["compared"] >= 1966 and set(texts["per_variant"]) == {"bm25", "grep",
                                                                      "bm25_grep"}


def _built_origin(tmp_path: Path, retrieval: str | None) -> dict[str, Any]:
    """The plan's `origin` of `tmp_path/p` compiled with `--var retrieval` (None: the pack's)."""
    out = tmp_path / f"b-{retrieval}"
    result = compile_pack(tmp_path / "p", out, use_cache=False,
                          variables={"retrieval": retrieval} if retrieval else None)
    assert not result.errors, [d.format() for d in result.diagnostics]
    origin: dict[str, Any] = json.loads((out / "plan.json").read_text(encoding="utf-8"))[
        "pack"]["origin"]
    return origin


@needs_tau2
def test_imported_with_tau2_search_results_is_no_longer_a_difference(tmp_path: Path) -> None:
    domain = Path(str(CHECKOUT)) / "data" / "tau2" / "domains" / "banking_knowledge"
    r = CliRunner().invoke(cli, ["import", "tau2", str(domain), "-o", str(tmp_path / "p"),
                                 "--tau2", str(CHECKOUT), "--tau2-python", str(PYTHON)])
    assert r.exit_code == 0, r.output
    pack = yaml.safe_load((tmp_path / "p" / "pack.yaml").read_text(encoding="utf-8"))
    ids = [str(d).split(":")[0] for d in pack["origin"]["differences"]]
    # τ²'s own tool, asked about every ATM deposit a task starts with, shows no scan: the
    # deposit-scan difference cannot show in a run of this release, so it is not listed
    assert "search-results" not in ids and ids == []
    # the golden prompt's layout labels only the runs compiled with --var retrieval=golden
    assert {v: [d.split(":")[0] for d in ds]
            for v, ds in pack["origin"]["if_vars"]["retrieval"].items()} == {
        "golden": ["kb-in-prompt"], "shell": ["shell-tools"]}
    report = (tmp_path / "p" / "IMPORT_REPORT.md").read_text(encoding="utf-8")
    assert "benchpack's own measured milliseconds" in report
    assert "asked at import about each of the 1 ATM deposit(s) in the 2 starting state(s)" \
        in report and "showed a scan of none" in report
    # so a build with τ²'s default retrieval is labelled comparable with τ²; golden is not
    from benchpack.specs.origin_label import origin_of_config

    for var, listed in ((None, []), ("golden", ["kb-in-prompt"]), ("shell", ["shell-tools"])):
        label = origin_of_config({"origin": _built_origin(tmp_path, var)})
        assert label is not None and [d.split(":")[0] for d in label.differences] == listed
        assert label.comparable is (not listed)
    kb = pack["knowledge"][0]
    assert kb["tools"]["search"]["name"] == "KB_search" and kb["tools"]["grep"]["name"] == "grep"
    assert kb["results"] == {"format": "text", "fill": True, "timing": True}


def test_without_tau2_search_results_stays_a_difference(tmp_path: Path) -> None:
    from benchpack.compiler.importers import import_pack

    fixture = Path(__file__).parents[1] / "fixtures" / "tau2_banking" / "banking_knowledge"
    import_pack("tau2", fixture, tmp_path / "p")
    pack = yaml.safe_load((tmp_path / "p" / "pack.yaml").read_text(encoding="utf-8"))
    ids = [str(d).split(":")[0] for d in pack["origin"]["differences"]]
    assert ids == ["own-descriptions", "no-policy", "no-deposit-scans"]
    assert {v: [d.split(":")[0] for d in ds]
            for v, ds in pack["origin"]["if_vars"]["retrieval"].items()} == {
        "full": ["kb-in-prompt"], "golden": ["kb-in-prompt"], "bm25": ["search-results"],
        "grep": ["search-results"], "bm25_grep": ["search-results"], "shell": ["shell-tools"]}
    # each build lists what holds for its retrieval: the pack's own (bm25), golden, none
    for var, extra in ((None, ["search-results"]), ("golden", ["kb-in-prompt"]), ("none", [])):
        assert [d.split(":")[0] for d in _built_origin(tmp_path, var)["differences"]] == [
            "own-descriptions", "no-policy", "no-deposit-scans", *extra], var
    kb = pack["knowledge"][0]
    assert kb["tools"] == {"search": "KB_search", "grep": "KB_grep"} and "results" not in kb


@pytest.mark.parametrize(("scans", "listed"), [
    ({"checked": 3, "states": 2, "with_scans": []}, False),
    ({"checked": 3, "states": 2, "with_scans": [{"task": "t1", "transaction": "b1"}]}, True),
    ({"checked": 0, "states": 1, "with_scans": []}, False),  # nothing to show a scan of
    (None, True),                                             # a driver without the check
    ({"with_scans": []}, True),                               # unreadable: kept
])
def test_no_deposit_scans_is_dropped_only_when_taus_tool_showed_none(
        scans: dict[str, Any] | None, listed: bool) -> None:
    from benchpack.compiler.importers.tau2_banking import differences_of, no_deposit_scans

    extract = {} if scans is None else {"deposit_scans": scans}
    differences, _ = differences_of(extract)
    assert any(d.startswith("no-deposit-scans") for d in differences) is listed
    assert (no_deposit_scans(extract) is None) is listed
