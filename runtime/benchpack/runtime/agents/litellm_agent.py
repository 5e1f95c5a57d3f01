"""`litellm:<model>`: an LLM agent with a ReAct-style tool loop, through `LLMClient`.

Each session keeps an OpenAI-format history:

1. the brief's system prompt;
2. the episode's earlier sessions (`brief.prior`), introduced by a short user-role header and
   replayed as user/assistant messages; the first input of the current session is then prefixed
   with `[Current session]`;
3. this session's messages that already happened (`brief.history`, offline replay of a fixed
   dialogue), then its turns. A user message is sent as is; an environment event (`message=None`)
   becomes a user-role message `[environment event] {...json...}`.

A turn calls the model with `brief.tools.specs`; every tool call it asks for is executed through
`brief.tools.call(name, args, call_id)` and its result goes back as a tool message, rendered by
`env.toolbox.render_result` as every adapter's model sees it: `Error: <record.error>`, a string
result as is, anything else as JSON, cut to `brief.max_tool_result_chars` characters (pack
`limits.max_tool_result_chars`; 0: all; default 20,000) with a note saying so. The loop ends
when the model answers without tool calls (`answer`), after `brief.max_steps` model calls
(`step_budget`), when `brief.turn_timeout_s` runs out (`timeout`; a model call in flight is
cancelled, a tool call in flight is left to finish — tools own their time limits), when the
LLM fails after the client's retries (`error`, with the message in `AgentReply.error`), or when
the session's `brief.budget` (τ²'s max steps and max errors, `types.MessageBudget`) runs out
after a tool-result batch (`session_limit`), or when it calls solo mode's ending tool
(`end_tool`, `conversation.end_tool`: that call marks the session ended and the response's other
calls are not made, as τ²'s solo agent; every request then asks `tool_choice: required`).
With a budget this adapter counts its own
messages: each model response is one, each batch of tool results another, and the budget is
checked after the batch and after a response without tool calls, never after one that calls
tools (where τ² checks).

Tool calls whose arguments are not valid JSON are not executed: the model gets an error tool
message asking it to retry, and the reply carries a `ToolRecord` with that error.

LLM call records go to the session's recorder: see `benchpack.runtime.agents` for the routing.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from ..cache import canonical_json
from ..env.toolbox import render_result
from ..llm import LLMClient, LLMError, LLMResponse, malformed_arguments, normalize_model
from ..types import AgentReply, LLMCallRecord, Message, SessionBrief, ToolRecord
from . import Recorder, render_event

if TYPE_CHECKING:
    from .registry import AgentContext

PRIOR_HEADER = ("[Earlier sessions] The transcript of your earlier sessions with this user "
                "follows, for context. The current session starts after it.")
CURRENT_PREFIX = "[Current session]\n"


def render_prior(prior: list[Message]) -> list[dict[str, Any]]:
    """Earlier sessions as chat messages: a header, then their user/assistant messages."""
    shown = [m for m in prior if m.role in ("user", "assistant") and m.content]
    if not shown:
        return []
    return [{"role": "user", "content": PRIOR_HEADER},
            *({"role": m.role, "content": m.content} for m in shown)]


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [truncated {len(text) - limit} characters]"


class LiteLLMAgent:
    """See the module docstring. `model` is `litellm:<model>` or a bare litellm model name;
    `params` are extra completion parameters (they override the brief's temperature)."""

    def __init__(self, model: str, client: LLMClient, recorder: Recorder | None = None,
                 params: dict[str, Any] | None = None, *,
                 max_tool_result_chars: int = 20_000) -> None:
        self.model = normalize_model(model)
        self.name = f"litellm:{self.model}"
        self.client = client
        self.recorder = recorder
        """Where calls are recorded when the brief names no recorder (standalone use)."""
        self.params = dict(params or {})
        self.max_tool_result_chars = max_tool_result_chars

    async def open(self, brief: SessionBrief) -> LiteLLMSession:
        return LiteLLMSession(self, brief, brief.recorder or self.recorder)


class LiteLLMSession:
    """One session's conversation with the model."""

    def __init__(self, agent: LiteLLMAgent, brief: SessionBrief,
                 recorder: Recorder | None) -> None:
        self.agent = agent
        self.brief = brief
        self.recorder = recorder
        self.calls: list[LLMCallRecord] = []
        self.history: list[dict[str, Any]] = []
        self._chunks: list[str] = []
        """`canonical_json` of each history message, for the client's digests: the history
        only grows, so each message is serialised once, not once per call."""
        if brief.system_prompt:
            self._add({"role": "system", "content": brief.system_prompt})
        prior = render_prior(brief.prior)
        for shown in prior:
            self._add(shown)
        self._prefix = CURRENT_PREFIX if prior else ""
        for m in brief.history:  # this session's fixed dialogue so far (offline replay)
            if m.role == "assistant" and m.tool_calls:
                # a prior conversation's tool traffic (issue 24), as τ²'s agent is shown it
                self._add({"role": "assistant", "content": m.content or None, "tool_calls": [
                    {"id": c.get("id"), "type": "function", "function": {
                        "name": c.get("name"),
                        "arguments": json.dumps(c.get("arguments") or {})}}
                    for c in m.tool_calls]})
            elif m.role == "tool" and m.tool_call_id:
                self._add({"role": "tool", "content": m.content,
                           "tool_call_id": m.tool_call_id})
            elif m.role in ("user", "assistant") and m.content:
                self._add({"role": m.role, "content": self._prefix + m.content})
                self._prefix = ""
        self.turns = 0
        self.budget = brief.budget
        if self.budget is not None:  # this adapter sees each response: it counts them itself
            self.budget.agent_counts = True
        limit = brief.max_tool_result_chars
        if limit is None:
            limit = agent.max_tool_result_chars
        self.result_chars = limit if limit > 0 else sys.maxsize
        self.params: dict[str, Any] = {}
        if brief.temperature is not None:
            self.params["temperature"] = brief.temperature
        self.end_tool: str | None = getattr(brief.tools, "end_tool", None)
        if self.end_tool is not None:  # the session ends by a call: every answer must be one
            self.params["tool_choice"] = "required"
        self.params.update(agent.params)

    def _add(self, message: dict[str, Any]) -> None:
        self.history.append(message)
        self._chunks.append(canonical_json(message))

    def _record(self, record: LLMCallRecord) -> None:
        self.calls.append(record)
        if self.recorder is not None:
            self.recorder(record)

    def _turn_number(self) -> int:
        turn = getattr(self.brief.tools, "turn", None)
        return turn if isinstance(turn, int) and turn > 0 else self.turns

    async def _ask(self, turn: int, remaining: float) -> LLMResponse:
        client = self.agent.client
        async with asyncio.timeout(remaining):  # a scope, not wait_for: no task per call
            return await client.complete(
                role="agent", model=self.agent.model, messages=list(self.history),
                tools=getattr(self.brief.tools, "shared_specs", None) or self.brief.tools.specs
                or None, params=self.params, seed=self.brief.seed,
                repeat=self.brief.repeat, purpose="agent_step", turn=turn, recorder=self._record,
                timeout_s=min(client.config.timeout_s, remaining),
                message_json=list(self._chunks))

    async def turn(self, message: str | None, event: dict[str, Any] | None) -> AgentReply:
        self.turns += 1
        turn = self._turn_number()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.brief.turn_timeout_s
        if message is not None or event is not None or not self.brief.request_in_system:
            content = message if message is not None else render_event(event)
            self._add({"role": "user", "content": self._prefix + content})
            self._prefix = ""
        records: list[ToolRecord] = []
        produced: list[Message] = []
        text = ""
        steps = 0
        while steps < self.brief.max_steps:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return self._reply(text, records, produced, steps, "timeout")
            try:
                resp = await self._ask(turn, remaining)
            except TimeoutError:
                return self._reply(text, records, produced, steps, "timeout")
            except LLMError as exc:
                return self._reply(text, records, produced, steps, "error", str(exc))
            steps += 1
            self._add(resp.raw_message)
            if self.budget is not None:
                self.budget.count()
            said = resp.content or ""
            if said:
                text = said
            if not resp.tool_calls:
                produced.append(Message("assistant", said, turn))
                if self.budget is not None:
                    self.budget.check()  # a limit reached here ends the session after the turn
                return self._reply(said, records, produced, steps, "answer")
            produced.append(Message("assistant", said, turn, tool_calls=[
                {"id": tc.id, "name": tc.name, "arguments": tc.args} for tc in resp.tool_calls]))
            ending = next((tc for tc in resp.tool_calls if tc.name == self.end_tool), None)
            if ending is not None:  # τ²'s solo agent: the response's other calls are not made
                # its arguments do not matter (τ² looks at the name alone): even malformed
                # ones end the session
                await self.brief.tools.call(ending.name, {}, ending.id)
                return self._reply(text, records, produced, steps, "end_tool")
            for i, tc in enumerate(resp.tool_calls):
                if loop.time() >= deadline:
                    for skipped in resp.tool_calls[i:]:
                        self._tool_message(skipped.id, skipped.name,
                                           "Error: not executed, the turn's time budget ran out.",
                                           turn, produced)
                    return self._reply(text, records, produced, steps, "timeout")
                record = await self._execute(tc.id, tc.name, tc.args, turn, steps)
                records.append(record)
                self._tool_message(tc.id, tc.name, render_result(record, self.result_chars),
                                   turn, produced)
            if self.budget is not None:
                self.budget.count()  # the batch of tool results
                if self.budget.check() is not None:
                    return self._reply(text, records, produced, steps, "session_limit")
        return self._reply(text, records, produced, steps, "step_budget")

    async def _execute(self, call_id: str, name: str, args: dict[str, Any], turn: int,
                       step: int) -> ToolRecord:
        tools = self.brief.tools
        raw = malformed_arguments(args)
        if raw is not None:
            if self.budget is not None:  # not run by the toolbox, which counts the others
                self.budget.tool_done(failed=True)
            return ToolRecord(call_id=call_id, tool_name=name, call=args, result=None,
                              error=f"the arguments are not valid JSON ({_clip(raw, 200)!r}); "
                                    "call the tool again with a JSON object",
                              started_at=time.time(), duration=0.0, turn=turn, step=step)
        if hasattr(tools, "step"):
            tools.step = step
        return await tools.call(name, args, call_id)

    def _tool_message(self, call_id: str, name: str, content: str, turn: int,
                      produced: list[Message]) -> None:
        self._add({"role": "tool", "tool_call_id": call_id, "content": content})
        produced.append(Message("tool", content, turn, tool_call_id=call_id, name=name))

    @staticmethod
    def _reply(text: str, records: list[ToolRecord], produced: list[Message], steps: int,
               stop: Any, error: str | None = None) -> AgentReply:
        return AgentReply(text=text, tool_records=records, messages=produced, steps=steps,
                          stop_reason=stop, error=error)

    async def close(self) -> None:
        return None


def make_adapter(argument: str, context: AgentContext) -> LiteLLMAgent:
    """Registry factory of `litellm:<model>`: the model, with the run's shared LLM client."""
    return LiteLLMAgent(argument, context.llm())
