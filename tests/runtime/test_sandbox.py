"""Pack-provided Python (graders and tools) runs isolated, limited, and never fails the run."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from benchpack.runtime.graders import Trace, run_python_grader
from benchpack.runtime.sandbox import run_function
from benchpack.runtime.types import ToolRecord


def run(source: str, func: str = "f", args: list[Any] | None = None, **kw: Any) -> Any:
    return asyncio.run(run_function(source, func, args or [], what="test code", **kw))


def test_arguments_by_arity_and_json_results() -> None:
    assert run("def f(a, b):\n    return [a, b]\n", args=[1, {"x": 2}, "ignored"]).value == \
        [1, {"x": 2}]
    assert run("def f():\n    return None\n", args=[1, 2]).value is None
    assert run("def f(a):\n    return {'sum': sum(a)}\n", args=[[1, 2, 3]]).value == {"sum": 6}


def test_failures_are_messages_not_exceptions() -> None:
    boom = run("def f():\n    raise ValueError('kaputt')\n")
    assert boom.value is None and "ValueError: kaputt" in (boom.error or "")
    assert "not JSON serializable" in (run("def f():\n    return object()\n").error or "")
    assert "failed" in (run("this is not python\n").error or "")
    assert "no attribute" in (run("def g():\n    return 1\n").error or "")


def test_time_and_memory_limits() -> None:
    t0 = time.monotonic()
    slow = run("def f():\n    while True:\n        pass\n", timeout_s=1.0)
    assert "timed out after 1 s" in (slow.error or "") and time.monotonic() - t0 < 5
    big = run("def f():\n    return len(bytearray(2_000_000_000))\n", memory_mb=256)
    assert big.value is None and big.error is not None


def test_isolation_from_the_environment_and_cwd(monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    src = "import os\ndef f():\n    return [os.environ.get('OPENAI_API_KEY'), os.listdir('.')]\n"
    assert run(src).value == [None, []]


def _trace() -> Trace:
    rec = ToolRecord(call_id="c1", tool_name="todo__create", call={"title": "INR recheck"},
                     result={"id": "T-2"}, error=None, started_at=0.0, duration=0.0)
    return Trace(tool_records=[rec], state={}, files={"a.md": "hello"}, messages=[],
                 reply="done")


def grade(source: str, **kw: Any) -> Any:
    item = {"python": "graders/g.py:score"}
    return asyncio.run(run_python_grader(item, source, _trace(), **kw))


def test_python_graders() -> None:
    assert grade("def score(h):\n    return 1\n", allow=False).error == \
        "python graders need --allow-python"
    ok = grade("def score(h):\n    return h[0]['call']['title'].startswith('INR')\n", allow=True)
    assert (ok.score, ok.error) == (1.0, None)
    checks = grade("def score(h, ctx):\n    return {'file': 'a.md' in ctx['files'], "
                   "'reply': ctx['reply'] == 'nope'}\n", allow=True)
    assert (checks.score, checks.scores) == (0.5, {"file": 1.0, "reply": 0.0})
    assert "outside [0, 1]" in (grade("def score(h):\n    return 7\n", allow=True).error or "")
    failed = grade("def score(h):\n    return h['missing']\n", allow=True)
    assert failed.score is None and "TypeError" in (failed.error or "")
