"""`bench import tau2 …/banking_knowledge` (issue 24): the knowledge base is imported (documents
in file-name order, τ²'s search tool name and top k, the retrieval a `--var`), beside the tasks
(test_tau2_banking.py runs them); and the search tools against τ²'s own retrieval pipeline.

The fixture is our own: five made-up bank documents, a small database and five tasks in τ²'s
shapes. The parity
check runs τ²'s `RetrievalPipeline` with τ²'s Python when BENCH_TAU2_CHECKOUT and
BENCH_TAU2_PYTHON name a checkout holding banking_knowledge's documents and a Python that
imports τ²'s knowledge package (with rank_bm25); it skips otherwise. Measured on τ²-bench
a2c0247's 698 documents: 973 queries (698 titles through BM25, 275 grep patterns), 0
mismatches, 2 queries differing only by τ²'s score-0 fill."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchpack.cli.main import cli
from benchpack.compiler import compile_pack
from benchpack.compiler.importers import ImportError_, import_pack
from benchpack.runtime.tau2bench.retrieval import (
    check_banking_retrieval,
    compare,
    documents_of,
    queries_of,
)
from conftest import TAU2_CHECKOUT, TAU2_PYTHON

FIXTURE = Path(__file__).parents[1] / "fixtures" / "tau2_banking" / "banking_knowledge"


def test_the_knowledge_base_is_imported_and_every_task_listed(tmp_path: Path) -> None:
    out = tmp_path / "pack"
    result = import_pack("tau2", FIXTURE, out)
    assert result.sessions == 4 and "knowledge/banking.jsonl" in result.files
    assert result.dropped == ["task task_b: uses tools not yet written: file_card_dispute"]
    rows = [json.loads(x) for x in (out / "knowledge" / "banking.jsonl").read_text(
        encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows) and len(rows) == 5
    assert rows[0] == {"id": "doc_accounts_savings_001", "title": "Opening a Savings Account",
                       "text": "To open a savings account the customer must be verified and "
                               "at least 16 years old. The first deposit is at least 10 euros."}
    report = (out / "IMPORT_REPORT.md").read_text(encoding="utf-8")
    assert "| file_card_dispute | 1 |" in report and "tasks imported: 4 of 5" in report
    assert "| `grep_only` | `grep` |" in report and "| `openai_embeddings` | not offered" in report
    res = compile_pack(out, tmp_path / "plan", use_cache=False,
                       variables={"retrieval": "bm25_grep"})
    assert res.ok, [d.format() for d in res.diagnostics]


def test_its_search_tools_have_tau2s_name_and_top_k(tmp_path: Path) -> None:
    out = tmp_path / "pack"
    import_pack("tau2", FIXTURE, out)
    res = compile_pack(out, tmp_path / "plan", use_cache=False,
                       variables={"retrieval": "bm25_grep"})
    assert res.ok, [d.format() for d in res.diagnostics]
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text(encoding="utf-8"))
    s = next(iter(plan["sessions"].values()))
    assert {"KB_search", "KB_grep", "log_verification"} <= set(s["tools"])
    assert plan["tools"]["KB_search"]["impl"]["top_k"] == 10
    assert len(plan["knowledge"]["banking"]["documents"]) == 5


def test_a_folder_without_documents_is_refused(tmp_path: Path) -> None:
    domain = tmp_path / "banking_knowledge"
    domain.mkdir()
    (domain / "tasks.json").write_text("[]", encoding="utf-8")
    (domain / "db.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ImportError_, match="documents"):
        import_pack("tau2", domain, tmp_path / "out")
    r = CliRunner().invoke(cli, ["import", "tau2", str(domain), "-o", str(tmp_path / "o")])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output


def test_compare_counts_mismatches_and_the_declared_zero_fill() -> None:
    docs = documents_of(FIXTURE.parent / "banking_knowledge")
    queries, patterns = ["annual fee"], ["fee"]
    # answers that are not ours are mismatches, each named with both rankings
    wrong = compare(docs, {"bm25": [[["doc_cards_cashback_card_001", 0.0]]],
                           "grep": [[]]}, queries, patterns, 10)
    assert wrong.compared == 2 and [m["kind"] for m in wrong.mismatches] == ["bm25", "grep"]
    from benchpack.runtime.env.knowledge import KnowledgeIndex
    from benchpack.specs.knowledge import PlanKnowledge

    index = KnowledgeIndex(PlanKnowledge.model_validate(
        {"name": "k", "sha256": "x", "documents": docs}))
    ours = [[r["id"], r["score"]] for r in index.search("annual fee", 10)]
    grep = [[r["id"], r["score"]] for r in index.grep("fee", 10)]
    # "Fee table: wire transfer fee …, card replacement fee …, overdraft fee …. A fee may …"
    assert grep[0] == ["doc_fees_overview_001", 5.0]
    zero_fill = [*ours, ["doc_accounts_savings_001", 0.0]]
    same = compare(docs, {"bm25": [zero_fill], "grep": [grep]}, queries, patterns, 10)
    assert same.mismatches == [] and same.declared == 1 and same.compared == 2


def test_queries_come_from_the_documents() -> None:
    docs = documents_of(FIXTURE)
    queries, patterns = queries_of(docs)
    assert queries == [d["title"] for d in docs]
    assert patterns[:2] == ["Opening", "Cashback"] and patterns[-1] == "verif(y|ied|ication)"




def _tau2_retrieval_available() -> bool:
    if not (TAU2_CHECKOUT and TAU2_PYTHON):
        return False
    docs = Path(TAU2_CHECKOUT) / "data" / "tau2" / "domains" / "banking_knowledge" / "documents"
    if not docs.is_dir():
        return False
    probe = subprocess.run([TAU2_PYTHON, "-c", "import rank_bm25"], capture_output=True,
                           check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _tau2_retrieval_available(),
                    reason="needs BENCH_TAU2_CHECKOUT with banking_knowledge's documents and "
                           "BENCH_TAU2_PYTHON importing τ² and rank_bm25")
def test_search_tools_agree_with_tau2s_own_retrieval() -> None:
    assert TAU2_CHECKOUT and TAU2_PYTHON
    report = check_banking_retrieval(Path(TAU2_CHECKOUT), TAU2_PYTHON)
    assert report.compared > 900 and report.mismatches == [], report.mismatches[:3]


def test_cli_parity_refuses_a_folder_that_is_no_checkout(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["parity", "tau2-retrieval", "--tau2", str(tmp_path)])
    assert r.exit_code == 1 and "not a τ²-bench checkout" in r.output, r.output
    (tmp_path / "src" / "tau2").mkdir(parents=True)
    (tmp_path / "data" / "tau2").mkdir(parents=True)
    r = CliRunner().invoke(cli, ["parity", "tau2-retrieval", "--tau2", str(tmp_path),
                                 "--tau2-python", "python3"])
    assert r.exit_code == 1 and "banking_knowledge" in r.output and "not found" in r.output
