"""The direct OpenAI path's HTTP exchange on a plain `http://` endpoint (aiohttp, issue 31),
against a raw asyncio server that answers each request with scripted bytes: bodies by length,
chunked and up to the close; connections kept, closed, and closed by the server while idle;
informational answers skipped; malformed answers, answers cut short, oversized replies and
timeouts are the errors `LLMClient` reads (retryable or not), never a hang or a wrong body.
These cases were `plainhttp`'s, a hand-written client for `http://` endpoints that went when the
same client on h11 proved no cheaper than aiohttp (benchmarks/README.md, client_bench.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.runtime.llm import LLMError
from benchpack.runtime.llmerrors import is_retryable
from benchpack.runtime.openai_direct import OpenAIDirectBackend

OK = b'{"ok": true}'
Post = Callable[..., Awaitable[tuple[int, dict[str, str], bytes]]]


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


def _run(answers: list[Any], body: Callable[[Post, Server], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        server = Server(answers)
        port = await server.start()
        backend = OpenAIDirectBackend()

        async def post(timeout: float = 5.0
                       ) -> tuple[int, dict[str, str], bytes]:
            return await backend._post(
                f"http://127.0.0.1:{port}/v1/chat/completions", b'{"model": "m"}',
                {"Content-Type": "application/json"}, timeout)
        try:
            return await body(post, server), server
        finally:
            await backend.aclose()
            server.close()
    return asyncio.run(main())


def test_a_kept_connection_serves_the_next_request() -> None:
    async def two(post: Post, server: Server) -> Any:
        return [await post(), await post()]

    (first, second), server = _run([_length(), _length(b'{"n": 2}')], two)
    assert first[0] == 200 and first[2] == OK and first[1]["Content-Type"] == "application/json"
    assert second[2] == b'{"n": 2}'
    assert server.connections == 1
    head = server.requests[0].split(b"\r\n\r\n")[0].split(b"\r\n")
    assert head[0] == b"POST /v1/chat/completions HTTP/1.1"
    assert any(line.startswith(b"Host: 127.0.0.1:") for line in head)
    assert b"Content-Length: 14" in head and server.requests[0].endswith(b'{"model": "m"}')


def test_a_chunked_body_split_across_writes() -> None:
    chunked = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"ok\"", b"\r\n",
               b"7;ext=1\r\n: true}\r\n", b"0\r\nX-Trailer: 1\r\n\r\n"]

    async def two(post: Post, server: Server) -> Any:
        return [await post(), await post()]

    (first, second), server = _run([chunked, _length()], two)
    assert first[2] == OK and second[2] == OK
    assert server.connections == 1  # the trailer consumed: the connection stays usable


def test_connection_close_and_http10_are_not_reused() -> None:
    until_close = [b"HTTP/1.0 200 OK\r\n\r\n{\"ok\": ", b"true}"]

    async def close_after(transport: Any) -> None:
        await Server([]).send(transport, until_close)
        transport.close()

    async def three(post: Post, server: Server) -> Any:
        return [await post() for _ in range(3)]

    answers, server = _run([_length(extra=b"Connection: close\r\n"), close_after, _length()],
                           three)
    assert [a[2] for a in answers] == [OK, OK, OK]
    assert server.connections == 3


def test_informational_answers_are_skipped() -> None:
    answer, _ = _run([b"HTTP/1.1 100 Continue\r\n\r\n" + _length()],
                     lambda post, server: post())
    assert answer[0] == 200 and answer[2] == OK


def test_a_kept_connection_closed_while_idle_costs_at_most_a_retryable_error() -> None:
    """aiohttp sends a POST again on a new connection only when it saw the close before
    reusing the connection (it resends idempotent methods only): otherwise the call fails
    with a retryable `ConnectionError` and `LLMClient` retries it."""
    async def two(post: Post, server: Server) -> Any:
        first = await post()
        server.transports[0].close()  # the server's keep-alive timeout
        await asyncio.sleep(0.05)
        try:
            return [first, await post()]
        except ConnectionError as exc:
            assert is_retryable(exc)
            return [first, await post()]

    (first, second), server = _run([_length(), _length(), _length()], two)
    assert first[2] == OK and second[2] == OK and server.connections == 2


def test_a_connection_closed_mid_answer_is_a_retryable_error() -> None:
    async def half(transport: Any) -> None:
        transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"ok\"")
        await asyncio.sleep(0.01)
        transport.close()

    async def one(post: Post, server: Server) -> Any:
        with pytest.raises(ConnectionError) as info:
            await post()
        assert is_retryable(info.value)
        return len(server.requests)

    sent, _ = _run([half, _length()], one)
    assert sent == 1


@pytest.mark.parametrize("answer", [
    # a chunk's data not ended by CRLF (request smuggling's material: CVE-2025-43859 in h11
    # < 0.16; the hand-written plainhttp dropped any two bytes there and returned a body)
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"ok\"XX7\r\n: true}\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 1_2\r\n\r\n" + OK,  # int() reads 12; HTTP does not
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 12\r\n\r\n" + OK,
    b"not HTTP at all\r\n\r\n",
])
def test_a_malformed_answer_is_a_connection_error_not_a_body(answer: bytes) -> None:
    """Through the backend's own routing (`__call__`), as a run calls it."""
    from benchpack.runtime.llm import BackendRequest

    async def main() -> BaseException:
        server = Server([answer])
        port = await server.start()
        backend = OpenAIDirectBackend()
        try:
            with pytest.raises(ConnectionError) as info:
                await asyncio.wait_for(backend(BackendRequest(
                    model="openai/fake-model", messages=[{"role": "user", "content": "hi"}],
                    tools=None, params={}, seed=None, timeout_s=5.0,
                    api_base=f"http://127.0.0.1:{port}/v1", api_key="k")), 5.0)
            return info.value
        finally:
            await backend.aclose()
            server.close()

    assert is_retryable(asyncio.run(main()))


def test_replies_over_the_limit_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    async def refused(post: Post, server: Server) -> Any:
        with pytest.raises(LLMError) as info:
            await post()
        return info.value

    monkeypatch.setenv("BENCHPACK_LIMIT_MODEL_REPLY_BYTES", "11")
    exc, _ = _run([_length()], refused)  # 12 bytes announced, 11 allowed
    assert not exc.retryable and "12" in str(exc)
    big = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", b"8\r\n12345678\r\n",
           b"8\r\n12345678\r\n", b"0\r\n\r\n"]
    exc, _ = _run([big], refused)
    assert not exc.retryable and "reading stopped there" in str(exc)
    monkeypatch.setenv("BENCHPACK_LIMIT_MODEL_REPLY_BYTES", "12")
    kept, _ = _run([_length()], lambda post, server: post())
    assert kept[2] == OK  # exactly at the limit: kept


def test_a_timeout_drops_the_connection() -> None:
    async def never(transport: Any) -> None:
        return None

    async def two(post: Post, server: Server) -> Any:
        with pytest.raises(TimeoutError):
            await post(timeout=0.2)
        return await post()  # a late answer to the first cannot be taken for this

    answer, server = _run([never, _length()], two)
    assert answer[2] == OK and server.connections == 2


def test_a_redirect_is_followed_through_aiohttp(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """A redirect is followed (a 307 keeps the method and the body)."""
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
