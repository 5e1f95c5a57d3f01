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
    side: Literal["agent", "user"] = "agent"
    """Who made the call: the agent, or the simulated user with its own tools (issue 24)."""

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
    stop_reason: Literal["answer", "step_budget", "timeout", "error", "script_end",
                         "session_limit", "end_tool"] = "answer"
    """`session_limit`: the session's `MessageBudget` ran out mid-turn (the session ends).
    `end_tool`: the agent called solo mode's ending tool (`conversation.end_tool`)."""
    compactions: int = 0
    """Context compactions the agent reported during the turn."""
    error: str | None = None


@dataclass
class MessageBudget:
    """τ²-bench's `max_steps` and `max_errors` for one session (`limits.max_messages`,
    `limits.max_tool_errors`), shared by the protocol, the toolbox and the agent adapter.

    Messages are τ²'s steps: user messages, agent messages (each model response, tool calls
    included) and tool-result batches. `check` is τ²'s termination check — the message limit,
    then the error limit, the later one naming the ending when both hold — and is made where
    τ² makes it: after a user message, an agent text message or a tool-result batch, never
    after an agent message that calls tools. The first check that fires sets `reason` for good.

    Who counts: an adapter that sees each model response (`litellm:`) sets `agent_counts` and
    counts its responses and batches itself, checking mid-turn. For any other adapter the
    toolbox counts each call as a call message plus its result batch (exact for agents making
    one call per response), checks after it and refuses every call once `reason` is set; the
    protocol counts the turn's final text. Failed tool calls are counted by the toolbox for
    every adapter (`tool_done`)."""

    max_messages: int | None = None
    max_tool_errors: int | None = None
    messages: int = 0
    tool_errors: int = 0
    agent_counts: bool = False
    reason: Literal["max_messages", "max_tool_errors"] | None = None

    def count(self, messages: int = 1) -> None:
        self.messages += messages

    def tool_done(self, failed: bool) -> None:
        """A tool call finished (the toolbox's hook; `litellm:` too for calls it refuses
        itself)."""
        self.tool_errors += failed
        if not self.agent_counts:
            self.messages += 2  # the agent's call message and its result
            self.check()

    def check(self) -> str | None:
        """τ²'s check; the reason the session ends, if it must."""
        if self.reason is None:
            if self.max_messages is not None and self.messages >= self.max_messages:
                self.reason = "max_messages"
            if self.max_tool_errors is not None and self.tool_errors >= self.max_tool_errors:
                self.reason = "max_tool_errors"
        return self.reason


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
    budget: MessageBudget | None = None
    """The session's message and tool-error limits, when the protocol enforces them
    (instructed_user's `limits.max_messages` / `max_tool_errors`); see `MessageBudget`."""
    max_tool_result_chars: int | None = None
    """How much of a tool result an LLM agent shows its model (`limits.max_tool_result_chars`;
    0: all); None: the adapter's own default."""
    request_in_system: bool = False
    """The session's request is in the system prompt (`conversation.system_request`): a turn
    with neither a message nor an event adds nothing to the conversation."""


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
