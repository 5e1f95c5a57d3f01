"""Agent adapters: one module per kind, looked up by URI scheme in `registry.AgentRegistry`.

| scheme | module | what |
| --- | --- | --- |
| `litellm:<model>` | `litellm_agent` | an LLM with a tool loop |
| `cmd:<command>` | `cmd_agent` | an external harness speaking JSON lines over stdin/stdout |
| `acp:<command>` | `acp_agent` | a harness speaking the Agent Client Protocol on its stdio |
| `python:<module>:<callable>` | `python_agent` | an agent written in Python, in process |
| `scripted:<file>`, `replay:<file>` | `scripted` | authored or recorded turns |
| `adversary:<kind>` | `adversary` | what must score 0: saying nothing, "Done.", echoing the user, calling every tool |

This package holds what the adapters share: the message helpers below. An LLM-backed adapter
records its own LLM calls through `brief.recorder`, so they land in the `llm_calls` of the
session that caused them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from ..types import LLMCallRecord, Message, ToolRecord

Recorder = Callable[[LLMCallRecord], None]


EVENT_PREFIX = "[environment event] "


def render_event(event: dict[str, Any] | None) -> str:
    """An environment event (a turn without a user message) as the text an agent reads."""
    return EVENT_PREFIX + json.dumps(event if event is not None else {}, ensure_ascii=False,
                                     default=str)


def tool_call_messages(record: ToolRecord, turn: int = 0) -> list[Message]:
    """The transcript of one executed call: the assistant's call, then the tool's result as a
    `litellm:` agent's model reads it (`env.toolbox.render_result`, whole: `Error: …`, a
    string as is, anything else as JSON), so transcripts read alike whichever adapter ran."""
    from ..env.toolbox import render_result

    return [Message("assistant", "", turn, tool_calls=[
                {"id": record.call_id, "name": record.tool_name, "arguments": record.call}]),
            Message("tool", render_result(record, sys.maxsize), turn,
                    tool_call_id=record.call_id, name=record.tool_name)]


__all__ = ["EVENT_PREFIX", "Recorder", "render_event", "tool_call_messages"]
