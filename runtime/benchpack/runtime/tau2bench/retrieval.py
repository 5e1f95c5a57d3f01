"""The knowledge-base search tools against τ²-bench's own retrieval (issue 24): the same
documents, in the same order, through benchpack's `KnowledgeIndex` and through τ²'s
`RetrievalPipeline` (run by `retrieval_driver.py` with τ²'s Python); every query's ranked ids
and scores (4 decimals) must agree.

Declared differences, counted apart: τ²'s BM25 fills its top k with documents sharing no token
with the query (score 0) — benchpack leaves them out, so τ²'s zero-score tail is dropped before
comparing; a pattern Python's `re` accepts but RE2 refuses (backreferences, lookaround) is
searched as literal text by benchpack.

The queries are made from the documents themselves: every title as a BM25 query, every title's
longest word (escaped) as a grep pattern, and a few regular expressions (alternation, `.*`,
invalid ones τ² searches literally).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchpack.specs.knowledge import PlanKnowledge

from ..env.knowledge import KnowledgeIndex

FIXED_PATTERNS = ("fee|charge", "credit.*card", "account", "(", "[unclosed", "annual fee",
                  "\\d+ days", "verif(y|ied|ication)")


@dataclass
class RetrievalReport:
    compared: int = 0
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    declared: int = 0
    """Queries whose only difference is a declared one (τ²'s score-0 fill is dropped first)."""

    def lines(self) -> list[str]:
        return [f"queries compared: {self.compared}", f"mismatches: {len(self.mismatches)}",
                f"declared differences (τ²'s score-0 fill): {self.declared}"]


def queries_of(documents: list[dict[str, str]]) -> tuple[list[str], list[str]]:
    queries = [d["title"] for d in documents]
    patterns = []
    for d in documents:
        words = re.findall(r"[A-Za-z]{4,}", d["title"])
        if words:
            patterns.append(re.escape(max(words, key=len)))
    return queries, [*dict.fromkeys(patterns), *FIXED_PATTERNS]


def ask_driver(checkout: Path, python: str, request: dict[str, Any], what: str,
               timeout_s: float) -> dict[str, Any]:
    """`retrieval_driver.py` run in τ²'s Python on `request`: its JSON answer, or a
    RuntimeError naming `what` of τ²'s did not answer or failed."""
    driver = Path(__file__).with_name("retrieval_driver.py")
    proc = subprocess.run([python, str(driver), "--checkout", str(checkout)],
                          input=json.dumps(request), capture_output=True, text=True,
                          timeout=timeout_s, check=False)
    try:
        answer: dict[str, Any] = json.loads(proc.stdout)
    except ValueError:
        raise RuntimeError(f"τ²'s {what} did not answer: {proc.stderr.strip()[-500:]}") \
            from None
    if "fatal" in answer:
        raise RuntimeError(f"τ²'s {what} failed: {answer['fatal']}")
    return answer


def run_tau2(checkout: Path, python: str, documents: list[dict[str, str]], queries: list[str],
             patterns: list[str], top_k: int) -> dict[str, Any]:
    return ask_driver(checkout, python, {"documents": documents, "queries": queries,
                                         "patterns": patterns, "top_k": top_k},
                      "retrieval", 600)


def compare(documents: list[dict[str, str]], tau2: dict[str, Any], queries: list[str],
            patterns: list[str], top_k: int) -> RetrievalReport:
    kb = PlanKnowledge.model_validate({"name": "kb", "sha256": "parity",
                                       "documents": documents})
    index = KnowledgeIndex(kb)
    report = RetrievalReport()
    for kind, asked, theirs_all in (("bm25", queries, tau2["bm25"]),
                                    ("grep", patterns, tau2["grep"])):
        for q, theirs in zip(asked, theirs_all, strict=True):
            ours = index.search(q, top_k) if kind == "bm25" else index.grep(q, top_k)
            mine = [(r["id"], round(r["score"], 4)) for r in ours]
            full = [(i, round(s, 4)) for i, s in theirs]
            kept = [(i, s) for i, s in full if s > 0] if kind == "bm25" else full
            report.compared += 1
            if mine != kept:
                report.mismatches.append({"kind": kind, "query": q, "benchpack": mine,
                                          "tau2": full})
            elif kept != full:
                report.declared += 1
    return report


def documents_of(domain_dir: Path) -> list[dict[str, str]]:
    docs = []
    for path in sorted((domain_dir / "documents").glob("*.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        docs.append({"id": raw["id"], "title": raw.get("title") or raw["id"],
                     "text": raw["content"]})
    return docs


def check_banking_retrieval(checkout: Path, python: str | None = None, top_k: int = 10
                            ) -> RetrievalReport:
    docs = documents_of(checkout / "data" / "tau2" / "domains" / "banking_knowledge")
    queries, patterns = queries_of(docs)
    tau2 = run_tau2(checkout, python or sys.executable, docs, queries, patterns, top_k)
    return compare(docs, tau2, queries, patterns, top_k)
