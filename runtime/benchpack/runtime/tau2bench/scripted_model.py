"""A local OpenAI-compatible endpoint whose answers are a pure function of the request: the
"model" both sides of a dialogue-parity check talk to.

Both τ²-bench's orchestrator and benchpack's runtime are pointed at one `ScriptedModel`; the
agent, user simulator and judge are told apart by the request's `model` name (`<prefix>-agent-
<kind>`, `-user-`, `-judge-`), the task by the scenario text in the user simulator's system
prompt, then by the marker the scripted user writes into its opening message. Because an answer
depends only on what the request contains, identical conversations get identical answers on
both sides, whatever the concurrency; a difference in what one side shows its model shows up as
a different request (recorded), and usually as a different outcome too.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, str, dict[str, Any]], dict[str, Any]]
"""(role, kind, request body) → the assistant message to answer with."""


def completion(model: str, message: dict[str, Any], n: int) -> dict[str, Any]:
    calls = bool(message.get("tool_calls"))
    return {"id": f"chatcmpl-scripted-{n}", "object": "chat.completion", "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


class _Server(ThreadingHTTPServer):
    request_queue_size = 128
    daemon_threads = True


class ScriptedModel:
    """`with ScriptedModel(answer, prefix) as m:` … `m.base_url`, `m.requests`."""

    NAME = re.compile(r"(?P<role>agent|user|judge)-(?P<kind>[a-z_]+)$")

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def _handle(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        model = str(body.get("model", ""))
        m = self.NAME.search(model)
        with self._lock:
            self.requests.append(body)
            n = len(self.requests)
        if m is None:
            return 400, {"error": {"message": f"unknown model {model!r}"}}
        try:
            message = self.answer(m["role"], m["kind"], body)
        except Exception as exc:  # the script cannot answer: a visible failure, not a hang
            with self._lock:
                self.failures.append(f"{model}: {type(exc).__name__}: {exc}")
            return 400, {"error": {"message": f"scripted model: {exc}"}}
        return 200, completion(model, message, n)

    def __enter__(self) -> ScriptedModel:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(size) or b"{}")
                except json.JSONDecodeError:
                    status, out = 400, {"error": {"message": "not JSON"}}
                else:
                    status, out = outer._handle(body)
                data = json.dumps(out).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
