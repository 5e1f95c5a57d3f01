"""Grading a session's `score:` block (verified_outcome, issue 12).

One function for both callers: `bench run` (`session.grade_checklist`, over the live session)
and `bench rejudge` (over the trace it rebuilds from the store). Neither may grade differently,
or a rejudged run's figures would not be what a run with the new judge gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchpack.specs.plan import Plan

from .graders import Trace
from .types import Message

if TYPE_CHECKING:
    from .roles import JudgeSite


@dataclass
class ScoreOutcome:
    final: float | None
    passed: bool | None
    judge_errors: int
    rows: list[tuple[Any, ...]]
    """`score_components` rows without the (run_id, session_id, repeat) prefix."""
    extra: dict[str, Any]
    """What `sessions.extra.score` records."""
    errors: list[str]
    """`<item id>: <why>` for each judge error."""


async def grade_score_block(site: JudgeSite, plan: Plan, trace: Trace,
                            messages: Sequence[Message], history: str,
                            guards: Sequence[str] = ()) -> ScoreOutcome:
    """Grade `site.session.score` (`graders.verify.score_card`): judged items and assertions go
    to the score judge, the rest are computed from `trace` (the in-task trace,
    `session.grading_trace`). `messages`: the in-task messages, all roles; `history`: the
    transcript the judge reads. A judge error leaves its item unscored (and what depends on it
    unknown), never 0. `guards`: the items that held before the agent acted
    (`graders.guards`): without an achieved outcome the block scores 0."""
    from .graders.evidence import render as render_fields
    from .graders.verify import score_card, score_questions, score_rows
    from .judges.rubric import agent_output
    from .judges.score import ScoreQuestion, score_judge
    from .session import initial_files

    s = site.session
    assert s.score is not None
    score = s.score.model_dump(mode="json", by_alias=True, exclude_none=True)
    records = trace.tool_records
    questions = [ScoreQuestion(qid, text, scale,
                               render_fields(sel, records) if sel else "")
                 for qid, text, scale, sel in score_questions(score)]
    judged = {}
    if questions:
        own = agent_output(messages, records, trace.files, initial_files(plan, s))
        judged = await score_judge(site).answer(questions, history, own)
    card, detail = score_card(score, trace, judged, guards)
    errors = [f"{q.id}: {err}" for q in questions
              if (err := judged.get(q.id, (None, "", "the judge gave no answer"))[2])]
    errors += [f"{it.id}: {it.error}" for it in card.items
               if it.id in judged and it.error and not judged[it.id][2]]  # off the scale
    return ScoreOutcome(card.final, card.passed, len(errors), score_rows(card, detail, score),
                        {k: v for k, v in card.extra().items() if k != "items"}, errors)


__all__ = ["ScoreOutcome", "grade_score_block"]
