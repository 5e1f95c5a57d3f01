"""Dual control, initial states and environment assertions (issue 24, τ³ part A): the pack
language of a user who has tools of their own, a session that starts from a changed world or a
prior conversation, and checks of the final world state by named predicate functions.

```yaml
environments:
  - id: help-desk
    toolsets: [tools/isp.py]            # the agent's tools and state
    user_toolsets: [tools/phone.py]     # the user's own tools and state (dual control)
episodes:
  - id: e1
    persona: customer
    environment: help-desk
    sessions:
      - id: no-internet
        protocol: instructed_user
        initial_state:
          data: {isp: {lines: {L1: {status: suspended}}}}   # patches, merged into rows
          actions: [{tool: toggle_airplane_mode, side: user}]  # replayed before the session
          history:                                          # the session starts mid-dialogue
            - {role: user, content: My internet is down.}
            - {role: assistant, content: Let me check your line.}
        user:
          reason: My phone has no internet.
          instructions:
            - {if: [airplane], calls: [{tool: toggle_airplane_mode}], say: Done, it is off.}
        gold:
          actions:
            - {tool: resume_line, args: {line_id: L1}}
            - {tool: toggle_airplane_mode, requestor: user}
        score:
          reward: [state, env_assertions]
          env_assertions:
            - {function: assert_has_internet, side: user, expect: true}
```

The runtime side: `benchpack.runtime.user_side` (the user's toolbox, the initial state) and
`benchpack.runtime.graders.env_assertions`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from .base import Spec

Side = Literal["agent", "user"]


class UserToolCall(Spec):
    """A call the simulated user makes with one of its own tools (`user_toolsets`)."""

    tool: str = Field(min_length=1)
    """The user's tool."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Its arguments."""


class InitAction(Spec):
    """A tool call replayed on the world before the session starts (τ²'s
    `initialization_actions`): its result is not shown to anyone, its changes are the start."""

    tool: str = Field(min_length=1)
    """The tool: one of the agent's (`side: agent`) or the user's (`side: user`), or a public
    function of one of that side's toolsets that is not offered as a tool (a set-up helper)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Its arguments."""
    side: Side = "agent"
    """Whose tool it is (τ²'s `env_type`: `assistant` → `agent`)."""


class PriorToolCall(Spec):
    """A tool call inside a prior message (replayed before the session, like τ² does)."""

    id: str | None = None
    """The call's id: needed, and answered by a later `tool` message with this
    `tool_call_id` (the compiler checks both ways: a model is shown the history)."""
    tool: str = Field(min_length=1)
    """The tool."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Its arguments."""


class PriorMessage(Spec):
    """One message of the conversation the session starts from."""

    role: Literal["user", "assistant", "tool"]
    """Who wrote it (`tool`: a tool's result)."""
    content: str | None = None
    """The text (verbatim, not Jinja)."""
    tool_calls: list[PriorToolCall] = Field(default_factory=list)
    """Tool calls of this message: the agent's (`assistant`) or the user's own (`user`); they
    are replayed on the world, in order, before the session starts."""
    tool_call_id: str | None = None
    """`tool` messages: the id of the call this result answers."""


class InitialState(Spec):
    """Where a session starts: the world changed by `data`, then by `actions`, then by the tool
    calls of `history` (τ²'s `initial_state`, applied in τ²'s order)."""

    data: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)
    """Patches of service tables, `{service: {table: {row key: fields}}}`: each row's fields are
    merged into the existing row (objects merge key by key, anything else is replaced), and a
    key with no row yet adds the row."""
    actions: list[InitAction] = Field(default_factory=list)
    """Tool calls replayed in order on the patched world; one that fails is a run error (the
    session could not be set up), never a silent start from the wrong state."""
    history: list[PriorMessage] = Field(default_factory=list)
    """The conversation so far: shown to the agent as its history and stored as turn 0 of the
    transcript; its tool calls are replayed. The user simulator continues from it."""

    @field_validator("data")
    @classmethod
    def _rows_are_objects(cls, v: dict[str, dict[str, dict[str, Any]]]
                          ) -> dict[str, dict[str, dict[str, Any]]]:
        for svc, tables in v.items():
            for table, rows in tables.items():
                for key, row in rows.items():
                    if not isinstance(row, dict):
                        raise ValueError(f"`{svc}.{table}.{key}` must be an object of fields")
        return v


class EnvAssertion(Spec):
    """A named predicate over the final world (τ²'s `env_assertions`): a public function of one
    of the side's toolsets, called with the final state and `args`; it holds when its return
    value equals `expect`."""

    function: str = Field(min_length=1)
    """The function's name (it need not be offered as a tool: leave it out with the
    toolset's `include:`)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Its arguments (the `State` parameter is given by the runtime)."""
    side: Side = "agent"
    """Whose toolsets hold it (τ²'s `env_type`)."""
    expect: Any = True
    """The value the function must return (τ²'s `assert_value`)."""
    message: str | None = None
    """Shown when it does not hold."""


__all__ = ["EnvAssertion", "InitAction", "InitialState", "PriorMessage", "PriorToolCall",
           "Side", "UserToolCall"]
