"""`bench mcp PLAN --session ID`: one session's environment served over MCP, for debugging a
harness's tool use by hand (MCP Inspector, a harness's config) without running the plan.

The environment starts as the session's first session would see it (the environment's files
and service fixtures, then the session's own files); earlier sessions of the episode are not
replayed. HTTP services start as in `bench run` and stop on every exit path.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TextIO

from benchpack.specs.plan import Plan, PlanSession

from .. import tmpdirs
from ..errors import UsageError
from ..types import ToolRecord


def pick_session(plan: Plan, pattern: str) -> PlanSession:
    """The one session whose id or name is (or matches the glob) `pattern`."""
    exact = [s for s in plan.sessions.values() if pattern in (s.id, s.name)]
    found = exact or [s for s in plan.sessions.values()
                      if fnmatch.fnmatchcase(s.id, pattern) or fnmatch.fnmatchcase(s.name, pattern)]
    if len(found) == 1:
        return found[0]
    names = sorted(s.name for s in plan.sessions.values())
    if not found:
        import difflib

        close = difflib.get_close_matches(pattern, names, n=3, cutoff=0.5)
        hint = (f"did you mean {', '.join(f'`{c}`' for c in close)}?" if close
                else f"sessions: {', '.join(names[:8])}{' …' if len(names) > 8 else ''}")
        raise UsageError(f"--session {pattern}: no session has this id or name ({hint})")
    shown = ", ".join(sorted(s.name for s in found)[:5])
    raise UsageError(f"--session {pattern}: {len(found)} sessions match ({shown}"
                     f"{' …' if len(found) > 5 else ''}); give one id or name")


@contextlib.asynccontextmanager
async def session_toolbox(plan: Plan, session: PlanSession, allow_python: bool = False,
                          work_dir: Path | None = None) -> AsyncIterator[Any]:
    """A `ToolBox` of `session` in a fresh environment under `work_dir` (a temporary directory
    by default), its HTTP services running; everything is stopped on exit."""
    from ..env import EpisodeEnvironment, ToolBox
    from ..env.service_pool import ServicePool, process_services
    from ..preflight import check_allow_python, check_process_services

    check_allow_python(plan, {session.id}, allow_python)
    check_process_services(plan, {session.id}, allow_python)
    with contextlib.ExitStack() as stack:
        root = work_dir or stack.enter_context(tmpdirs.temporary("benchpack-mcp-"))
        pool = ServicePool(plan, root / "services")
        env = EpisodeEnvironment.create(plan, session.environment, root / "workspace")
        env.process_pool = pool
        try:
            env.add_session_files(session.files)
            if process_services(plan, session.environment):
                await env.ensure_processes()
            box = ToolBox(plan, session, env, allow_python=allow_python)
            box.turn = 1
            yield box
        finally:
            env.release_processes()
            await env.aclose()
            try:
                await pool.close()
            finally:
                pool.kill_all()


def call_logger(out: TextIO = sys.stderr) -> Any:
    """One line per tool call on `out`: `tool(args) -> ok|error: …`."""

    def log(record: ToolRecord) -> None:
        args = json.dumps(record.call, ensure_ascii=False)
        verdict = f"error: {record.error}" if record.error is not None else "ok"
        print(f"  {record.tool_name}({args[:200]}) -> {verdict[:300]} "
              f"[{record.duration * 1000:.1f} ms]", file=out, flush=True)
    return log


async def serve_session(plan_path: str | Path, session: str, transport: str = "http",
                        host: str = "127.0.0.1", port: int = 0, allow_python: bool = False,
                        ready: Any = None) -> None:
    """Serve one session's tools until cancelled (Ctrl-C) or, over stdio, until stdin closes.
    `ready(endpoint, toolbox)` is called once the HTTP server listens."""
    import asyncio

    from ..planfile import load_plan
    from .server import serve_stdio, start_mcp_server

    plan = load_plan(plan_path)
    s = pick_session(plan, session)
    async with session_toolbox(plan, s, allow_python) as box:
        if transport == "stdio":
            await serve_stdio(box, log=call_logger())
            return
        endpoint = await start_mcp_server(box, host=host, port=port, log=call_logger())
        try:
            if ready is not None:
                ready(endpoint, box)
            await asyncio.Event().wait()
        finally:
            await endpoint.close()
