"""The recording model proxy: an OpenAI-compatible endpoint on localhost, one per run.

It serves the APIs real harnesses speak, each translated into one Chat Completions call of
the run's client: Chat Completions itself, OpenAI's Responses API (`proxy_responses.py`; Codex
CLI), Anthropic's Messages API (`proxy_anthropic.py`; Claude Code), Gemini's generateContent
(`proxy_gemini.py`; Gemini CLI), one module per API beside this one. `ProxyRoute.environment()` is what points a harness at its route, for each SDK.

A harness is handed `http://127.0.0.1:<port>/s/<token>/v1` as its OpenAI base URL. Every
`POST …/chat/completions` goes through the run's one `LLMClient` (role `agent`, purpose
`proxy`), so the harness's model calls are cached, rate-limited, retried and recorded in
`llm_calls` — tokens, cost, latency, cache hits — without its cooperation. The token names one
harness opening (session × repeat): the call is recorded in that session's `llm_calls`, at the
turn its `turn()` says, and two sessions running at once are told apart by their URL.

```python
proxy = ModelProxy(client, model="openai/gpt-4o-mini")   # model=None: the request's own
await proxy.start()
route = proxy.open_session(recorder=calls.append, turn=lambda: 3, seed=0, repeat=1)
route.base_url, route.api_key                            # → the harness's environment
proxy.close_session(route); await proxy.aclose()
```

- `GET …/models` lists the one model; `stream: true` is answered as server-sent events (one
  content chunk, the finish chunk, a usage chunk when `stream_options.include_usage`, then
  `[DONE]`) from one non-streaming upstream call: the proxy records whole calls only.
- Upstream failures come back OpenAI-shaped (`{"error": {message, type, param, code}}`) with
  the upstream status (502 when there is none) and `x-should-retry: false`: the client already
  retried, and the official SDKs would multiply attempts otherwise.
- The request's `seed` is kept when given; otherwise the session's, and the cache key carries
  the repeat, as for `litellm:` agents, so repeats are not served each other's answers.
- Served by uvicorn (Starlette) in the runner's event loop: the per-model concurrency and rate
  limits are the run's. Signals stay the runner's (`_QuietServer`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .llm import LLMClient, LLMError, LLMResponse
from .types import LLMCallRecord

PASSED_PARAMS = frozenset({
    "temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "presence_penalty",
    "frequency_penalty", "logit_bias", "response_format", "tool_choice",
    "parallel_tool_calls", "reasoning_effort", "user",
})
"""Request fields forwarded as completion parameters; the rest (`stream`, `n`, `logprobs`…)
are the proxy's business or refused."""

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
               403: "permission_error", 404: "not_found_error", 408: "timeout_error",
               413: "invalid_request_error", 422: "invalid_request_error",
               429: "rate_limit_error"}


@dataclass
class ProxyRoute:
    """One harness opening's way in."""

    token: str
    base_url: str
    recorder: Callable[[LLMCallRecord], None]
    turn: Callable[[], int | None]
    seed: int | None
    repeat: int
    api_key: str = field(default="", repr=False)
    """What the harness sends as its key: ignored (the path names the session), but the
    OpenAI SDKs refuse to run without one."""
    calls: int = 0

    @property
    def root_url(self) -> str:
        """The route without `/v1`: what Anthropic's SDKs and Claude Code take as base URL."""
        return self.base_url.removesuffix("/v1")

    def environment(self) -> dict[str, str]:
        """The variables that point a harness's model calls at this route, whichever API its
        SDK speaks (each SDK reads its own unprompted)."""
        return {
            "BENCHPACK_MODEL_BASE_URL": self.base_url, "BENCHPACK_MODEL_API_KEY": self.api_key,
            "OPENAI_BASE_URL": self.base_url, "OPENAI_API_BASE": self.base_url,
            "OPENAI_API_KEY": self.api_key,
            "BENCHPACK_ANTHROPIC_BASE_URL": self.root_url,
            "ANTHROPIC_BASE_URL": self.root_url, "ANTHROPIC_API_KEY": self.api_key,
            "GOOGLE_GEMINI_BASE_URL": self.root_url, "GEMINI_API_KEY": self.api_key,
        }


def error_body(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": ERROR_TYPES.get(status, "api_error"),
                      "param": None, "code": code}}


class ModelProxy:
    """See the module docstring."""

    def __init__(self, client: LLMClient, *, model: str | None = None,
                 host: str = "127.0.0.1") -> None:
        self.client = client
        self.model = model
        self.host = host
        self.port: int | None = None
        self._routes: dict[str, ProxyRoute] = {}
        self._server: Any = None
        self._task: asyncio.Task[None] | None = None
        self._seq = 0

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self._task is not None:
            return
        import uvicorn

        # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say TCP, and
        # without it every answer waited for the client's delayed ACK: 44 ms a model call
        # (benchmarks/proxy_overhead.py), against 1 ms with it
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app(), log_level="warning", lifespan="off",
                                access_log=False, timeout_graceful_shutdown=1)
        server = _QuietServer(config)
        self._server = server
        self._task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            if self._task.done():  # it failed to start: say why
                self._task.result()
                raise RuntimeError("the model proxy stopped while starting")
            await asyncio.sleep(0.005)

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        self._server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(task), 3.0)
        except Exception:
            self._server.force_exit = True
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the model proxy is not started")
        return f"http://{self.host}:{self.port}"

    def open_session(self, *, recorder: Callable[[LLMCallRecord], None],
                     turn: Callable[[], int | None], seed: int | None = 0,
                     repeat: int = 0) -> ProxyRoute:
        token = secrets.token_urlsafe(18)
        route = ProxyRoute(token=token, base_url=f"{self.url}/s/{token}/v1", recorder=recorder,
                           turn=turn, seed=seed, repeat=repeat, api_key=f"benchpack-{token}")
        self._routes[token] = route
        return route

    def close_session(self, route: ProxyRoute) -> None:
        self._routes.pop(route.token, None)

    # ------------------------------------------------------------------ HTTP

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.routing import Route

        return Starlette(routes=[
            Route("/s/{token}/v1/chat/completions", self._completions, methods=["POST"]),
            Route("/s/{token}/v1/responses", self._responses, methods=["POST"]),
            Route("/s/{token}/v1/messages", self._messages, methods=["POST"]),
            Route("/s/{token}/v1/messages/count_tokens", self._count_tokens,
                  methods=["POST"]),
            Route("/s/{token}/{version:str}/models/{call:path}", self._gemini,
                  methods=["POST"]),
            Route("/s/{token}/v1/models", self._models, methods=["GET"]),
            Route("/s/{token}/v1/models/{model:path}", self._models, methods=["GET"]),
        ])

    def _error(self, status: int, message: str, code: str | None = None) -> Any:
        from starlette.responses import JSONResponse

        return JSONResponse(error_body(status, message, code), status_code=status,
                            headers={"x-should-retry": "false"})

    async def _models(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        if request.path_params["token"] not in self._routes:
            return self._error(401, "unknown benchpack session token", "invalid_api_key")
        model = self.model or "benchpack-proxy"
        entry = {"id": model, "object": "model", "created": 0, "owned_by": "benchpack"}
        if "model" in request.path_params:
            return JSONResponse(entry)
        return JSONResponse({"object": "list", "data": [entry]})

    async def _body(self, request: Any) -> tuple[ProxyRoute | None, Any]:
        """(route, JSON object body), or (None, an error to send)."""
        route = self._routes.get(request.path_params["token"])
        if route is None:
            return None, (401, "unknown benchpack session token (the session is over, or the "
                          "URL is not the one it was given)", "invalid_api_key")
        try:
            body = json.loads(await request.body() or b"{}")
        except ValueError as exc:
            return None, (400, f"the request body is not JSON: {exc}", None)
        if not isinstance(body, dict):
            return None, (400, "the request body must be a JSON object", None)
        return route, body

    async def _forward(self, route: ProxyRoute, *, model: str, messages: list[dict[str, Any]],
                       tools: list[dict[str, Any]] | None, params: dict[str, Any],
                       seed: int | None) -> LLMResponse | tuple[int, str, None]:
        """One upstream call through the run's client, recorded in the route's session; an
        upstream failure as (status, message, None) for the API's own error shape."""
        route.calls += 1
        try:
            return await self.client.complete(
                role="agent", model=model, messages=messages, tools=tools or None,
                params=params, seed=route.seed if seed is None else seed,
                repeat=route.repeat, purpose="proxy", turn=route.turn(),
                recorder=route.recorder)
        except LLMError as exc:
            status = exc.status_code if exc.status_code and 400 <= exc.status_code < 600 \
                else 502
            return status, f"upstream model call failed: {exc.message}", None

    def _ident(self) -> tuple[str, int]:
        self._seq += 1
        return f"benchpack-{self._seq}", int(time.time())

    async def _completions(self, request: Any) -> Any:
        route, body = await self._body(request)
        if route is None:
            return self._error(*body)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or \
                not all(isinstance(m, dict) for m in messages):
            return self._error(400, "`messages` must be a non-empty list of objects", "messages")
        model = self.model or body.get("model")
        if not isinstance(model, str) or not model:
            return self._error(400, "`model` is required")
        tools = body.get("tools")
        if tools is not None and not isinstance(tools, list):
            return self._error(400, "`tools` must be a list")
        if body.get("n") not in (None, 1):
            return self._error(400, "the benchpack proxy answers one choice per request (n=1)")
        params = {k: v for k, v in body.items() if k in PASSED_PARAMS and v is not None}
        seed = body.get("seed") if isinstance(body.get("seed"), int) else None
        resp = await self._forward(route, model=model, messages=messages, tools=tools,
                                   params=params, seed=seed)
        if isinstance(resp, tuple):
            return self._error(*resp)
        ident, created = self._ident()
        ident = f"chatcmpl-{ident}"
        shown = str(body.get("model") or model)
        finish = resp.finish_reason or ("tool_calls" if resp.tool_calls else "stop")
        usage = {"prompt_tokens": resp.usage.prompt_tokens,
                 "completion_tokens": resp.usage.completion_tokens,
                 "total_tokens": resp.usage.prompt_tokens + resp.usage.completion_tokens}
        if body.get("stream"):
            options = body.get("stream_options") or {}
            return _stream(ident, created, shown, resp.raw_message, finish,
                           usage if isinstance(options, dict) and
                           options.get("include_usage") else None)
        from starlette.responses import JSONResponse

        return JSONResponse({
            "id": ident, "object": "chat.completion", "created": created, "model": shown,
            "choices": [{"index": 0, "message": resp.raw_message, "finish_reason": finish,
                         "logprobs": None}],
            "usage": usage})

    async def _responses(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        from . import proxy_responses as api

        route, body = await self._body(request)
        if route is None:
            return self._error(*body)
        try:
            call = api.translate_request(body)
        except api.RequestError as exc:
            return self._error(400, str(exc), exc.param)
        model = self.model or call.model
        if not model:
            return self._error(400, "`model` is required")
        resp = await self._forward(route, model=model, messages=call.messages,
                                   tools=call.tools, params=call.params, seed=call.seed)
        if isinstance(resp, tuple):
            return self._error(*resp)
        ident, created = self._ident()
        final = api.response_object(
            call, ident=ident, model=str(call.model or model), created=created,
            items=api.output_items(call, resp.raw_message, ident),
            usage=api.usage_of(resp.usage.prompt_tokens, resp.usage.completion_tokens),
            finish=resp.finish_reason)
        if call.stream:
            return _events(api.sse_events(call, final))
        return JSONResponse(final)


    def _anthropic_error(self, status: int, message: str, _code: str | None = None) -> Any:
        from starlette.responses import JSONResponse

        from .proxy_anthropic import error_body as anthropic_error

        return JSONResponse(anthropic_error(status, message), status_code=status,
                            headers={"x-should-retry": "false"})

    async def _messages(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        from . import proxy_anthropic as api

        route, body = await self._body(request)
        if route is None:
            return self._anthropic_error(*body)
        try:
            call = api.translate_request(body)
        except api.RequestError as exc:
            return self._anthropic_error(400, str(exc))
        model = self.model or call.model
        if not model:
            return self._anthropic_error(400, "`model` is required")
        resp = await self._forward(route, model=model, messages=call.messages,
                                   tools=call.tools, params=call.params, seed=None)
        if isinstance(resp, tuple):
            return self._anthropic_error(*resp)
        ident, _ = self._ident()
        final = api.message_object(resp.raw_message, ident=ident, model=str(call.model or model),
                                   finish=resp.finish_reason,
                                   prompt_tokens=resp.usage.prompt_tokens,
                                   completion_tokens=resp.usage.completion_tokens)
        if call.stream:
            return _events(api.sse_events(final))
        return JSONResponse(final)

    async def _count_tokens(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        from .proxy_anthropic import count_tokens

        route, body = await self._body(request)
        if route is None:
            return self._anthropic_error(*body)
        return JSONResponse({"input_tokens": count_tokens(body)})


    def _gemini_error(self, status: int, message: str, _code: str | None = None) -> Any:
        from starlette.responses import JSONResponse

        from .proxy_gemini import error_body as gemini_error

        return JSONResponse(gemini_error(status, message), status_code=status)

    async def _gemini(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        from . import proxy_gemini as api

        route, body = await self._body(request)
        if route is None:
            return self._gemini_error(*body)
        name, _, method = request.path_params["call"].rpartition(":")
        if method == "countTokens":
            return JSONResponse({"totalTokens": api.count_tokens(body)})
        if method not in ("generateContent", "streamGenerateContent") or not name:
            return self._gemini_error(404, f"unknown method `{method}` (the benchpack proxy "
                                      "serves generateContent, streamGenerateContent and "
                                      "countTokens)")
        try:
            call = api.translate_request(body)
        except api.RequestError as exc:
            return self._gemini_error(400, str(exc))
        resp = await self._forward(route, model=self.model or name, messages=call.messages,
                                   tools=call.tools, params=call.params, seed=None)
        if isinstance(resp, tuple):
            return self._gemini_error(*resp)
        ident, _ = self._ident()
        final = api.response_object(resp.raw_message, model=name, ident=ident,
                                    finish=resp.finish_reason,
                                    prompt_tokens=resp.usage.prompt_tokens,
                                    completion_tokens=resp.usage.completion_tokens)
        if method == "streamGenerateContent":
            if request.query_params.get("alt") == "sse":
                return _events(api.sse_events(final))
            return JSONResponse([final])  # without alt=sse the stream is one JSON array
        return JSONResponse(final)


def _stream(ident: str, created: int, model: str, message: dict[str, Any], finish: str,
            usage: dict[str, int] | None) -> Any:
    def chunk(delta: dict[str, Any] | None, finish_reason: str | None,
              extra: dict[str, Any] | None = None) -> str:
        obj: dict[str, Any] = {
            "id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [] if delta is None else [
                {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]}
        obj.update(extra or {})
        return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n"

    def events() -> Iterator[str]:
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            delta["tool_calls"] = [{"index": i, **tc}
                                   for i, tc in enumerate(message["tool_calls"])]
        yield chunk(delta, None)
        yield chunk({}, finish)
        if usage is not None:
            yield chunk(None, None, {"usage": usage})
        yield "data: [DONE]\n\n"

    return _events(events())


def _events(events: Iterator[str]) -> Any:
    """Server-sent events sent as one body: the proxy has the whole answer before the first
    event, and Starlette runs a sync generator's every step on a worker thread (a stream of
    ten events cost 8 ms more than one body, `benchmarks/proxy_overhead.py`)."""
    from starlette.responses import Response

    return Response("".join(events), media_type="text/event-stream",
                    headers={"cache-control": "no-cache"})


def _quiet_server_class() -> Any:
    import uvicorn

    class QuietServer(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            # uvicorn would take SIGINT/SIGTERM from the runner, which must cancel the run
            # and stop every harness itself
            yield

    return QuietServer


def _QuietServer(config: Any) -> Any:
    # uvicorn is imported on first use (a class made then), not when the runtime loads
    return _quiet_server_class()(config)


__all__ = ["ModelProxy", "ProxyRoute", "error_body"]
