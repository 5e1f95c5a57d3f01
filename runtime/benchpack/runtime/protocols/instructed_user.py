"""Instructed users (τ²-bench). The user simulator follows the session's scenario (`user:` —
reason for contact, what it knows, what it does not know, conditional instructions), the agent
works with its tools, and the dialogue ends with the user's stop signal or the turn budget.
Afterwards the session is scored pass/fail from the `score:` block (`reward`, τ²-style).

Dialogue: the user opens with the session's request (by default the scenario's `reason`); then,
after each agent turn, the simulator either replies or ends with a stop signal — `done` (the
goal is reached or the agent considers it finished), `transfer` (the agent handed the user to a
human), `out_of_scope` (the scenario does not cover what is needed). Terminations: the stop
signal, `turn_budget` (still talking at `limits.max_turns` agent turns), `agent_stopped` (a
scripted agent ran out of turns), `error`. The signal is in `sessions.termination` and
`extra.stop_signal` (None when the user never gave one).

Simulators, by the run's `simulator` role:

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
  entry per agent turn, in order; a text may end with a stop token (below); after the last
  entry the user says `done`.
- LLM: the `instructed_user.user_turn` template; the answer is one `<message>` block whose text
  may end with exactly one stop token: `###STOP###` (done), `###TRANSFER###`,
  `###OUT-OF-SCOPE###`. Anything else that looks like a token, two tokens, or a token followed
  by text is malformed: asked once more, then the session ends as a simulator error.

Scoring (`reward` components, each 0 or 1, stored in `extra.reward`; `score` is their product
and `passed` is `score >= pass_threshold`): `state` replays the gold actions through the same
tools on a copy of the environment as the session found it and compares the final service
states (hash, and a readable diff when they differ); `actions` finds each gold action among the
agent's successful calls; `communicate` finds each string in an agent message; `assertions`
asks the rubric judge (YES/NO). A component that could not be decided (the gold failed on
replay, a judge error) is None and so are `score` and `passed`: unknown, never 0.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from benchpack.specs.text import fold

from ..graders import actions as actions_grader
from ..graders import communicate as communicate_grader
from ..graders.state import check_state
from ..judges.base import JudgeCall, JudgeError, ParseError, Templates, ask, parse_tagged
from .base import ProtocolResult

if TYPE_CHECKING:
    from collections.abc import Sequence

    from benchpack.specs.plan import Plan

    from ..judges.intent import TurnEvidence
    from ..roles import JudgeSite
    from ..session import SessionContext
    from ..types import Message

NAME = "instructed_user"
STOP_TOKENS = {"###STOP###": "done", "###TRANSFER###": "transfer",
               "###OUT-OF-SCOPE###": "out_of_scope"}
TOKEN_FOR = {v: k for k, v in STOP_TOKENS.items()}
_TOKEN = re.compile(r"#{2,}\s*[A-Za-z_\- ]+?\s*#{2,}")
_QUESTION = re.compile(r"[?？]")
_TRANSFER_TEXT = re.compile(r"transfer\w*\b.{0,60}\b(human|person|representative|specialist)|"
                            r"转(接)?人工|人工客服", re.IGNORECASE | re.DOTALL)
_LATIN = re.compile(r"[^\W\d_]{3,}")
_CJK = re.compile(r"[\u3400-\u9fff]+")
_STOPWORDS = frozenset(
    ["the", "and", "you", "your", "yours", "for", "are", "was", "were", "with", "that", "this", "what", "which", "have", "has", "had", "can", "could", "would", "will", "please", "tell", "give", "need", "may", "might", "our", "out", "from", "about", "into", "any", "all", "not", "but", "do", "does", "did", "how", "who", "whom", "when", "where", "why", "its", "it's"])

PHRASES = {
    "en": {"done": "Thank you, that's all I needed.", "nothing": "I don't have any other "
           "information.", "unknown": "Sorry, I don't know that: {item}"},
    "zh": {"done": "谢谢，就这些。", "nothing": "我没有其他信息了。",
           "unknown": "抱歉，这个我不知道：{item}"},
}


def parse_stop(text: str) -> tuple[str, str | None]:
    """A user message and its stop signal (None when it continues). Strict: at most one known
    token, and only at the end."""
    found = _TOKEN.findall(text)
    if not found:
        return text.strip(), None
    if len(found) > 1:
        raise ParseError(f"found {len(found)} stop tokens; give at most one, at the end")
    token = re.sub(r"\s+", "", found[0]).upper()
    if token not in STOP_TOKENS:
        raise ParseError(f"unknown stop token {found[0]!r} (use one of "
                         f"{', '.join(STOP_TOKENS)})")
    body = text.strip()
    if not body.endswith(found[0]):
        raise ParseError("the stop token must end the message")
    return body[: -len(found[0])].strip(), STOP_TOKENS[token]


def _words(text: str) -> set[str]:
    folded = fold(text)
    out = {w for w in _LATIN.findall(folded) if w not in _STOPWORDS}
    for run in _CJK.findall(folded):
        out |= {run[i:i + 2] for i in range(len(run) - 1)}
    return out


def _contains(text: str, phrase: str) -> bool:
    return fold(phrase).strip() in fold(text)


def asked(ev: TurnEvidence) -> str:
    """The agent's questions this turn ('' when it asked none)."""
    qs = [q for q in ev.questions if q.strip()]
    if qs:
        return " ".join(qs)
    return ev.text if _QUESTION.search(ev.text or "") else ""


def transferred(ev: TurnEvidence) -> bool:
    return any("transfer" in str(c["tool_name"]).lower() and c["error"] is None
               for c in ev.tool_calls) or bool(_TRANSFER_TEXT.search(ev.text or ""))


class UserSimulator(Protocol):
    async def open(self, request: str) -> str:
        ...

    async def reply(self, ev: TurnEvidence, ctx: SessionContext, turn: int
                    ) -> tuple[str, str | None]:
        ...


class RulesUser:
    """The deterministic simulator (see the module docstring)."""

    def __init__(self, user: dict[str, Any], gold: list[dict[str, Any]], language: str | None
                 ) -> None:
        self.user = user
        self.gold = gold
        self.pending = [i for i in user.get("instructions") or []
                        if i.get("if") is not None or i.get("after_turn") is not None]
        self.phrases = PHRASES["zh" if (language or "").lower().startswith("zh") else "en"]

    async def open(self, request: str) -> str:
        return request

    async def reply(self, ev: TurnEvidence, ctx: SessionContext, turn: int
                    ) -> tuple[str, str | None]:
        if transferred(ev):
            return "", "transfer"
        fired = [i for i in self.pending
                 if any(_contains(ev.text or "", w) for w in i.get("if") or [])
                 or (i.get("after_turn") is not None and turn >= i["after_turn"])]
        if fired:
            self.pending = [i for i in self.pending if i not in fired]
            stop = next((i["stop"] for i in fired if i.get("stop")), None)
            return " ".join(i["text"] for i in fired), stop
        question = asked(ev)
        finished = not question or (self.gold and all(
            r.passed for r in actions_grader.match_actions(self.gold, ctx.toolbox.records)))
        if finished:
            # a user with a request still to come raises it now instead of leaving
            later = [i for i in self.pending if i.get("after_turn") is not None]
            if later:
                self.pending.remove(later[0])
                return later[0]["text"], later[0].get("stop")
            return self.phrases["done"], "done"
        words = _words(question)
        said = [k for k in self.user.get("known") or [] if _words(k) & words]
        said += [self.phrases["unknown"].format(item=k)
                 for k in self.user.get("unknown") or [] if _words(k) & words]
        return (" ".join(said) if said else self.phrases["nothing"]), None


class ScriptedUser:
    def __init__(self, script: dict[str, Any]) -> None:
        self.opening = script.get("opening")
        self.turns = list(script.get("turns") or [])
        self.used = 0

    async def open(self, request: str) -> str:
        return str(self.opening) if self.opening else request

    async def reply(self, ev: TurnEvidence, ctx: SessionContext, turn: int
                    ) -> tuple[str, str | None]:
        if self.used >= len(self.turns):
            return "", "done"
        entry = self.turns[self.used]
        self.used += 1
        if isinstance(entry, dict):
            text, stop = parse_stop(str(entry.get("say") or ""))
            return text, entry.get("stop") or stop
        return parse_stop(str(entry))


class LLMUser:
    def __init__(self, call: JudgeCall, templates: Templates, persona: dict[str, Any],
                 user: dict[str, Any]) -> None:
        self.call = call
        self.templates = templates
        self.persona = persona
        self.user = user

    async def open(self, request: str) -> str:
        return request

    async def reply(self, ev: TurnEvidence, ctx: SessionContext, turn: int
                    ) -> tuple[str, str | None]:
        prompt = self.templates.render(
            "instructed_user.user_turn", persona=self.persona, user=self.user,
            history=ctx.history()[-30:], turn=turn, tokens=TOKEN_FOR)
        return await ask(self.call, prompt, lambda t: parse_stop(parse_tagged(t, "message")),
                         purpose="user_turn", turn=turn)


def simulator(ctx: SessionContext) -> UserSimulator:
    s = ctx.session
    user: dict[str, Any] = s.user.model_dump(mode="json", by_alias=True) if s.user else {
        "reason": s.request or "", "known": [], "unknown": [], "instructions": []}
    language = user.get("language") or s.metadata.language
    gold = list((s.gold or {}).get("actions") or [])
    sim: UserSimulator = ctx.roles.build(
        ctx, "simulator", rules=lambda: RulesUser(user, gold, language), scripted=ScriptedUser,
        llm=lambda call: LLMUser(call, ctx.roles.templates, ctx.persona.model_dump(mode="json"),
                                 user))
    return sim


class InstructedUser:
    name = NAME

    async def run(self, ctx: SessionContext) -> ProtocolResult:
        s = ctx.session
        initial = ctx.env.snapshot()  # the state the gold actions are replayed on
        max_turns = s.limits.max_turns or 30
        sim = simulator(ctx)
        message: str | None = await sim.open(s.request or "")
        termination, stop = "turn_budget", None
        for turn in range(1, max_turns + 1):
            reply, ev = await ctx.agent_turn(turn, message, None)
            if reply.stop_reason == "error":
                return ProtocolResult(termination="error", extra={"stop_signal": None})
            if reply.stop_reason == "script_end":
                termination = "agent_stopped"
                break
            try:
                text, stop = await sim.reply(ev, ctx, turn)
            except (JudgeError, ParseError) as exc:
                return ProtocolResult(termination="error", error=f"user simulator: {exc}",
                                      error_kind="simulator", extra={"stop_signal": None})
            if stop is not None:
                if text:  # the closing words belong to the transcript, with no agent turn
                    ctx.messages.append(_user_message(text, turn + 1))
                termination = stop
                break
            if turn == max_turns:
                break
            message = text
        reward, judge_errors = await score(ctx, initial)
        extra = {"stop_signal": stop, "reward": reward}
        return ProtocolResult(termination=termination, judge_errors=judge_errors,
                              metrics={"score": reward["score"], "passed": reward["passed"]},
                              extra=extra)


def _user_message(text: str, turn: int) -> Any:
    from ..types import Message

    return Message("user", text, turn)


async def score(ctx: SessionContext, initial: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The reward components, the product and pass, and the number of judge errors."""
    s = ctx.session
    sc = reward_spec(s)
    gold = s.gold or {"actions": [], "ordered": False}
    components: dict[str, float | None] = {}
    out: dict[str, Any] = {}
    judge_errors = 0
    records = ctx.toolbox.records
    if gold["actions"] or "state" in sc["reward"]:
        final = {name: svc.snapshot() for name, svc in ctx.env.services.items()}
        keys = {f"{n}.{t}": spec.key for n, svc in ctx.env.services.items()
                for t, spec in svc.tables.items()}
        check = await replay_state(ctx, initial, gold["actions"], final, keys)
        out["state"] = {**check.extra(), "diff_text": check.diff.text()}
        components["state"] = None if check.passed is None else float(check.passed)
        results = actions_grader.match_actions(gold["actions"], records,
                                               bool(gold.get("ordered")))
        out["actions"] = [{"id": r.id, "tool": r.tool, "passed": r.passed, "detail": r.detail}
                          for r in results]
        components["actions"] = actions_grader.all_passed(results)
    if sc["communicate"]:
        info = communicate_grader.check(sc["communicate"], ctx.messages)
        out["communicate"] = [{"text": r.text, "passed": r.passed} for r in info]
        components["communicate"] = communicate_grader.all_passed(info)
    if sc["assertions"]:
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
    detail of each check). `bench rejudge` recombines re-judged assertions with it."""
    reward_of = [components.get(c) for c in sc["reward"]]
    total: float | None
    if not sc["reward"]:
        total = None  # nothing to score: unknown, not a pass
    elif any(v is None for v in reward_of):
        total = None
    else:
        total = 1.0
        for v in reward_of:
            total *= float(v or 0.0)
    return {"basis": list(sc["reward"]), "components": components, "score": total,
            "passed": None if total is None else total >= sc["pass_threshold"], **out}


async def replay_state(ctx: SessionContext, initial: dict[str, Any],
                       gold: list[dict[str, Any]], final: dict[str, Any],
                       keys: dict[str, str]) -> Any:
    """`graders.state.check_state` with the session's own tools: a throwaway copy of the episode
    environment (restored to `initial`) and a toolbox over it, so every tool kind replays the
    way it ran for the agent."""
    from ..env import EpisodeEnvironment, ToolBox

    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        env = EpisodeEnvironment.create(ctx.plan, ctx.session.environment, Path(tmp))
        env.restore(initial)
        box = ToolBox(ctx.plan, ctx.session, env, allow_python=ctx.run.options.allow_python)

        async def call(state: dict[str, Any], tool: str, args: dict[str, Any]) -> Any:
            record = await box.call(tool, args)
            if record.error is not None:
                if not _atomic(ctx, tool):
                    raise RuntimeError(record.error)
                # τ²'s gold lists include calls that fail (a product looked up by an item id,
                # a refused change); τ² replays them as errors that change nothing. A read tool
                # or a toolset function (a call that raises changes nothing) is such a no-op;
                # any other failing tool leaves the state unknown.
                return {"error": record.error}
            state.clear()
            state.update({n: svc.snapshot() for n, svc in env.services.items()})
            return record.result

        try:
            start = {n: svc.snapshot() for n, svc in env.services.items()}
            return await check_state(gold, start, final, call, keys)
        finally:  # the replay's own toolset workers end with it, before the event loop does
            await env.aclose()


def _atomic(ctx: SessionContext, tool: str) -> bool:
    spec = ctx.plan.tools.get(tool)
    return spec is not None and (spec.effect == "read" or spec.impl.kind == "python_tool")


async def judge_assertions(ctx: SessionContext, assertions: list[str]
                           ) -> tuple[list[dict[str, Any]], int]:
    from ..session import render_history

    return await judge_assertion_texts(ctx, ctx.plan, assertions, ctx.messages,
                                       ctx.toolbox.records, ctx.env.workspace.files(),
                                       render_history(ctx))


async def judge_assertion_texts(site: JudgeSite, plan: Plan, assertions: list[str],
                                messages: Sequence[Message], records: Sequence[Any],
                                files: dict[str, str], history: str
                                ) -> tuple[list[dict[str, Any]], int]:
    """Each assertion's verdict (`{text, score, detail, error}`) and the number of judge
    errors, from the session's messages, tool records and final files (`bench run` and
    `bench rejudge` alike)."""
    from ..judges.rubric import RubricItem, agent_output, rubric_judge
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


__all__ = ["NAME", "STOP_TOKENS", "InstructedUser", "LLMUser", "RulesUser", "ScriptedUser",
           "assertions_component", "combine_reward", "judge_assertion_texts", "parse_stop",
           "reward_spec", "score", "simulator"]
