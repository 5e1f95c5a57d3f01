"""Opt-in Python graders (`python: file.py:function`), run only with `--allow-python`.

Each grader runs in the bubblewrap sandbox of `benchpack.runtime.sandbox` (no network, no files
beyond its own, CPU/memory/process/output limits, timeout). It receives the π-Bench-style tool history (and, if it takes a second
parameter, `{"files", "state", "reply"}`) and returns 0/1, a bool, a float in [0, 1] or a dict
of named 0/1 checks (averaged). Anything else — an exception, a timeout, a memory blow-up, a
malformed return — is an error, never a silent 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..sandbox import run_function
from .trace import Trace

REFUSED = "python graders need --allow-python"
"""The error of a python grader refused for want of `--allow-python` (the run summary counts
these by this text)."""


@dataclass
class PythonResult:
    score: float | None
    scores: dict[str, float] | None
    error: str | None


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
        return PythonResult(None, None, REFUSED)
    entry = str(item.get("python") or "")
    _, _, func = entry.rpartition(":")
    if not func or not source:
        return PythonResult(None, None, f"python grader `{entry}` has no source in the plan")
    context = {"files": trace.files, "state": trace.state, "reply": trace.reply}
    out = await run_function(source, func, [trace.tool_history(), context],
                             what="python grader", timeout_s=timeout_s, memory_mb=memory_mb)
    if out.error is not None:
        return PythonResult(None, None, out.error)
    return _interpret(out.value)
