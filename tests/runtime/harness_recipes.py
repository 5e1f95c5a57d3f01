"""What the real-harness tests share: the README's recipe scripts (run as written, so the
README is what is tested), the CLIs found on PATH or under `$BENCH_HARNESS_BIN`
(`npm i --prefix DIR @openai/codex @anthropic-ai/claude-code` → `DIR/node_modules/.bin`), and a
scripted model that calls the session's tools by whatever name the harness offers them."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def recipe(name: str, dest: Path) -> Path:
    """The README's `# <name>` shell block, written to `dest/<name>`."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(rf"```sh\n(# {re.escape(name)}\n.*?)```", text, re.S)
    assert found, f"README.md has no ```sh block starting with `# {name}`"
    path = dest / name
    path.write_text(found.group(1), encoding="utf-8")
    return path


def cli_or_skip(program: str, package: str) -> str:
    """The directory holding `program`, or skip the test saying how to install it."""
    extra = os.environ.get("BENCH_HARNESS_BIN")
    found = shutil.which(program, path=extra) if extra else None
    found = found or shutil.which(program)
    if found is None:
        pytest.skip(f"`{program}` is not installed (npm i --prefix DIR {package}, then "
                    "BENCH_HARNESS_BIN=DIR/node_modules/.bin)")
    return str(Path(found).parent)


def offered(body: dict[str, Any], name: str) -> str:
    """The offered tool name for the session's tool `name` (harnesses prefix MCP tools:
    Codex and Claude Code `mcp__benchpack__read_file`, Gemini CLI `mcp_benchpack_read_file`,
    opencode `benchpack_read_file`; a bare name last: harnesses have a `read_file` of their
    own)."""
    names = [t["function"]["name"] for t in body.get("tools") or []]
    wanted = (f"mcp__benchpack__{name}", f"mcp_benchpack_{name}", f"benchpack_{name}", name)
    return next((n for w in wanted for n in names if n == w), name)


def renamed(reply: Any, body: dict[str, Any]) -> Any:
    """A scripted reply whose tool calls use the names the harness offered."""
    if isinstance(reply, dict):
        reply = json.loads(json.dumps(reply))
        for tc in reply.get("tool_calls") or []:
            tc["function"]["name"] = offered(body, tc["function"]["name"])
    return reply
