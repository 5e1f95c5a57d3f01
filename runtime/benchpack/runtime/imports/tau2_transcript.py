"""A τ² simulation's `messages` as the store's transcript rows (`bench import-run tau2`).

τ² keeps one flat list: the agent's greeting, user messages (the user simulator's), assistant
messages (text and/or `tool_calls`), tool messages (`id` of the call, `content` exactly as the
agent read it, `error`), system messages, and `multi_tool` batches of tool messages. Here:

- `messages`: every message in order (a batch flattened), roles kept, the assistant's and the
  user's `tool_calls` as `[{id, name, arguments}]` (the shape live runs store), a tool
  message with the name of the call it answers;
- `tool_calls`: the agent's calls with their result (τ²'s content, as a JSON string) or error
  (τ²'s content: `Error: …`); calls the user simulator makes with its own tools (τ²'s
  telecom) stay in `messages` only, so the session's tool-call count is the agent's;
- `turns`: one per user message the agent answered (user text, the agent's last text, its
  steps and calls); `turn` numbers user messages from 1 (the greeting is turn 0);
- the stop signal of the last user message that carries one of τ²'s stop tokens (τ² ends on
  a token anywhere in the message), and per role the tokens of its `usage` and the number of
  its messages that came from a model (those with `usage` or a positive `cost`).

Audio, ticks and per-message costs are not kept (the costs are summed per simulation by τ²).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

STOP_TOKENS = {"###STOP###": "done", "###TRANSFER###": "transfer",
               "###OUT-OF-SCOPE###": "out_of_scope"}
"""τ²'s user stop tokens → the stop signal an instructed-user session records."""


@dataclass
class Transcript:
    messages: list[tuple[Any, ...]] = field(default_factory=list)
    tool_calls: list[tuple[Any, ...]] = field(default_factory=list)
    turns: list[tuple[Any, ...]] = field(default_factory=list)
    user_turns: int = 0
    assistant_turns: int = 0
    stop_signal: str | None = None
    agent_usage: tuple[int, int, int] = (0, 0, 0)
    """Prompt tokens, completion tokens, messages from a model."""
    user_usage: tuple[int, int, int] = (0, 0, 0)


def stop_signal(text: str) -> str | None:
    """The first of τ²'s stop tokens in `text`, as a stop signal."""
    found = [(text.find(t), s) for t, s in STOP_TOKENS.items() if t in text]
    return min(found)[1] if found else None


def _flat(messages: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, dict) and isinstance(m.get("tool_messages"), list):
            out.extend(x for x in m["tool_messages"] if isinstance(x, dict))
        elif isinstance(m, dict):
            out.append(m)
    return out


def _epoch(text: Any) -> float | None:
    try:
        return datetime.fromisoformat(text).timestamp() if isinstance(text, str) else None
    except ValueError:
        return None


def _calls(m: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in m.get("tool_calls") or [] if isinstance(c, dict)]


def _tokens(u: Any, key: str) -> int:
    v = u.get(key) if isinstance(u, dict) else None
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0


def transcript(messages: list[Any], prefix: tuple[str, str, int], where: str) -> Transcript:
    t = Transcript()
    turn, steps, ncalls, said = 0, 0, 0, ""
    names: dict[str, str] = {}
    pending: dict[str, int] = {}  # call id → its row in tool_calls, until its result comes
    usage = {"assistant": [0, 0, 0], "user": [0, 0, 0]}

    def close_turn() -> None:
        if turn and steps:
            t.turns.append((*prefix, turn, user_text, said, steps, ncalls,
                            "answer" if said else "tool_calls", None, None))

    user_text = ""
    for m in _flat(messages):
        role = str(m.get("role"))
        content = m.get("content")
        text = content if isinstance(content, str) else ""
        calls = _calls(m)
        if role == "user" and not calls:
            close_turn()
            turn, steps, ncalls, said, user_text = turn + 1, 0, 0, "", text
            t.user_turns += 1
            t.stop_signal = stop_signal(text) or t.stop_signal
        elif role == "assistant":
            steps += 1 if turn else 0
            t.assistant_turns += 1
            said = text or said
        if role in usage and (m.get("usage") is not None or (m.get("cost") or 0) > 0):
            u = usage[role]
            u[0] += _tokens(m.get("usage"), "prompt_tokens")
            u[1] += _tokens(m.get("usage"), "completion_tokens")
            u[2] += 1
        stored_calls = None
        if calls:
            stored_calls = json.dumps([{"id": c.get("id"), "name": c.get("name"),
                                        "arguments": c.get("arguments")} for c in calls],
                                      ensure_ascii=False)
            for c in calls:
                names[str(c.get("id"))] = str(c.get("name"))
                if role == "assistant" and c.get("requestor", "assistant") == "assistant":
                    ncalls += 1
                    pending[str(c.get("id"))] = len(t.tool_calls)
                    t.tool_calls.append((*prefix, len(t.tool_calls), turn, steps,
                                         c.get("id"), c.get("name"), None,
                                         json.dumps(c.get("arguments"), ensure_ascii=False),
                                         None, None, _epoch(m.get("timestamp")), None, None,
                                         "agent"))
        call_id = str(m.get("id")) if role == "tool" else None
        if call_id is not None and call_id in pending:
            row = list(t.tool_calls[pending.pop(call_id)])
            if m.get("error"):
                row[11] = text  # error: τ²'s content, `Error: …`
            else:
                row[10] = json.dumps(text, ensure_ascii=False)
            t.tool_calls[row[3]] = tuple(row)
        t.messages.append((*prefix, len(t.messages), turn, role, text, stored_calls,
                           call_id, names.get(call_id) if call_id else None))
    close_turn()
    t.agent_usage = tuple(usage["assistant"])  # type: ignore[assignment]
    t.user_usage = tuple(usage["user"])  # type: ignore[assignment]
    return t


__all__ = ["STOP_TOKENS", "Transcript", "stop_signal", "transcript"]
