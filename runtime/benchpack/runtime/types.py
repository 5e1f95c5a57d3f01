"""Shared runtime types: the vocabulary every protocol, adapter, grader and the store speak.

Interfaces are `typing.Protocol`s; implementations live in their own modules and are looked up
in typed registries (`registry.py`). Nothing here does I/O.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["user", "assistant", "system", "tool"]
LLMRole = Literal["agent", "simulator", "judge", "planner"]


@dataclass
class ToolCall:
    """A call the agent asked for."""

    id: str
    name: str
    args: dict[str, Any]


@dataclass
class ToolRecord:
    """One executed tool call: `{tool_name, call, result, error, started_at, duration}`."""

    call_id: str
    tool_name: str
    call: dict[str, Any]
    result: Any
    error: str | None
    started_at: float
    duration: float
    turn: int = 0
    step: int = 0
    effect: Literal["read", "write"] = "read"

    def as_dict(self) -> dict[str, Any]:
        return {"tool_name": self.tool_name, "call": self.call, "result": self.result,
                "error": self.error, "started_at": self.started_at, "duration": self.duration,
                "turn": self.turn, "step": self.step}


@dataclass
class Message:
    """A conversation message as the store and graders see it."""

    role: Role
    content: str
    turn: int
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None


@dataclass
class LLMUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None


@dataclass
class LLMCallRecord:
    """Every LLM call, whatever its role: what `llm_calls` stores."""

    role: LLMRole
    model: str
    prompt_hash: str
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    latency_s: float
    cache_hit: bool
    error: str | None
    attempts: int
    started_at: float
    turn: int | None = None
    purpose: str | None = None
    """What the call was for, e.g. `completion_check`, `clarification_check`, `rubric`."""
    messages_json: list[str] | None = None
    """The prompt: canonical JSON of each message sent (stored by `calltexts`, redacted)."""
    tools_json: str | None = None
    reply: str | None = None
    """Canonical JSON of the reply message; None when no reply came."""
    endpoint_failure: bool = False
    """The call failed for good at the model endpoint (`llmerrors.is_endpoint_failure`): the
    evaluator's infrastructure, so a session it ends is not scored as the agent's failure."""


@dataclass
class AgentReply:
    """What an agent produced for one user turn (or environment event)."""

    text: str
    tool_records: list[ToolRecord] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    """Assistant/tool messages produced during the turn, in order (the final text last)."""
    steps: int = 0
    stop_reason: Literal["answer", "step_budget", "timeout", "error", "script_end"] = "answer"
    compactions: int = 0
    """Context compactions the agent reported during the turn."""
    error: str | None = None


class ToolHandle(Protocol):
    """How an agent calls tools. The runtime executes, validates and records every call."""

    specs: list[dict[str, Any]]
    """OpenAI-style function specs of the tools offered in this session."""

    async def call(self, name: str, args: dict[str, Any], call_id: str | None = None) -> ToolRecord:
        ...


@dataclass
class SessionBrief:
    """What an agent adapter learns about a session. Never the hidden material."""

    session_id: str
    name: str
    protocol: str
    repeat: int
    system_prompt: str
    prior: list[Message]
    """Transcripts of the episode's earlier sessions, when they carry over."""
    tools: ToolHandle
    max_steps: int
    turn_timeout_s: float
    seed: int
    temperature: float | None = None
    history: list[Message] = field(default_factory=list)
    """Messages of *this* session that already happened before the agent's first turn: the
    fixed dialogue replayed in offline re-scoring. Adapters continue the conversation from it."""
    recorder: Callable[[LLMCallRecord], None] | None = None
    """Where an LLM-backed adapter records its own calls (they land in the session's
    `llm_calls`)."""


class AgentSession(Protocol):
    async def turn(self, message: str | None, event: dict[str, Any] | None) -> AgentReply:
        """Answer one user message (or, with `message=None`, an environment event)."""
        ...

    async def close(self) -> None:
        ...


class AgentAdapter(Protocol):
    """One interface for every agent: litellm models, subprocess harnesses, Python callables,
    scripted and replayed turns."""

    name: str

    async def open(self, brief: SessionBrief) -> AgentSession:
        ...


Clock = Callable[[], float]
now: Clock = time.time

AsyncFn = Callable[..., Awaitable[Any]]
