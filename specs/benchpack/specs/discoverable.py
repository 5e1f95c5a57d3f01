"""Tools that appear during a session (issue 24, item 4): an environment's discoverable tools
are not offered at the start; the agent unlocks one by calling the unlock tool with its name
(found, say, in a knowledge-base document), and from its next model call on the tool is
offered like any other.

```yaml
environments:
  - id: desk
    toolsets: [desk-tools]
    discoverable:
      tools: [schedule_technician]   # any tool of the environment (or of the pack's `tools:`)
      unlock_tool: unlock_tool       # the tool that unlocks them (default name)
```

Each unlock is a `tool_calls` row of the unlock tool and an entry of `sessions.extra.unlocked`
(`{tool, turn, step, call_id}`). Unlocks last for the session (every session starts locked).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import Spec, ToolName


class Discoverable(Spec):
    """Tools the agent must unlock before they are offered."""

    tools: list[str] = Field(min_length=1)
    """The locked tools, by name: the environment's own (service operations, toolset
    functions) or the pack's `tools:`."""
    unlock_tool: ToolName = "unlock_tool"
    """Name of the tool that unlocks them (its one argument: `tool_name`)."""
    description: str | None = None
    """The unlock tool's description, as the agent reads it (default: says that tool names
    are found in the documentation, without naming them)."""


class UnlockImpl(BaseModel):
    """Compiled only: the tool that unlocks an environment's discoverable tools."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    kind: Literal["unlock"]


__all__ = ["Discoverable", "UnlockImpl"]
