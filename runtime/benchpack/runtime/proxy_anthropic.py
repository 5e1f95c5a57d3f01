"""Anthropic's Messages API on the recording proxy (`POST …/v1/messages`), for harnesses that
speak nothing else (Claude Code, with `ANTHROPIC_BASE_URL` = the route's root): a request is
translated into one Chat Completions call through the run's `LLMClient` (cached, rate-limited,
budgeted, recorded), and the answer back into a `message`, or its server-sent events.

Request side: `system` (a string or text blocks) → a leading system message, and a
`system` message among the messages (Claude Code sends some) stays one there; `text` blocks are
joined, `image` blocks become `image_url` parts; an assistant's `tool_use` blocks → its
`tool_calls`; a user's `tool_result` blocks → `tool` messages (before the rest of that user
message, so each answers the call just made; `is_error` results are prefixed `Error: `);
`thinking` / `redacted_thinking` blocks are dropped (signed for the provider that made them).
Tools: `{name, description, input_schema}` → functions; server tools (`web_search_…`,
`bash_…`, typed ones) are not offered, nothing upstream could run them. `tool_choice` `auto` /
`any` / `tool` / `none` → `auto` / `required` / the function / `none`.

Answer side: reasoning text the backend returned (`reasoning_content`) → a `thinking` block,
content → a `text` block, tool calls → `tool_use` blocks (arguments parsed to `input`);
`finish_reason` → `stop_reason` (`tool_calls` → `tool_use`, `length` → `max_tokens`, else
`end_turn`); usage is the provider's (`input_tokens`, `output_tokens`). Streaming replays the
one upstream answer as `message_start`, `content_block_start/delta/stop` per block,
`message_delta` (stop reason, output tokens), `message_stop`. `…/v1/messages/count_tokens` is
answered with an estimate (4 characters a token) and calls no model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

PARAMS = {"temperature": "temperature", "top_p": "top_p", "max_tokens": "max_tokens",
          "stop_sequences": "stop"}
"""Messages field → Chat Completions parameter, forwarded when set. (`top_k` has no
equivalent and is dropped.)"""

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
               403: "permission_error", 404: "not_found_error", 413: "request_too_large",
               429: "rate_limit_error", 529: "overloaded_error"}


class RequestError(ValueError):
    """A request the proxy cannot translate: HTTP 400 with this message."""


@dataclass
class Translated:
    model: str | None
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    params: dict[str, Any]
    stream: bool
    echo: dict[str, Any] = field(default_factory=dict)


def error_body(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"),
                                       "message": message}}


# --------------------------------------------------------------------------- request


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
        raise RequestError(f"{where}: `content` must be a string or a list of blocks")
    return content


def _text_parts(blocks: list[dict[str, Any]]) -> str | list[dict[str, Any]] | None:
    """Text and image blocks → a string, or Chat Completions parts when there are images."""
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "text":
            parts.append({"type": "text", "text": str(block.get("text", ""))})
        elif block.get("type") == "image":
            source = block.get("source") or {}
            url = source.get("url") if source.get("type") == "url" else \
                f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
    if not parts:
        return None
    if all(p["type"] == "text" for p in parts):
        return "".join(p["text"] for p in parts)
    return parts


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        text = "".join(str(b.get("text", "")) for b in content
                       if isinstance(b, dict) and b.get("type") == "text")
    elif content is None:
        text = ""
    else:
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return f"Error: {text}" if block.get("is_error") else text


def _system(system: Any) -> str | None:
    if system is None:
        return None
    if isinstance(system, str):
        return system or None
    if isinstance(system, list):
        return "\n\n".join(str(b.get("text", "")) for b in system
                           if isinstance(b, dict) and b.get("type") == "text") or None
    raise RequestError("`system` must be a string or a list of text blocks")


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("messages")
    if not isinstance(items, list) or not items:
        raise RequestError("`messages` must be a non-empty list")
    out: list[dict[str, Any]] = []
    system = _system(body.get("system"))
    if system:
        out.append({"role": "system", "content": system})
    for i, message in enumerate(items):
        where = f"messages[{i}]"
        if not isinstance(message, dict) or \
                message.get("role") not in ("user", "assistant", "system"):
            raise RequestError(f"{where}: a message is an object with role user, assistant "
                               "or system")
        blocks = _blocks(message.get("content"), where)
        if message["role"] == "system":  # Claude Code puts late instructions so
            text = _text_parts(blocks)
            if text is not None:
                out.append({"role": "system", "content": text})
            continue
        if message["role"] == "assistant":
            calls = [{"id": str(b.get("id")), "type": "function", "function": {
                "name": str(b.get("name")),
                "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False)}}
                for b in blocks if b.get("type") == "tool_use"]
            msg: dict[str, Any] = {"role": "assistant", "content": _text_parts(blocks)}
            if calls:
                msg["tool_calls"] = calls
            if msg["content"] is not None or calls:
                out.append(msg)
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                out.append({"role": "tool", "tool_call_id": str(block.get("tool_use_id")),
                            "content": _result_text(block)})
        rest = _text_parts([b for b in blocks if b.get("type") != "tool_result"])
        if rest is not None:
            out.append({"role": "user", "content": rest})
    return out


def _tools(spec: Any) -> list[dict[str, Any]]:
    if spec is None:
        return []
    if not isinstance(spec, list):
        raise RequestError("`tools` must be a list")
    tools = []
    for tool in spec:
        if not isinstance(tool, dict) or "input_schema" not in tool or \
                tool.get("type") not in (None, "custom"):
            continue  # server tools (web search, bash, text editor…): run by Anthropic only
        fn: dict[str, Any] = {"name": str(tool.get("name")), "parameters": tool["input_schema"]}
        if tool.get("description"):
            fn["description"] = tool["description"]
        tools.append({"type": "function", "function": fn})
    return tools


def _tool_choice(choice: Any) -> Any:
    if not isinstance(choice, dict):
        return None
    kind = choice.get("type")
    if kind == "tool":
        return {"type": "function", "function": {"name": str(choice.get("name"))}}
    return {"auto": "auto", "any": "required", "none": "none"}.get(str(kind))


def translate_request(body: dict[str, Any]) -> Translated:
    """A Messages request body → one Chat Completions call. Raises `RequestError`."""
    model = body.get("model")
    out = Translated(model=model if isinstance(model, str) and model else None,
                     messages=_messages(body), tools=_tools(body.get("tools")) or None,
                     params={}, stream=bool(body.get("stream")))
    for key, param in PARAMS.items():
        if body.get(key) is not None:
            out.params[param] = body[key]
    choice = _tool_choice(body.get("tool_choice"))
    if choice is not None and out.tools:
        out.params["tool_choice"] = choice
        if body["tool_choice"].get("disable_parallel_tool_use"):
            out.params["parallel_tool_calls"] = False
    return out


def count_tokens(body: dict[str, Any]) -> int:
    """An estimate for `count_tokens` (no model is called): 4 characters a token."""
    text = json.dumps([body.get("system"), body.get("messages"), body.get("tools")],
                      ensure_ascii=False)
    return max(1, len(text) // 4)


# --------------------------------------------------------------------------- answer


def message_object(message: dict[str, Any], *, ident: str, model: str, finish: str | None,
                   prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        blocks.append({"type": "thinking", "thinking": reasoning, "signature": ""})
    if isinstance(message.get("content"), str) and message["content"]:
        blocks.append({"type": "text", "text": message["content"]})
    for tc in message.get("tool_calls") or []:
        try:
            args = json.loads(tc["function"]["arguments"] or "{}")
        except ValueError:
            args = {"_raw": tc["function"]["arguments"]}
        blocks.append({"type": "tool_use", "id": tc["id"], "name": tc["function"]["name"],
                       "input": args if isinstance(args, dict) else {"_raw": args}})
    if finish == "length":
        stop = "max_tokens"
    elif message.get("tool_calls"):
        stop = "tool_use"
    else:
        stop = "end_turn"
    return {"id": f"msg_{ident}", "type": "message", "role": "assistant", "model": model,
            "content": blocks, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": prompt_tokens, "output_tokens": completion_tokens,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}


def sse_events(final: dict[str, Any]) -> Iterator[str]:
    """The whole message as Messages server-sent events."""
    def event(kind: str, data: dict[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data}, ensure_ascii=False)}\n\n"

    usage = final["usage"]
    yield event("message_start", {"message": {
        **final, "content": [], "stop_reason": None,
        "usage": {**usage, "output_tokens": 0}}})
    for index, block in enumerate(final["content"]):
        kind = block["type"]
        if kind == "text":
            yield event("content_block_start", {"index": index,
                                                "content_block": {"type": "text", "text": ""}})
            delta = {"type": "text_delta", "text": block["text"]}
        elif kind == "thinking":
            yield event("content_block_start", {"index": index, "content_block": {
                "type": "thinking", "thinking": "", "signature": ""}})
            delta = {"type": "thinking_delta", "thinking": block["thinking"]}
        else:
            yield event("content_block_start", {"index": index, "content_block": {
                **block, "input": {}}})
            delta = {"type": "input_json_delta",
                     "partial_json": json.dumps(block["input"], ensure_ascii=False)}
        yield event("content_block_delta", {"index": index, "delta": delta})
        yield event("content_block_stop", {"index": index})
    yield event("message_delta", {"delta": {"stop_reason": final["stop_reason"],
                                            "stop_sequence": None},
                                  "usage": {"output_tokens": usage["output_tokens"]}})
    yield event("message_stop", {})


__all__ = ["RequestError", "Translated", "count_tokens", "error_body", "message_object",
           "sse_events", "translate_request"]
