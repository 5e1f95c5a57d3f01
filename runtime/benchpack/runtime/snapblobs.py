"""Episode snapshots with their large parts stored once: `split_state` before a snapshot is
written, `join_state` after it is read (`store.Store`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any


def _json(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, default=str)


BLOB_MIN_CHARS = 4096
"""Snapshot parts at least this long (a workspace file's content, a service table's rows as
JSON, the outbox as JSON) are stored once in `blobs`, keyed by sha256: an episode's fixtures are
the same after every session and in every repeat, and were stored once per session × repeat."""

BLOB_REF = "$blob"


class FrozenRows(list):  # type: ignore[type-arg]
    """A table's rows that are never changed in place (`ServiceState.live_rows()`: a service
    stores a new object for every write). `split_state` then writes each row's JSON once per
    run (kept by identity) instead of dumping the whole table for every session (issue 31)."""


_ROW_JSON: dict[int, tuple[Any, str]] = {}
_ROW_JSON_MAX = 200_000


def _rows_json(rows: FrozenRows) -> str:
    """`_json(rows)`, byte for byte, from the rows' kept texts."""
    parts = []
    for row in rows:
        hit = _ROW_JSON.get(id(row))
        if hit is None or hit[0] is not row:
            if len(_ROW_JSON) >= _ROW_JSON_MAX:
                _ROW_JSON.clear()
            hit = _ROW_JSON[id(row)] = (row, json.dumps(row, ensure_ascii=False, default=str))
        parts.append(hit[1])
    return "[" + ", ".join(parts) + "]"


def _blob_ref(data: str, found: dict[str, str]) -> dict[str, str]:
    digest = hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()
    found[digest] = data
    return {BLOB_REF: digest}


def split_state(state: dict[str, Any], clean: Callable[[str], str]) -> tuple[str, dict[str, str]]:
    """The snapshot as stored (large parts replaced by `{"$blob": sha256}`) and those parts by
    hash. The parts replaced are strings (files) or lists (rows, outbox), never dicts, so a
    reference cannot be mistaken for content. `clean` (redaction) runs on each part before it
    is hashed, as it ran on the whole state before."""
    found: dict[str, str] = {}
    out = dict(state)
    files = state.get("files")
    if isinstance(files, dict):
        out["files"] = {path: _blob_ref(clean(content), found)
                        if isinstance(content, str) and len(content) >= BLOB_MIN_CHARS
                        else content for path, content in files.items()}
    services = state.get("services")
    if isinstance(services, dict):
        out["services"] = {}
        for name, tables in services.items():
            if not isinstance(tables, dict):
                out["services"][name] = tables
                continue
            kept: dict[str, Any] = {}
            for table, rows in tables.items():
                text = (_rows_json(rows) if isinstance(rows, FrozenRows) else
                        _json(rows) if isinstance(rows, list) else None)
                kept[table] = (_blob_ref(clean(text), found)
                               if text is not None and len(text) >= BLOB_MIN_CHARS else rows)
            out["services"][name] = kept
    outbox = state.get("outbox")
    if isinstance(outbox, list):
        text = _json(outbox) or "[]"
        if len(text) >= BLOB_MIN_CHARS:
            out["outbox"] = _blob_ref(clean(text), found)
    return clean(_json(out) or "null"), found


def join_state(state: Any, fetch: Callable[[list[str]], dict[str, str]]) -> Any:
    """A stored snapshot with its blob references resolved (a snapshot without any, as older
    stores hold, comes back as it is)."""
    if not isinstance(state, dict):
        return state

    def is_ref(v: Any) -> bool:
        return isinstance(v, dict) and len(v) == 1 and isinstance(v.get(BLOB_REF), str)

    files: dict[str, Any] = state["files"] if isinstance(state.get("files"), dict) else {}
    services: dict[str, Any] = (state["services"] if isinstance(state.get("services"), dict)
                                else {})
    refs = [v[BLOB_REF] for v in files.values() if is_ref(v)]
    refs += [v[BLOB_REF] for t in services.values() if isinstance(t, dict)
             for v in t.values() if is_ref(v)]
    if is_ref(state.get("outbox")):
        refs.append(state["outbox"][BLOB_REF])
    if not refs:
        return state
    data = fetch(sorted(set(refs)))
    missing = sorted(set(refs) - set(data))
    if missing:
        raise LookupError(f"a snapshot refers to {len(missing)} missing blob(s), "
                          f"{missing[0][:12]}…")
    out = dict(state)
    out["files"] = {p: data[v[BLOB_REF]] if is_ref(v) else v for p, v in files.items()}
    out["services"] = {n: {t: json.loads(data[v[BLOB_REF]]) if is_ref(v) else v
                           for t, v in tables.items()} if isinstance(tables, dict) else tables
                       for n, tables in services.items()}
    if is_ref(state.get("outbox")):
        out["outbox"] = json.loads(data[state["outbox"][BLOB_REF]])
    return out
