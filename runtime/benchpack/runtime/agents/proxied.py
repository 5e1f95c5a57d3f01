"""What the isolated harness adapters (`cmd2:`, `acp:`) share: the command's executable
checked up front, the run's recording model proxy started on the first session and stopped
when the run ends, and a session opened all or nothing."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

from ..errors import UsageError

if TYPE_CHECKING:
    from ..llm import LLMClient
    from ..proxy import ModelProxy


class _Session(Protocol):
    async def setup(self) -> None: ...
    async def close(self) -> None: ...


S = TypeVar("S", bound=_Session)


def check_executable(argv: list[str], shown: str, name: str, example: str) -> None:
    """`argv[0]` can be run, else a one-line error naming `shown` (what the user typed)."""
    if shutil.which(argv[0]) is None:
        where = "no such executable file" if os.sep in shown else "not found on PATH"
        raise UsageError(f"{name}: `{shown}`: {where} (hint: give the program's path, e.g. "
                         f"{example})")


class ProxiedAdapter:
    """Base of an adapter whose harness calls its model through the run's proxy. Subclasses
    set `llm` (the run's client factory) and `proxy_model` (the model the proxy serves)."""

    llm: Callable[[], LLMClient]
    proxy_model: str | None = None
    _proxy: ModelProxy | None = None
    _lock: asyncio.Lock | None = None

    async def proxy(self) -> ModelProxy:
        """The run's proxy, started on the first session (it needs the runner's loop)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._proxy is None:
                from ..proxy import ModelProxy

                proxy = ModelProxy(self.llm(), model=self.proxy_model)
                await proxy.start()
                self._proxy = proxy
            return self._proxy

    @staticmethod
    async def _opened(session: S) -> S:
        """`session` set up, or closed again (nothing left behind) when its setup fails."""
        try:
            await session.setup()
        except BaseException:
            await session.close()
            raise
        return session

    async def aclose(self) -> None:
        """Stop the proxy (the runner calls this when the run ends, whichever way)."""
        proxy, self._proxy = self._proxy, None
        if proxy is not None:
            await proxy.aclose()


__all__ = ["ProxiedAdapter", "check_executable"]
