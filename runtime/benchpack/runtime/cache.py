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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

CACHE_FORMAT = "benchpack-llm-cache/1"


def canonical_json(obj: Any) -> str:
    """Deterministic JSON: sorted keys, no insignificant whitespace, UTF-8 kept as is."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


def sha256_json(obj: Any) -> str:
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()


class ResponseCache:
    """See the module docstring. `enabled = False` makes every `get` a miss and `put` a no-op."""

    def __init__(self, directory: str | Path, *, enabled: bool = True) -> None:
        self.directory = Path(directory)
        self.enabled = enabled
        self.hits = 0
        self.misses = 0
        self.errors = 0

    @staticmethod
    def key(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
            params: dict[str, Any] | None, seed: int | None, repeat: int) -> str:
        return sha256_json({"format": CACHE_FORMAT, "model": model, "messages": messages,
                            "tools": tools or [], "params": params or {}, "seed": seed,
                            "repeat": repeat})

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / key[2:4] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        try:
            data = json.loads(self.path(key).read_text(encoding="utf-8"))
        except FileNotFoundError:
            self.misses += 1
            return None
        except (OSError, ValueError):  # unreadable or corrupted: a miss
            self.misses += 1
            self.errors += 1
            return None
        if (not isinstance(data, dict) or data.get("format") != CACHE_FORMAT
                or data.get("key") != key or not isinstance(data.get("value"), dict)):
            self.misses += 1
            return None
        self.hits += 1
        value: dict[str, Any] = data["value"]
        return value

    def put(self, key: str, value: dict[str, Any]) -> None:
        if not self.enabled:
            return
        target = self.path(key)
        tmp: str | None = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            payload = canonical_json({"format": CACHE_FORMAT, "key": key, "value": value})
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{key[:16]}.",
                                       suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(payload)
            os.replace(tmp, target)
            tmp = None
        except (OSError, TypeError, ValueError):
            self.errors += 1
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
