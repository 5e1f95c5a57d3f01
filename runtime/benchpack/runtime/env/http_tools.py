"""HTTP tools: one tool call = one HTTP request to a process service (`processes.py`).

`call_http` fills the request from the tool's `HttpImpl` and the agent's arguments (rules in the
`HttpImpl` docstring), sends it over the service's Unix socket, and returns the record the tool
call stores: `{"request": {method, path, query, body}, "response": {status, headers, body,
truncated}}`. The body is JSON when the service says so and it parses, else text, cut at
`max_response_chars` (only that much is ever read, whatever the service sends). Anything but a
2xx answer, a timeout or an unreachable service is an `HttpToolError` (a `ToolError`: the agent
sees the message) that also carries the request and the response.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, Protocol
from urllib.parse import quote

import httpx

from benchpack.specs.services import HttpImpl

from .errors import ToolError

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
KEPT_HEADERS = ("content-type", "location", "retry-after")
ERROR_EXCERPT_CHARS = 500
_ABSENT = object()


class HttpService(Protocol):
    """What `call_http` needs of a service (`processes.ServiceProcess` is one)."""

    name: str

    @property
    def running(self) -> bool: ...

    def describe_exit(self) -> str: ...

    def stream(self, method: str, path: str, *, params: Any = None, json_body: Any = None,
               headers: dict[str, str] | None = None, timeout_s: float = 30.0) -> Any: ...


class HttpToolError(ToolError):
    """A failed HTTP tool call; `request` and `response` (None when there was no answer) are
    the same shapes as a successful call's record."""

    def __init__(self, message: str, request: dict[str, Any],
                 response: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.request = request
        self.response = response

    def record(self) -> dict[str, Any]:
        return {"request": self.request, "response": self.response}


# --------------------------------------------------------------------------- filling templates


def placeholders(template: Any) -> set[str]:
    """Every `{name}` used anywhere in a template (string, list, dict keys' values)."""
    if isinstance(template, str):
        return set(PLACEHOLDER.findall(template))
    if isinstance(template, dict):
        return set().union(*(placeholders(v) for v in template.values())) if template else set()
    if isinstance(template, list):
        return set().union(*(placeholders(v) for v in template)) if template else set()
    return set()


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def fill(template: Any, args: dict[str, Any]) -> Any:
    """The template with arguments in; `_ABSENT` if it needs an argument that was not given
    (dict entries and list items that are absent are left out)."""
    if isinstance(template, str):
        whole = PLACEHOLDER.fullmatch(template)
        if whole:
            return args.get(whole.group(1), _ABSENT)
        missing = [n for n in PLACEHOLDER.findall(template) if n not in args]
        if missing:
            return _ABSENT
        return PLACEHOLDER.sub(lambda m: _as_text(args[m.group(1)]), template)
    if isinstance(template, dict):
        out = {}
        for key, sub in template.items():
            value = fill(sub, args)
            if value is not _ABSENT:
                out[key] = value
        return out
    if isinstance(template, list):
        return [v for v in (fill(t, args) for t in template) if v is not _ABSENT]
    return template


def fill_path(template: str, args: dict[str, Any]) -> str:
    """`/orders/{order_id}` with each argument URL-escaped as one path segment (so `../x` or
    `a/b` stay inside their segment)."""
    missing = [n for n in PLACEHOLDER.findall(template) if args.get(n) is None]
    if missing:
        raise ToolError(f"missing argument `{missing[0]}` (it is part of the path "
                        f"{template}); give it and call again")
    return PLACEHOLDER.sub(lambda m: quote(_as_text(args[m.group(1)]), safe=""), template)


def _query_items(query: dict[str, Any]) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    for key, value in query.items():
        for v in value if isinstance(value, list) else [value]:
            if v is None:
                continue
            items.append((key, "true" if v is True else "false" if v is False else _as_text(v)))
    return items


def build_request(impl: HttpImpl, args: dict[str, Any]) -> dict[str, Any]:
    """The request a call makes: `{method, path, query, body}` (query a dict, body JSON or
    None)."""
    path = fill_path(impl.path, args)
    query: dict[str, Any] = {}
    body: Any = None
    if impl.query is None and impl.body is None:
        rest = {k: v for k, v in args.items() if k not in placeholders(impl.path)}
        if impl.method in ("GET", "DELETE"):
            query = rest
        elif rest:
            body = rest
    else:
        if impl.query is not None:
            query = fill(impl.query, args)
        if impl.body is not None:
            filled = fill(impl.body, args)
            body = None if filled is _ABSENT else filled
    return {"method": impl.method, "path": path, "query": query, "body": body}


# --------------------------------------------------------------------------- the call


def _decode(raw: bytes, content_type: str, limit: int,
            cut: bool) -> tuple[Any, bool]:
    text = raw.decode("utf-8", "replace")
    if "json" in content_type.lower() and not cut:
        try:
            return json.loads(text), False
        except ValueError:
            pass
    if len(text) > limit:
        return text[:limit], True
    return text, cut


async def _send(service: HttpService, impl: HttpImpl,
                request: dict[str, Any]) -> tuple[int, dict[str, str], Any, bool]:
    limit = impl.max_response_chars
    cap = limit * 4 + 1  # enough bytes for `limit` characters of any UTF-8 text
    async with service.stream(request["method"], request["path"],
                              params=_query_items(request["query"]) or None,
                              json_body=request["body"], headers=impl.headers or None,
                              timeout_s=impl.timeout_s) as resp:
        buf = bytearray()
        cut = False
        async for chunk in resp.aiter_bytes():
            buf += chunk
            if len(buf) >= cap:
                cut = True
                del buf[cap:]
                break
        headers = {k: v for k in KEPT_HEADERS if (v := resp.headers.get(k)) is not None}
        body, truncated = _decode(bytes(buf), resp.headers.get("content-type", ""), limit, cut)
        return resp.status_code, headers, body, truncated


async def call_http(service: HttpService, impl: HttpImpl,
                    arguments: dict[str, Any]) -> dict[str, Any]:
    """Run one HTTP tool call; returns its record or raises `HttpToolError`/`ToolError`."""
    request = build_request(impl, arguments)
    where = f"{request['method']} {request['path']} on service `{service.name}`"
    if not service.running:
        raise HttpToolError(f"{where} failed: {service.describe_exit()}", request)
    try:
        # httpx's timeout is per read; a service trickling bytes must not outlive the limit
        status, headers, body, truncated = await asyncio.wait_for(
            _send(service, impl, request), impl.timeout_s)
    except (TimeoutError, httpx.TimeoutException):
        raise HttpToolError(f"{where} timed out after {impl.timeout_s:g} s", request) from None
    except httpx.HTTPError as exc:
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if not service.running:
            why = service.describe_exit()
        raise HttpToolError(f"{where} failed: the service is not reachable ({why})",
                            request) from None
    response = {"status": status, "headers": headers, "body": body, "truncated": truncated}
    if not 200 <= status < 300:
        excerpt = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
        if len(excerpt) > ERROR_EXCERPT_CHARS:
            excerpt = excerpt[:ERROR_EXCERPT_CHARS] + "…"
        raise HttpToolError(f"{where} answered HTTP {status}: {excerpt}", request, response)
    return {"request": request, "response": response}
