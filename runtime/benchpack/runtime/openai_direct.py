"""The direct path for OpenAI chat completions: `openai/<model>` POSTed with aiohttp instead of
through `litellm.acompletion`, on two routes (`direct_route`):

- unpriced: a model litellm has no price for, at an `api_base` (a local or self-hosted server,
  the usual `--api-base` case). No cost, as through litellm, unless the answer names a model
  litellm prices (it prices the answer's model then, and so does this path).
- priced (issue 31): one of OpenAI's chat models in litellm's price map, with only
  `LEAN_PARAMS` (a reasoning model, whose parameters litellm rewrites: only `REASONING_PARAMS`,
  and an o-series model's system messages sent as user messages, as litellm sends them), at an
  `api_base` or at OpenAI's (resolved from the environment as litellm does). The cost is litellm's over the
  answer: computed from its bundled price map where the arithmetic is plain (`openai_prices`,
  tested entry by entry against litellm), by litellm itself otherwise.

Measured against the local fake server (benchmarks/litellm_overhead.py, http_bench.py):
litellm costs 2.6-7.6 ms of client CPU per call over a plain HTTP POST (a thread hop per call,
pydantic response objects, post-call logging tasks on the event loop), and importing it costs
seconds before the first call (neither route imports it unless a price is not plain).
This path POSTs the same JSON body with aiohttp and reads the answer as a dict, so
`normalize_output` does the rest.

Why aiohttp and not httpx: httpcore's pool matches every waiting request against every
connection on each change (`_assign_requests_to_connections`), so at 64 requests in flight a
call cost 4 ms of client CPU against the fake server, half of a whole session's, and 1,000
one-call sessions ran at 9 % of the latency-bound ideal. aiohttp (already installed with
litellm, which uses it for its own async HTTP) costs 0.15-0.3 ms per call at any concurrency
(measured side by side, benchmarks/http_bench.py). Plain `http://` endpoints take it too: a
hand-written HTTP/1.1 client for them cost ~0.065 ms a call, but the same client on h11 (a
well-kept parser instead of our own) cost 0.140 ms against aiohttp's 0.147
(benchmarks/client_bench.py), so it went (issue 31).

What stays identical to litellm's path, by construction and tested model by model
(tests/runtime/test_openai_direct.py): the request body (the model name without `openai/`,
messages, tools, seed, params), the recorded tokens, and the cost. Retries, timeouts, the cache,
rate limits and redaction live in `LLMClient` and are the same for both paths; failures raise
exceptions `is_retryable`/`retry_after_s` read by status code and headers, as they read
litellm's. `BENCH_LITELLM_ONLY=1` (or `LLMConfig(direct_openai=False)`) sends everything
through litellm.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import importlib.util
import json
import os
import sys
import weakref
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from benchpack.specs.limits import MODEL_REPLY_BYTES

from .limits import reply_refusal
from .llm import BackendRequest, LLMError, import_litellm
from .openai_prices import UNSURE, lean_cost

PREFIX = "openai/"
_PRICES = "model_prices_and_context_window_backup.json"


@functools.lru_cache(maxsize=64)  # every call of a run asks about the same URL
def _without_credentials(url: str) -> tuple[str, str | None]:
    """(`url` without `user:password@`, the Basic authorization they stand for or None):
    aiohttp refuses a URL with credentials next to an Authorization header (every call of an
    `--api-base` with a password failed)."""
    import base64
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
    pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
    return (urlunsplit(parts._replace(netloc=netloc)),
            "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii"))


async def _read_capped(resp: Any) -> bytes:
    """The body, refused past `model_reply_bytes` (an announced size at once, else where
    reading crosses it): a 2 GB answer read whole, parsed and kept in the history cost
    gigabytes before anything looked at its size (issue 27)."""
    limit = MODEL_REPLY_BYTES.value  # read once a call: an environment lookup each time
    length = resp.content_length
    if length is not None and length > limit:
        raise LLMError(str(reply_refusal(length)), retryable=False)
    buf = bytearray()
    async for chunk in resp.content.iter_chunked(1 << 16):
        buf += chunk
        if len(buf) > limit:
            raise LLMError(str(reply_refusal(len(buf), known=False)), retryable=False)
    return bytes(buf)


class OpenAICompatError(Exception):
    """A non-2xx answer: `status_code` and the response `headers` (Retry-After) for the
    client's retry decision."""

    def __init__(self, status_code: int, body: str, headers: dict[str, str]) -> None:
        super().__init__(f"Error code: {status_code} - {body[:500]}")
        self.status_code = status_code
        self.headers = headers


_price_table: dict[str, Any] | None = None


def _prices() -> dict[str, Any]:
    """litellm's price map, model name → entry: its in-process map when something already
    imported litellm (and may have registered more), else its bundled file read once (the map
    benchpack makes it use) without importing litellm."""
    global _price_table
    loaded = sys.modules.get("litellm")
    if loaded is not None and isinstance(getattr(loaded, "model_cost", None), dict):
        return loaded.model_cost  # type: ignore[no-any-return]
    if _price_table is None:
        table: dict[str, Any] = {}
        spec = importlib.util.find_spec("litellm")
        for loc in (spec.submodule_search_locations or []) if spec else []:
            path = Path(loc) / _PRICES
            if path.is_file():
                table = json.loads(path.read_text(encoding="utf-8"))
                break
        _price_table = table
    return _price_table


LEAN_PARAMS = frozenset({
    "temperature", "top_p", "max_tokens", "stop", "n", "presence_penalty", "frequency_penalty",
    "tool_choice", "parallel_tool_calls", "response_format", "logit_bias", "user", "logprobs",
    "top_logprobs"})
"""The request parameters a priced model may take the lean path with: ones litellm passes to
OpenAI's chat completions unchanged for a non-reasoning chat model (tested body for body). Any
other (`service_tier`, which changes the price; `reasoning_effort`; provider extras) goes
through litellm."""

OPENAI_BASE = "https://api.openai.com/v1"
_ACCOUNT_ENV = ("OPENAI_ORGANIZATION", "OPENAI_PROJECT", "OPENAI_API_VERSION")
"""Set, they make litellm send headers or versions of its own: such calls stay with litellm."""


REASONING_PARAMS = frozenset({"tool_choice"})
"""The parameters a reasoning model may take the lean path with: litellm rewrites or refuses
most others for them (`max_tokens` → `max_completion_tokens`, any temperature but 1 refused,
`top_p`, `parallel_tool_calls`, penalties refused by the o-series, `reasoning_effort` checked
against the model's levels); `tool_choice` it passes as given (tested body for body, every
reasoning chat model of the map)."""


def _openai_chat(entry: Any) -> bool:
    return (isinstance(entry, dict) and entry.get("litellm_provider") == "openai"
            and entry.get("mode") == "chat")


def _lean_params(entry: dict[str, Any], req: BackendRequest) -> bool:
    """`req`'s parameters are ones litellm sends unchanged for this model: `LEAN_PARAMS` for a
    plain chat model; for a reasoning model `REASONING_PARAMS`, and tools only where the map
    says it calls functions (litellm refuses them otherwise)."""
    if not entry.get("supports_reasoning"):
        return LEAN_PARAMS.issuperset(req.params)
    return REASONING_PARAMS.issuperset(req.params) and (
        not (req.tools or req.params) or entry.get("supports_function_calling") is True)


def _system_as_user(model: str, entry: dict[str, Any]) -> bool:
    """litellm sends this model's system messages as user messages: an o-series model
    (`o` and a digit, as litellm's `is_model_o_series_model`) whose map entry does not say it
    takes system messages (o3, o4-mini)."""
    return (len(model) > 1 and model[0] == "o" and model[1].isdigit()
            and entry.get("supports_system_messages") is not True)


def as_litellm_sends(req: BackendRequest) -> BackendRequest:
    """`req` with its messages as litellm sends them to this model: an o-series model's system
    messages become user messages with the same content, the way litellm rewrites them."""
    model = req.model[len(PREFIX):]
    entry = _prices().get(model)
    if not (isinstance(entry, dict) and _system_as_user(model, entry)
            and any(m.get("role") == "system" for m in req.messages)):
        return req
    messages = [{"content": m.get("content"), "role": "user"} if m.get("role") == "system"
                else m for m in req.messages]
    return dataclasses.replace(req, messages=messages, messages_json=None)


def direct_route(req: BackendRequest, enabled: bool = True) -> str | None:
    """How `req` is sent without litellm's completion: "unpriced" (an `openai/` model litellm has
    no price for, at an `api_base`: no cost, as litellm), "priced" (an OpenAI chat model litellm
    prices, with lean parameters — a reasoning model too, with the few litellm passes as given:
    the cost as litellm computes it) or None (litellm)."""
    if not (enabled and req.model.startswith(PREFIX)):
        return None
    env = os.environ
    if env.get("BENCH_LITELLM_ONLY", "").strip() not in ("", "0"):
        return None
    bare = req.model[len(PREFIX):]
    prices = _prices()
    entry = prices.get(bare, prices.get(req.model))
    if entry is None:
        return "unpriced" if req.api_base else None
    if (not _openai_chat(entry) or not _lean_params(entry, req)
            or any(env.get(k) for k in _ACCOUNT_ENV)):
        return None
    if not (req.api_base or req.api_key or env.get("OPENAI_API_KEY")):
        return None  # litellm's own "missing credentials", at once
    return "priced"


def endpoint(req: BackendRequest) -> tuple[str, str | None]:
    """(base URL, API key) as litellm's OpenAI provider resolves them: the request's, else the
    environment's `OPENAI_BASE_URL`/`OPENAI_API_BASE` and `OPENAI_API_KEY`, else OpenAI's."""
    env = os.environ
    base = req.api_base or env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_BASE") or OPENAI_BASE
    return base, req.api_key or env.get("OPENAI_API_KEY")


def litellm_cost(data: dict[str, Any], model: str) -> float | None:
    """What litellm records as the response's cost for `openai/<model>`: its own calculation
    over the answer (the answer's model name and usage, cached prompt tokens included), None
    where it cannot price it."""
    litellm = import_litellm()
    try:
        resp = litellm.ModelResponse(id=data.get("id"), model=data.get("model"),
                                     usage=data.get("usage"), created=data.get("created"))
        found = litellm.completion_cost(completion_response=resp, model=model,
                                        custom_llm_provider="openai", call_type="acompletion")
    except Exception:
        return None
    return float(found) if isinstance(found, int | float) else None


async def _close_with_loop(session: Any) -> AsyncIterator[None]:
    """Parked at its first `yield` for the session's life: `asyncio.run` closes every async
    generator of its loop before closing the loop (`shutdown_asyncgens`), which closes the
    session with it, so no caller has to remember to (and aiohttp reports none unclosed)."""
    try:
        yield
    finally:
        await session.close()


class _Rest:
    """The rest of a coroutine whose first step already ran, awaited from a task: what it
    yields goes to the task, what the task sends or throws goes back to it."""

    __slots__ = ("coro", "first")

    def __init__(self, coro: Any, first: Any) -> None:
        self.coro, self.first = coro, first

    def __await__(self) -> Any:
        coro, out = self.coro, self.first
        while True:
            try:
                got = yield out
            except BaseException as exc:  # the task's cancellation, passed on
                try:
                    out = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    out = coro.send(got)
                except StopIteration as stop:
                    return stop.value


async def _finish(coro: Any, first: Any) -> Any:
    return await _Rest(coro, first)


def eager_body_writes(loop: asyncio.AbstractEventLoop) -> bool:
    """Before Python 3.12, aiohttp writes each request's body from a task of its own, which
    runs only after everything already queued on the loop: at 64 in flight the answers read in
    one loop turn were all handled, and the next sessions started, before any replacement
    request left (issue 31: they left in runs of ~7, up to ~40). From 3.12 aiohttp starts that
    task eagerly (`eager_start`); this does the same on 3.11 for that one coroutine
    (`ClientRequest.write_bytes`, recognised by its code): its first step runs where aiohttp
    creates the task, in a copy of the context as a task's would, and a write that has to wait
    (a full socket buffer) goes on in a task. Every other task is made as before. Not set
    when the loop has a task factory already. Whether it was set."""
    if sys.version_info >= (3, 12) or loop.get_task_factory() is not None:
        return False
    from aiohttp.client_reqrep import ClientRequest

    code = ClientRequest.write_bytes.__code__

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, context: Any = None) -> Any:
        if getattr(coro, "cr_code", None) is not code:
            return asyncio.Task(coro, loop=loop, context=context)
        ctx = contextvars.copy_context() if context is None else context
        try:
            first = ctx.run(coro.send, None)
        except StopIteration as stop:
            done = loop.create_future()
            done.set_result(stop.value)
            return done
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # as a task that failed at once would hold it
            done = loop.create_future()
            if isinstance(exc, asyncio.CancelledError):
                done.cancel()
            else:
                done.set_exception(exc)
            return done
        return asyncio.Task(_finish(coro, first), loop=loop, context=ctx)

    loop.set_task_factory(factory)
    return True


def _body(req: BackendRequest) -> bytes:
    """The request's JSON. The messages and tools go as the client serialised them for the
    cache key (`messages_json`, `tools_json`), spliced in rather than serialised again: the
    tools alone are most of a first request's body."""
    head: dict[str, Any] = {"model": req.model[len(PREFIX):]}
    if req.seed is not None:
        head["seed"] = req.seed
    chunks, tools_text = req.messages_json, req.tools_json
    if (chunks is None or len(chunks) != len(req.messages) or (req.tools and tools_text is None)
            or {"model", "messages", "tools"} & req.params.keys()):
        body: dict[str, Any] = {**head, "messages": req.messages}
        if req.tools:
            body["tools"] = req.tools
        body.update(req.params)
        return json.dumps(body, ensure_ascii=False).encode("utf-8")
    head.update(req.params)
    parts = [json.dumps(head, ensure_ascii=False)[:-1], ', "messages": [', ",".join(chunks), "]"]
    if req.tools:
        parts += [', "tools": ', str(tools_text)]
    parts.append("}")
    return "".join(parts).encode("utf-8")


class OpenAIDirectBackend:
    """POST /chat/completions with aiohttp; one connection pool per event loop."""

    enforces_timeout = True
    """aiohttp's `total` timeout spans the attempt (connecting, sending, reading the body), so
    `LLMClient` sets no guard timer of its own around it."""

    def __init__(self) -> None:
        self._sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = \
            weakref.WeakKeyDictionary()
        self._imported = False
        """litellm imported for a price `openai_prices` leaves to it."""

    async def _session(self) -> Any:
        """This loop's aiohttp session (closed with the loop): imported and made on the first
        direct call (a run that makes none never imports aiohttp)."""
        loop = asyncio.get_running_loop()
        held = self._sessions.get(loop)
        if held is None or held[0].closed:
            import aiohttp

            # limit=0: no cap of its own; LLMClient's per-model limits decide what is in flight
            session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                            skip_auto_headers=("User-Agent",))
            eager_body_writes(loop)
            closer = _close_with_loop(session)
            await closer.__anext__()
            held = self._sessions[loop] = (session, closer)
        return held[0]

    async def aclose(self) -> None:
        """Close this loop's pool now (tests; `asyncio.run` does it anyway)."""
        held = self._sessions.pop(asyncio.get_running_loop(), None)
        if held is not None:
            await held[1].aclose()

    async def _post(self, url: str, data: bytes, headers: dict[str, str],
                            timeout_s: float) -> tuple[int, dict[str, str], bytes]:
        import aiohttp

        session = await self._session()
        try:
            async with session.post(
                    url, data=data,
                    headers=headers, timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
                raw = await _read_capped(resp)
                return resp.status, dict(resp.headers), raw
        except TimeoutError as exc:  # asyncio's and aiohttp's ServerTimeoutError alike
            raise TimeoutError(f"the request timed out after {timeout_s:g} s "
                               f"({type(exc).__name__})") from None
        except aiohttp.ClientError as exc:
            raise ConnectionError(f"{type(exc).__name__}: {exc}") from None

    async def __call__(self, req: BackendRequest) -> dict[str, Any]:
        data = _body(as_litellm_sends(req))
        headers = {"Content-Type": "application/json"}
        base, key = endpoint(req)
        url, basic = _without_credentials(base.rstrip("/") + "/chat/completions")
        if key and (basic is None or key != "no-key"):
            headers["Authorization"] = f"Bearer {key}"
        elif basic is not None:  # `http://user:password@host/v1`, and no key of its own
            headers["Authorization"] = basic
        status, got, raw = await self._post(url, data, headers, req.timeout_s)
        if status >= 400:
            raise OpenAICompatError(status, raw.decode("utf-8", "replace"), got)
        try:
            data = json.loads(raw)
        except ValueError:
            raise LLMError("unusable response: the body is not JSON", retryable=True) from None
        if not isinstance(data, dict) or not data.get("choices"):
            raise LLMError("unusable response: the provider answered with no choices (an "
                           "empty `choices` list)", retryable=True)
        # an unpriced model's answer may name a priced one: litellm prices that, so do we
        model = req.model[len(PREFIX):]
        cost = lean_cost(data, model, _prices())
        if cost is UNSURE:  # arithmetic litellm must do (tiers, audio…): import it, once, in a
            if not self._imported:  # thread, as `LiteLLMBackend.prepare` does
                await asyncio.to_thread(import_litellm)
                self._imported = True
            cost = litellm_cost(data, model)
        return {**data, "cost": cost}
