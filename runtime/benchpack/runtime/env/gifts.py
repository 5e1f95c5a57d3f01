"""Tools the agent gives to the user (issue 24, item 4; `discoverable.user_tools`).

The plan environment's `user_discoverable` names the user's tools held back at the start. A
session's toolboxes share one `Gifts`: the agent's give tool (`impl.kind == "give"`) adds a
name to it, and every toolbox that holds that tool back (the user's own, the state check's
replay over both sides, the agent's in solo mode) offers it from its next `specs` or call on.
A call of a held tool before it is given is an error result, as τ² answers a customer who
uses a tool the agent never handed over; no list of what could be given is shown (finding
the name in the documentation is the task).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import ToolError

if TYPE_CHECKING:
    from .toolbox import ToolBox


@dataclass
class Gifts:
    """The user tools given so far in one session (shared by its toolboxes)."""

    names: set[str] = field(default_factory=set)
    log: list[dict[str, Any]] = field(default_factory=list)
    """Each give: `{tool, turn, step, call_id}` (stored in `sessions.extra.given`)."""


def held_back(box: ToolBox) -> list[str]:
    """The tools of `box` that wait for a give (the environment's `user_discoverable`)."""
    env_plan = box.plan.environments.get(box.session.environment)
    return [n for n in (env_plan.user_discoverable if env_plan is not None else ())
            if n in box.tools]


def give(box: ToolBox, args: dict[str, Any], cid: str) -> dict[str, Any]:
    """The give tool's call: record the gift (the receiving toolboxes take it up)."""
    name = args.get("tool_name")
    if not isinstance(name, str) or not name.strip():
        raise ToolError("give `tool_name`, the exact name of the tool to give")
    name = name.strip()
    if name in box.gifts.names:
        return {"status": "already given", "tool": name}
    env_plan = box.plan.environments.get(box.session.environment)
    if env_plan is None or name not in env_plan.user_discoverable:
        raise ToolError(f"there is no tool `{name}` to give; check the exact name in the "
                        "documentation")
    box.gifts.names.add(name)
    box.gifts.log.append({"tool": name, "turn": box.turn, "step": box.step, "call_id": cid})
    spec = box.plan.tools.get(name)
    return {"status": "given", "tool": name,
            "description": spec.description if spec is not None else ""}


def take_gifts(box: ToolBox) -> list[Any]:
    """Move the held tools of `box` given since it last looked into its offer; their
    `ToolDef`s (the toolbox updates its specs)."""
    taken = []
    for name in [n for n in box.ungiven if n in box.gifts.names]:
        tool = box.ungiven.pop(name)
        box.tools[name] = tool
        taken.append(tool)
    return taken


def not_given(name: str) -> ToolError:
    return ToolError(f"the tool `{name}` has not been given to you yet: the agent has to give "
                     "it to you first")


__all__ = ["Gifts", "give", "held_back", "not_given", "take_gifts"]
