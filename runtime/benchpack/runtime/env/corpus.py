"""Offline search over a document corpus: BM25 ranking, snippets, and visiting documents.

Tokens are lowercase runs of letters and digits. Scoring is BM25 (k1 = 1.2, b = 0.75) over a
document's text plus its title, with title terms counted `TITLE_BOOST` times (a BM25F-style
field weight). Search results are `{title, url, snippet}` with a ~300-character snippet around
the densest cluster of query terms; `url` falls back to the document id when it has none.
`visit` accepts URLs or ids and returns the documents' text within a character budget
(centred on the `goal`'s terms when a document must be cut).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from benchpack.specs.plan import PlanCorpus, PlanDocument

from .errors import ToolError

K1 = 1.2
B = 0.75
TITLE_BOOST = 3
SNIPPET_CHARS = 300
VISIT_BUDGET = 20_000
"""Characters of document text `visit` returns in all (shared by the documents asked for)."""
MAX_TOPN = 50
_WORD = re.compile(r"\w+")


def tokenise(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _url_key(url: str) -> str:
    u = url.strip().lower()
    u = re.sub(r"^[a-z][a-z0-9+.-]*://", "", u)
    if u.startswith("www."):
        u = u[4:]
    return u.rstrip("/")


def excerpt(text: str, terms: dict[str, float], width: int) -> tuple[str, bool]:
    """A window of about `width` characters around the densest cluster of `terms` (weighted),
    on word boundaries, with ellipses where it was cut; (text, cut?)."""
    if len(text) <= width:
        return text, False
    hits = [(m.start(), terms[m.group().lower()]) for m in _WORD.finditer(text)
            if m.group().lower() in terms]
    start = 0
    if hits:
        best = -1.0
        j = 0
        seen_total = 0.0
        # slide a window over hit positions: score = weights of hits in [pos, pos + width)
        for i, (pos, _) in enumerate(hits):
            while j < len(hits) and hits[j][0] < pos + width:
                seen_total += hits[j][1]
                j += 1
            if seen_total > best:
                best, start = seen_total, pos
            seen_total -= hits[i][1]
        start = max(0, start - width // 5)
    end = min(len(text), start + width)
    start = max(0, end - width)
    if start > 0:
        space = text.find(" ", start, start + 40)
        start = space + 1 if space != -1 else start
    if end < len(text):
        space = text.rfind(" ", end - 40, end)
        end = space if space > start else end
    snippet = text[start:end].strip()
    return ("…" if start > 0 else "") + snippet + ("…" if end < len(text) else ""), True


@dataclass
class _Doc:
    doc: PlanDocument
    tf: Counter[str]
    length: float


class CorpusIndex:
    """A BM25 index over one corpus, built once."""

    def __init__(self, corpus: PlanCorpus) -> None:
        self.name = corpus.name
        self.corpus = corpus
        self._docs: list[_Doc] = []
        df: Counter[str] = Counter()
        for d in corpus.documents:
            body = tokenise(d.text)
            title = tokenise(d.title)
            tf: Counter[str] = Counter(body)
            for t in title:
                tf[t] += TITLE_BOOST
            self._docs.append(_Doc(d, tf, len(body) + TITLE_BOOST * len(title)))
            df.update(tf.keys())
        n = len(self._docs)
        self._avg = (sum(d.length for d in self._docs) / n) if n else 0.0
        self._idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}
        self._by_key: dict[str, PlanDocument] = {}
        for d in corpus.documents:
            self._by_key.setdefault(d.id, d)
            self._by_key.setdefault(d.id.lower(), d)
            if d.url:
                self._by_key.setdefault(d.url, d)
                self._by_key.setdefault(_url_key(d.url), d)

    def _weights(self, query: str) -> dict[str, float]:
        return {t: self._idf.get(t, 0.0) for t in set(tokenise(query))}

    def scores(self, query: str) -> list[tuple[float, PlanDocument]]:
        """(score, document) for every document with a positive score, best first (ties keep
        corpus order)."""
        terms = [t for t in dict.fromkeys(tokenise(query)) if t in self._idf]
        out: list[tuple[float, int, PlanDocument]] = []
        for i, d in enumerate(self._docs):
            s = 0.0
            norm = K1 * (1 - B + B * d.length / self._avg) if self._avg else K1
            for t in terms:
                f = d.tf.get(t, 0)
                if f:
                    s += self._idf[t] * f * (K1 + 1) / (f + norm)
            if s > 0:
                out.append((s, i, d.doc))
        out.sort(key=lambda x: (-x[0], x[1]))
        return [(s, doc) for s, _, doc in out]

    def search(self, query: Any, topn: Any = 10) -> list[dict[str, Any]]:
        """The `topn` best documents for `query` as `{title, url, snippet}`."""
        if not isinstance(query, str) or not query.strip():
            raise ToolError("give `query`, the words to search for")
        if topn is None:
            topn = 10
        if isinstance(topn, bool) or not isinstance(topn, int) or topn < 1:
            raise ToolError(f"`topn` must be a positive integer, got {topn!r}")
        weights = self._weights(query)
        out = []
        for _, doc in self.scores(query)[:min(topn, MAX_TOPN)]:
            snippet, _ = excerpt(doc.text, weights, SNIPPET_CHARS)
            item: dict[str, Any] = {"title": doc.title, "url": doc.url or doc.id,
                                    "snippet": snippet}
            if doc.published:
                item["published"] = doc.published
            out.append(item)
        return out

    def lookup(self, key: str) -> PlanDocument | None:
        k = key.strip()
        return self._by_key.get(k) or self._by_key.get(k.lower()) or \
            self._by_key.get(_url_key(k))

    def visit(self, urls: Any, goal: Any = None, budget: int = VISIT_BUDGET) -> list[dict[str, Any]]:
        """The documents' text by URL or id, sharing `budget` characters. Unknown URLs give an
        entry with an `error` (never an exception)."""
        if isinstance(urls, str):
            urls = [urls]
        if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
            raise ToolError("give `urls`, a list of document URLs (or ids) from search results")
        if goal is not None and not isinstance(goal, str):
            raise ToolError("`goal` must be a string")
        urls = list(dict.fromkeys(urls))
        share = max(500, budget // len(urls))
        weights = self._weights(goal or "")
        out: list[dict[str, Any]] = []
        for u in urls:
            doc = self.lookup(u)
            if doc is None:
                out.append({"url": u, "error": f"no document at `{u}` in the `{self.name}` "
                            "corpus; use a URL from the search results"})
                continue
            text, cut = excerpt(doc.text, weights, share)
            item: dict[str, Any] = {"url": doc.url or doc.id, "title": doc.title, "text": text}
            if doc.published:
                item["published"] = doc.published
            if cut:
                item["truncated"] = True
                item["total_chars"] = len(doc.text)
            out.append(item)
        return out
