"""`LLMClient`: the one place every LLM call goes through (agent, simulator, judge, planner).

```python
client = LLMClient(LLMConfig(api_base=..., api_key=...), cache=ResponseCache(dir))
resp = await client.complete(role="judge", model="litellm:openai/gpt-4o-mini",
                             messages=[...], tools=None, params={"temperature": 0},
                             seed=0, repeat=0, purpose="rubric", turn=3, recorder=calls.append)
resp.content, resp.tool_calls, resp.usage, resp.cache_hit, resp.raw_message
```

- **Models** are `litellm:<model>` or a bare litellm model name (`openai/gpt-4o-mini`).
- **Cache first.** The key covers model (plus a hash of `api_base` when set), messages, tools,
  params, seed and repeat. A hit makes no request and is recorded with `cache_hit=True`,
  `attempts=0`, latency ≈ 0 and cost 0 (the stored token counts are kept, so token metrics do
  not depend on the cache). Successful responses are stored; failures never are.
- **Retries** (exponential backoff with jitter, `Retry-After`/`retry-after-ms` honoured) only for
  transient failures: rate limits (429), timeouts, connection errors, 500/502/503/504/529, an
  unusable answer (a 200 whose body cannot be parsed) and
  litellm's RateLimitError/Timeout/APIConnectionError/InternalServerError/
  ServiceUnavailableError/BadGatewayError. Authentication, missing API keys (which litellm
  reports as a 500), bad requests, unknown models, context
  window and content-policy errors fail at once. `max_retries` retries at most, so
  `max_retries + 1` attempts. The provider client's own retries are disabled
  (`num_retries=0`, `max_retries=0`): attempts never multiply.
- **Exactly one `LLMCallRecord` per `complete` call**, success, failure or cancellation, passed
  to the caller's `recorder`. Records carry no secrets: `api_key` is only handed to the
  backend, never stored, logged, cached or put in an error string; error strings are also
  cleared of every key in the environment and in `api_base` (`redact.Redactor`).
- **Failures** raise `LLMError(message, retryable)` after recording.
- **Limits per model**: an `asyncio.Semaphore` (`max_concurrent_per_model`) and, when
  `requests_per_minute` names the model (or `"*"`), a token bucket. Both are held per attempt,
  never during backoff sleeps.
- **Backends.** The default backend calls `litellm.acompletion` and imports litellm lazily (on
  the first uncached call, in a worker thread and outside any timeout: ~2.4 s, ~170 MB). A
  backend may offer `async prepare()`, awaited before each request's first attempt. Tests and
  protocol code can pass any async callable `backend(BackendRequest) -> str | dict` (see
  `FakeBackend`), so nothing here needs litellm or a network.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import importlib
import os
import random
import sys
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .cache import ResponseCache, canonical_json, json_list, message_chunks, sha256_text
from .env.copying import copy_json
from .limits import reply_refusal, tool_calls_refusal

# re-exported (`X as X`): agents, backends and tests import these from here
from .llmerrors import RETRYABLE_STATUS as RETRYABLE_STATUS
from .llmerrors import LLMError as LLMError
from .llmerrors import is_endpoint_failure, status_of
from .llmerrors import is_retryable as is_retryable
from .llmerrors import retry_after_s as retry_after_s
from .llmoutput import malformed_arguments as malformed_arguments
from .llmoutput import normalize_model as normalize_model
from .llmoutput import normalize_output as normalize_output
from .llmoutput import parse_arguments as parse_arguments
from .llmoutput import tool_calls_of, usage_numbers
from .redact import Redactor
from .types import LLMCallRecord, LLMRole, LLMUsage, ToolCall

Recorder = Callable[[LLMCallRecord], None]

# --------------------------------------------------------------------------- public types


@dataclass
class LLMConfig:
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    """Handed to the backend only; never stored, cached, recorded or logged."""
    max_retries: int = 4
    timeout_s: float = 120.0
    """Per attempt; `complete(timeout_s=...)` overrides it for one call."""
    max_concurrent_per_model: int = 8
    requests_per_minute: dict[str, float] = field(default_factory=dict)
    """Model (URI or bare name, or `"*"` for every model) → requests per minute."""
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    retry_after_max_s: float = 120.0
    """Longest `Retry-After` wait honoured; longer hints are capped to this."""
    send_seed: bool = True
    """Pass `seed` to providers that support it."""
    direct_openai: bool = True
    """`openai/<model>`, at an `api_base` a model litellm has no price for, or one of OpenAI's
    plain chat models litellm prices: POST with aiohttp instead of through litellm, the same
    body, tokens and cost (`openai_direct`; `BENCH_LITELLM_ONLY=1` turns it off too)."""


@dataclass
class LLMResponse:
    content: str | None
    tool_calls: list[ToolCall]
    """Arguments parsed from JSON; malformed JSON is kept as `{"_raw": "<string>"}`."""
    usage: LLMUsage
    cache_hit: bool
    raw_message: dict[str, Any]
    """The assistant message to append to the history (OpenAI format, incl. tool_calls)."""
    finish_reason: str | None = None
    model: str = ""
    attempts: int = 1


@dataclass
class BackendRequest:
    """What a backend gets for one attempt."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    params: dict[str, Any]
    seed: int | None
    timeout_s: float
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    messages_json: list[str] | None = field(default=None, repr=False)
    """`canonical_json` of each message, when the client has it (it hashes them for the cache
    key): a backend may send these instead of serialising `messages` again."""
    tools_json: str | None = field(default=None, repr=False)
    """`canonical_json(tools)`, likewise."""


Backend = Callable[[BackendRequest], Awaitable[Any]]
"""Returns a `str` (a text answer), an assistant message dict, `{"message", "usage", "cost",
"finish_reason"}`, or an OpenAI `chat.completion` dict. Raises to fail; transient failures
should raise `LLMError(..., retryable=True)`, `TimeoutError`, `ConnectionError` or an
exception with a retryable `status_code`."""


# --------------------------------------------------------------------------- limits


class RateLimiter:
    """A token bucket: `rpm` requests per minute, bursts of at most one second's worth."""

    def __init__(self, rpm: float, clock: Callable[[], float] = time.monotonic) -> None:
        if rpm <= 0:
            raise ValueError("requests_per_minute must be positive")
        self.rate = rpm / 60.0
        self.capacity = max(1.0, self.rate)
        self.tokens = self.capacity
        self.clock = clock
        self.updated = clock()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        async with self._lock:
            while True:
                now = self.clock()
                self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
                self.updated = now
                if self.tokens >= 1.0:
                    self.tokens -= 1.0
                    return
                await asyncio.sleep((1.0 - self.tokens) / self.rate)


HANDOVER_TURNS = 2
"""Loop turns a finished call yields when another call waits for its model's permit: one for
the waiter to start its request, one for aiohttp's body writer, a task of its own before
Python 3.12 (where it starts eagerly)."""


def _has_waiters(semaphore: asyncio.Semaphore) -> bool:
    """Whether a call waits for `semaphore` (asyncio keeps its waiters private; without them
    every call yields once, which is correct and a loop turn slower)."""
    waiters = getattr(semaphore, "_waiters", True)
    return bool(waiters)


@dataclass
class ModelLimits:
    semaphore: asyncio.Semaphore
    rate: RateLimiter | None


# --------------------------------------------------------------------------- backends


def import_litellm() -> Any:
    """Import litellm the way benchpack needs it: local price map, quiet, typed as Any."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm: Any = importlib.import_module("litellm")
    litellm.suppress_debug_info = True
    return litellm


class LiteLLMBackend:
    """The default backend: `litellm.acompletion`, no provider-side retries."""

    def __init__(self) -> None:
        self._seed_ok: dict[str, bool] = {}
        self._imported = False

    async def prepare(self) -> None:
        """Import litellm (seconds) in a worker thread, once, before the first request, so the
        import never counts against a request's timeout nor blocks the event loop."""
        if not self._imported:
            await asyncio.to_thread(import_litellm)
            self._imported = True

    def _supports_seed(self, litellm: Any, model: str) -> bool:
        if model not in self._seed_ok:
            try:
                supported = litellm.get_supported_openai_params(model=model)
            except Exception:
                supported = None
            self._seed_ok[model] = bool(supported) and "seed" in supported
        return self._seed_ok[model]

    async def __call__(self, req: BackendRequest) -> dict[str, Any]:
        litellm = import_litellm()
        kwargs: dict[str, Any] = {"model": req.model, "messages": req.messages,
                                  "timeout": req.timeout_s, "num_retries": 0, "max_retries": 0}
        if req.tools:
            # a copy: the specs may be shared by every session of the run (`ToolBox.
            # shared_specs`) and litellm adapts tool schemas for some providers in place
            kwargs["tools"] = copy_json(req.tools)
        if req.api_base:
            kwargs["api_base"] = req.api_base
        if req.api_key:
            kwargs["api_key"] = req.api_key
        if req.seed is not None and self._supports_seed(litellm, req.model):
            kwargs["seed"] = req.seed
        kwargs.update(req.params)
        resp = await litellm.acompletion(**kwargs)
        if not getattr(resp, "choices", None):  # a gateway or content filter answered 200
            raise LLMError("unusable response: the provider answered with no choices (an "
                           "empty `choices` list)", retryable=True)
        choice = resp.choices[0]
        msg = choice.message
        message: dict[str, Any] = {"role": "assistant", "content": getattr(msg, "content", None)}
        calls = getattr(msg, "tool_calls", None) or []
        if calls:
            message["tool_calls"] = [
                {"id": tc.id, "type": "function",
                 "function": {"name": tc.function.name, "arguments": tc.function.arguments}}
                for tc in calls]
        cost: float | None
        hidden = getattr(resp, "_hidden_params", None)
        if isinstance(hidden, dict) and "response_cost" in hidden:
            # litellm prices every response itself (None when it cannot, where completion_cost
            # raises); pricing it twice cost ~1-3 ms of CPU per call (more for unknown models)
            found = hidden["response_cost"]
            cost = float(found) if isinstance(found, int | float) else None
        else:
            try:
                cost = float(litellm.completion_cost(completion_response=resp))
            except Exception:
                cost = None
        pt, ct = usage_numbers(getattr(resp, "usage", None))
        return {"message": message, "usage": {"prompt_tokens": pt, "completion_tokens": ct},
                "cost": cost, "finish_reason": getattr(choice, "finish_reason", None)}


class FakeBackend:
    """A scripted backend for tests: answers from `replies` in order (a `str`, a dict accepted
    by `normalize_output`, an exception to raise, or a callable `BackendRequest -> any of
    those`). Every request is kept in `requests`."""

    def __init__(self, replies: Iterable[Any] = ()) -> None:
        self.replies: list[Any] = list(replies)
        self.requests: list[BackendRequest] = []

    def add(self, *replies: Any) -> FakeBackend:
        self.replies.extend(replies)
        return self

    async def __call__(self, req: BackendRequest) -> Any:
        self.requests.append(req)
        if not self.replies:
            raise LLMError("FakeBackend: no reply left", retryable=False)
        reply = self.replies.pop(0)
        if callable(reply) and not isinstance(reply, BaseException):
            reply = reply(req)
            if asyncio.iscoroutine(reply):
                reply = await reply
        if isinstance(reply, BaseException):
            raise reply
        return reply


def over_limits(raw: dict[str, Any]) -> str | None:
    """The refusal of a normalised reply that asks for more tool calls than
    `tool_calls_per_reply`, or is larger than `model_reply_bytes` (a backend that read it
    whole: the direct path stops reading at the limit), else None. Nothing acts on a refused
    reply: it is neither cached nor returned, and the call is an error."""
    calls = raw.get("tool_calls") or []
    refusal = tool_calls_refusal(len(calls))
    if refusal is not None:
        return refusal
    # characters: a lower bound of the bytes, counted without encoding megabytes
    size = len(raw.get("content") or "") + sum(len(c["function"]["arguments"]) for c in calls)
    return reply_refusal(size)


# --------------------------------------------------------------------------- the client


@functools.lru_cache(maxsize=16)
def _base_digest(api_base: str) -> str:
    """The digest a cache key's model carries for its `api_base`: worked out once a base, not
    once a call (issue 31)."""
    return hashlib.sha256(api_base.encode()).hexdigest()[:16]


class LLMClient:
    """See the module docstring."""

    def __init__(self, config: LLMConfig | None = None, *, cache: ResponseCache | None = None,
                 backend: Backend | None = None,
                 sleep: Callable[[float], Awaitable[None]] | None = None) -> None:
        self.config = config or LLMConfig()
        self.cache = cache
        self.backend: Backend = backend or LiteLLMBackend()
        self._direct: Backend | None = None
        """The direct OpenAI backend (`openai_direct.direct_route`), for the default backend
        only (a backend passed in answers every call)."""
        self._may_go_direct = backend is None
        self._sleep = sleep or asyncio.sleep
        self._random = random.Random()
        self._limits: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                                dict[str, ModelLimits]] = \
            weakref.WeakKeyDictionary()
        self.budget: Any = None
        """A `budget.Budget` (`--max-cost`): consulted before every call not served from the
        cache, told what each one cost."""
        self.calls = 0
        self.cache_hits = 0
        self.failures = 0
        self._tools_memo: dict[int, tuple[list[dict[str, Any]], str, str]] = {}
        # litellm reads keys from the environment itself: an error may echo any of them
        self._redact = Redactor.from_environment(urls=[self.config.api_base],
                                                 values=[self.config.api_key])

    # -------------------------------------------------------------- helpers

    def _limits_for(self, model: str, uri: str) -> ModelLimits:
        per_loop = self._limits.setdefault(asyncio.get_running_loop(), {})
        limits = per_loop.get(model)
        if limits is None:
            rpm_cfg = self.config.requests_per_minute
            rpm = rpm_cfg.get(uri, rpm_cfg.get(model, rpm_cfg.get("*")))
            limits = ModelLimits(asyncio.Semaphore(max(1, self.config.max_concurrent_per_model)),
                                  RateLimiter(rpm) if rpm else None)
            per_loop[model] = limits
        return limits

    def _cache_model(self, model: str) -> str:
        base = self.config.api_base
        if not base:
            return model
        return f"{model}@{_base_digest(base)}"

    def _scrub(self, text: str) -> str:
        key = self.config.api_key
        if key and len(key) >= 4:
            text = text.replace(key, "***")
        return self._redact(text)

    def _describe(self, exc: BaseException) -> str:
        text = str(exc) or repr(exc)
        name = type(exc).__name__
        if isinstance(exc, LLMError):  # ours, and saying what it is (`limit …: …`)
            text = exc.message
        elif not text.startswith(name) and "." + name not in text.split(":", 1)[0]:
            text = f"{name}: {text}"
        text = self._scrub(text)
        return text if len(text) <= 1000 else text[:1000] + "…"

    def backoff_s(self, attempt: int) -> float:
        """Exponential backoff with jitter before retry number `attempt` (1-based)."""
        base = self.config.backoff_base_s * 2 ** min(attempt - 1, 32)
        return float(min(self.config.backoff_max_s, base * self._random.uniform(0.5, 1.5)))

    def _tools_json(self, tools: list[dict[str, Any]] | None) -> tuple[str, str]:
        """(canonical JSON, its sha256) of the tool specs, `("[]", "")` for none. Tool specs
        are the same list object for a whole session: serialise them once."""
        if not tools:
            return "[]", ""
        hit = self._tools_memo.get(id(tools))
        if hit is not None and hit[0] is tools:
            return hit[1], hit[2]
        text = canonical_json(tools)
        digest = sha256_text(text)
        if len(self._tools_memo) > 4096:
            self._tools_memo.clear()
        self._tools_memo[id(tools)] = (tools, text, digest)
        return text, digest

    # -------------------------------------------------------------- the call

    async def complete(self, *, role: LLMRole | str, model: str,
                       messages: list[dict[str, Any]], recorder: Recorder,
                       tools: list[dict[str, Any]] | None = None,
                       params: dict[str, Any] | None = None, seed: int | None = 0,
                       repeat: int = 0, purpose: str | None = None, turn: int | None = None,
                       timeout_s: float | None = None,
                       message_json: list[str] | None = None) -> LLMResponse:
        """`message_json`: the messages' `cache.message_chunks`, when the caller keeps them
        (an append-only history serialises each message once instead of once per call)."""
        name = normalize_model(model)
        call_params = {k: v for k, v in (params or {}).items() if v is not None}
        chunks = (message_json if message_json is not None and len(message_json) == len(messages)
                  else message_chunks(messages))
        tools_json, tools_hash = self._tools_json(tools)
        # = sha256 of canonical_json({"messages": messages, "tools": tools_hash})
        prompt_hash = sha256_text(f'{{"messages":{json_list(chunks)},"tools":"{tools_hash}"}}')
        started = time.time()
        t0 = time.perf_counter()
        self.calls += 1

        def record(*, pt: int = 0, ct: int = 0, cost: float | None = None,
                   cache_hit: bool = False, error: str | None = None, attempts: int = 0,
                   reply: dict[str, Any] | None = None, endpoint: bool = False) -> None:
            recorder(LLMCallRecord(
                role=role,  # type: ignore[arg-type]
                model=name, prompt_hash=prompt_hash, prompt_tokens=pt, completion_tokens=ct,
                cost=cost, latency_s=time.perf_counter() - t0, cache_hit=cache_hit,
                error=error, attempts=attempts, started_at=started, turn=turn, purpose=purpose,
                messages_json=list(chunks), tools_json=tools_json,  # the caller appends to chunks
                reply=None if reply is None else canonical_json(reply),
                endpoint_failure=endpoint))

        cache = self.cache if self.cache is not None and self.cache.enabled else None
        key = ResponseCache.key_of_chunks(self._cache_model(name), chunks, tools_json,
                                          call_params, seed, repeat) if cache is not None else None
        if cache is not None and key is not None:
            stored = cache.get(key)
            if stored is not None:
                try:
                    raw, pt, ct, _, finish = normalize_output(stored)
                except (ValueError, KeyError, TypeError):
                    raw = None  # an unusable entry: a miss, overwritten below
                if raw is not None:
                    self.cache_hits += 1
                    record(pt=pt, ct=ct, cost=0.0, cache_hit=True, reply=raw)
                    return LLMResponse(content=raw.get("content"), tool_calls=tool_calls_of(raw),
                                       usage=LLMUsage(pt, ct, 0.0), cache_hit=True,
                                       raw_message=raw, finish_reason=finish, model=name,
                                       attempts=0)

        timeout = timeout_s if timeout_s is not None else self.config.timeout_s
        request = BackendRequest(model=name, messages=messages, tools=tools or None,
                                 params=call_params,
                                 seed=seed if self.config.send_seed else None,
                                 timeout_s=timeout, api_base=self.config.api_base,
                                 api_key=self.config.api_key, messages_json=chunks,
                                 tools_json=tools_json if tools else None)
        limits = self._limits_for(name, model)
        backend = self._backend_for(request)
        prepare = getattr(backend, "prepare", None)
        if prepare is not None:
            await prepare()
        reserved = 0.0
        if self.budget is not None:
            if "litellm" not in sys.modules:  # pricing imports it: in a thread, as `prepare`
                await asyncio.to_thread(import_litellm)  # does (a direct path has none)
            try:
                reserved = await self.budget.areserve(name, messages, tools, call_params)
            except LLMError as exc:
                self.failures += 1
                record(error=exc.message, attempts=0)
                raise
        try:
            raw, pt, ct, cost, finish, attempt = await self._attempts(
                request, limits, record, backend)
        except BaseException:
            if self.budget is not None:
                self.budget.settle(name, reserved, None, answered=False)
            raise
        if self.budget is not None:
            self.budget.settle(name, reserved, cost, answered=True)

        if cache is not None and key is not None:
            cache.put_soon(key, {"message": raw,
                            "usage": {"prompt_tokens": pt, "completion_tokens": ct},
                            "finish_reason": finish, "model": name})
        record(pt=pt, ct=ct, cost=cost, attempts=attempt, reply=raw)
        if _has_waiters(limits.semaphore):
            # hand the model over before the caller goes on: the woken call sends its request
            # now, not after this session has been parsed, graded and stored (the model would
            # sit idle meanwhile). After the call is recorded, priced and cached: a
            # cancellation here leaves it accounted for as answered
            for _ in range(HANDOVER_TURNS):
                await asyncio.sleep(0)
        return LLMResponse(content=raw.get("content"), tool_calls=tool_calls_of(raw),
                           usage=LLMUsage(pt, ct, cost), cache_hit=False, raw_message=raw,
                           finish_reason=finish, model=name, attempts=attempt)

    def _backend_for(self, request: BackendRequest) -> Backend:
        if not self._may_go_direct:
            return self.backend
        from .openai_direct import OpenAIDirectBackend, direct_route

        if direct_route(request, self.config.direct_openai) is None:
            return self.backend
        if self._direct is None:
            self._direct = OpenAIDirectBackend()
        return self._direct

    async def _attempts(self, request: BackendRequest, limits: ModelLimits,
                        record: Callable[..., None], backend: Backend | None = None
                        ) -> tuple[dict[str, Any], int, int, float | None, str | None, int]:
        """Attempt `request` until it succeeds or may not be retried (recording the failure)."""
        timeout = request.timeout_s
        attempt = 0
        while True:
            attempt += 1
            try:
                async with limits.semaphore:
                    if limits.rate is not None:
                        await limits.rate.acquire()
                    call = backend or self.backend
                    if getattr(call, "enforces_timeout", False):
                        # its own timer spans the whole attempt: a second one cost every
                        # call a timer set and cancelled on the loop (issue 31)
                        out = await call(request)
                    else:
                        # the backend enforces `timeout`; this guard catches one that does
                        # not (a timeout scope, unlike wait_for, runs it without a new task)
                        async with asyncio.timeout(timeout + max(1.0, 0.25 * timeout)):
                            out = await call(request)
                try:
                    raw, pt, ct, cost, finish = normalize_output(out)
                except (ValueError, KeyError, TypeError) as exc:
                    raise LLMError(f"unusable response: {exc}", retryable=True) from None
                refusal = over_limits(raw)
                if refusal is not None:  # asking again would get the same: not retried
                    raise LLMError(refusal, retryable=False)
                break
            except asyncio.CancelledError:
                self.failures += 1
                record(error="cancelled", attempts=attempt)
                raise
            except Exception as exc:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    # a caller's deadline (a turn's `asyncio.timeout`) fell in the same loop
                    # step as the backend's own timer, and aiohttp turned both cancellations
                    # into its TimeoutError: the caller's cancellation goes on, no retry
                    self.failures += 1
                    record(error="cancelled", attempts=attempt)
                    raise asyncio.CancelledError from None
                retryable = is_retryable(exc)
                if retryable and attempt <= self.config.max_retries:
                    hint = retry_after_s(exc)
                    delay = (min(hint, self.config.retry_after_max_s) if hint is not None
                             else self.backoff_s(attempt))
                    try:
                        await self._sleep(delay)
                    except asyncio.CancelledError:
                        self.failures += 1
                        record(error="cancelled", attempts=attempt)
                        raise
                    continue
                self.failures += 1
                message = self._describe(exc)
                if retryable:
                    message = f"{message} (gave up after {attempt} attempts)"
                record(error=message, attempts=attempt,
                       endpoint=is_endpoint_failure(exc, retryable))
                raise LLMError(message, retryable, attempts=attempt,
                               status_code=status_of(exc)) from None
        return raw, pt, ct, cost, finish, attempt
