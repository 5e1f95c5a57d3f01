"""What a grader may inspect after a session."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..types import Message, ToolRecord


@dataclass
class Trace:
    tool_records: list[ToolRecord]
    state: dict[str, dict[str, list[dict[str, Any]]]]
    """Final service state: service → table → rows."""
    files: dict[str, str]
    """Final workspace text files."""
    messages: list[Message]
    """User and assistant messages of the session."""
    reply: str
    """The agent's final reply."""
    read_tools: set[str] = field(default_factory=set)
    """Tools whose results count as "read" for grounding."""
    _read_text: str | None = None

    def read_results_text(self) -> str:
        """Everything the agent read through read-side tools, as one searchable text."""
        if self._read_text is None:
            parts = [json.dumps(r.result, ensure_ascii=False, default=str)
                     for r in self.tool_records
                     if r.tool_name in self.read_tools and r.error is None]
            self._read_text = "\n".join(parts)
        return self._read_text

    def tool_history(self) -> list[dict[str, Any]]:
        """π-Bench style tool records: `{tool_name, call, result, error}`."""
        return [{"tool_name": r.tool_name, "call": r.call, "result": r.result, "error": r.error}
                for r in self.tool_records]
