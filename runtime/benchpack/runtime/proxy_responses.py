"""OpenAI's Responses API on the recording proxy (`POST …/v1/responses`), for harnesses that
speak nothing else (Codex CLI ≥ 0.1xx): a request is translated into one Chat Completions call
through the run's `LLMClient` (so it is cached, rate-limited, budgeted and recorded like any
other), and the answer back into a `response` object, or its server-sent events.

Translation, request side:

- `instructions` → a leading system message; input `message` items keep their role
  (`developer` becomes `system`); text parts are joined, image parts become `image_url` parts.
- `function_call` / `custom_tool_call` items → the assistant message's `tool_calls` (consecutive
  calls share one assistant message); `function_call_output` / `custom_tool_call_output` → `tool`
  messages. A custom (free-form) tool is offered as a function with one string parameter
  `input`, and its call comes back as a `custom_tool_call` again.
- `namespace` tools (Codex groups MCP and sub-agent tools so) are flattened to functions named
  `<namespace>__<name>` (Chat Completions has no namespaces); a call comes back with `name`
  and `namespace` apart.
- `reasoning` items are dropped: their content is encrypted for the provider that made them,
  and a Chat Completions backend has no field for them. Other tool types (`web_search`,
  `local_shell`, `image_generation`…) are not offered: the backend could not run them.
- `previous_response_id` is refused: the proxy stores nothing between calls (Codex sends the
  whole history with `store: false`).

Answer side: reasoning text the backend returned (`reasoning_content`) → a `reasoning` item,
content → a `message` item, tool calls → `function_call` (or `custom_tool_call`) items; usage
is the provider's (`input_tokens`, `output_tokens`); `finish_reason: length` → status
`incomplete`. Streaming replays the one upstream answer as the event sequence the SDKs and Codex
read (`response.created` … `response.output_item.done` … `response.completed`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

NAMESPACE_SEP = "__"

PARAMS = {"temperature": "temperature", "top_p": "top_p", "max_output_tokens": "max_tokens",
          "parallel_tool_calls": "parallel_tool_calls", "user": "user"}
"""Responses field → Chat Completions parameter, forwarded when set."""


class RequestError(ValueError):
    """A request the proxy cannot translate: HTTP 400 with this message."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass
class Translated:
    """A Responses request as one Chat Completions call, and what is needed to answer it."""

    model: str | None
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    params: dict[str, Any]
    seed: int | None
    stream: bool
    custom: set[str] = field(default_factory=set)
    """Names (as offered upstream) of free-form tools, answered as `custom_tool_call`."""
    namespaced: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Flattened name → (namespace, name)."""
    echo: dict[str, Any] = field(default_factory=dict)
    """Request fields a response object repeats (`tools`, `tool_choice`, `instructions`…)."""


# --------------------------------------------------------------------------- request


def _text_of(content: Any, where: str) -> str | list[dict[str, Any]]:
    """A message's content → a string, or Chat Completions parts when it holds images."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise RequestError(f"{where}: `content` must be a string or a list of parts", where)
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, dict):
            raise RequestError(f"{where}: every content part must be an object", where)
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text", "summary_text", "refusal"):
            text = str(part.get("text", part.get("refusal", "")))
            texts.append(text)
            parts.append({"type": "text", "text": text})
        elif kind == "input_image":
            url = part.get("image_url") or part.get("file_id")
            if url:
                parts.append({"type": "image_url", "image_url": {"url": url}})
        # other parts (input_file, audio) have no Chat Completions equivalent here
    if len(parts) == len(texts):
        return "".join(texts)
    return parts


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(str(p.get("text", "")) for p in output
                       if isinstance(p, dict) and p.get("type") in ("input_text", "output_text",
                                                                     "text"))
    return json.dumps(output, ensure_ascii=False)


def _tools(spec: Any, out: Translated) -> list[dict[str, Any]]:
    if spec is None:
        return []
    if not isinstance(spec, list):
        raise RequestError("`tools` must be a list", "tools")
    tools: list[dict[str, Any]] = []

    def add(tool: dict[str, Any], namespace: str | None) -> None:
        kind, name = tool.get("type"), tool.get("name")
        if kind == "namespace" and namespace is None and isinstance(name, str):
            for inner in tool.get("tools") or []:
                if isinstance(inner, dict):
                    add(inner, name)
            return
        if kind not in ("function", "custom") or not isinstance(name, str) or not name:
            return  # hosted tools (web_search, local_shell…): nothing upstream could run them
        flat = f"{namespace}{NAMESPACE_SEP}{name}" if namespace else name
        if namespace:
            out.namespaced[flat] = (namespace, name)
        if kind == "custom":
            out.custom.add(flat)
            params: Any = {"type": "object", "properties": {"input": {
                "type": "string", "description": "the tool's free-form input"}},
                "required": ["input"]}
        else:
            params = tool.get("parameters") or {"type": "object", "properties": {}}
        fn: dict[str, Any] = {"name": flat, "parameters": params}
        if tool.get("description"):
            fn["description"] = tool["description"]
        tools.append({"type": "function", "function": fn})

    for tool in spec:
        if isinstance(tool, dict):
            add(tool, None)
    return tools


def _call_name(item: dict[str, Any]) -> str:
    name = str(item.get("name") or "")
    namespace = item.get("namespace")
    return f"{namespace}{NAMESPACE_SEP}{name}" if namespace else name


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    if not isinstance(items, list):
        raise RequestError("`input` must be a string or a list of items", "input")
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise RequestError(f"{where} must be an object", "input")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role", "user")
            role = "system" if role == "developer" else role
            if role not in ("system", "user", "assistant"):
                raise RequestError(f"{where}: unknown role {role!r}", "input")
            messages.append({"role": role, "content": _text_of(item.get("content"), where)})
        elif kind in ("function_call", "custom_tool_call"):
            args = item.get("arguments", "") if kind == "function_call" else \
                json.dumps({"input": item.get("input", "")}, ensure_ascii=False)
            call = {"id": str(item.get("call_id") or item.get("id") or f"call_{i}"),
                    "type": "function",
                    "function": {"name": _call_name(item), "arguments": args or "{}"}}
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind in ("function_call_output", "custom_tool_call_output"):
            messages.append({"role": "tool", "tool_call_id": str(item.get("call_id") or ""),
                             "content": _output_text(item.get("output"))})
        elif kind == "item_reference":
            raise RequestError(f"{where}: item references need stored responses; the benchpack "
                               "proxy stores none (send the items themselves)", "input")
        # reasoning, web_search_call, compaction…: nothing a Chat Completions backend reads
    return messages


def _tool_choice(choice: Any, out: Translated) -> Any:
    if choice is None or isinstance(choice, str):
        return choice
    if isinstance(choice, dict) and choice.get("type") in ("function", "custom"):
        return {"type": "function", "function": {"name": _call_name(choice)}}
    return None  # allowed_tools / hosted-tool choices: leave the choice to the model


def translate_request(body: dict[str, Any]) -> Translated:
    """A Responses request body → one Chat Completions call. Raises `RequestError`."""
    if body.get("previous_response_id"):
        raise RequestError("`previous_response_id` is not supported: the benchpack proxy "
                           "stores no responses (send the whole input, as with store=false)",
                           "previous_response_id")
    model = body.get("model")
    out = Translated(model=model if isinstance(model, str) and model else None, messages=[],
                     tools=None, params={}, seed=None, stream=bool(body.get("stream")))
    out.messages = _messages(body)
    if not out.messages:
        raise RequestError("`input` is empty", "input")
    out.tools = _tools(body.get("tools"), out) or None
    for key, param in PARAMS.items():
        if body.get(key) is not None:
            out.params[param] = body[key]
    choice = _tool_choice(body.get("tool_choice"), out)
    if choice is not None and out.tools:
        out.params["tool_choice"] = choice
    if not out.tools:
        out.params.pop("parallel_tool_calls", None)
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and isinstance(reasoning.get("effort"), str):
        out.params["reasoning_effort"] = reasoning["effort"]
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        out.params["response_format"] = {"type": "json_schema", "json_schema": {
            k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}}
    elif isinstance(fmt, dict) and fmt.get("type") == "json_object":
        out.params["response_format"] = {"type": "json_object"}
    if isinstance(body.get("seed"), int):
        out.seed = body["seed"]
    out.echo = {k: body.get(k) for k in ("instructions", "tools", "tool_choice",
                                          "parallel_tool_calls", "temperature", "top_p",
                                          "max_output_tokens", "reasoning", "text", "store",
                                          "metadata")}
    return out


# --------------------------------------------------------------------------- answer


def output_items(call: Translated, message: dict[str, Any], ident: str) -> list[dict[str, Any]]:
    """The assistant message → Responses output items (reasoning, message, tool calls)."""
    items: list[dict[str, Any]] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        items.append({"type": "reasoning", "id": f"rs_{ident}", "status": "completed",
                      "summary": [{"type": "summary_text", "text": reasoning}]})
    content = message.get("content")
    if isinstance(content, str) and content:
        items.append({"type": "message", "id": f"msg_{ident}", "role": "assistant",
                      "status": "completed",
                      "content": [{"type": "output_text", "text": content, "annotations": [],
                                   "logprobs": []}]})
    for i, tc in enumerate(message.get("tool_calls") or []):
        flat = tc["function"]["name"]
        namespace, name = call.namespaced.get(flat, (None, flat))
        item: dict[str, Any]
        if flat in call.custom:
            try:
                text = json.loads(tc["function"]["arguments"] or "{}").get("input", "")
            except (ValueError, AttributeError):
                text = tc["function"]["arguments"]
            item = {"type": "custom_tool_call", "id": f"ctc_{ident}_{i}", "call_id": tc["id"],
                    "name": name, "input": str(text), "status": "completed"}
        else:
            item = {"type": "function_call", "id": f"fc_{ident}_{i}", "call_id": tc["id"],
                    "name": name, "arguments": tc["function"]["arguments"],
                    "status": "completed"}
        if namespace:
            item["namespace"] = namespace
        items.append(item)
    return items


def usage_of(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {"input_tokens": prompt_tokens, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt_tokens + completion_tokens}


def response_object(call: Translated, *, ident: str, model: str, created: int,
                    items: list[dict[str, Any]], usage: dict[str, Any] | None,
                    finish: str | None, status: str | None = None) -> dict[str, Any]:
    incomplete = finish == "length"
    body: dict[str, Any] = {
        "id": f"resp_{ident}", "object": "response", "created_at": created,
        "status": status or ("incomplete" if incomplete else "completed"), "model": model,
        "output": items, "usage": usage, "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete and status is None
        else None}
    for key, value in call.echo.items():
        body[key] = value if value is not None else {
            "tools": [], "tool_choice": "auto", "parallel_tool_calls": True,
            "metadata": {}, "store": False}.get(key)
    return body


def sse_events(call: Translated, final: dict[str, Any]) -> Iterator[str]:
    """The whole answer as Responses server-sent events, in the order the SDKs read them."""
    seq = 0

    def event(kind: str, **data: Any) -> str:
        nonlocal seq
        payload = {"type": kind, "sequence_number": seq, **data}
        seq += 1
        return f"event: {kind}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n"

    opening = {**final, "status": "in_progress", "output": [], "usage": None,
               "incomplete_details": None}
    yield event("response.created", response=opening)
    yield event("response.in_progress", response=opening)
    for index, item in enumerate(final["output"]):
        kind = item["type"]
        if kind == "message":
            yield event("response.output_item.added", output_index=index,
                        item={**item, "status": "in_progress", "content": []})
            for ci, part in enumerate(item["content"]):
                ids = {"item_id": item["id"], "output_index": index, "content_index": ci}
                yield event("response.content_part.added", **ids,
                            part={**part, "text": ""})
                yield event("response.output_text.delta", **ids, delta=part["text"],
                            logprobs=[])
                yield event("response.output_text.done", **ids, text=part["text"],
                            logprobs=[])
                yield event("response.content_part.done", **ids, part=part)
        elif kind == "reasoning":
            yield event("response.output_item.added", output_index=index,
                        item={**item, "status": "in_progress", "summary": []})
            for si, part in enumerate(item["summary"]):
                ids = {"item_id": item["id"], "output_index": index, "summary_index": si}
                yield event("response.reasoning_summary_part.added", **ids,
                            part={**part, "text": ""})
                yield event("response.reasoning_summary_text.delta", **ids, delta=part["text"])
                yield event("response.reasoning_summary_text.done", **ids, text=part["text"])
                yield event("response.reasoning_summary_part.done", **ids, part=part)
        elif kind == "function_call":
            yield event("response.output_item.added", output_index=index,
                        item={**item, "status": "in_progress", "arguments": ""})
            ids = {"item_id": item["id"], "output_index": index}
            yield event("response.function_call_arguments.delta", **ids,
                        delta=item["arguments"])
            yield event("response.function_call_arguments.done", **ids,
                        arguments=item["arguments"], name=item["name"])
        else:  # custom_tool_call
            yield event("response.output_item.added", output_index=index,
                        item={**item, "status": "in_progress", "input": ""})
            ids = {"item_id": item["id"], "output_index": index}
            yield event("response.custom_tool_call_input.delta", **ids, delta=item["input"])
            yield event("response.custom_tool_call_input.done", **ids, input=item["input"])
        yield event("response.output_item.done", output_index=index, item=item)
    done = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    yield event(done, response=final)


__all__ = ["NAMESPACE_SEP", "RequestError", "Translated", "output_items",
           "response_object", "sse_events", "translate_request", "usage_of"]
