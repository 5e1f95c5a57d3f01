"""Intent-tracking judges and user simulators, in three modes.

- `llm`: an LLM with our templates and strict JSON/tagged output (`judges/prompts/*.j2`,
  overridable per pack).
- `rules`: deterministic heuristics for tests, CI and demos (no API keys).
- `scripted`: decisions read from a file, to reproduce published trajectories exactly.

All modes answer the same three questions per user turn: which open intents the agent's turn
completed, which it asked about with a targeted question, and what the user says next.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from benchpack.specs.text import grams

from .base import JudgeCall, JudgeError, ParseError, Templates, ask, parse_decisions, parse_tagged

if TYPE_CHECKING:
    from ..roles import JudgeSite
    from ..session import SessionContext

_STOP = frozenset(
    ["a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "by", "at", "from", "as", "is", "are", "be", "been", "was", "were", "it", "its", "this", "that", "these", "those", "your", "my", "our", "their", "his", "her", "i", "you", "we", "they", "me", "us", "them", "do", "does", "did", "not", "no", "so", "if", "then", "than", "into", "about", "over", "under", "up", "out", "all", "any", "each", "every", "some", "such", "can", "could", "should", "would", "will", "must", "may", "might", "also", "just", "only", "very", "more", "most", "other", "own", "same", "too", "please", "use", "using", "make", "include", "provide", "give", "state", "each", "per"]
)


def _content(word: str) -> bool:
    return word not in _STOP and (len(word) > 2 or word.isdigit())


def tokens(text: str) -> set[str]:
    """Content words, and character n-grams of unsegmented scripts (`benchpack.specs.text`)."""
    return grams(text, _content)


def coverage(needle: str, haystack: str) -> float:
    want = tokens(needle)
    if not want:
        return 0.0
    return len(want & tokens(haystack)) / len(want)


_SENTENCE = re.compile(r"[^.!?。！？;；\n]+")
_SPACE = re.compile(r"\s+")


def strip_echo(text: str, heard: Iterable[str]) -> str:
    """`text` without the sentences it repeats verbatim (case and spacing aside) from `heard`,
    the user's messages: a keyword heuristic must not credit an agent with words it only
    echoed back. Fragments under 4 characters ("OK") are left, they are not an echo."""
    text = _SPACE.sub(" ", text)
    parts = {_SPACE.sub(" ", p).strip() for h in heard for p in _SENTENCE.findall(h)}
    for part in sorted((p for p in parts if len(p) >= 4), key=len, reverse=True):
        text = re.sub(re.escape(part), " ", text, flags=re.IGNORECASE)
    return text


@dataclass
class TurnEvidence:
    """What the judge may look at for one agent turn."""

    turn: int
    text: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    questions: list[str] = field(default_factory=list)
    """Questions asked through the `ask_user` tool."""
    written: set[str] | None = None
    """Which of `files` the agent wrote (None: all of them); the others it only read."""
    heard: list[str] = field(default_factory=list)
    """The user's messages so far, which an agent repeating them has not thereby done."""

    def blob(self) -> str:
        parts = [self.text, *self.questions]
        parts += [json.dumps(t.get("call"), ensure_ascii=False) for t in self.tool_calls]
        parts += list(self.files.values())
        return "\n".join(parts)

    def own(self) -> str:
        """What the agent itself said, did (successful tool calls) and wrote this turn, minus
        what it echoed from the user: what a keyword heuristic may credit. Files it only read
        and the user's words are not the agent's work."""
        parts = [self.text, *self.questions]
        parts += [json.dumps(t.get("call"), ensure_ascii=False) for t in self.tool_calls
                  if not t.get("error")]
        parts += [v for k, v in self.files.items() if self.written is None or k in self.written]
        return strip_echo("\n".join(parts), self.heard)


@dataclass
class Intent:
    id: str
    text: str
    reveal: str | None = None


class IntentJudge(Protocol):
    async def completed(self, ev: TurnEvidence, open_: list[Intent]) -> set[str]:
        ...

    async def targeted(self, ev: TurnEvidence, open_: list[Intent]) -> set[str]:
        ...


class UserSimulator(Protocol):
    async def reply(self, mode: str, intents: list[Intent], history: list[dict[str, str]],
                    turn: int) -> str:
        ...

    def choose(self, ev: TurnEvidence, open_: list[Intent], turn: int) -> Intent:
        """The open intent most relevant to the current stage of work (to be provided)."""
        ...


def _relevant(ev: TurnEvidence, open_: list[Intent]) -> Intent:
    """Deterministic relevance: highest token overlap with the agent's latest turn, ties broken
    by authored order."""
    have = tokens(ev.blob())  # = coverage(intent, blob) for each intent, blob tokenised once

    def overlap(i: int) -> float:
        want = tokens(open_[i].text)
        return len(want & have) / len(want) if want else 0.0

    best = max(range(len(open_)), key=lambda i: (overlap(i), -i))
    return open_[best]


# --------------------------------------------------------------------------- llm


class LLMIntentJudge(IntentJudge):
    def __init__(self, call: JudgeCall, templates: Templates) -> None:
        self.call = call
        self.templates = templates

    async def completed(self, ev: TurnEvidence, open_: list[Intent]) -> set[str]:
        ids = [i.id for i in open_]
        prompt = self.templates.render(
            "intent_tracking.completion_check", assistant_message=ev.text,
            tool_calls=ev.tool_calls, files=_clip_files(ev.files),
            intents=[{"id": i.id, "text": i.text} for i in open_])
        got = await ask(self.call, prompt, lambda t: parse_decisions(t, ids),
                        purpose="completion_check", turn=ev.turn)
        return {k for k, v in got.items() if v}

    async def targeted(self, ev: TurnEvidence, open_: list[Intent]) -> set[str]:
        ids = [i.id for i in open_]
        prompt = self.templates.render(
            "intent_tracking.clarification_check", assistant_message=ev.text,
            questions=ev.questions, intents=[{"id": i.id, "text": i.text} for i in open_])
        got = await ask(self.call, prompt, lambda t: parse_decisions(t, ids),
                        purpose="clarification_check", turn=ev.turn)
        return {k for k, v in got.items() if v}


def _clip_files(files: dict[str, str], budget: int = 40_000) -> dict[str, str]:
    out: dict[str, str] = {}
    for path, text in files.items():
        room = budget - sum(len(v) for v in out.values())
        if room <= 0:
            break
        out[path] = text if len(text) <= room else text[:room] + "\n[… truncated]"
    return out


class LLMUserSimulator:
    def __init__(self, call: JudgeCall, templates: Templates, persona: dict[str, Any],
                 style: dict[str, Any] | None, request: str) -> None:
        self.call = call
        self.templates = templates
        self.persona = persona
        self.style = style
        self.request = request

    def choose(self, ev: TurnEvidence, open_: list[Intent], turn: int) -> Intent:
        return _relevant(ev, open_)

    async def reply(self, mode: str, intents: list[Intent], history: list[dict[str, str]],
                    turn: int) -> str:
        prompt = self.templates.render(
            "intent_tracking.user_turn", persona=self.persona, style=self.style,
            request=self.request, history=history[-12:], mode=mode,
            intents=[{"id": i.id, "text": i.text, "reveal": i.reveal} for i in intents])
        return await ask(self.call, prompt, lambda t: parse_tagged(t, "message"),
                         purpose=f"user_{mode}", turn=turn)


# --------------------------------------------------------------------------- rules


class RulesIntentJudge(IntentJudge):
    """Completed: ≥ 60 % of the intent's content words appear in what the agent said, did or
    wrote this turn (`TurnEvidence.own`: not files it only read, not the user's words echoed).
    Targeted: a question sentence sharing ≥ half of the intent's content words (so "anything
    else?" never counts), echoes of the user aside."""

    async def completed(self, ev: TurnEvidence, open_: list[Intent]) -> set[str]:
        blob = ev.own()
        return {i.id for i in open_ if coverage(i.text, blob) >= 0.6}

    async def targeted(self, ev: TurnEvidence, open_: list[Intent]) -> set[str]:
        questions = [q for q in re.split(r"(?<=[?])\s+|(?<=[？])\s*|\n", ev.text)
                     if q.strip().endswith(("?", "？"))]
        questions += ev.questions
        questions = [strip_echo(q, ev.heard) for q in questions]
        out = set()
        for i in open_:
            if any(coverage(i.text, q) >= 0.5 for q in questions):
                out.add(i.id)
        return out


class RulesUserSimulator:
    def choose(self, ev: TurnEvidence, open_: list[Intent], turn: int) -> Intent:
        return _relevant(ev, open_)

    async def reply(self, mode: str, intents: list[Intent], history: list[dict[str, str]],
                    turn: int) -> str:
        lines = [i.reveal or i.text for i in intents]
        if mode == "answer":
            return "To answer your question: " + " ".join(lines)
        if mode == "provide":
            return "One more thing: " + " ".join(lines)
        return "Please go ahead and finish."


# --------------------------------------------------------------------------- scripted


class ScriptedIntentJudge(IntentJudge):
    """Decisions per user turn from a script (see `roles.Script`):

    ```yaml
    sessions:
      <session name or plan id>:
        turns:
          1: {completed: [I1], inferred: [], provided: I2}
          2: {completed: [I3, I4]}
        checklist: {c1: 1, c2: 0}
    ```
    Turns not listed decide nothing; `provided` names the intent the user reveals when nothing
    was asked (default: the rules choice)."""

    def __init__(self, script: dict[str, Any]) -> None:
        self.turns = {int(k): v or {} for k, v in (script.get("turns") or {}).items()}

    async def completed(self, ev: TurnEvidence, open_: list[Intent]) -> set[str]:
        want = set(self.turns.get(ev.turn, {}).get("completed") or [])
        return {i.id for i in open_ if i.id in want}

    async def targeted(self, ev: TurnEvidence, open_: list[Intent]) -> set[str]:
        want = set(self.turns.get(ev.turn, {}).get("inferred") or [])
        return {i.id for i in open_ if i.id in want}

    def provided(self, turn: int) -> str | None:
        value = self.turns.get(turn, {}).get("provided")
        return str(value) if value else None


class ScriptedUserSimulator(RulesUserSimulator):
    def __init__(self, judge: ScriptedIntentJudge) -> None:
        self.judge = judge

    def choose(self, ev: TurnEvidence, open_: list[Intent], turn: int) -> Intent:
        want = self.judge.provided(turn)
        for i in open_:
            if i.id == want:
                return i
        return super().choose(ev, open_, turn)


def intent_judge(ctx: JudgeSite) -> IntentJudge:
    """The completion/clarification judge of an intent-tracking session (role `judge`)."""
    roles = ctx.roles
    judge: IntentJudge = roles.build(
        ctx, "judge", rules=RulesIntentJudge, scripted=ScriptedIntentJudge,
        llm=lambda call: LLMIntentJudge(call, roles.templates))
    return judge


def intent_roles(ctx: SessionContext) -> tuple[IntentJudge, UserSimulator]:
    """The judge and user simulator of an intent-tracking session, from the run's roles. A
    scripted judge also scripts which intent the user provides (one file holds both)."""
    roles = ctx.roles
    judge = intent_judge(ctx)
    scripted = judge if isinstance(judge, ScriptedIntentJudge) else None
    s = ctx.session
    sim: UserSimulator = roles.build(
        ctx, "simulator",
        rules=lambda: ScriptedUserSimulator(scripted) if scripted else RulesUserSimulator(),
        scripted=lambda script: ScriptedUserSimulator(scripted or ScriptedIntentJudge(script)),
        llm=lambda call: LLMUserSimulator(
            call, roles.templates, ctx.persona.model_dump(mode="json"),
            s.style.model_dump(mode="json") if s.style else None, s.request or ""))
    return judge, sim


__all__ = [
    "Intent",
    "IntentJudge",
    "JudgeError",
    "LLMIntentJudge",
    "LLMUserSimulator",
    "ParseError",
    "RulesIntentJudge",
    "RulesUserSimulator",
    "ScriptedIntentJudge",
    "ScriptedUserSimulator",
    "TurnEvidence",
    "UserSimulator",
    "coverage",
    "intent_judge",
    "intent_roles",
    "strip_echo",
    "tokens",
]
