"""Running one session: the part every protocol shares.

The runner builds a `SessionContext` and hands it to the session's protocol interpreter. The
context owns the agent (opened lazily, so a protocol that never talks to the main conversation
pays nothing), records every agent turn (messages, tool calls, turn rows, per-turn evidence),
and gives protocols what the episode already produced (`ChainMemory`). After the protocol,
`grade_checklist` grades the checklist over the whole trajectory (rule, rubric, python) and
`build_rows` turns everything into one `SessionRows` for the store.
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

from .calltexts import CallText
from .env import EpisodeEnvironment, ToolBox
from .env.knowledge import knowledge_extra
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
from .protocols.base import ProtocolRegistry, ProtocolResult, default_protocols
from .score_block import grade_score_block
from .store import SessionRows
from .types import AgentAdapter, AgentReply, AgentSession, LLMCallRecord, Message, SessionBrief
from .user_side import all_records

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
        self.turn_rows.append((turn, message if message is not None else json.dumps(event),
                               reply.text, reply.steps, len(records), reply.stop_reason, started,
                               time.time() - started))
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
        rows.append((item.id, item.text, item.grader, score, item.weight, item.aspect, detail,
                     err))
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
        max_tool_result_chars=session.limits.max_tool_result_chars)


def build_rows(ctx: SessionContext, result: ProtocolResult, checklist: tuple[Any, ...],
               llm_calls: list[LLMCallRecord], started: float, status: str,
               error: str | None, snapshot: dict[str, Any] | None,
               error_kind: str | None = None) -> SessionRows:
    run_id = ctx.run.run_id
    s = ctx.session
    prefix = (run_id, s.id, ctx.repeat)
    rows, comp, score, passed, judge_errors, grader_errors = checklist
    m = result.metrics
    protocols = ctx.run.protocols
    metric_columns, score_columns = protocols.metric_columns(), protocols.score_columns()
    if "score" in m or "passed" in m:  # a protocol that scores itself (instructed_user)
        score, passed = m.get("score"), m.get("passed")
    worst = worst_scores(ctx.plan, s, m, protocols) if error_kind == "agent" else {}
    tables: dict[str, list[tuple[Any, ...]]] = {}
    tables["turns"] = [(*prefix, *t) for t in ctx.turn_rows]
    tables["messages"] = [
        (*prefix, seq, m.turn, m.role, m.content,
         json.dumps(m.tool_calls, ensure_ascii=False) if m.tool_calls else None,
         m.tool_call_id, m.name) for seq, m in enumerate(ctx.messages)]
    tools = ctx.plan.tools
    tables["tool_calls"] = [
        (*prefix, seq, r.turn, r.step, r.call_id, r.tool_name, r.effect,
         json.dumps(r.call, ensure_ascii=False, default=str),
         json.dumps(r.result, ensure_ascii=False, default=str), r.error, r.started_at,
         r.duration, tools[r.tool_name].group if r.tool_name in tools else None, r.side)
        for seq, r in enumerate(all_records(ctx))]
    tables["checklist_results"] = [(*prefix, *r) for r in rows]
    tables["llm_calls"] = [(*prefix, seq, *llm_call_values(c)) for seq, c in enumerate(llm_calls)]
    if ctx.score_rows:
        tables["score_components"] = [(*prefix, *r) for r in ctx.score_rows]
    for name, data in result.tables.items():
        tables.setdefault(name, []).extend((*prefix, *r) for r in data)
    finished = time.time()
    replies = ctx.task_replies()
    user_turns = sum(1 for x in ctx.messages if x.role == "user" and x.name != "environment"
                     and ctx.in_task(x.turn))
    sess = {
        **session_identity(run_id, ctx.run.agent_name, s, ctx.repeat),
        "status": status, "termination": result.termination, "error": error,
        "turns": len(replies), "user_turns": user_turns,
        "assistant_turns": sum(max(1, r.steps) for r in replies
                               if r.stop_reason != "script_end"),
        "tool_calls": sum(1 for r in ctx.toolbox.records if ctx.in_task(r.turn)),
        "compactions": sum(r.compactions for r in replies),
        **{k: None if status == "error" and k in score_columns else m.get(k)
           for k in metric_columns},
        "comp": comp, "score": score, "passed": passed,
        **{k: v for k, v in worst.items() if k in metric_columns or k in ROW_SCORES},
        "error_kind": error_kind,
        "judge_errors": result.judge_errors + judge_errors, "grader_errors": grader_errors,
        "prompt_tokens": sum(c.prompt_tokens for c in llm_calls),
        "completion_tokens": sum(c.completion_tokens for c in llm_calls),
        "cost": sum(c.cost or 0.0 for c in llm_calls),
        "started_at": started, "finished_at": finished, "duration_s": finished - started,
        "extra": {**result.extra, **ctx.extra,
                  **({"dialogue_end": ctx.dialogue_end} if ctx.dialogue_end is not None
                     else {}),
                  # tools the agent unlocked (issue 24), with when and by which call
                  **({"unlocked": ctx.toolbox.unlocked} if getattr(ctx.toolbox, "unlocked",
                                                                    None) else {}),
                  # user tools the agent gave (issue 24), likewise
                  **({"given": gifts.log} if (gifts := getattr(ctx.toolbox, "gifts", None))
                     is not None and gifts.log else {}),
                  # a knowledge base's use (issue 24): searches, documents found, the share
                  # of the required documents among them
                  **({"knowledge": kx} if (kx := knowledge_extra(
                      ctx.plan, s, [r for r in ctx.toolbox.records if ctx.in_task(r.turn)]))
                     else {}),
                  # `key:value` tags are what `bench report --by key` groups by (π-Bench's
                  # task_type); the sessions table has columns only for the fixed labels
                  **({"tags": list(s.metadata.tags)} if s.metadata.tags else {}),
                  **{k: v for k, v in m.items()
                     if k not in metric_columns and k not in ("score", "passed")},
                  # a plug-in's worst scores are of metrics without a column
                  **{k: v for k, v in worst.items()
                     if k not in metric_columns and k not in ROW_SCORES}} or None,
    }
    return SessionRows(run_id=run_id, session_id=s.id, repeat=ctx.repeat, session=sess,
                       tables=tables, snapshot=(s.episode, snapshot) if snapshot is not None
                       else None, call_texts=call_texts(llm_calls))


def call_texts(calls: list[LLMCallRecord], start: int = 0) -> list[CallText]:
    """Prompts and replies of `llm_calls` rows numbered from `start` (calls recorded without
    them, e.g. an agent reporting its own, are left out: "not stored")."""
    return [CallText(start + seq, c.role, c.purpose, c.messages_json, c.tools_json, c.reply)
            for seq, c in enumerate(calls) if c.messages_json is not None or c.reply is not None]


def llm_call_values(c: LLMCallRecord) -> tuple[Any, ...]:
    """An `llm_calls` row after its (run_id, session_id, repeat, seq) prefix."""
    return (c.role, c.purpose, c.model, c.prompt_hash, c.prompt_tokens, c.completion_tokens,
            c.cost, c.latency_s, c.cache_hit, c.error, c.attempts, c.turn, c.started_at)


ROW_SCORES = ("comp", "score", "passed")  # the `sessions` score columns of every protocol


def worst_scores(plan: Plan, s: PlanSession, metrics: dict[str, Any],
                 protocols: ProtocolRegistry | None = None) -> dict[str, Any]:
    """The worst score on each figure the session defines: what a session gets when the agent
    under test failed (crashed, malformed output). Leaving them unknown would drop the session
    from every average, so an agent crashing on hard tasks would score higher than one that
    tried. Errors outside the agent keep NULL (excluded, counted). The checklist's is shared;
    the rest is the protocol's (`ProtocolInterpreter.worst_scores`)."""
    out: dict[str, Any] = {"comp": 0.0} if s.checklist else {}
    interpreter = (protocols or default_protocols()).get(s.protocol)
    return {**out, **interpreter.worst_scores(plan, s, metrics)}


def session_identity(run_id: str, agent: str, s: PlanSession, repeat: int) -> dict[str, Any]:
    """The `sessions` columns that describe which session this is (not how it went)."""
    meta = s.metadata
    return {
        "run_id": run_id, "session_id": s.id, "repeat": repeat, "fingerprint": s.fingerprint,
        "episode": s.episode, "name": s.name, "protocol": s.protocol, "persona": s.persona,
        "style": s.variant.style, "ablation": s.variant.ablation, "base_session": s.variant.base,
        "group_id": s.group, "category": meta.category, "domain": meta.domain,
        "difficulty": meta.difficulty, "language": meta.language, "agent": agent,
    }


__all__ = ["ChainMemory", "ChecklistOutcome", "Earlier", "ItemResult",
           "SessionContext", "build_rows", "checklist_outcome", "grade_checklist", "grading_trace",
           "initial_files", "judge_rubric_items", "judged_by_rubric", "llm_call_values",
           "render_history", "render_transcript", "rubric_item", "session_brief",
           "session_identity", "worst_scores"]
