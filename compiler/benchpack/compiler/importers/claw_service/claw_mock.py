"""A generic mock of one Claw-Anything service, written by `bench import claw` (benchpack's own
code, not Claw-Anything's). Standard library only; listens on 127.0.0.1:$PORT.

Claw-Anything runs one purpose-built FastAPI mock per service (gmail, crm, calendar, …); their
code is not part of a task's release. This stand-in serves the task's fixtures over the task's
endpoints with one rule per kind of endpoint, chosen by the endpoint's last path segment:

  …/get                    one record: the first body value whose key ends in `id` (or is `id`)
                           that equals a record field ending in `id`; 404 when none matches
  a write (send, create, update, delete, save, submit, close, add, remove, append, archive,
  publish, cancel, start, end and `<verb>_<thing>` forms of these)
                           recorded in the audit; `create`/`add`/`publish`/`save`-like writes
                           append a record with a new id, `update`/`close`/`cancel`/`archive`-
                           like ones change the record named by its id (404 when unknown),
                           `delete`/`remove` drop it; `send` writes are kept in `sent`
  anything else            a list: filters by `query`/`q`/`keyword`/`search` (every word in some
                           text field), `days_back` (the first date field within N days of
                           $CLAW_NOW), `start_date`/`end_date` (and `date_from`/`date_to`,
                           `since`/`until`), any body key equal to a record field (strings
                           case-insensitively, lists by membership), `offset` and
                           `max_results`/`limit` (default 50); answers {total, returned, items}
                           and names the parameters it could not apply in `ignored`

  GET  /health   POST /reset (reload the fixtures)   GET|PUT /state   GET /audit

Fixtures: every environment variable whose value is a `.json` path that exists (relative to
this file's folder); a file holding a list gives its records, an object its lists' records.
Requests may use any method; the body is a JSON object (a query string is read too).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from datetime import date, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

HERE = Path(__file__).resolve().parent
SERVICE = os.environ.get("CLAW_SERVICE", "service")
NOW = os.environ.get("CLAW_NOW", "")
DEFAULT_PAGE = 50
WRITE_VERBS = {"send", "create", "update", "delete", "save", "submit", "close", "add", "remove",
               "append", "archive", "publish", "cancel", "start", "end", "reply", "forward",
               "mark", "move", "book", "pay", "approve", "reject", "assign", "schedule"}
APPEND_VERBS = {"create", "add", "publish", "save", "submit", "book", "schedule", "reply",
                "forward"}
DROP_VERBS = {"delete", "remove"}
STATUS_OF = {"close": "closed", "cancel": "cancelled", "archive": "archived",
             "start": "started", "end": "ended", "approve": "approved", "reject": "rejected"}
QUERY_KEYS = ("query", "q", "keyword", "keywords", "search", "text")
PAGE_KEYS = ("max_results", "limit", "page_size", "top_k", "count")
LOW_KEYS = ("start_date", "date_from", "since", "from_date", "after")
HIGH_KEYS = ("end_date", "date_to", "until", "to_date", "before")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}")


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _fixture_paths() -> list[Path]:
    out = []
    for key in sorted(os.environ):
        value = os.environ[key]
        if value.endswith(".json") and (HERE / value).is_file():
            out.append(HERE / value)
    return out


def _load() -> dict:
    records: list = []
    for path in _fixture_paths():
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, list):
            records += [r for r in data if isinstance(r, dict)]
        elif isinstance(data, dict):
            for value in data.values():
                if isinstance(value, list):
                    records += [r for r in value if isinstance(r, dict)]
    return {"records": records, "sent": [], "audit": [], "next": 1}


STATE = _load()
LOCK = threading.Lock()


def _kind(path: str) -> tuple[str, str]:
    last = path.rstrip("/").rsplit("/", 1)[-1].lower()
    if last == "get":
        return "get", last
    verb = last.split("_", 1)[0]
    if verb in WRITE_VERBS:
        return "write", verb
    return "list", last


def _id_fields(record: dict) -> list[str]:
    return [k for k in record if k == "id" or k.endswith("_id")]


def _find(body: dict) -> tuple[int, dict]:
    wanted = [str(v) for k, v in body.items() if (k == "id" or k.endswith("_id")) and v]
    if not wanted:
        raise HttpError(400, "give the record's id")
    for i, rec in enumerate(STATE["records"]):
        if any(str(rec.get(f)) in wanted for f in _id_fields(rec)):
            return i, rec
    raise HttpError(404, f"no record with id {', '.join(wanted)}")


def _date_of(record: dict) -> str | None:
    for value in record.values():
        if isinstance(value, str) and DATE_RE.match(value):
            return value[:10]
    return None


def _text(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False).lower()


def _matches(value: object, wanted: object) -> bool:
    if isinstance(value, list):
        return any(_matches(v, wanted) for v in value)
    if isinstance(value, str) and isinstance(wanted, str):
        return value.strip().lower() == wanted.strip().lower()
    return value == wanted


def _list(body: dict) -> dict:
    rows = list(STATE["records"])
    ignored = []
    fields = {k for r in rows for k in r}
    for key, value in body.items():
        if value is None or value == "":
            continue
        if key in QUERY_KEYS:
            words = str(value).lower().split()
            rows = [r for r in rows if all(w in _text(r) for w in words)]
        elif key == "days_back" and NOW:
            try:
                since = (date.fromisoformat(NOW[:10]) - timedelta(days=int(value))).isoformat()
            except ValueError:
                raise HttpError(400, "days_back must be a whole number") from None
            rows = [r for r in rows if (_date_of(r) or "") >= since]
        elif key in LOW_KEYS:
            rows = [r for r in rows if (_date_of(r) or "") >= str(value)[:10]]
        elif key in HIGH_KEYS:
            rows = [r for r in rows if (_date_of(r) or "9999") <= str(value)[:10]]
        elif key in fields:
            rows = [r for r in rows if _matches(r.get(key), value)]
        elif key not in PAGE_KEYS and key != "offset":
            ignored.append(key)
    total = len(rows)
    try:
        offset = max(int(body.get("offset") or 0), 0)
        size = next((int(body[k]) for k in PAGE_KEYS if body.get(k) not in (None, "")),
                    DEFAULT_PAGE)
    except (TypeError, ValueError):
        raise HttpError(400, "offset and max_results must be whole numbers") from None
    items = rows[offset:offset + max(size, 0)]
    out = {"total": total, "returned": len(items), "items": items}
    if ignored:
        out["ignored"] = sorted(ignored)
    return out


def _write(path: str, verb: str, body: dict) -> dict:
    STATE["audit"].append({"endpoint": path, "body": body})
    if verb == "send":
        record = {"id": f"{SERVICE.upper()}-SENT-{len(STATE['sent']) + 1}", **body}
        STATE["sent"].append(record)
        return {"ok": True, "record": record}
    if verb in APPEND_VERBS:
        record = {"id": f"{SERVICE.upper()}-NEW-{STATE['next']}", **body}
        STATE["next"] += 1
        STATE["records"].append(record)
        return {"ok": True, "record": record}
    i, record = _find(body)
    if verb in DROP_VERBS:
        del STATE["records"][i]
        return {"ok": True, "deleted": record}
    changed = {**record, **{k: v for k, v in body.items() if k not in _id_fields(record)}}
    if verb in STATUS_OF and "status" not in body:
        changed["status"] = STATUS_OF[verb]
    STATE["records"][i] = changed
    return {"ok": True, "record": changed}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt: str, *args: object) -> None:
        sys.stderr.write(fmt % args + "\n")

    def _body(self) -> dict:
        url = urlsplit(self.path)
        body: dict = {k: v[-1] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            try:
                data = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                raise HttpError(400, "the body is not JSON") from None
            if not isinstance(data, dict):
                raise HttpError(400, "the body must be a JSON object")
            body.update(data)
        return body

    def _send(self, status: int, data: object) -> None:
        raw = json.dumps(data, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _handle(self) -> None:
        global STATE
        path = urlsplit(self.path).path
        try:
            body = self._body()
            with LOCK:
                if path == "/health":
                    return self._send(200, {"ok": True, "service": SERVICE})
                if path == "/reset":
                    STATE = _load()
                    return self._send(200, {"ok": True})
                if path == "/state":
                    if self.command == "PUT":
                        STATE = body
                        return self._send(200, {"ok": True})
                    return self._send(200, STATE)
                if path == "/audit":
                    return self._send(200, {"calls": STATE["audit"], "sent": STATE["sent"]})
                kind, verb = _kind(path)
                if kind == "get":
                    return self._send(200, _find(body)[1])
                if kind == "write":
                    return self._send(200, _write(path, verb, body))
                return self._send(200, _list(body))
        except HttpError as exc:
            return self._send(exc.status, {"error": str(exc)})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


def main() -> None:
    port = int(os.environ.get("PORT", "8765"))
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
