"""aiohttp's request body written where the request is made (`openai_direct.eager_body_writes`,
issue 31): before Python 3.12 aiohttp writes it from a task of its own, run only after
everything already queued on the loop, so at 64 in flight the replacement requests waited for
the other sessions' Python. A body that must wait for the socket goes on in a task, and a
cancellation reaches it there; other tasks, and a loop with a task factory of its own, are
left as they were. The loop steps a session saves are counted in test_per_session_work.py."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from benchpack.runtime.openai_direct import OpenAIDirectBackend, eager_body_writes

BIG = 4 * 1024 * 1024  # past the socket buffers: the write has to wait for the server


class Server:
    """Answers each whole request `{"n": <its body's length>}`; the first connection reads
    nothing while `stall` (a write to it waits for good)."""

    def __init__(self, stall: bool = False) -> None:
        self.stall = stall
        self.lengths: list[int] = []
        self.connections = 0

    async def start(self) -> int:
        server = self

        class Proto(asyncio.Protocol):
            def connection_made(self, transport: Any) -> None:
                server.connections += 1
                self.transport, self.buf = transport, b""
                if server.stall and server.connections == 1:
                    transport.pause_reading()

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
                server.lengths.append(length)
                body = b'{"n": %d}' % length
                self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

        self.server = await asyncio.get_running_loop().create_server(Proto, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])


def _post(backend: OpenAIDirectBackend, port: int, body: bytes, timeout: float = 10.0) -> Any:
    return backend._post(f"http://127.0.0.1:{port}/v1/chat/completions", body,
                         {"Content-Type": "application/json"}, timeout)


@pytest.fixture
def rests(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many writes went on in a task after their eager start."""
    from benchpack.runtime import openai_direct

    seen: list[int] = []
    real = openai_direct._finish

    def finish(coro: Any, first: Any) -> Any:
        seen.append(1)
        return real(coro, first)
    monkeypatch.setattr(openai_direct, "_finish", finish)
    return seen


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="aiohttp starts its writer eagerly")
def test_a_body_that_must_wait_is_written_whole_after_the_eager_start(rests: list[int]) -> None:
    async def main() -> Any:
        server = Server()
        port = await server.start()
        backend = OpenAIDirectBackend()
        try:
            small = await _post(backend, port, b'{"model": "m"}')
            assert asyncio.get_running_loop().get_task_factory() is not None
            big = await _post(backend, port, b"x" * BIG)  # waits for the socket: in a task
            again = await _post(backend, port, b'{"model": "m"}')
        finally:
            await backend.aclose()
            server.server.close()
        return small, big, again, server

    small, big, again, server = asyncio.run(main())
    assert [r[2] for r in (small, big, again)] == [b'{"n": 14}', b'{"n": %d}' % BIG,
                                                  b'{"n": 14}']
    assert server.lengths == [14, BIG, 14] and server.connections == 1
    assert rests == [1]  # the big one; the small ones were written where they were made


def test_a_cancelled_waiting_write_drops_its_connection(rests: list[int]) -> None:
    """The server never reads the first connection: the 4 MB body waits for the socket until
    the request's timeout cancels it; the connection is dropped and the next request goes out
    on a new one."""
    async def main() -> Any:
        server = Server(stall=True)
        port = await server.start()
        backend = OpenAIDirectBackend()
        try:
            with pytest.raises(TimeoutError):
                await _post(backend, port, b"x" * BIG, timeout=0.3)
            again = await _post(backend, port, b'{"model": "m"}')
        finally:
            await backend.aclose()
            server.server.close()
        return again, server

    again, server = asyncio.run(main())
    assert again[2] == b'{"n": 14}' and server.connections == 2
    assert rests == ([1] if sys.version_info < (3, 12) else [])


def test_other_tasks_and_a_loop_with_its_own_factory_are_left_alone() -> None:
    async def other() -> str:
        await asyncio.sleep(0)
        return "done"

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        set_ = eager_body_writes(loop)
        task = loop.create_task(other())
        assert isinstance(task, asyncio.Task) and not task.done()  # not started eagerly
        return set_, await task

    set_, result = asyncio.run(main())
    assert set_ is (sys.version_info < (3, 12)) and result == "done"

    def mine(loop: Any, coro: Any, **kw: Any) -> Any:
        return asyncio.Task(coro, loop=loop, **kw)

    async def theirs() -> Any:
        loop = asyncio.get_running_loop()
        loop.set_task_factory(mine)
        return eager_body_writes(loop), loop.get_task_factory()

    assert asyncio.run(theirs()) == (False, mine)
