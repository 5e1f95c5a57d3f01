"""Generated calls of banking_knowledge's discoverable tools (issue 24), for `bench parity
tau2`: τ² offers them to nobody — the agent unlocks one (`unlock_discoverable_agent_tool`) and
runs it through `call_discoverable_agent_tool`, or hands one to the customer
(`give_discoverable_user_tool`), who runs it through `call_discoverable_user_tool` — so
`CallMaker` makes calls of each as if it were a tool (its parameters from τ²'s own description,
the driver's `discoverable`) and `expand` turns each into those meta-calls: mostly unlocked or
given first, sometimes not (the refusal is compared too), the arguments as τ²'s JSON text,
sometimes broken JSON. Pure: no I/O.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from .callgen import Call, Tool

TYPES = {"str": "string", "string": "string", "float": "number", "number": "number",
         "int": "integer", "integer": "integer", "bool": "boolean", "boolean": "boolean",
         "list": "array", "dict": "object"}
PREFIX = "discoverable:"
"""Names of the stand-in tools (never a real tool's name: it has a colon)."""


def discoverable_tools(extract: dict[str, Any]) -> list[Tool]:
    """A stand-in tool per discoverable tool, its schema from τ²'s parsed docstring."""
    out = []
    for name, info in (extract.get("discoverable") or {}).items():
        props = {p: {"type": TYPES.get(str(d.get("type", "string")).lower(), "string")}
                 for p, d in (info.get("parameters") or {}).items()}
        required = [p for p, d in (info.get("parameters") or {}).items()
                    if d.get("required", True)]
        out.append(Tool(f"{PREFIX}{info.get('side', 'agent')}:{name}",
                        {"type": "object", "properties": props, "required": required},
                        info.get("mutates_state") is not False))
    return out


def as_templates(gold: list[Call]) -> list[Call]:
    """Gold meta-calls as calls of the stand-ins (their arguments seed the value pools)."""
    out = []
    for c in gold:
        side = {"call_discoverable_agent_tool": "agent",
                "call_discoverable_user_tool": "user"}.get(c.name)
        name = c.arguments.get("agent_tool_name" if side == "agent" else
                               "discoverable_tool_name")
        if side is None or not isinstance(name, str):
            continue
        try:
            args = json.loads(c.arguments.get("arguments") or "{}")
        except (TypeError, ValueError):
            continue
        if isinstance(args, dict):
            out.append(Call(f"{PREFIX}{side}:{name}", args, "gold"))
    return out


def expand(call: Call, rng: random.Random) -> list[Call]:
    """A stand-in's call as the meta-calls τ² takes (other calls as they are)."""
    if not call.name.startswith(PREFIX):
        return [call]
    side, name = call.name[len(PREFIX):].split(":", 1)
    text = json.dumps(call.arguments)
    if rng.random() < 0.05:
        text = text[:-1] or "{"  # broken JSON
    how = call.how
    if side == "agent":
        first = Call("unlock_discoverable_agent_tool", {"agent_tool_name": name}, how)
        then = Call("call_discoverable_agent_tool",
                    {"agent_tool_name": name, "arguments": text}, how)
    else:
        given = copy.deepcopy(call.arguments) if rng.random() < 0.7 else {}
        first = Call("give_discoverable_user_tool",
                     {"discoverable_tool_name": name, "arguments": json.dumps(given)}, how)
        then = Call("call_discoverable_user_tool",
                    {"discoverable_tool_name": name, "arguments": text}, how, "user")
    return [first, then] if rng.random() < 0.85 else [then]
