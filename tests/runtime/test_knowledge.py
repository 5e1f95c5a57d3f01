"""Knowledge bases (issue 24, item 5): documents from files and JSONL, the retrieval
configuration chosen per compile (`--var`), the tools and prompt text each configuration gives,
BM25 and grep results computed by hand, located mistakes, and a litellm agent searching through
the real run path (its calls recorded like any other tool call)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st

from benchpack.cli.main import cli
from benchpack.compiler import compile_pack
from benchpack.runtime.env.knowledge import KnowledgeIndex, tokenise
from benchpack.runtime.runner import RunOptions, run_plan
from benchpack.specs.knowledge import PlanKnowledge

PACK = """\
benchpack: 1
name: kb-case
vars: {{retrieval: bm25}}
personas: [{{id: ana, profile: {{role: customer}}}}]
knowledge:
  - name: handbook
    description: the help desk's handbook
    files: [kb/*.md]
    file: more.jsonl
    retrieval: "{{{{ vars.retrieval }}}}"
    top_k: 2
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
        request: My router blinks red.
        required_documents: {required}
"""

DOCS = {
    "kb/router-lights.md": "# Router lights\n\nA red blinking light means no signal. "
                           "Restart the router.\n",
    "kb/billing.md": "# Billing\n\nInvoices are sent monthly.\n",
}
JSONL = json.dumps({"id": "wifi-zh", "title": "无线网络", "text": "路由器密码在底部标签上。"},
                   ensure_ascii=False) + "\n"


def _pack(tmp_path: Path, required: str = "[router-lights]", **replace: str) -> Path:
    pack = tmp_path / "pack"
    text = PACK.format(required=required)
    for old, new in replace.items():
        text = text.replace(old.replace("_", " "), new)
    for rel, body in {**DOCS, "more.jsonl": JSONL, "pack.yaml": text}.items():
        p = pack / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body, encoding="utf-8")
    return pack


def _compile(pack: Path, out: Path, **variables: str) -> tuple[Any, dict[str, Any]]:
    res = compile_pack(pack, out, use_cache=False, variables=variables or None)
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8")) if res.ok else {}
    return res, plan


def _session(plan: dict[str, Any]) -> dict[str, Any]:
    return next(iter(plan["sessions"].values()))


@pytest.mark.parametrize(("retrieval", "tools", "context_has", "context_lacks"), [
    ("none", [], None, None),
    ("bm25", ["handbook__search"], None, None),
    ("grep", ["handbook__grep"], None, None),
    ("bm25_grep", ["handbook__search", "handbook__grep"], None, None),
    ("full", [], ["Restart the router", "Invoices are sent", "路由器密码"], None),
    ("golden", [], ["Restart the router"], ["Invoices", "路由器"]),
    ("shell", ["shell", "read_file", "grep", "list_files"], None, None),
])
def test_each_retrieval_configuration_gives_its_tools_and_prompt_text(
        tmp_path: Path, retrieval: str, tools: list[str], context_has: list[str] | None,
        context_lacks: list[str] | None) -> None:
    res, plan = _compile(_pack(tmp_path), tmp_path / "out", retrieval=retrieval)
    assert res.ok, [d.format() for d in res.diagnostics]
    s = _session(plan)
    assert s["tools"] == tools
    assert s["knowledge"]["retrieval"] == retrieval
    assert s["knowledge"]["required_documents"] == ["router-lights"]
    assert [d["id"] for d in plan["knowledge"]["handbook"]["documents"]] == \
        ["billing", "router-lights", "wifi-zh"]  # files sorted, then the JSONL rows
    context = s["knowledge"].get("context")
    if context_has is None:
        assert context is None
    else:
        assert context.startswith("# Knowledge base\n\n")
        for text in context_has:
            assert text in context
        for text in context_lacks or ():
            assert text not in context
        # the title once (as the document's heading), not repeated from the file's own `#`
        assert context.count("Router lights") == 1
    files = [f["path"] for f in plan["environments"]["desk"]["files"]]
    assert files == ([f"knowledge/handbook/{d}.md" for d in ("billing", "router-lights",
                                                               "wifi-zh")]
                     if retrieval == "shell" else [])


def test_the_configuration_and_the_documents_move_the_fingerprint(tmp_path: Path) -> None:
    pack = _pack(tmp_path)
    fps = {r: _session(_compile(pack, tmp_path / r, retrieval=r)[1])["fingerprint"]
           for r in ("bm25", "grep", "golden")}
    assert len(set(fps.values())) == 3
    (pack / "kb" / "billing.md").write_text("# Billing\n\nInvoices are sent weekly.\n",
                                            encoding="utf-8")
    assert _session(_compile(pack, tmp_path / "b2", retrieval="bm25")[1])["fingerprint"] != \
        fps["bm25"]


def test_a_pack_without_knowledge_bases_keeps_its_plan_shape(tmp_path: Path) -> None:
    text = PACK.format(required="[]").split("knowledge:\n  - name")[0] + \
        PACK.format(required="[]").split("top_k: 2\n")[1].replace("    knowledge: [handbook]\n",
                                                                  "")
    pack = tmp_path / "p"
    pack.mkdir()
    (pack / "pack.yaml").write_text(text, encoding="utf-8")
    res, plan = _compile(pack, tmp_path / "o")
    assert res.ok, [d.format() for d in res.diagnostics]
    assert "knowledge" not in plan and "knowledge" not in _session(plan)
    assert "knowledge" not in plan["environments"]["desk"]


def _errors(res: Any) -> list[str]:
    return [d.format() for d in res.diagnostics]


def test_mistakes_are_located_all_at_once(tmp_path: Path) -> None:
    pack = _pack(tmp_path, required="[router-light, billing]",
                 **{"knowledge:_[handbook]": "knowledge: [handbok]",
                    "kb/*.md]": "kb/*.md, faq/*.md]"})
    (pack / "more.jsonl").write_text('{"id": "x", "title": "X"}\n', encoding="utf-8")
    res = compile_pack(pack, tmp_path / "o", use_cache=False)
    lines = _errors(res)
    assert not res.ok
    assert any("pack.yaml:8:22: error E240 `faq/*.md` matches no file" in t for t in lines), lines
    assert any("pack.yaml:9:11: error E013 `more.jsonl` line 1:" in t for t in lines), lines
    assert any("pack.yaml:15:17: error E202 unknown knowledge base `handbok`" in t
               and "did you mean `handbook`" in t for t in lines), lines
    # the environment's base is unknown, so the session's documents are not checked against it
    assert len([t for t in lines if " error " in t]) == 3, lines


def test_unknown_configuration_and_document_are_located_with_the_nearest(
        tmp_path: Path) -> None:
    res = compile_pack(_pack(tmp_path, required="[router-light]"), tmp_path / "o",
                       use_cache=False, variables={"retrieval": "bm25grep"})
    lines = _errors(res)
    assert any("pack.yaml:10:16: error E240 unknown retrieval configuration `bm25grep`" in t
               and "did you mean `bm25_grep`" in t and "[fixable]" not in t for t in lines), lines
    assert any("pack.yaml:25:30: error E202 unknown document `router-light`" in t
               and "did you mean `router-lights`" in t for t in lines), lines
    res = compile_pack(_pack(tmp_path / "x"), tmp_path / "o2", use_cache=False,
                       variables={"retrieval": "embeddings"})
    assert any("embeddings need an embedding model" in t for t in _errors(res)), _errors(res)


def test_w340_golden_without_documents_and_duplicate_ids(tmp_path: Path) -> None:
    pack = _pack(tmp_path, required="[]")
    (pack / "more.jsonl").write_text('{"id": "billing", "text": "again"}\n', encoding="utf-8")
    res = compile_pack(pack, tmp_path / "o", use_cache=False, variables={"retrieval": "golden"})
    lines = _errors(res)
    assert any("pack.yaml:9:11: error E240 knowledge base `handbook` has two documents with "
               "the id `billing`" in t for t in lines), lines
    res = compile_pack(_pack(tmp_path / "x", required="[]"), tmp_path / "o2", use_cache=False,
                       variables={"retrieval": "golden"}, strict=True)
    lines = _errors(res)
    assert not res.ok and any("pack.yaml:22:9: warning W340 the retrieval configuration is "
                              "`golden` but the session names no `required_documents`" in t
                              for t in lines), lines


def test_documents_named_without_a_knowledge_base_are_an_error(tmp_path: Path) -> None:
    pack = _pack(tmp_path, **{"knowledge:_[handbook]": "knowledge: []"})
    lines = _errors(compile_pack(pack, tmp_path / "o", use_cache=False))
    assert any("pack.yaml:25:9: error E202 `required_documents` names documents, but "
               "environment `desk` has no knowledge base" in t for t in lines), lines


def test_cli_var_chooses_the_configuration_and_refuses_a_malformed_one(tmp_path: Path) -> None:
    pack = _pack(tmp_path)
    runner = CliRunner()
    r = runner.invoke(cli, ["compile", str(pack), "-o", str(tmp_path / "o"), "--var",
                            "retrieval=grep"])
    assert r.exit_code == 0, r.output
    plan = json.loads((tmp_path / "o" / "plan.json").read_text(encoding="utf-8"))
    assert _session(plan)["tools"] == ["handbook__grep"]
    r = runner.invoke(cli, ["compile", str(pack), "-o", str(tmp_path / "o"), "--var",
                            "retrieval"])
    assert r.exit_code == 2 and "NAME=VALUE" in r.output


# --------------------------------------------------------------------------- ranking by hand


def _kb(*texts: str) -> PlanKnowledge:
    return PlanKnowledge.model_validate({
        "name": "kb", "sha256": "x",
        "documents": [{"id": f"d{i}", "title": f"T{i}", "text": t} for i, t in enumerate(texts)]})


def test_bm25_scores_are_okapi_by_hand() -> None:
    index = KnowledgeIndex(_kb("router red light", "billing invoice monthly invoice",
                               "wifi password reset"))
    out = index.search("Invoice", 5)
    # Okapi (k1 1.5, b 0.75): idf = ln((3 - 1 + 0.5) / (1 + 0.5)); d1 has tf 2, length 4,
    # average length 10/3
    idf = math.log(2.5 / 1.5)
    expected = idf * 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 4 / (10 / 3)))
    assert [r["id"] for r in out] == ["d1"]
    assert out[0]["score"] == round(expected, 4) == 0.6857
    assert out[0]["content"] == "billing invoice monthly invoice" and out[0]["title"] == "T1"
    # nothing matches: no documents (τ² would fill its top k with score-0 ones)
    assert index.search("zebra", 5) == []
    both = index.search("red invoice", 1)
    assert len(both) == 1  # top_k bounds the answer


def test_chinese_queries_find_chinese_documents() -> None:
    assert tokenise("路由器 Reset") == ["路", "由", "器", "路由", "由器", "reset"]
    index = KnowledgeIndex(_kb("路由器的指示灯变红表示没有信号", "账单每月发送一次",
                               "wifi password"))
    assert [r["id"] for r in index.search("路由器红灯", 5)] == ["d0"]
    assert [r["id"] for r in index.search("账单", 5)] == ["d1"]


def test_grep_counts_matches_case_insensitively_and_falls_back_to_literal_text() -> None:
    index = KnowledgeIndex(_kb("Fee: a fee and a FEE.", "no charges here", "fee once",
                               "price (with tax)"))
    out = index.grep("fee|charge", 5)
    assert [(r["id"], r["score"]) for r in out] == [("d0", 3.0), ("d1", 1.0), ("d2", 1.0)]
    assert [r["id"] for r in index.grep("fee", 1)] == ["d0"]
    # `(with` is no regular expression: searched as the literal text, as τ² does
    assert [r["id"] for r in index.grep("(with", 5)] == ["d3"]
    with pytest.raises(Exception, match="give `pattern`"):
        index.grep("", 5)


# --------------------------------------------------------------------------- through a run


def test_litellm_agent_searches_and_the_call_is_recorded(fake_openai: FakeOpenAI,
                                                          tmp_path: Path) -> None:
    res, _ = _compile(_pack(tmp_path), tmp_path / "plan", retrieval="bm25")
    assert res.ok, _errors(res)

    def agent(body: dict[str, Any]) -> Any:
        if not any(m["role"] == "tool" for m in body["messages"]):
            return {"role": "assistant", "content": None, "tool_calls": [{
                "id": "c1", "type": "function",
                "function": {"name": "handbook__search",
                             "arguments": json.dumps({"query": "red light"})}}]}
        return "A red light means no signal: restart the router."

    fake_openai.route("agent-model", agent)
    summary = run_plan(RunOptions(
        plan=tmp_path / "plan", agent="litellm:openai/agent-model",
        api_base=fake_openai.base_url, db=tmp_path / "b.duckdb", progress=False,
        cache_dir=tmp_path / "cache", max_retries=0, run_id="r"))
    assert summary.errors == 0
    first = fake_openai.requests[0]
    assert [t["function"]["name"] for t in first["tools"]] == ["handbook__search"]
    tool_msg = next(m for m in fake_openai.requests[1]["messages"] if m["role"] == "tool")
    assert "Restart the router" in tool_msg["content"]
    import duckdb

    con = duckdb.connect(str(tmp_path / "b.duckdb"), read_only=True)
    rows = con.execute("SELECT tool_name, error, result FROM tool_calls").fetchall()
    extra = json.loads(con.execute("SELECT extra FROM sessions").fetchone()[0])
    con.close()
    assert len(rows) == 1 and rows[0][0] == "handbook__search" and rows[0][1] is None
    assert json.loads(rows[0][2])[0]["id"] == "router-lights"
    # the one required document was among what the search returned: a share of 1/1
    assert extra["knowledge"] == {"retrieval": "bm25", "searches": 1,
                                  "documents_found": ["router-lights"],
                                  "required_documents": ["router-lights"],
                                  "required_found": 1.0}


def test_golden_documents_reach_the_system_prompt(fake_openai: FakeOpenAI,
                                                  tmp_path: Path) -> None:
    res, _ = _compile(_pack(tmp_path), tmp_path / "plan", retrieval="golden")
    assert res.ok, _errors(res)
    fake_openai.route("agent-model", lambda body: "Restart the router.")
    run_plan(RunOptions(
        plan=tmp_path / "plan", agent="litellm:openai/agent-model",
        api_base=fake_openai.base_url, db=tmp_path / "b.duckdb", progress=False,
        cache_dir=tmp_path / "cache", max_retries=0, run_id="r"))
    system = fake_openai.requests[0]["messages"][0]
    assert system["role"] == "system"
    assert system["content"] == (
        "You run the help desk.\n\n# Knowledge base\n\n## Router lights (id: router-lights)"
        "\n\nA red blinking light means no signal. Restart the router.")
    assert "tools" not in fake_openai.requests[0] or not fake_openai.requests[0]["tools"]


def test_shell_retrieval_puts_the_documents_in_the_workspace(tmp_path: Path) -> None:
    res, _ = _compile(_pack(tmp_path), tmp_path / "plan", retrieval="shell")
    assert res.ok, _errors(res)
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "sessions:\n  s:\n    - tool_calls:\n"
        "        - {name: list_files, args: {path: knowledge}}\n"
        "        - {name: grep, args: {pattern: red blinking, path: knowledge}}\n"
        "        - {name: read_file, args: {path: knowledge/handbook/wifi-zh.md}}\n"
        "      say: Restart the router.\n", encoding="utf-8")
    summary = run_plan(RunOptions(plan=tmp_path / "plan", agent=f"scripted:{agent}",
                                  db=tmp_path / "b.duckdb", progress=False, judge="rules",
                                  cache_dir=tmp_path / "cache", run_id="r",
                                  allow_python=True))  # `shell` is offered: it needs the flag
    assert summary.errors == 0
    import duckdb

    con = duckdb.connect(str(tmp_path / "b.duckdb"), read_only=True)
    rows = con.execute("SELECT tool_name, error, result FROM tool_calls ORDER BY seq").fetchall()
    con.close()
    assert all(e is None for _, e, _ in rows), rows
    listing, grep, read = (json.loads(r) for _, _, r in rows)
    assert "knowledge/handbook/router-lights.md" in json.dumps(listing)
    assert "knowledge/handbook/router-lights.md" in json.dumps(grep)
    assert read["content"] == "路由器密码在底部标签上。"


def test_a_document_glob_outside_the_pack_is_located(tmp_path: Path) -> None:
    pack = _pack(tmp_path, **{"kb/*.md]": "../*.md]"})
    lines = _errors(compile_pack(pack, tmp_path / "o", use_cache=False))
    assert any("pack.yaml:8:13: error E010 `../*.md` is outside the pack directory" in t
               for t in lines), lines


# --------------------------------------------------------------------------- properties

_WORDS = st.sampled_from(["router", "red", "light", "fee", "card", "路由器", "wifi", "reset",
                          "billing", "Fee", "a", "the"])
_TEXTS = st.lists(st.lists(_WORDS, min_size=1, max_size=12).map(" ".join), min_size=1,
                  max_size=8)


@settings(max_examples=60, deadline=None)
@given(texts=_TEXTS, query=st.lists(_WORDS, min_size=1, max_size=3).map(" ".join),
       top_k=st.integers(1, 5))
def test_search_returns_matching_documents_best_first(texts: list[str], query: str,
                                                       top_k: int) -> None:
    index = KnowledgeIndex(_kb(*texts))
    out = index.search(query, top_k)
    q = set(tokenise(query))
    matching = [i for i, t in enumerate(texts) if q & set(tokenise(t))]
    assert len(out) == min(top_k, len(matching))
    assert all(q & set(tokenise(texts[int(r["id"][1:])])) for r in out)
    scores = [r["score"] for r in out]
    assert scores == sorted(scores, reverse=True)


@settings(max_examples=60, deadline=None)
@given(texts=_TEXTS, word=_WORDS, top_k=st.integers(1, 8))
def test_grep_counts_like_python_re_for_plain_words(texts: list[str], word: str,
                                                    top_k: int) -> None:
    import re

    out = KnowledgeIndex(_kb(*texts)).grep(word, top_k)
    counts = [(len(re.findall(re.escape(word), t, re.IGNORECASE)), i)
              for i, t in enumerate(texts)]
    expected = sorted([c for c in counts if c[0]], key=lambda c: -c[0])[:top_k]
    assert [(r["score"], r["id"]) for r in out] == [(float(n), f"d{i}") for n, i in expected]
