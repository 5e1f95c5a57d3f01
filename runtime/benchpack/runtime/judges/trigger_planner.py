"""The trigger-rubric planner: what the next user message should do and, in a live dialogue
without an authored schedule, which trigger to commit before the response exists. Three modes
(`LLMPlanner` with its strict parser `parse_decision`, `RulesPlanner`, `ScriptedPlanner`).

Separate from the user agent because it sees the persona and the scenario's hidden goal but
never the communication style.
"""

from __future__ import annotations

from typing import Any, Protocol

from .base import JudgeCall, ParseError, Templates, extract_json
from .trigger_shapes import (
    MIN_ANCHORS,
    PER_WINDOW,
    WINDOWS,
    Decision,
    Order,
    PlannerState,
    Scenario,
    TriggerSpec,
    ask_keeping_last,
    window_of,
)

# --------------------------------------------------------------------------- planner


class Planner(Protocol):
    async def decide(self, state: PlannerState) -> Decision:
        ...


def parse_decision(text: str, authored: bool) -> Decision:
    """`{"trigger": null | {type, anchors, pass, partial, fail}, "order": {intent, content,
    disclose, directive}}`; `trigger` is ignored when the pack fixes the schedule."""
    data = extract_json(text)
    if not isinstance(data, dict):
        raise ParseError("the answer must be a JSON object")
    order = _order(data.get("order"))
    if authored:
        return Decision(order)
    raw = data.get("trigger")
    if raw is None or raw is False:
        return Decision(order)
    if not isinstance(raw, dict):
        raise ParseError("`trigger` must be null or an object")
    kind = str(raw.get("type", "")).strip().lower()
    if kind not in WINDOWS:
        raise ParseError(f"`trigger.type` must be emergent, critical or recovery, got {kind!r}")
    anchors = raw.get("anchors") or []
    if not isinstance(anchors, list) or not all(isinstance(a, str) for a in anchors):
        raise ParseError("`trigger.anchors` must be a list of anchor ids")
    rubric = {}
    for key in ("pass", "partial", "fail"):
        value = raw.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ParseError(f"`trigger.{key}` must be a non-empty criterion")
        rubric[key] = value.strip()
    return Decision(order, TriggerSpec("", kind, 0, list(anchors), rubric["pass"],
                                       rubric["partial"], rubric["fail"], "planner"))


def _order(raw: Any) -> Order:
    if not isinstance(raw, dict):
        raise ParseError("`order` must be an object with `intent`, `content`, `disclose`")
    intent = raw.get("intent")
    if not isinstance(intent, str) or not intent.strip():
        raise ParseError("`order.intent` must be a non-empty string")
    content = raw.get("content") or []
    if isinstance(content, str):
        content = [content]
    disclose = raw.get("disclose") or []
    if isinstance(disclose, str):
        disclose = [disclose]
    if not all(isinstance(c, str) for c in [*content, *disclose]):
        raise ParseError("`order.content` and `order.disclose` must be lists of strings")
    return Order(intent.strip(), list(content), list(disclose), str(raw.get("directive") or ""))


class LLMPlanner:
    def __init__(self, call: JudgeCall, templates: Templates, persona: dict[str, Any],
                 scenario: Scenario) -> None:
        self.call = call
        self.templates = templates
        self.persona = persona
        self.scenario = scenario

    def prompt(self, state: PlannerState) -> str:
        spec = self.scenario.spec
        authored = None
        if state.authored is not None:
            here = state.authored.get(state.turn)
            authored = {
                "here": _trigger_view(here) if here else None,
                "upcoming": [_trigger_view(t) for k, t in sorted(state.authored.items())
                             if k > state.turn]}
        return self.templates.render(
            "trigger_rubric.planner", persona=self.persona,
            scenario={"hidden_goal": spec.hidden_goal if spec else "",
                      "anchors": [a.model_dump() for a in self.scenario.anchors.values()],
                      "proactive_subtasks": spec.proactive_subtasks if spec else []},
            turn=state.turn, max_turns=state.max_turns, opening=state.opening,
            history=state.history, disclosed=state.disclosed,
            committed=[_trigger_view(c) for c in state.committed], authored=authored,
            windows=WINDOWS, per_window=PER_WINDOW, min_anchors=MIN_ANCHORS,
            must=self.scenario.required(state))

    async def decide(self, state: PlannerState) -> Decision:
        authored = state.authored is not None

        def check(d: Decision) -> str | None:
            problems = self.scenario.problems(d, state)
            return ("the plan breaks the protocol: " + "; ".join(problems)) if problems else None

        decision, _ = await ask_keeping_last(
            self.call, self.prompt(state), lambda t: parse_decision(t, authored), check,
            purpose="planner", turn=state.turn)
        return decision


def _trigger_view(t: TriggerSpec) -> dict[str, Any]:
    return {"id": t.id, "type": t.type, "turn": t.turn, "anchors": t.anchors}


class RulesPlanner:
    """Deterministic plans that satisfy every rule by construction.

    Disclosure: with an authored schedule, each trigger's anchors arrive just in time (one new
    primary anchor a turn, as late as the remaining turns allow); otherwise the next anchor in
    authored order every turn from turn 2. Triggers (planner-decided): one per window on the
    first turn its anchors allow, never right after another unless the window closes; a second
    recovery trigger on the final turn. Rubrics are built from the anchors' text."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario

    def _disclose(self, state: PlannerState) -> list[str]:
        order = list(self.scenario.anchors)
        pending = [a for a in order if a not in state.disclosed]
        if not pending or (state.turn == 1 and state.opening is not None):
            return []
        if state.authored is None:
            return [pending[0]] if state.turn <= WINDOWS["critical"][1] else []
        for turn, t in sorted(state.authored.items()):
            if turn < state.turn:
                continue
            need = [a for a in t.anchors if a in pending]
            primary = [a for a in need if self.scenario.anchors[a].primary]
            if primary and len(primary) >= turn - state.turn + 1:
                return [primary[0], *[a for a in need if a not in primary]]
            if need and not primary and turn == state.turn:
                return need
        return []

    def _trigger(self, state: PlannerState, disclose: list[str]) -> TriggerSpec | None:
        kind = window_of(state.turn)
        if kind is None or not self.scenario.feasible(kind):
            return None
        known = [a for a in self.scenario.anchors if a in state.disclosed or a in disclose]
        count = state.window_count(kind)
        closing = state.turn == min(WINDOWS[kind][1], state.max_turns)
        after_trigger = any(c.turn == state.turn - 1 for c in state.committed)
        first = count == 0 and (not after_trigger or closing)
        second = kind == "recovery" and count == 1 and closing and not after_trigger
        if len(known) < MIN_ANCHORS[kind] or not (first or second):
            return None
        anchors = known[-MIN_ANCHORS[kind]:] if kind != "recovery" else known
        texts = "; ".join(self.scenario.anchors[a].text.strip() for a in anchors) or \
            "the details the user gave"
        pass_, partial, fail = _RULES_RUBRIC[kind]
        return TriggerSpec("", kind, state.turn, anchors, pass_.format(texts), partial, fail,
                           "planner")

    def _order(self, state: PlannerState, disclose: list[str]) -> Order:
        kind = window_of(state.turn)
        if state.turn == 1 and state.opening is not None:
            return Order("open with the request", [state.opening])
        content = [f"By the way: {self.scenario.anchors[a].text.strip()}" for a in disclose]
        if kind == "recovery" and state.turn == state.max_turns:
            return Order("sign off", ["That's all, thanks."], disclose)
        if kind == "recovery" and state.turn == WINDOWS["recovery"][0]:
            return Order("say the task is finished", ["That's everything I needed, done.",
                                                      *content], disclose)
        if kind == "recovery":
            return Order("acknowledge", ["Thanks, that settles it.", *content], disclose)
        return Order("ask for a small revision", ["Can you tighten that up a bit?", *content],
                     disclose)

    async def decide(self, state: PlannerState) -> Decision:
        disclose = self._disclose(state)
        trigger = None if state.authored is not None else self._trigger(state, disclose)
        return Decision(self._order(state, disclose), trigger)


_RULES_RUBRIC = {
    "emergent": (
        "The response infers an unstated need from this detail and draws out a concrete "
        "implication the user did not raise: {}",
        "The response acknowledges the detail or asks about it without a concrete implication.",
        "The response only answers the literal request, repeats the detail or ignores it; "
        "generic offers of help fail."),
    "critical": (
        "The response connects these details into a new conclusion the user has not drawn: {}",
        "The response notices one of the details but does not connect them.",
        "The response only answers the literal request or repeats the details; generic offers "
        "of help fail."),
    "recovery": (
        "After the user says the task is done, the response adds a concrete next step tied to "
        "an earlier detail: {}",
        "The response points to a future step only vaguely.",
        "The response congratulates, recaps or closes politely; generic offers of help fail."),
}


class ScriptedPlanner:
    """Plans per turn from a script (see `roles.Script`):

    ```yaml
    sessions:
      <session name or plan id>:
        turns:
          2: {disclose: [drop-off], say: "…",           # `say` is the scripted user's line
              trigger: {type: emergent, anchors: [drop-off], pass: …, partial: …, fail: …}}
    ```
    Turns not listed: no trigger, no disclosure, a generic follow-up order."""

    def __init__(self, script: dict[str, Any]) -> None:
        self.turns = {int(k): v or {} for k, v in (script.get("turns") or {}).items()}

    async def decide(self, state: PlannerState) -> Decision:
        entry = self.turns.get(state.turn, {})
        disclose = entry.get("disclose") or []
        order = Order(str(entry.get("intent") or "continue the conversation"),
                      [str(entry["say"])] if entry.get("say") else [],
                      [disclose] if isinstance(disclose, str) else [str(a) for a in disclose])
        raw = entry.get("trigger")
        if state.authored is not None or not isinstance(raw, dict):
            return Decision(order)
        kind = str(raw.get("type", "")).lower()
        if kind not in WINDOWS:
            raise ValueError(f"scripted planner, turn {state.turn}: unknown trigger type {kind!r}")
        return Decision(order, TriggerSpec(
            str(raw.get("id") or ""), kind, state.turn, [str(a) for a in raw.get("anchors") or []],
            str(raw.get("pass", "")), str(raw.get("partial", "")), str(raw.get("fail", "")),
            "planner"))
