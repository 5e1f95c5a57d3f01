"""`plainhttp`, the direct OpenAI path's client for plain `http://` endpoints (issue 31), against
a raw asyncio server that answers each request with scripted bytes: bodies by length, chunked
and up to the close; connections kept, closed, and closed by the server while idle (the request
sent again once); informational answers skipped; redirects, oversized replies and timeouts."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.runtime.plainhttp import PlainPool, Redirect, ReplyTooLarge, make_request

OK = b'{"ok": true}'


def _length(body: bytes = OK, extra: bytes = b"") -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n" + extra + b"\r\n" + body)


class Server:
    """Answers the n-th request with `answers[n]`: bytes, a list of bytes written apart
    (with a pause between), or a callable given the transport."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.requests: list[bytes] = []
        self.connections = 0
        self.transports: list[Any] = []
        self.sending: list[asyncio.Future[None]] = []

    async def start(self) -> int:
        server = self

        class Proto(asyncio.Protocol):
            def connection_made(self, transport: Any) -> None:
                server.connections += 1
                server.transports.append(transport)
                self.transport, self.buf = transport, b""

            def data_received(self, data: bytes) -> None:
                self.buf += data
                head, sep, rest = self.buf.partition(b"\r\n\r\n")
                if not sep:
                    return
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                if len(rest) < length:
                    return
                self.buf = rest[length:]
                server.requests.append(head + b"\r\n\r\n" + rest[:length])
                answer = server.answers[len(server.requests) - 1]
                server.sending.append(asyncio.ensure_future(server.send(self.transport, answer)))

        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(Proto, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def send(self, transport: Any, answer: Any) -> None:
        if callable(answer):
            await answer(transport)
        elif isinstance(answer, list):
            for part in answer:
                transport.write(part)
                await asyncio.sleep(0.01)
        else:
            transport.write(answer)

    def close(self) -> None:
        self.server.close()


def _run(answers: list[Any], body: Callable[[PlainPool, int, Server], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        server = Server(answers)
        port = await server.start()
        pool = PlainPool()
        try:
            return await body(pool, port, server), server
        finally:
            pool.close()
            server.close()
    return asyncio.run(main())


def _post(pool: PlainPool, port: int, limit: int = 1 << 20, timeout: float = 5.0
          ) -> Awaitable[tuple[int, dict[str, str], bytes]]:
    request = make_request("/v1/chat/completions", f"127.0.0.1:{port}",
                            {"Content-Type": "application/json"}, b'{"model": "m"}')
    return pool.post("127.0.0.1", port, request, limit, timeout)


def test_a_kept_connection_serves_the_next_request() -> None:
    async def two(pool: PlainPool, port: int, server: Server) -> Any:
        return [await _post(pool, port), await _post(pool, port)]

    (first, second), server = _run([_length(), _length(b'{"n": 2}')], two)
    assert first == (200, {"Content-Type": "application/json", "Content-Length": "12"}, OK)
    assert second[2] == b'{"n": 2}'
    assert server.connections == 1
    head = server.requests[0].split(b"\r\n\r\n")[0].split(b"\r\n")
    assert head[0] == b"POST /v1/chat/completions HTTP/1.1"
    assert any(line.startswith(b"Host: 127.0.0.1:") for line in head)
    assert b"Content-Length: 14" in head and server.requests[0].endswith(b'{"model": "m"}')


def test_a_chunked_body_split_across_writes() -> None:
    chunked = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"ok\"", b"\r\n",
               b"7;ext=1\r\n: true}\r\n", b"0\r\nX-Trailer: 1\r\n\r\n"]

    async def two(pool: PlainPool, port: int, server: Server) -> Any:
        return [await _post(pool, port), await _post(pool, port)]

    (first, second), server = _run([chunked, _length()], two)
    assert first[2] == OK and second[2] == OK
    assert server.connections == 1  # the trailer consumed: the connection stays usable


def test_connection_close_and_http10_are_not_reused() -> None:
    until_close = [b"HTTP/1.0 200 OK\r\n\r\n{\"ok\": ", b"true}"]

    async def close_after(transport: Any) -> None:
        await Server([]).send(transport, until_close)
        transport.close()

    async def three(pool: PlainPool, port: int, server: Server) -> Any:
        return [await _post(pool, port) for _ in range(3)]

    answers, server = _run([_length(extra=b"Connection: close\r\n"), close_after, _length()],
                           three)
    assert [a[2] for a in answers] == [OK, OK, OK]
    assert server.connections == 3


def test_informational_answers_are_skipped() -> None:
    answer, _ = _run([b"HTTP/1.1 100 Continue\r\n\r\n" + _length()],
                     lambda pool, port, server: _post(pool, port))
    assert answer[0] == 200 and answer[2] == OK


def test_a_kept_connection_closed_while_idle_is_retried_once_on_a_new_one() -> None:
    async def two(pool: PlainPool, port: int, server: Server) -> Any:
        first = await _post(pool, port)
        server.transports[0].close()  # the server's keep-alive timeout
        await asyncio.sleep(0)
        return [first, await _post(pool, port)]

    (first, second), server = _run([_length(), _length()], two)
    assert first[2] == OK and second[2] == OK and server.connections == 2


def test_a_connection_closed_mid_answer_is_an_error_not_a_resend() -> None:
    async def half(transport: Any) -> None:
        transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"ok\"")
        await asyncio.sleep(0.01)
        transport.close()

    async def one(pool: PlainPool, port: int, server: Server) -> Any:
        with pytest.raises(ConnectionError):
            await _post(pool, port)
        return len(server.requests)

    sent, _ = _run([half, _length()], one)
    assert sent == 1


def test_replies_over_the_limit_are_refused() -> None:
    async def announced(pool: PlainPool, port: int, server: Server) -> Any:
        with pytest.raises(ReplyTooLarge) as info:
            await _post(pool, port, limit=11)
        return info.value

    exc, _ = _run([_length()], announced)  # 12 bytes announced, 11 allowed
    assert (exc.size, exc.known) == (12, True)
    big = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", b"8\r\n12345678\r\n",
           b"8\r\n12345678\r\n", b"0\r\n\r\n"]
    exc, _ = _run([big], announced)
    assert (exc.size, exc.known) == (16, False)
    kept, _ = _run([_length()], lambda pool, port, server: _post(pool, port, limit=12))
    assert kept[2] == OK  # exactly at the limit: kept


def test_a_redirect_is_left_to_the_caller() -> None:
    async def one(pool: PlainPool, port: int, server: Server) -> Any:
        with pytest.raises(Redirect):
            await _post(pool, port)

    _run([b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /v2\r\nContent-Length: 0\r\n\r\n"], one)


def test_a_timeout_drops_the_connection() -> None:
    async def never(transport: Any) -> None:
        return None

    async def two(pool: PlainPool, port: int, server: Server) -> Any:
        with pytest.raises(TimeoutError):
            await _post(pool, port, timeout=0.2)
        return await _post(pool, port)  # a late answer to the first cannot be taken for this

    answer, server = _run([never, _length()], two)
    assert answer[2] == OK and server.connections == 2


def test_a_run_against_a_plain_http_endpoint_never_imports_aiohttp(
        fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """aiohttp's import builds SSL contexts (0.1-0.2 s of CPU a run, in a thread beside the
    start-up): a `bench run` whose every call goes to an `http://` endpoint does without it."""
    import json
    import subprocess
    import sys

    from benchpack.compiler import compile_pack

    fake_openai.route("bench-model", lambda body: "Here is the summary.")
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "pack.yaml").write_text(
        "benchpack: 1\nname: plain\npersonas:\n  - id: p\n    profile: {role: Analyst}\n"
        "episodes:\n  - id: e1\n    persona: p\n    sessions:\n      - id: s\n"
        "        protocol: intent_tracking\n        request: Summarise the note.\n",
        encoding="utf-8")
    assert compile_pack(pack, tmp_path / "plan", use_cache=False).ok
    probe = ("import atexit, json, sys\natexit.register(lambda: print('MODULES=' + json.dumps("
             "sorted(sys.modules)), file=sys.__stderr__))\nsys.argv = ['bench', *json.loads("
             "sys.argv[1])]\nfrom benchpack.cli import main\nmain()\n")
    args = ["run", str(tmp_path / "plan"), "--agent", "litellm:openai/bench-model", "--judge",
            "rules", "--simulator", "rules", "--api-base", fake_openai.base_url, "--quiet",
            "--db", str(tmp_path / "run.duckdb"), "--cache-dir", str(tmp_path / "c")]
    res = subprocess.run([sys.executable, "-c", probe, json.dumps(args)], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "OPENAI_API_KEY": "no-key"})
    assert res.returncode == 0, res.stderr[-2000:]
    mods = json.loads(next(x for x in res.stderr.splitlines() if x.startswith("MODULES="))
                      .removeprefix("MODULES="))
    assert "benchpack.runtime.plainhttp" in mods and len(fake_openai.requests) == 1
    assert [m for m in mods if m.split(".")[0] == "aiohttp"] == []


def test_a_redirect_is_followed_through_aiohttp(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """`plainhttp` follows no redirect: the direct backend sends the request again through
    aiohttp, which does (a 307 keeps the method and the body)."""
    from fake_openai import FakeReply

    from benchpack.runtime.cache import ResponseCache
    from benchpack.runtime.llm import LLMClient, LLMConfig

    fake_openai.push(FakeReply(status=307, raw=b"", headers={
        "Location": fake_openai.base_url + "/chat/completions"}))
    fake_openai.text("fine")
    client = LLMClient(LLMConfig(api_base=fake_openai.base_url, api_key="k", timeout_s=10.0),
                       cache=ResponseCache(tmp_path / "c", enabled=False))

    async def ask() -> Any:
        return await client.complete(role="agent", model="litellm:openai/fake-model",
                                     messages=[{"role": "user", "content": "hi"}],
                                     recorder=lambda record: None)

    assert asyncio.run(ask()).content == "fine"
    assert len(fake_openai.requests) == 2
    assert fake_openai.requests[0]["messages"] == fake_openai.requests[1]["messages"]
