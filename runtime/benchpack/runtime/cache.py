"""A content-addressed cache of LLM responses on disk.

The key is the sha256 of the canonical JSON of everything that determines a response: model,
messages, tools, sampling params, seed and repeat index (so repeats are independent samples, and
re-running a finished repeat is served from disk). Entries live at `<dir>/<k[:2]>/<k[2:4]>/<k>.json`
and are written atomically (temp file in the same directory, then `os.replace`), so concurrent
writers and crashes never leave a half-written entry under a key. A corrupted or foreign entry
is a miss; the next `put` replaces it. I/O failures never fail a run: `get` misses and `put`
gives up (counted in `errors`).

Values are plain JSON dicts chosen by the caller (`llm.LLMClient` stores the assistant message
and token usage, never credentials).

Writing an entry costs ~0.5 ms of kernel time and up to a few ms of wall time (a file created,
often with its directory, and renamed), so the LLM client uses `put_soon`: one job on the event
loop's default executor writes entries as they come (and waits briefly for more before it
ends), `get` serves entries not yet on disk from memory, and `asyncio.run` waits for the job
before it returns. Keys hash the canonical JSON of each message joined (`message_chunks`), so a
caller holding an append-only history serialises each message once, not once per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import os
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

CACHE_FORMAT = "benchpack-llm-cache/1"
_KEY_HEAD = '{"format":"' + CACHE_FORMAT + '","messages":'


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              default=str)
_TMP_IDS = itertools.count()
_DRAIN_LINGER_S = 0.1
"""How long an idle drain job waits for more entries before it ends. Ending completes its
future, which wakes the event loop (an extra wake-up in the middle of a model call, each costing
up to a millisecond of timer rounding); `asyncio.run` waits at most this long for it."""


def canonical_json(obj: Any) -> str:
    """Deterministic JSON: sorted keys, no insignificant whitespace, UTF-8 kept as is."""
    return _CANONICAL.encode(obj)  # = json.dumps with these options, without a new encoder


def sha256_json(obj: Any) -> str:
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()


def message_chunks(messages: Iterable[Any]) -> list[str]:
    """`canonical_json` of each message (`json_list` of them is the list's), so digests can be
    built from chunks computed once per message."""
    return [canonical_json(m) for m in messages]


_GIL_SLICE = 2047
"""hashlib releases the GIL to hash 2048 bytes or more; the event loop thread then waits to get
it back from the run's I/O threads (often longer than hashing takes), so it feeds less."""


def sha256_text(text: str) -> str:
    """sha256 hex digest of `text` (UTF-8)."""
    data = text.encode("utf-8")
    if len(data) <= _GIL_SLICE:
        return hashlib.sha256(data).hexdigest()
    h = hashlib.sha256()
    view = memoryview(data)
    for start in range(0, len(data), _GIL_SLICE):
        h.update(view[start:start + _GIL_SLICE])
    return h.hexdigest()


def json_list(chunks: Sequence[str]) -> str:
    """The canonical JSON of a list from its items' canonical JSON (`message_chunks`)."""
    return "[" + ",".join(chunks) + "]"


def _scalar_json(value: Any) -> str:
    return str(value) if type(value) is int else canonical_json(value)


class ResponseCache:
    """See the module docstring. `enabled = False` makes every `get` a miss and `put` a no-op."""

    def __init__(self, directory: str | Path, *, enabled: bool = True) -> None:
        self.directory = Path(directory)
        self.enabled = enabled
        self.hits = 0
        self.misses = 0
        self.errors = 0
        self._root = str(self.directory)
        self._pending: dict[str, str] = {}
        """key → payload of `put_soon` writes not yet on disk (`get` serves them)."""
        self._queue: deque[tuple[str, str]] = deque()
        self._draining = False
        self._more = threading.Event()
        self._lock = threading.Lock()
        self._made: set[str] = set()

    @staticmethod
    def key(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
            params: dict[str, Any] | None, seed: int | None, repeat: int) -> str:
        return ResponseCache.key_of_chunks(model, message_chunks(messages),
                                           canonical_json(tools or []), params, seed, repeat)

    @staticmethod
    def key_of_chunks(model: str, chunks: Sequence[str], tools_json: str,
                      params: dict[str, Any] | None, seed: int | None, repeat: int) -> str:
        """`key` from the messages' `message_chunks` and the tools' canonical JSON (`[]` for
        none): the canonical JSON of the same object, keys in sorted order."""
        return sha256_text(
            f'{_KEY_HEAD}{json_list(chunks)},"model":{canonical_json(model)},"params":'
            f'{canonical_json(params or {})},"repeat":{_scalar_json(repeat)},"seed":'
            f'{_scalar_json(seed)},"tools":{tools_json}}}')

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / key[2:4] / f"{key}.json"

    def _dir(self, key: str) -> str:
        return os.path.join(self._root, key[:2], key[2:4])

    def get(self, key: str) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        try:
            pending = self._pending.get(key)
            if pending is None:
                with open(os.path.join(self._dir(key), key + ".json"), "rb") as fh:
                    found = json.loads(fh.read())
            else:
                found = json.loads(pending)
        except FileNotFoundError:
            self.misses += 1
            return None
        except (OSError, ValueError):  # unreadable or corrupted: a miss
            self.misses += 1
            self.errors += 1
            return None
        if (not isinstance(found, dict) or found.get("format") != CACHE_FORMAT
                or found.get("key") != key or not isinstance(found.get("value"), dict)):
            self.misses += 1
            return None
        self.hits += 1
        value: dict[str, Any] = found["value"]
        return value

    def _payload(self, key: str, value: dict[str, Any]) -> str | None:
        try:
            return canonical_json({"format": CACHE_FORMAT, "key": key, "value": value})
        except (TypeError, ValueError):
            self.errors += 1
            return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        if not self.enabled:
            return
        payload = self._payload(key, value)
        if payload is not None:
            self._write(key, payload)

    def put_soon(self, key: str, value: dict[str, Any]) -> None:
        """`put` without blocking the running event loop (see the module docstring); the value
        is serialised now, so later changes to it are not stored."""
        if not self.enabled:
            return
        payload = self._payload(key, value)
        if payload is None:
            return
        with self._lock:
            self._pending[key] = payload
            self._queue.append((key, payload))
            start = not self._draining
            self._draining = True
        if not start:
            self._more.set()
            return
        try:
            asyncio.get_running_loop().run_in_executor(None, self._drain)
        except RuntimeError:  # the executor is shutting down: write here
            self._drain(linger_s=0.0)

    def _drain(self, linger_s: float = _DRAIN_LINGER_S) -> None:
        """Write queued entries; when none is left, wait up to `linger_s` for more before
        ending (one job for a run of calls, not a job per entry)."""
        while True:
            while self._queue:
                key, payload = self._queue.popleft()
                self._write(key, payload)
            self._more.clear()
            if self._queue:  # queued between the last pop and the clear
                continue
            if linger_s > 0 and self._more.wait(linger_s):
                continue
            with self._lock:
                if not self._queue:
                    self._draining = False
                    return

    def _write(self, key: str, payload: str) -> None:
        folder = self._dir(key)
        tmp = os.path.join(folder, f".{key[:16]}.{os.getpid()}.{next(_TMP_IDS)}.tmp")
        leftover = False  # a temp file that must not stay if it does not become the entry
        try:
            if folder not in self._made:
                os.makedirs(folder, exist_ok=True)
                self._made.add(folder)
            data = payload.encode("utf-8")
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
            try:
                fd = os.open(tmp, flags, 0o600)
            except FileNotFoundError:  # the directory was removed since: make it again
                os.makedirs(folder, exist_ok=True)
                fd = os.open(tmp, flags, 0o600)
            leftover = True
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, os.path.join(folder, key + ".json"))
            leftover = False
        except OSError:
            self.errors += 1
        finally:
            if leftover:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            with self._lock:
                if self._pending.get(key) is payload:
                    del self._pending[key]
