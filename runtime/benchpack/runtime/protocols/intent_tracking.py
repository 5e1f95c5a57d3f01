"""Intent tracking (π-Bench). Each hidden intent ends in exactly one status:

- completed — the agent acted on it unasked (checked first, every turn, over open intents);
- inferred  — the agent asked a question that targets it; the user answers next turn;
- provided  — neither: the user volunteers one open intent relevant to the current work.

Generic questions never count. The session ends once every intent is terminal and the agent has
answered once more, or when the turn budget runs out (`turn_budget`; intents still open stay
`unresolved`). PROC = (|completed| + |inferred|) / |intents|. A judge error on a turn makes the
session's PROC unknown (NULL, excluded from averages) instead of guessing, and the status the
judge could not decide on that turn is stored as NULL ("undecided") with the judge error as its
reason: an intent the user volunteers after a failed check, or one still open after a failed
last check, was never judged missed. The `sessions` counts leave undecided intents out
(`intents` − the four counts = undecided).

Dependency groups (π-Bench): the group's final session also reports `proc_group`, PROC over the
pooled intents of every member, and stores the members' statuses again as `intent_status` rows
with `pooled_from` set. It is NULL unless every member finished without judge errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchpack.specs.storeformat import row_type
from benchpack.specs.text import leaks

from ..judges.base import JudgeError
from ..judges.intent import Intent, intent_roles
from ..planfile import group_index
from ..rejudge_types import RejudgeInput, RejudgePart
from .base import ProtocolDefaults, ProtocolResult

if TYPE_CHECKING:
    from benchpack.specs.plan import Plan, PlanSession

    from ..session import SessionContext


class IntentTracking(ProtocolDefaults):
    name = "intent_tracking"
    metric_columns = ("intents", "completed", "inferred", "provided", "unresolved", "proc",
                      "proc_group")
    score_columns = frozenset({"proc", "proc_group"})

    def worst_scores(self, plan: Plan, s: PlanSession, metrics: dict[str, Any]
                     ) -> dict[str, Any]:
        if not s.hidden_intents:
            return {}
        return {"proc": 0.0, **({"proc_group": 0.0} if s.id in group_index(plan).finals
                                else {})}

    async def rejudge(self, inp: RejudgeInput) -> RejudgePart:
        """The per-turn judge checks (resolution, sufficiency) judged again; the intent
        statuses are not re-decided, so their columns are left unknown."""
        from ..rejudge_intents import intent_checks  # it imports the judges this module does

        checks, audit = await intent_checks(inp.site, inp.stored, inp.records, inp.files,
                                            inp.extra)
        failed = sorted({(int(r[0]), str(r[2]), str(r[5])) for r in checks if r[5]})
        return RejudgePart(metrics={k: None for k in self.metric_columns},
                           tables={"intent_checks": checks}, extra={"intent_audit": audit},
                           errors=[f"turn {t}: {kind}_check: {e}" for t, kind, e in failed],
                           judge_errors=len(failed))

    async def run(self, ctx: SessionContext) -> ProtocolResult:
        s = ctx.session
        intents = [Intent(i.id, i.text, i.reveal) for i in s.hidden_intents]
        status: dict[str, tuple[str | None, int, str | None]] = {}
        judge, sim = intent_roles(ctx)
        errors: list[str] = []
        message, event = ctx.opening()
        max_turns = s.limits.max_turns or 12
        termination = "turn_budget"
        failed: str | None = None  # the judge error of the latest judged turn
        for turn in range(1, max_turns + 1):
            failed = None
            reply, ev = await ctx.agent_turn(turn, message, event)
            event = None
            if reply.stop_reason == "error":
                termination = "error"
                break
            open_ = [i for i in intents if i.id not in status]
            if not open_:
                termination = "all_resolved"
                break
            try:
                for iid in await judge.completed(ev, open_):
                    status[iid] = ("completed", turn, None)
            except JudgeError as exc:
                errors.append(f"turn {turn}: {exc}")
                failed = f"turn {turn}: {exc}"
            open_ = [i for i in intents if i.id not in status]
            if not open_:
                termination = "all_resolved"  # this reply was the agent's final answer
                break
            try:
                asked = await judge.targeted(ev, open_)
            except JudgeError as exc:
                errors.append(f"turn {turn}: {exc}")
                failed = failed or f"turn {turn}: {exc}"
                asked = set()
            if asked:
                reveal = [i for i in open_ if i.id in asked]
                for i in reveal:
                    status[i.id] = ("inferred", turn, None)  # the agent asked: credit stands
                mode = "answer"
            elif turn == max_turns:
                break  # no user turn left to volunteer anything: open intents stay unresolved
            else:
                pick = sim.choose(ev, open_, turn)
                # after a failed check nobody decided the agent missed it: undecided
                status[pick.id] = ("provided", turn, None) if failed is None else \
                    (None, turn, failed)
                reveal = [pick]
                mode = "provide"
            if turn == max_turns:
                break
            try:
                message = await sim.reply(mode, reveal, ctx.history(), turn)
            except JudgeError as exc:
                errors.append(f"turn {turn}: {exc}")
                message = ctx.fallback_user_message(mode, reveal)
        rows = []
        counts = {"completed": 0, "inferred": 0, "provided": 0, "unresolved": 0}
        left = ("unresolved", 0, None) if failed is None else (None, 0, failed)
        for i, spec in zip(intents, s.hidden_intents, strict=True):
            st, turn_no, why = status.get(i.id, left)
            if st is not None:
                counts[st] += 1
            rows.append(row_type("intent_status")(
                intent_id=i.id, text=i.text, scope=spec.scope, status=st,
                turn=turn_no or None, judge_error=why, pooled_from=None))
        n = len(intents)
        proc = None if errors or n == 0 else (counts["completed"] + counts["inferred"]) / n
        metrics: dict[str, Any] = {"intents": n, **counts, "proc": proc}
        if termination != "error":
            rows += _pool_group(ctx, rows, metrics)
        extra: dict[str, Any] = {"intent_leaks": leaked_intents(rows, ctx.turn_rows)}
        if errors:
            extra["judge_errors"] = errors
        return ProtocolResult(termination=termination, metrics=metrics,
                              tables={"intent_status": rows}, judge_errors=len(errors),
                              extra=extra)


def leaked_intents(rows: list[tuple[Any, ...]], turn_rows: list[tuple[Any, ...]]) -> int:
    """How many of the session's own hidden intents (`rows`, as stored in `intent_status`)
    a user message gave away (`leaks`) in a turn no later than the one the intent was resolved
    in, any turn for an unresolved one: what the simulator report counts. Decided once here
    (`sessions.extra.intent_leaks`) so that no report rescans every transcript."""
    users = [(int(t[0]), str(t[1])) for t in turn_rows if t[1] is not None]
    return sum(1 for r in rows if r[6] is None and any(
        leaks(str(r[1]), m) for turn, m in users if r[4] is None or turn <= r[4]))


def _pool_group(ctx: SessionContext, own: list[tuple[Any, ...]], metrics: dict[str, Any]
                ) -> list[tuple[Any, ...]]:
    """On a dependency group's final session: set `proc_group` and return the members'
    statuses as pooled rows (`pooled_from` = member plan id)."""
    s = ctx.session
    group = group_index(ctx.plan).by_id.get(s.group) if s.group is not None else None
    if group is None or group.final != s.id or ctx.chain is None:
        return []
    statuses = [r[3] for r in own]
    complete = metrics["proc"] is not None
    pooled: list[tuple[Any, ...]] = []
    for member in group.sessions:
        if member == s.id:
            continue
        earlier = ctx.chain.result(member, "intent_status")
        if earlier is None or (earlier.metrics.get("proc") is None
                               and ctx.plan.sessions[member].hidden_intents):
            complete = False
            continue
        for r in earlier.tables.get("intent_status", []):
            if r[6] is None:  # the member's own intents, not what it pooled itself
                statuses.append(r[3])
                pooled.append(row_type("intent_status")(*r[:6], pooled_from=member))
    if statuses:
        proactive = sum(1 for st in statuses if st in ("completed", "inferred"))
        metrics["proc_group"] = proactive / len(statuses) if complete else None
        metrics["pooled_intents"] = len(statuses)
    return pooled
