"""Process helpers shared by the harness adapters (`cmd`, `cmd2`, `acp`): each runs its harness
as a process group of its own in the episode workspace, and each stops, waits for and briefs it
the same way. Kept apart from `cmd_agent.py` so the other two adapters import them without
borrowing its private names."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..types import Message, SessionBrief


def signal_group(proc: asyncio.subprocess.Process, sig: int) -> None:
    if proc.returncode is not None:  # reaped: its group id may belong to someone else now
        return
    try:
        os.killpg(proc.pid, sig)  # the session leader's pid is the group id
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)


async def wait_exit(proc: asyncio.subprocess.Process, timeout: float) -> bool:
    """Wait up to `timeout` seconds for the process to exit (not for its pipes to close)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while proc.returncode is None and loop.time() < deadline:
        await asyncio.sleep(0.01)
    return proc.returncode is not None


def anchor_paths(argv: list[str], base: Path) -> list[str]:
    """Relative paths in the command, made absolute against the directory `bench` runs in
    (the harness itself runs in the workspace): the program when it names a path, and every
    other argument that names an existing file or directory there."""
    out = []
    for i, arg in enumerate(argv):
        path = Path(arg)
        if not path.is_absolute() and not arg.startswith("-") and (
                (i == 0 and os.sep in arg) or (i > 0 and (base / path).exists())):
            arg = str(base / path)
        out.append(arg)
    return out


def workspace_of(brief: SessionBrief) -> str | None:
    """The episode workspace behind the brief's tools (a `ToolBox`), if there is one."""
    env = getattr(brief.tools, "env", None)
    root = getattr(getattr(env, "workspace", None), "root", None)
    return str(root) if isinstance(root, Path) and root.is_dir() else None


def plain_message(m: Any) -> dict[str, str] | None:
    """A message (`types.Message` or a mapping) as `{role, content}`."""
    if isinstance(m, Message):
        return {"role": m.role, "content": m.content}
    if isinstance(m, Mapping) and "role" in m:
        return {"role": str(m["role"]), "content": str(m.get("content") or "")}
    return None
