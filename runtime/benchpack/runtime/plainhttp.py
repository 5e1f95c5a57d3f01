"""A keep-alive HTTP/1.1 client for the direct OpenAI path's plain `http://` endpoints (a local
or self-hosted server: vLLM, Ollama, a gateway on the same host, the benchmarks' fake server).

Why not aiohttp there (issue 31): aiohttp costs ~0.15 ms of the event loop's CPU a request
(request and response objects, a body-writer task, timers, header multidicts, its connector's
bookkeeping), measured side by side against the same server; at 64 calls in flight a one-call
session has ~0.8 ms of the loop, so about a fifth of it went to the HTTP client. Here a request
is one `write` of bytes made by the caller and the response is parsed in `data_received` as it
arrives: ~0.05 ms.

What it does: one pool of idle connections per (host, port) and event loop, reused while the
server keeps them alive (`Connection: close` and HTTP/1.0 answers are not reused); bodies by
`Content-Length`, `chunked` or up to the server's close; informational (1xx) answers skipped;
the reply-size limit enforced while reading (an announced size at once); a request on a kept
connection that the server had closed meanwhile (no byte of an answer came back) is sent again
once on a new connection, as a browser does. What it leaves to aiohttp: TLS (`https://`),
redirects (a 3xx answer is returned as `Redirect`, and the caller sends the request through
aiohttp, which follows it). Neither client uses a proxy (the aiohttp session does not read the
environment's) nor asks for compression."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable


class Redirect(Exception):
    """A 3xx answer: for a client that follows redirects."""


class ReplyTooLarge(Exception):
    """The body is larger than the caller's limit: `size` bytes (`known`: announced, else the
    bytes read when it crossed the limit)."""

    def __init__(self, size: int, known: bool) -> None:
        super().__init__(size)
        self.size, self.known = size, known


class _Answer:
    """What a connection parsed: status, headers (names as sent), body, whether to keep it."""

    __slots__ = ("body", "headers", "keep", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes, keep: bool) -> None:
        self.status, self.headers, self.body, self.keep = status, headers, body, keep


class _Connection(asyncio.Protocol):
    """One TCP connection; a request at a time. `waiter` gets the next complete answer."""

    def __init__(self, limit: int) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[_Answer] | None = None
        self.closed = False
        self.received = 0
        """Bytes received since the current request was written."""
        self.limit = limit
        self._head: tuple[int, dict[str, str], int | None, bool, bool] | None = None
        """(status, headers, content length, chunked, keep) of the answer being read."""
        self._parts: list[bytes] = []
        self._size = 0
        """The chunks of a chunked body read so far, and their size."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        self.received += len(data)
        if self.waiter is not None and not self.waiter.done():
            try:
                self._parse(eof=False)
            except Exception as exc:  # a malformed or oversized answer ends the connection
                self._fail(exc)

    def eof_received(self) -> bool | None:
        return None  # close the transport: `connection_lost` follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            try:
                if self._head is not None and self._head[2] is None and not self._head[3]:
                    self._parse(eof=True)  # a body that ends where the server closes
            except Exception as err:
                waiter.set_exception(err)
                return
            if not waiter.done():
                waiter.set_exception(ConnectionResetError(
                    "the server closed the connection before a whole answer"
                    + (f" ({exc})" if exc else "")))

    def _fail(self, exc: BaseException) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _parse(self, eof: bool) -> None:
        buf = self.buf
        while self._head is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > 65536:
                    raise ConnectionError("the answer's header is longer than 64 KiB")
                return
            lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
            del buf[:end + 4]
            version, _, rest = lines[0].partition(" ")
            try:
                status = int(rest[:3])
            except ValueError:
                raise ConnectionError(f"not an HTTP answer: {lines[0][:80]!r}") from None
            if 100 <= status < 200:
                continue  # informational: the answer follows
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    name, value = name.strip(), value.strip()
                    if name in headers:  # repeated: joined, as a multidict's values read
                        value = f"{headers[name]}, {value}"
                    headers[name] = value
            low = {k.lower(): v.lower() for k, v in headers.items()
                   if k.lower() in ("content-length", "transfer-encoding", "connection")}
            chunked = "chunked" in low.get("transfer-encoding", "")
            length: int | None = None
            if not chunked and "content-length" in low:
                try:
                    length = int(low["content-length"])
                except ValueError:
                    raise ConnectionError("the answer's Content-Length is not a number") \
                        from None
                if length > self.limit:
                    raise ReplyTooLarge(length, known=True)
            if status in (204, 304):
                length = 0
            conn = low.get("connection", "")
            keep = ("keep-alive" in conn) if version == "HTTP/1.0" else ("close" not in conn)
            if length is None and not chunked:
                keep = False  # the body ends where the server closes
            self._head = (status, headers, length, chunked, keep)
        status, headers, length, chunked, keep = self._head
        if chunked:
            body = self._chunks()
            if body is None:
                return
        elif length is not None:
            if len(buf) < length:
                return
            body = bytes(buf[:length])
            del buf[:length]
        else:
            if len(buf) > self.limit:
                raise ReplyTooLarge(len(buf), known=False)
            if not eof:
                return
            body = bytes(buf)
            buf.clear()
        self._head = None
        if buf:  # bytes after a whole answer to one request: not a connection to reuse
            keep = False
        assert self.waiter is not None
        self.waiter.set_result(_Answer(status, headers, body, keep))

    def _chunks(self) -> bytes | None:
        """The whole chunked body once its last chunk is in, else None; whole chunks are taken
        out of the buffer as they come (`_parts`), so a long body is parsed once."""
        buf = self.buf
        while True:
            line_end = buf.find(b"\r\n")
            if line_end < 0:
                return None
            try:
                size = int(bytes(buf[:line_end]).split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise ConnectionError("a malformed chunk size in the answer") from None
            if size == 0:
                end = buf.find(b"\r\n\r\n", line_end)  # trailers, then an empty line
                if end < 0:
                    return None
                del buf[:end + 4]
                body, self._parts, self._size = b"".join(self._parts), [], 0
                return body
            if self._size + size > self.limit:
                raise ReplyTooLarge(self._size + size, known=False)
            start = line_end + 2
            if len(buf) < start + size + 2:
                return None
            self._parts.append(bytes(buf[start:start + size]))
            self._size += size
            del buf[:start + size + 2]


class PlainPool:
    """Idle connections by (host, port), for one event loop."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._all: weakref.WeakSet[_Connection] = weakref.WeakSet()

    async def post(self, host: str, port: int, request: bytes, limit: int,
                   timeout_s: float) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) of `request` (the whole HTTP request's bytes) sent to
        `host:port`. Raises `Redirect` on a 3xx answer, `ReplyTooLarge` past `limit`,
        `TimeoutError` after `timeout_s`, `OSError` (`ConnectionError`) when the exchange
        fails."""
        async with asyncio.timeout(timeout_s):
            for fresh in (False, True):
                conn = self._take(host, port) if not fresh else None
                if conn is None:
                    conn = await self._connect(host, port, limit)
                    fresh = True
                conn.limit, conn.received = limit, 0
                conn.waiter = waiter = asyncio.get_running_loop().create_future()
                try:
                    assert conn.transport is not None
                    conn.transport.write(request)
                    answer = await waiter
                except ConnectionError:
                    conn.close()
                    # a kept connection the server closed while idle: nothing was answered, so
                    # the request is sent once more on a new one
                    if not fresh and conn.received == 0:
                        continue
                    raise
                except BaseException:  # timeout, cancellation, a refused reply: not reusable
                    conn.close()
                    raise
                finally:
                    conn.waiter = None
                if answer.keep and not conn.closed:
                    self._idle.setdefault((host, port), []).append(conn)
                else:
                    conn.close()
                if 300 <= answer.status < 400:
                    raise Redirect(answer.status)
                return answer.status, answer.headers, answer.body
        raise AssertionError("unreachable")  # pragma: no cover

    def _take(self, host: str, port: int) -> _Connection | None:
        idle = self._idle.get((host, port))
        while idle:
            conn = idle.pop()
            if conn.buf:  # bytes nobody asked for: not a connection to trust
                conn.close()
            elif (not conn.closed and conn.transport is not None
                    and not conn.transport.is_closing()):
                return conn
        return None

    async def _connect(self, host: str, port: int, limit: int) -> _Connection:
        loop = asyncio.get_running_loop()
        made: Callable[[], _Connection] = lambda: _Connection(limit)  # noqa: E731
        _, conn = await loop.create_connection(made, host, port)
        self._all.add(conn)
        return conn

    def close(self) -> None:
        """Close every connection (the event loop is ending)."""
        for conn in list(self._all):
            conn.close()
        self._idle.clear()


def request_bytes(path: str, host_header: str, headers: dict[str, str], body: bytes) -> bytes:
    """A POST request's bytes (HTTP/1.1, keep-alive, the body after the head)."""
    head = [f"POST {path} HTTP/1.1", f"Host: {host_header}", "Accept: */*",
            f"Content-Length: {len(body)}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("utf-8") + body

