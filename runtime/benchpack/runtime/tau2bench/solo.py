"""`bench parity tau2-dialogues --solo` (issue 24): τ²'s solo mode through τ²'s own runner
(`llm_agent_solo`, its dummy user) and through benchpack's (`conversation: {solo: true,
end_tool, system_request}`), both agents being one scripted model endpoint
(`scripted_model.py`) that answers as a pure function of the request. Compared as the dialogue
check compares (`dialogues.py`): the ending, the reward and its components, and every request
the agent's model received — system prompt, messages, tools, sampling settings, `tool_choice`.

The scripted agent finds its task by the ticket in the system prompt (τ² puts it there) and
counts the tool-call messages it already sent. Kinds:

- `gold`: every gold call, the user's included, one per response, then `done`;
- `nothing`: `done` at once;
- `text`: every gold call, then "Done." in text, never `done` (τ²: an agent error);
- `short`: every gold call but the last, then `done` (an action missing);
- `together`: every gold call, the last in the same response as `done` (τ² drops the calls of
  the message that calls `done`);
- `wrong`: a call that fails, then `done`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .dialogues import DialogueReport, call_message, content_text, gold_calls, text_rounds

KINDS = ("gold", "nothing", "text", "short", "together", "wrong")
END = "done"

TEXT_RAISES = ("τ²'s LLMSoloAgent raises on a text answer (`ValueError: LLMSoloAgent only "
               "supports tool calls.`: its runner retries, then records an infrastructure "
               "error its metrics leave out); benchpack ends the session `agent_error` with "
               "reward 0, its orchestrator's rule for a solo agent's text (`solo-text-reply`)")
"""The declared outcome difference of the `text` kind."""


@dataclass
class SoloTask:
    id: str
    ticket: str
    gold: list[dict[str, Any]]
    """`{name, arguments}` of every gold call, both sides', in order."""
    prior_calls: int = 0
    """The tool-call messages of the task's prior conversation (in the agent's history)."""
    assertions: list[str] = field(default_factory=list)


def solo_tasks(tasks: list[dict[str, Any]], ids: list[str]) -> list[SoloTask]:
    out = []
    for t in tasks:
        tid = str(t.get("id"))
        if tid not in ids:
            continue
        crit = t.get("evaluation_criteria") or {}
        history = (t.get("initial_state") or {}).get("message_history") or []
        out.append(SoloTask(
            tid, str(t.get("ticket") or ""), gold_calls(crit),
            sum(1 for m in history if m.get("role") == "assistant" and m.get("tool_calls")),
            [str(c) for c in crit.get("nl_assertions") or []]))
    return out


def rounds(tasks: list[SoloTask]) -> list[list[SoloTask]]:
    """Tasks in rounds where no ticket is part of another's (mock's tasks share theirs)."""
    return text_rounds(tasks, lambda t: t.ticket)


class SoloScript:
    """What the solo agent (and an NL-assertion judge, every assertion met) answers."""

    def __init__(self, tasks: list[SoloTask], failing: tuple[str, dict[str, Any]]) -> None:
        self.tasks = {t.id: t for t in tasks}
        self.failing = failing

    def task_of(self, role: str, body: dict[str, Any]) -> SoloTask:
        text = "".join(content_text(m) for m in body["messages"]
                       if role == "judge" or m.get("role") == "system")
        found = [t for t in self.tasks.values() if t.ticket and t.ticket in text]
        longest = max((len(t.ticket) for t in found), default=0)
        found = [t for t in found if len(t.ticket) == longest]
        if len(found) != 1:
            raise LookupError(f"{len(found)} tasks' tickets are in the {role}'s request")
        return found[0]

    def __call__(self, role: str, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        task = self.task_of(role, body)
        if role == "judge":
            results = [{"expectedOutcome": a, "reasoning": "scripted", "metExpectation": True}
                       for a in task.assertions]
            return {"role": "assistant", "content": json.dumps({"results": results})}
        if role != "agent":
            raise LookupError(f"a solo run has no {role}")
        sent = sum(1 for m in body["messages"]
                   if m.get("role") == "assistant" and m.get("tool_calls")) - task.prior_calls
        calls = [(c["name"], c["arguments"]) for c in task.gold]
        if kind == "short":
            calls = calls[:-1]
        elif kind == "wrong":
            calls = [self.failing]
        elif kind == "nothing":
            calls = []
        if kind == "together" and calls:
            if sent < len(calls) - 1:
                return call_message(sent, *calls[sent])
            return _calls(sent, [calls[-1], (END, {})])
        if sent < len(calls):
            return call_message(sent, *calls[sent])
        if kind == "text":
            return {"role": "assistant", "content": "Done."}
        return call_message(sent, END, {})


def _calls(i: int, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{i}_{n}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(args)}}
        for n, (name, args) in enumerate(calls)]}


def solo_endings(ours: dict[str, Any]) -> dict[str, Any]:
    """benchpack's outcomes in τ²'s solo words: a session ended by the ending tool is τ²'s
    `agent_stop` (the dialogue check maps `done` to the user's stop)."""
    return {k: {**v, "termination": "agent_stop" if v["termination"] == "user_stop"
                else v["termination"]} for k, v in ours.items()}


def declare_text_raises(theirs: dict[str, Any], ours: dict[str, Any],
                        report: DialogueReport) -> None:
    """Take out the `text` kind's pairs that differ only as `TEXT_RAISES` says (in place)."""
    for key in [k for k in theirs if k.endswith("/text")]:
        a, b = theirs[key], ours.get(key) or {}
        if a.get("termination") == "crashed" and a.get("reward") is None and \
                "LLMSoloAgent only supports tool calls" in str(a.get("error")) and \
                b.get("termination") == "agent_error" and b.get("reward") == 0.0 and \
                not b.get("error"):
            report.outcomes[key] = (a, b)
            report.declare_ending(TEXT_RAISES)
            del theirs[key]
            ours.pop(key, None)


__all__ = ["END", "KINDS", "TEXT_RAISES", "SoloScript", "SoloTask", "declare_text_raises",
           "rounds", "solo_endings", "solo_tasks"]
