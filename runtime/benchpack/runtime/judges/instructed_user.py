"""The instructed_user protocol's simulated users and its τ²-style assertions judge.

Simulators (`simulator(ctx)` picks one from the run's `simulator` role; the protocol module's
docstring says what each does): `RulesUser`, `ScriptedUser`, and two LLM users — `LLMUser`
(`conversation.simulator: tagged`, one prompt per message, answer in `<message>…</message>`) and
`ChatUser` (`chat`, τ²'s way: a system prompt with the scenario, then the dialogue as chat
messages with the roles flipped). Each offers `open(request, ctx)` — the user's first message,
the simulator's reply to the greeting when there is one and it is an LLM — and
`reply(evidence, ctx, turn)`, both returning `(text, stop signal or None)`.

Stop tokens (`conversation.stop_tokens`): `end` reads at most one token at the end of a message
and cuts it (`parse_stop`, strict: anything else that looks like a token is malformed);
`anywhere` is τ²'s `UserSimulator.is_stop` — any of the three tokens anywhere — and keeps the
message as written (`find_stop`).

The τ² assertions judge (`score.assertions_judge: tau2`, LLM judges only) makes one call for all
assertions with the template `instructed_user.assertions_judge`, rendered twice — `part:
"system"` (the system message, left out when empty) and `part: "user"` — with `trajectory`
(every message as a `role: content` line, as τ² builds it: tool results and the agent's
tool-call messages included, the latter as `assistant: None`), `assertions` (the list) and
`assertions_text` (the list as Python prints it, τ²'s format). The answer is parsed as τ² does
(`parse_tau2_results`): `json.loads` of the whole reply, `results` (missing: an empty list),
each entry's `expectedOutcome`, `reasoning` and `metExpectation` read as pydantic reads τ²'s
`NLAssertionCheck` (`"yes"`, `1` and `true` are true). An answer τ² could not read is a parse
error here: asked once more, then a judge error (the component is unknown, never 0).
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import TYPE_CHECKING, Any, Protocol

from benchpack.specs.text import fold

from ..graders import actions as actions_grader
from ..user_side import all_records, offered_user_tools, user_calls, user_toolbox
from .base import JudgeCall, JudgeError, ParseError, Templates, ask, parse_tagged

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..roles import JudgeSite
    from ..session import SessionContext
    from .intent import TurnEvidence

STOP_TOKENS = {"###STOP###": "done", "###TRANSFER###": "transfer",
               "###OUT-OF-SCOPE###": "out_of_scope"}
TOKEN_FOR = {v: k for k, v in STOP_TOKENS.items()}
_TOKEN = re.compile(r"#{2,}\s*[A-Za-z_\- ]+?\s*#{2,}")
_ANY_TOKEN = re.compile("|".join(re.escape(t) for t in STOP_TOKENS))
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

Reply = tuple[str, str | None]
MAX_USER_TOOL_STEPS = 10
"""Model responses with tool calls an LLM user may make in one turn before it must speak."""


# --------------------------------------------------------------------------- stop tokens


def parse_stop(text: str) -> Reply:
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


def find_stop(text: str) -> Reply:
    """τ²'s rule: the message as written, and the signal of the first of the three tokens found
    anywhere in it (None when there is none)."""
    hit = _ANY_TOKEN.search(text)
    return text, STOP_TOKENS[hit.group(0)] if hit else None


def stop_parser(mode: str) -> Callable[[str], Reply]:
    """The reader of a user message for `conversation.stop_tokens` (`end` or `anywhere`)."""
    return find_stop if mode == "anywhere" else parse_stop


def _not_empty(reply: Reply) -> Reply:
    if not reply[0].strip() and reply[1] is None:
        raise ParseError("the message is empty")
    return reply


# --------------------------------------------------------------------------- the rules user


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
    async def open(self, request: str, ctx: SessionContext) -> Reply:
        ...

    async def reply(self, ev: TurnEvidence, ctx: SessionContext, turn: int) -> Reply:
        ...


class RulesUser:
    """The deterministic simulator (see the protocol module's docstring)."""

    def __init__(self, user: dict[str, Any], gold: list[dict[str, Any]], language: str | None
                 ) -> None:
        self.user = user
        self.gold = gold
        self.pending = [i for i in user.get("instructions") or []
                        if i.get("if") is not None or i.get("after_turn") is not None]
        self.phrases = PHRASES["zh" if (language or "").lower().startswith("zh") else "en"]

    async def open(self, request: str, ctx: SessionContext) -> Reply:
        return request, None

    async def reply(self, ev: TurnEvidence, ctx: SessionContext, turn: int) -> Reply:
        if transferred(ev):
            return "", "transfer"
        fired = [i for i in self.pending
                 if any(_contains(ev.text or "", w) for w in i.get("if") or [])
                 or (i.get("after_turn") is not None and turn >= i["after_turn"])]
        if fired:
            self.pending = [i for i in self.pending if i not in fired]
            for i in fired:  # the user's own tool calls (dual control), before it speaks
                await user_calls(ctx, i.get("calls") or [], turn)
            stop = next((i["stop"] for i in fired if i.get("stop")), None)
            return " ".join(i["text"] for i in fired), stop
        question = asked(ev)
        finished = not question or (self.gold and all(
            r.passed for r in actions_grader.match_actions(self.gold, all_records(ctx))))
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
    def __init__(self, script: dict[str, Any], stop_tokens: str = "end") -> None:
        self.opening = script.get("opening")
        self.turns = list(script.get("turns") or [])
        self.used = 0
        self.parse = stop_parser(stop_tokens)

    async def open(self, request: str, ctx: SessionContext) -> Reply:
        return (str(self.opening) if self.opening else request), None

    async def reply(self, ev: TurnEvidence, ctx: SessionContext, turn: int) -> Reply:
        if self.used >= len(self.turns):
            return "", "done"
        entry = self.turns[self.used]
        self.used += 1
        if isinstance(entry, dict):
            # `calls: [{tool, args}]`: the user's own tool calls, made before it speaks
            await user_calls(ctx, list(entry.get("calls") or []), turn)
            text, stop = self.parse(str(entry.get("say") or ""))
            return text, entry.get("stop") or stop
        return self.parse(str(entry))


# --------------------------------------------------------------------------- LLM users


def scenario_text(user: dict[str, Any]) -> str:
    """What an LLM user reads as its scenario: `user.text` verbatim, else our own rendering of
    the reason, what the user knows and does not know, and the instructions."""
    if user.get("text"):
        return str(user["text"])
    lines = [f"Why you are contacting the agent: {user.get('reason') or ''}"]
    if user.get("known"):
        lines += ["", "What you know (say it when it is needed or asked for):",
                  *(f"- {k}" for k in user["known"])]
    if user.get("unknown"):
        lines += ["", "What you do not know (if asked, say so; never make it up):",
                  *(f"- {k}" for k in user["unknown"])]
    if user.get("instructions"):
        lines += ["", "Instructions:"]
        for i in user["instructions"]:
            if i.get("if"):
                line = f"- If the agent mentions {' or '.join(i['if'])}, say: \"{i['text']}\""
            elif i.get("after_turn"):
                line = f"- After the agent's answer number {i['after_turn']}, say: " \
                       f"\"{i['text']}\""
            else:
                line = f"- {i['text']}"
            if i.get("stop"):
                line += f" Then end the conversation with {TOKEN_FOR[i['stop']]}."
            lines.append(line)
    return "\n".join(lines)


class LLMUser:
    """`conversation.simulator: tagged`: the `instructed_user.user_turn` template."""

    def __init__(self, call: JudgeCall, templates: Templates, persona: dict[str, Any],
                 user: dict[str, Any], conversation: Any = None) -> None:
        self.call = call
        self.templates = templates
        self.persona = persona
        self.user = user
        self.greeted = conversation is not None and bool(conversation.greeting)
        self.parse = stop_parser(conversation.stop_tokens if conversation is not None else "end")
        self.temperature = (conversation.simulator_temperature if conversation is not None
                            else 0.0)

    async def open(self, request: str, ctx: SessionContext) -> Reply:
        # after a greeting (or a prior conversation, τ²) the user answers it; without one, it
        # opens with its reason
        return await self._say(ctx, 0) if self.greeted or ctx.messages else (request, None)

    async def reply(self, ev: TurnEvidence, ctx: SessionContext, turn: int) -> Reply:
        return await self._say(ctx, turn)

    async def _say(self, ctx: SessionContext, turn: int) -> Reply:
        prompt = self.templates.render(
            "instructed_user.user_turn", persona=self.persona, user=self.user,
            history=ctx.history()[-30:], turn=turn, tokens=TOKEN_FOR)
        return await ask(self.call, prompt,
                         lambda t: _not_empty(self.parse(parse_tagged(t, "message"))),
                         purpose="user_turn", turn=turn, temperature=self.temperature)


class ChatUser(LLMUser):
    """`conversation.simulator: chat` (τ²'s user simulator): the system prompt
    `instructed_user.user_system` (with `scenario`, `persona`, `user`, `tokens`,
    `stop_tokens` and `user_tools`, the names of the user's tools it is offered: τ²'s prompt
    has tool guidelines only then), then every user and agent text message of the session with the roles
    flipped; the reply's content is the message."""

    def chat(self, ctx: SessionContext, stop_tokens: str) -> list[dict[str, Any]]:
        system = self.templates.render(
            "instructed_user.user_system", scenario=scenario_text(self.user),
            persona=self.persona, user=self.user, tokens=TOKEN_FOR, stop_tokens=stop_tokens,
            user_tools=offered_user_tools(ctx))
        out = [{"role": "system", "content": system}]
        own = list(getattr(self, "own_calls", ()))
        for at, m in enumerate(ctx.messages):
            out += [c for pos, c in own if pos == at]
            if not m.content:
                continue
            if m.role == "assistant" and not m.tool_calls:  # what the agent said to the user
                out.append({"role": "user", "content": m.content})
            elif m.role == "user" and m.name is None:  # the simulator's own earlier messages
                out.append({"role": "assistant", "content": m.content})
        out += [c for pos, c in own if pos >= len(ctx.messages)]
        return out

    async def _say(self, ctx: SessionContext, turn: int) -> Reply:
        mode = "anywhere" if self.parse is find_stop else "end"
        box = user_toolbox(ctx)
        if box is not None:
            return await self._say_with_tools(ctx, turn, mode, box)
        return await ask(self.call, self.chat(ctx, mode), lambda t: _not_empty(self.parse(t)),
                         purpose="user_turn", turn=turn, temperature=self.temperature)

    async def _say_with_tools(self, ctx: SessionContext, turn: int, mode: str, box: Any
                              ) -> Reply:
        """Dual control (τ²'s user with tools): the user's own tools are offered; each tool
        call is made on the user's side and answered, until the reply is a message. The
        user's calls and results stay in its own chat (`own_calls`, at the point of the
        dialogue they were made), never in the agent's transcript."""
        from ..env.toolbox import render_result

        if not hasattr(self, "own_calls"):
            self.own_calls: list[tuple[int, dict[str, Any]]] = []
        call = self.call
        box.turn = turn
        rounds = user_tool_rounds(ctx.session.limits.max_steps_per_turn)
        for _ in range(rounds):
            try:
                resp = await call.client.complete(
                    role=call.role, model=call.model, messages=self.chat(ctx, mode),
                    tools=box.shared_specs, seed=call.seed, repeat=call.repeat,
                    purpose="user_turn", turn=turn, recorder=call.recorder,
                    params={"temperature": 0 if self.temperature == 0 else self.temperature})
            except Exception as exc:  # provider failure after retries
                raise JudgeError("user_turn", f"model call failed: {exc}", call.role) from None
            if not resp.tool_calls:
                return _not_empty(self.parse(resp.content or ""))
            at = len(ctx.messages)
            self.own_calls.append((at, dict(resp.raw_message)))
            budget = ctx.toolbox.budget
            for tc in resp.tool_calls:
                box.step += 1
                record = await box.call(tc.name, tc.args, call_id=tc.id)
                self.own_calls.append((at, {"role": "tool", "tool_call_id": tc.id,
                                            "content": render_result(record)}))
                if budget is not None:  # τ² counts the user's failed calls as the agent's
                    budget.tool_errors += record.error is not None
            if budget is not None:
                # τ²'s steps: the user's message calling tools and the batch of results, its
                # limits checked after the batch; a limit ends the dialogue there
                budget.count(2)
                if budget.check() is not None:
                    return "", None
        raise JudgeError("user_turn", f"the user made tool calls {rounds} times "
                         "without saying anything", call.role)


def user_tool_rounds(max_steps_per_turn: int | None) -> int:
    """How many responses with tool calls the user may make in one turn: as many as the agent
    may take steps (`limits.max_steps_per_turn`), at least `MAX_USER_TOOL_STEPS` — τ² bounds
    neither side's run of calls but by its message limit, and a banking customer makes ten
    calls in one turn (task_022's gold)."""
    return max(MAX_USER_TOOL_STEPS, max_steps_per_turn or 0)


def simulator(ctx: SessionContext) -> UserSimulator:
    """The session's user simulator, from the run's `simulator` role."""
    s = ctx.session
    user: dict[str, Any] = s.user.model_dump(mode="json", by_alias=True) if s.user else {
        "reason": s.request or "", "known": [], "unknown": [], "instructions": []}
    language = user.get("language") or s.metadata.language
    gold = list((s.gold or {}).get("actions") or [])
    conv = s.conversation
    stop_tokens = conv.stop_tokens if conv is not None else "end"
    kind = ChatUser if conv is not None and conv.simulator == "chat" else LLMUser
    sim: UserSimulator = ctx.roles.build(
        ctx, "simulator", rules=lambda: RulesUser(user, gold, language),
        scripted=lambda script: ScriptedUser(script, stop_tokens),
        llm=lambda call: kind(call, ctx.roles.templates, ctx.persona.model_dump(mode="json"),
                              user, conv))
    return sim


# --------------------------------------------------------------------------- τ²'s assertions


def trajectory_text(messages: Sequence[Any], records: Sequence[Any] = ()) -> str:
    """Every message as τ²'s NL-assertions judge reads it: `role: content`, one per line. An
    agent message without text is a tool-call message, whose content τ² prints as `None`.

    The user's own tool calls (`records` with `side == 'user'`; the agent's are messages
    already) are in τ²'s trajectory too, where the user made them: before the user's next
    message — a call made while answering turn t comes before the user message of turn t+1
    (its opening's, turn 0, before the first) — each as the user's tool-call message
    (`user: None`) and its result (`tool: …`, the text the user read). The records do not
    keep which calls one response made together, so each call is a message of its own, as
    for a user making one call per response (τ²'s simulator as the parity check drives it)."""
    from ..env.toolbox import render_result

    pending = sorted((r for r in records if getattr(r, "side", "agent") == "user"),
                     key=lambda r: (r.turn, r.started_at))
    lines: list[str] = []

    def calls_before(turn: int | None) -> None:
        while pending and (turn is None or pending[0].turn < turn):
            lines.extend(["user: None", f"tool: {render_result(pending.pop(0))}"])

    for m in messages:
        if m.role == "user":
            calls_before(m.turn)
        lines.append(f"{m.role}: {m.content if m.content or m.role != 'assistant' else None}")
    calls_before(None)  # a limit reached after the calls: no user message followed
    return "\n".join(lines)


def parse_tau2_results(text: str) -> list[dict[str, Any]]:
    """The `results` of a τ²-style judge answer: `[{text, met, reasoning}]` (see the module
    docstring); a ParseError where τ²'s own reading would fail."""
    from pydantic import TypeAdapter, ValidationError

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"the answer is not JSON ({exc.msg} at position {exc.pos}); give the "
                         "JSON object only") from None
    if not isinstance(data, dict):
        raise ParseError("the answer must be a JSON object with a `results` list")
    results = data.get("results", [])
    if not isinstance(results, list):
        raise ParseError("`results` must be a list")
    as_bool, as_str = TypeAdapter(bool), TypeAdapter(str)
    out = []
    for n, r in enumerate(results, start=1):
        missing = [k for k in ("expectedOutcome", "reasoning", "metExpectation")
                   if not isinstance(r, dict) or k not in r]
        if missing:
            raise ParseError(f"result {n} lacks {', '.join(missing)}")
        try:
            out.append({"text": as_str.validate_python(r["expectedOutcome"]),
                        "reasoning": as_str.validate_python(r["reasoning"]),
                        "met": as_bool.validate_python(r["metExpectation"])})
        except ValidationError as exc:
            raise ParseError(f"result {n}: {exc.errors()[0]['msg']}") from None
    return out


async def judge_tau2(site: JudgeSite, assertions: list[str], messages: Sequence[Any],
                     records: Sequence[Any] = ()) -> tuple[list[dict[str, Any]], int]:
    """One τ²-style judge call for all `assertions`: verdicts (`{text, score, detail, error}`,
    one per result the judge gave) and the number of judge errors (0 or 1). `records`: the
    session's tool records, of which the user's own are shown (`trajectory_text`)."""
    from .base import JudgeError

    templates = site.roles.templates
    context = {"trajectory": trajectory_text(messages, records), "assertions": list(assertions),
               "assertions_text": str(list(assertions))}
    system = templates.render("instructed_user.assertions_judge", part="system", **context)
    prompt = templates.render("instructed_user.assertions_judge", part="user", **context)
    chat = ([{"role": "system", "content": system}] if system.strip() else []) + \
        [{"role": "user", "content": prompt}]
    try:
        # τ²'s judge is called with its temperature alone, no seed
        call = dataclasses.replace(site.roles.call(site, "judge"), seed=None)
        results = await ask(call, chat, parse_tau2_results, purpose="assertions")
    except JudgeError as exc:
        return [{"text": a, "score": None, "detail": "", "error": exc.message}
                for a in assertions], 1
    return [{"text": r["text"], "score": float(r["met"]), "detail": r["reasoning"],
             "error": None} for r in results], 0


__all__ = ["PHRASES", "STOP_TOKENS", "TOKEN_FOR", "ChatUser", "LLMUser", "RulesUser",
           "ScriptedUser", "UserSimulator", "asked", "find_stop", "judge_tau2", "parse_stop",
           "parse_tau2_results", "scenario_text", "simulator", "stop_parser", "trajectory_text",
           "transferred"]
