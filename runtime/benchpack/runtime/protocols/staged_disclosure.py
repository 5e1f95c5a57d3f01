"""Staged disclosure (VibeSearchBench): a user who reveals needs one stage at a time, then a
knowledge graph graded against the ground truth.

Three parts, kept apart:

- `StageMachine` (pure, property-tested) decides what happens after each agent turn from the
  simulator's verdict: state = current stage index and the disclosed stages; input = whether
  the current stage's trigger is met, whether the agent asked about it, and the questions found.
  Stages are disclosed strictly in order, at most one per turn; an `asks` stage needs a question
  on it; a question no stage covers is dismissed; once every stage is disclosed the verdict
  means "everything addressed" and yields the done signal. A `start` stage (only ever first) is
  disclosed with the opening message. The compiler folds a pack's `start` stage into `request`,
  so compiled plans usually hold only the trigger-gated stages, and `stages` counts those.
- the simulator (`judges/staged.py`, rules | scripted | llm) judges triggers and words the
  user's message; the runtime checks an LLM message for leaks of hidden stages.
- the graph grader (`graders/graph.py`) parses the agent's graph and scores it.

Termination (`sessions.termination`):

- `done` — every stage was disclosed and the simulator judged them all addressed;
- `agent_answer` — the agent ended the dialogue: every stage was disclosed and the agent
  answered without asking anything, but not to the simulator's satisfaction (the user has
  nothing left to reveal), or the agent adapter has no turn left (`script_end` of a replayed
  trajectory; a `scripted:` file out of turns is an error instead);
- `round_budget` — `limits.max_turns` agent turns happened first;
- `error` — the agent failed (no graph is requested; the session is rerun on resume).

`stage_events` rows: `turn` is the user turn whose message carries the event (the opening is
turn 1; a reaction to agent turn t is turn t + 1, also for `done`), `stage_index` is 0-based in
the plan's stages. Events: `disclosed` (detail: the message), `pushed` (on the current stage, or
with no stage when pushing to finish after the last one), `dismissed` (one per question no stage
covers, at the current stage; detail: the question), `done`. A simulator failure is a judge
error: a failed verdict counts as not met, a failed wording falls back to the rules wording.

After the dialogue (unless it errored, or the session has no ground-truth graph) the agent gets
one more user turn with `staged_disclosure.extract_graph`. That turn is stored like any other
(`turns`, `messages`, `tool_calls`) but left out of the interaction statistics: `turns`,
`user_turns`, `assistant_turns` (model steps), `tool_calls` and `compactions` count the dialogue
only (`ctx.dialogue_end`), and the checklist is graded on the dialogue too. Graph metrics: `recall`,
`precision`, `f1`, `kg_status` (ok | repaired | malformed | empty; malformed and empty score 0),
`triples_gt`, `triples_predicted`; rows in `triples` and `triple_support`. Ground-truth triples
the judge failed on count as judge errors and are excluded (see `graders/graph.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from benchpack.specs.plan import PlanGraph
from benchpack.specs.storeformat import row_type

from ..graders.graph import Coverage, ParsedGraph, Triple, parse_graph, score_graph
from ..judges.base import JudgeError
from ..judges.staged import (
    Decision,
    GraphJudge,
    Question,
    StageView,
    Verdict,
    Wording,
    graph_judge,
    render_work,
    rules_message,
    staged_roles,
)
from ..rejudge_types import RejudgeInput, RejudgePart
from .base import ProtocolDefaults, ProtocolResult

if TYPE_CHECKING:
    from benchpack.specs.plan import Plan, PlanSession

    from ..session import SessionContext

Event = Literal["disclosed", "pushed", "done", "agent_answer"]

StageEventRow = row_type("stage_events")
"""A `stage_events` row: (turn, stage_id, stage_index, kind, event, detail)."""


@dataclass(frozen=True)
class StageState:
    current: int = 0
    """Index of the stage whose trigger is awaited; the number of stages once all are out."""
    disclosed: tuple[int, ...] = ()
    done: bool = False


@dataclass(frozen=True)
class Step:
    event: Event
    stage: int | None
    """The stage disclosed or pushed on; None after the last stage."""
    dismissed: tuple[str, ...]
    """Questions no stage covers."""
    state: StageState


class StageMachine:
    """The deterministic core; see the module docstring."""

    def __init__(self, kinds: Sequence[str]) -> None:
        self.kinds = tuple(kinds)

    def start(self) -> StageState:
        if self.kinds and self.kinds[0] == "start":
            return StageState(current=1, disclosed=(0,))
        return StageState()

    def step(self, state: StageState, verdict: Verdict) -> Step:
        if state.done:
            raise ValueError("the dialogue is over")
        dismissed = tuple(q.text for q in verdict.questions if q.stage is None)
        k = state.current
        if k >= len(self.kinds):
            if verdict.met:
                return Step("done", None, dismissed, replace(state, done=True))
            if not verdict.questions:
                return Step("agent_answer", None, dismissed, replace(state, done=True))
            return Step("pushed", None, dismissed, state)
        asked = verdict.asked or any(q.stage == k for q in verdict.questions)
        if verdict.met and (self.kinds[k] != "asks" or asked):
            return Step("disclosed", k, dismissed,
                        StageState(current=k + 1, disclosed=(*state.disclosed, k)))
        return Step("pushed", k, dismissed, state)


class StagedDisclosure(ProtocolDefaults):
    name = "staged_disclosure"
    metric_columns = ("recall", "precision", "f1", "triples_gt", "triples_predicted",
                      "kg_status", "stages", "stages_disclosed")
    score_columns = frozenset({"recall", "precision", "f1"})

    def worst_scores(self, plan: Plan, s: PlanSession, metrics: dict[str, Any]
                     ) -> dict[str, Any]:
        return {"recall": 0.0, "precision": 0.0, "f1": 0.0}

    async def rejudge(self, inp: RejudgeInput) -> RejudgePart:
        """The agent's knowledge graph graded again (the new judge's coverage, or matching)."""
        graph = inp.site.session.graph
        if graph is None or inp.row.get("kg_status") is None:
            return RejudgePart()
        pred = [Triple(r[2], r[3], r[4])
                for r in sorted((r for r in inp.stored["triples"] if r[0] == "predicted"),
                                key=lambda r: int(r[1]))]
        parsed = ParsedGraph(pred, inp.row["kg_status"], inp.extra.get("kg_note"),
                             int(inp.extra.get("kg_duplicates_merged") or 0))
        part = RejudgePart()
        errors = await grade_graph(graph, graph_judge(inp.site, inp.graph_grader), parsed,
                                   part.metrics, part.extra, part.tables)
        if errors:
            part.errors.append(f"graph: {errors} ground-truth triple(s) not judged")
        part.judge_errors = errors
        return part

    def stored_dialogue_end(self, row: dict[str, Any], turns: list[tuple[Any, ...]]
                            ) -> int | None:
        # before `extra.dialogue_end` was stored, the task ended one turn before the graph's
        if row.get("kg_status") is not None and turns:
            return max(int(t[0]) for t in turns) - 1
        return None

    async def run(self, ctx: SessionContext) -> ProtocolResult:
        s = ctx.session
        stages = list(s.stages)
        machine = StageMachine([st.kind for st in stages])
        sim, judge = staged_roles(ctx)
        state = machine.start()
        events: list[tuple[Any, ...]] = []
        message, event = ctx.opening()
        if state.disclosed:
            line = stages[0].line
            message = f"{message}\n\n{line}" if message else line
            events.append(StageEventRow(turn=1, stage_id=stages[0].id, stage_index=0,
                                        kind=stages[0].kind, event="disclosed", detail=line))
        request = message or s.request or ""
        max_turns = s.limits.max_turns or 20
        termination = "round_budget"
        errors: list[str] = []
        retries = leaked = 0
        last = 0
        for turn in range(1, max_turns + 1):
            before = ctx.history()
            if message is not None:
                before.append({"role": "user", "content": message})
            first_record = len(ctx.toolbox.records)
            reply, ev = await ctx.agent_turn(turn, message, event)
            event = None
            last = turn
            if reply.stop_reason == "error":
                termination = "error"
                break
            if reply.stop_reason == "script_end":
                termination = "agent_answer"
                break
            view = StageView(turn=turn, stages=stages, current=state.current,
                             disclosed=state.disclosed, reply=reply.text,
                             ask_user=ev.questions,
                             work=render_work(ctx.toolbox.records[first_record:]),
                             history=before, request=request)
            failed = False
            try:
                verdict = await sim.judge(view)
            except JudgeError as exc:
                errors.append(f"turn {turn}: {exc}")
                verdict, failed = Verdict(met=False), True
            step = machine.step(state, verdict)
            if step.event == "done":
                events.append(StageEventRow(turn=turn + 1, stage_id=None, stage_index=None,
                                            kind=None, event="done", detail=None))
                termination = "done"
                break
            if step.event == "agent_answer":
                termination = "agent_answer"
                break
            if turn == max_turns:
                break  # no user turn left: what the simulator would say is never said
            decision = Decision("disclose" if step.event == "disclosed" else "push", step.stage,
                                verdict.questions)
            wording = (Wording(rules_message(view, decision)) if failed
                       else await sim.word(view, decision))
            retries += int(wording.retried)
            if wording.error:
                errors.append(f"turn {turn}: {wording.error}")
            detail = wording.message
            if wording.leak:
                leaked += 1
                detail = f"[simulator leaked stage {wording.leak} twice; rules wording] {detail}"
            at = (turn + 1, *self._stage(stages, state.current))
            events += [StageEventRow(*at, event="dismissed", detail=q) for q in step.dismissed]
            events.append(StageEventRow(turn + 1, *self._stage(stages, step.stage),
                                        event=step.event, detail=detail))
            message = wording.message
            state = step.state

        metrics: dict[str, Any] = {"stages": len(stages),
                                   "stages_disclosed": len(state.disclosed)}
        extra: dict[str, Any] = {"simulator_retries": retries, "simulator_leaks": leaked}
        tables: dict[str, list[tuple[Any, ...]]] = {"stage_events": events}
        graph_errors = 0
        if termination != "error" and s.graph is not None:
            prompt = ctx.roles.templates.render("staged_disclosure.extract_graph",
                                                request=request)
            ctx.dialogue_end = last  # the graph turn measures; it is not part of the task
            reply, _ = await ctx.agent_turn(last + 1, prompt, None)
            if reply.stop_reason == "error":
                termination = "error"
            else:
                assert s.graph is not None
                graph_errors = await grade_graph(s.graph, judge, parse_graph(reply.text),
                                                 metrics, extra, tables)
        if errors:
            extra["judge_errors"] = errors
        return ProtocolResult(termination=termination, metrics=metrics, tables=tables,
                              judge_errors=len(errors) + graph_errors, extra=extra)

    @staticmethod
    def _stage(stages: Sequence[Any], index: int | None) -> tuple[Any, Any, Any]:
        if index is None or index >= len(stages):
            return None, None, None
        return stages[index].id, index, stages[index].kind


async def grade_graph(graph: PlanGraph, judge: GraphJudge, parsed: ParsedGraph,
                      metrics: dict[str, Any], extra: dict[str, Any],
                      tables: dict[str, list[tuple[Any, ...]]]) -> int:
    """Grade a parsed graph against the ground truth into metrics, extra and rows (`triples`,
    `triple_support`); the number of judge errors."""
    gt = [Triple(t.head, t.relation, t.tail, t.dimension) for t in graph.triples]
    pred = parsed.triples
    cov = (await judge.cover(gt, pred) if gt and pred
           else [Coverage(False) for _ in gt])
    score = score_graph(cov, len(pred))
    valid = {p for c in cov if c.covered for p in c.support}
    metrics.update(recall=score.recall, precision=score.precision, f1=score.f1,
                   triples_gt=len(gt), triples_predicted=len(pred), kg_status=parsed.status)
    extra.update(graph_grader=judge.name, covered=score.covered,
                 valid_predicted=score.valid_predicted)
    if parsed.note:
        extra["kg_note"] = parsed.note
    if parsed.duplicates:
        extra["kg_duplicates_merged"] = parsed.duplicates
    if score.judge_errors:
        extra["graph_judge_errors"] = score.judge_errors
        extra["precision_lower_bound"] = score.precision_lower_bound
    triple, support = row_type("triples"), row_type("triple_support")
    tables["triples"] = [
        *(triple(side="predicted", idx=i, head=t.head, relation=t.relation, tail=t.tail,
                 dimension=None, matched=i in valid, coverage=None, judge_error=None)
          for i, t in enumerate(pred)),
        *(triple(side="ground_truth", idx=i, head=t.head, relation=t.relation, tail=t.tail,
                 dimension=t.dimension, matched=c.covered, coverage=c.kind, judge_error=c.error)
          for i, (t, c) in enumerate(zip(gt, cov, strict=True)))]
    tables["triple_support"] = [support(gt_idx=i, pred_idx=p) for i, c in enumerate(cov)
                                if c.covered for p in c.support]
    return score.judge_errors


__all__ = ["Question", "StageMachine", "StageState", "StagedDisclosure", "Step", "grade_graph"]
