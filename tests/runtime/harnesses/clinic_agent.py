"""One deterministic agent, two ways in (issue 26): `python:` (in process, the session's
tools by `brief.tools.call`) and A2A (`a2a_clinic_server.py`, the tools over the session's MCP
server). Both run `respond` on the text the tool call returns (`render_result`, which is also
what MCP carries), so their store rows must be equal.

Per user message: read the INR log, flag every patient above the target range, write the
list to `notes/a2a.md`, try a file that is not there, answer in English and Chinese."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

Call = Callable[[str, dict[str, Any]], Awaitable[str]]


async def respond(call: Call, text: str) -> str:
    raw = await call("read_file", {"path": "anticoag/inr-log.csv"})
    content = json.loads(raw)["content"]
    rows = [line.split(",") for line in content.splitlines()[1:] if line.strip()]
    high = [r[0] for r in rows if len(r) > 6 and r[6] and
            float(r[6]) > float(r[3].split("-")[1])]
    await call("write_file", {"path": "notes/a2a.md",
                              "content": "High INR: " + ", ".join(high) + "\n"})
    missing = await call("read_file", {"path": "anticoag/none.md"})
    said = text.split(":")[0][:40]
    return (f"On \"{said}\": high INR for {', '.join(high) or 'nobody'}; notes/a2a.md written. "
            f"({missing[:6]}) 已记录，共 {len(high)} 位。")


async def agent(brief: Any, message: str | None, event: dict[str, Any] | None) -> str:
    """`python:` entry point."""
    from benchpack.runtime.env.toolbox import render_result

    async def call(name: str, args: dict[str, Any]) -> str:
        return render_result(await brief.tools.call(name, args))

    return await respond(call, message if message is not None else json.dumps(event))
