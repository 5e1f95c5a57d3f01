"""Python domain tools with state: a pack module's functions, run in a sandboxed tool worker.

One `PyToolWorker` per (episode environment, toolset). At its first call it starts, under
bubblewrap (`sandbox.spawn`: no network, no runner files or environment, limits), our
small worker program (`WORKER`), which imports the pack module from the read-only `/sandbox`,
gives it the `benchpack_tools` module (`State`, `ToolError`: `API`), loads a replica of the
service tables, and then answers one JSON line per call, `{function, args, state}` →
`{result, changes}` or `{error}`. The pack's own prints go to stderr, never into the protocol.

The runner's `ServiceState` stays the source of truth (it is what episodes snapshot): a call's
`changes` (the journal of `put`/`delete`) are checked against the row schemas and applied to
it only when the call succeeded, so a call is all-or-nothing — one that raises, or writes an
invalid row, changes nothing (the worker rolls its replica back, or is restarted). A toolset
with `atomic: false` keeps, like τ²-bench's tools that change their database in place, the
changes a raising call made before it raised: the worker sends them with the error and they
are checked and applied like a success's. A call that
passes its time limit, or a worker that crashes, is a tool error for that call; the worker is
killed and the next call starts a new one from the runner's state, as after `reset()` (call it
after restoring a snapshot). `close()` kills it; so does the runner's exit (`atexit`), and
bwrap's `--die-with-parent` if the runner is killed outright.

`State` keys compare as Python values (`3` is not `"3"`), both in the worker and in
`ServiceState.put_row`; `next_id(table)` gives the key a declarative `create` would (it does
not reserve it: the counter advances when a row with it is `put`). Arguments are validated
against the tool's JSON Schema before the call (unless `check_arguments: false`). The error
text of an exception other than `ToolError` is `Type: message (line N of file)`, or with
`plain_errors: true` just `str(exc)`.

A toolset with further `services` gets one `State` over the tables of all of them (each change
goes back to the service owning its table; such a worker is not pooled). Whenever a service
was written since the replica last saw it (`ServiceState.version`) — another toolset, such as
the user's, wrote to it — the next call sends its tables again first, so two toolsets over one
service never read stale rows.
A toolset's `after_call` function runs after every successful call inside the same call
(`run_after_call` runs it alone).
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import json
import os
import shutil
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchpack.specs.pytools import PyToolSpec

from ..sandbox import Sandbox, SandboxUnavailable, kill_process, sandbox_python, spawn
from ..tmpdirs import temp_dir
from .errors import ToolError
from .pytool_pool import WorkerPool, kill_idle
from .pytool_source import API, WORKER
from .services import ServiceState

CALL_TIMEOUT_S = 10.0
"""Default time limit of one python tool call (wall clock)."""
START_TIMEOUT_S = 20.0
"""Time the worker may take to start and import the module."""
CPU_BUDGET_S = 600
"""CPU seconds one worker process may use in its lifetime (then it is killed and restarted)."""
MAX_RESPONSE_BYTES = 4 << 20
"""Longest answer (result and journal) one call may send back."""


@dataclass(frozen=True)
class ToolBinding:
    """How a tool name maps onto the module: its function, the `State` parameter, the schema
    its arguments are checked against."""

    function: str
    state_param: str | None
    parameters: dict[str, Any]


def bindings(specs: Iterable[PyToolSpec], prefix: str = "",
             include: Iterable[str] | None = None) -> dict[str, ToolBinding]:
    """Tool name (prefix + function name) → binding, for the functions in `include` (all by
    default)."""
    wanted = set(include) if include is not None else None
    return {prefix + s.name: ToolBinding(s.name, s.state_param, s.parameters)
            for s in specs if wanted is None or s.name in wanted}


_HOOK_ONLY = "\x00after_call"
"""The binding function of `run_after_call` (never a function name)."""
_LIVE: weakref.WeakSet[PyToolWorker] = weakref.WeakSet()


@atexit.register
def _kill_all() -> None:
    for worker in list(_LIVE):
        worker.close()
    kill_idle()


class PyToolWorker:
    """The sandboxed worker of one toolset in one episode environment (see the module
    docstring). `call` raises `ToolError` for everything the agent should see as a failure."""

    def __init__(self, source: str, tools: Mapping[str, ToolBinding],
                 state: ServiceState | None, *, filename: str = "tools.py",
                 allow_python: bool = False, call_timeout_s: float = CALL_TIMEOUT_S,
                 memory_mb: int = 512, cpu_budget_s: int = CPU_BUDGET_S,
                 check_arguments: bool = True, atomic: bool = True,
                 plain_errors: bool = False, pool: WorkerPool | None = None,
                 services: Mapping[str, ServiceState] | None = None,
                 after_call: str | None = None) -> None:
        self.source = source
        self.after_call = after_call
        # every service the one `State` holds (`state`'s first), and which owns each table
        self.states: dict[str, ServiceState] = {}
        if state is not None:
            self.states[state.name] = state
        self.states.update(services or {})
        self.owner = {t: svc for svc, st in self.states.items() for t in st.tables}
        self._seen: dict[str, int] = {}
        """Per service, the `version` the replica holds: a service that changed since
        (another toolset wrote to it) is sent again with the next call."""
        self.check_arguments = check_arguments
        self.atomic = atomic
        self.plain_errors = plain_errors
        self.tools = dict(tools)
        self.state = state
        self.filename = filename
        self.allow_python = allow_python
        self.call_timeout_s = call_timeout_s
        self.sandbox = Sandbox(timeout_s=cpu_budget_s, memory_mb=memory_mb)
        self.starts = 0
        """How many worker processes were started (a restart shows as one more)."""
        self.pool = pool
        """The run's idle workers: borrowed from at the first call, given back by `aclose`."""
        self.borrowed = 0
        """How many times a warm worker was borrowed instead of starting one."""
        self._base: dict[str, list[Any]] | None = None
        self._info: dict[str, Any] = {}
        self._uses = 0
        self._proc: asyncio.subprocess.Process | None = None
        self._dir: Path | None = None
        self._stderr: collections.deque[bytes] = collections.deque(maxlen=64)
        self._drain: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._reaping: set[asyncio.Task[Any]] = set()
        # here, not at the top: a run without python tools never imports jsonschema
        from jsonschema import Draft202012Validator

        self._validators = {n: Draft202012Validator(b.parameters) for n, b in self.tools.items()}

    @property
    def what(self) -> str:
        return f"python toolset `{self.filename}`"

    # ------------------------------------------------------------------ process

    def _key(self) -> tuple[Any, ...]:
        return (self.source, self.filename, self.atomic, self.plain_errors, self.after_call)

    def _mark_seen(self) -> None:
        self._seen = {n: st.version for n, st in self.states.items()}

    def _stale(self) -> dict[str, Any] | None:
        """The tables of every service written since the replica last saw it, or None."""
        tables: dict[str, Any] = {}
        info: dict[str, Any] = {}
        for n, st in self.states.items():
            if not self._unchanged(n):
                tables.update({t: list(rows) for t, rows in st.live_rows().items()})
                info.update(st.key_info())
        return {"tables": tables, "info": info} if tables else None

    def _unchanged(self, service: str) -> bool:
        return self._seen.get(service) == self.states[service].version

    async def _start(self) -> asyncio.subprocess.Process:
        if self.pool is not None:
            idle = await self.pool.take(self._key(), self.state)
            if idle is not None:
                self._proc, self._dir, self._drain = idle.proc, idle.directory, idle.drain
                self._stderr = idle.stderr
                self._stderr.clear()
                self._base, self._info, self._uses = idle.base, idle.info, idle.uses + 1
                self._mark_seen()
                self.borrowed += 1
                _LIVE.add(self)
                return idle.proc
        self._dir = temp_dir("benchpack-tools-")
        files, work = self._dir / "files", self._dir / "work"
        for d in (files / "api", files / "pack", work):
            d.mkdir(parents=True)
        (files / "api" / "benchpack_tools.py").write_text(API, encoding="utf-8")
        (files / "pack" / "module.py").write_text(self.source, encoding="utf-8")
        (files / "worker.py").write_text(WORKER, encoding="utf-8")
        # the rows themselves (only written out here), kept to lend the worker again later
        tables: dict[str, Any] = {}
        info: dict[str, Any] = {}
        for st in self.states.values():
            tables.update(st.live_rows())
            info.update(st.key_info())
        self._base, self._info, self._uses = tables, info, 1
        self._mark_seen()
        stem = Path(self.filename).stem
        (files / "init.json").write_text(json.dumps(
            {"file": "module.py", "shown": self.filename, "tables": tables, "info": info,
             "module": stem if stem.isidentifier() else "pack_tools",
             "atomic": self.atomic, "plain_errors": self.plain_errors,
             "after_call": self.after_call},
            ensure_ascii=False), encoding="utf-8")
        for d in (self._dir, files, files / "api", files / "pack"):
            os.chmod(d, 0o755)
        self._stderr.clear()
        self.starts += 1
        proc = await spawn([sandbox_python()[0], "-I", "/sandbox/worker.py"],
                                   sandbox=self.sandbox, work=work, files=files,
                                   limit=MAX_RESPONSE_BYTES)
        _LIVE.add(self)
        self._proc = proc
        assert proc.stderr is not None
        self._drain = asyncio.ensure_future(self._keep_stderr(proc.stderr))
        hello = await self._answer(START_TIMEOUT_S, "starting")
        if "fatal" in hello:
            raise ToolError(f"{self.what} could not be loaded: {hello['fatal']}")
        return proc

    async def _keep_stderr(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(4096):
            self._stderr.append(chunk)

    def _tail(self) -> str:
        text = b"".join(self._stderr).decode("utf-8", "replace").strip().splitlines()[-3:]
        return " | ".join(text)

    async def _answer(self, timeout: float, doing: str) -> dict[str, Any]:
        """The worker's next line; on a timeout, crash or garbage the worker is killed and
        `ToolError` says what happened."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), timeout)
        except TimeoutError:
            self.close()
            raise ToolError(f"timed out after {timeout:g} s ({doing}); the {self.what} worker "
                            "was stopped and restarts at the next call") from None
        except ValueError:  # longer than the reader's limit
            self.close()
            raise ToolError(f"the answer was larger than {MAX_RESPONSE_BYTES} bytes; return "
                            "less") from None
        if not line:
            await asyncio.sleep(0.05)  # let the stderr reader catch the last words
            tail = self._tail()
            code = proc.returncode
            self.close()
            why = f"killed by signal {-code} (a time or memory limit)" if code and code < 0 \
                else f"exit code {code}" if code is not None else "it closed its output"
            raise ToolError(f"the {self.what} worker died ({doing}): {why}"
                            + (f": {tail}" if tail else "") + "; it restarts at the next call")
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            self.close()
            raise ToolError(f"the {self.what} worker sent something that is not JSON") from None
        if not isinstance(answer, dict):
            self.close()
            raise ToolError(f"the {self.what} worker sent something unexpected")
        return answer

    def close(self) -> None:
        """Kill the worker (if running) and remove its files; the next call starts a new one."""
        proc, self._proc = self._proc, None
        if proc is not None:
            kill_process(proc)
            if proc.stdin is not None:
                proc.stdin.close()
            with contextlib.suppress(RuntimeError):  # no running loop: nothing to reap with
                # reaped on the loop that started it, so its transport closes before the loop
                reap = asyncio.get_running_loop().create_task(proc.wait())
                self._reaping.add(reap)
                reap.add_done_callback(self._reaping.discard)
        if self._drain is not None:
            self._drain.cancel()
            self._drain = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        _LIVE.discard(self)

    async def aclose(self) -> None:
        """The episode is over: the worker goes back to the run's pool (reset there for the
        next episode) when it ended between calls; otherwise `close()`. Then wait until every
        worker this object stopped has been reaped."""
        proc = self._proc
        if (self.pool is not None and proc is not None and proc.returncode is None
                and self._base is not None and not self._lock.locked()):
            from .pytool_pool import IdleWorker

            self.pool.give(IdleWorker(self._key(), proc, self._dir, self._drain, self._stderr,
                                      self._base, self._info, self._uses,
                                      asyncio.get_running_loop()))
            self._proc, self._dir, self._drain, self._base = None, None, None, None
            self._stderr = collections.deque(maxlen=64)
            _LIVE.discard(self)
        self.close()
        if self._reaping:
            await asyncio.gather(*self._reaping, return_exceptions=True)

    def reset(self) -> None:
        """Forget the worker's replica: after the runner's state was restored from a
        snapshot, the next call starts a worker from it."""
        self.close()

    async def __aenter__(self) -> PyToolWorker:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ calls

    async def call(self, name: str, args: dict[str, Any]) -> Any:
        """Run the tool `name` with the agent's `args`; the result, or `ToolError`."""
        binding = self.tools.get(name)
        if binding is None:
            raise ToolError(f"{self.what} has no tool `{name}`; it has: "
                            f"{', '.join(sorted(self.tools)) or '(none)'}")
        if not self.allow_python:
            raise ToolError(f"`{name}` is a python tool; python tools need --allow-python")
        if not isinstance(args, dict):
            raise ToolError(f"arguments for `{name}` must be a JSON object")
        errors = sorted(self._validators[name].iter_errors(args), key=lambda e: e.message) \
            if self.check_arguments else []
        if errors:
            raise ToolError(f"invalid arguments for `{name}`: " + "; ".join(
                (".".join(str(p) for p in e.absolute_path) + ": " if e.absolute_path else "")
                + e.message for e in errors[:5]))
        async with self._lock:
            if self._proc is None or self._proc.returncode is not None:
                self.close()
                try:
                    await self._start()
                except SandboxUnavailable as exc:
                    self.close()
                    raise ToolError(f"{self.what} cannot run: {exc}") from None
                except ToolError:
                    self.close()
                    raise
            assert self._proc is not None and self._proc.stdin is not None
            request: dict[str, Any] = {"function": binding.function, "args": args,
                                       "state": binding.state_param}
            if binding.function == _HOOK_ONLY:
                request["hook_only"] = True
            stale = self._stale()
            if stale is not None:
                request["reload"] = stale
                self._mark_seen()
            try:
                try:
                    self._proc.stdin.write((json.dumps(request, ensure_ascii=False)
                                            + "\n").encode())
                    await self._proc.stdin.drain()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the worker died: _answer reports how
                answer = await self._answer(self.call_timeout_s, f"running `{name}`")
            except asyncio.CancelledError:
                # cancelled mid-call (the caller's own time limit): the worker's late answer
                # would become the next call's, and its replica may hold changes the runner
                # never applied, so it goes; the next call starts from the runner's state
                self.close()
                raise
        if "error" in answer:
            # a non-atomic toolset's failed call keeps what it changed before raising
            self._apply(name, answer.get("changes") or [])
            raise ToolError(str(answer["error"]))
        self._apply(name, answer.get("changes") or [])
        return answer.get("result")

    async def run_after_call(self) -> None:
        """Run the toolset's `after_call` alone (before and after a session's initial state,
        as τ²-bench syncs its two sides when it builds and sets up an environment)."""
        if self.after_call is None:
            return
        name = "after_call()"
        if name not in self.tools:
            from jsonschema import Draft202012Validator

            self.tools[name] = ToolBinding(_HOOK_ONLY, None, {"type": "object"})
            self._validators[name] = Draft202012Validator({"type": "object"})
        await self.call(name, {})

    async def call_function(self, function: str, args: dict[str, Any],
                            state_param: str | None) -> Any:
        """Run a public function of the module that is not offered as a tool (an environment
        assertion, a set-up helper of `initial_state.actions`) like a tool; its arguments are
        the pack's, not an agent's, so they are not checked."""
        name = f"{function}()"  # never a tool name: tool names are identifiers
        if name not in self.tools:
            from jsonschema import Draft202012Validator

            self.tools[name] = ToolBinding(function, state_param, {"type": "object"})
            self._validators[name] = Draft202012Validator({"type": "object"})
        return await self.call(name, args)

    def _apply(self, name: str, changes: list[dict[str, Any]]) -> None:
        """Apply a call's journal to the runner's state, all or nothing (a successful call's,
        or with `atomic: false` a failed one's)."""
        if not changes:
            return
        if not self.states:
            self.close()
            raise ToolError(f"`{name}` changed the state, but its toolset has no service")
        for ch in changes:
            state = self.states.get(self.owner.get(str(ch.get("table")), ""))
            if state is None:
                self.close()
                raise ToolError(f"`{name}` sent a change the runner does not understand")
            if ch.get("op") == "put":
                problems = state.validate_row(str(ch.get("table")), ch.get("row"))
                if problems:
                    self.close()  # the worker's replica holds the refused row
                    raise ToolError(f"`{name}` wrote a row that is not valid for "
                                    f"`{ch.get('table')}`: {'; '.join(problems)}; nothing was "
                                    "changed")
            elif ch.get("op") != "delete":
                self.close()
                raise ToolError(f"`{name}` sent a change the runner does not understand")
        # a service the replica was in step with stays so (it made these very changes); one
        # another toolset changed meanwhile is still sent again with the next call
        in_step = [n for n in self.states if self._unchanged(n)]
        for ch in changes:
            state = self.states[self.owner[ch["table"]]]
            if ch["op"] == "put":
                state.put_row(ch["table"], ch["row"])
            else:
                state.delete_row(ch["table"], ch["key"])
        for n in in_step:
            self._seen[n] = self.states[n].version
