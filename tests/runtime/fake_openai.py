"""A local OpenAI-compatible chat-completions server for tests (no network beyond 127.0.0.1).

`FakeOpenAI` runs a stdlib `ThreadingHTTPServer` on a random free port in a background thread
and answers `POST /v1/chat/completions` (non-streaming) from a programmable queue:

```python
def test_x(fake_openai: FakeOpenAI) -> None:
    fake_openai.text("Hello", prompt_tokens=12, completion_tokens=3)
    fake_openai.tool_call("search", {"query": "inr"})   # or a raw (malformed) argument string
    fake_openai.rate_limit(retry_after="0.2")           # HTTP 429 with Retry-After
    fake_openai.error(500)                              # any status, optional body/headers
    fake_openai.hang(5.0)                               # answer only after 5 s (client times out)
    fake_openai.malformed()                             # 200 with a body that is not JSON
    fake_openai.respond(lambda body: ...)               # compute a reply from the request
    fake_openai.route("judge-model", lambda body: '{"decisions": []}')  # every request for a
                                                        # model, answered by a function
    ...  # point a client at fake_openai.base_url ("http://127.0.0.1:<port>/v1")
    assert fake_openai.requests[0]["model"] == "fake-model"
```

Each request pops one queued reply; an empty queue answers HTTP 400 `queue empty` (not
retryable, so a test that forgot a reply fails fast). Routes serve whole runs: a request whose
`model` has a route is answered by the route's function (a `str` is a text answer, a `dict` an
assistant message, a `FakeReply` is sent as is), before the queue is consulted. `requests` holds every received JSON body,
`headers` the matching request headers (lower-cased names).

Use the `fake_openai` fixture (`from fake_openai import fake_openai_fixture` in the test
module) or the class as a context manager.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class FakeReply:
    """One queued answer: a status, a JSON body (or raw bytes), headers and an optional delay."""

    status: int = 200
    body: Any = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


Responder = Callable[[dict[str, Any]], FakeReply]


def completion_body(model: str, message: dict[str, Any], finish_reason: str,
                    prompt_tokens: int, completion_tokens: int, seq: int) -> dict[str, Any]:
    """A chat.completion object in the OpenAI response format."""
    return {
        "id": f"chatcmpl-fake-{seq}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason,
                     "logprobs": None}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


class _Server(ThreadingHTTPServer):
    # the stdlib's listen backlog is 5: 64 clients connecting at once overflowed it and some
    # connections were reset (real servers listen with 128-2048)
    request_queue_size = 128


class FakeOpenAI:
    """The server; see the module docstring."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._queue: deque[FakeReply | Responder] = deque()
        self._routes: dict[str, Callable[[dict[str, Any]], Any]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._seq = 0
        self._server = _Server(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        host, port = self._server.server_address[:2]
        self.base_url = f"http://{host!s}:{port}/v1"

    # ------------------------------------------------------------------ programming

    def push(self, *replies: FakeReply | Responder) -> FakeOpenAI:
        with self._lock:
            self._queue.extend(replies)
        return self

    def text(self, content: str, *, prompt_tokens: int = 10, completion_tokens: int = 5,
             delay_s: float = 0.0) -> FakeOpenAI:
        return self.push(lambda body: FakeReply(body=completion_body(
            str(body.get("model")), {"role": "assistant", "content": content}, "stop",
            prompt_tokens, completion_tokens, self._next()), delay_s=delay_s))

    def tool_call(self, name: str, args: dict[str, Any] | str, *, call_id: str | None = None,
                  content: str | None = None, prompt_tokens: int = 10,
                  completion_tokens: int = 5) -> FakeOpenAI:
        """One tool call; `args` as a dict (serialised) or a raw argument string."""
        return self.tool_calls([(name, args, call_id)], content=content,
                               prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)

    def tool_calls(self, calls: list[tuple[str, dict[str, Any] | str, str | None]], *,
                   content: str | None = None, prompt_tokens: int = 10,
                   completion_tokens: int = 5) -> FakeOpenAI:
        def reply(body: dict[str, Any]) -> FakeReply:
            seq = self._next()
            tcs = [{"id": cid or f"call_{seq}_{i}", "type": "function",
                    "function": {"name": name,
                                 "arguments": args if isinstance(args, str) else json.dumps(args)}}
                   for i, (name, args, cid) in enumerate(calls)]
            message = {"role": "assistant", "content": content, "tool_calls": tcs}
            return FakeReply(body=completion_body(str(body.get("model")), message, "tool_calls",
                                                  prompt_tokens, completion_tokens, seq))
        return self.push(reply)

    def error(self, status: int, message: str | None = None, *,
              headers: dict[str, str] | None = None, err_type: str = "server_error",
              code: str | None = None) -> FakeOpenAI:
        body = {"error": {"message": message or f"fake error {status}", "type": err_type,
                          "param": None, "code": code}}
        return self.push(FakeReply(status=status, body=body, headers=dict(headers or {})))

    def rate_limit(self, retry_after: str | None = "0") -> FakeOpenAI:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return self.error(429, "Rate limit reached for requests", headers=headers,
                          err_type="requests", code="rate_limit_exceeded")

    def hang(self, seconds: float) -> FakeOpenAI:
        """Answer (a normal text reply) only after `seconds`; the client should time out first."""
        return self.push(lambda body: FakeReply(body=completion_body(
            str(body.get("model")), {"role": "assistant", "content": "too late"}, "stop", 1, 1,
            self._next()), delay_s=seconds))

    def malformed(self) -> FakeOpenAI:
        return self.push(FakeReply(raw=b'{"id": "chatcmpl-broken", "choices": [{"index": 0, '))

    def respond(self, fn: Responder) -> FakeOpenAI:
        return self.push(fn)

    def route(self, model: str, fn: Callable[[dict[str, Any]], Any], *,
              prompt_tokens: int = 10, completion_tokens: int = 5) -> FakeOpenAI:
        """Answer every request for `model` (the name as sent, without a provider prefix)
        with `fn(body)`."""
        def reply(body: dict[str, Any]) -> FakeReply:
            out = fn(body)
            if isinstance(out, FakeReply):
                return out
            message = out if isinstance(out, dict) else {"role": "assistant", "content": out}
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            return FakeReply(body=completion_body(str(body.get("model")), message, finish,
                                                  prompt_tokens, completion_tokens, self._next()))
        with self._lock:
            self._routes[model] = reply
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def _next(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ HTTP

    def _take(self, body: dict[str, Any], headers: dict[str, str]) -> FakeReply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            routed = self._routes.get(str(body.get("model")))
            item = routed or (self._queue.popleft() if self._queue else None)
        if item is None:
            return FakeReply(status=400, body={"error": {
                "message": "fake_openai: response queue is empty", "type": "invalid_request_error",
                "param": None, "code": None}})
        return item if isinstance(item, FakeReply) else item(body)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out in separate writes: without TCP_NODELAY every response
            # waits ~40 ms for the client's delayed ACK
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _send(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up (timeout) and closed the connection
                    self.close_connection = True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else b""
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}})
                               .encode(), {})
                    return
                try:
                    body = json.loads(data or b"{}")
                except ValueError:
                    body = {"_unparsed": data.decode("utf-8", "replace")}
                reply = fake._take(body, {k.lower(): v for k, v in self.headers.items()})
                if reply.delay_s and fake._stop.wait(reply.delay_s):
                    self.close_connection = True
                    return
                payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                self._send(reply.status, payload, reply.headers)

        return Handler


def list_files_agent(body: dict[str, Any]) -> Any:
    """An agent route: looks at the workspace once per user turn, then answers generically."""
    if body["messages"][-1]["role"] == "user":
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{len(body['messages'])}", "type": "function",
            "function": {"name": "list_files", "arguments": json.dumps({"path": "."})}}]}
    return "I reviewed your files and drafted a first pass. Anything else you need?"


@pytest.fixture(name="fake_openai")
def fake_openai_fixture() -> Iterator[FakeOpenAI]:
    """`fake_openai`: a running fake server, shut down after the test. Import
    `fake_openai_fixture` into a test module to use it (the alias keeps linters quiet)."""
    with FakeOpenAI() as server:
        yield server
