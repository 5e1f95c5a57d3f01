"""A knowledge base's `results:` (format, fill, timing) and its tools given in full
(`tools.search: {name, description, parameters}`, a built-in's name taken): expected texts
written by hand over a 3-document base, located mistakes, and a run through the agent loop
(what the agent reads, and `documents_found` from a text answer)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.compiler import compile_pack
from benchpack.runtime.env.knowledge import call_knowledge
from benchpack.runtime.runner import RunOptions, run_plan
from benchpack.specs.knowledge import KnowledgeImpl, PlanKnowledge

# every text 4 tokens long: BM25's length factor is 1, so a word in one document of three
# scores its idf, ln((3 - 1 + 0.5) / (1 + 0.5)) = 0.5108
DOCS = [{"id": "lights", "title": "Router lights", "text": "router lights blink red"},
        {"id": "billing", "title": "Billing", "text": "billing invoices arrive monthly"},
        {"id": "wifi", "title": "Wi-Fi", "text": "wifi password under router"}]
# the index cache is keyed by `sha256`: a name of its own, not another test's
KB = PlanKnowledge.model_validate({"name": "kb", "sha256": "hand-made-results",
                                   "documents": DOCS})


def _impl(op: str, **kw: Any) -> KnowledgeImpl:
    return KnowledgeImpl.model_validate({"kind": "knowledge", "knowledge": "kb",
                                         "operation": op, "top_k": 3, **kw})


def test_idf_by_hand() -> None:
    assert f"{math.log(2.5 / 1.5):.4f}" == "0.5108"


def test_text_search_with_fill_by_hand() -> None:
    out = call_knowledge(KB, _impl("search", format="text", fill=True), {"query": "billing"})
    assert out == ("1. Billing\n   ID: billing\n   Score: 0.5108\n"
                   "   Content: billing invoices arrive monthly\n"
                   "\n"
                   "2. Router lights\n   ID: lights\n   Score: 0.0000\n"
                   "   Content: router lights blink red\n"
                   "\n"
                   "3. Wi-Fi\n   ID: wifi\n   Score: 0.0000\n"
                   "   Content: wifi password under router\n")


def test_text_search_without_fill_keeps_only_matching_documents() -> None:
    out = call_knowledge(KB, _impl("search", format="text"), {"query": "billing"})
    assert out == ("1. Billing\n   ID: billing\n   Score: 0.5108\n"
                   "   Content: billing invoices arrive monthly\n")
    # adversarial: no document shares a word, and a blank query
    assert call_knowledge(KB, _impl("search", format="text"), {"query": "zebra"}) \
        == "No relevant documents found."
    assert call_knowledge(KB, _impl("search", format="text"), {"query": "  "}) \
        == "No relevant documents found."


def test_fill_in_json_too() -> None:
    out = call_knowledge(KB, _impl("search", fill=True), {"query": "billing"})
    assert [(r["id"], r["score"]) for r in out] == [("billing", 0.5108), ("lights", 0.0),
                                                    ("wifi", 0.0)]
    assert [r["id"] for r in call_knowledge(KB, _impl("search"), {"query": "billing"})] \
        == ["billing"]


def test_timing_line_follows_the_entries() -> None:
    out = call_knowledge(KB, _impl("search", format="text", timing=True), {"query": "zebra"})
    assert re.fullmatch(r"No relevant documents found\.\n\n"
                        r"\[Timing: retrieval=(\d+)ms, reranking=0ms, total=\1ms\]", out), out
    out = call_knowledge(KB, _impl("search", format="text", timing=True), {"query": "red"})
    assert out.startswith("1. Router lights\n   ID: lights\n")
    assert re.search(r"   Content: router lights blink red\n\n\n\[Timing: retrieval=\d+ms, "
                     r"reranking=0ms, total=\d+ms\]$", out), out


def test_text_grep_by_hand_ties_in_document_order() -> None:
    # `o`: lights 1 (router), billing 2 (invoices, monthly), wifi 2 (password, router)
    out = call_knowledge(KB, _impl("grep", format="text", top_k=2), {"pattern": "O"})
    assert out == ("1. Billing\n   ID: billing\n   Score: 2.0000\n"
                   "   Content: billing invoices arrive monthly\n"
                   "\n"
                   "2. Wi-Fi\n   ID: wifi\n   Score: 2.0000\n"
                   "   Content: wifi password under router\n")
    assert call_knowledge(KB, _impl("grep", format="text"), {"pattern": "zebra"}) \
        == "No matches found for pattern: zebra"
    assert call_knowledge(KB, _impl("grep", format="text"), {"pattern": " "}) \
        == "No matches found for pattern:  "


# --------------------------------------------------------------------------- the pack language

PACK = """\
benchpack: 1
name: kb-results
personas: [{id: ana, profile: {role: customer}}]
knowledge:
  - name: handbook
    documents: DOCS
    retrieval: bm25_grep
    top_k: 3
    results: {format: text, fill: true}
    tools:
      search: KB_search
      grep:
        name: grep
        description: Grep the handbook.
        parameters: {type: object, properties: {pattern: {type: string}}, required: [pattern]}
environments:
  - id: desk
    builtin_tools: []
    knowledge: [handbook]
    policy: You run the help desk.
episodes:
  - id: e
    persona: ana
    environment: desk
    sessions:
      - id: s
        protocol: verified_outcome
        request: How do I pay?
        required_documents: [billing]
"""


def _pack(tmp_path: Path, text: str = PACK) -> Path:
    pack = tmp_path / "pack"
    pack.mkdir(parents=True, exist_ok=True)
    (pack / "pack.yaml").write_text(text.replace("DOCS", json.dumps(DOCS)), encoding="utf-8")
    return pack


def _compile(tmp_path: Path, text: str = PACK) -> tuple[Any, dict[str, Any]]:
    res = compile_pack(_pack(tmp_path, text), tmp_path / "plan", use_cache=False)
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text("utf-8")) if res.ok else {}
    return res, plan


def _errors(res: Any) -> list[str]:
    return [d.format() for d in res.diagnostics]


def test_tools_given_in_full_and_a_builtins_name(tmp_path: Path) -> None:
    res, plan = _compile(tmp_path)
    assert res.ok, _errors(res)
    grep = plan["tools"]["grep"]
    assert grep["description"] == "Grep the handbook."
    assert grep["parameters"] == {"type": "object", "properties": {"pattern": {
        "type": "string"}}, "required": ["pattern"]}
    assert grep["impl"] == {"kind": "knowledge", "knowledge": "handbook", "operation": "grep",
                            "top_k": 3, "format": "text", "fill": True}
    assert plan["tools"]["KB_search"]["description"].startswith("Search the knowledge base")
    assert plan["environments"]["desk"]["tools"] == ["KB_search", "grep"]


def test_default_results_leave_the_plan_as_before(tmp_path: Path) -> None:
    res, plan = _compile(tmp_path, PACK.replace("    results: {format: text, fill: true}\n", "")
                         .replace("      grep:\n        name: grep\n        description: Grep "
                                  "the handbook.\n        parameters: {type: object, properties"
                                  ": {pattern: {type: string}}, required: [pattern]}\n",
                                  "      grep: KB_grep\n"))
    assert res.ok, _errors(res)
    assert plan["tools"]["KB_grep"]["impl"] == {"kind": "knowledge", "knowledge": "handbook",
                                                "operation": "grep", "top_k": 3}


def test_bad_option_values_are_located(tmp_path: Path) -> None:
    res, _ = _compile(tmp_path, PACK.replace("format: text", "format: html"))
    lines = _errors(res)
    assert any(re.search(r"pack\.yaml:9:\d+: error .*format", t) for t in lines), lines
    res, _ = _compile(tmp_path / "2", PACK.replace("properties: {pattern:", "properties: {q:")
                      .replace("required: [pattern]", "required: [q]"))
    lines = _errors(res)
    assert any(re.search(r"pack\.yaml:15:\d+: error E240 the grep tool's `parameters` have no "
                         r"property `pattern`", t) for t in lines), lines


def test_an_environment_keeping_the_builtin_is_an_error(tmp_path: Path) -> None:
    text = PACK.replace("episodes:", "  - id: other\n    policy: Another desk.\nepisodes:")
    res, _ = _compile(tmp_path, text)
    lines = _errors(res)
    assert any(re.search(r"pack\.yaml:2\d:\d+: error E214 environment `other` offers the "
                         r"built-in `grep`, but knowledge base `handbook` took that name", t)
               for t in lines), lines
    ok, _ = _compile(tmp_path / "2", text.replace("Another desk.", "Another desk.\n"
                                                  "    builtin_tools: [read_file]"))
    assert ok.ok, _errors(ok)


def test_the_agent_reads_the_text_and_the_documents_are_counted(fake_openai: FakeOpenAI,
                                                                 tmp_path: Path) -> None:
    res, _ = _compile(tmp_path)
    assert res.ok, _errors(res)

    def agent(body: dict[str, Any]) -> Any:
        if not any(m["role"] == "tool" for m in body["messages"]):
            return {"role": "assistant", "content": None, "tool_calls": [{
                "id": "c1", "type": "function",
                "function": {"name": "grep", "arguments": json.dumps({"pattern": "monthly"})}}]}
        return "Invoices arrive monthly."

    fake_openai.route("agent-model", agent)
    summary = run_plan(RunOptions(
        plan=tmp_path / "plan", agent="litellm:openai/agent-model",
        api_base=fake_openai.base_url, db=tmp_path / "b.duckdb", progress=False,
        cache_dir=tmp_path / "cache", max_retries=0, run_id="r"))
    assert summary.errors == 0
    tools = fake_openai.requests[0]["tools"]
    assert [t["function"]["name"] for t in tools] == ["KB_search", "grep"]
    assert tools[1]["function"]["description"] == "Grep the handbook."
    tool_msg = next(m for m in fake_openai.requests[1]["messages"] if m["role"] == "tool")
    assert tool_msg["content"] == ("1. Billing\n   ID: billing\n   Score: 1.0000\n"
                                   "   Content: billing invoices arrive monthly\n")
    import duckdb

    con = duckdb.connect(str(tmp_path / "b.duckdb"), read_only=True)
    extra = json.loads(con.execute("SELECT extra FROM sessions").fetchone()[0])
    con.close()
    assert extra["knowledge"]["documents_found"] == ["billing"]
    assert extra["knowledge"]["required_found"] == 1.0


def test_first_offers_the_bases_tools_before_the_others(tmp_path: Path) -> None:
    text = PACK.replace("    builtin_tools: []\n", "    builtin_tools: [read_file]\n")
    res, plan = _compile(tmp_path, text)
    assert res.ok, _errors(res)
    assert plan["environments"]["desk"]["tools"] == ["read_file", "KB_search", "grep"]
    res, plan = _compile(tmp_path / "2", text.replace("      search: KB_search\n",
                                                      "      search: KB_search\n"
                                                      "      first: true\n"))
    assert res.ok, _errors(res)
    assert plan["environments"]["desk"]["tools"] == ["KB_search", "grep", "read_file"]


def test_in_policy_leaves_the_documents_to_the_policy(tmp_path: Path) -> None:
    text = PACK.replace("retrieval: bm25_grep", "retrieval: full")

    def context(plan: dict[str, Any]) -> Any:
        sessions = plan["sessions"]
        s = next(iter(sessions.values())) if isinstance(sessions, dict) else sessions[0]
        return s["knowledge"].get("context")

    res, plan = _compile(tmp_path, text)
    assert res.ok, _errors(res)
    assert "## Billing (id: billing)" in context(plan)
    res, plan = _compile(tmp_path / "2", text.replace("    top_k: 3\n",
                                                      "    top_k: 3\n    in_policy: [full]\n"))
    assert res.ok, _errors(res)
    assert context(plan) is None and plan["sessions"]
    res, _ = _compile(tmp_path / "3", text.replace("    top_k: 3\n",
                                                   "    top_k: 3\n    in_policy: [bm25]\n"))
    assert any(re.search(r"pack\.yaml:\d+:\d+: error E104 .*in_policy", t) or
               "in_policy" in t for t in _errors(res)), _errors(res)
