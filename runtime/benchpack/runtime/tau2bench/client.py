"""The client of `driver.py`: τ²-bench's own code, run by τ²'s own Python, one process.

`Tau2Driver(checkout, python)` starts `PYTHON driver.py --checkout CHECKOUT` (τ² imports in
~5 s) and sends it one JSON line per command; `extract`, `apply`, `evaluate` return its
answers. Every failure — no such Python, not a τ² checkout, τ² not importable with that Python,
the driver dying or not answering, a command τ² refused — is a `Tau2DriverError` whose text is
one line saying what and why (with the last line τ² wrote to stderr when it helps), so the CLI
shows `✗ …` and never a traceback. Nothing is installed and no model is ever called (the driver
replaces τ²'s `generate`).

The Python is `--tau2-python`, else `$BENCH_TAU2_PYTHON`, else the checkout's own `.venv`.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import subprocess
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

DRIVER = Path(__file__).with_name("driver.py")
START_TIMEOUT_S = 300.0
"""τ² imports litellm: seconds on a quiet machine, a minute on a loaded one."""
CALL_TIMEOUT_S = 900.0
PYTHON_ENV = "BENCH_TAU2_PYTHON"
CHECKOUT_ENV = "BENCH_TAU2_CHECKOUT"


class Tau2DriverError(RuntimeError):
    """One line: what failed and why (a hint in parentheses when there is one)."""


def find_python(checkout: Path, python: str | None = None) -> str:
    """The interpreter that can import τ²: the given one, `$BENCH_TAU2_PYTHON`, or the
    checkout's `.venv`."""
    given = python or os.environ.get(PYTHON_ENV)
    if given:
        return given
    for cand in (checkout / ".venv" / "bin" / "python", checkout / "venv" / "bin" / "python"):
        if cand.exists():
            return str(cand)
    raise Tau2DriverError(f"no Python for τ²-bench (give --tau2-python PY or set {PYTHON_ENV} "
                          "to a Python that can import τ²'s dependencies, e.g. the one of "
                          "the venv τ² was installed in)")


def check_checkout(checkout: Path) -> Path:
    checkout = Path(checkout).expanduser().resolve()
    if not (checkout / "src" / "tau2").is_dir() or not (checkout / "data" / "tau2").is_dir():
        raise Tau2DriverError(f"{checkout}: not a τ²-bench checkout (it needs src/tau2 and "
                              "data/tau2; give the root of a clone of sierra-research/"
                              "tau2-bench)")
    return checkout


class Tau2Driver:
    """One driver process (see the module docstring). Use as a context manager."""

    def __init__(self, checkout: Path, python: str | None = None, *,
                 start_timeout_s: float = START_TIMEOUT_S,
                 call_timeout_s: float = CALL_TIMEOUT_S) -> None:
        self.checkout = check_checkout(checkout)
        self.python = find_python(self.checkout, python)
        self.start_timeout_s = start_timeout_s
        self.call_timeout_s = call_timeout_s
        self.info: dict[str, Any] = {}
        """The driver's `ready` answer: Python, pydantic and checkout."""
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=40)
        self._next_id = 0
        self._cache: dict[str, Any] = {}

    # ------------------------------------------------------------------ process

    def start(self) -> Tau2Driver:
        if self._proc is not None:
            return self
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"}
        env.pop("PYTHONPATH", None)  # our own packages must not shadow τ²'s
        try:
            self._proc = subprocess.Popen(
                [self.python, str(DRIVER), "--checkout", str(self.checkout)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, encoding="utf-8", env=env, cwd=str(self.checkout), bufsize=1)
        except OSError as exc:
            raise Tau2DriverError(f"τ²'s Python `{self.python}` cannot be run: "
                                  f"{exc.strerror or exc}") from None
        proc = self._proc
        assert proc.stdout is not None and proc.stderr is not None
        threading.Thread(target=self._pump, args=(proc.stdout, self._lines), daemon=True).start()
        threading.Thread(target=self._keep_stderr, args=(proc.stderr,), daemon=True).start()
        hello = self._read(self.start_timeout_s, "starting")
        if "fatal" in hello:
            self.close()
            raise Tau2DriverError(f"τ²-bench cannot be imported from {self.checkout} with "
                                  f"`{self.python}`: {_one_line(hello['fatal'])} (give "
                                  "--tau2-python the Python of τ²'s own environment)")
        self.info = dict(hello.get("ready") or {})
        return self

    @staticmethod
    def _pump(stream: Any, lines: queue.Queue[str | None]) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    def _keep_stderr(self, stream: Any) -> None:
        for line in stream:
            if line.strip():
                self._stderr.append(line.rstrip())

    def _tail(self) -> str:
        last = [ln for ln in self._stderr if not ln.startswith((" ", "Traceback"))]
        return _one_line(last[-1]) if last else ""

    def _read(self, timeout: float, doing: str) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise Tau2DriverError(f"the τ² driver did not answer within {timeout:g} s "
                                  f"({doing})") from None
        if line is None:
            code = self._proc.wait(timeout=10) if self._proc is not None else None
            tail = self._tail()
            self.close()
            raise Tau2DriverError(f"the τ² driver exited ({doing}; exit code {code})"
                                  + (f": {tail}" if tail else ""))
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            self.close()
            raise Tau2DriverError(f"the τ² driver wrote something that is not JSON ({doing}): "
                                  f"{_one_line(line)[:200]}") from None
        if not isinstance(answer, dict):
            self.close()
            raise Tau2DriverError(f"the τ² driver wrote something unexpected ({doing})")
        return answer

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()

    def __enter__(self) -> Tau2Driver:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # ------------------------------------------------------------------ commands

    def request(self, cmd: str, *, timeout_s: float | None = None, **fields: Any) -> Any:
        """Send one command and return its result (`Tau2DriverError` on any failure)."""
        self.start()
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        self._next_id += 1
        rid = self._next_id
        try:
            proc.stdin.write(json.dumps({"id": rid, "cmd": cmd, **fields}) + "\n")
            proc.stdin.flush()
        except OSError:
            pass  # it died: _read says how
        answer = self._read(timeout_s or self.call_timeout_s, cmd)
        if answer.get("id") != rid:
            self.close()
            raise Tau2DriverError(f"the τ² driver answered another request ({cmd})")
        if "error" in answer:
            raise Tau2DriverError(f"τ² refused `{cmd}`: {_one_line(str(answer['error']))}")
        return answer.get("result")

    def extract(self, domain: str, variants: list[str] | tuple[str, ...] = (),
                solo: bool = False) -> dict[str, Any]:
        """What an import needs from τ²'s code for `domain` (see the driver; cached);
        `variants`: banking_knowledge's retrieval variants whose agent prompts to compose;
        `solo`: τ²'s solo agent's texts too."""
        key = f"extract:{domain}:{','.join(variants)}:{solo}"
        if key not in self._cache:
            self._cache[key] = self.request("extract", domain=domain, variants=list(variants),
                                            **({"solo": True} if solo else {}))
        result: dict[str, Any] = self._cache[key]
        return result

    def apply(self, domain: str, calls: list[dict[str, Any]], task_id: str | None = None,
              track: str = "writes") -> dict[str, Any]:
        """Run `calls` (`{name, arguments, requestor?}`) on a fresh environment (a task's
        initial state when `task_id` is given): `{start, calls: [{content, error,
        changes?}], changes}`, changes as `{db: {table: {key: row | null}}}`."""
        result: dict[str, Any] = self.request("apply", domain=domain, calls=calls,
                                              task_id=task_id, track=track)
        return result

    def evaluate(self, domain: str, task_id: str, messages: list[dict[str, Any]],
                 termination_reason: str, nl_verdicts: Any = None) -> dict[str, Any]:
        """τ²'s RewardInfo (as JSON) for a trajectory; NL assertions answered from
        `nl_verdicts` (a list of booleans in the task's order, or {assertion: bool})."""
        result: dict[str, Any] = self.request(
            "evaluate", domain=domain, task_id=task_id, messages=messages,
            termination_reason=termination_reason, nl_verdicts=nl_verdicts)
        return result


    def simulate(self, domain: str, task_ids: list[str], kinds: list[str], api_base: str,
                 max_steps: int, max_errors: int, seed: int | None = None,
                 prefix: str = "tau2", timeout_s: float = 3600.0, solo: bool = False,
                 retrieval: str | None = None) -> dict[str, Any]:
        """τ²'s own runner on each task × kind against the scripted endpoint at `api_base`:
        `{"<task>/<kind>": {termination, reward, breakdown}}` (see the driver); `solo`: its
        solo agent; `retrieval`: banking's variant (τ²'s name; default `no_knowledge`)."""
        result: dict[str, Any] = self.request(
            "simulate", timeout_s=timeout_s, domain=domain, task_ids=task_ids, kinds=kinds,
            api_base=api_base, max_steps=max_steps, max_errors=max_errors, seed=seed,
            prefix=prefix, **({"solo": True} if solo else {}),
            **({"retrieval": retrieval} if retrieval else {}))
        return result


def _one_line(text: str) -> str:
    return " ".join(str(text).split())
