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

from jsonschema import Draft202012Validator

from benchpack.specs.pytools import PyToolSpec

from ..sandbox import Sandbox, SandboxUnavailable, kill_process, sandbox_python, spawn
from ..tmpdirs import temp_dir
from .errors import ToolError
from .pytool_pool import WorkerPool, kill_idle
from .services import ServiceState

CALL_TIMEOUT_S = 10.0
"""Default time limit of one python tool call (wall clock)."""
START_TIMEOUT_S = 20.0
"""Time the worker may take to start and import the module."""
CPU_BUDGET_S = 600
"""CPU seconds one worker process may use in its lifetime (then it is killed and restarted)."""
MAX_RESPONSE_BYTES = 4 << 20
"""Longest answer (result and journal) one call may send back."""

API = r'''
"""benchpack_tools: what a pack's python tools import (`State`, `ToolError`)."""
import copy as _copy
import json as _json


class ToolError(Exception):
    """Raise it to tell the agent the call failed (and why): the agent sees a tool error."""


def _jkey(key):
    return _json.dumps(key, sort_keys=True)


_NEW = object()


class State:
    """The service's tables (values are JSON). Returned rows are copies: change one, then
    `put` it. A call that raises changes nothing."""

    def __init__(self, tables, info):
        self._tables = {t: {_jkey(r[info[t]["key"]]): r for r in rows if info[t]["key"] in r}
                        for t, rows in tables.items()}
        self._info = info
        self._journal = []
        self._undo = []
        # the episode's journal: each changed key's row before its first change (`_NEW`: it
        # was not there), so that a warm worker is reset by undoing it (`_reset_episode`)
        self._touched = {}
        self._deleted = False
        self._counters = {t: i["counter"] for t, i in info.items()}

    def _reset_episode(self):
        """Back to the tables this State was made from, by undoing the episode's changes:
        False when a row was deleted (putting it back would move it to the end of its table,
        and the order of rows is what `rows`/`find` return), then the caller reloads."""
        if self._deleted:
            return False
        for (table, k), old in self._touched.items():
            if old is _NEW:
                self._tables[table].pop(k, None)
            else:
                self._tables[table][k] = old  # an existing key keeps its place
        for table, counter in self._counters.items():
            self._info[table]["counter"] = counter
        self._touched, self._journal, self._undo = {}, [], []
        return True

    def _table(self, table):
        if table not in self._tables:
            raise ToolError(f"there is no table `{table}`; tables: "
                            + ", ".join(sorted(self._tables)))
        return self._tables[table]

    def get(self, table, key):
        """The row with this key; ToolError if there is none."""
        row = self._table(table).get(_jkey(key))
        if row is None:
            raise ToolError(f"no row of `{table}` with {self._info[table]['key']} {key!r}")
        return _copy.deepcopy(row)

    def find(self, table, **equals):
        """Rows whose fields equal all of `equals`."""
        return [_copy.deepcopy(r) for r in self._table(table).values()
                if all(f in r and r[f] == v for f, v in equals.items())]

    def rows(self, table):
        return [_copy.deepcopy(r) for r in self._table(table).values()]

    def put(self, table, row):
        """Insert `row`, or replace the row with the same key (a row without its key gets
        `next_id(table)`)."""
        rows = self._table(table)
        if not isinstance(row, dict):
            raise TypeError(f"State.put: a row must be a dict, got {type(row).__name__}")
        key_field = self._info[table]["key"]
        row = _json.loads(_json.dumps(row))  # a copy, and proof that it is JSON
        if row.get(key_field) is None:
            row[key_field] = self.next_id(table)
        k = _jkey(row[key_field])
        self._undo.append((table, k, rows.get(k), self._info[table]["counter"]))
        self._touched.setdefault((table, k), rows.get(k, _NEW))
        rows[k] = row
        n = self._number(table, row[key_field])
        if n is not None:
            self._info[table]["counter"] = max(self._info[table]["counter"], n)
        self._journal.append({"op": "put", "table": table, "row": _copy.deepcopy(row)})
        return _copy.deepcopy(row)

    def delete(self, table, key):
        """Remove the row with this key; ToolError if there is none."""
        rows = self._table(table)
        k = _jkey(key)
        if k not in rows:
            raise ToolError(f"no row of `{table}` with {self._info[table]['key']} {key!r}")
        self._undo.append((table, k, rows[k], self._info[table]["counter"]))
        self._deleted = True
        del rows[k]
        self._journal.append({"op": "delete", "table": table, "key": key})

    def _number(self, table, key):
        info = self._info[table]
        if info["int_keys"]:
            return key if isinstance(key, int) and not isinstance(key, bool) else None
        p = info["prefix"]
        if isinstance(key, str) and key.startswith(p) and key[len(p):].isdigit():
            return int(key[len(p):])
        return None

    def next_id(self, table):
        """The next free generated key (prefix and padding as the table's existing keys)."""
        rows = self._table(table)
        info = self._info[table]
        n = info["counter"]
        while True:
            n += 1
            key = n if info["int_keys"] else f"{info['prefix']}{str(n).zfill(info['width'])}"
            if _jkey(key) not in rows:
                return key

    def _begin(self):
        self._journal, self._undo = [], []

    def _rollback(self):
        # dict order is row order: restore a replaced row in place, a deleted one at the end
        # (the runner's copy never saw the call, so the next load resets the order anyway)
        for table, k, old, counter in reversed(self._undo):
            if old is None:
                self._tables[table].pop(k, None)
            else:
                self._tables[table][k] = old
            self._info[table]["counter"] = counter
        self._journal, self._undo = [], []
'''

WORKER = r'''
import asyncio, importlib.util, inspect, json, os, shutil, sys, traceback
proto_in = os.fdopen(os.dup(0), "r", encoding="utf-8")
proto_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
os.dup2(2, 1)  # the pack's prints go to stderr, never into the protocol
sys.path.insert(0, "/sandbox/api")
import benchpack_tools


def send(obj):
    try:
        text = json.dumps(obj, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        text = json.dumps({"error": f"the tool returned a value that is not JSON: {exc}",
                           "kind": "crash"})
    proto_out.write(text + "\n")
    proto_out.flush()


def failed(state):
    """After a call raised: nothing changed (atomic), or the changes made so far stay."""
    if ATOMIC:
        state._rollback()
        return {}
    try:
        json.dumps(state._journal, allow_nan=False)
    except (TypeError, ValueError):  # a row that is not JSON: as an atomic call
        state._rollback()
        return {}
    return {"changes": state._journal}


def where(exc):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == MODULE]
    return f" (line {frames[-1].lineno} of {SHOWN})" if frames else ""


INIT = open("/sandbox/init.json", encoding="utf-8").read()
init = json.loads(INIT)
MODULE, SHOWN = "/sandbox/pack/" + init["file"], init["shown"]
ATOMIC, PLAIN = init.get("atomic", True), init.get("plain_errors", False)
ENVIRON = dict(os.environ)


CODE = []


def load():
    """The pack module, executed afresh in a new module (compiled once per process)."""
    spec = importlib.util.spec_from_file_location(init["module"], MODULE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[init["module"]] = module
    if not CODE:
        with open(MODULE, "rb") as f:
            CODE.append(compile(f.read(), MODULE, "exec", dont_inherit=True))
    exec(CODE[0], module.__dict__)
    return module


def empty(directory):
    for entry in os.scandir(directory):
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            pass


try:
    mod = load()
except BaseException as exc:
    send({"fatal": f"{type(exc).__name__}: {exc}{where(exc)}"})
    sys.exit(0)
state = benchpack_tools.State(init["tables"], init["info"])
send({"ready": True})
for line in proto_in:
    req = json.loads(line)
    if req.get("reset"):  # the next episode: as if started afresh (pytool_pool.py)
        empty("/work")
        empty("/tmp")
        os.chdir("/work")
        os.environ.clear()
        os.environ.update(ENVIRON)
        try:
            mod = load()
        except BaseException as exc:
            send({"fatal": f"{type(exc).__name__}: {exc}{where(exc)}"})
            sys.exit(0)
        if not state._reset_episode():
            fresh = json.loads(INIT)
            state = benchpack_tools.State(fresh["tables"], fresh["info"])
        send({"ready": True})
        continue
    fn = getattr(mod, req["function"], None)
    if not callable(fn):
        send({"error": f"the module has no function `{req['function']}`", "kind": "crash"})
        continue
    kwargs = dict(req["args"])
    if req.get("state"):
        kwargs[req["state"]] = state
    state._begin()
    try:
        out = fn(**kwargs)
        if inspect.iscoroutine(out):
            out = asyncio.run(out)
        answer = {"result": out, "changes": state._journal}
        json.dumps(answer, allow_nan=False)
    except benchpack_tools.ToolError as exc:
        answer = {"error": str(exc) if PLAIN else str(exc) or type(exc).__name__,
                  "kind": "tool"}
        answer.update(failed(state))
    except BaseException as exc:  # the pack's bug (or sys.exit): the call fails, we go on
        answer = {"error": str(exc) if PLAIN else f"{type(exc).__name__}: {exc}{where(exc)}",
                  "kind": "crash"}
        answer.update(failed(state))
    send(answer)
'''


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
                 plain_errors: bool = False, pool: WorkerPool | None = None) -> None:
        self.source = source
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
        self._validators = {n: Draft202012Validator(b.parameters) for n, b in self.tools.items()}

    @property
    def what(self) -> str:
        return f"python toolset `{self.filename}`"

    # ------------------------------------------------------------------ process

    def _key(self) -> tuple[Any, ...]:
        return (self.source, self.filename, self.atomic, self.plain_errors)

    async def _start(self) -> asyncio.subprocess.Process:
        if self.pool is not None:
            idle = await self.pool.take(self._key(), self.state)
            if idle is not None:
                self._proc, self._dir, self._drain = idle.proc, idle.directory, idle.drain
                self._stderr = idle.stderr
                self._stderr.clear()
                self._base, self._info, self._uses = idle.base, idle.info, idle.uses + 1
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
        tables = self.state.live_rows() if self.state is not None else {}
        info = self.state.key_info() if self.state is not None else {}
        self._base, self._info, self._uses = tables, info, 1
        stem = Path(self.filename).stem
        (files / "init.json").write_text(json.dumps(
            {"file": "module.py", "shown": self.filename, "tables": tables, "info": info,
             "module": stem if stem.isidentifier() else "pack_tools",
             "atomic": self.atomic, "plain_errors": self.plain_errors},
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
            request = {"function": binding.function, "args": args, "state": binding.state_param}
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

    async def call_function(self, function: str, args: dict[str, Any],
                            state_param: str | None) -> Any:
        """Run a public function of the module that is not offered as a tool (an environment
        assertion, a set-up helper of `initial_state.actions`) like a tool; its arguments are
        the pack's, not an agent's, so they are not checked."""
        name = f"{function}()"  # never a tool name: tool names are identifiers
        if name not in self.tools:
            self.tools[name] = ToolBinding(function, state_param, {"type": "object"})
            self._validators[name] = Draft202012Validator({"type": "object"})
        return await self.call(name, args)

    def _apply(self, name: str, changes: list[dict[str, Any]]) -> None:
        """Apply a call's journal to the runner's state, all or nothing (a successful call's,
        or with `atomic: false` a failed one's)."""
        if not changes:
            return
        if self.state is None:
            self.close()
            raise ToolError(f"`{name}` changed the state, but its toolset has no service")
        for ch in changes:
            if ch.get("op") == "put":
                problems = self.state.validate_row(str(ch.get("table")), ch.get("row"))
                if problems:
                    self.close()  # the worker's replica holds the refused row
                    raise ToolError(f"`{name}` wrote a row that is not valid for "
                                    f"`{ch.get('table')}`: {'; '.join(problems)}; nothing was "
                                    "changed")
            elif ch.get("op") != "delete" or ch.get("table") not in self.state.tables:
                self.close()
                raise ToolError(f"`{name}` sent a change the runner does not understand")
        for ch in changes:
            if ch["op"] == "put":
                self.state.put_row(ch["table"], ch["row"])
            else:
                self.state.delete_row(ch["table"], ch["key"])
