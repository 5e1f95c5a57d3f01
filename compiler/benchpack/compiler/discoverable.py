"""Discoverable tools (issue 24, item 4): an environment's `discoverable:` → the locked tools
left out of what sessions are offered at the start (`PlanEnvironment.discoverable`) and the
unlock tool offered instead; and the user's locked tools (`PlanEnvironment.user_discoverable`,
kept in `user_tools`, held back by the runtime until given) with the give tool offered to the
agent.

A locked tool must be a tool of the plan (E202 with the nearest name) that the environment can
run: a service operation or toolset function of a service the environment has (E241 when not).
A tool of the other side is an E202 that names the right list: the user's tools are given
(`user_tools`), the agent's unlocked (`tools`). One unlock (or give) tool per name serves every
environment naming it; a name taken by another tool is an E214 (through `add_tool`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchpack.specs import pack as P
from benchpack.specs.discoverable import Discoverable

from .core import Loc
from .diagnostics import suggest_fix

if TYPE_CHECKING:
    from .world import WorldBuilder

GIVE_DESCRIPTION = (
    "Give the customer a tool they use themselves, which the documentation names (for "
    "example a knowledge-base article that says the customer does it on their own device or "
    "account). Give its exact name; the customer can use it from their next message on. Tell "
    "them what to do with it.")

DEFAULT_DESCRIPTION = (
    "Unlock a tool you found named in the documentation (for example a knowledge-base "
    "article). Give its exact name; once unlocked it is offered to you like your other tools "
    "for the rest of this conversation.")


def environment_discoverable(b: WorldBuilder, spec: Discoverable | None, loc: Loc,
                             tools: list[str], services: list[str],
                             user_tools: list[str] | None = None) -> list[str]:
    """The environment's locked tools (removed from `tools`; the unlock tool joins it)."""
    if spec is None:
        return []
    if not spec.tools and not spec.user_tools:
        b.err("E102", "`discoverable` locks no tool", loc, ("discoverable",),
              "list the agent's locked tools under `tools` or the user's under `user_tools`")
    locked: list[str] = []
    for i, name in enumerate(spec.tools):
        sub = ("discoverable", "tools", i)
        if name in (user_tools or ()):
            b.err("E202", f"`{name}` is one of the user's tools, not the agent's, in "
                  "`discoverable.tools`", loc, sub,
                  f"list it under `discoverable.user_tools`: the agent gives it to the user "
                  f"with `{spec.give_tool}`")
            continue
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
    _offer(b, "unlock", spec.unlock_tool, spec.description or DEFAULT_DESCRIPTION, loc, tools)
    return locked


def environment_gifts(b: WorldBuilder, spec: Discoverable | None, loc: Loc, tools: list[str],
                      user_tools: list[str]) -> list[str]:
    """The user's locked tools (they stay in `user_tools`: the runtime holds them back until
    the agent gives them); the give tool joins the agent's `tools`."""
    if spec is None or not spec.user_tools:
        return []
    given: list[str] = []
    for i, name in enumerate(spec.user_tools):
        sub = ("discoverable", "user_tools", i)
        if name in given:
            b.err("E201", f"`{name}` is listed twice in `discoverable.user_tools`", loc, sub)
        elif name in user_tools:
            given.append(name)
        elif name in tools or name in P.BUILTIN_TOOLS:
            b.err("E202", f"`{name}` is one of the agent's tools, not the user's, in "
                  "`discoverable.user_tools`", loc, sub,
                  f"list it under `discoverable.tools`: the agent unlocks it with "
                  f"`{spec.unlock_tool}`; the user gets only tools of `user_toolsets`")
        else:
            hint, fix = suggest_fix(name, user_tools)
            b.err("E202", f"unknown user tool `{name}` in `discoverable.user_tools`", loc, sub,
                  hint or ("name a function of the environment's `user_toolsets`" if user_tools
                           else "give the environment `user_toolsets: [tools/….py]`, whose "
                           "functions are the user's tools"), fix=fix)
    if given:
        _offer(b, "give", spec.give_tool, spec.give_description or GIVE_DESCRIPTION, loc, tools)
    return given


def _offer(b: WorldBuilder, kind: str, name: str, description: str, loc: Loc,
           tools: list[str]) -> None:
    """Add the unlock or give tool `name` to the plan (once per name) and to `tools`."""
    field = "unlock_tool" if kind == "unlock" else "give_tool"
    existing = b.plan_tools.get(name)
    if existing is None or existing["impl"].get("kind") != kind or \
            existing["description"] != description:
        if existing is not None and existing["impl"].get("kind") == kind:
            b.err("E214", f"{kind} tool `{name}` is described differently in two "
                  "environments", loc, ("discoverable", "description" if kind == "unlock"
                                        else "give_description"),
                  f"give one of them another `{field}` name")
        else:
            b.add_tool(name, _tool_spec(kind, name, description),
                       "an unlock tool" if kind == "unlock" else "a give tool", loc,
                       ("discoverable", field))
    if name not in tools:
        tools.append(name)


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


def _tool_spec(kind: str, name: str, description: str) -> dict[str, Any]:
    what = "unlock" if kind == "unlock" else "give to the customer"
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": {"tool_name": {
                "type": "string", "description": f"The exact name of the tool to {what}."}},
                "required": ["tool_name"]},
            "impl": {"kind": kind}, "group": None, "effect": "read"}
