"""Knowledge-graph grading for staged disclosure: parse the agent's graph, match it, score it.

Parsing (`parse_graph`) is tolerant but honest. Accepted as is (`kg_status = ok`): the whole
answer is a JSON list of `{head, relation, tail}` objects (extra keys ignored) or of
`[head, relation, tail]` lists, or an object holding such a list under `triplets`/`triples`,
optionally inside one ```json fence. Values are non-empty strings (numbers are written as
text). The documented repairs (`repaired`, with a note) are exactly two:

- prose around the JSON: the first JSON value in the text that holds at least one triple is
  taken, everything else is ignored;
- items that are not triples (missing keys, empty or nested values, wrong length) are dropped
  and counted, as long as at least one triple remains.

Nothing else is fixed: truncated JSON, trailing commas, single quotes or Python literals are
`malformed`, and a malformed graph scores zero (the collapse VibeSearchBench reports for broken
JSON). No answer, or an empty list, is `empty`. Exact duplicates (same text up to case and
whitespace) are merged, because the predicted graph is a set of edges; their count is reported.

Scoring (`score_graph`, VibeSearchBench appendix A): recall = covered ground-truth triples /
judged ground-truth triples; precision = predicted triples that support at least one covered
ground-truth triple / predicted triples (0 when nothing was predicted); F1 = harmonic mean (0
when both are 0). Ground-truth triples whose judge batch failed are excluded from recall and
counted as judge errors; precision (and so F1) is then unknown (None) because the failed batch
might have cited more predicted triples; its lower bound is reported separately.

Matching (`match_coverage`, the cheap deterministic grader) tokenises with the shared
`benchpack.specs.text`: text is NFKC-normalised and case-folded, split on anything that is not a
letter or digit (so punctuation, `_`, spacing and full-width forms do not matter), a run of
Chinese, Japanese, Thai … (scripts without spaces between words) is cut into characters, and
each word is singularised by a simple rule (`-ies` → `-y`, a final `-s` dropped unless the word
ends in `ss`, `us` or `is`; words of up to 3 letters kept). A predicted triple covers a
ground-truth triple *directly* when head, relation and tail have equal token sequences, and by
*subsumption* when every token of the ground-truth head, relation and tail appears in the
predicted triple's head, relation and tail respectively (it says the same and more); for the
unsegmented scripts the tokens compared are character bigrams and single ideographs, so `上海`
is not found in `海上` and `七点半` not in `八点半`. Every predicted triple that covers a ground-truth triple supports it. Collective and
compositional coverage need judgement and are left to the LLM judge, so match-mode recall is a
lower bound of the judge's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from benchpack.specs.text import grams, words

KGStatus = Literal["ok", "repaired", "malformed", "empty"]
COVERAGE_KINDS = ("direct", "subsumption", "collective", "compositional")
_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)


@dataclass(frozen=True)
class Triple:
    head: str
    relation: str
    tail: str
    dimension: str | None = None

    def text(self) -> str:
        return f"{self.head} | {self.relation} | {self.tail}"


@dataclass
class ParsedGraph:
    triples: list[Triple]
    status: KGStatus
    note: str | None = None
    """What was repaired, or why the answer is malformed or empty."""
    duplicates: int = 0
    """Exact duplicates merged."""


@dataclass(frozen=True)
class Coverage:
    """The verdict on one ground-truth triple."""

    covered: bool | None
    """None when the judge failed on this triple's batch."""
    kind: str | None = None
    """direct | subsumption | collective | compositional, when covered."""
    support: tuple[int, ...] = ()
    """Indices of the predicted triples that support it."""
    error: str | None = None


@dataclass
class GraphScore:
    recall: float | None
    precision: float | None
    f1: float | None
    covered: int
    judged: int
    judge_errors: int
    valid_predicted: int
    """Predicted triples supporting at least one covered ground-truth triple."""
    precision_lower_bound: float | None = None
    support: dict[int, tuple[int, ...]] = field(default_factory=dict)


# --------------------------------------------------------------------------- parsing


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _triple(item: Any) -> Triple | None:
    if isinstance(item, dict):
        parts = [_scalar(item.get(k)) for k in ("head", "relation", "tail")]
    elif isinstance(item, list) and len(item) == 3:
        parts = [_scalar(v) for v in item]
    else:
        return None
    if any(p is None for p in parts):
        return None
    head, relation, tail = (str(p) for p in parts)
    return Triple(head, relation, tail)


def _items(data: Any) -> list[Any] | None:
    """The list of candidate triples in a parsed JSON value, or None for another shape."""
    if isinstance(data, dict):
        for key in ("triplets", "triples"):
            if isinstance(data.get(key), list):
                return list(data[key])
        return None
    if isinstance(data, list):
        return data
    return None


def _scan(text: str) -> list[Any] | None:
    """The first JSON value in `text` holding at least one triple (for prose around JSON)."""
    decoder = json.JSONDecoder()
    for m in re.finditer(r"[\[{]", text):
        try:
            value, _ = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        items = _items(value)
        if items and any(_triple(i) is not None for i in items):
            return items
    return None


def _key(t: Triple) -> tuple[str, str, str]:
    return (" ".join(t.head.lower().split()), " ".join(t.relation.lower().split()),
            " ".join(t.tail.lower().split()))


def parse_graph(text: str | None) -> ParsedGraph:
    """The agent's knowledge graph; see the module docstring for what is accepted."""
    stripped = (text or "").strip()
    if not stripped:
        return ParsedGraph([], "empty", "no answer")
    fence = _FENCE.fullmatch(stripped)
    body = fence.group(1) if fence else stripped
    repairs: list[str] = []
    try:
        items = _items(json.loads(body))
        if items is None:
            return ParsedGraph([], "malformed", "JSON, but not a list of triples")
    except json.JSONDecodeError as exc:
        found = _scan(stripped)
        if found is None:
            return ParsedGraph([], "malformed", f"no JSON list of triples ({exc.msg} at "
                               f"position {exc.pos})")
        items = found
        repairs.append("took the JSON out of surrounding text")
    if not items:
        return ParsedGraph([], "empty", "an empty list")
    parsed = [_triple(i) for i in items]
    triples = [t for t in parsed if t is not None]
    if not triples:
        return ParsedGraph([], "malformed", f"none of the {len(items)} items is a triple")
    dropped = len(parsed) - len(triples)
    if dropped:
        repairs.append(f"dropped {dropped} item(s) that are not triples")
    seen: set[tuple[str, str, str]] = set()
    unique = []
    for t in triples:
        k = _key(t)
        if k not in seen:
            seen.add(k)
            unique.append(t)
    return ParsedGraph(unique, "repaired" if repairs else "ok",
                       "; ".join(repairs) or None, len(triples) - len(unique))


# --------------------------------------------------------------------------- matching


def _singular(token: str) -> str:
    if len(token) <= 3:
        return token
    if token.endswith("ies"):
        return token[:-3] + "y"
    if token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def norm_tokens(text: str) -> tuple[str, ...]:
    """Normalised tokens of `text` (see the module docstring)."""
    return tuple(_singular(t) for t in words(text))


def _fields(t: Triple) -> tuple[tuple[str, ...], ...]:
    return (norm_tokens(t.head), norm_tokens(t.relation), norm_tokens(t.tail))


def _gram_fields(t: Triple) -> tuple[frozenset[str], ...]:
    # n-grams of unsegmented scripts are at most 2 characters: `_singular` leaves them alone
    return tuple(frozenset(_singular(g) for g in grams(x)) for x in (t.head, t.relation, t.tail))


def match_coverage(gt: Sequence[Triple], pred: Sequence[Triple]) -> list[Coverage]:
    """Deterministic coverage: direct (equal normalised text) or subsumption (token superset)."""
    pred_fields = [_fields(p) for p in pred]
    pred_grams = [_gram_fields(p) for p in pred]
    out = []
    for g in gt:
        gf, gg = _fields(g), _gram_fields(g)
        direct = [i for i, pf in enumerate(pred_fields) if pf == gf]
        if direct:
            out.append(Coverage(True, "direct", tuple(direct)))
            continue
        wider = [i for i, (pf, pg) in enumerate(zip(pred_fields, pred_grams, strict=True))
                 if all((a <= b) if a else fa == fb
                        for a, b, fa, fb in zip(gg, pg, gf, pf, strict=True))]
        out.append(Coverage(True, "subsumption", tuple(wider)) if wider else Coverage(False))
    return out


# --------------------------------------------------------------------------- scoring


def score_graph(coverage: Sequence[Coverage], n_predicted: int) -> GraphScore:
    """Recall, precision and F1 from per-ground-truth-triple coverage (module docstring)."""
    judged = [c for c in coverage if c.error is None and c.covered is not None]
    errors = len(coverage) - len(judged)
    covered = sum(1 for c in judged if c.covered)
    support = {i: c.support for i, c in enumerate(coverage) if c.covered}
    valid = {p for c in judged if c.covered for p in c.support}
    recall = covered / len(judged) if judged else None
    precision: float | None = len(valid) / n_predicted if n_predicted else 0.0
    lower = precision
    if errors:
        precision = None
    f1: float | None = None
    if recall is not None and precision is not None:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return GraphScore(recall, precision, f1, covered, len(judged), errors, len(valid),
                      lower if errors else None, support)


__all__ = ["COVERAGE_KINDS", "Coverage", "GraphScore", "KGStatus", "ParsedGraph", "Triple",
           "match_coverage", "norm_tokens", "parse_graph", "score_graph"]
