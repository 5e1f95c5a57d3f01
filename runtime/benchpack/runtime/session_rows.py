"""A finished session as the rows the store writes: the `sessions` row (its identity, figures
and `extra`) and each session table's named rows (`specs.storeformat.row_type`) behind the
session's key; the worst scores an agent's crash gets."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from benchpack.specs.plan import Plan, PlanSession
from benchpack.specs.storeformat import row_type

from .calltexts import CallText
from .env.knowledge import knowledge_extra
from .protocols.base import ProtocolRegistry, ProtocolResult, default_protocols
from .session import SessionContext
from .store import SessionRows
from .types import LLMCallRecord
from .user_side import all_records


def build_rows(ctx: SessionContext, result: ProtocolResult, checklist: tuple[Any, ...],
               llm_calls: list[LLMCallRecord], started: float, status: str,
               error: str | None, snapshot: dict[str, Any] | None,
               error_kind: str | None = None, finished: float | None = None) -> SessionRows:
    """`finished`: when the session ended (default now; the run builds rows a few loop turns
    after, `chains.StoreSink`)."""
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
    named: dict[str, list[tuple[Any, ...]]] = {}
    named["turns"] = list(ctx.turn_rows)
    Msg = row_type("messages")
    named["messages"] = [
        Msg(seq=seq, turn=m.turn, role=m.role, content=m.content,
            tool_calls=json.dumps(m.tool_calls, ensure_ascii=False) if m.tool_calls else None,
            tool_call_id=m.tool_call_id, name=m.name) for seq, m in enumerate(ctx.messages)]
    tools, Call = ctx.plan.tools, row_type("tool_calls")
    named["tool_calls"] = [
        Call(seq=seq, turn=r.turn, step=r.step, call_id=r.call_id, tool_name=r.tool_name,
             effect=r.effect, call=json.dumps(r.call, ensure_ascii=False, default=str),
             result=json.dumps(r.result, ensure_ascii=False, default=str), error=r.error,
             started_at=r.started_at, duration_s=r.duration,
             tool_group=tools[r.tool_name].group if r.tool_name in tools else None,
             side=r.side)
        for seq, r in enumerate(all_records(ctx))]
    named["checklist_results"] = list(rows)
    named["llm_calls"] = [llm_call_row(seq, c) for seq, c in enumerate(llm_calls)]
    if ctx.score_rows:
        named["score_components"] = list(ctx.score_rows)
    for name, data in result.tables.items():
        named.setdefault(name, []).extend(data)
    tables = {name: with_key(name, prefix, data) for name, data in named.items()}
    finished = time.time() if finished is None else finished
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


def llm_call_row(seq: int, c: LLMCallRecord) -> tuple[Any, ...]:
    """An `llm_calls` row after its session key: call number `seq` of the session."""
    row: tuple[Any, ...] = row_type("llm_calls")(
        seq=seq, role=c.role, purpose=c.purpose, model=c.model, prompt_hash=c.prompt_hash,
        prompt_tokens=c.prompt_tokens, completion_tokens=c.completion_tokens, cost=c.cost,
        latency_s=c.latency_s, cache_hit=c.cache_hit, error=c.error, attempts=c.attempts,
        turn=c.turn, started_at=c.started_at)
    return row


def with_key(table: str, key: tuple[Any, ...], rows: Iterable[tuple[Any, ...]]
             ) -> list[tuple[Any, ...]]:
    """`rows` of a session table behind the session's key, each checked to be the table's
    named row (`specs.storeformat.row_type`): a producer that builds a bare tuple, whose
    values would land in whatever columns their positions name, fails here, before the store."""
    kind = row_type(table)
    out = []
    for r in rows:
        if type(r) is not kind:
            raise TypeError(f"a `{table}` row must be built as row_type({table!r}) (named "
                            f"fields {', '.join(kind._fields)}), not {type(r).__name__}: {r!r}")
        out.append((*key, *r))
    return out


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


__all__ = ["ROW_SCORES", "build_rows", "call_texts", "llm_call_row", "session_identity",
           "with_key", "worst_scores"]
