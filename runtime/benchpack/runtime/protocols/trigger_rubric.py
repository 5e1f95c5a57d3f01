"""Trigger rubrics (ProactBench): responses at chosen turns are scored against rubrics written
before the response exists.

Mode (`--trigger-mode`, per session): `offline` replays a fixed dialogue, `live` runs the
planner / user agent / assistant loop; `auto` is offline when a fixed dialogue exists (the
session's authored `dialogue`, or `--dialogue-from RUN_ID`) and live otherwise.
`--dialogue-from` with `--trigger-mode live`, `offline` without a dialogue, a missing earlier
transcript and a session with nothing to score all end the session as an error, with the reason.

Offline. The fixed dialogue is the authored one, or the transcript of the same session (same
repeat, else repeat 0) in an earlier run of the same store, which must have finished. Trigger
points: the earlier run's `triggers` rows when it has any (what its planner committed, origin
kept), else the pack's authored ones. For each trigger turn t a fresh agent conversation is
opened on the fixed turns 1..t−1 (`open_agent(history)`) and answers the fixed user message t;
no other turn reaches the agent. Transcript: fixed turns are `messages` named `fixed`; a trigger
turn's user message and regenerated answer are ordinary messages; the fixed answer it replaced
is kept in `sessions.extra.reference_responses` (by turn), which a later `--dialogue-from` of
this run puts back, so re-scoring always replays the original dialogue. A trigger beyond the
end of the dialogue is stored with label `SKIPPED` and excluded from scores.

Live. Turns 1..`limits.max_turns` (default 10). Before each turn the planner (persona and
scenario, never the style) returns an order for the user agent and, unless the pack authors the
triggers (then their turns and rubrics are used as is and the planner only writes orders),
whether this turn is a trigger with its rubric, committed before the response exists and stored
unchanged (an authored trigger whose anchors were not disclosed by its turn is kept; the lapse
is recorded in `extra.planner_violations`).
Rules (`trigger_shapes.Scenario.problems`): a trigger only in its window (emergent 1–3, critical
4–7, recovery 8–10), 1–2 per window (so 3–6 a dialogue; a window's last turn without one is a
violation), anchors disclosed by this turn (≥ 1 for emergent, ≥ 2 for critical), at most one
new primary anchor per message. An LLM planner breaking a rule is retried once with the problem
shown; a decision still breaking one is made valid bluntly (surplus anchors not disclosed, the
trigger dropped) and the violation recorded in `extra.planner_violations`. A planner that fails
to answer twice is replaced by the rules planner for that turn (`extra.planner_errors`). Turn 1
is the session's `request` when it has one; the anchors it declares (`request_discloses`) count
as disclosed from turn 1. The user agent (persona, style length rule and trait
directives, the order; not the hidden goal) writes every other message; a message outside the
style's word bounds is retried once, then kept and recorded in `extra.style_violations`. The
agent sees only the conversation. `extra.planner_turns` keeps every order.

Judging, after the dialogue, concurrently: the judge sees the conversation up to the trigger's
user message, the response and the rubric, never persona or style. Labels PASS / PARTIAL / FAIL
(scores 1 / 0.5 / 0) with a rationale and evidence that must occur verbatim in the response
(`trigger_verdicts.quote_found`: whitespace, quote marks, dashes, case and Markdown emphasis
normalised; passages joined by "…" each found in order). FAIL may have empty evidence. A missing
or unfound quote is retried once with the problem shown (a scripted judge's is not retried),
then the trigger is a judge error: label NULL, `quote_found` false when a quote was given,
excluded from the scores and counted in `judge_errors`. The response is the turn's final text; tool calls are not shown to the judge.

Rows: `triggers` (one per trigger point); session metrics `trigger_mode`, `triggers` (trigger
points), `trigger_pass_rate` = PASS / N and `trigger_score` = (PASS + ½·PARTIAL) / N over the N
triggers judged without error (NULL when N = 0); `extra.trigger_labels` counts labels by type.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchpack.specs.storeformat import row_type

from ..judges.base import JudgeError
from ..judges.trigger import (
    SCORES,
    Decision,
    LiveRoles,
    PlannerState,
    TriggerJudge,
    TriggerSpec,
    Verdict,
    length_problem,
    live_roles,
    trigger_judge,
)
from ..rejudge_types import RejudgeInput, RejudgePart
from ..types import AgentReply, Message
from .base import ProtocolDefaults, ProtocolResult

if TYPE_CHECKING:
    from benchpack.specs.plan import Plan, PlanSession

    from ..session import SessionContext
    from ..store import Store

FIXED = "fixed"
"""`messages.name` of replayed dialogue turns that never reached the agent."""


class SessionFailure(Exception):
    """The session cannot run as configured; the message says why."""


@dataclass
class FixedTurn:
    turn: int
    user: str
    assistant: str | None


@dataclass
class Scored:
    """A trigger point with what the judge needs: the history before the response, and it."""

    trigger: TriggerSpec
    history: list[dict[str, str]] | None = None
    response: str | None = None
    skipped: str | None = None
    failed: str | None = None
    """Why the agent failed this trigger without being judged (it errored before answering)."""


class TriggerRubric(ProtocolDefaults):
    name = "trigger_rubric"
    metric_columns = ("trigger_mode", "triggers", "trigger_pass_rate", "trigger_score")
    score_columns = frozenset({"trigger_pass_rate", "trigger_score"})

    def worst_scores(self, plan: Plan, s: PlanSession, metrics: dict[str, Any]
                     ) -> dict[str, Any]:
        # the run wrote its triggers as FAIL; the session figures follow from them
        return {"trigger_pass_rate": metrics.get("trigger_pass_rate"),
                "trigger_score": metrics.get("trigger_score")}

    async def rejudge(self, inp: RejudgeInput) -> RejudgePart:
        """Every scored trigger judged again on the history it was judged on: the replayed
        dialogue (offline) or the live transcript."""
        stored, row = inp.stored["triggers"], inp.row
        if not stored:
            return RejudgePart()
        mode = str(row.get("trigger_mode") or stored[0][3])
        fixed = {f.turn: f for f in stored_dialogue(inp.store, inp.source, row)[0]} \
            if mode == "offline" else {}
        scored = []
        for r in stored:
            t = trigger_spec(r)
            if r[10] == "SKIPPED" or r[9] is None:
                scored.append(Scored(t, skipped=str(r[12] or "not scored")))
            elif mode == "offline":
                history = [{"role": m.role, "content": m.content}
                           for m in offline_history([fixed[k] for k in sorted(fixed)], t.turn)]
                scored.append(Scored(t, [*history, {"role": "user",
                                                    "content": fixed[t.turn].user}],
                                     str(r[9])))
            else:
                scored.append(Scored(t, live_history(inp.messages, t.turn), str(r[9])))
        rows, errors, labels = await judge_triggers(trigger_judge(inp.site), scored, mode)
        return RejudgePart(metrics=trigger_metrics(rows, str(row.get("trigger_mode") or "")),
                           tables={"triggers": rows}, extra={"trigger_labels": labels},
                           errors=errors, judge_errors=len(errors))

    async def run(self, ctx: SessionContext) -> ProtocolResult:
        try:
            return await self._run(ctx)
        except SessionFailure as exc:
            return ProtocolResult(termination="error", error=str(exc))

    async def _run(self, ctx: SessionContext) -> ProtocolResult:
        opts = ctx.run.options
        s = ctx.session
        mode = opts.trigger_mode
        if mode not in ("auto", "live", "offline"):
            raise SessionFailure(f"unknown trigger mode `{mode}` (auto, live or offline)")
        if opts.dialogue_from and mode == "live":
            raise SessionFailure("--dialogue-from replays a fixed dialogue; use --trigger-mode "
                                 "offline or auto")
        extra: dict[str, Any] = {}
        if mode == "offline" or (mode == "auto" and (opts.dialogue_from or s.dialogue)):
            if opts.dialogue_from:
                fixed, triggers, refs = _from_run(ctx, opts.dialogue_from)
                extra["dialogue_source"] = f"run:{opts.dialogue_from}"
            elif s.dialogue:
                fixed = [FixedTurn(d.turn, d.user, d.assistant) for d in s.dialogue]
                triggers, refs = _authored(ctx), {}
                extra["dialogue_source"] = "authored"
            else:
                raise SessionFailure("offline mode needs a fixed dialogue: author `dialogue:` in "
                                     "the session or pass --dialogue-from RUN_ID")
            scored, termination = await _offline(ctx, fixed, refs, triggers, extra)
            run_mode = "offline"
        else:
            scored, termination = await _live(ctx, live_roles(ctx), extra)
            extra["dialogue_source"] = "live"
            run_mode = "live"
        if termination == "error":
            # the agent errored: every trigger it would have answered is its FAIL (skipped
            # ones stay skipped), so the crash cannot lift the pooled score
            rows, _, labels = await judge_triggers(trigger_judge(ctx), scored, run_mode)
            extra["trigger_labels"] = labels
            return ProtocolResult(termination="error", metrics=trigger_metrics(rows, run_mode),
                                  tables={"triggers": rows}, extra=extra, error_kind="agent")
        rows, errors, labels = await judge_triggers(trigger_judge(ctx), scored, run_mode)
        metrics = trigger_metrics(rows, run_mode)
        extra["trigger_labels"] = labels
        if errors:
            extra["judge_errors"] = errors
        return ProtocolResult(termination=termination, metrics=metrics,
                              tables={"triggers": rows}, judge_errors=len(errors), extra=extra)


# --------------------------------------------------------------------------- sources


def _authored(ctx: SessionContext) -> list[TriggerSpec]:
    return [TriggerSpec(t.id, t.type, t.turn, list(t.anchors), t.rubric.pass_, t.rubric.partial,
                        t.rubric.fail, "authored") for t in ctx.session.triggers]


def _from_run(ctx: SessionContext, run_id: str
              ) -> tuple[list[FixedTurn], list[TriggerSpec], dict[int, str]]:
    """The fixed dialogue, trigger points and replaced reference answers of this session in
    an earlier run (see the module docstring)."""
    store = ctx.run.store
    sid = ctx.session.id
    if store.run_exists(run_id) is None:
        raise SessionFailure(f"--dialogue-from: no run `{run_id}` in this store")
    row = None
    for repeat in dict.fromkeys((ctx.repeat, 0)):
        row = store.session_row(run_id, sid, repeat)
        if row is not None:
            break
    if row is None:
        raise SessionFailure(f"--dialogue-from: run `{run_id}` has no transcript of `{sid}`")
    if row.get("status") != "finished":
        raise SessionFailure(f"--dialogue-from: `{sid}` did not finish in run `{run_id}` "
                             f"(status {row.get('status')}); its transcript is incomplete")
    fixed, triggers, refs = stored_dialogue(store, run_id, row)
    if not fixed:
        raise SessionFailure(f"--dialogue-from: run `{run_id}` has no transcript of `{sid}`")
    return fixed, triggers or _authored(ctx), refs


def stored_dialogue(store: Store, run_id: str, row: dict[str, Any]
                    ) -> tuple[list[FixedTurn], list[TriggerSpec], dict[int, str]]:
    """A stored session's dialogue as it was before any trigger turn was regenerated (each
    replaced answer put back from `extra.reference_responses`), its stored trigger points
    and those reference answers by turn. `row` is the session's `sessions` row."""
    sid, repeat = str(row["session_id"]), int(row["repeat"])
    extra = row.get("extra") or {}
    if isinstance(extra, str):
        extra = json.loads(extra)
    refs = {int(k): str(v) for k, v in (extra.get("reference_responses") or {}).items()}
    turns: dict[int, FixedTurn] = {}
    for turn, role, content, *_ in store.transcript(run_id, sid, repeat):
        t = turns.setdefault(int(turn), FixedTurn(int(turn), "", None))
        if role == "user" and not t.user:
            t.user = content or ""
        elif role == "assistant" and content:
            t.assistant = content  # the turn's last words
    for turn, text in refs.items():
        if turn in turns:
            turns[turn].assistant = text
    fixed = [turns[k] for k in sorted(turns) if turns[k].user]
    triggers = [trigger_spec(r) for r in store.session_table("triggers", run_id, sid, repeat)]
    return fixed, triggers, refs


def trigger_spec(row: Sequence[Any]) -> TriggerSpec:
    """The trigger point of a stored `triggers` row (without its run/session/repeat prefix)."""
    anchors = json.loads(row[5]) if isinstance(row[5], str) else list(row[5] or [])
    return TriggerSpec(row[0], row[1], int(row[2]), anchors, row[6], row[7], row[8], row[4])


def offline_history(fixed: list[FixedTurn], turn: int) -> list[Message]:
    """The fixed turns before `turn`, as the regenerating agent (and the judge) sees them."""
    history = []
    for g in fixed[:turn - 1]:
        history += [Message("user", g.user, g.turn), Message("assistant", g.assistant or "",
                                                             g.turn)]
    return history


def live_history(messages: list[Message], turn: int) -> list[dict[str, str]]:
    """A live dialogue up to the user message of `turn`: what the judge of a trigger at `turn`
    sees (the answer itself is the graded response)."""
    return [{"role": m.role, "content": m.content} for m in messages
            if m.role in ("user", "assistant") and m.content
            and (m.turn < turn or (m.turn == turn and m.role == "user"))]


# --------------------------------------------------------------------------- offline


async def _offline(ctx: SessionContext, fixed: list[FixedTurn], refs: dict[int, str],
                   triggers: list[TriggerSpec], extra: dict[str, Any]
                   ) -> tuple[list[Scored], str]:
    if not triggers:
        raise SessionFailure("nothing to score: the session has no trigger points (author "
                             "`triggers:` or replay a live run that committed some)")
    if [f.turn for f in fixed] != list(range(1, len(fixed) + 1)):
        raise SessionFailure("the fixed dialogue must number its turns 1, 2, 3… without gaps")
    by_turn = {t.turn: t for t in triggers}
    last = max((t.turn for t in triggers if t.turn <= len(fixed)), default=0)
    missing = [f.turn for f in fixed if f.turn < last and not f.assistant]
    if missing:
        raise SessionFailure(f"the fixed dialogue has no assistant answer at turn(s) {missing}; "
                             "replay needs one before every scored turn")
    scored = [Scored(t, skipped=f"turn {t.turn} is beyond the fixed dialogue ({len(fixed)} "
                     "turns)") for t in triggers if t.turn > len(fixed)]
    replaced: dict[int, str] = {}
    for f in fixed:
        t = by_turn.get(f.turn)
        if t is None:
            ctx.messages.append(Message("user", f.user, f.turn, name=FIXED))
            if f.assistant:
                ctx.messages.append(Message("assistant", f.assistant, f.turn, name=FIXED))
            continue
        history = offline_history(fixed, f.turn)
        try:
            conversation = await ctx.open_agent(history)
        except Exception as exc:  # the agent's harness did not start: its crash, as in a turn
            ctx.replies.append(AgentReply(text="", stop_reason="error",
                                          error=f"{type(exc).__name__}: {exc}"))
            ctx.reply_turns.append(f.turn)
            return _failed(triggers, len(fixed), f.turn), "error"
        reply, _ = await ctx.agent_turn(f.turn, f.user, None, agent=conversation)
        if reply.stop_reason == "error":
            return _failed(triggers, len(fixed), f.turn), "error"
        if f.assistant:
            replaced[f.turn] = f.assistant
        scored.append(Scored(t, [{"role": m.role, "content": m.content} for m in history]
                             + [{"role": "user", "content": f.user}], reply.text))
    extra["reference_responses"] = {str(k): v for k, v in {**refs, **replaced}.items()}
    return sorted(scored, key=lambda x: x.trigger.turn), "completed"


# --------------------------------------------------------------------------- live


async def _live(ctx: SessionContext, roles: LiveRoles, extra: dict[str, Any]
                ) -> tuple[list[Scored], str]:
    s = ctx.session
    max_turns = s.limits.max_turns or 10
    authored = {t.turn: t for t in _authored(ctx)} or None
    opening, event = ctx.opening()
    fixed_opening = bool(s.request) or event is not None
    first = opening or json.dumps(event, ensure_ascii=False, default=str)
    committed: list[TriggerSpec] = []
    # what the fixed opening discloses counts from turn 1; the planner cannot change it
    disclosed: list[str] = list(s.request_discloses) if s.request else []
    scored: list[Scored] = []
    violations: list[dict[str, Any]] = []
    style_violations: list[dict[str, Any]] = []
    planner_errors: list[str] = []
    user_errors: list[str] = []
    turns: list[dict[str, Any]] = []
    for turn in range(1, max_turns + 1):
        state = PlannerState(turn, max_turns, ctx.history(), list(disclosed), list(committed),
                             authored, first if turn == 1 and fixed_opening else None)
        decision = await _plan(roles, state, violations, planner_errors)
        trigger = decision.trigger
        if authored is not None:
            trigger = authored.get(turn)
        elif trigger is not None:
            trigger.id, trigger.turn = f"t{turn}", turn
        if trigger is not None:
            committed.append(trigger)
        disclosed += [a for a in decision.order.disclose if a not in disclosed]
        late = [a for a in trigger.anchors if a not in disclosed] if trigger else []
        if trigger is not None and late and authored is not None:
            # the planner was told; the rubric stands as authored
            violations.append({"turn": turn, "problems": [
                f"authored trigger `{trigger.id}` relies on anchors not disclosed yet: {late}"],
                "proposed_trigger": None, "kept_trigger": True, "disclose": []})
        message: str | None
        if turn == 1 and fixed_opening:
            message, turn_event = opening, event
        else:
            message, turn_event = await _user_message(ctx, roles, decision, turn,
                                                      style_violations, user_errors), None
        turns.append({"turn": turn, **decision.order.as_dict(),
                      "trigger": trigger.id if trigger else None})
        reply, _ = await ctx.agent_turn(turn, message, turn_event)
        if reply.stop_reason == "error":
            # a planner's triggers after this turn were never committed: only authored
            # ones (and those committed so far) are known
            later = [t for k, t in sorted((authored or {}).items()) if k > turn]
            return _failed(committed + later, max_turns, turn), "error"
        if trigger is not None:
            scored.append(Scored(trigger, live_history(ctx.messages, turn), reply.text))
    if authored is not None:
        scored += [Scored(t, skipped=f"turn {t.turn} is beyond the dialogue's {max_turns} turns")
                   for k, t in sorted(authored.items()) if k > max_turns]
    extra["planner_turns"] = turns
    for key, value in (("planner_violations", violations), ("style_violations",
                       style_violations), ("planner_errors", planner_errors),
                       ("user_errors", user_errors)):
        if value:
            extra[key] = value
    return scored, "completed"


def _failed(triggers: list[TriggerSpec], last_turn: int, turn: int) -> list[Scored]:
    """The trigger points of a dialogue the agent errored in at `turn`: FAIL up to
    `last_turn` (the dialogue's end), SKIPPED beyond it, as a finished session has them."""
    why = f"the agent errored at turn {turn}: scored FAIL, not judged"
    return sorted((Scored(t, skipped=f"turn {t.turn} is beyond the dialogue's {last_turn} "
                          "turns") if t.turn > last_turn else Scored(t, failed=why)
                   for t in triggers), key=lambda x: x.trigger.turn)


async def _plan(roles: LiveRoles, state: PlannerState, violations: list[dict[str, Any]],
                errors: list[str]) -> Decision:
    try:
        decision = await roles.planner.decide(state)
    except JudgeError as exc:
        errors.append(f"turn {state.turn}: {exc}")
        decision = await roles.fallback_planner.decide(state)
    problems = roles.scenario.problems(decision, state)
    if problems:
        proposed = decision.trigger
        decision = roles.scenario.sanitise(decision, state)
        violations.append({
            "turn": state.turn, "problems": problems,
            "proposed_trigger": None if proposed is None else
            {"type": proposed.type, "anchors": proposed.anchors, **proposed.rubric()},
            "kept_trigger": decision.trigger is not None,
            "disclose": decision.order.disclose})
    return decision


async def _user_message(ctx: SessionContext, roles: LiveRoles, decision: Decision,
                        turn: int, violations: list[dict[str, Any]], errors: list[str]) -> str:
    history = ctx.history()
    try:
        message = await roles.user.say(decision.order, history, turn)
    except JudgeError as exc:
        errors.append(f"turn {turn}: {exc}")
        message = await roles.fallback_user.say(decision.order, history, turn)
    problem = length_problem(message, ctx.session.style)
    if problem:
        violations.append({"turn": turn, "problem": problem})
    return message


# --------------------------------------------------------------------------- judging


async def judge_triggers(judge: TriggerJudge, scored: list[Scored], mode: str
                         ) -> tuple[list[tuple[Any, ...]], list[str], dict[str, dict[str, int]]]:
    """Judge every trigger point concurrently: `triggers` rows (without the run/session/repeat
    prefix), the judge errors, and label counts by type."""
    async def one(x: Scored) -> Verdict:
        if x.failed is not None:
            return Verdict("FAIL", x.failed)
        if x.skipped is not None or x.history is None or x.response is None:
            return Verdict("SKIPPED", x.skipped or "")
        return await judge.judge(x.trigger, x.history, x.response)

    verdicts = await asyncio.gather(*(one(x) for x in scored))
    rows: list[tuple[Any, ...]] = []
    errors: list[str] = []
    labels: dict[str, dict[str, int]] = {}
    for x, v in zip(scored, verdicts, strict=True):
        t = x.trigger
        if v.error is not None:
            errors.append(f"trigger {t.id} (turn {t.turn}): {v.error}")
        label = v.label if v.error is None else None
        key = label or "ERROR"
        labels.setdefault(t.type, {})[key] = labels.get(t.type, {}).get(key, 0) + 1
        rows.append(row_type("triggers")(
            trigger_id=t.id, type=t.type, turn=t.turn, mode=mode, origin=t.origin,
            anchors=json.dumps(t.anchors), pass_criteria=t.pass_, partial_criteria=t.partial,
            fail_criteria=t.fail, response=x.response, label=label,
            score=SCORES.get(label or ""), rationale=v.rationale, evidence=v.evidence,
            quote_found=v.quote_found, judge_error=v.error))
    return rows, errors, labels


def trigger_metrics(rows: list[tuple[Any, ...]], mode: str) -> dict[str, Any]:
    """The session metrics of judged `triggers` rows (module docstring)."""
    judged = [r[10] for r in rows if r[10] in SCORES and r[15] is None]
    n = len(judged)
    return {"trigger_mode": mode, "triggers": len(rows),
            "trigger_pass_rate": judged.count("PASS") / n if n else None,
            "trigger_score": sum(SCORES[x] for x in judged) / n if n else None,
            "triggers_judged": n}


__all__ = ["FIXED", "FixedTurn", "Scored", "TriggerRubric", "judge_triggers", "live_history",
           "offline_history", "stored_dialogue", "trigger_metrics", "trigger_spec"]
