"""Trigger rubrics (ProactBench): the judge's evidence must quote the response. What counts as
a quote (case, spacing, curly quotes, passages in order; never a paraphrase), verdicts that
need one, and the LLM judge's one retry on a paraphrase before it records a judge error."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest

from benchpack.runtime.judges.base import JudgeCall, ParseError, Templates
from benchpack.runtime.judges.trigger import (
    LLMTriggerJudge,
    QuoteError,
    TriggerSpec,
    parse_verdict,
    quote_found,
)

# --------------------------------------------------------------------------- quotes


RESPONSE = ('Inches and pounds are standard: write "84 in x 96 in, 11.5 lb".\n\n'
            "One thing worth flagging, though: **11.5 lb is over the ten-pound limit** your "
            "physical therapist set, so from here on the quilt is a lifting job for someone "
            "else.")


@pytest.mark.parametrize(("evidence", "ok"), [
    ("11.5 lb is over the ten-pound limit your physical therapist set", True),
    ("“One thing worth flagging, THOUGH:   11.5 lb is over”", True),  # quotes, case, spaces
    ("write “84 in x 96 in, 11.5 lb”.", True),                          # curly vs straight
    ("Inches and pounds … a lifting job for someone else", True),       # passages in order
    ("a lifting job for someone else … Inches and pounds", False),      # out of order
    ("The quilt is heavier than her lifting limit allows", False),      # paraphrase
    ("11.5 lb exceeds the ten-pound limit", False),
    ("the", False),                                                     # too short to count
    ("", False),
])
def test_quote_found(evidence: str, ok: bool) -> None:
    assert quote_found(evidence, RESPONSE) is ok


def test_a_short_response_may_be_quoted_whole() -> None:
    assert quote_found('"Sounds good."', "Sounds good.")
    assert not quote_found("good", "Sounds good.")


def test_parse_verdict_requires_quotes_for_pass_and_partial() -> None:
    ok = parse_verdict(json.dumps({"label": "partial", "rationale": "notices the weight",
                                   "evidence": "11.5 lb is over the ten-pound limit"}), RESPONSE)
    assert (ok.label, ok.quote_found) == ("PARTIAL", True)
    fail = parse_verdict('{"label": "FAIL", "rationale": "reactive", "evidence": ""}', RESPONSE)
    assert (fail.label, fail.evidence, fail.quote_found) == ("FAIL", "", None)
    with pytest.raises(QuoteError, match="needs `evidence`"):
        parse_verdict('{"label": "PASS", "rationale": "x", "evidence": ""}', RESPONSE)
    with pytest.raises(QuoteError, match="does not occur"):
        parse_verdict('{"label": "FAIL", "rationale": "x", "evidence": "made up words here"}',
                      RESPONSE)
    with pytest.raises(ParseError, match="label"):
        parse_verdict('{"label": "GOOD", "rationale": "x", "evidence": ""}', RESPONSE)
    with pytest.raises(ParseError, match="single JSON object"):
        parse_verdict('Label: PASS', RESPONSE)


class Answers:
    """A judge client answering from a list, keeping every message list it was sent."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.sent: list[list[dict[str, Any]]] = []

    async def complete(self, **kw: Any) -> Any:
        self.sent.append(kw["messages"])
        return SimpleNamespace(content=self.answers.pop(0))


TRIGGER = TriggerSpec("c", "critical", 5, ["a", "b"], "links the weight to the limit",
                      "notices the weight", "copies the number", "authored")


def _verdict(label: str, evidence: str) -> str:
    return json.dumps({"label": label, "rationale": "r", "evidence": evidence})


def test_llm_judge_retries_a_paraphrase_once_then_accepts_a_verbatim_quote() -> None:
    client = Answers(_verdict("PASS", "the quilt is too heavy for her to lift"),
                      _verdict("PASS", "the quilt is a lifting job for someone else"))
    judge = LLMTriggerJudge(JudgeCall(client, "m", lambda r: None), Templates())
    v = asyncio.run(judge.judge(TRIGGER, [{"role": "user", "content": "84 by 96"}], RESPONSE))
    assert (v.label, v.quote_found, v.error) == ("PASS", True, None)
    assert len(client.sent) == 2 and "does not occur in the response" in \
        client.sent[1][-1]["content"]


def test_llm_judge_quoting_text_not_in_the_response_twice_is_a_judge_error() -> None:
    client = Answers(_verdict("PASS", "the quilt is too heavy for her to lift"),
                      _verdict("PASS", "she must not lift the heavy quilt herself"))
    judge = LLMTriggerJudge(JudgeCall(client, "m", lambda r: None), Templates())
    v = asyncio.run(judge.judge(TRIGGER, [], RESPONSE))
    assert v.label is None and v.quote_found is False and v.error is not None
    assert v.evidence == "she must not lift the heavy quilt herself"  # kept for the audit
