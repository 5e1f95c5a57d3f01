"""The opt-in `shell` built-in: `bash -c COMMAND` in the bubblewrap sandbox, in the workspace.

An environment offers it with `builtin_tools: [shell]`, and it runs only with `--allow-python`
(it is arbitrary code, like pack Python). The command runs under `sandbox.run_command`: no
network, no runner files or environment, limits on time, memory, processes and output; the
episode workspace is bound read-write as `/work`, the working directory.

Ownership hand-off: a runner started as root runs sandboxed code as `nobody`, so the workspace
is handed to `nobody` for the command (by `run_command`) and taken back afterwards: every entry
is `lchown`ed to the runner's user and group again, links never followed, once the sandbox —
every process in it — is gone, so nothing can race the walk. Files the command wrote are then
the runner's, like files the file tools write (and `chown` clears any set-user-ID bit the
command set). A runner that is not root keeps its own user inside the sandbox's user
namespace, and there is nothing to hand back.

The result is `{exit_code, stdout, stderr, truncated}`: output decoded as UTF-8 (invalid bytes
replaced), each stream cut at `max_output` bytes; past that the command is stopped,
`exit_code` is null and `truncated` true. A command that outlives its time limit is a tool
error (with the output it printed so far).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from .. import tmpdirs
from ..sandbox import Sandbox, SandboxUnavailable, run_command
from .errors import ToolError
from .workspace import Workspace

SHELL_TIMEOUT_S = 30.0
MAX_SHELL_OUTPUT = 64 * 1024
"""Bytes of stdout (and of stderr) kept; past them the command is stopped."""
MAX_COMMAND_CHARS = 20_000

SHELL_SPEC: dict[str, Any] = {
    "description": "Run a bash command in the workspace (the working directory) inside a "
                   "sandbox without network. Returns exit_code, stdout, stderr and whether the "
                   "output was truncated.",
    "parameters": {
        "type": "object",
        "properties": {"command": {"type": "string",
                                   "description": "The command, run with `bash -c`."}},
        "required": ["command"],
        "additionalProperties": False,
    },
}


def _take_back(root: Path) -> None:
    """Give every entry under `root` (and `root`) back to the runner's user, links included
    (never followed)."""
    uid, gid = os.geteuid(), os.getegid()
    os.chown(root, uid, gid, follow_symlinks=False)
    for top, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            with contextlib.suppress(FileNotFoundError):
                os.chown(os.path.join(top, name), uid, gid, follow_symlinks=False)


def _excerpt(data: bytes) -> str:
    return data.decode("utf-8", "replace")


async def run_shell(workspace: Workspace, command: Any, *, allow_python: bool,
                    timeout_s: float = SHELL_TIMEOUT_S,
                    max_output: int = MAX_SHELL_OUTPUT) -> dict[str, Any]:
    """Run the agent's `command` (see the module docstring); `ToolError` for what the agent
    should see as a failure."""
    if not allow_python:
        raise ToolError("the shell tool runs commands, which needs --allow-python")
    if not isinstance(command, str) or not command.strip():
        raise ToolError("give `command`, the bash command to run")
    if "\x00" in command:
        raise ToolError("the command contains a NUL byte")
    if len(command) > MAX_COMMAND_CHARS:
        raise ToolError(f"the command is too long ({len(command)} characters; at most "
                        f"{MAX_COMMAND_CHARS})")
    box = Sandbox(timeout_s=timeout_s, memory_mb=1024, max_processes=64,
                  max_output=max_output, max_open_files=256)
    with tmpdirs.temporary("benchpack-shell-") as files:
        os.chmod(files, 0o755)
        try:
            res = await run_command(["/bin/bash", "-c", command], sandbox=box,
                                    work=workspace.root, files=files, what="the command")
        except SandboxUnavailable as exc:
            raise ToolError(f"the shell tool cannot run: {exc}") from None
        finally:
            if os.geteuid() == 0:
                _take_back(workspace.root)
    stdout, stderr = _excerpt(res.stdout), _excerpt(res.stderr)
    truncated = res.error is not None and f"more than {max_output} bytes" in res.error
    if res.error is not None and not truncated:
        shown = (stdout + stderr).strip()[-2000:]
        raise ToolError(res.error + (f"; output so far: {shown}" if shown else ""))
    return {"exit_code": None if truncated else res.returncode, "stdout": stdout,
            "stderr": stderr, "truncated": truncated}
