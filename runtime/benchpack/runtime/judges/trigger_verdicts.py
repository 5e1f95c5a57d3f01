"""The trigger judge: quote verification (`normalise`, `quote_found`), the strict verdict
parser and the judge in its three modes (`LLMTriggerJudge`, `RulesTriggerJudge`,
`ScriptedTriggerJudge`).

Separate from the planner and the user agent because it sees a different slice of the session:
the conversation up to the scored response and the rubric, never the persona or the style.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Protocol

from .base import JudgeCall, JudgeError, ParseError, Templates, ask, extract_json
from .intent import coverage, strip_echo
from .trigger_shapes import SCORES, TriggerSpec, Verdict, word_count

# --------------------------------------------------------------------------- quotes


_CHARS = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"', "\u00ab": '"', "\u00bb": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",
    "*": None, "_": None, "`": None,
})
_ELLIPSIS = re.compile(r"\s*\[?\.\.\.+\]?\s*")
_EDGES = " \t\n\"'.,;:"


def normalise(text: str) -> str:
    """Lower case, NFKC, one kind of quote and dash, no Markdown emphasis, single spaces."""
    text = unicodedata.normalize("NFKC", text).translate(_CHARS).lower()
    return re.sub(r"\s+", " ", text).strip()


def quote_found(evidence: str, response: str) -> bool:
    """Whether `evidence` is a verbatim quote of `response`, after `normalise` on both sides.
    Passages joined by an ellipsis must each occur, in order; surrounding quote marks and
    edge punctuation are ignored. A quote shorter than three words counts only when it is the
    whole response (so "the" never verifies)."""
    hay = normalise(response)
    parts = [p.strip(_EDGES) for p in _ELLIPSIS.split(normalise(evidence))]
    parts = [p for p in parts if p]
    if not parts or not hay:
        return False
    pos = 0
    for p in parts:
        found = hay.find(p, pos)
        if found < 0:
            return False
        pos = found + len(p)
    words = sum(len(p.split()) for p in parts)
    return words >= 3 or " ".join(parts) == hay.strip(_EDGES)


class QuoteError(ParseError):
    """The judge's evidence does not occur in the response."""


def parse_verdict(text: str, response: str) -> Verdict:
    """`{"label": PASS|PARTIAL|FAIL, "rationale": str, "evidence": str}`. PASS and PARTIAL need
    a verbatim quote; FAIL may leave `evidence` empty (the absence is the finding) but a quote
    it gives must verify too."""
    data = extract_json(text)
    if not isinstance(data, dict):
        raise ParseError("the answer must be a JSON object")
    label = data.get("label")
    if not isinstance(label, str) or label.strip().upper() not in SCORES:
        raise ParseError(f"`label` must be PASS, PARTIAL or FAIL, got {label!r}")
    label = label.strip().upper()
    rationale = data.get("rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        raise ParseError("`rationale` must be a non-empty string")
    evidence = data.get("evidence")
    if evidence is None:
        evidence = ""
    if not isinstance(evidence, str):
        raise ParseError("`evidence` must be a string (a verbatim quote from the response)")
    evidence = evidence.strip()
    if not evidence:
        if label != "FAIL":
            raise QuoteError(f"a {label} needs `evidence`: a verbatim quote from the response")
        return Verdict(label, rationale.strip(), "", None)
    if not quote_found(evidence, response):
        raise QuoteError(f"the evidence {evidence[:200]!r} does not occur in the response; "
                         "quote the response word for word (join separate passages with …)")
    return Verdict(label, rationale.strip(), evidence, True)


_SENTENCE = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+|\n+")


def best_sentence(criterion: str, response: str) -> str:
    """The response's sentence sharing most content words with `criterion` (first on ties):
    a quote that always verifies."""
    sentences = [s.strip() for s in _SENTENCE.split(response) if s.strip()]
    if not sentences:
        return ""
    best = max(sentences, key=lambda s: (coverage(criterion, s), -sentences.index(s)))
    return best if word_count(best) >= 3 else response.strip()


# --------------------------------------------------------------------------- judge


class TriggerJudge(Protocol):
    async def judge(self, t: TriggerSpec, history: list[dict[str, str]], response: str
                    ) -> Verdict:
        """`history`: the conversation up to and including the trigger turn's user message.
        Judge errors come back as a Verdict with `error` set, never raised."""
        ...


class LLMTriggerJudge(TriggerJudge):
    def __init__(self, call: JudgeCall, templates: Templates) -> None:
        self.call = call
        self.templates = templates

    def prompt(self, t: TriggerSpec, history: list[dict[str, str]], response: str) -> str:
        return self.templates.render("trigger_rubric.judge", type=t.type, turn=t.turn,
                                     rubric=t.rubric(), history=history, response=response)

    async def judge(self, t: TriggerSpec, history: list[dict[str, str]], response: str
                    ) -> Verdict:
        last: list[Verdict] = []

        def parse(text: str) -> Verdict:
            try:
                return parse_verdict(text, response)
            except QuoteError:
                data = extract_json(text)  # well-formed: keep what it claimed, for the audit
                last[:] = [Verdict(str(data.get("label", "")).upper() or None,
                                   str(data.get("rationale") or ""),
                                   str(data.get("evidence") or ""), False)]
                raise

        try:
            return await ask(self.call, self.prompt(t, history, response), parse,
                             purpose="trigger_judge", turn=t.turn)
        except JudgeError as exc:
            if last:
                v = last[0]
                return Verdict(None, v.rationale, v.evidence, False, exc.message)
            return Verdict(None, error=exc.message)


class RulesTriggerJudge(TriggerJudge):
    """A deterministic stand-in. Rubrics are prose, so a response never repeats most of their
    words: PASS when it holds at least `PASS_AT` of the pass criterion's content words, PARTIAL
    at `PARTIAL_AT` of the pass or the partial criterion's, else FAIL. The evidence is the
    response sentence closest to that criterion (none for FAIL), so quotes always verify. On the
    reference pack's dialogue this passes the authored answers (0.22–0.27 of the pass words)
    and fails a literal-minded agent (≤ 0.02)."""

    PASS_AT = 0.2
    PARTIAL_AT = 0.1

    async def judge(self, t: TriggerSpec, history: list[dict[str, str]], response: str
                    ) -> Verdict:
        # words the response only echoes from the user are not the agent's answer
        own = strip_echo(response, [str(m.get("content") or "") for m in history
                                    if m.get("role") == "user"])
        on_pass, on_partial = coverage(t.pass_, own), coverage(t.partial, own)
        if on_pass >= self.PASS_AT:
            label, criterion = "PASS", t.pass_
        elif max(on_pass, on_partial) >= self.PARTIAL_AT:
            label, criterion = "PARTIAL", t.pass_ if on_pass >= on_partial else t.partial
        else:
            return Verdict("FAIL", f"rules: {on_pass:.0%} of the pass criterion's words", "",
                           None)
        quote = best_sentence(criterion, own)
        if not quote_found(quote, response):
            quote = best_sentence(criterion, response)
        return Verdict(label, f"rules: {on_pass:.0%} of the pass criterion's words, "
                       f"{on_partial:.0%} of the partial one's", quote,
                       quote_found(quote, response) if quote else None)


class ScriptedTriggerJudge(TriggerJudge):
    """Labels per trigger from a script (see `roles.Script`):

    ```yaml
    sessions:
      <session name or plan id>:
        triggers:
          e-dropoff: PASS                                   # by trigger id …
          5: {label: PARTIAL, rationale: …, evidence: …}    # … or by turn
    ```
    A scripted quote is verified like any other (a miss is a judge error); without one, PASS
    and PARTIAL quote the response sentence closest to the criterion. A trigger with no entry
    is a judge error."""

    def __init__(self, script: dict[str, Any]) -> None:
        self.labels = {str(k): v for k, v in (script.get("triggers") or {}).items()}

    async def judge(self, t: TriggerSpec, history: list[dict[str, str]], response: str
                    ) -> Verdict:
        entry = self.labels.get(t.id, self.labels.get(str(t.turn)))
        if entry is None:
            return Verdict(None, error=f"no scripted label for trigger `{t.id}` (turn {t.turn})")
        if not isinstance(entry, dict):
            entry = {"label": entry}
        label = str(entry.get("label", "")).upper()
        if label not in SCORES:
            return Verdict(None, error=f"scripted label {label!r} is not PASS/PARTIAL/FAIL")
        rationale = str(entry.get("rationale") or "scripted")
        evidence = entry.get("evidence")
        if evidence is None:
            criterion = t.pass_ if label == "PASS" else t.partial
            evidence = best_sentence(criterion, response) if label != "FAIL" else ""
        evidence = str(evidence)
        if not evidence:
            return Verdict(label, rationale, "", None)
        if not quote_found(evidence, response):
            return Verdict(None, rationale, evidence, False,
                           f"the evidence {evidence[:200]!r} does not occur in the response")
        return Verdict(label, rationale, evidence, True)
