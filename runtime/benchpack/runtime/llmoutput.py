"""What a backend answered, made uniform (`normalize_output`): an OpenAI `chat.completion`, a
litellm response, an assistant message dict or plain text all become one assistant message,
token counts, cost and finish reason; tool-call arguments are parsed (`parse_arguments`) and
malformed ones kept visible (`malformed_arguments`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from .types import ToolCall


def normalize_model(model: str) -> str:
    """`litellm:<model>` → `<model>`; a bare name is returned as is."""
    return model[len("litellm:"):] if model.startswith("litellm:") else model


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments → dict. Empty → `{}`; not a JSON object → `{"_raw": raw}`."""
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    text = raw if isinstance(raw, str) else str(raw)
    try:
        value = json.loads(text)
    except ValueError:
        return {"_raw": text}
    return value if isinstance(value, dict) else {"_raw": text}


def malformed_arguments(args: dict[str, Any]) -> str | None:
    """The raw argument string when `parse_arguments` could not parse it, else None."""
    raw = args.get("_raw")
    return raw if len(args) == 1 and isinstance(raw, str) else None


# --------------------------------------------------------------------------- normalisation


def usage_numbers(usage: Any) -> tuple[int, int]:
    if usage is None:
        return 0, 0
    def get(k: str) -> Any:
        return usage.get(k) if isinstance(usage, dict) else getattr(usage, k, None)

    return int(get("prompt_tokens") or 0), int(get("completion_tokens") or 0)


def _normalize_tool_calls(calls: Iterable[Any], message: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    salt: str | None = None  # for calls without an id; serialising the message is not free
    for i, tc in enumerate(calls):
        if not isinstance(tc, dict):
            raise ValueError(f"tool call {i} is not an object")
        fn: dict[str, Any] = tc["function"] if isinstance(tc.get("function"), dict) else tc
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"tool call {i} has no function name")
        args = fn.get("arguments", fn.get("args"))
        if args is None:
            args = ""
        elif not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        call_id = tc.get("id")
        if not call_id:
            if salt is None:
                salt = hashlib.sha256(json.dumps(message, default=str).encode()).hexdigest()
            call_id = f"call_{salt[:8]}_{i}"
        out.append({"id": str(call_id), "type": "function",
                    "function": {"name": name, "arguments": args}})
    return out


def normalize_output(out: Any) -> tuple[dict[str, Any], int, int, float | None, str | None]:
    """A backend's (or the cache's) answer → (assistant message, prompt tokens, completion
    tokens, cost, finish reason). Raises ValueError for a shape it cannot use."""
    if isinstance(out, str):
        return {"role": "assistant", "content": out}, 0, 0, None, "stop"
    if not isinstance(out, dict):
        raise ValueError(f"backend returned {type(out).__name__}, expected str or dict")
    finish = out.get("finish_reason")
    if isinstance(out.get("choices"), list):  # an OpenAI chat.completion
        if not out["choices"] or not isinstance(out["choices"][0], dict):
            raise ValueError("the response has no choices")
        choice = out["choices"][0]
        message, finish = choice.get("message"), choice.get("finish_reason")
    elif "message" in out:
        message = out["message"]
    else:
        message = out
    if not isinstance(message, dict):
        raise ValueError("the response has no assistant message")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False, default=str)
    raw: dict[str, Any] = {"role": "assistant", "content": content}
    calls = message.get("tool_calls") or []
    if calls:
        raw["tool_calls"] = _normalize_tool_calls(calls, message)
    pt, ct = usage_numbers(out.get("usage"))
    cost = out.get("cost")
    return raw, pt, ct, (float(cost) if isinstance(cost, int | float) else None), \
        (str(finish) if finish is not None else None)


def tool_calls_of(raw: dict[str, Any]) -> list[ToolCall]:
    return [ToolCall(id=tc["id"], name=tc["function"]["name"],
                     args=parse_arguments(tc["function"]["arguments"]))
            for tc in raw.get("tool_calls") or []]


# --------------------------------------------------------------------------- errors
