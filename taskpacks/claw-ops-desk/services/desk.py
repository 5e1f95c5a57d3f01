"""Mock back office of the Foundry Lane makerspace: tickets, a shared calendar and a mailbox.

A pack service (design12 §2): stdlib only, listens on 127.0.0.1:$PORT, loads its state from
JSON fixtures in $DATA_DIR (default: ../fixtures next to this file) and keeps it in memory.
"Now" is fixed by $DESK_NOW (default the fixtures' `now`) so `days_back` filters give the same
answer on every run. Endpoints:

  GET  /health                       liveness
  POST /reset                        reload the fixtures (between sessions and repeats)
  GET  /state   PUT /state           whole state, for the runner's snapshot/restore
  GET  /tickets                      filters: status, priority, query, days_back, max_results, offset
  GET  /tickets/{id}
  POST /tickets                      {title, description, priority, requester}
  PATCH /tickets/{id}                {status, priority, assignee}
  POST /tickets/{id}/comments        {body}
  GET  /calendar/events              filters: start, end (YYYY-MM-DD, inclusive), resource, query,
                                     max_results, offset
  GET  /calendar/events/{id}
  POST /calendar/events              {title, resource, start, end, attendees, notes}
  PATCH /calendar/events/{id}        {title, start, end, status, notes}
  GET  /mail/messages                filters: days_back, query, max_results, offset (no bodies)
  GET  /mail/messages/{id}
  POST /mail/send                    {to, cc, subject, body}
  POST /mail/drafts                  {to, subject, body}
  GET  /mail/sent

Lists answer `{total, returned, offset, items}` so an agent can tell a page from the whole.
Errors are JSON `{error}` with 400 (bad input) or 404 (unknown id or path).
"""

from __future__ import annotations

import copy
import json
import os
import sys
import threading
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

DATA_DIR = Path(os.environ.get("DATA_DIR") or Path(__file__).resolve().parent.parent / "fixtures")
DEFAULT_PAGE = 10
MAX_PAGE = 50
TICKET_STATUSES = ("open", "in_progress", "waiting", "resolved")
PRIORITIES = ("low", "normal", "high", "urgent")
EVENT_STATUSES = ("confirmed", "tentative", "cancelled")


class BadRequest(Exception):
    status = 400


class NotFound(Exception):
    status = 404


def _load() -> dict:
    state = {name: json.loads((DATA_DIR / f"{name}.json").read_text(encoding="utf-8"))
             for name in ("tickets", "calendar", "mail")}
    state["now"] = os.environ.get("DESK_NOW") or state["mail"]["now"]
    state["counters"] = {"ticket": 0, "event": 0, "mail": 0}
    return state


LOCK = threading.Lock()
STATE = _load()


def _int(query: dict, name: str, default: int, low: int = 0, high: int | None = None) -> int:
    raw = query.get(name, [None])[0]
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name} must be an integer, got {raw!r}") from None
    if value < low or (high is not None and value > high):
        raise BadRequest(f"{name} must be between {low} and {high if high is not None else 'any'}")
    return value


def _date(query: dict, name: str) -> str | None:
    raw = query.get(name, [None])[0]
    if raw in (None, ""):
        return None
    try:
        datetime.strptime(raw, "%Y-%m-%d")
    except ValueError:
        raise BadRequest(f"{name} must be a date YYYY-MM-DD, got {raw!r}") from None
    return raw


def _matches(query: str | None, *fields: str) -> bool:
    # Every word must occur somewhere (case-insensitive); Chinese text has no spaces, so a
    # word is also matched as a plain substring of the joined fields.
    if not query:
        return True
    haystack = " ".join(f or "" for f in fields).lower()
    return all(word in haystack for word in query.lower().split())


def _page(rows: list[dict], query: dict) -> dict:
    limit = _int(query, "max_results", DEFAULT_PAGE, 1, MAX_PAGE)
    offset = _int(query, "offset", 0)
    items = rows[offset:offset + limit]
    return {"total": len(rows), "returned": len(items), "offset": offset, "items": items}


def _since(days_back: int) -> str:
    now = datetime.fromisoformat(STATE["now"])
    return (now - timedelta(days=days_back)).isoformat(timespec="minutes")


def _find(rows: list[dict], key: str, what: str) -> dict:
    for row in rows:
        if row["id"] == key:
            return row
    raise NotFound(f"{what} {key} not found")


def _require(body: dict, *names: str) -> None:
    missing = [n for n in names if not str(body.get(n) or "").strip()]
    if missing:
        raise BadRequest(f"missing field(s): {', '.join(missing)}")


def _choice(body: dict, name: str, allowed: tuple[str, ...]) -> None:
    if name in body and body[name] not in allowed:
        raise BadRequest(f"{name} must be one of {', '.join(allowed)}")


def _stamp() -> str:
    return STATE["now"]


# ---------------------------------------------------------------------------------- routes


def list_tickets(query: dict) -> dict:
    status = query.get("status", [None])[0]
    priority = query.get("priority", [None])[0]
    days_back = _int(query, "days_back", 3650, 0, 3650)
    since = _since(days_back)
    rows = [t for t in STATE["tickets"]["tickets"]
            if (not status or t["status"] == status) and (not priority or t["priority"] == priority)
            and t["updated"] >= since and _matches(query.get("query", [None])[0], t["title"], t["description"], t["requester"])]
    rows.sort(key=lambda t: t["updated"], reverse=True)
    return _page([{k: t[k] for k in ("id", "title", "status", "priority", "requester", "updated")} for t in rows], query)


def create_ticket(body: dict) -> dict:
    _require(body, "title", "description")
    _choice(body, "priority", PRIORITIES)
    STATE["counters"]["ticket"] += 1
    ticket = {"id": f"TCK-{900 + STATE['counters']['ticket']}", "title": body["title"],
              "description": body["description"], "priority": body.get("priority", "normal"),
              "requester": body.get("requester", "ops-desk"), "assignee": body.get("assignee", ""),
              "status": "open", "created": _stamp(), "updated": _stamp(), "comments": []}
    STATE["tickets"]["tickets"].append(ticket)
    return ticket


def update_ticket(key: str, body: dict) -> dict:
    ticket = _find(STATE["tickets"]["tickets"], key, "ticket")
    unknown = set(body) - {"status", "priority", "assignee"}
    if unknown:
        raise BadRequest(f"cannot change {', '.join(sorted(unknown))}")
    _choice(body, "status", TICKET_STATUSES)
    _choice(body, "priority", PRIORITIES)
    ticket.update(body)
    ticket["updated"] = _stamp()
    return ticket


def comment_ticket(key: str, body: dict) -> dict:
    ticket = _find(STATE["tickets"]["tickets"], key, "ticket")
    _require(body, "body")
    ticket["comments"].append({"author": "ops-desk", "date": _stamp(), "body": body["body"]})
    ticket["updated"] = _stamp()
    return ticket


def list_events(query: dict) -> dict:
    start, end = _date(query, "start"), _date(query, "end")
    if start and end and end < start:
        raise BadRequest("end is before start")
    resource = query.get("resource", [None])[0]
    rows = [e for e in STATE["calendar"]["events"]
            if (not start or e["start"][:10] >= start) and (not end or e["start"][:10] <= end)
            and (not resource or e["resource"] == resource)
            and _matches(query.get("query", [None])[0], e["title"], e.get("notes", ""), " ".join(e["attendees"]))]
    rows.sort(key=lambda e: (e["start"], e["id"]))
    return _page(rows, query)


def create_event(body: dict) -> dict:
    _require(body, "title", "resource", "start", "end")
    if body["end"] <= body["start"]:
        raise BadRequest("end must be after start")
    STATE["counters"]["event"] += 1
    event = {"id": f"EV-{700 + STATE['counters']['event']}", "title": body["title"],
             "resource": body["resource"], "start": body["start"], "end": body["end"],
             "attendees": list(body.get("attendees") or []), "status": "confirmed",
             "notes": body.get("notes", "")}
    STATE["calendar"]["events"].append(event)
    return event


def update_event(key: str, body: dict) -> dict:
    event = _find(STATE["calendar"]["events"], key, "event")
    unknown = set(body) - {"title", "start", "end", "status", "notes"}
    if unknown:
        raise BadRequest(f"cannot change {', '.join(sorted(unknown))}")
    _choice(body, "status", EVENT_STATUSES)
    merged = {**event, **body}
    if merged["end"] <= merged["start"]:
        raise BadRequest("end must be after start")
    event.update(body)
    return event


def list_messages(query: dict) -> dict:
    since = _since(_int(query, "days_back", 7, 0, 3650))
    rows = [m for m in STATE["mail"]["inbox"]
            if m["date"] >= since and _matches(query.get("query", [None])[0], m["subject"], m["from"])]
    rows.sort(key=lambda m: m["date"], reverse=True)
    return _page([{k: m[k] for k in ("id", "date", "from", "subject")} for m in rows], query)


def send_mail(body: dict, box: str) -> dict:
    _require(body, "to", "subject", "body")
    STATE["counters"]["mail"] += 1
    prefix = "SENT" if box == "sent" else "DRAFT"
    message = {"id": f"{prefix}-{STATE['counters']['mail']}", "date": _stamp(), "to": body["to"],
               "cc": body.get("cc", ""), "subject": body["subject"], "body": body["body"]}
    STATE["mail"][box].append(message)
    return message


def route(method: str, path: str, query: dict, body: dict) -> tuple[int, object]:
    global STATE
    parts = [p for p in path.split("/") if p]
    match (method, parts):
        case ("GET", ["health"]):
            return 200, {"ok": True}
        case ("POST", ["reset"]):
            STATE = _load()
            return 200, {"ok": True}
        case ("GET", ["state"]):
            return 200, STATE
        case ("PUT", ["state"]):
            if not {"tickets", "calendar", "mail", "now", "counters"} <= set(body):
                raise BadRequest("not a desk state")
            STATE = copy.deepcopy(body)
            return 200, {"ok": True}
        case ("GET", ["tickets"]):
            return 200, list_tickets(query)
        case ("POST", ["tickets"]):
            return 201, create_ticket(body)
        case ("GET", ["tickets", key]):
            return 200, _find(STATE["tickets"]["tickets"], key, "ticket")
        case ("PATCH", ["tickets", key]):
            return 200, update_ticket(key, body)
        case ("POST", ["tickets", key, "comments"]):
            return 201, comment_ticket(key, body)
        case ("GET", ["calendar", "events"]):
            return 200, list_events(query)
        case ("POST", ["calendar", "events"]):
            return 201, create_event(body)
        case ("GET", ["calendar", "events", key]):
            return 200, _find(STATE["calendar"]["events"], key, "event")
        case ("PATCH", ["calendar", "events", key]):
            return 200, update_event(key, body)
        case ("GET", ["mail", "messages"]):
            return 200, list_messages(query)
        case ("GET", ["mail", "messages", key]):
            return 200, _find(STATE["mail"]["inbox"], key, "message")
        case ("POST", ["mail", "send"]):
            return 201, send_mail(body, "sent")
        case ("POST", ["mail", "drafts"]):
            return 201, send_mail(body, "drafts")
        case ("GET", ["mail", "sent"]):
            return 200, {"total": len(STATE["mail"]["sent"]), "items": STATE["mail"]["sent"]}
    raise NotFound(f"no endpoint {method} {path}")


class Handler(BaseHTTPRequestHandler):
    def _handle(self) -> None:
        url = urlsplit(self.path)
        try:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw.strip() else {}
            if not isinstance(body, dict):
                raise BadRequest("the body must be a JSON object")
            with LOCK:
                status, payload = route(self.command, url.path, parse_qs(url.query), body)
                data = json.dumps(payload, ensure_ascii=False).encode()
        except json.JSONDecodeError as exc:
            status, data = 400, json.dumps({"error": f"body is not JSON: {exc.msg}"}).encode()
        except (BadRequest, NotFound) as exc:
            status, data = exc.status, json.dumps({"error": str(exc)}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def log_message(self, format: str, *args: object) -> None:
        sys.stderr.write("desk: " + format % args + "\n")


def main() -> None:
    port = int(os.environ.get("PORT", "8765"))
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"desk listening on 127.0.0.1:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
