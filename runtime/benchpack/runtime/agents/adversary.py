"""Adversarial agents: what a benchmark must give nothing for (issue 25).

`adversary:<kind>` answers every turn of every session, whatever the protocol:

| kind | every turn |
| --- | --- |
| `nothing` | says nothing (an empty reply), calls no tool |
| `done` | says "Done." |
| `echo` | repeats the user's message (an environment event: its text) word for word |
| `every-tool` | first turn: calls every tool it is offered once, each required argument filled with the plainest value of its type (`""`, 0, false, [], {}, an enum's first value); then "Done." |

A pack whose headline figures give any of them more than 0 rewards doing nothing, or words it
was handed, or activity for its own sake: `tests/taskpacks/test_adversaries.py` runs all four
on every reference pack, and the compiler's `do-nothing-credit` lint warns where it can tell
from the rules alone (`benchpack.compiler.lints`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..types import AgentReply, Message, SessionBrief
from . import tool_call_messages

if TYPE_CHECKING:
    from .registry import AgentContext

KINDS = ("nothing", "done", "echo", "every-tool")


def plain_value(schema: dict[str, Any]) -> Any:
    """The plainest value a JSON-Schema property accepts: an enum's first value, else the
    empty value of its (first) type."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    return {"integer": 0, "number": 0, "boolean": False, "array": [], "object": {},
            "null": None}.get(str(kind), "")


def plain_args(parameters: dict[str, Any]) -> dict[str, Any]:
    """Every required argument of a tool's parameter schema with its `plain_value`."""
    props = parameters.get("properties") or {}
    return {name: plain_value(props.get(name) or {})
            for name in parameters.get("required") or []}


class AdversarySession:
    def __init__(self, kind: str, brief: SessionBrief) -> None:
        self.kind, self.brief, self.turns = kind, brief, 0

    async def turn(self, message: str | None, event: dict[str, Any] | None) -> AgentReply:
        self.turns += 1
        if self.kind == "nothing":
            return AgentReply(text="", messages=[Message("assistant", "", 0)], steps=1)
        if self.kind == "echo":
            text = message if message is not None else json.dumps(
                event or {}, ensure_ascii=False, default=str)
            return AgentReply(text=text, messages=[Message("assistant", text, 0)], steps=1)
        records, messages = [], []
        if self.kind == "every-tool" and self.turns == 1:
            tools = self.brief.tools
            for step, spec in enumerate(tools.specs, start=1):
                fn = spec.get("function") or spec
                tools.step = step  # type: ignore[attr-defined]
                rec = await tools.call(str(fn["name"]), plain_args(fn.get("parameters") or {}))
                records.append(rec)
                messages.extend(tool_call_messages(rec))
        messages.append(Message("assistant", "Done.", 0))
        return AgentReply(text="Done.", tool_records=records, messages=messages,
                          steps=len(records) + 1)

    async def close(self) -> None:
        return None


class Adversary:
    """`adversary:<kind>` (see the module docstring)."""

    def __init__(self, kind: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"adversary:{kind}: no such adversary (hint: one of "
                             f"{', '.join(KINDS)})")
        self.kind = kind
        self.name = f"adversary:{kind}"

    async def open(self, brief: SessionBrief) -> AdversarySession:
        return AdversarySession(self.kind, brief)


def make_adapter(argument: str, context: AgentContext) -> Adversary:
    """Registry factory of `adversary:<kind>`."""
    return Adversary(argument.strip())
