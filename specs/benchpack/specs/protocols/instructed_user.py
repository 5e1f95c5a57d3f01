"""instructed_user (τ²-bench-style users): the scenario the user simulator follows, the gold
actions a correct agent makes, and how the session is scored (pass/fail reward)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..base import Spec
from ..scoring import Gold, Score
from ..user_side import UserToolCall

NAME = "instructed_user"
SESSION_FIELDS: tuple[str, ...] = ("user", "gold", "score", "conversation",
                                   "initial_state")
"""Session keys that belong to this protocol (another protocol's session giving one is E204)."""

StopSignal = Literal["done", "transfer", "out_of_scope"]


class Instruction(Spec):
    """A conditional instruction the user follows (τ²'s `task_instructions`, made checkable by
    the deterministic `rules` simulator). Give `if` (words of the agent's message), `after_turn`,
    or both (either triggers it); each instruction is applied once."""

    if_: list[str] | None = Field(default=None, alias="if")
    """Words or phrases: the instruction applies when the agent's last message contains any of
    them (case-insensitive; Chinese works)."""
    after_turn: int | None = Field(default=None, ge=1)
    """Applies once the agent has answered this many times (a new request mid-dialogue)."""
    say: str
    """What the user says then (Jinja)."""
    stop: StopSignal | None = None
    """End the dialogue with this stop signal after saying it."""
    calls: list[UserToolCall] = Field(default_factory=list)
    """Calls of the user's own tools (`user_toolsets`) made, in order, before saying it (every
    simulator but the LLM ones, which decide their own calls)."""

    @model_validator(mode="after")
    def _condition(self) -> Instruction:
        if self.if_ is None and self.after_turn is None:
            raise ValueError("give `if: [words…]` or `after_turn: N` (or write the instruction "
                             "as plain text for the LLM simulator)")
        if self.if_ is not None and (not self.if_ or any(not w.strip() for w in self.if_)):
            raise ValueError("`if` needs non-empty words")
        return self


class UserScenario(Spec):
    """The scenario the user simulator follows (τ²'s `user_scenario.instructions`)."""

    reason: str = Field(min_length=1)
    """Why the user contacts the agent; the simulator opens the dialogue with it (Jinja)."""
    known: list[str] = Field(default_factory=list)
    """What the user knows and may tell when asked (Jinja)."""
    unknown: list[str] = Field(default_factory=list)
    """What the user does not know: asked about it, they say so (Jinja)."""
    instructions: list[str | Instruction] = Field(default_factory=list)
    """Conditional instructions in order: plain text (the LLM simulator follows it) or
    `{if: [words], say: …}` / `{after_turn: N, say: …, stop: done}` (every simulator)."""
    language: str | None = None
    """The user's language (BCP-47, e.g. `en`, `zh`); default: the session's metadata."""
    text: str | None = None
    """The scenario exactly as an LLM simulator reads it (verbatim, not Jinja), e.g. τ²'s
    `str(user_scenario)` put there by the τ² importer: the `chat` simulator's `{{ scenario }}`
    (default: built from `reason`, `known`, `unknown` and `instructions`), and for the `tagged`
    one in place of those four sections. The rules and scripted simulators never read it."""
    tools: list[str] | None = None
    """The user's own tools this user is offered, by name: some of the environment's
    `user_toolsets` tools (τ²'s per-task `user_tools`; `[]`: none, so the `chat` prompt's
    `user_tools` is empty). Default: all of them. The world's set-up and the gold replay still
    run every tool of the environment, as τ² does."""

    @field_validator("known", "unknown")
    @classmethod
    def _non_empty(cls, v: list[str]) -> list[str]:
        if any(not s.strip() for s in v):
            raise ValueError("entries cannot be empty")
        return v




class Conversation(Spec):
    """How an instructed_user dialogue runs and ends: τ²-bench's orchestrator rules, each one
    opt-in (every default is the behaviour of packs written before these fields). Give it on a
    session, or pack-wide as `defaults.conversation` (a session's fields override the pack's,
    field by field). The step and error limits are `limits.max_messages` and
    `limits.max_tool_errors`."""

    greeting: str | None = None
    """The agent's first message, already in the transcript before the user speaks (verbatim,
    not Jinja; τ²: "Hi! How can I help you today?"). Stored as an assistant message, handed to
    every agent adapter as the session's history (`brief.history`), counted by the
    `communicate` check and never by `limits.max_messages`. An LLM simulator's first message is
    its reply to it; the rules and scripted simulators still open with the scenario's `reason`
    (or the script's `opening`)."""
    simulator: Literal["tagged", "chat"] = "tagged"
    """How an LLM simulator is prompted. `tagged`: one prompt per user message (template
    `instructed_user.user_turn`), the answer inside `<message>…</message>`. `chat` (τ²): a
    system prompt (template `instructed_user.user_system`, rendered with the scenario text, the
    persona and the user) and the dialogue as chat messages with the roles flipped — the
    agent's text messages as `user`, the user's own as `assistant`, tool calls and results not
    shown; the reply's content is the user's message."""
    stop_tokens: Literal["end", "anywhere"] = "end"
    """Where a user message may carry `###STOP###`, `###TRANSFER###` or `###OUT-OF-SCOPE###`.
    `end`: at most one, at the end (it is cut from the stored message; anything else that looks
    like a token is malformed and asked again once). `anywhere` (τ²): any of the three anywhere
    in the message ends the dialogue (the first one found names the signal) and the message is
    stored as written, token included."""
    unfinished: Literal["score", "fail"] = "score"
    """A dialogue that did not end with the user's stop signal (turn budget, message or tool
    error limit, a scripted agent out of turns). `score`: scored like any other. `fail` (τ²):
    reward 0 and not passed; only the components that need no judge are computed, for the
    record."""
    solo: bool = False
    """Solo mode (τ²'s `--solo-mode`): no simulated user. The agent gets the session's request
    (by default the scenario's `reason`; τ² imports give the task's `ticket`) and the user's
    own tools (`user_toolsets`) beside its own, works one turn (its steps bounded by
    `limits.max_steps_per_turn`), and the session ends `done` when it answers (with `end_tool`,
    when it calls that tool). Written to the plan only when true."""
    end_tool: str | None = None
    """Solo mode only: the tool the agent ends the session with (τ²'s solo agent: `done`), a
    tool the session offers the agent. It is offered last, never run and never recorded; a
    model response that calls it ends the session at once, its other calls not made (τ²). A
    `litellm:` agent's every request then requires a tool call (`tool_choice: required`). A
    session that ends any other way is unfinished: a text answer ends it `agent_error`, and
    with `unfinished: fail` (τ²) it scores 0. Written to the plan only when given."""
    system_request: str | None = None
    """Solo mode only: the session's request goes in the agent's system prompt, not in a first
    message: this text, `{request}` replaced by the request, is appended to the system prompt
    (τ²'s solo agent: its ticket in `<ticket>` tags), and the agent starts with no message.
    Written to the plan only when given."""
    simulator_temperature: float = Field(default=0.0, ge=0, le=2)
    """Sampling temperature of an LLM simulator (τ²: 0). Every simulator and judge call of
    benchpack is made at 0 unless said otherwise here; the agent's is `defaults.temperature`."""


__all__ = ["NAME", "SESSION_FIELDS", "Conversation", "Gold", "Instruction", "Score",
           "StopSignal", "UserScenario"]
