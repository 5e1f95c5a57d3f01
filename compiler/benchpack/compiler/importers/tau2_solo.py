"""`bench import tau2 DOMAIN --solo` (issue 24, item 1): τ²'s solo mode as a pack — no user,
the agent gets both sides' tools and works the task's `ticket` alone.

τ² offers solo mode for telecom and mock only (its other environments refuse it). What the
import takes from τ²'s solo run (read for semantics, nothing copied): the solo policy files
(telecom: `main_policy_solo.md` with the manual τ²'s solo run uses, `tech_support_manual.md`;
mock: `policy_solo.md`), the tasks its solo agent accepts (a `ticket`; a prior conversation of
tool calls only; gold actions unless the task starts from an initial state), and its scoring
(the gold of both sides replayed on a normal environment, the agent's calls of the user's tools
made on the user's side). Each session is `conversation: {solo: true, end_tool: done,
system_request: …}`: the ticket in the agent's system prompt where τ²'s solo agent has it, the
agent ending by calling `done`, a text answer ending it `agent_error` (reward 0).
`demo/gold_agent.yaml` makes every gold action, the user's included, then calls `done`.

With `--tau2 CHECKOUT` the system prompt around the ticket and the `done` tool are τ²'s own,
read by the driver (`runtime/tau2bench/driver_solo.py`) from the `LLMSoloAgent` τ²'s runner
builds; without, the instructions around the policy and ticket are benchpack's own and
`origin.differences` says so (`own-solo-prompt`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import ImportError_

DOMAINS = ("mock", "telecom")
"""The τ² domains with a solo mode."""

END_TOOL = "done"
"""The ending tool's name (τ²'s `LLMSoloAgent.STOP_FUNCTION_NAME`; the extract's when read)."""
OWN_INSTRUCTIONS = (
    "You are working a support ticket on your own: nobody will read or answer a message, "
    "you can only call tools. Follow the policy below, make the calls the ticket needs, and "
    "once it is resolved end by calling `{end}`, with no other call in that last message.")
"""benchpack's own solo instructions (an import without a checkout); τ²'s are read from it."""
OWN_END_TOOL = {"name": END_TOOL, "description": "End the session: call it, alone, once the "
                "ticket is resolved.", "parameters": {"type": "object", "properties": {}}}

TEXT_REPLY = (
    "solo-text-reply: an answer in text instead of a tool call ends the session `agent_error` "
    "with reward 0 (τ²'s orchestrator's rule for a solo agent's text); τ²'s `LLMSoloAgent` "
    "raises on one instead, its batch runner retries the whole simulation (`--max-retries`) "
    "and, when every try fails, records an `infrastructure_error` that its metrics leave out. "
    "Both ask the model for `tool_choice: required`, so a model that honours it never answers "
    "in text")
OWN_PROMPT = (
    "own-solo-prompt: no τ² checkout was read: the solo agent's instructions around the policy "
    "and the ticket, and the description of its `done` tool, are benchpack's own (import with "
    "--tau2 CHECKOUT for τ²'s)")


def differences(tau2: dict[str, Any] | None) -> list[str]:
    """What a solo pack does differently from τ²'s solo runs (IMPORT_REPORT.md lists them)."""
    return [] if tau2 is not None else [OWN_PROMPT]


def if_ended() -> dict[str, list[str]]:
    """What differs only in a session the agent ended with text (`agent_error`): a run with
    none, as with a model that honours `tool_choice: required`, is comparable."""
    return {"agent_error": [TEXT_REPLY]}


def check(source: Path, domain: str, tau2: dict[str, Any] | None) -> None:
    if domain not in DOMAINS:
        raise ImportError_(str(source), f"τ²'s `{domain}` has no solo mode (its environment "
                           "refuses one)", "solo mode: " + ", ".join(DOMAINS))
    if tau2 is not None and not isinstance(tau2.get("solo"), dict):
        raise ImportError_(str(source), "the τ² extract has no solo-mode texts",
                           "a benchpack bug: the driver's `extract` is asked with `solo`")


def _split(tau2: dict[str, Any] | None) -> tuple[str, str]:
    """The system prompt before the ticket (a file: trailing space would be lost) and the
    `system_request` that appends the rest: `{request}` and what follows the ticket."""
    if tau2 is None:
        return OWN_INSTRUCTIONS.format(end=END_TOOL) + "\n\n# Policy\n\n", "\n\n# Ticket\n\n" \
            "{request}"
    solo = tau2["solo"]
    prefix = str(solo["prefix"])
    body = prefix.rstrip()
    if "{request}" in prefix or "{request}" in str(solo["suffix"]):
        raise ImportError_("τ²'s solo prompt", "contains `{request}`, where benchpack puts the "
                           "ticket", "report it")
    return body, prefix[len(body):] + "{request}" + str(solo["suffix"])


def policy(source: Path, domain: str, tau2: dict[str, Any] | None = None) -> str:
    """The agent's system prompt up to the ticket: τ²'s solo agent's (with a checkout), or
    benchpack's instructions and the solo policy as τ²'s environment composes it."""
    if tau2 is not None:
        return _split(tau2)[0]
    return _split(None)[0] + _policy(source, domain)


def _policy(source: Path, domain: str) -> str:
    """The solo policy as τ²'s environment composes it in solo mode."""
    names = ("main_policy_solo.md", "tech_support_manual.md") if domain == "telecom" \
        else ("policy_solo.md",)
    parts = []
    for name in names:
        try:
            parts.append((source / name).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ImportError_(str(source / name), "not found", "τ²'s solo mode reads it: "
                               "import the domain folder of a τ²-bench checkout") from None
    if domain != "telecom":
        return parts[0]
    return ("<main_policy>\n" + parts[0] + "\n</main_policy>\n<tech_support_policy>\n"
            + parts[1] + "\n</tech_support_policy>")


def skip_reason(raw: dict[str, Any]) -> str | None:
    """Why τ²'s solo agent refuses the task (None when it takes it)."""
    if not str(raw.get("ticket") or "").strip():
        return "no ticket: τ²'s solo mode works a task's ticket"
    start = raw.get("initial_state")
    if start is not None:
        for m in start.get("message_history") or []:
            if m.get("role") == "user" or (m.get("role") == "assistant"
                                           and not m.get("tool_calls")):
                return ("its prior conversation has messages, not only tool calls: τ²'s "
                        "solo mode has no user to have said them")
        return None
    if not (raw.get("evaluation_criteria") or {}).get("actions"):
        return "no gold actions: τ²'s solo agent refuses a task without them"
    return None


def apply(session: dict[str, Any], raw: dict[str, Any], tau2: dict[str, Any] | None = None
          ) -> None:
    """Make one imported session solo (in place)."""
    session["request"] = str(raw["ticket"]).strip()
    session["conversation"] = {"solo": True, "end_tool": end_tool(tau2),
                               "system_request": _split(tau2)[1]}


def end_tool(tau2: dict[str, Any] | None) -> str:
    return str(tau2["solo"]["end_tool"]) if tau2 is not None else END_TOOL


def pack_text(text: str, domain: str, tau2: dict[str, Any] | None) -> str:
    """The imported pack.yaml made solo: its own name (a solo run is stored apart from the
    dialogue runs) and the ending tool among the environment's tools (τ²'s schema when read)."""
    import json
    import re

    text = text.replace(f"\nname: tau2-{domain}\n", f"\nname: tau2-{domain}-solo\n", 1)
    name = end_tool(tau2)
    spec = dict(OWN_END_TOOL)
    if tau2 is not None:
        fn = next((t.get("function") or {} for t in tau2["solo"].get("tools") or []
                   if (t.get("function") or {}).get("name") == name), None)
        if fn is None:
            raise ImportError_("τ²'s solo agent", f"offers no `{name}` tool", "report it")
        spec = {"name": name, "description": fn.get("description") or "",
                "parameters": fn.get("parameters") or {"type": "object", "properties": {}}}
    tool = {**spec, "impl": {"kind": "static", "result": None}}
    defined = ("tools:                       # solo mode's ending tool (`conversation.end_tool`): "
               "its call ends the session, it is never run\n  - "
               + json.dumps(tool, ensure_ascii=False) + "\n")
    out, n = re.subn(r"(?m)^(environments:\n)", lambda m: defined + m.group(1), text, count=1)
    out, k = re.subn(r"(?m)^(    policy: .*\n)", lambda m: m.group(1) + f"    tools: [{name}]\n",
                     out, count=1)
    if n != 1 or k != 1:
        raise ImportError_("pack.yaml", "no `environments:` with a `policy:` line to offer the "
                           "ending tool in", "a benchpack bug")
    return out


def gold_calls(session: dict[str, Any]) -> list[dict[str, Any]]:
    """Every gold action, the user's included, as the solo agent's calls, in order, then the
    ending tool's call."""
    return [*({"name": a["tool"], "args": a["args"]}
              for a in (session.get("gold") or {}).get("actions", [])),
            {"name": session["conversation"]["end_tool"], "args": {}}]


def fields(rows: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The report's field table for a solo import: the solo policy and the ticket are used."""
    solo = {"policy_solo.md": ("mapped", "mock: the solo policy, `policy.md` (`--solo`)"),
            "tasks[].ticket": ("mapped", "`--solo`: the session's `request`, in the agent's "
                               "system prompt where τ² puts it (`conversation.system_request`; "
                               "a task without one is not imported)")}
    out = [(f, *solo[f]) if f in solo else (f, fate, why) for f, fate, why in rows]
    return [*out, ("main_policy_solo.md", "mapped", "telecom: with `tech_support_manual.md`, "
                   "the solo policy, `policy.md` (`--solo`)")]


def report(domain: str, tau2: dict[str, Any] | None = None) -> list[str]:
    files = "`main_policy_solo.md` and `tech_support_manual.md`" if domain == "telecom" \
        else "`policy_solo.md`"
    prompt = ("τ²'s solo agent's system prompt, read from the checkout" if tau2 is not None
              else "benchpack's own solo instructions")
    return ["## Solo mode (`--solo`)", "",
            f"Imported in τ²'s solo mode: no user; every session is `conversation: {{solo: "
            f"true, end_tool: {end_tool(tau2)}, system_request: …}}`. The agent is offered "
            f"its tools, the user's, then `{end_tool(tau2)}`; its system prompt is {prompt} "
            f"around the solo policy ({files}, as τ²'s solo environment composes it) and "
            "the task's `ticket`; it starts with no message and ends by calling "
            f"`{end_tool(tau2)}` (a text answer ends it `agent_error`, reward 0). Tasks τ²'s "
            "solo agent refuses are not imported (below). `demo/gold_agent.yaml` makes every "
            f"gold action, the user's included, then calls `{end_tool(tau2)}`.", "",
            "Differences from τ²'s solo runs:", "", *[f"- {d}" for d in differences(tau2)]]


__all__ = ["DOMAINS", "END_TOOL", "apply", "check", "differences", "end_tool", "fields",
           "gold_calls", "pack_text", "policy", "report", "skip_reason"]
