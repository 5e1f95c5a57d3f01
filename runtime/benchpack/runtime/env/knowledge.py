"""A knowledge base's search tools (issue 24, item 5): BM25 and grep over its documents.

`search` ranks with `rank_bm25.BM25Okapi` over `text.lower().split()` tokens — what τ²-bench's
banking_knowledge does, so the same query finds the same documents in the same order — except
that a run of Chinese, Japanese or Korean characters (no spaces between words) becomes its
characters and their bigrams, so `路由器` finds `路由器指示灯…`; tokens without such characters
are τ²'s. Documents no query token occurs in are left out (τ² fills its top k with them, at
score 0). `grep` counts the matches of a case-insensitive regular expression (RE2, linear time;
a pattern RE2 refuses is searched as literal text, as τ² falls back to `re.escape`), most
matches first. Both return `[{id, title, score, content}]`, the documents' full text.

The index of a base is built once per process and shared by every episode (keyed by the
documents' hash); `numpy` and `rank_bm25` are imported on the first search only.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from typing import Any

from benchpack.specs.knowledge import KnowledgeImpl, PlanKnowledge
from benchpack.specs.regex import RegexError, compile_regex

from .errors import ToolError

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


def tokenise(text: str) -> list[str]:
    """τ²'s tokens (`lower().split()`), with runs of CJK characters split into characters and
    bigrams (other tokens unchanged, so English ranks exactly as in τ²)."""
    out: list[str] = []
    for tok in text.lower().split():
        if not _CJK.search(tok):
            out.append(tok)
            continue
        pos = 0
        for m in _CJK.finditer(tok):
            if m.start() > pos:
                out.append(tok[pos:m.start()])
            run = m.group()
            out.extend(run)
            out.extend(run[i:i + 2] for i in range(len(run) - 1))
            pos = m.end()
        if pos < len(tok):
            out.append(tok[pos:])
    return out


class KnowledgeIndex:
    """Search over one knowledge base's documents."""

    def __init__(self, kb: PlanKnowledge) -> None:
        self.kb = kb
        self._bm25: Any = None
        self._lock = threading.Lock()

    def _ranker(self) -> Any:
        with self._lock:
            if self._bm25 is None:
                from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]  # no stubs

                self._bm25 = BM25Okapi([tokenise(d.text) for d in self.kb.documents])
            return self._bm25

    def _result(self, i: int, score: float) -> dict[str, Any]:
        d = self.kb.documents[i]
        return {"id": d.id, "title": d.title, "score": round(float(score), 4),
                "content": d.text}

    def ranked(self, query: Any, top_k: int, fill: bool = False) -> list[tuple[int, float]]:
        """(document index, BM25 score), best first; `fill`: top k reached with documents no
        query token occurs in, at score 0, in document order."""
        if not isinstance(query, str) or not query.strip():
            raise ToolError("give `query`, the words to search for")
        tokens = tokenise(query)
        if not self.kb.documents or not tokens:
            return []
        bm25 = self._ranker()
        scores = bm25.get_scores(tokens)
        known = set(tokens)
        # τ²'s order: score descending, ties in document order (a stable sort)
        order = sorted(range(len(scores)), key=lambda i: scores[i], reverse=True)
        if not fill:
            order = [i for i in order if any(t in bm25.doc_freqs[i] for t in known)]
        return [(i, float(scores[i])) for i in order[:top_k]]

    def search(self, query: Any, top_k: int, fill: bool = False) -> list[dict[str, Any]]:
        return [self._result(i, s) for i, s in self.ranked(query, top_k, fill)]

    def grepped(self, pattern: Any, top_k: int) -> list[tuple[int, float]]:
        """(document index, matches), most matches first, ties in document order."""
        if not isinstance(pattern, str) or not pattern.strip():
            raise ToolError("give `pattern`, the regular expression to search for")
        try:
            rx = compile_regex("(?i)" + pattern)
        except RegexError:
            rx = compile_regex("(?i)" + re.escape(pattern))
        counts = []
        for i, d in enumerate(self.kb.documents):
            n = sum(1 for _ in rx.finditer(d.text))
            if n:
                counts.append((n, i))
        counts.sort(key=lambda c: -c[0])  # stable: ties keep document order
        return [(i, float(n)) for n, i in counts[:top_k]]

    def grep(self, pattern: Any, top_k: int) -> list[dict[str, Any]]:
        return [self._result(i, n) for i, n in self.grepped(pattern, top_k)]

    def text(self, hits: list[tuple[int, float]]) -> str:
        """The `text` layout of `KnowledgeResults` (specs/knowledge.py)."""
        return "\n".join(f"{n}. {d.title or 'Untitled'}\n   ID: {d.id}\n   Score: {s:.4f}\n"
                         f"   Content: {d.text}\n"
                         for n, (d, s) in enumerate(((self.kb.documents[i], s)
                                                     for i, s in hits), start=1))


_INDEXES: OrderedDict[str, KnowledgeIndex] = OrderedDict()
_GUARD = threading.Lock()


def knowledge_index(kb: PlanKnowledge) -> KnowledgeIndex:
    """The index of a base, shared by every episode of the process (a few plans' worth)."""
    with _GUARD:
        index = _INDEXES.get(kb.sha256)
        if index is None:
            index = _INDEXES[kb.sha256] = KnowledgeIndex(kb)
            while len(_INDEXES) > 8:
                _INDEXES.popitem(last=False)
        return index


def call_knowledge(kb: PlanKnowledge, impl: KnowledgeImpl, args: dict[str, Any]) -> Any:
    """A search tool's answer in the layout `impl` asks for."""
    index = knowledge_index(kb)
    if impl.format == "json":
        if impl.operation == "search":
            return index.search(args.get("query"), impl.top_k, impl.fill)
        return index.grep(args.get("pattern"), impl.top_k)
    started = time.perf_counter()
    hits = text_hits(index, impl, args)
    took = (time.perf_counter() - started) * 1000
    if impl.operation == "grep":
        pattern = args.get("pattern")
        return index.text(hits) if hits else f"No matches found for pattern: {pattern}"
    out = index.text(hits) if hits else "No relevant documents found."
    if impl.timing:
        # τ²'s layout: its pipeline times an (empty) reranking stage too, at 0 ms here
        out += f"\n\n[Timing: retrieval={took:.0f}ms, reranking=0ms, total={took:.0f}ms]"
    return out


def text_hits(index: KnowledgeIndex, impl: KnowledgeImpl, args: dict[str, Any]
              ) -> list[tuple[int, float]]:
    """(document, score) of what a `text` answer lists: none for a blank query or pattern
    (τ² answers "nothing found" without searching), else the ranking or the grep's hits."""
    if impl.operation == "grep":
        pattern = args.get("pattern")
        if isinstance(pattern, str) and not pattern.strip():
            return []
        return index.grepped(pattern, impl.top_k)
    query = args.get("query")
    if isinstance(query, str) and not query.strip():
        return []
    return index.ranked(query, impl.top_k, impl.fill)


def documents_returned(kb: PlanKnowledge, impl: KnowledgeImpl, args: dict[str, Any]
                       ) -> list[str]:
    """The ids a `text` answer listed: the same hits `call_knowledge` formatted, found again
    rather than parsed (a document's content may hold lines that look like an entry)."""
    index = knowledge_index(kb)
    try:
        return [index.kb.documents[i].id for i, _ in text_hits(index, impl, args)]
    except ToolError:
        return []


def knowledge_extra(plan: Any, session: Any, records: list[Any]) -> dict[str, Any] | None:
    """What `sessions.extra.knowledge` records: the configuration, the searches made, the
    documents they returned, and which of the session's `required_documents` were among them
    (`required_found`, a share; None when the session names none or the configuration put them
    in the prompt)."""
    sk = session.knowledge
    if sk is None:
        return None
    tools = {n: t.impl for n, t in plan.tools.items()
             if getattr(t.impl, "kind", None) == "knowledge"}
    searches = [r for r in records if r.tool_name in tools]
    found: list[str] = []
    for r in searches:
        impl = tools[r.tool_name]
        if r.error is not None:
            continue
        if isinstance(r.result, list):
            found.extend(d["id"] for d in r.result if isinstance(d, dict) and "id" in d)
        elif isinstance(r.result, str) and impl.knowledge in plan.knowledge:
            found.extend(documents_returned(plan.knowledge[impl.knowledge], impl,
                                            r.call if isinstance(r.call, dict) else {}))
    found = list(dict.fromkeys(found))
    required = list(sk.required_documents)
    share = None
    if required and sk.retrieval not in ("full", "golden"):
        share = sum(1 for d in required if d in found) / len(required)
    return {"retrieval": sk.retrieval, "searches": len(searches), "documents_found": found,
            "required_documents": required, "required_found": share}
