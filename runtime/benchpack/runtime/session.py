"""Running one session: the part every protocol shares.

The runner builds a `SessionContext` and hands it to the session's protocol interpreter. The
context owns the agent (opened lazily, so a protocol that never talks to the main conversation
pays nothing), records every agent turn (messages, tool calls, turn rows, per-turn evidence),
and gives protocols what the episode already produced (`ChainMemory`). After the protocol,
`grade_checklist` grades the checklist over the whole trajectory (rule, rubric, python) and
`session_rows.build_rows` turns everything into one `SessionRows` for the store.
"""

from __future__ import annotations

import contextlib
import copy
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from benchpack.specs.guards import NO_CREDIT
from benchpack.specs.plan import Plan, PlanChecklistItem, PlanSession
from benchpack.specs.storeformat import row_type

from .env import EpisodeEnvironment, ToolBox
from .graders import CapHit, Trace, evaluate, fired_caps, run_python_grader, soft_score
from .graders.guards import GUARDS_KEY, gate_checklist
from .judges.base import JudgeError
from .judges.intent import Intent, TurnEvidence
from .judges.rubric import (
    RubricItem,
    RubricJudge,
    agent_output,
    render_evidence,
    rubric_judge,
)
from .protocols.base import ProtocolResult, default_protocols
from .score_block import grade_score_block
from .types import AgentAdapter, AgentReply, AgentSession, LLMCallRecord, Message, SessionBrief

if TYPE_CHECKING:
    from .store import Store

SYSTEM_PROMPT = """\
You are a capable personal assistant working for one user over many sessions. Use the tools you
are given to read and change the user's files and services; act on what you can infer from the
context, and ask a focused question when something essential is missing.
{clock}Files you create or change stay in the user's workspace for later sessions."""


@dataclass
class Earlier:
    """What an earlier session of the same chain (episode, repeat) produced."""

    messages: list[Message]
    metrics: dict[str, Any]
    tables: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    """Protocol rows without the (run_id, session_id, repeat) prefix."""


class ChainMemory:
    """Earlier sessions of one episode chain: kept in memory as they finish; read back from the
    store for sessions a resumed run skipped."""

    def __init__(self, store: Store, run_id: str, repeat: int) -> None:
        self.store = store
        self.run_id = run_id
        self.repeat = repeat
        self._done: dict[str, Earlier] = {}

    def remember(self, session_id: str, messages: list[Message], result: ProtocolResult) -> None:
        self._done[session_id] = Earlier(messages, dict(result.metrics), dict(result.tables))

    def transcript(self, session_id: str) -> list[Message]:
        hit = self._done.get(session_id)
        if hit is not None:
            return hit.messages
        return [Message(r[1], r[2] or "", int(r[0]))
                for r in self.store.transcript(self.run_id, session_id, self.repeat)]

    def result(self, session_id: str, table: str) -> Earlier | None:
        """The session's metrics and `table` rows, or None when it has not finished."""
        hit = self._done.get(session_id)
        if hit is not None:
            return hit
        row = self.store.session_row(self.run_id, session_id, self.repeat)
        if row is None or row.get("status") != "finished":
            return None
        # what the session's protocol stores in columns of its own (its other metrics are in
        # `extra`, which no later session reads)
        columns = default_protocols().get(str(row.get("protocol"))).metric_columns
        metrics = {k: row.get(k) for k in columns}
        rows = self.store.session_table(table, self.run_id, session_id, self.repeat)
        return Earlier([], metrics, {table: rows})


class SessionContext:
    """What a protocol interpreter works with."""

    def __init__(self, run: Any, plan: Plan, session: PlanSession, repeat: int,
                 adapter: AgentAdapter, brief: SessionBrief, toolbox: ToolBox,
                 env: EpisodeEnvironment, recorder: Callable[[LLMCallRecord], None],
                 chain: ChainMemory | None = None) -> None:
        self.run = run
        self.plan = plan
        self.session = session
        self.repeat = repeat
        self.adapter = adapter
        self.brief = brief
        self.toolbox = toolbox
        self.env = env
        self.recorder = recorder
        self.chain = chain
        self.roles = run.roles
        self.persona = plan.personas[session.persona]
        self.messages: list[Message] = []
        self.turn_rows: list[tuple[Any, ...]] = []
        self.replies: list[AgentReply] = []
        self.compactions = 0
        self.reply_turns: list[int] = []
        """The turn number of each entry of `replies`."""
        self.dialogue_end: int | None = None
        """The last turn of the task itself. A protocol sets it before turns that only measure
        (staged disclosure's graph extraction): later turns are stored like any other but left
        out of checklist grading and of the interaction statistics."""
        self.extra: dict[str, Any] = {}
        """What grading adds to `sessions.extra` (e.g. the verified-outcome caps that fired)."""
        self.score_rows: list[tuple[Any, ...]] = []
        """`score_components` rows of a `score:` block (`grade_score`)."""
        self.guards: list[str] = []
        """Items that held before the agent acted (`graders.guards.session_guards`, set by
        `chains.run_one`): they earn nothing unless the session achieves an outcome."""
        self._agent: AgentSession | None = None
        self._opened: list[AgentSession] = []

    # ------------------------------------------------------------------ the agent

    async def open_agent(self, history: list[Message] | None = None) -> AgentSession:
        """A new agent conversation for this session, continuing from `history` (messages of
        this session that already happened: offline replay). The main conversation is
        `agent_turn`'s; protocols that replay fixed dialogues open one per regenerated turn."""
        brief = self.brief
        if history:
            brief = copy.copy(brief)
            brief.history = list(history)
        session = await self.adapter.open(brief)
        self._opened.append(session)
        return session

    async def close(self) -> None:
        for session in self._opened:
            with contextlib.suppress(Exception):
                await session.close()
        self._opened.clear()

    # ------------------------------------------------------------------ conversation

    def opening(self) -> tuple[str | None, dict[str, Any] | None]:
        """The first input: the user's request, or the environment event that starts it."""
        s = self.session
        if s.trigger.kind == "user_message":
            return s.request or "", None
        if s.trigger.kind == "heartbeat":
            return None, self.heartbeat_events()[0]
        return None, {"kind": s.trigger.kind, "source": s.trigger.source,
                      "payload": s.trigger.payload, "text": s.request}

    def heartbeat_events(self) -> list[dict[str, Any]]:
        """One wake-up event per beat of the environment's heartbeat schedule (one beat at the
        environment clock when it has none): `{kind, beat, of, time, source, text}`."""
        s = self.session
        env = self.plan.environments[s.environment]
        hb = env.heartbeat
        beats = hb.beats if hb is not None else 1
        start = (hb.start if hb is not None and hb.start else None) or env.clock
        text = s.request or (hb.message if hb is not None else None)
        out = []
        for k in range(beats):
            at = start
            if start and hb is not None and k:
                with contextlib.suppress(ValueError):
                    at = (datetime.fromisoformat(start) + timedelta(seconds=k * hb.every_s)
                          ).isoformat()
            out.append({"kind": "heartbeat", "beat": k + 1, "of": beats, "time": at,
                        "source": s.trigger.source, "text": text})
        return out

    async def agent_turn(self, turn: int, message: str | None, event: dict[str, Any] | None,
                         agent: AgentSession | None = None
                         ) -> tuple[AgentReply, TurnEvidence]:
        """One agent turn of the main conversation (or of `agent`, a conversation from
        `open_agent`), recorded in the session's messages, turns and tool calls."""
        started = time.time()
        self.toolbox.turn = turn
        first_record = len(self.toolbox.records)
        if message is not None:
            self.messages.append(Message("user", message, turn))
        elif event is not None:
            self.messages.append(Message("user", "[environment event] " + json.dumps(
                event, ensure_ascii=False, default=str), turn, name="environment"))
        try:
            if agent is None:
                if self._agent is None:
                    self._agent = await self.open_agent()
                agent = self._agent
            reply = await agent.turn(message, event)
        except Exception as exc:  # an adapter bug or a crashed harness: the session errors
            reply = AgentReply(text="", stop_reason="error", error=f"{type(exc).__name__}: {exc}")
        self.replies.append(reply)
        self.reply_turns.append(turn)
        self.compactions += reply.compactions
        produced = reply.messages or [Message("assistant", reply.text, turn)]
        for m in produced:
            m.turn = turn
            self.messages.append(m)
        if reply.messages and reply.messages[-1].role != "assistant" and \
                reply.stop_reason != "session_limit":  # τ² ends there, after the results
            self.messages.append(Message("assistant", reply.text, turn))
        records = self.toolbox.records[first_record:]
        read, written = self.env.workspace.take_io()
        files = {}
        for path in sorted(read | written):
            text = self.env.workspace.read_text(path)
            if text is not None:
                files[path] = text
        questions = [str(r.call.get("question", "")) for r in records if r.tool_name == "ask_user"]
        ev = TurnEvidence(turn=turn, text=reply.text,
                          tool_calls=[{"tool_name": r.tool_name, "call": r.call,
                                       "error": r.error} for r in records],
                          files=files, questions=questions, written=written,
                          heard=[m.content for m in self.messages if m.role == "user"])
        self.turn_rows.append(row_type("turns")(
            # a turn the agent starts with no message (solo `system_request`) has neither: NULL
            turn=turn, user_message=message if message is not None else
            (json.dumps(event) if event is not None else None),
            assistant_message=reply.text, steps=reply.steps, tool_calls=len(records),
            stop_reason=reply.stop_reason, started_at=started,
            duration_s=time.time() - started))
        return reply, ev

    def in_task(self, turn: int) -> bool:
        """Whether `turn` belongs to the task (see `dialogue_end`)."""
        return self.dialogue_end is None or turn <= self.dialogue_end

    def task_replies(self) -> list[AgentReply]:
        return [r for r, t in zip(self.replies, self.reply_turns, strict=True) if self.in_task(t)]

    def history(self) -> list[dict[str, str]]:
        return [{"role": m.role, "content": m.content} for m in self.messages
                if m.role in ("user", "assistant") and m.content]

    def fallback_user_message(self, mode: str, intents: list[Intent]) -> str:
        lines = [i.reveal or i.text for i in intents]
        return ("To answer your question: " if mode == "answer" else "One more thing: ") + \
            " ".join(lines)


def _system_prompt(plan: Plan, session: PlanSession) -> str:
    env = plan.environments[session.environment]
    clock = env.clock
    # a knowledge base's documents given in the prompt (`full`, `golden` retrieval), last
    kb = session.knowledge.context if session.knowledge is not None else None
    tail = f"\n\n{kb.strip()}" if kb else ""
    conv = session.conversation
    # last, after the knowledge base: τ²'s solo agent ends its system prompt with the ticket
    if conv is not None and conv.system_request is not None:
        tail += conv.system_request.replace("{request}", session.request or "", 1)
    if env.policy is not None:
        # the environment's policy replaces the generic prompt; the simulated clock is still
        # the agent's only way to know "today"
        return env.policy.rstrip() + (f"\n\nThe current time is {clock}." if clock else "") \
            + tail
    return SYSTEM_PROMPT.format(clock=f"The current time is {clock}.\n" if clock else "") \
        + tail


ItemResult = tuple[float | None, str, str | None]
"""A checklist item's (score, detail, error); score None when it could not be graded."""


async def grade_checklist(ctx: SessionContext) -> tuple[list[tuple[Any, ...]], float | None,
                                                         float | None, bool | None, int, int]:
    """Checklist rows plus COMP, verified-outcome soft score and pass, judge and grader errors."""
    s = ctx.session
    if not s.checklist and s.verify is None and s.score is None:
        # nothing reads the trace: no walk of the workspace, no copy of the services' rows
        outcome = checklist_outcome(s, {}, None)
        return (outcome.rows, outcome.comp, outcome.score, outcome.passed,
                outcome.judge_errors, 0)
    records = [r for r in ctx.toolbox.records if ctx.in_task(r.turn)]
    files = ctx.env.workspace.files()
    state = {name: svc.snapshot() for name, svc in ctx.env.services.items()}
    trace = grading_trace(records, files, state,
                          [m for m in ctx.messages if ctx.in_task(m.turn)],
                          [r.text for r in ctx.task_replies()])
    results: dict[str, ItemResult] = {}
    rubric_items = []
    grader_errors = 0
    for item in s.checklist:
        if judged_by_rubric(item):
            rubric_items.append(rubric_item(item, records, files, state))
        elif item.grader == "python":
            pres = await run_python_grader(item.model_dump(mode="json"), item.python_source or "",
                                           trace, allow=ctx.run.options.allow_python)
            if pres.error:
                grader_errors += 1
            results[item.id] = (pres.score, "python grader", pres.error)
        else:
            assert item.rule is not None
            res = evaluate(item.rule.model_dump(mode="json", by_alias=True, exclude_unset=True),
                           trace)
            results[item.id] = (1.0 if res.passed else 0.0, res.detail, None)
    if rubric_items:
        own = agent_output([m for m in ctx.messages if ctx.in_task(m.turn)], records, files,
                           initial_files(ctx.plan, s))
        results.update(await judge_rubric_items(rubric_judge(ctx), rubric_items,
                                                render_history(ctx), s, own))
    caps = None
    if s.verify is not None:
        verify = s.verify.model_dump(mode="json", by_alias=True, exclude_unset=True)
        caps = fired_caps(verify.get("caps") or [], trace)
    outcome = checklist_outcome(s, results, caps, ctx.guards)
    if ctx.guards:
        ctx.extra[GUARDS_KEY] = ctx.guards
    if outcome.verify is not None:
        ctx.extra["verify"] = outcome.verify
    score, passed, judge_errors = outcome.score, outcome.passed, outcome.judge_errors
    if s.score is not None:  # issue 12: a `score:` block decides the score and the pass
        graded = await grade_score_block(ctx, ctx.plan, trace,
                                         [m for m in ctx.messages if ctx.in_task(m.turn)],
                                         render_history(ctx), ctx.guards)
        score, passed = graded.final, graded.passed
        judge_errors += graded.judge_errors
        ctx.score_rows = graded.rows
        ctx.extra["score"] = graded.extra
        ctx.extra.pop("verify", None)  # the checklist's soft score did not decide
    return (outcome.rows, outcome.comp, score, passed, judge_errors, grader_errors)


def grading_trace(records: list[Any], files: dict[str, str],
                  state: dict[str, dict[str, list[dict[str, Any]]]],
                  messages: Sequence[Message], replies: Sequence[str]) -> Trace:
    """What the graders read, from the in-task tool records, final files and service rows,
    messages and the text of each reply (`bench rejudge` rebuilds these from the store)."""
    if any(m.role == "user" and m.name is None for m in messages):
        reply = replies[-1] if replies else ""
    else:  # nobody wrote (heartbeats, events): everything the agent said is its answer
        reply = "\n\n".join(r for r in replies if r)
    return Trace(tool_records=records, state=state, files=files,
                 messages=[m for m in messages if m.role in ("user", "assistant")],
                 reply=reply, read_tools={r.tool_name for r in records if r.effect == "read"})


def judged_by_rubric(item: PlanChecklistItem) -> bool:
    """Whether the judge decides this checklist item (else a rule or a python grader does)."""
    return item.grader != "python" and not (item.grader == "rule" and item.rule is not None)


def rubric_item(item: PlanChecklistItem, records: Sequence[Any], files: dict[str, str],
                state: dict[str, dict[str, list[dict[str, Any]]]]) -> RubricItem:
    """A rubric checklist item with the evidence its author selected, rendered."""
    ev = render_evidence(item.evidence.model_dump() if item.evidence else None, records,
                         files, state)
    return RubricItem(item.id, item.text, ev)


async def judge_rubric_items(judge: RubricJudge, items: list[RubricItem], history: str,
                             s: PlanSession, own: str = "") -> dict[str, ItemResult]:
    """The judge's verdict on each rubric item; a failed judge call is an error on each.
    `own`: what the agent produced (`rubric.agent_output`), all the rules judge reads."""
    intents = [i.text for i in s.hidden_intents]
    try:
        verdicts = await judge.grade(items, history, intents, own)
    except JudgeError as exc:
        return {it.id: (None, "", exc.message) for it in items}
    return {it.id: (v.score, v.detail, v.error) for it in items
            if (v := verdicts.get(it.id)) is not None}


@dataclass
class ChecklistOutcome:
    rows: list[tuple[Any, ...]]
    """`checklist_results` rows without the (run_id, session_id, repeat) prefix."""
    comp: float | None
    score: float | None
    passed: bool | None
    judge_errors: int
    verify: dict[str, Any] | None
    """What `sessions.extra.verify` records (verified-outcome sessions only)."""


def checklist_outcome(s: PlanSession, results: dict[str, ItemResult],
                      caps: list[CapHit] | None, guards: Iterable[str] = ()
                      ) -> ChecklistOutcome:
    """Rows, COMP and (with `s.verify`) the soft score and pass from every item's result and
    the safety caps that fired. An item without a result is an error (`not graded`); rubric
    items with an error count as judge errors; unscored items are left out, never 0. COMP and
    the soft score give nothing for nothing (`graders.guards.gate_checklist`: `guards` are
    the items that held before the agent acted)."""
    rows = []
    scored = []
    judge_errors = 0
    counted = gate_checklist(s, results, guards)
    for item in s.checklist:
        score, detail, err = results.get(item.id, (None, "", "not graded"))
        if err and item.grader == "rubric":
            judge_errors += 1
        if counted[item.id] != score and NO_CREDIT not in detail:  # (a rejudge reads it)
            detail = f"{detail} — counted 0, {NO_CREDIT}"
        rows.append(row_type("checklist_results")(
            item_id=item.id, text=item.text, grader=item.grader, score=score, weight=item.weight,
            aspect=item.aspect, detail=detail, error=err))
        scored.append((item.weight, item.aspect, counted[item.id]))
    known = [sc for _, _, sc in scored if sc is not None]
    comp = sum(known) / len(known) if known else None
    if s.verify is None:
        return ChecklistOutcome(rows, comp, None, None, judge_errors, None)
    verify = s.verify.model_dump(mode="json", by_alias=True, exclude_unset=True)
    verdict = soft_score(scored, verify, caps or [])
    return ChecklistOutcome(rows, comp, verdict.score, verdict.passed, judge_errors,
                            verdict.extra())


def initial_files(plan: Plan, s: PlanSession) -> dict[str, str]:
    """The text files the session's environment starts with (before any agent wrote), with
    the files this session and the episode's earlier ones place when they start: none of them
    is the agent's work, so a "Done." agent must not be credited with a task's own assets.
    Several versions of one path are joined (only their lines are compared)."""
    out: dict[str, list[str]] = {}
    files = list(plan.environments[s.environment].files)
    for other in sorted(plan.sessions.values(), key=lambda o: o.index):
        if other.episode == s.episode and other.index <= s.index:
            files += other.files
    for f in files:
        if f.encoding == "utf-8" and f.content not in out.setdefault(f.path, []):
            out[f.path].append(f.content)
    return {path: "\n".join(texts) for path, texts in out.items()}


def render_history(ctx: SessionContext, limit: int = 60_000) -> str:
    """The trajectory as the rubric judge reads it (see `render_transcript`)."""
    return render_transcript(ctx.messages, ctx.toolbox.records, limit)


def render_transcript(messages: Sequence[Message], records: Sequence[Any],
                      limit: int = 60_000) -> str:
    """Messages and tool calls in order, each turn's tool calls before its first assistant
    message; the start is cut when it is longer than `limit`."""
    lines = []
    by_turn: dict[int, list[Any]] = {}
    for r in records:
        by_turn.setdefault(r.turn, []).append(r)
    shown_turns: set[int] = set()
    for m in messages:
        if m.role == "user":
            lines.append(f"USER: {m.content}")
        elif m.role == "assistant":
            if m.turn not in shown_turns:
                shown_turns.add(m.turn)
                for r in by_turn.get(m.turn, []):
                    res = json.dumps(r.result, ensure_ascii=False, default=str)
                    lines.append(f"TOOL {r.tool_name}({json.dumps(r.call, ensure_ascii=False)})"
                                 f" -> {r.error or (res[:1500] + ('…' if len(res) > 1500 else ''))}")
            if m.content:
                lines.append(f"ASSISTANT: {m.content}")
    text = "\n".join(lines)
    return text if len(text) <= limit else "[… earlier turns truncated]\n" + text[-limit:]


def session_brief(plan: Plan, session: PlanSession, repeat: int, toolbox: ToolBox,
                  prior: list[Message], seed: int) -> SessionBrief:
    return SessionBrief(
        session_id=session.id, name=session.name, protocol=session.protocol, repeat=repeat,
        system_prompt=_system_prompt(plan, session), prior=prior, tools=toolbox,
        max_steps=session.limits.max_steps_per_turn or 30,
        turn_timeout_s=session.limits.turn_timeout_s or 600.0, seed=seed,
        temperature=plan.defaults.temperature,
        max_tool_result_chars=session.limits.max_tool_result_chars,
        request_in_system=session.conversation is not None
        and session.conversation.system_request is not None)


__all__ = ["ChainMemory", "ChecklistOutcome", "Earlier", "ItemResult",
           "SessionContext", "checklist_outcome", "grade_checklist", "grading_trace",
           "initial_files", "judge_rubric_items", "judged_by_rubric",
           "render_history", "render_transcript", "rubric_item", "session_brief"]
