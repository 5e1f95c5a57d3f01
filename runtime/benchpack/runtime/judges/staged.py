"""Staged-disclosure user simulators and knowledge-graph judges, in three modes each.

A simulator answers two things per agent turn: the *verdict* (is the current stage's trigger
met, which questions did the agent ask and which stage, if any, each is about) and the
*wording* of the user's next message once the stage machine has decided what happens
(`protocols/staged_disclosure.py`). It never decides what is disclosed.

Simulator modes:

- `rules`: `mentions` is met when ≥ 60 % of the content words of the stage's `about` appear in
  the agent's reply; `milestone` when they appear in the reply or in the turn's tool calls and
  results; `asks` when a question sentence of the reply (or an `ask_user` call) contains ≥ half
  of them. A question belongs to the stage whose `about` (or, once disclosed, line) it covers
  best at that threshold, else to no stage. Once every stage is disclosed, a non-empty reply
  that asks nothing counts as addressing them. Lines are said verbatim; pushes use the stage's
  `otherwise`, else a neutral nudge; every question gets its own short answer.
- `scripted:<file>`: verdicts per agent turn (see `ScriptedStageSimulator`).
- `llm`: one call per turn (`staged_disclosure.user`) returns strict JSON
  `{"met", "questions": [{"question", "stage"}], "message"}`. If the stage machine overrules
  the verdict, or the message leaks a stage that stays hidden (`leaks`), one corrective call
  states the decision; a second leak falls back to the rules wording and is recorded.

Graph judges: `llm` (`staged_disclosure.graph_judge`, ground-truth triples in batches of
`graph.batch_size`, run concurrently; strict parse, one retry, then the batch's triples are
judge errors), `scripted` (coverage per ground-truth index from the judge's script) and `match`
(`graders.graph.match_coverage`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from benchpack.specs.plan import PlanStage
from benchpack.specs.text import question_sentences as question_sentences

from ..errors import UsageError
from ..graders.graph import COVERAGE_KINDS, Coverage, Triple, match_coverage
from .base import JudgeCall, JudgeError, ParseError, Templates, ask, extract_json
from .intent import coverage, tokens

if TYPE_CHECKING:
    from ..roles import JudgeSite
    from ..session import SessionContext

TRIGGER_SHARE = 0.6
"""Share of `about` content words a reply (or its work) must contain to meet mentions/milestone."""
QUESTION_SHARE = 0.5
"""Share of a stage's content words a question must contain to be about that stage."""
LEAK_SHARE = 0.6
"""Share of a hidden text's new content words that makes a message leak it."""
NUDGE = "Keep going, please. I want the full picture on this before we move on."
FINISH = "Please finish what I asked for last, completely."
# Chinese and Japanese end sentences with full-width marks and no space after them.


@dataclass(frozen=True)
class Question:
    text: str
    stage: int | None
    """Index of the stage it is about; None when no stage covers it."""


@dataclass(frozen=True)
class Verdict:
    """What the simulator observed on one agent turn."""

    met: bool
    """The current stage's trigger holds; once every stage is disclosed: the agent addressed
    them all."""
    questions: tuple[Question, ...] = ()
    asked: bool = False
    """The agent asked about the current stage (also implied by a question on it)."""


@dataclass
class StageView:
    """What the simulator may look at for one agent turn."""

    turn: int
    stages: Sequence[PlanStage]
    current: int
    """Index of the current stage; `len(stages)` once every stage is disclosed."""
    disclosed: tuple[int, ...]
    reply: str
    ask_user: list[str] = field(default_factory=list)
    work: str = ""
    """The turn's tool calls and results, as text."""
    history: list[dict[str, str]] = field(default_factory=list)
    """The conversation before the reply (this turn's user message included)."""
    request: str = ""


@dataclass(frozen=True)
class Decision:
    """What the stage machine decided, for the wording."""

    action: Literal["disclose", "push"]
    stage: int | None
    """The stage disclosed or pushed on (None: pushing to finish after the last stage)."""
    questions: tuple[Question, ...] = ()


@dataclass
class Wording:
    message: str
    retried: bool = False
    leak: str | None = None
    """Set when the simulator leaked twice and the rules wording was used instead."""
    error: str | None = None


class StageSimulator(Protocol):
    async def judge(self, view: StageView) -> Verdict:
        ...

    async def word(self, view: StageView, decision: Decision) -> Wording:
        ...


# --------------------------------------------------------------------------- rules


def _stage_text(stage: PlanStage, disclosed: bool) -> list[str]:
    texts = [stage.about] if stage.about else []
    if disclosed or not texts:
        texts.append(stage.line)
    return texts


def classify(question: str, stages: Sequence[PlanStage], current: int,
             disclosed: Sequence[int]) -> int | None:
    """The stage a question is about (rules): the best-covered stage at `QUESTION_SHARE`,
    ties going to the current stage, then the earliest."""
    best: tuple[float, int, int] | None = None
    for i, st in enumerate(stages):
        share = max(coverage(t, question) for t in _stage_text(st, i in disclosed))
        if share >= QUESTION_SHARE:
            key = (share, int(i == current), -i)
            if best is None or key > best:
                best = key
    return -best[2] if best is not None else None


def rules_verdict(view: StageView) -> Verdict:
    questions = tuple(Question(q, classify(q, view.stages, view.current, view.disclosed))
                      for q in [*question_sentences(view.reply), *view.ask_user])
    if view.current >= len(view.stages):
        return Verdict(met=bool(view.reply.strip()) and not questions, questions=questions)
    st = view.stages[view.current]
    asked = any(q.stage == view.current for q in questions)
    about = st.about or st.line
    if st.kind == "asks":
        met = asked
    elif st.kind == "milestone":
        met = coverage(about, view.reply + "\n" + view.work) >= TRIGGER_SHARE
    elif st.kind == "mentions":
        met = coverage(about, view.reply) >= TRIGGER_SHARE
    else:  # a `start` stage left in the plan: disclosed with the opening, never here
        met = True
    return Verdict(met=met, questions=questions, asked=asked)


def rules_message(view: StageView, decision: Decision) -> str:
    """The rules wording: one short answer per question (no stage: no preference; a disclosed
    stage: its line again; a later stage: not yet), then the line or the push."""
    parts = []
    for q in decision.questions:
        if q.stage is None:
            parts.append(f"To “{q.text}”: no preference, that doesn't matter to me.")
        elif q.stage in view.disclosed:
            parts.append(f"To “{q.text}”: as I said, {view.stages[q.stage].line}")
        elif q.stage != decision.stage:
            parts.append(f"To “{q.text}”: not yet, one thing at a time.")
    if decision.action == "disclose" and decision.stage is not None:
        parts.append(view.stages[decision.stage].line)
    elif decision.stage is not None:
        parts.append(view.stages[decision.stage].otherwise or NUDGE)
    else:
        parts.append(FINISH)
    return " ".join(parts)


class RulesStageSimulator:
    async def judge(self, view: StageView) -> Verdict:
        return rules_verdict(view)

    async def word(self, view: StageView, decision: Decision) -> Wording:
        return Wording(rules_message(view, decision))


# --------------------------------------------------------------------------- scripted


class ScriptedStageSimulator:
    """Verdicts per agent turn from a script (see `roles.Script`):

    ```yaml
    sessions:
      <session name or plan id>:
        turns:
          1: {met: true}                        # the current stage's trigger holds
          2: {met: false, message: "Go on."}    # exact wording (default: the rules wording)
          3: {met: true, asked: true,           # `asked` defaults to `met` on an asks stage
              questions: [{text: "Which city?", stage: null}, {text: "Budget?", stage: st3}]}
    ```
    A turn not listed is not met. `questions` (stage ids, or null for no stage) replace the
    rules' question finding for that turn."""

    def __init__(self, script: dict[str, Any]) -> None:
        turns = script.get("turns") or {}
        if not isinstance(turns, dict):
            raise ValueError("scripted simulator: `turns` must map turn numbers to verdicts")
        self.turns = {int(k): dict(v or {}) for k, v in turns.items()}

    async def judge(self, view: StageView) -> Verdict:
        entry = self.turns.get(view.turn, {})
        met = bool(entry.get("met", False))
        ids = {st.id: i for i, st in enumerate(view.stages)}
        if "questions" in entry:
            questions = []
            for q in entry.get("questions") or []:
                sid = q.get("stage")
                if sid is not None and sid not in ids:
                    raise ValueError(f"scripted simulator, turn {view.turn}: unknown stage "
                                     f"`{sid}` (known: {', '.join(ids)})")
                questions.append(Question(str(q.get("text", "")),
                                          ids[sid] if sid is not None else None))
            found = tuple(questions)
        else:
            found = rules_verdict(view).questions
        on_asks = view.current < len(view.stages) and view.stages[view.current].kind == "asks"
        asked = bool(entry.get("asked", met and on_asks))
        return Verdict(met=met, questions=found, asked=asked)

    async def word(self, view: StageView, decision: Decision) -> Wording:
        message = self.turns.get(view.turn, {}).get("message")
        return Wording(str(message) if message else rules_message(view, decision))


# --------------------------------------------------------------------------- llm


def leaks(secret: str, message: str, known: set[str], min_hits: int = 2) -> bool:
    """Whether `message` gives away `secret`: it contains ≥ `LEAK_SHARE` of the secret's content
    words that the conversation has not used yet (`known`), and at least `min_hits` of them
    (fewer when the secret has fewer new words)."""
    new = tokens(secret) - known
    if not new:
        return False
    hits = new & tokens(message)
    return len(hits) >= min(min_hits, len(new)) and len(hits) / len(new) >= LEAK_SHARE


def hidden_texts(view: StageView, decision: Decision) -> list[tuple[str, str, int]]:
    """(stage id, text, min_hits) the message must not give away: the lines of every stage not
    disclosed after this message, and the `about` of hidden `asks` stages (a user never tells
    the agent what to ask)."""
    first_hidden = view.current + (1 if decision.action == "disclose" else 0)
    out = []
    for st in view.stages[first_hidden:]:
        out.append((st.id, st.line, 2))
        if st.kind == "asks" and st.about:
            out.append((st.id, st.about, 1))
    return out


def find_leak(view: StageView, decision: Decision, message: str) -> str | None:
    known = tokens("\n".join([view.request, *(m["content"] for m in view.history), view.reply]))
    for sid, text, hits in hidden_texts(view, decision):
        if leaks(text, message, known, hits):
            return sid
    return None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " [… truncated]"


@dataclass
class _Draft:
    met: bool
    questions: tuple[Question, ...]
    message: str


def parse_user_turn(text: str, ids: Sequence[str], final: bool) -> _Draft:
    """Strict: `{"met": bool, "questions": [{"question": str, "stage": id|null}], "message": str}`;
    the message may be empty only when every stage is disclosed and `met` is true."""
    data = extract_json(text)
    if not isinstance(data, dict):
        raise ParseError("the answer must be a JSON object")
    met = data.get("met")
    if not isinstance(met, bool):
        raise ParseError("`met` must be true or false")
    raw = data.get("questions", [])
    if not isinstance(raw, list):
        raise ParseError("`questions` must be a list")
    index = {sid: i for i, sid in enumerate(ids)}
    questions = []
    for q in raw:
        if not isinstance(q, dict) or not isinstance(q.get("question"), str):
            raise ParseError("every entry of `questions` needs a `question` string")
        sid = q.get("stage")
        if sid is not None and sid not in index:
            raise ParseError(f"`stage` must be one of {list(ids)} or null, got {sid!r}")
        questions.append(Question(q["question"], index[sid] if sid is not None else None))
    message = data.get("message")
    if not isinstance(message, str):
        raise ParseError("`message` must be a string")
    if not message.strip() and not (final and met):
        raise ParseError("`message` is empty")
    return _Draft(met, tuple(questions), message.strip())


class LLMStageSimulator:
    """See the module docstring. Keeps the turn's draft between `judge` and `word`."""

    def __init__(self, call: JudgeCall, templates: Templates, persona: dict[str, Any],
                 style: dict[str, Any] | None) -> None:
        self.call = call
        self.templates = templates
        self.persona = persona
        self.style = style
        self._draft: _Draft | None = None

    def _prompt(self, view: StageView, correction: str | None) -> str:
        status = []
        for i, st in enumerate(view.stages):
            state = "disclosed" if i in view.disclosed else (
                "current" if i == view.current else "later")
            status.append({"id": st.id, "kind": st.kind, "about": st.about or "",
                           "line": st.line if state != "later" else "",
                           "otherwise": st.otherwise or "", "state": state})
        current = status[view.current] if view.current < len(status) else None
        return self.templates.render(
            "staged_disclosure.user", persona=self.persona, style=self.style,
            request=view.request, history=[{"role": m["role"], "content": _clip(m["content"],
                                                                                  4000)}
                                           for m in view.history[-12:]],
            reply=_clip(view.reply, 20_000), ask_user=view.ask_user,
            work=_clip(view.work, 8000), stages=status, current=current,
            correction=correction)

    async def _ask(self, view: StageView, correction: str | None, purpose: str) -> _Draft:
        ids = [st.id for st in view.stages]
        final = view.current >= len(view.stages)
        return await ask(self.call, self._prompt(view, correction),
                         lambda t: parse_user_turn(t, ids, final), purpose=purpose,
                         turn=view.turn)

    async def judge(self, view: StageView) -> Verdict:
        self._draft = None
        draft = await self._ask(view, None, "stage_turn")
        self._draft = draft
        on = view.current < len(view.stages)
        asked = on and any(q.stage == view.current for q in draft.questions)
        return Verdict(met=draft.met, questions=draft.questions, asked=asked)

    async def word(self, view: StageView, decision: Decision) -> Wording:
        draft = self._draft
        agrees = draft is not None and draft.met == (decision.action == "disclose")
        message = draft.message if draft is not None and agrees else ""
        if message and find_leak(view, decision, message) is None:
            return Wording(message)
        correction = _correction(view, decision)
        try:
            again = await self._ask(view, correction, "stage_turn:correct")
        except JudgeError as exc:
            return Wording(rules_message(view, decision), retried=True, error=exc.message)
        leak = find_leak(view, decision, again.message) if again.message else "empty message"
        if leak is None:
            return Wording(again.message, retried=True)
        return Wording(rules_message(view, decision), retried=True, leak=leak)


def _correction(view: StageView, decision: Decision) -> str:
    if decision.action == "disclose" and decision.stage is not None:
        return (f"Decision already taken: stage `{view.stages[decision.stage].id}` is now "
                "disclosed. Say its line and answer the assistant's questions; reveal nothing "
                "from any later stage.")
    if decision.stage is not None:
        st = view.stages[decision.stage]
        return (f"Decision already taken: the trigger of stage `{st.id}` is NOT met. Do not "
                "reveal its line or anything from later stages, and do not hint at what the "
                "assistant should ask; push on the current work and answer its questions.")
    return ("Decision already taken: the assistant has not yet fully addressed your last "
            "request. Push it to finish and answer its questions.")


# --------------------------------------------------------------------------- graph judges


class GraphJudge(Protocol):
    name: str

    async def cover(self, gt: Sequence[Triple], pred: Sequence[Triple]) -> list[Coverage]:
        ...


def check_coverage(item: Any, n_pred: int) -> Coverage:
    """One coverage verdict, strictly: covered → a kind and supporting predicted indices that
    exist (≥ 1, ≥ 2 for collective and compositional); not covered → no support."""
    if not isinstance(item, dict) or not isinstance(item.get("covered"), bool):
        raise ParseError("each verdict needs `covered`: true or false")
    support = item.get("support") or []
    if not isinstance(support, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in support):
        raise ParseError("`support` must be a list of predicted-triple indices")
    bad = [i for i in support if not 0 <= i < n_pred]
    if bad:
        raise ParseError(f"support indices {bad} do not exist (predicted triples are "
                         f"0..{n_pred - 1})")
    uniq = tuple(sorted(set(support)))
    if not item["covered"]:
        if uniq:
            raise ParseError("an uncovered triple cannot have supporting triples")
        return Coverage(False)
    kind = item.get("kind")
    if kind not in COVERAGE_KINDS:
        raise ParseError(f"`kind` must be one of {list(COVERAGE_KINDS)}, got {kind!r}")
    need = 2 if kind in ("collective", "compositional") else 1
    if len(uniq) < need:
        raise ParseError(f"{kind} coverage needs at least {need} supporting triple(s)")
    return Coverage(True, str(kind), uniq)


def parse_coverage(text: str, ids: Sequence[int], n_pred: int) -> dict[int, Coverage]:
    """`{"coverage": [{"gt": idx, "covered": bool, "kind": ..., "support": [...]}]}` covering
    exactly `ids`."""
    data = extract_json(text)
    items = data.get("coverage") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ParseError("missing the `coverage` list")
    out: dict[int, Coverage] = {}
    for item in items:
        gt = item.get("gt") if isinstance(item, dict) else None
        if not isinstance(gt, int) or isinstance(gt, bool):
            raise ParseError("every verdict needs `gt`, the ground-truth index")
        if gt in out:
            raise ParseError(f"ground-truth triple {gt} is judged twice")
        try:
            out[gt] = check_coverage(item, n_pred)
        except ParseError as exc:
            raise ParseError(f"ground-truth triple {gt}: {exc}") from None
    missing = [i for i in ids if i not in out]
    extra = [i for i in out if i not in ids]
    if missing or extra:
        raise ParseError(f"judge exactly the triples {list(ids)}; missing {missing}, "
                         f"unexpected {extra}")
    return out


class MatchGraphJudge:
    name = "match"

    async def cover(self, gt: Sequence[Triple], pred: Sequence[Triple]) -> list[Coverage]:
        return match_coverage(gt, pred)


class LLMGraphJudge:
    name = "llm"

    def __init__(self, call: JudgeCall, templates: Templates, batch_size: int) -> None:
        self.call = call
        self.templates = templates
        self.batch_size = max(1, batch_size)

    async def _batch(self, start: int, gt: Sequence[Triple], pred: Sequence[Triple]
                     ) -> list[Coverage]:
        ids = list(range(start, start + len(gt)))
        prompt = self.templates.render(
            "staged_disclosure.graph_judge",
            predicted=[{"idx": i, "text": t.text()} for i, t in enumerate(pred)],
            ground_truth=[{"idx": i, "text": t.text()} for i, t in zip(ids, gt, strict=True)])
        try:
            got = await ask(self.call, prompt, lambda t: parse_coverage(t, ids, len(pred)),
                            purpose="graph_judge")
        except JudgeError as exc:
            return [Coverage(None, error=exc.message) for _ in ids]
        return [got[i] for i in ids]

    async def cover(self, gt: Sequence[Triple], pred: Sequence[Triple]) -> list[Coverage]:
        n = self.batch_size
        batches = await asyncio.gather(*(self._batch(k, gt[k:k + n], pred)
                                         for k in range(0, len(gt), n)))
        return [c for b in batches for c in b]


class ScriptedGraphJudge:
    """Coverage from the judge's script: `graph: {<gt index>: {kind, support: [...]}}` per
    session (0-based indices; an index not listed, or null, is not covered). Entries are checked
    like LLM verdicts; a bad entry is a judge error on that triple."""

    name = "scripted"

    def __init__(self, script: dict[str, Any]) -> None:
        self.entries = {int(k): v for k, v in (script.get("graph") or {}).items()}

    async def cover(self, gt: Sequence[Triple], pred: Sequence[Triple]) -> list[Coverage]:
        out = []
        for i in range(len(gt)):
            entry = self.entries.get(i)
            if entry is None:
                out.append(Coverage(False))
                continue
            try:
                out.append(check_coverage({"covered": True, **entry}, len(pred)))
            except ParseError as exc:
                out.append(Coverage(None, error=f"scripted graph verdict {i}: {exc}"))
        return out


# --------------------------------------------------------------------------- factory


def staged_roles(ctx: SessionContext) -> tuple[StageSimulator, GraphJudge]:
    """The simulator and graph judge of a staged-disclosure session. `--graph-grader`: `match`,
    `llm` (the judge role: an LLM or a script), or `auto` (match when the judge is `rules`)."""
    roles = ctx.roles
    style = ctx.session.style
    sim: StageSimulator = roles.build(
        ctx, "simulator", rules=RulesStageSimulator, scripted=ScriptedStageSimulator,
        llm=lambda call: LLMStageSimulator(call, roles.templates,
                                           ctx.persona.model_dump(mode="json"),
                                           style.model_dump(mode="json") if style else None))
    return sim, graph_judge(ctx, ctx.run.options.graph_grader)


def graph_judge(ctx: JudgeSite, grader: str) -> GraphJudge:
    """The knowledge-graph judge for `--graph-grader` `grader` (see `staged_roles`)."""
    roles = ctx.roles
    judge_mode = roles.mode("judge")
    if grader == "match" or (grader == "auto" and judge_mode == "rules"):
        return MatchGraphJudge()
    if judge_mode == "rules":
        raise UsageError("--graph-grader llm needs a judge: pass --judge litellm:<model> or "
                         "--judge scripted:<file>")
    if judge_mode == "scripted":
        return ScriptedGraphJudge(roles.script(ctx, "judge"))
    graph = ctx.session.graph
    return LLMGraphJudge(roles.call(ctx, "judge"), roles.templates,
                         graph.batch_size if graph else 25)


def render_work(records: Sequence[Any], limit: int = 1500) -> str:
    """A turn's tool calls and results as text (for milestone triggers)."""
    lines = []
    for r in records:
        result = json.dumps(r.result, ensure_ascii=False, default=str)
        lines.append(f"{r.tool_name}({json.dumps(r.call, ensure_ascii=False, default=str)}) -> "
                     f"{r.error or _clip(result, limit)}")
    return "\n".join(lines)


__all__ = [
    "Decision", "GraphJudge", "LLMGraphJudge", "LLMStageSimulator", "MatchGraphJudge",
    "Question", "RulesStageSimulator", "ScriptedGraphJudge", "ScriptedStageSimulator",
    "StageSimulator", "StageView", "Verdict", "Wording", "check_coverage", "classify",
    "find_leak", "graph_judge", "leaks", "parse_coverage", "parse_user_turn", "question_sentences",
    "render_work", "rules_message", "rules_verdict", "staged_roles",
]
