"""Judges of `score:` items (verified_outcome): NL criteria answered YES/NO or on a scale.

Every judge returns, per item id, `(raw answer, rationale, error)`; `graders.graded.grade_item`
turns the raw answer into a 0–1 score (a number off the item's scale is a judge error). An item
the judge did not answer is an error, never a 0.

- LLM: template `verified_outcome.score_judge`, one call per distinct evidence selection.
- rules (deterministic fallback, CI): the share c of the criterion's content words found in what
  the agent produced (`rubric.agent_output`, echoes of the user stripped): YES when c ≥ 0.6, on
  a scale `lo + c·(hi − lo)` rounded to the scale's step of 1 when the scale is integral. A
  YES/NO criterion that forbids ("should not", "不应" …) is judged by the absence of what it
  forbids, and is undecided (an error, never NO) when the words are there (`negation`).
- scripted: the session's `score: {<item id>: <answer>}` (YES/NO or a number), falling back to
  its `checklist:` entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..graders.graded import judge_answer_json
from . import negation
from .base import JudgeCall, ParseError, Templates, ask
from .intent import coverage

if TYPE_CHECKING:
    from ..roles import JudgeSite

Answer = tuple[Any, str, "str | None"]
"""(raw answer, rationale, error)."""
RULES_THRESHOLD = 0.6


@dataclass
class ScoreQuestion:
    id: str
    text: str
    scale: tuple[float, float] | None
    evidence: str = ""
    """Rendered evidence selected by field (`graders.evidence.render`)."""


class ScoreJudge(Protocol):
    async def answer(self, questions: Sequence[ScoreQuestion], history: str,
                     own: str) -> dict[str, Answer]:
        ...


class LLMScoreJudge:
    def __init__(self, call: JudgeCall, templates: Templates, context: dict[str, Any]) -> None:
        self.call = call
        self.templates = templates
        self.context = context

    async def answer(self, questions: Sequence[ScoreQuestion], history: str,
                     own: str) -> dict[str, Answer]:
        from .base import JudgeError

        groups: dict[str, list[ScoreQuestion]] = {}
        for q in questions:
            groups.setdefault(q.evidence, []).append(q)
        out: dict[str, Answer] = {}
        for evidence, group in groups.items():
            prompt = self.templates.render(
                "verified_outcome.score_judge", **self.context, history=history,
                evidence=evidence,
                criteria=[{"id": q.id, "text": q.text,
                           "scale": [f"{x:g}" for x in q.scale] if q.scale else None} for q in group])
            ids = [q.id for q in group]

            def parse(text: str, _ids: list[str] = ids) -> dict[str, tuple[Any, str]]:
                got = judge_answer_json(text)
                if not any(i in got for i in _ids):
                    raise ParseError('expected {"scores": [{"id", "score", "reason"}, …]} '
                                     f"for ids {_ids}")
                return got

            try:
                got = await ask(self.call, prompt, parse, purpose="score")
            except JudgeError as exc:
                out.update({q.id: (None, "", exc.message) for q in group})
                continue
            for q in group:
                raw, reason = got.get(q.id, (None, ""))
                out[q.id] = (raw, reason, None if q.id in got else "the judge gave no answer")
        return out


class RulesScoreJudge:
    async def answer(self, questions: Sequence[ScoreQuestion], history: str,
                     own: str) -> dict[str, Answer]:
        out: dict[str, Answer] = {}
        for q in questions:
            neg = negation.judge(q.text, own) if q.scale is None else None
            if neg is not None:
                ok, why, _ = neg
                out[q.id] = (("YES" if ok else "NO"), why, None) if ok is not None else \
                    (None, why, why)
                continue
            c = coverage(q.text, own)
            why = (f"rules (keyword heuristic): {c:.0%} of key words in what the agent said, "
                   "did or wrote")
            if q.scale is None:
                out[q.id] = ("YES" if c >= RULES_THRESHOLD else "NO", why, None)
            else:
                lo, hi = q.scale
                x = lo + c * (hi - lo)
                if float(lo).is_integer() and float(hi).is_integer():
                    x = float(round(x))
                out[q.id] = (x, why, None)
        return out


class ScriptedScoreJudge:
    def __init__(self, script: dict[str, Any]) -> None:
        self.scores = {**(script.get("checklist") or {}), **(script.get("score") or {})}

    async def answer(self, questions: Sequence[ScoreQuestion], history: str,
                     own: str) -> dict[str, Answer]:
        return {q.id: ((self.scores[q.id], "scripted", None) if q.id in self.scores
                       else (None, "", "no scripted score for this item")) for q in questions}


def score_judge(ctx: JudgeSite) -> ScoreJudge:
    """The judge of a session's `score:` items, from the run's `judge` role."""
    roles = ctx.roles
    s = ctx.session
    task = {"title": s.title, "request": s.request, "trigger": s.trigger.kind,
            "payload": s.trigger.payload}
    mode = roles.mode("judge")
    if mode == "rules":
        return RulesScoreJudge()
    if mode == "scripted":
        return ScriptedScoreJudge(roles.script(ctx, "judge"))
    return LLMScoreJudge(roles.call(ctx, "judge"), roles.templates,
                         {"task": task, "intents": [],
                          "reference_solution": s.reference_solution})


__all__ = ["LLMScoreJudge", "RulesScoreJudge", "ScoreJudge", "ScoreQuestion",
           "ScriptedScoreJudge", "score_judge"]
