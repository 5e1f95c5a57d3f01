"""The one exception environment code raises for anything the agent did wrong."""

from __future__ import annotations


class ToolError(Exception):
    """A tool call failed because of its arguments or the state of the world (bad path, unknown
    id, invalid row…). The message is meant for the agent: it says what went wrong and how to
    fix the call. `ToolBox` turns it into the record's `error`; it never reaches the agent as an
    exception."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message
