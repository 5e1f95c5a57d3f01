"""HTTP services that are processes: started in the sandbox, reached over a Unix socket, stopped.

A `ServiceProcess` runs a pack's service (`specs.services.ProcessService`) in the bubblewrap
sandbox of `benchpack.runtime.sandbox` with no network. Next to it, in the same sandbox, our
`service_supervisor.py` relays a Unix socket in a bound directory to the service's
`127.0.0.1:$PORT`; the runner speaks HTTP over that socket with httpx. `start` waits for the
health check; a service that exits or stays unhealthy is a `ServiceStartError` naming the
service and quoting the tail of its log (stdout and stderr, in `<instance>/service.log`).

Nothing outlives the runner:
- `stop` asks the supervisor (stdin) to SIGTERM the service, SIGKILLs the sandbox after the
  grace period; `kill` is the immediate, synchronous variant for exit paths;
- bwrap's `--die-with-parent` takes the sandbox down when the runner dies, even by SIGKILL, and
  the supervisor also stops the service when its stdin closes;
- every start is written to a pid registry (`<work_dir>/services/pids.json`, by host pid and
  process start time, so a recycled pid is never killed); the next start in the same work
  directory kills what a dead runner left behind (`PidRegistry.reap`).

Layout of one instance: `<work_dir>/services/<name>-XXXX/` holds `files/` (read-only in the
sandbox at `/sandbox`), `work/` (the service's writable `/work`), `service.log`, and the socket
directory (bound at `/svc`) unless that path is too long for a Unix socket, then a short one in
the system temp directory (removed by `stop`, or by the next start's `reap` after a dead
runner).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from benchpack.specs.services import HttpEndpoint, ProcessService

from ..sandbox import (
    Sandbox,
    SandboxProcess,
    SandboxUnavailable,
    next_uid,
    sandbox_python,
    start_process,
)
from ..tmpdirs import temp_dir

SUPERVISOR = Path(__file__).with_name("service_supervisor.py")
PACK_MOUNT = "/pack"
SOCKET_MOUNT = "/svc"
SOCKET_NAME = "http.sock"
SOCKET_TEMP_PREFIX = "bp-svc-"
MAX_SOCKET_PATH = 100
"""sun_path holds 108 bytes; keep a margin."""
LOG_TAIL_LINES = 12
LOG_TAIL_CHARS = 2000


class ServiceStartError(RuntimeError):
    """A service did not come up; the message names it and quotes the tail of its log."""


class ServiceError(RuntimeError):
    """A runner-side request to a service (reset, state) failed."""


# --------------------------------------------------------------------------- pid registry


def process_start_time(pid: int) -> int | None:
    """Start time of `pid` in clock ticks since boot (field 22 of /proc/PID/stat), or None if
    there is no such process. A pid together with it names one process, never a recycled pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _alive(pid: int | None, start: int | None) -> bool:
    """`pid` is still the process that started at `start`, and not a zombie (a dead process
    nobody reaped yet: nothing left to kill)."""
    if pid is None or start is None or process_start_time(pid) != start:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[:1] != ["Z"]


@dataclass
class PidRegistry:
    """Which sandboxes this work directory's runners started (`pids.json`, under a file lock)."""

    path: Path

    @contextlib.contextmanager
    def _locked(self) -> Any:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                try:
                    entries = json.loads(self.path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    entries = []
                box = [e for e in entries if isinstance(e, dict)] if isinstance(entries,
                                                                               list) else []
                yield box
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text(json.dumps(box, indent=1), encoding="utf-8")
                os.replace(tmp, self.path)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def add(self, service: str, instance: Path, proc: SandboxProcess,
            socket_dir: Path | None = None) -> None:
        me = os.getpid()
        entry = {"service": service, "instance": str(instance),
                 "socket_dir": str(socket_dir) if socket_dir else None,
                 "owner": me, "owner_start": process_start_time(me),
                 "pid": proc.pid, "pid_start": process_start_time(proc.pid),
                 "child": proc.child_pid,
                 "child_start": process_start_time(proc.child_pid) if proc.child_pid else None}
        with self._locked() as entries:
            entries.append(entry)

    def remove(self, pid: int) -> None:
        with self._locked() as entries:
            entries[:] = [e for e in entries if e.get("pid") != pid]

    def reap(self) -> list[str]:
        """Kill the sandboxes of runners that are gone; keep live runners' entries. Returns the
        services it killed (for a log line)."""
        killed: list[str] = []
        with self._locked() as entries:
            keep = []
            for e in entries:
                if _alive(e.get("owner"), e.get("owner_start")):
                    keep.append(e)
                    continue
                hit = False
                # the sandbox's first process first: its end kills the whole pid namespace
                for pid_key, start_key, group in (("child", "child_start", False),
                                                  ("pid", "pid_start", True)):
                    pid = e.get(pid_key)
                    if isinstance(pid, int) and _alive(pid, e.get(start_key)):
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            (os.killpg if group else os.kill)(pid, signal.SIGKILL)
                            hit = True
                if hit:
                    killed.append(str(e.get("service")))
                # a temporary socket directory outside the work directory would pile up in /tmp
                sock = e.get("socket_dir")
                if isinstance(sock, str) and Path(sock).name.startswith(SOCKET_TEMP_PREFIX):
                    shutil.rmtree(sock, ignore_errors=True)
            entries[:] = keep
        return killed


# --------------------------------------------------------------------------- the service


def log_tail(path: Path, lines: int = LOG_TAIL_LINES, chars: int = LOG_TAIL_CHARS) -> str:
    """The last lines of a log as one line (` | `-joined), or a note that it is empty."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return "(no log)"
    tail = [ln.rstrip() for ln in text.splitlines() if ln.strip()][-lines:]
    joined = " | ".join(tail)
    if len(joined) > chars:
        joined = "…" + joined[-chars:]
    return joined or "(the log is empty)"


class ServiceProcess:
    """One running instance of a process service (see the module docstring).

    `pack_dir` is bound read-only at `/pack`; `spec.cwd` (relative to it, or absolute inside
    it) is the service's working directory. Use `async with` or `start`/`stop`; all methods
    must run on the one event loop that called `start`."""

    def __init__(self, name: str, spec: ProcessService, *, pack_dir: Path, work_dir: Path,
                 sandbox: Sandbox | None = None) -> None:
        self.name = name
        self.spec = spec
        self.pack_dir = Path(pack_dir).resolve()
        self.work_dir = Path(work_dir)
        self.registry = PidRegistry(self.work_dir / "services" / "pids.json")
        self.sandbox = sandbox or Sandbox(timeout_s=float(spec.cpu_s), memory_mb=spec.memory_mb,
                                          max_processes=256, max_open_files=256)
        self.instance: Path | None = None
        self.log_path: Path | None = None
        self.socket_path: Path | None = None
        self._socket_dir_is_temp = False
        self._proc: SandboxProcess | None = None
        self._client: httpx.AsyncClient | None = None

    # ---- state

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.popen.poll() is None

    @property
    def pids(self) -> tuple[int, int | None] | None:
        """(bwrap's host pid, the sandbox's first process's host pid) while started."""
        return (self._proc.pid, self._proc.child_pid) if self._proc else None

    def describe_exit(self) -> str:
        """Why the service is not there, for tool errors: exit code and log tail."""
        if self._proc is None:
            return f"service `{self.name}` is not started"
        code = self._proc.popen.poll()
        state = "is running" if code is None else f"exited with code {code}"
        return f"service `{self.name}` {state}; its log ({self.log_path}): " \
               f"{log_tail(self.log_path) if self.log_path else '(no log)'}"

    # ---- start

    def _cwd_inside(self) -> str:
        cwd = Path(self.spec.cwd)
        full = (cwd if cwd.is_absolute() else self.pack_dir / cwd).resolve()
        try:
            rel = full.relative_to(self.pack_dir)
        except ValueError:
            raise ServiceStartError(f"service `{self.name}`: its cwd `{self.spec.cwd}` is outside "
                                    f"the pack directory {self.pack_dir}") from None
        if not full.is_dir():
            raise ServiceStartError(f"service `{self.name}`: its cwd `{self.spec.cwd}` is not a "
                                    f"directory of the pack ({full})")
        if os.geteuid() == 0 and (self.pack_dir.stat().st_mode & 0o005) != 0o005:
            # as root the sandbox runs the service as an unprivileged user of its own, who could
            # not even list /pack:
            # say so now instead of a puzzling "permission denied" in the service's log
            raise ServiceStartError(f"service `{self.name}`: the pack directory {self.pack_dir} "
                                    f"is not readable by other users, and the sandbox runs the "
                                    f"service as an unprivileged user when bench runs as root (chmod o+rx "
                                    f"it, or run bench as an ordinary user)")
        return str(Path(PACK_MOUNT) / rel)

    def _command(self) -> list[str]:
        exe = sandbox_python()[0]
        first, *rest = self.spec.command
        # the sandbox has the runner's base interpreter at its real path, no `python` on PATH
        return [exe, *rest] if first in ("python", "python3") else list(self.spec.command)

    def _prepare(self) -> tuple[Path, Path, Path]:
        root = self.work_dir / "services"
        root.mkdir(parents=True, exist_ok=True)
        self.instance = Path(tempfile.mkdtemp(prefix=f"{self.name}-", dir=root))
        files, work = self.instance / "files", self.instance / "work"
        files.mkdir()
        work.mkdir()
        self.log_path = self.instance / "service.log"
        sock_dir = self.instance / "sock"
        if len(str(sock_dir / SOCKET_NAME)) > MAX_SOCKET_PATH:
            sock_dir = temp_dir(SOCKET_TEMP_PREFIX)  # named for `tmpdirs.sweep`
            if len(str(sock_dir / SOCKET_NAME)) > MAX_SOCKET_PATH:  # a long TMPDIR
                sock_dir.rmdir()
                sock_dir = Path(tempfile.mkdtemp(prefix=SOCKET_TEMP_PREFIX))
            self._socket_dir_is_temp = True
        else:
            sock_dir.mkdir()
        self._uid = next_uid()  # the sandbox's own user: its process budget is its own
        if os.geteuid() == 0:  # the supervisor runs as that user and creates the socket here
            os.chown(sock_dir, self._uid, self._uid)
        os.chmod(self.instance, 0o755)
        self.socket_path = sock_dir / SOCKET_NAME
        return files, work, sock_dir

    async def start(self) -> None:
        """Start the service and wait until its health check answers 2xx.

        Raises `ServiceStartError` (named, with the log tail) if it exits, stays unhealthy past
        `health.timeout_s`, or cannot be sandboxed."""
        if self._proc is not None:
            raise RuntimeError(f"service `{self.name}` is already started")
        killed = self.registry.reap()
        cwd = self._cwd_inside()
        files, work, sock_dir = self._prepare()
        assert self.log_path and self.socket_path and self.instance
        if killed:
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(f"[benchpack] killed leftovers of a dead runner: {', '.join(killed)}\n")
        shutil.copyfile(SUPERVISOR, files / "supervisor.py")
        config = {"command": self._command(), "cwd": cwd, "env": dict(self.spec.env),
                  "port": None if self.spec.port == "auto" else self.spec.port,
                  "socket": f"{SOCKET_MOUNT}/{SOCKET_NAME}", "grace_s": self.spec.stop_grace_s}
        (files / "config.json").write_text(json.dumps(config), encoding="utf-8")
        box = dataclasses.replace(
            self.sandbox, uid=self._uid, ro_binds=[*self.sandbox.ro_binds, (str(self.pack_dir), PACK_MOUNT)],
            rw_binds=[*self.sandbox.rw_binds, (str(sock_dir), SOCKET_MOUNT)])
        try:
            self._proc = start_process(
                [sandbox_python()[0], "-I", "/sandbox/supervisor.py", "/sandbox/config.json"],
                sandbox=box, work=work, files=files, log=self.log_path)
        except SandboxUnavailable as exc:
            self._cleanup_files()
            raise ServiceStartError(f"service `{self.name}` cannot run: {exc}") from None
        self.registry.add(self.name, self.instance, self._proc,
                          sock_dir if self._socket_dir_is_temp else None)
        self._client = httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(uds=str(self.socket_path)),
            base_url="http://localhost")
        try:
            await self._wait_healthy()
        except BaseException:
            await self._teardown(graceful=False)
            raise

    async def _wait_healthy(self) -> None:
        assert self._proc is not None and self._client is not None
        health = self.spec.health
        deadline = time.monotonic() + health.timeout_s
        last = "no answer yet"
        delay = 0.02
        while True:
            code = self._proc.popen.poll()
            if code is not None:
                raise ServiceStartError(self._start_failure(f"it exited with code {code} before "
                                                            f"its health check passed"))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ServiceStartError(self._start_failure(
                    f"GET {health.path} gave no 2xx answer within {health.timeout_s:g} s "
                    f"(last: {last})"))
            try:
                resp = await self._client.get(health.path, timeout=max(0.1, min(2.0, remaining)))
                if 200 <= resp.status_code < 300:
                    return
                last = f"HTTP {resp.status_code}"
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.25)

    def _start_failure(self, why: str) -> str:
        assert self.log_path is not None
        return (f"service `{self.name}` did not start: {why}; last lines of its log "
                f"({self.log_path}): {log_tail(self.log_path)} (fix the service or its "
                f"`process` settings; run its command locally to see it fail)")

    # ---- requests

    async def request(self, method: str, path: str, *, params: Any = None, json_body: Any = None,
                      headers: dict[str, str] | None = None,
                      timeout_s: float = 30.0) -> httpx.Response:
        """One HTTP request to the service (body fully read). Raises httpx errors as they are."""
        if self._client is None:
            raise httpx.ConnectError(f"service `{self.name}` is not started")
        kwargs: dict[str, Any] = {"params": params, "headers": headers, "timeout": timeout_s}
        if json_body is not None:
            kwargs["json"] = json_body
        return await self._client.request(method, path, **kwargs)

    def stream(self, method: str, path: str, *, params: Any = None, json_body: Any = None,
               headers: dict[str, str] | None = None, timeout_s: float = 30.0) -> Any:
        """`httpx.AsyncClient.stream` on the service, for reading a capped body."""
        if self._client is None:
            raise httpx.ConnectError(f"service `{self.name}` is not started")
        kwargs: dict[str, Any] = {"params": params, "headers": headers, "timeout": timeout_s}
        if json_body is not None:
            kwargs["json"] = json_body
        return self._client.stream(method, path, **kwargs)

    async def _call(self, what: str, endpoint: HttpEndpoint, body: Any = None) -> httpx.Response:
        try:
            resp = await self.request(endpoint.method, endpoint.path, json_body=body)
        except httpx.HTTPError as exc:
            raise ServiceError(f"service `{self.name}`: {what} ({endpoint.method} "
                               f"{endpoint.path}) failed: {exc or type(exc).__name__}; "
                               f"{self.describe_exit()}") from None
        if not 200 <= resp.status_code < 300:
            raise ServiceError(f"service `{self.name}`: {what} ({endpoint.method} "
                               f"{endpoint.path}) answered HTTP {resp.status_code}: "
                               f"{resp.text[:300]}")
        return resp

    async def reset(self) -> None:
        """Call the `reset` endpoint; a service without one is restarted instead."""
        if self.spec.reset is not None:
            await self._call("reset", self.spec.reset)
            return
        await self.stop()
        await self.start()

    async def snapshot(self) -> Any:
        """The service's state as JSON (`state.get`), or None when it offers no snapshot."""
        if self.spec.state is None:
            return None
        resp = await self._call("state snapshot", HttpEndpoint(method="GET",
                                                               path=self.spec.state.get))
        try:
            return resp.json()
        except ValueError:
            raise ServiceError(f"service `{self.name}`: GET {self.spec.state.get} did not "
                               f"answer JSON") from None

    async def restore(self, state: Any) -> None:
        """Put a state from `snapshot` back (`state.put`)."""
        if self.spec.state is None:
            raise ServiceError(f"service `{self.name}` has no `state` endpoints to restore")
        await self._call("state restore", HttpEndpoint(method="PUT", path=self.spec.state.put),
                         state)

    # ---- stop

    async def stop(self) -> None:
        """SIGTERM the service (through the supervisor), SIGKILL the sandbox after the grace
        period; idempotent."""
        await self._teardown(graceful=True)

    def kill(self) -> None:
        """Kill the sandbox at once, synchronously (for `atexit` and signal handlers)."""
        if self._proc is not None:
            self._proc.kill()
            with contextlib.suppress(OSError):
                self.registry.remove(self._proc.pid)
            self._proc = None
        self._cleanup_files()

    async def _teardown(self, *, graceful: bool) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.aclose()
        proc = self._proc
        if proc is None:
            return
        if graceful and proc.popen.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                assert proc.popen.stdin is not None
                proc.popen.stdin.write(b"stop\n")
                proc.popen.stdin.close()
            deadline = time.monotonic() + self.spec.stop_grace_s + 3.0
            while proc.popen.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        self.kill()

    def _cleanup_files(self) -> None:
        if self._socket_dir_is_temp and self.socket_path is not None:
            shutil.rmtree(self.socket_path.parent, ignore_errors=True)
            self._socket_dir_is_temp = False

    async def __aenter__(self) -> ServiceProcess:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
