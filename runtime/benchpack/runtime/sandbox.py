"""Running pack-provided Python (opt-in with `--allow-python`): python graders and python tools.

Each call runs in a fresh, isolated interpreter (`python -I`, empty environment) in an empty
temporary directory, with CPU, memory, open-file and core-dump limits and a wall-clock timeout
that kills its whole process group. The function receives JSON arguments — as many of
`args` as it has parameters — and must return a JSON value. Whatever goes wrong (an exception,
a timeout, a memory blow-up, output that is not JSON) comes back as an error message, never as
an exception in the runtime and never as a silent value.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SENTINEL = "\x1ebenchpack-result\x1e"

RUNNER = r'''
import importlib.util, inspect, json, sys
SENTINEL = "\x1ebenchpack-result\x1e"
path, func = sys.argv[1], sys.argv[2]
args = json.load(open(sys.argv[3], encoding="utf-8"))
spec = importlib.util.spec_from_file_location("benchpack_user_module", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
fn = getattr(mod, func)
n = len(inspect.signature(fn).parameters)
out = fn(*args[:n])
sys.stdout.write("\n" + SENTINEL + json.dumps(out) + "\n")
sys.stdout.flush()
'''


@dataclass
class SandboxResult:
    value: Any
    error: str | None


def _limits(memory_mb: int, cpu_s: int) -> None:
    import resource

    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 2**20, memory_mb * 2**20))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))


async def run_function(source: str, func: str, args: list[Any], *, what: str,
                       timeout_s: float = 10.0, memory_mb: int = 512) -> SandboxResult:
    """Call `func` of the module `source` with the first parameters-many `args`; `what` names
    it in error messages (e.g. "python grader")."""
    with tempfile.TemporaryDirectory(prefix="benchpack-sandbox-") as tmp:
        root = Path(tmp)
        (root / "module.py").write_text(source, encoding="utf-8")
        (root / "runner.py").write_text(RUNNER, encoding="utf-8")
        (root / "args.json").write_text(json.dumps(args, ensure_ascii=False, default=str),
                                        encoding="utf-8")
        work = root / "cwd"
        work.mkdir()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", str(root / "runner.py"), str(root / "module.py"), func,
            str(root / "args.json"), cwd=work, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            preexec_fn=lambda: _limits(memory_mb, max(1, int(timeout_s) + 1)))
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout=timeout_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            return SandboxResult(None, f"{what} timed out after {timeout_s:g} s")
    text = out.decode("utf-8", "replace")
    if SENTINEL not in text:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
        why = " | ".join(tail) if tail else f"exit code {proc.returncode}"
        if proc.returncode and proc.returncode < 0:
            why = f"killed by signal {-proc.returncode} (time or memory limit) " + why
        return SandboxResult(None, f"{what} failed: {why}")
    try:
        return SandboxResult(json.loads(text.rsplit(SENTINEL, 1)[1].strip()), None)
    except json.JSONDecodeError:
        return SandboxResult(None, f"{what} returned something that is not JSON")
