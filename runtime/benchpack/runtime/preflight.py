"""What a run needs from its machine, checked once before the first session.

A lack found mid-run costs every session it touches, one error at a time — or, worse, no error:
with bubblewrap unavailable, a python-toolset pack ran to the end, said "12 finished, 0
errors" and reported a verified score over tool calls that had all failed (issue 27). So
before anything runs, `check_machine` asks the machine for what the selected sessions will
use, and a lack is one `EnvironmentProblem`: one line, exit 1, no store left behind.

- **The sandbox** (`--allow-python` and a session running pack code: a python tool or
  toolset, the shell, a python grader, an HTTP service): a `bwrap` is found *and* starts a
  sandbox once (the same arguments pack code gets, running the interpreter pack code runs
  under) — a binary that is there but cannot create namespaces fails here, not per call.
- **Services' commands**: each HTTP service's program exists where the sandbox will look
  (`python` is the runner's own interpreter; a bare name on the sandbox's PATH; a path
  relative to the service's `cwd` among the files the plan carries).
- **Ray** (`--executor ray --ray-address HOST:PORT`): the address answers a TCP connection
  within `RAY_CONNECT_S` — `ray.init` on an unreachable address waits minutes before failing.
  Joining errors that remain (a token-protected cluster, a version mismatch) are raised by
  `ray_executor.join` as `EnvironmentProblem`s too.
- **The store's lock** is taken when the run opens the store, before any of this
  (`store.connect` waits for readers to let go, then names who holds it).

Before those, what the options allow (`check_allow_python`, `check_process_services`): a plan
whose sessions run pack code stops, without `--allow-python`, naming what needs it. `bench run`
and `bench mcp`'s debug toolbox share them.

The sandbox check costs one sandbox start (~30 ms); nothing is checked that the run will
not use.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import PurePosixPath

from benchpack.specs.plan import Plan
from benchpack.specs.toolsets import PyToolImpl

from .env.service_pool import process_services
from .errors import EnvironmentProblem, UsageError
from .sandbox import INSTALL_HINT, SandboxUnavailable, selftest

SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
"""Where a command inside the sandbox is looked up (`Sandbox.argv` sets this PATH; /usr and
/bin are bound from the host)."""
SANDBOX_CHECK_S = 20.0
"""Longest the one trial sandbox may take (a loaded machine starts one in well under 1 s)."""
RAY_CONNECT_S = 5.0
"""Longest a `--ray-address` may take to accept a TCP connection."""


def sandbox_users(plan: Plan, selected: set[str]) -> list[str]:
    """What in the selected sessions runs inside the sandbox, named (empty: nothing does)."""
    found: set[str] = set()
    for sid in selected:
        s = plan.sessions[sid]
        for t in s.tools:
            tool = plan.tools.get(t)
            if tool is None:
                if t == "shell":
                    found.add("the shell tool")
            elif isinstance(tool.impl, PyToolImpl) or getattr(tool.impl, "kind", "") == "python":
                found.add(f"python tool `{t}`")
        if any(item.grader == "python" for item in s.checklist):
            found.add("python graders")
        found.update(f"HTTP service `{n}`" for n in process_services(plan, s.environment))
    return sorted(found)


async def check_sandbox(users: list[str]) -> None:
    """A bubblewrap that starts a sandbox, or an `EnvironmentProblem` naming what needs it."""
    needs = ", ".join(users[:3]) + (", …" if len(users) > 3 else "")
    try:
        why = await selftest(SANDBOX_CHECK_S)
    except SandboxUnavailable as exc:
        raise EnvironmentProblem(f"--allow-python: {needs} run only inside the sandbox, and "
                                 f"there is none: {exc}") from None
    if why is not None:
        raise EnvironmentProblem(f"--allow-python: {needs} run only inside the sandbox, and "
                                 f"bubblewrap did not start one here ({why}) (hint: check that "
                                 f"unprivileged user namespaces are enabled, or {INSTALL_HINT})")


def check_service_commands(plan: Plan, selected: set[str]) -> None:
    """Every selected HTTP service's program exists where the sandbox will look for it."""
    names = sorted({n for sid in selected
                    for n in process_services(plan, plan.sessions[sid].environment)})
    for name in names:
        proc = plan.services[name].process
        assert proc is not None
        first = proc.command[0]
        if first in ("python", "python3"):
            continue  # the runner's own interpreter (`processes.ServiceProcess._command`)
        if "/" not in first:
            if shutil.which(first, path=SANDBOX_PATH) is None:
                raise EnvironmentProblem(
                    f"service `{name}`: its command `{first}` is not installed (the sandbox "
                    f"looks in {SANDBOX_PATH.replace(':', ', ')}) (hint: install it, or ship "
                    "the program with the pack and name it by its path)")
            continue
        path = PurePosixPath(first)
        if path.is_absolute():
            found = os.access(first, os.X_OK) and str(path).startswith(("/usr/", "/bin/"))
        else:  # relative to its cwd, among the files the plan carries
            rel = str(PurePosixPath(proc.cwd) / path).lstrip("./")
            shipped = {str(PurePosixPath(k)).lstrip("./") for k in
                       (*proc.files, *proc.binary_files)}
            found = os.path.normpath(rel) in {os.path.normpath(k) for k in shipped}
        if not found:
            raise EnvironmentProblem(
                f"service `{name}`: its command `{first}` is not there (inside the sandbox only "
                "/usr, /bin and the pack's files are visible) (hint: name a program under "
                "/usr or one shipped with the pack, relative to the service's cwd)")


def check_ray_address(address: str | None) -> None:
    """A `HOST:PORT` (or `ray://HOST:PORT`) address accepts a TCP connection; `auto` and no
    address are left to Ray (a local cluster is found or started)."""
    if not address or address == "auto":
        return
    target = address.split("://", 1)[1] if "://" in address else address
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise EnvironmentProblem(f"--ray-address {address}: not HOST:PORT or ray://HOST:PORT "
                                 "(or `auto`)")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=RAY_CONNECT_S):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise EnvironmentProblem(f"--ray-address {address}: no Ray cluster answers there "
                                 f"({why}) (hint: start it with `ray start --head`, or check "
                                 "the address and the network)") from None


async def check_machine(plan: Plan, selected: set[str], *, allow_python: bool,
                        executor: str, ray_address: str | None) -> None:
    """Every check above that the run will need (module docstring), in order of cost."""
    if executor == "ray":
        check_ray_address(ray_address)
    if not allow_python:
        return  # pack code is refused before this (`check_allow_python`)
    check_service_commands(plan, selected)
    users = sandbox_users(plan, selected)
    if users:
        await check_sandbox(users)


__all__ = ["check_machine", "check_ray_address", "check_sandbox", "check_service_commands",
           "sandbox_users"]


def check_allow_python(plan: Plan, selected: set[str], allow_python: bool) -> None:
    """Python toolsets and the shell run code: without --allow-python every call would fail,
    so the run stops before it starts, naming what needs it."""
    if allow_python:
        return
    needs = sorted({t for sid in selected for t in plan.sessions[sid].tools
                    if (t == "shell" and t not in plan.tools)
                    or isinstance(getattr(plan.tools.get(t), "impl", None), PyToolImpl)})
    if needs:
        shown = ", ".join(f"`{t}`" for t in needs[:5]) + (", …" if len(needs) > 5 else "")
        raise UsageError(f"this plan's sessions offer tools that run code ({shown}: python "
                         "toolsets or the shell); pass --allow-python to run them in the "
                         "sandbox")


def check_process_services(plan: Plan, selected: set[str], allow_python: bool) -> None:
    """HTTP services are pack code: refuse, before anything runs, to run them without
    `--allow-python` (naming them)."""
    if allow_python:
        return
    envs = {plan.sessions[sid].environment for sid in selected}
    names = sorted({n for e in envs for n in process_services(plan, e)})
    if names:
        which = ", ".join(f"`{n}`" for n in names)
        many = len(names) > 1
        raise UsageError(f"HTTP service{'s' if many else ''} {which}: {'they run' if many else 'it runs'} "
                         "the pack's own code (a process, in the sandbox), which needs "
                         f"--allow-python (pass it to run {'them' if many else 'it'})")
