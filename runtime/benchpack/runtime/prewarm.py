"""Imports a run will need, started early in a thread (issue 31). Light: imports nothing heavy
itself, so the CLI can call it before it imports the runtime."""

from __future__ import annotations

import contextlib
import os
import threading

_STARTED = False


def prewarm_http_client(api_base: str | None, models: tuple[str | None, ...] = ()) -> None:
    """With an `--api-base`, or a role's model `litellm:openai/…` (OpenAI's chat models litellm
    prices go direct too), calls may take the direct HTTP path (`openai_direct`), whose first
    use imports aiohttp; that import builds two SSL contexts (the system's certificates loaded
    twice: 0.1-0.2 s, even for an `http://` endpoint). The loading releases the GIL, so it runs
    in a thread beside the runtime's own imports and the plan loading; the first call then
    finds aiohttp imported. A failed import is left to the call path, which says why."""
    global _STARTED
    direct = api_base or any(m and m.startswith("litellm:openai/") for m in models)
    if _STARTED or not direct or os.environ.get("BENCH_LITELLM_ONLY"):
        return
    _STARTED = True

    def load() -> None:
        with contextlib.suppress(Exception):
            import aiohttp  # noqa: F401

    threading.Thread(target=load, name="benchpack-prewarm", daemon=True).start()


__all__ = ["prewarm_http_client"]
