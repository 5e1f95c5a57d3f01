"""`bench view`'s SQL box: one read-only statement, as `bench query` runs it, with limits.

A query is run only by a `POST` carrying the page's form token (`Viewer.form_token`, a secret
of the process embedded in the SQL page): a `GET /sql?q=…` (a link, or another site's `<img>`)
shows the statement in the box without running it. So no page of another site can make the
viewer run `range(1e13)`, even one the browser sends without `Origin` (`guard.py` refuses those
that carry it).

Each query runs on a thread with its own connection (`api.run_query`, settings fixed at open:
`access.LOCKED`) and is stopped (`api.QueryHandle`) when it passes `view_query_seconds`, when
its client goes away (the page closed, the download cancelled), or when the viewer shuts down
(SIGTERM): before, a query ran on after its client had left, and SIGTERM waited for it. A page
shows `view_query_rows` rows; a CSV download carries up to `view_csv_rows` and is refused
beyond (no silent truncation of a download).
"""

from __future__ import annotations

import asyncio
import csv
import hmac
import io
import threading
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from benchpack.specs.limits import VIEW_CSV_ROWS, VIEW_QUERY_ROWS, VIEW_QUERY_SECONDS

from ..access import StoreError

if TYPE_CHECKING:
    from ..api import QueryHandle, QueryResult
    from .app import Viewer

FORM_MAX_BYTES = 1 << 20
"""Longest form body read (a statement longer than 1 MB is no query anyone types)."""
WATCH_S = 0.1
"""How often a running query's limits and client are looked at."""


class SqlPages:
    def __init__(self, viewer: Viewer) -> None:
        self.viewer = viewer
        self._running: set[QueryHandle] = set()
        self._lock = threading.Lock()

    def stop_all(self, why: str) -> None:
        """Stop every running query (the viewer is shutting down)."""
        with self._lock:
            running = list(self._running)
        for handle in running:
            handle.stop(why)

    @property
    def running(self) -> int:
        with self._lock:
            return len(self._running)

    async def page(self, request: Request) -> Response:
        if request.method == "GET":  # shown, never run: see the module docstring
            return self._page(request.query_params.get("q", ""), None, None)
        text, refused = await self._form(request)
        if refused is not None:
            return refused
        try:
            result = await self._run(request, text, VIEW_QUERY_ROWS.value + 1)
        except StoreError as exc:
            return self._page(text, None, str(exc))
        return self._page(text, result, None)

    async def csv(self, request: Request) -> Response:
        if request.method == "GET":
            return Response("✗ the CSV download is a POST from the SQL page (its form)\n",
                            status_code=405, media_type="text/plain; charset=utf-8")
        text, refused = await self._form(request)
        if refused is not None:
            return refused
        limit = VIEW_CSV_ROWS.value
        try:
            result = await self._run(request, text, limit + 1)
        except StoreError as exc:
            return Response(f"✗ {exc}\n", status_code=400, media_type="text/plain")
        if len(result.rows) > limit:
            return Response(f"✗ the result has more than {limit:,} rows, the viewer's download "
                            f"limit (view_csv_rows): use `bench query … --format csv`\n",
                            status_code=413, media_type="text/plain; charset=utf-8")
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(result.columns)
        writer.writerows(result.rows)
        return Response(buf.getvalue(), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": 'attachment; filename="query.csv"'})

    # ------------------------------------------------------------------ helpers

    def _page(self, text: str, result: QueryResult | None, error: str | None) -> Response:
        return self.viewer.page("sql.html", sql=text, result=result, error=error,
                                limit=VIEW_QUERY_ROWS.value, token=self.viewer.form_token,
                                seconds=VIEW_QUERY_SECONDS.value, title="SQL")

    async def _form(self, request: Request) -> tuple[str, Response | None]:
        """(the statement, None) from a form POST with the right token, else (_, a 403)."""
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > FORM_MAX_BYTES:
                return "", Response("✗ the form is too large\n", status_code=413,
                                    media_type="text/plain; charset=utf-8")
        fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        token = (fields.get("token") or [""])[0]
        if not hmac.compare_digest(token.encode(), self.viewer.form_token.encode()):
            return "", Response("✗ bench view: a query needs the SQL page's form (reload the "
                                "page and run it again)\n", status_code=403,
                                media_type="text/plain; charset=utf-8")
        return (fields.get("q") or [""])[0], None

    async def _run(self, request: Request, text: str, limit: int) -> QueryResult:
        """`text` on a thread, stopped at the time limit, when the client leaves, or at
        shutdown."""
        from ..api import QueryHandle, run_query

        handle = QueryHandle()
        with self._lock:
            self._running.add(handle)
        seconds = VIEW_QUERY_SECONDS.value
        task = asyncio.ensure_future(run_in_threadpool(
            run_query, self.viewer.db, text, wait_s=self.viewer.wait_s, limit=limit,
            handle=handle, reader=self.viewer.reader))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        try:
            while not task.done():
                await asyncio.wait({task}, timeout=WATCH_S)
                if task.done():
                    break
                if loop.time() > deadline:
                    handle.stop(f"it ran past {seconds} s, the viewer's limit "
                                "(view_query_seconds; `bench query` has none)")
                elif await _gone(request):
                    handle.stop("its page was closed")
            return task.result()
        finally:
            with self._lock:
                self._running.discard(handle)


async def _gone(request: Request) -> bool:
    """Whether the client has closed its connection (Starlette looks without waiting)."""
    return await request.is_disconnected()


__all__ = ["SqlPages"]
