"""Trigger-rubric roles: the planner, the user agent and the judge, each in three modes.

- `llm`: our templates (`trigger_rubric.planner`, `.user`, `.judge`) with strict output; a
  malformed or rule-breaking answer is retried once with the problem shown.
- `rules`: deterministic stand-ins for tests, CI and demos (no API keys).
- `scripted`: decisions from a file (see `ScriptedPlanner`, `ScriptedUserAgent`,
  `ScriptedTriggerJudge`), to reproduce a published dialogue or judgement exactly.

What each role sees is the point of the protocol: the planner sees the persona and the scenario
but never the communication style; the user agent sees the persona, the style and the planner's
order but not the hidden goal; the judge sees the conversation up to the scored response and the
rubric, never the persona or the style.

The code is split by role (house rule: no file past ~600 lines): `trigger_shapes` (what the
roles exchange and the rules of play), `trigger_planner`, `trigger_user`, `trigger_verdicts`
(the judge and its quote check). This module wires the roles for a session and re-exports every
public name, so `from .judges.trigger import …` keeps working.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .trigger_planner import (
    LLMPlanner,
    Planner,
    RulesPlanner,
    ScriptedPlanner,
    parse_decision,
)
from .trigger_shapes import (
    MIN_ANCHORS,
    PER_WINDOW,
    SCORES,
    WINDOWS,
    Decision,
    Order,
    PlannerState,
    Scenario,
    TriggerSpec,
    Verdict,
    window_of,
    word_count,
)
from .trigger_user import (
    NEUTRAL_DIRECTIVE,
    TRAIT_DIRECTIVES,
    LLMUserAgent,
    RulesUserAgent,
    ScriptedUserAgent,
    UserAgent,
    fit,
    length_problem,
    trait_directives,
)
from .trigger_verdicts import (
    LLMTriggerJudge,
    QuoteError,
    RulesTriggerJudge,
    ScriptedTriggerJudge,
    TriggerJudge,
    best_sentence,
    normalise,
    parse_verdict,
    quote_found,
)

if TYPE_CHECKING:
    from ..roles import JudgeSite
    from ..session import SessionContext


# --------------------------------------------------------------------------- roles


@dataclass
class LiveRoles:
    """Who writes a live dialogue, with the deterministic stand-ins used when they fail."""

    planner: Planner
    user: UserAgent
    scenario: Scenario
    fallback_planner: RulesPlanner
    fallback_user: RulesUserAgent


def live_roles(ctx: SessionContext) -> LiveRoles:
    """The planner (role `planner`: persona and scenario, never the style) and the user agent
    (role `simulator`) of a live trigger-rubric session."""
    roles = ctx.roles
    s = ctx.session
    scenario = Scenario(s.scenario)
    persona = {"name": ctx.persona.name, "profile": ctx.persona.profile.model_dump(mode="json")}
    planner: Planner = roles.build(
        ctx, "planner", rules=lambda: RulesPlanner(scenario), scripted=ScriptedPlanner,
        llm=lambda call: LLMPlanner(call, roles.templates, persona, scenario))
    user: UserAgent = roles.build(
        ctx, "simulator", rules=lambda: RulesUserAgent(s.style),
        scripted=lambda script: ScriptedUserAgent(s.style, script),
        llm=lambda call: LLMUserAgent(call, roles.templates, persona, s.style, scenario))
    return LiveRoles(planner, user, scenario, RulesPlanner(scenario), RulesUserAgent(s.style))


def trigger_judge(ctx: JudgeSite) -> TriggerJudge:
    """The judge (role `judge`): conversation and rubric only, never persona or style."""
    roles = ctx.roles
    judge: TriggerJudge = roles.build(
        ctx, "judge", rules=RulesTriggerJudge, scripted=ScriptedTriggerJudge,
        llm=lambda call: LLMTriggerJudge(call, roles.templates))
    return judge


__all__ = [
    "MIN_ANCHORS", "NEUTRAL_DIRECTIVE", "PER_WINDOW", "SCORES", "TRAIT_DIRECTIVES", "WINDOWS",
    "Decision", "LLMPlanner", "LLMTriggerJudge", "LLMUserAgent", "LiveRoles", "Order", "Planner",
    "PlannerState", "QuoteError", "RulesPlanner", "RulesTriggerJudge", "RulesUserAgent",
    "Scenario", "ScriptedPlanner", "ScriptedTriggerJudge", "ScriptedUserAgent", "TriggerJudge",
    "TriggerSpec", "UserAgent", "Verdict", "best_sentence", "fit", "length_problem", "live_roles",
    "normalise", "parse_decision", "parse_verdict", "quote_found", "trait_directives",
    "trigger_judge", "window_of", "word_count",
]
