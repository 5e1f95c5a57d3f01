"""Opt-in Python graders (`python: file.py:function`), run only with `--allow-python`.

Each grader runs in a fresh, isolated interpreter (`python -I`) in an empty temporary
directory, with CPU, memory, open-file and core-dump limits and a wall-clock timeout that kills
its whole process group. It receives the π-Bench-style tool history (and, if it takes a second
parameter, `{"files", "state", "reply"}`) and returns 0/1, a bool, a float in [0, 1] or a dict
of named 0/1 checks (averaged). Anything else — an exception, a timeout, a memory blow-up, a
malformed return — is an error, never a silent 0.
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

from .trace import Trace

SENTINEL = "\x1ebenchpack-result\x1e"

RUNNER = r'''
import importlib.util, inspect, json, sys
SENTINEL = "\x1ebenchpack-result\x1e"
path, func = sys.argv[1], sys.argv[2]
payload = json.load(open(sys.argv[3], encoding="utf-8"))
spec = importlib.util.spec_from_file_location("benchpack_grader", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
fn = getattr(mod, func)
n = len(inspect.signature(fn).parameters)
out = fn(payload["tool_history"], payload["context"]) if n >= 2 else fn(payload["tool_history"])
sys.stdout.write("\n" + SENTINEL + json.dumps(out, default=str) + "\n")
sys.stdout.flush()
'''


@dataclass
class PythonResult:
    score: float | None
    scores: dict[str, float] | None
    error: str | None


def _limits(memory_mb: int, cpu_s: int) -> None:
    import resource

    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 2**20, memory_mb * 2**20))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))


def _interpret(value: Any) -> PythonResult:
    if isinstance(value, bool):
        return PythonResult(1.0 if value else 0.0, None, None)
    if isinstance(value, int | float):
        if 0 <= float(value) <= 1:
            return PythonResult(float(value), None, None)
        return PythonResult(None, None, f"grader returned {value}, outside [0, 1]")
    if isinstance(value, dict) and value:
        scores: dict[str, float] = {}
        for k, v in value.items():
            if isinstance(v, bool) or (isinstance(v, int | float) and 0 <= float(v) <= 1):
                scores[str(k)] = float(v)
            else:
                return PythonResult(None, None, f"grader check `{k}` returned {v!r}, not 0/1")
        return PythonResult(sum(scores.values()) / len(scores), scores, None)
    return PythonResult(None, None, f"grader returned {type(value).__name__}, expected 0/1, "
                        "a float in [0, 1] or a dict of checks")


async def run_python_grader(item: dict[str, Any], source: str, trace: Trace, *, allow: bool,
                            timeout_s: float = 10.0, memory_mb: int = 512) -> PythonResult:
    if not allow:
        return PythonResult(None, None, "python graders need --allow-python")
    entry = str(item.get("python") or "")
    _, _, func = entry.rpartition(":")
    if not func or not source:
        return PythonResult(None, None, f"python grader `{entry}` has no source in the plan")
    with tempfile.TemporaryDirectory(prefix="benchpack-grader-") as tmp:
        root = Path(tmp)
        (root / "grader.py").write_text(source, encoding="utf-8")
        (root / "runner.py").write_text(RUNNER, encoding="utf-8")
        (root / "payload.json").write_text(json.dumps({
            "tool_history": trace.tool_history(),
            "context": {"files": trace.files, "state": trace.state, "reply": trace.reply},
        }, ensure_ascii=False, default=str), encoding="utf-8")
        work = root / "cwd"
        work.mkdir()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", str(root / "runner.py"), str(root / "grader.py"), func,
            str(root / "payload.json"), cwd=work, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            preexec_fn=lambda: _limits(memory_mb, max(1, int(timeout_s) + 1)))
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout=timeout_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            return PythonResult(None, None, f"python grader timed out after {timeout_s:g} s")
    text = out.decode("utf-8", "replace")
    if SENTINEL not in text:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
        why = " | ".join(tail) if tail else f"exit code {proc.returncode}"
        if proc.returncode and proc.returncode < 0:
            why = f"killed by signal {-proc.returncode} (time or memory limit) " + why
        return PythonResult(None, None, f"python grader failed: {why}")
    try:
        value = json.loads(text.rsplit(SENTINEL, 1)[1].strip())
    except json.JSONDecodeError:
        return PythonResult(None, None, "python grader returned something that is not JSON")
    return _interpret(value)
