"""Rubric judges for checklist items: LLM (batched per evidence selection), rules, scripted."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from benchpack.specs.pack import PROMPT_NAMES

from . import negation
from .base import JudgeCall, JudgeError, Templates, ask, parse_decisions, parse_reasons
from .intent import coverage, strip_echo

if TYPE_CHECKING:
    from ..roles import JudgeSite


@dataclass
class RubricItem:
    id: str
    text: str
    evidence: str
    """Rendered evidence the author selected for this item (may be empty)."""


@dataclass
class RubricVerdict:
    score: float | None
    detail: str
    error: str | None = None


class RubricJudge(Protocol):
    async def grade(self, items: Sequence[RubricItem], history: str,
                    intents: Sequence[str], own: str = "") -> dict[str, RubricVerdict]:
        ...


class LLMRubricJudge:
    def __init__(self, call: JudgeCall, templates: Templates,
                 template: str = "checklist.rubric_judge",
                 context: dict[str, Any] | None = None) -> None:
        self.call = call
        self.templates = templates
        self.template = template
        self.context = dict(context or {})
        """More template variables (the task, its reference solution…)."""

    async def grade(self, items: Sequence[RubricItem], history: str,
                    intents: Sequence[str], own: str = "") -> dict[str, RubricVerdict]:
        groups: dict[str, list[RubricItem]] = {}
        for it in items:
            groups.setdefault(it.evidence, []).append(it)
        out: dict[str, RubricVerdict] = {}
        for evidence, group in groups.items():
            ids = [g.id for g in group]
            prompt = self.templates.render(
                self.template, **self.context, intents=[{"text": t} for t in intents],
                history=history,
                evidence=evidence, criteria=[{"id": g.id, "text": g.text} for g in group])
            reasons: dict[str, str] = {}

            def parse(text: str, _ids: list[str] = ids, _r: dict[str, str] = reasons) -> dict[str, bool]:
                got = parse_decisions(text, _ids, key="scores", field="score")
                _r.update(parse_reasons(text))
                return got

            try:
                got = await ask(self.call, prompt, parse, purpose="rubric")
            except JudgeError as exc:
                for g in group:
                    out[g.id] = RubricVerdict(None, "", error=exc.message)
                continue
            for g in group:
                out[g.id] = RubricVerdict(1.0 if got[g.id] else 0.0, reasons.get(g.id, ""))
        return out


class RulesRubricJudge:
    """Deterministic keyword heuristic: an item is met when ≥ 60 % of its content words appear
    in `own`, what the agent produced (`agent_output`). Not the transcript nor the selected
    evidence: both hold the user's words, tool results and files the agent only read, and an
    agent saying "Done." would be credited with them. An item that forbids ("should not",
    "不应" …) is met by the absence of what it forbids, undecided when that is there
    (`negation`)."""

    async def grade(self, items: Sequence[RubricItem], history: str,
                    intents: Sequence[str], own: str = "") -> dict[str, RubricVerdict]:
        out = {}
        for it in items:
            neg = negation.judge(it.text, own)
            if neg is not None:
                ok, why, _ = neg
                out[it.id] = (RubricVerdict(1.0 if ok else 0.0, why) if ok is not None
                              else RubricVerdict(None, "", error=why))
                continue
            c = coverage(it.text, own)
            out[it.id] = RubricVerdict(1.0 if c >= 0.6 else 0.0,
                                       f"rules (keyword heuristic): {c:.0%} of key words in "
                                       "what the agent said, did or wrote")
        return out


def agent_output(messages: Sequence[Any], records: Sequence[Any], files: dict[str, str],
                 initial: dict[str, str]) -> str:
    """What the agent produced, for the rules judge: its messages, its successful tool calls'
    arguments and the lines of final files that the environment did not start with, minus the
    sentences it echoed from the user's messages."""
    parts = [m.content for m in messages if m.role == "assistant" and m.content]
    parts += [json.dumps(r.call, ensure_ascii=False, default=str) for r in records
              if not r.error]
    for path, text in files.items():
        before = set(initial.get(path, "").splitlines())
        parts += [line for line in text.splitlines() if line not in before]
    heard = [m.content for m in messages if m.role == "user" and m.content]
    return strip_echo("\n".join(parts), heard)


class ScriptedRubricJudge:
    def __init__(self, scores: dict[str, Any]) -> None:
        self.scores = scores

    async def grade(self, items: Sequence[RubricItem], history: str,
                    intents: Sequence[str], own: str = "") -> dict[str, RubricVerdict]:
        out = {}
        for it in items:
            if it.id in self.scores:
                out[it.id] = RubricVerdict(float(self.scores[it.id]), "scripted")
            else:
                out[it.id] = RubricVerdict(None, "", error="no scripted score for this item")
        return out


def rubric_judge(ctx: JudgeSite, template: str | None = None) -> RubricJudge:
    """The checklist rubric judge for a session, from the run's `judge` role. Scripts give
    `checklist: {<item id>: 0|1}` per session. The template defaults to the protocol's own
    `<protocol>.rubric_judge` when that is a prompt name, else `checklist.rubric_judge`; it
    may use `task` (title, request, trigger) and `reference_solution` besides the usual
    `intents`, `history`, `evidence` and `criteria`."""
    roles = ctx.roles
    mode = roles.mode("judge")
    if mode == "rules":
        return RulesRubricJudge()
    if mode == "scripted":
        return ScriptedRubricJudge(roles.script(ctx, "judge").get("checklist") or {})
    s = ctx.session
    if template is None:
        own = f"{s.protocol}.rubric_judge"
        template = own if own in PROMPT_NAMES else "checklist.rubric_judge"
    task = {"title": s.title, "request": s.request, "trigger": s.trigger.kind,
            "payload": s.trigger.payload}
    return LLMRubricJudge(roles.call(ctx, "judge"), roles.templates, template,
                          {"task": task, "reference_solution": s.reference_solution})


def render_evidence(selector: dict[str, Any] | None, tool_records: Sequence[Any],
                    files: dict[str, str], state: dict[str, dict[str, list[dict[str, Any]]]]) -> str:
    """The evidence an author selected for a rubric item, rendered for the judge."""
    import fnmatch

    if not selector:
        return ""
    parts = []
    for pattern in selector.get("tools") or []:
        for r in tool_records:
            if fnmatch.fnmatchcase(r.tool_name, pattern):
                parts.append(f"<tool name=\"{r.tool_name}\">\ncall: "
                             f"{json.dumps(r.call, ensure_ascii=False)}\nresult: "
                             f"{_clip(json.dumps(r.result, ensure_ascii=False, default=str))}"
                             + (f"\nerror: {r.error}" if r.error else "") + "\n</tool>")
    for path in selector.get("files") or []:
        text = files.get(path)
        parts.append(f"<file path=\"{path}\">\n{_clip(text) if text is not None else '(missing)'}"
                     "\n</file>")
    for ref in selector.get("state") or []:
        svc, _, table = ref.partition(".")
        rows = state.get(svc, {}).get(table)
        parts.append(f"<state table=\"{ref}\">\n"
                     f"{_clip(json.dumps(rows, ensure_ascii=False, default=str))}\n</state>")
    return "\n".join(parts)


def _clip(text: str, limit: int = 8000) -> str:
    return text if len(text) <= limit else text[:limit] + " [… truncated]"
