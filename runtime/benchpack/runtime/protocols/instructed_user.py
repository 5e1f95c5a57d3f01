"""Instructed users (τ²-bench). The user simulator follows the session's scenario (`user:` —
reason for contact, what it knows, what it does not know, conditional instructions), the agent
works with its tools, and the dialogue ends with the user's stop signal, the turn budget or a
message limit. Afterwards the session is scored pass/fail from the `score:` block (`reward`,
τ²-style).

Dialogue: with `conversation.greeting` the transcript starts with the agent's greeting (turn
0, also the agent's `brief.history`); the user opens with the session's request (by default
the scenario's `reason`), or, an LLM user after a greeting, with its reply to it; then, after
each agent turn, the simulator either replies or ends with a stop signal — `done` (the goal is
reached or the agent considers it finished), `transfer` (the agent handed the user to a human),
`out_of_scope` (the scenario does not cover what is needed). Terminations: the stop signal,
`turn_budget` (still talking at `limits.max_turns` agent turns), `max_messages` and
`max_tool_errors` (τ²'s `max_steps` and `max_errors`, `types.MessageBudget`: counted and checked
where τ² counts and checks — user messages, each agent model response and each tool-result
batch; a stop signal in the message that reaches the limit loses to it), `agent_stopped` (a
scripted agent ran out of turns), `agent_error` (solo mode with `conversation.end_tool`: the
agent answered with text instead of calling it, τ²'s ending for a solo agent's text), `error`.
The signal is in `sessions.termination` and `extra.stop_signal` (None when the user never gave
one or a limit won).

Message limits and adapters: `litellm:` counts its own responses and batches and stops
mid-turn (`session_limit`) right after the batch that reaches a limit. Any other adapter is
counted by the toolbox, two messages a call (its call message and its result) — exact for an
agent making one call per model response, an overcount for parallel calls — and the final text
by this module; once a limit is reached the toolbox refuses every further call (not run, not
recorded) and the session ends when the turn does (`scripted:` agents stop at once, as τ²).

Simulators, by the run's `simulator` role (`judges.instructed_user`):

- `rules` (deterministic, offline; `RulesUser`), after each agent turn, in this order:
  1. the agent transferred (a successful call of a tool whose name contains `transfer`, or a
     message saying it transfers to a human / 转人工) → `transfer`;
  2. structured instructions not applied yet whose `if` words occur in the agent's message, or
     whose `after_turn` is reached, are said (all that apply, in order); one with `stop` ends
     the dialogue with that signal;
  3. the agent asked nothing (it considers the work finished), or every gold action has been
     made (the `actions` check so far) → the next `after_turn` instruction still pending is
     said now (the user raises its next request instead of leaving), else `done`;
  4. the agent asked something (a `?`/`？` sentence or `ask_user`): each `known` item sharing a
     content word (Latin words of 3+ letters outside a small stop list, or two CJK characters)
     with the question is told; each such `unknown` item gets "I don't know"; nothing matching
     → "I don't have any other information."
  Plain-text instructions are for the LLM simulator; the rules simulator ignores them.
- `scripted:<file>`: `sessions: {<session>: {opening: …, turns: [text | {say, stop}]}}`; one
  entry per agent turn, in order; a text may carry a stop token (below); after the last entry
  the user says `done`.
- LLM, `conversation.simulator: tagged` (default): the `instructed_user.user_turn` template, the
  answer in one `<message>` block; `chat` (τ²): the `instructed_user.user_system` system prompt
  and the dialogue with roles flipped, the reply's content being the message. Stop tokens
  (`###STOP###` done, `###TRANSFER###`, `###OUT-OF-SCOPE###`): with `conversation.stop_tokens:
  end` (default) at most one, at the end — anything else that looks like a token, two tokens,
  or a token followed by text is malformed: asked once more, then the session ends as a
  simulator error; with `anywhere` (τ²) any token anywhere ends the dialogue.

Scoring (`reward` components, each 0 or 1, stored in `extra.reward`; `score` is their product
and `passed` is `score >= pass_threshold`): `state` replays the gold actions through the same
tools on a copy of the environment as the session found it and compares the final service
states (hash, and a readable diff when they differ); `actions` finds each gold action among the
agent's calls (`graders.actions`: successful ones; `match: tau2` any); `communicate` finds each
string in an agent message (`graders.communicate`, `score.communicate_match`); `assertions`
asks the rubric judge (YES/NO), or with `score.assertions_judge: tau2` one τ²-style judge call
for all (`judges.instructed_user.judge_tau2`; LLM judges only — rules and scripted judges
decide them as for `rubric`). A component that could not be decided (the gold failed on replay,
a judge error) is None and so are `score` and `passed`: unknown, never 0. With
`conversation.unfinished: fail` (τ²) a dialogue that did not end with the user's stop signal
scores 0 (`extra.reward.unfinished` names its termination), its assertions unjudged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..graders import actions as actions_grader
from ..graders import communicate as communicate_grader
from ..graders import env_assertions
from ..graders.state import check_state
from ..judges.base import JudgeError, ParseError
from ..judges.instructed_user import (
    STOP_TOKENS,
    TOKEN_FOR,
    ChatUser,
    LLMUser,
    RulesUser,
    ScriptedUser,
    UserSimulator,
    judge_tau2,
    parse_stop,
    simulator,
)
from ..rejudge_types import RejudgeInput, RejudgePart
from ..types import AgentReply, Message, MessageBudget
from ..user_side import InitialStateError, all_records, apply_initial_state, user_tools
from .base import ProtocolDefaults, ProtocolResult

if TYPE_CHECKING:
    from collections.abc import Sequence

    from benchpack.specs.plan import Plan, PlanSession

    from ..roles import JudgeSite
    from ..session import SessionContext

NAME = "instructed_user"
USER_STOPS = frozenset(STOP_TOKENS.values())
"""Terminations that are the user's stop signal: the only finished dialogues for
`conversation.unfinished: fail`."""


def budget_of(ctx: SessionContext) -> MessageBudget | None:
    """The session's message budget (None without `limits.max_messages`/`max_tool_errors`),
    handed to the toolbox and the agent's brief."""
    lim = ctx.session.limits
    if lim.max_messages is None and lim.max_tool_errors is None:
        return None
    budget = MessageBudget(lim.max_messages, lim.max_tool_errors)
    ctx.toolbox.budget = budget
    ctx.brief.budget = budget
    return budget


def greet(ctx: SessionContext) -> None:
    """The agent's greeting, in the transcript (turn 0) and in the agent's history."""
    conv = ctx.session.conversation
    if (ctx.session.initial_state or {}).get("history"):
        return  # τ²: a session that starts from a prior conversation has no greeting
    if conv is not None and conv.greeting:
        ctx.messages.append(Message("assistant", conv.greeting, 0))
        ctx.brief.history = [*ctx.brief.history, Message("assistant", conv.greeting, 0)]


class _Dialogue:
    """The user side of one session's loop: the simulator, the budget, the termination."""

    def __init__(self, ctx: SessionContext) -> None:
        self.ctx = ctx
        self.budget = budget_of(ctx)
        greet(ctx)
        self.sim: UserSimulator = simulator(ctx)
        self.termination: str = "turn_budget"
        self.stop: str | None = None

    def user_said(self, text: str, stop: str | None, turn: int) -> bool:
        """Count a user message; True when the dialogue ends with it (its stop signal, or a
        limit it reached — then the limit names the ending). A message that ends the dialogue
        is stored here; one that goes on is stored by the agent's next turn."""
        reason = None
        if self.budget is not None:
            self.budget.count()
            reason = self.budget.check()
        if stop is None and reason is None:
            return False
        if text:
            self.ctx.messages.append(Message("user", text, turn))
        if reason is not None:
            self.termination, self.stop = reason, None
        elif stop is not None:
            self.termination, self.stop = stop, stop
        return True

    def agent_done(self, reply: AgentReply) -> bool:
        """After an agent turn: True when a limit ended the dialogue."""
        if self.budget is None:
            return False
        if not self.budget.agent_counts and reply.stop_reason != "session_limit":
            self.budget.count()  # the turn's answer; its tool calls were counted by the toolbox
        reason = self.budget.check()
        if reason is not None:
            self.termination = reason
        return reason is not None


class InstructedUser(ProtocolDefaults):
    name = NAME
    pass_k = True

    def worst_scores(self, plan: Plan, s: PlanSession, metrics: dict[str, Any]
                     ) -> dict[str, Any]:
        return {"score": 0.0, "passed": False}

    async def rejudge(self, inp: RejudgeInput) -> RejudgePart:
        """The reward (`extra.reward`) with its assertions re-judged and the product
        recombined (`combine_reward`); the state, action and communicate checks stand as
        stored (they replayed tools on the final state, no judge)."""
        from ..session import render_transcript  # the session module imports the protocols

        stored = inp.extra.get("reward")
        if not isinstance(stored, dict):
            raise UsageError("the source run stored no reward for this session (extra.reward)")
        sc = reward_spec(inp.site.session)
        components = dict(stored.get("components") or {})
        out = {k: v for k, v in stored.items()
               if k not in ("basis", "components", "score", "passed")}
        errors: list[str] = []
        if sc["assertions"]:
            verdicts, _ = await judge_assertion_texts(
                inp.site, inp.plan, sc["assertions"], inp.messages, inp.records, inp.files,
                render_transcript(inp.messages, inp.records))
            out["assertions"] = verdicts
            components["assertions"] = assertions_component(verdicts)
            errors = [f"assertion {i}: {v['error']}" for i, v in enumerate(verdicts, start=1)
                      if v["error"] is not None]
        reward = combine_reward(sc, components, out)
        return RejudgePart(metrics={"score": reward["score"], "passed": reward["passed"]},
                           extra={"reward": reward}, errors=errors, judge_errors=len(errors))

    async def run(self, ctx: SessionContext) -> ProtocolResult:
        s = ctx.session
        try:  # τ²'s set_state: the world and conversation the session starts from
            await apply_initial_state(ctx)
        except InitialStateError as exc:
            return ProtocolResult(termination="error", error=str(exc), error_kind="infrastructure",
                                  extra={"stop_signal": None})
        # the state the gold actions are replayed on (after the initial state); its rows not
        # copied but held (a service never changes a row in place): the replay holds these very
        # objects, so the warm worker of an earlier episode that started alike can serve it
        initial = ctx.env.snapshot(rows="none")
        initial["live_rows"] = {n: svc.live_rows() for n, svc in ctx.env.services.items()}
        if s.conversation is not None and s.conversation.solo:
            return await solo(ctx, initial)
        max_turns = s.limits.max_turns or 30
        d = _Dialogue(ctx)
        try:
            prior = ctx.extra.pop("prior_opening", None)
            message, stop = (prior, None) if prior is not None else \
                await d.sim.open(s.request or "", ctx)
            ended = d.user_said(message, stop, 1)
            for turn in range(1, max_turns + 1):
                if ended:
                    break
                reply, ev = await ctx.agent_turn(turn, message, None)
                if reply.stop_reason == "error":
                    return ProtocolResult(termination="error", extra={"stop_signal": None})
                if reply.stop_reason == "script_end":
                    d.termination = "agent_stopped"
                    break
                if d.agent_done(reply):
                    break
                message, stop = await d.sim.reply(ev, ctx, turn)
                # the closing words belong to the transcript, with no agent turn
                ended = d.user_said(message, stop, turn + 1)
        except (JudgeError, ParseError) as exc:
            return ProtocolResult(termination="error", error=f"user simulator: {exc}",
                                  error_kind="simulator", extra={"stop_signal": None})
        reward, judge_errors = await score(ctx, initial, d.termination)
        extra = {"stop_signal": d.stop, "reward": reward}
        return ProtocolResult(termination=d.termination, judge_errors=judge_errors,
                              metrics={"score": reward["score"], "passed": reward["passed"]},
                              extra=extra)


async def solo(ctx: SessionContext, initial: dict[str, Any]) -> ProtocolResult:
    """Solo mode (`conversation.solo`, τ²'s solo mode): no simulated user — the agent, offered
    both sides' tools by the compiler, works one turn on the request (its first message, or
    with `system_request` in its system prompt and no message) and the session ends `done`
    when it answers (`agent_stopped` for a scripted agent with no turn, `error` for an agent
    error). With `end_tool` it ends `done` only by calling that tool: a text answer is
    `agent_error` (τ²'s orchestrator), a limit its own ending, each of them unfinished."""
    conv = ctx.session.conversation
    budget = budget_of(ctx)
    request = None if conv is not None and conv.system_request is not None else \
        (ctx.session.request or "")
    reply, _ = await ctx.agent_turn(1, request, None)
    if reply.stop_reason == "error":
        return ProtocolResult(termination="error", extra={"stop_signal": None})
    termination = "agent_stopped" if reply.stop_reason == "script_end" else "done"
    if conv is not None and conv.end_tool is not None and not ctx.toolbox.ended:
        termination = _unended(reply.stop_reason, budget)
    reward, judge_errors = await score(ctx, initial, termination)
    return ProtocolResult(termination=termination, judge_errors=judge_errors,
                          metrics={"score": reward["score"], "passed": reward["passed"]},
                          extra={"stop_signal": None, "solo": True, "reward": reward})


def _unended(stop: str, budget: MessageBudget | None) -> str:
    """How a solo session with an ending tool ended without calling it."""
    if stop == "session_limit" and budget is not None and budget.reason is not None:
        return budget.reason
    return {"answer": "agent_error", "script_end": "agent_stopped"}.get(stop, stop)


async def score(ctx: SessionContext, initial: dict[str, Any], termination: str = "done"
                ) -> tuple[dict[str, Any], int]:
    """The reward components, the product and pass, and the number of judge errors. With
    `conversation.unfinished: fail` a dialogue the user did not end scores 0, unjudged."""
    s = ctx.session
    sc = reward_spec(s)
    gold = s.gold or {"actions": [], "ordered": False}
    components: dict[str, float | None] = {}
    out: dict[str, Any] = {}
    judge_errors = 0
    conv = s.conversation
    if conv is not None and conv.unfinished == "fail" and termination not in USER_STOPS:
        out["unfinished"] = termination  # τ² scores it 0 before evaluating anything
    records = all_records(ctx)  # τ²'s action check looks at the user's calls too
    if gold["actions"] or "state" in sc["reward"]:
        # the rows themselves, not a copy: only hashed and diffed (a service never changes a
        # row in place), and a copy of a large database costs more than the check
        final = {name: svc.live_rows() for name, svc in ctx.env.services.items()}
        keys = {f"{n}.{t}": spec.key for n, svc in ctx.env.services.items()
                for t, spec in svc.tables.items()}
        plan_env = ctx.plan.environments.get(ctx.session.environment)
        ignore = list(plan_env.state_ignores) if plan_env is not None else []
        check = await replay_state(ctx, initial, gold["actions"], final, keys, ignore)
        out["state"] = {**check.extra(), "diff_text": check.diff.text()}
        components["state"] = None if check.passed is None else float(check.passed)
        results = actions_grader.match_actions(gold["actions"], records,
                                               bool(gold.get("ordered")))
        out["actions"] = [{"id": r.id, "tool": r.tool, "passed": r.passed, "detail": r.detail}
                          for r in results]
        components["actions"] = actions_grader.all_passed(results)
    if sc["communicate"]:
        info = communicate_grader.check(sc["communicate"], ctx.messages,
                                         sc.get("communicate_match") or "words")
        out["communicate"] = [{"text": r.text, "passed": r.passed} for r in info]
        components["communicate"] = communicate_grader.all_passed(info)
    if sc.get("env_assertions"):
        verdicts_env = await env_assertions.check(ctx.env, sc["env_assertions"],
                                                  ctx.run.options.allow_python)
        out["env_assertions"] = verdicts_env
        components["env_assertions"] = env_assertions.component(verdicts_env)
    if sc["assertions"] and "unfinished" not in out:
        verdicts, errors = await judge_assertions(ctx, sc["assertions"])
        judge_errors += errors
        out["assertions"] = verdicts
        components["assertions"] = assertions_component(verdicts)
    return combine_reward(sc, components, out), judge_errors


def reward_spec(s: Any) -> dict[str, Any]:
    """The session's compiled `score:` (`PlanSession.reward`); none scores nothing."""
    return s.reward or {"reward": [], "communicate": [], "assertions": [], "pass_threshold": 1.0}


def assertions_component(verdicts: list[dict[str, Any]]) -> float | None:
    """All assertions must hold: unknown as soon as one was not judged (never a NO)."""
    return (None if any(v["score"] is None for v in verdicts) else
            float(all(v["score"] == 1.0 for v in verdicts)))


def combine_reward(sc: dict[str, Any], components: dict[str, float | None],
                   out: dict[str, Any]) -> dict[str, Any]:
    """`extra.reward`: the product of the `reward:` components, its pass, and `out` (the
    detail of each check). `bench rejudge` recombines re-judged assertions with it. An
    unfinished dialogue under `conversation.unfinished: fail` (`out["unfinished"]`) is 0."""
    reward_of = [components.get(c) for c in sc["reward"]]
    total: float | None
    if out.get("unfinished"):
        total = 0.0
    elif not sc["reward"]:
        total = None  # nothing to score: unknown, not a pass
    elif any(v is None for v in reward_of):
        total = None
    else:
        total = 1.0
        for v in reward_of:
            total *= float(v or 0.0)
    return {"basis": list(sc["reward"]), "components": components, "score": total,
            "passed": None if total is None else total >= sc["pass_threshold"],
            "pass_threshold": sc["pass_threshold"], **out}


async def replay_state(ctx: SessionContext, initial: dict[str, Any],
                       gold: list[dict[str, Any]], final: dict[str, Any],
                       keys: dict[str, str], ignore: Sequence[str] = ()) -> Any:
    """`graders.state.check_state` with the session's own tools: a throwaway copy of the episode
    environment (restored to `initial`) and a toolbox over it, so every tool kind replays the
    way it ran for the agent."""
    from ..env import EpisodeEnvironment, ToolBox
    from ..tmpdirs import atemporary

    # owner-tagged: a SIGKILL mid-replay leaves a directory the next run sweeps
    async with atemporary("benchpack-replay-") as tmp:
        env = EpisodeEnvironment.create(ctx.plan, ctx.session.environment, tmp)
        env.tool_workers = ctx.env.tool_workers
        env.restore(initial)
        counters = initial.get("counters") or {}
        for name, live in (initial.get("live_rows") or {}).items():
            if name in env.services:
                env.services[name].adopt_rows(live, counters.get(name))
        # both sides' tools: gold actions with `requestor: user` replay on the user's side
        box = ToolBox(ctx.plan, ctx.session, env, allow_python=ctx.run.options.allow_python,
                      tools=[*ctx.session.tools, *user_tools(ctx)])

        async def call(state: dict[str, Any], tool: str, args: dict[str, Any]) -> Any:
            # the state stays in the replay environment, read once after the last action
            # (`settled`), failed calls included: a toolset function that is not atomic
            # (`atomic: false`) keeps what it changed before raising, as τ²'s tools do
            record = await box.call(tool, args)
            if record.error is not None:
                if not _replayable_failure(ctx, tool):
                    raise RuntimeError(record.error)
                # τ²'s gold lists include calls that fail (a product looked up by an item id,
                # a refused change); τ² ignores the error and keeps the state as the call left
                # it. A read tool or a toolset function leaves it as τ² would; any other
                # failing tool leaves the state unknown.
                return {"error": record.error}
            return record.result

        def settled() -> dict[str, Any]:
            return {n: svc.live_rows() for n, svc in env.services.items()}

        try:
            return await check_state(gold, {}, final, call, keys, settled, frozen=True,
                                     ignore=ignore)
        finally:  # the replay's own toolset workers end with it, before the event loop does
            await env.aclose()


def _replayable_failure(ctx: SessionContext, tool: str) -> bool:
    spec = ctx.plan.tools.get(tool)
    return spec is not None and (spec.effect == "read" or spec.impl.kind == "python_tool")


async def judge_assertions(ctx: SessionContext, assertions: list[str]
                           ) -> tuple[list[dict[str, Any]], int]:
    from ..session import render_history

    # τ²'s judge reads the user's own tool calls too (`bench rejudge` has both sides' records)
    records = all_records(ctx) if reward_spec(ctx.session).get("assertions_judge") == "tau2" \
        else ctx.toolbox.records
    return await judge_assertion_texts(ctx, ctx.plan, assertions, ctx.messages, records,
                                       ctx.env.workspace.files(), render_history(ctx))


async def judge_assertion_texts(site: JudgeSite, plan: Plan, assertions: list[str],
                                messages: Sequence[Message], records: Sequence[Any],
                                files: dict[str, str], history: str
                                ) -> tuple[list[dict[str, Any]], int]:
    """Each assertion's verdict (`{text, score, detail, error}`) and the number of judge
    errors, from the session's messages, tool records and final files (`bench run` and
    `bench rejudge` alike). With `score.assertions_judge: tau2` and an LLM judge: one
    τ²-style call for all (`judges.instructed_user.judge_tau2`)."""
    from ..judges.rubric import RubricItem, agent_output, rubric_judge
    if reward_spec(site.session).get("assertions_judge") == "tau2" and \
            site.roles.mode("judge") == "llm":
        return await judge_tau2(site, assertions, messages, records)
    from ..session import initial_files, judge_rubric_items

    items = [RubricItem(f"assert{i + 1}", text, "") for i, text in enumerate(assertions)]
    own = agent_output(messages, records, files, initial_files(plan, site.session))
    results = await judge_rubric_items(rubric_judge(site), items, history, site.session, own)
    out, errors = [], 0
    for it in items:
        score_, detail, error = results.get(it.id, (None, "", "no verdict"))
        errors += error is not None
        out.append({"text": it.text, "score": score_, "detail": detail, "error": error})
    return out, errors


__all__ = ["NAME", "STOP_TOKENS", "TOKEN_FOR", "USER_STOPS", "ChatUser", "InstructedUser",
           "LLMUser", "RulesUser", "ScriptedUser", "assertions_component", "budget_of",
           "combine_reward", "greet", "judge_assertion_texts", "parse_stop", "reward_spec",
           "score", "simulator"]
