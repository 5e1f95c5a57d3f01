"""Who may talk to `bench view`: the ASGI middleware in front of every page (issue 27).

The viewer serves every transcript and prompt of the store, with no login, on a port any web
page in the user's browser can reach. Three checks stand between a hostile page and them:

- **Host**: only the names the viewer is served under (`localhost`, `127.0.0.1`, `[::1]`, and
  the `--host` given). A DNS-rebinding page (its own name, resolved to 127.0.0.1 once loaded)
  sends its own name as Host: refused, so its script cannot read a page.
- **Origin and fetch metadata**: a request another site's page makes (a script's `fetch`, a
  form, an image) carries `Origin` or `Sec-Fetch-Site: cross-site`: refused, except a plain
  top-level navigation (a link someone clicked: `GET`, `Sec-Fetch-Mode: navigate`), which
  shows a page to the user, not to the site that linked it. So no other site can make the
  viewer run a query, nor load its heavy pages as images in a loop.
- **The access token** (only with `--host`, when the viewer listens beyond this machine): the
  printed address carries `?token=…`; opening it sets a cookie for that host, and every other
  request needs the cookie. On localhost the first two checks suffice: no other user reaches
  the loopback interface through the browser without being a page, and a page is stopped.

Refusals are 403 with a one-line plain-text reason. Running a SQL query also needs the
per-process form token the SQL page embeds (`Viewer.form_token`): belt and braces against a
browser that sends neither `Origin` nor fetch metadata.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
COOKIE = "bench_view_token"


def new_token() -> str:
    return secrets.token_urlsafe(24)


def host_name(value: str) -> str:
    """`Host` header → its name, without the port (and IPv6 brackets)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value[1:]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """See the module docstring. `hosts`: the names allowed besides `LOCAL_NAMES` (`*`: any,
    for `--host 0.0.0.0`, where the token is what keeps others out); `token`: the access token
    (None: none needed)."""

    def __init__(self, app: ASGIApp, *, hosts: frozenset[str] = frozenset(),
                 token: str | None = None) -> None:
        self.app = app
        self.any_host = "*" in hosts
        if self.any_host and token is None:
            raise ValueError("a viewer served under any name needs an access token")
        self.hosts = LOCAL_NAMES | {h.lower().strip("[]") for h in hosts}
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        why = self._refusal(scope, headers)
        if why is not None:
            await _plain(send, 403, f"✗ bench view: {why}\n")
            return
        query = scope.get("query_string", b"").decode("latin-1")
        if self.token is not None and "token" in parse_qs(query):
            # the printed address: keep the token in a cookie, and drop it from the address
            rest = urlencode([(k, v) for k, v in parse_qsl(query, keep_blank_values=True)
                              if k != "token"])
            await _redirect(send, scope.get("path", "/") + (f"?{rest}" if rest else ""),
                            self.token)
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> str | None:
        host = headers.get("host", "")
        if not self.any_host and host_name(host) not in self.hosts:
            return (f"Host {host or '(none)'} is not a name this viewer is served under "
                    "(open it at the address `bench view` printed)")
        origin = headers.get("origin")
        if origin is not None and not self._own_origin(origin, host):
            return f"a request from another site ({origin}) is refused"
        site = headers.get("sec-fetch-site")
        if site in ("cross-site", "same-site") and not (
                scope.get("method") == "GET" and headers.get("sec-fetch-mode") == "navigate"):
            return "a request made by another site's page is refused"
        if self.token is not None and not self._has_token(scope, headers):
            return ("this viewer needs its access token: open the address with `?token=…` "
                    "that `bench view` printed")
        return None

    def _own_origin(self, origin: str, host: str) -> bool:
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower() \
            and (self.any_host or host_name(host) in self.hosts)

    def _has_token(self, scope: Scope, headers: dict[str, str]) -> bool:
        assert self.token is not None
        given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [])
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed cookie header is no token
            return False
        if COOKIE in cookie:
            given.append(cookie[COOKIE].value)
        return any(hmac.compare_digest(g.encode(), self.token.encode()) for g in given)


async def _plain(send: Send, status: int, text: str) -> None:
    body = text.encode("utf-8")
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Send, path: str, token: str) -> None:
    cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
    await send({"type": "http.response.start", "status": 303, "headers": [
        (b"location", (path or "/").encode("latin-1")), (b"set-cookie", cookie.encode()),
        (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})




class MaskSecrets:
    """Every text response (pages, fragments, CSV) with the secrets of the viewer's environment
    masked (`specs.secrets`): a store written by an older benchpack, or under other
    variables, may hold one, and the viewer is a way out of the process like any other.
    Responses are buffered whole to be masked (pages are kilobytes, a CSV download at most
    `view_csv_rows` rows); static files pass as they are."""

    def __init__(self, app: ASGIApp, *, redact: Callable[[str], str] | None) -> None:
        self.app = app
        self.redact = redact

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.redact is None:
            await self.app(scope, receive, send)
            return
        redact = self.redact
        start: MutableMapping[str, Any] | None = None
        chunks: list[bytes] = []

        async def masked(message: MutableMapping[str, Any]) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = b"".join(chunks)
            kind = dict(start.get("headers", [])).get(b"content-type", b"")
            if kind.startswith((b"text/html", b"text/csv", b"text/plain", b"application/json")):
                body = redact(body.decode("utf-8", "surrogateescape")).encode(
                    "utf-8", "surrogateescape")
            headers = [(k, v) for k, v in start.get("headers", [])
                       if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, masked)


__all__ = ["COOKIE", "LOCAL_NAMES", "Guard", "MaskSecrets", "host_name", "new_token"]
