"""Verified outcome (Claw-Anything). The agent works in an environment of services, devices
(tool groups) and noisy event streams; the protocol only decides what wakes it and when the
session ends. Grading happens afterwards, for every session, in `session.grade_checklist`: rule
checks on final state and tool usage plus rubric judgements (template
`verified_outcome.rubric_judge`, which also sees the pack's `reference_solution`) combine into
a soft score, capped by safety caps, and a pass/fail (`graders/verify.py`).

Triggers:

- `user_message` (reactive): the request, then the agent works with its own tool loop. If its
  turn asks the user something — an `ask_user` call, or a sentence of its reply ending in `?` —
  the user simulator answers and the agent gets another turn, up to `limits.max_turns` agent
  turns; otherwise the session ends after that answer.
- `webhook` / `structured_input`: the same, opened by the environment event with its payload.
- `heartbeat` (proactive): one agent turn per beat of the environment's schedule, each an
  environment event `{kind, beat, of, time, source, text}` with no user message; `time`
  advances by the schedule's interval. Nobody answers questions (there is no user present);
  the session ends after the last beat.

User simulator, by the run's `simulator` role: `rules` answers every question with the neutral
`NEUTRAL_REPLY` (it never supplies facts, so the outcome rests on the agent's own reading of the
environment); `scripted:<file>` gives `sessions: {<session>: {replies: [...]}}`, one reply per
question round in order (then the neutral reply); `llm` plays the persona with the
`verified_outcome.user_turn` template, answering only from the persona's profile and otherwise
telling the agent to use its judgement. A simulator failure falls back to the neutral reply and
counts as a judge error.

Terminations: `answered` (the agent answered without asking), `heartbeats_done` (every beat
delivered), `turn_budget` (the agent was still asking at `max_turns`), `error` (the agent
failed). Metrics: `heartbeats` (beats delivered, proactive sessions), and in `extra`:
`trigger`, `questions` (question rounds), `beat_times`, `stop_reason` of the last turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchpack.specs.text import question_sentences

from ..judges.base import JudgeError
from ..judges.outcome_user import NEUTRAL_REPLY, Simulator, simulator
from .base import ProtocolDefaults, ProtocolResult

if TYPE_CHECKING:
    from benchpack.specs.plan import Plan, PlanSession

    from ..judges.intent import TurnEvidence
    from ..session import SessionContext

DEFAULT_MAX_TURNS = 4


def questions_in(ev: TurnEvidence) -> list[str]:
    """What the agent asked the user this turn: `ask_user` questions, else the sentences of its
    reply that ask something (`specs.text.question_sentences`)."""
    asked = [q.strip() for q in ev.questions if q.strip()]
    if asked:
        return asked
    return question_sentences(ev.text)


class VerifiedOutcome(ProtocolDefaults):
    name = "verified_outcome"
    metric_columns = ("heartbeats",)
    pass_k = True

    def worst_scores(self, plan: Plan, s: PlanSession, metrics: dict[str, Any]
                     ) -> dict[str, Any]:
        return {"score": 0.0, "passed": False}

    async def run(self, ctx: SessionContext) -> ProtocolResult:
        if ctx.session.trigger.kind == "heartbeat":
            return await self._proactive(ctx)
        return await self._reactive(ctx)

    async def _reactive(self, ctx: SessionContext) -> ProtocolResult:
        s = ctx.session
        max_turns = s.limits.max_turns or DEFAULT_MAX_TURNS
        sim: Simulator | None = None
        errors: list[str] = []
        rounds = 0
        message, event = ctx.opening()
        termination = "answered"
        stop = None
        for turn in range(1, max_turns + 1):
            reply, ev = await ctx.agent_turn(turn, message, event)
            event = None
            stop = reply.stop_reason
            if stop == "error":
                termination = "error"
                break
            questions = questions_in(ev)
            if not questions:
                break
            if turn == max_turns:
                termination = "turn_budget"
                break
            rounds += 1
            sim = sim or simulator(ctx)
            try:
                message = await sim.answer(questions, ctx.history(), turn)
            except JudgeError as exc:
                errors.append(f"turn {turn}: {exc}")
                message = NEUTRAL_REPLY
        extra: dict[str, Any] = {"trigger": s.trigger.kind, "questions": rounds,
                                 "stop_reason": stop}
        if errors:
            extra["judge_errors"] = errors
        return ProtocolResult(termination=termination, judge_errors=len(errors), extra=extra)

    async def _proactive(self, ctx: SessionContext) -> ProtocolResult:
        templates = ctx.roles.templates
        beats = ctx.heartbeat_events()
        delivered = 0
        termination = "heartbeats_done"
        stop = None
        for turn, beat in enumerate(beats, start=1):
            event = {**beat, "text": templates.render(
                "heartbeat.wake", beat=beat["beat"], of=beat["of"], time=beat["time"],
                message=beat["text"]).strip()}
            reply, _ = await ctx.agent_turn(turn, None, event)
            delivered += 1
            stop = reply.stop_reason
            if stop == "error":
                termination = "error"
                break
        return ProtocolResult(
            termination=termination, metrics={"heartbeats": delivered},
            extra={"trigger": "heartbeat", "beat_times": [b["time"] for b in beats[:delivered]],
                   "stop_reason": stop})


__all__ = ["VerifiedOutcome", "questions_in"]
