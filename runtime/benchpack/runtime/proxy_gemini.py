"""Google's Gemini API on the recording proxy (`POST …/v1beta/models/<model>:generateContent`
and `:streamGenerateContent`), for harnesses that speak nothing else (Gemini CLI, with
`GOOGLE_GEMINI_BASE_URL` = the route's root): a request is translated into one Chat
Completions call through the run's `LLMClient`, and the answer back.

Request side: `systemInstruction` → a leading system message; `contents` (`user` / `model`
turns of parts) → messages: `text` parts joined (parts marked `thought` dropped), `inlineData`
images → `image_url` parts, `functionCall` parts → the assistant's `tool_calls` (their `id`,
or one made up and matched by name), `functionResponse` parts → `tool` messages answering the
earliest open call of that name. `tools[].functionDeclarations` → functions (`parameters` in
Gemini's OpenAPI dialect has its upper-case types lowered; `parametersJsonSchema` is taken as
is); built-in tools (`googleSearch`, `codeExecution`…) are not offered. `toolConfig`
`AUTO`/`ANY`/`NONE` → `auto`/`required`/`none` (one allowed function → that function);
`generationConfig` temperature, topP, maxOutputTokens, stopSequences, and a JSON response
schema → `response_format`.

Answer side: content → a `text` part, tool calls → `functionCall` parts (`name`, `args`, `id`);
`finishReason` `STOP` or `MAX_TOKENS`; `usageMetadata` is the provider's usage. Streaming (`alt=sse`)
sends the one answer as one event. `:countTokens` is an estimate (4 characters a token) and
calls no model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
          404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 502: "UNAVAILABLE",
          503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


class RequestError(ValueError):
    """A request the proxy cannot translate: HTTP 400 with this message."""


@dataclass
class Translated:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    params: dict[str, Any]


def error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message,
                      "status": STATUS.get(status, "UNKNOWN")}}


def _lower_types(schema: Any) -> Any:
    """Gemini's OpenAPI-dialect schema (`"type": "OBJECT"`) → JSON Schema (`"object"`)."""
    if isinstance(schema, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v))
                for k, v in schema.items()}
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


def _tools(spec: Any) -> list[dict[str, Any]]:
    if spec is None:
        return []
    if not isinstance(spec, list):
        raise RequestError("`tools` must be a list")
    tools = []
    for group in spec:
        decls = group.get("functionDeclarations") if isinstance(group, dict) else None
        for decl in decls or []:  # groups without any are built-in tools: not offered
            if not isinstance(decl, dict) or not decl.get("name"):
                continue
            params = decl.get("parametersJsonSchema") or _lower_types(
                decl.get("parameters") or {"type": "object", "properties": {}})
            fn: dict[str, Any] = {"name": str(decl["name"]), "parameters": params}
            if decl.get("description"):
                fn["description"] = decl["description"]
            tools.append({"type": "function", "function": fn})
    return tools


def _content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]] | None:
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part.get("text"), str) and not part.get("thought"):
            out.append({"type": "text", "text": part["text"]})
        elif isinstance(part.get("inlineData"), dict):
            data = part["inlineData"]
            out.append({"type": "image_url", "image_url": {
                "url": f"data:{data.get('mimeType', 'image/png')};base64,{data.get('data', '')}"}})
    if not out:
        return None
    if all(p["type"] == "text" for p in out):
        return "".join(p["text"] for p in out)
    return out


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise RequestError("`contents` must be a non-empty list")
    messages: list[dict[str, Any]] = []
    system = body.get("systemInstruction")
    if isinstance(system, dict):
        text = _content([p for p in system.get("parts") or [] if isinstance(p, dict)])
        if text:
            messages.append({"role": "system", "content": text})
    elif isinstance(system, str) and system:
        messages.append({"role": "system", "content": system})
    open_calls: list[tuple[str, str]] = []  # (name, id) not answered yet, oldest first
    for i, turn in enumerate(contents):
        if not isinstance(turn, dict) or not isinstance(turn.get("parts"), list):
            raise RequestError(f"contents[{i}] must be an object with `parts`")
        parts = [p for p in turn["parts"] if isinstance(p, dict)]
        if turn.get("role", "user") == "model":
            calls = []
            for k, part in enumerate(parts):
                call = part.get("functionCall")
                if isinstance(call, dict) and call.get("name"):
                    ident = str(call.get("id") or f"call_{i}_{k}")
                    open_calls.append((str(call["name"]), ident))
                    calls.append({"id": ident, "type": "function", "function": {
                        "name": str(call["name"]),
                        "arguments": json.dumps(call.get("args") or {}, ensure_ascii=False)}})
            msg: dict[str, Any] = {"role": "assistant", "content": _content(parts)}
            if calls:
                msg["tool_calls"] = calls
            if msg["content"] is not None or calls:
                messages.append(msg)
            continue
        for part in parts:
            response = part.get("functionResponse")
            if not isinstance(response, dict):
                continue
            name = str(response.get("name", ""))
            answers = response.get("id")
            match = next((c for c in open_calls if (answers and c[1] == answers) or
                          (not answers and c[0] == name)), None)
            if match is not None:
                open_calls.remove(match)
            result = response.get("response")
            messages.append({"role": "tool", "tool_call_id": match[1] if match else
                             str(answers or name),
                             "content": result if isinstance(result, str) else
                             json.dumps(result, ensure_ascii=False)})
        rest = _content(parts)
        if rest is not None:
            messages.append({"role": "user", "content": rest})
    return messages


def translate_request(body: dict[str, Any]) -> Translated:
    """A generateContent body → one Chat Completions call. Raises `RequestError`."""
    out = Translated(messages=_messages(body), tools=_tools(body.get("tools")) or None,
                     params={})
    config = body.get("generationConfig") or {}
    if isinstance(config, dict):
        for key, param in (("temperature", "temperature"), ("topP", "top_p"),
                           ("maxOutputTokens", "max_tokens"), ("stopSequences", "stop")):
            if config.get(key) is not None:
                out.params[param] = config[key]
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if isinstance(schema, dict):
            out.params["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "response", "schema": _lower_types(schema)}}
        elif config.get("responseMimeType") == "application/json":
            out.params["response_format"] = {"type": "json_object"}
    calling = ((body.get("toolConfig") or {}).get("functionCallingConfig") or {}) \
        if isinstance(body.get("toolConfig"), dict) else {}
    mode = str(calling.get("mode", "")).upper()
    allowed = calling.get("allowedFunctionNames") or []
    if out.tools and mode in ("AUTO", "ANY", "NONE", "VALIDATED"):
        out.params["tool_choice"] = (
            {"type": "function", "function": {"name": allowed[0]}}
            if mode == "ANY" and len(allowed) == 1 else
            {"AUTO": "auto", "VALIDATED": "auto", "ANY": "required", "NONE": "none"}[mode])
    return out


def count_tokens(body: dict[str, Any]) -> int:
    inner = body.get("generateContentRequest") or body
    text = json.dumps([inner.get("systemInstruction"), inner.get("contents"),
                       inner.get("tools")], ensure_ascii=False)
    return max(1, len(text) // 4)


def response_object(message: dict[str, Any], *, model: str, ident: str, finish: str | None,
                    prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if isinstance(message.get("content"), str) and message["content"]:
        parts.append({"text": message["content"]})
    for tc in message.get("tool_calls") or []:
        try:
            args = json.loads(tc["function"]["arguments"] or "{}")
        except ValueError:
            args = {"_raw": tc["function"]["arguments"]}
        parts.append({"functionCall": {"name": tc["function"]["name"], "id": tc["id"],
                                       "args": args if isinstance(args, dict) else
                                       {"_raw": args}}})
    return {
        "candidates": [{"content": {"role": "model", "parts": parts or [{"text": ""}]},
                        "finishReason": "MAX_TOKENS" if finish == "length" else "STOP",
                        "index": 0}],
        "usageMetadata": {"promptTokenCount": prompt_tokens,
                          "candidatesTokenCount": completion_tokens,
                          "totalTokenCount": prompt_tokens + completion_tokens},
        "modelVersion": model, "responseId": ident}


def sse_events(final: dict[str, Any]) -> Iterator[str]:
    yield f"data: {json.dumps(final, ensure_ascii=False)}\n\n"


__all__ = ["RequestError", "Translated", "count_tokens", "error_body", "response_object",
           "sse_events", "translate_request"]
