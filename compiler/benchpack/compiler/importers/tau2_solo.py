"""`bench import tau2 DOMAIN --solo` (issue 24, item 1): τ²'s solo mode as a pack — no user,
the agent gets both sides' tools and works the task's `ticket` alone.

τ² offers solo mode for telecom and mock only (its other environments refuse it). What the
import takes from τ²'s solo run (read for semantics, nothing copied): the solo policy files
(telecom: `main_policy_solo.md` with the manual τ²'s solo run uses, `tech_support_manual.md`;
mock: `policy_solo.md`), the tasks its solo agent accepts (a `ticket`; a prior conversation of
tool calls only; gold actions unless the task starts from an initial state), and its scoring
(the gold of both sides replayed on a normal environment, the agent's calls of the user's tools
made on the user's side). Each session is `conversation: {solo: true}` with the ticket as the
agent's first message; `demo/gold_agent.yaml` makes every gold action, the user's included.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import ImportError_

DOMAINS = ("mock", "telecom")
"""The τ² domains with a solo mode."""

DIFFERENCES = [
    "the ticket is the agent's first message, not part of its system prompt, and τ²'s solo "
    "instructions (how to work a ticket, the `done` tool) are not added to the policy",
    "the agent ends by answering (the session is then scored); τ²'s solo agent ends by "
    "calling its `done` tool, and a message that is neither a tool call nor `done` is an "
    "agent error there (reward 0)",
]
"""What a solo pack does differently from τ²'s solo runs (IMPORT_REPORT.md lists them)."""


def check(source: Path, domain: str, tau2: dict[str, Any] | None) -> None:
    if domain not in DOMAINS:
        raise ImportError_(str(source), f"τ²'s `{domain}` has no solo mode (its environment "
                           "refuses one)", "solo mode: " + ", ".join(DOMAINS))
    if tau2 is not None:
        raise ImportError_(str(source), "--solo with --tau2 is not supported yet (τ²'s solo "
                           "prompts are not read)", "import with --solo alone")


def policy(source: Path, domain: str) -> str:
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


def apply(session: dict[str, Any], raw: dict[str, Any]) -> None:
    """Make one imported session solo (in place)."""
    session["request"] = str(raw["ticket"]).strip()
    session["conversation"] = {"solo": True}


def gold_calls(session: dict[str, Any]) -> list[dict[str, Any]]:
    """Every gold action, the user's included, as the solo agent's calls, in order."""
    return [{"name": a["tool"], "args": a["args"]}
            for a in (session.get("gold") or {}).get("actions", [])]


def fields(rows: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The report's field table for a solo import: the solo policy and the ticket are used."""
    solo = {"policy_solo.md": ("mapped", "mock: the solo policy, `policy.md` (`--solo`)"),
            "tasks[].ticket": ("mapped", "`--solo`: the session's `request`, the agent's first "
                               "message (a task without one is not imported)")}
    out = [(f, *solo[f]) if f in solo else (f, fate, why) for f, fate, why in rows]
    return [*out, ("main_policy_solo.md", "mapped", "telecom: with `tech_support_manual.md`, "
                   "the solo policy, `policy.md` (`--solo`)")]


def report(domain: str) -> list[str]:
    files = "`main_policy_solo.md` and `tech_support_manual.md`" if domain == "telecom" \
        else "`policy_solo.md`"
    return ["## Solo mode (`--solo`)", "",
            f"Imported in τ²'s solo mode: no user; every session is `conversation: {{solo: "
            f"true}}`, the agent is offered the user's tools beside its own, its first message "
            f"is the task's `ticket`, and its policy is {files} as τ²'s solo environment "
            "composes it. Tasks τ²'s solo agent refuses are not imported (below). "
            "`demo/gold_agent.yaml` makes every gold action, the user's included.", "",
            "Differences from τ²'s solo runs:", "", *[f"- {d}" for d in DIFFERENCES]]


__all__ = ["DIFFERENCES", "DOMAINS", "apply", "check", "fields", "gold_calls", "policy", "report",
           "skip_reason"]
