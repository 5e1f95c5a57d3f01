"""Discoverable tools (issue 24, item 4): an environment's `discoverable:` → the locked tools
left out of what sessions are offered at the start (`PlanEnvironment.discoverable`) and the
unlock tool offered instead.

A locked tool must be a tool of the plan (E202 with the nearest name) that the environment can
run: a service operation or toolset function of a service the environment has (E241 when not).
One unlock tool per name serves every environment naming it; a name taken by another tool is an
E214 (through `add_tool`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchpack.specs import pack as P
from benchpack.specs.discoverable import Discoverable

from .core import Loc
from .diagnostics import suggest_fix

if TYPE_CHECKING:
    from .world import WorldBuilder

DEFAULT_DESCRIPTION = (
    "Unlock a tool you found named in the documentation (for example a knowledge-base "
    "article). Give its exact name; once unlocked it is offered to you like your other tools "
    "for the rest of this conversation.")


def environment_discoverable(b: WorldBuilder, spec: Discoverable | None, loc: Loc,
                             tools: list[str], services: list[str]) -> list[str]:
    """The environment's locked tools (removed from `tools`; the unlock tool joins it)."""
    if spec is None:
        return []
    locked: list[str] = []
    for i, name in enumerate(spec.tools):
        sub = ("discoverable", "tools", i)
        builtin = name in P.BUILTIN_TOOLS or name == "shell"  # run by the runtime itself
        if not builtin and name not in b.plan_tools:
            if b.lost_tool(name):
                continue
            hint, fix = suggest_fix(name, sorted(b.plan_tools))
            b.err("E202", f"unknown tool `{name}` in `discoverable`", loc, sub,
                  hint or "name a tool of the pack, a service operation or a toolset function",
                  fix=fix)
            continue
        origin = b.tool_origin.get(name, "")
        if not builtin and name not in tools and _needs_service(b, name, services):
            b.err("E241", f"discoverable tool `{name}` ({origin}) needs a service this "
                  "environment does not have", loc, sub,
                  "add its service or toolset to the environment")
            continue
        if name in locked:
            b.err("E201", f"`{name}` is listed twice in `discoverable`", loc, sub)
            continue
        locked.append(name)
        if name in tools:
            tools.remove(name)
    if not locked:
        return []
    unlock = spec.unlock_tool
    existing = b.plan_tools.get(unlock)
    if existing is None or existing["impl"].get("kind") != "unlock" or \
            existing["description"] != (spec.description or DEFAULT_DESCRIPTION):
        if existing is not None and existing["impl"].get("kind") == "unlock":
            b.err("E214", f"unlock tool `{unlock}` is described differently in two "
                  "environments", loc, ("discoverable", "description"),
                  "give one of them another `unlock_tool` name")
        else:
            b.add_tool(unlock, _unlock_spec(unlock, spec), "an unlock tool", loc,
                       ("discoverable", "unlock_tool"))
    if unlock not in tools:
        tools.append(unlock)
    return locked


def _needs_service(b: WorldBuilder, name: str, services: list[str]) -> bool:
    """Whether tool `name` runs on a service the environment lacks (pack tools of other kinds
    run anywhere)."""
    impl = b.plan_tools[name]["impl"]
    kind = impl.get("kind")
    if kind == "service":
        return impl.get("service") not in services
    if kind == "python_tool":
        ts = b.toolsets.get(impl.get("toolset", ""))
        svc = ts.obj.service if ts is not None else None
        return svc is not None and svc not in services
    return False


def _unlock_spec(name: str, spec: Discoverable) -> dict[str, Any]:
    return {"name": name, "description": spec.description or DEFAULT_DESCRIPTION,
            "parameters": {"type": "object", "properties": {"tool_name": {
                "type": "string", "description": "The exact name of the tool to unlock."}},
                "required": ["tool_name"]},
            "impl": {"kind": "unlock"}, "group": None, "effect": "read"}
