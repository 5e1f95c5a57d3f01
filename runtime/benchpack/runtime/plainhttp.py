"""A keep-alive HTTP/1.1 client for the direct OpenAI path's plain `http://` endpoints (a local
or self-hosted server: vLLM, Ollama, a gateway on the same host, the benchmarks' fake server).

Why not aiohttp there (issue 31): aiohttp costs ~0.15 ms of the event loop's CPU a request
(request and response objects, a body-writer task, timers, header multidicts, its connector's
bookkeeping), measured side by side against the same server; at 64 calls in flight a one-call
session has ~0.8 ms of the loop, so about a fifth of it went to the HTTP client. Here a request
is one `write` and the answer is parsed in `data_received` as it arrives.

The protocol is h11's (python-hyper's HTTP/1.1 state machine, sans I/O): the request's
framing, and the answer's status line, headers, body by `Content-Length`, `chunked` or up to
the server's close, informational (1xx) answers, and whether the connection may serve another
request (`Connection: close`, HTTP/1.0, a close-delimited body, bytes past the answer: not).
A malformed answer (a bad status line or chunk, conflicting lengths, a chunk's data not ended
by CRLF — CVE-2025-43859, fixed in h11 0.16) is a `ConnectionError` and the connection is
dropped. What is ours: the asyncio protocol, one pool of idle connections per (host, port)
and event loop, the reply-size limit enforced while reading (an announced size at once), and
a request on a kept connection that the server had closed meanwhile (no byte of an answer
came back) sent again once on a new connection, as a browser does. What it leaves to aiohttp:
TLS (`https://`), redirects (a 3xx answer is returned as `Redirect`, and the caller sends the
request through aiohttp, which follows it), and a request h11 will not frame (`make_request`
raises `ValueError`: a target or header with characters HTTP forbids). Neither client uses a
proxy (the aiohttp session does not read the environment's) nor asks for compression."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import NamedTuple

import h11

_HEAD_LIMIT = 65536
"""The longest status line and headers accepted (h11's `max_incomplete_event_size`)."""


class Redirect(Exception):
    """A 3xx answer: for a client that follows redirects."""


class ReplyTooLarge(Exception):
    """The body is larger than the caller's limit: `size` bytes (`known`: announced, else the
    bytes read when it crossed the limit)."""

    def __init__(self, size: int, known: bool) -> None:
        super().__init__(size)
        self.size, self.known = size, known


class Request(NamedTuple):
    """A POST as h11 sends it: the validated head and the body. Sent as is again on a new
    connection when a kept one turns out closed."""

    head: h11.Request
    body: bytes


def make_request(path: str, host_header: str, headers: dict[str, str], body: bytes) -> Request:
    """A POST request (HTTP/1.1, keep-alive, `Content-Length`). `ValueError` when h11 will not
    frame it; the message names the header, never its value (it may be a key)."""
    fields = [("Host", host_header), ("Accept", "*/*"), ("Content-Length", str(len(body))),
              *headers.items()]
    try:
        return Request(h11.Request(method="POST", target=path, headers=fields), body)
    except (h11.LocalProtocolError, UnicodeError):
        pass
    for name, value in fields:  # which one, for the message
        try:
            h11.Request(method="POST", target="/", headers=[("Host", "h"), (name, value)])
        except (h11.LocalProtocolError, UnicodeError):
            raise ValueError(f"the request's `{name}` header has characters HTTP does not "
                             "allow in one (a newline, a control or non-ASCII character)"
                             ) from None
    raise ValueError(f"the request target {path[:200]!r} has characters HTTP does not allow "
                     "in one")


class _Answer(NamedTuple):
    status: int
    headers: dict[str, str]
    """Names as sent; a repeated header's values joined with `, `, as a multidict reads them."""
    body: bytes
    keep: bool
    """The connection may serve another request."""


class _Connection(asyncio.Protocol):
    """One TCP connection; a request at a time. `waiter` gets the next complete answer."""

    def __init__(self, limit: int) -> None:
        self.transport: asyncio.Transport | None = None
        self.http = h11.Connection(h11.CLIENT, max_incomplete_event_size=_HEAD_LIMIT)
        self.waiter: asyncio.Future[_Answer] | None = None
        self.closed = False
        self.stray = False
        """Bytes came while no request was waiting: not a connection to trust."""
        self.received = 0
        """Bytes received since the current request was written."""
        self.limit = limit
        self._status = 0
        self._headers: dict[str, str] = {}
        self._parts: list[bytes] = []
        self._size = 0
        """The body read so far, and its size."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, request: Request, waiter: asyncio.Future[_Answer]) -> None:
        http = self.http
        data = (http.send(request.head) + http.send(h11.Data(data=request.body))
                + http.send(h11.EndOfMessage()))
        self.waiter, self.received = waiter, 0
        self._status, self._headers, self._parts, self._size = 0, {}, [], 0
        assert self.transport is not None
        self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        self.received += len(data)
        if self.waiter is None or self.waiter.done():
            self.stray = True
            return
        self.http.receive_data(data)
        try:
            self._read()
        except Exception as exc:  # a malformed or oversized answer ends the connection
            self._fail(exc)

    def eof_received(self) -> bool | None:
        return None  # close the transport: `connection_lost` follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if exc is None:  # a clean close: it ends a close-delimited body, nothing else
            self.http.receive_data(b"")
            try:
                self._read()
            except Exception as err:
                if not waiter.done():
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

    def _read(self) -> None:
        """Take h11's events until the answer is whole (the waiter's result) or more bytes are
        needed; `ConnectionError` for what h11 refuses."""
        http = self.http
        while True:
            try:
                event = http.next_event()
            except h11.RemoteProtocolError as exc:
                if http.trailing_data[1]:  # the server closed before the answer was whole
                    raise ConnectionResetError("the server closed the connection before a "
                                               f"whole answer ({str(exc)[:200]})") from None
                raise ConnectionError(f"a malformed HTTP answer: {str(exc)[:200]}") from None
            if isinstance(event, h11.Data):
                self._size += len(event.data)
                if self._size > self.limit:
                    raise ReplyTooLarge(self._size, known=False)
                self._parts.append(event.data)
            elif isinstance(event, h11.Response):
                self._head(event)
            elif isinstance(event, h11.EndOfMessage):
                break
            elif event is h11.NEED_DATA:
                return
            elif not isinstance(event, h11.InformationalResponse):  # pragma: no cover
                # ConnectionClosed, PAUSED: only after an answer's end, which returned above
                raise ConnectionResetError("the server closed the connection before a whole "
                                           "answer")
            # an informational (1xx) answer: the real one follows
        keep = (http.our_state is h11.DONE and http.their_state is h11.DONE
                and not http.trailing_data[0])  # bytes past the answer: not to be trusted
        if keep:
            http.start_next_cycle()
        body, self._parts = b"".join(self._parts), []
        assert self.waiter is not None
        self.waiter.set_result(_Answer(self._status, self._headers, body, keep))

    def _head(self, event: h11.Response) -> None:
        headers: dict[str, str] = {}
        for raw, value in event.headers.raw_items():
            name, text = raw.decode("latin-1"), value.decode("latin-1")
            if name in headers:
                text = f"{headers[name]}, {text}"
            headers[name] = text
            if len(raw) == 14 and raw.lower() == b"content-length" and int(value) > self.limit:
                raise ReplyTooLarge(int(value), known=True)
        self._status, self._headers = event.status_code, headers


class PlainPool:
    """Idle connections by (host, port), for one event loop."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._all: weakref.WeakSet[_Connection] = weakref.WeakSet()

    async def post(self, host: str, port: int, request: Request, limit: int,
                   timeout_s: float) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) of `request` sent to `host:port`. Raises `Redirect` on a 3xx
        answer, `ReplyTooLarge` past `limit`, `TimeoutError` after `timeout_s`, `OSError`
        (`ConnectionError`) when the exchange fails or the answer is malformed."""
        async with asyncio.timeout(timeout_s):
            for fresh in (False, True):
                conn = self._take(host, port) if not fresh else None
                if conn is None:
                    conn = await self._connect(host, port, limit)
                    fresh = True
                conn.limit = limit
                waiter = asyncio.get_running_loop().create_future()
                try:
                    conn.send(request, waiter)
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
            if conn.stray:
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
