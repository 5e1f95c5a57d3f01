"""Tools that appear during a session (issue 24, item 4): an environment's discoverable tools
are not offered at the start; the agent unlocks one by calling the unlock tool with its name
(found, say, in a knowledge-base document), and from its next model call on the tool is
offered like any other. The user's discoverable tools (`user_tools`) are tools of the user's
own toolsets that the agent *gives* to the simulated user with the give tool: an LLM user is
offered one from its next request after the give, and a rules or scripted user's call of it
before then is an error result.

```yaml
environments:
  - id: desk
    toolsets: [desk-tools]
    user_toolsets: [tools/router.py]
    discoverable:
      tools: [schedule_technician]   # any tool of the environment (or of the pack's `tools:`)
      unlock_tool: unlock_tool       # the tool that unlocks them (default name)
      user_tools: [factory_reset]    # tools of the user's toolsets, given by the agent
      give_tool: give_tool           # the agent's tool that gives them (default name)
```

Each unlock is a `tool_calls` row of the unlock tool and an entry of `sessions.extra.unlocked`
(`{tool, turn, step, call_id}`), each give a row of the give tool and an entry of
`sessions.extra.given` (the same fields). Both last for the session (every session starts
locked).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import FIELD_DOCS, Spec, ToolName


class Discoverable(Spec):
    """Tools the agent must unlock, or give to the user, before they are offered."""

    tools: list[str] = Field(default_factory=list)
    """The agent's locked tools, by name: the environment's own (service operations, toolset
    functions) or the pack's `tools:`."""
    unlock_tool: ToolName = "unlock_tool"
    """Name of the tool that unlocks them (its one argument: `tool_name`)."""
    description: str | None = None
    """The unlock tool's description, as the agent reads it (default: says that tool names
    are found in the documentation, without naming them)."""
    user_tools: list[str] = Field(default_factory=list)
    """The user's locked tools, by name: functions of the environment's `user_toolsets`. The
    agent gives one with the give tool; until then the user is not offered it."""
    give_tool: ToolName = "give_tool"
    """Name of the agent's tool that gives a user tool (its one argument: `tool_name`)."""
    give_description: str | None = None
    """The give tool's description, as the agent reads it (default: says that the documentation
    names the tools a customer uses themselves, without naming them)."""


class UnlockImpl(BaseModel):
    """Compiled only: the tool that unlocks an environment's discoverable tools (`unlock`) or
    gives the user one of its discoverable tools (`give`)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=FIELD_DOCS,
                              defer_build=True)  # see `base.Spec`

    kind: Literal["unlock", "give"]


__all__ = ["Discoverable", "UnlockImpl"]
