"""`python:<module>:<callable>`: an agent implemented in Python, in process.

The callable receives the `SessionBrief` (system prompt, prior sessions, tools) and returns an
object with `async def respond(self, message: str | None, event: dict | None) -> str` (it may
call `await brief.tools.call(name, args)` any number of times before returning its reply), and
optionally `async def close(self)`. A plain function returning a string per call also works:
`async def agent(brief, message, event) -> str`.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..types import AgentReply, Message, SessionBrief

if TYPE_CHECKING:
    from .registry import AgentContext


class _PySession:
    def __init__(self, brief: SessionBrief, impl: Any, fn: Any) -> None:
        self.brief = brief
        self.impl = impl
        self.fn = fn

    async def turn(self, message: str | None, event: dict[str, Any] | None) -> AgentReply:
        tools = self.brief.tools
        before = len(getattr(tools, "records", []))
        if self.impl is not None:
            out = self.impl.respond(message, event)
        else:
            out = self.fn(self.brief, message, event)
        text = await out if inspect.isawaitable(out) else out
        records = list(getattr(tools, "records", [])[before:])
        return AgentReply(text=str(text or ""), tool_records=records,
                          messages=[Message("assistant", str(text or ""), 0)],
                          steps=len(records) + 1)

    async def close(self) -> None:
        close = getattr(self.impl, "close", None)
        if close is not None:
            out = close()
            if inspect.isawaitable(out):
                await out


class PythonAgent:
    def __init__(self, spec: str) -> None:
        module_name, _, attr = spec.rpartition(":")
        if not module_name or not attr:
            raise UsageError("use python:<module>:<callable>, e.g. python:my_agent:make_agent")
        if "" not in sys.path and os.getcwd() not in sys.path:
            # as `python -m` does: a module next to where `bench` runs is found
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            hint = (" (hint: the module must be importable from the current directory, an "
                    "installed package, or PYTHONPATH=<its directory>)" if exc.name == module_name.split(".")[0]
                    else "")
            raise UsageError(f"python:{spec}: cannot import `{module_name}`: {exc}{hint}"
                             ) from None
        except Exception as exc:  # the user's module fails while importing
            raise UsageError(f"python:{spec}: importing `{module_name}` failed: "
                             f"{type(exc).__name__}: {exc}") from None
        try:
            self.target = getattr(module, attr)
        except AttributeError:
            raise UsageError(f"python:{spec}: `{module_name}` has no attribute `{attr}`"
                             ) from None
        if not callable(self.target):
            raise UsageError(f"python:{spec}: `{attr}` is a {type(self.target).__name__}, not "
                             "callable; name a factory (brief) -> agent or a function "
                             "(brief, message, event) -> str")
        self.name = f"python:{spec}"

    async def open(self, brief: SessionBrief) -> _PySession:
        target = self.target
        params = list(inspect.signature(target).parameters)
        if len(params) >= 3:  # agent(brief, message, event) -> str
            return _PySession(brief, None, target)
        made = target(brief)
        if inspect.isawaitable(made):
            made = await made
        if not hasattr(made, "respond"):
            raise UsageError(f"{self.name}: the factory must return an object with respond()")
        return _PySession(brief, made, None)


def make_adapter(argument: str, context: AgentContext) -> PythonAgent:
    """Registry factory of `python:<module>:<callable>`."""
    return PythonAgent(argument)
