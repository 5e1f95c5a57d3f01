"""The verified-outcome user simulators (`rules`, `scripted`, `llm`), beside the other
protocols' simulators: the user a verified-outcome session's agent may ask, who never supplies
facts (the outcome rests on the agent's own reading of the task). The protocol
(`protocols/verified_outcome.py`) decides when the user is asked; this module only answers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from .base import JudgeCall, Templates, ask, parse_tagged

if TYPE_CHECKING:
    from ..session import SessionContext

NEUTRAL_REPLY = "I can't add anything right now. Please proceed with your best judgement."


class Simulator(Protocol):
    async def answer(self, questions: list[str], history: list[dict[str, str]],
                     turn: int) -> str:
        ...


class RulesSimulator:
    async def answer(self, questions: list[str], history: list[dict[str, str]],
                     turn: int) -> str:
        return NEUTRAL_REPLY


class ScriptedSimulator:
    def __init__(self, script: dict[str, Any]) -> None:
        self.replies = [str(r) for r in script.get("replies") or []]
        self.used = 0

    async def answer(self, questions: list[str], history: list[dict[str, str]],
                     turn: int) -> str:
        self.used += 1
        return self.replies[self.used - 1] if self.used <= len(self.replies) else NEUTRAL_REPLY


class LLMSimulator:
    def __init__(self, call: JudgeCall, templates: Templates, persona: dict[str, Any],
                 style: dict[str, Any] | None, request: str | None, trigger: str) -> None:
        self.call = call
        self.templates = templates
        self.persona = persona
        self.style = style
        self.request = request
        self.trigger = trigger

    async def answer(self, questions: list[str], history: list[dict[str, str]],
                     turn: int) -> str:
        prompt = self.templates.render(
            "verified_outcome.user_turn", persona=self.persona, style=self.style,
            request=self.request, trigger=self.trigger, history=history[-12:],
            questions=questions, neutral=NEUTRAL_REPLY)
        return await ask(self.call, prompt, lambda t: parse_tagged(t, "message"),
                         purpose="user_answer", turn=turn)


def simulator(ctx: SessionContext) -> Simulator:
    """The session's user simulator, from the run's `simulator` role."""
    roles = ctx.roles
    s = ctx.session
    sim: Simulator = roles.build(
        ctx, "simulator", rules=RulesSimulator, scripted=ScriptedSimulator,
        llm=lambda call: LLMSimulator(call, roles.templates, ctx.persona.model_dump(mode="json"),
                                      s.style.model_dump(mode="json") if s.style else None,
                                      s.request, s.trigger.kind))
    return sim


__all__ = ["NEUTRAL_REPLY", "LLMSimulator", "RulesSimulator", "ScriptedSimulator", "Simulator",
           "simulator"]
