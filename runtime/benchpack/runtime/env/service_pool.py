"""The HTTP services of one run (issue 12, section 2): start, lend, reset, stop.

An episode chain (one episode, one repeat) borrows one instance of each process service its
environment runs (`ServicePool.acquire`), keeps it for all its sessions (they share the
service's state as they share the workspace) and gives it back at its end (`release`). The
next chain of the same environment — the next repeat — gets it after a `reset` (the service's
`reset` endpoint, or a restart when it has none), so a service starts about once per episode
and every repeat starts from the initial state. A service that fails to reset is stopped and a
new one started.

`close` stops every instance (the runner calls it on every way out of a run); `kill_all` is the
synchronous variant. Beyond that, bwrap's `--die-with-parent` ends the sandboxes when the runner
dies (even by SIGKILL), and the pid registry — one per user in the temporary directory, not in
the run's own (temporary, per run) work directory, so that the *next* run finds it — kills what
a dead runner left behind at the next start.
"""

from __future__ import annotations

import base64
import contextlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchpack.specs.plan import Plan
from benchpack.specs.services import ProcessService

if TYPE_CHECKING:
    from .processes import ServiceProcess


def registry_path() -> Path:
    """Where every run of this user records its service sandboxes (`PidRegistry`)."""
    return Path(tempfile.gettempdir()) / f"benchpack-services-{os.getuid()}" / "pids.json"


def process_services(plan: Plan, environment_id: str) -> list[str]:
    """The process services an environment of the plan runs."""
    env = plan.environments.get(environment_id)
    if env is None:
        return []
    return [n for n in env.services if n in plan.services
            and plan.services[n].process is not None]


def needs_replay(plan: Plan, environment_id: str) -> bool:
    """Whether a resumed episode in this environment must re-run from its start: one of its
    services keeps state the runner cannot snapshot (no `state` endpoints)."""
    return any(plan.services[n].process.state is None  # type: ignore[union-attr]
               for n in process_services(plan, environment_id))


class ServicePool:
    """The process services of one run (see the module docstring)."""

    def __init__(self, plan: Plan, work_dir: Path) -> None:
        self.plan = plan
        self.work_dir = Path(work_dir)
        self._idle: dict[tuple[str, str], list[ServiceProcess]] = {}
        self._all: list[ServiceProcess] = []
        self.started = 0
        """How many instances were started (reuse after a reset does not count)."""
        from .pytool_pool import WorkerPool

        self.tool_workers = WorkerPool()
        """The run's idle python tool workers, closed with the services (issue 31)."""

    def _source(self, name: str) -> Path:
        """The service's files from the plan, written once per run (read-only at `/pack`)."""
        compiled = self.plan.services[name].process
        assert compiled is not None
        root = self.work_dir / "service-src" / name
        if not root.is_dir():
            for rel, text in compiled.files.items():
                path = root / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
            for rel, data in compiled.binary_files.items():
                path = root / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(base64.b64decode(data))
            (root / compiled.cwd).mkdir(parents=True, exist_ok=True)
            for d in [root, *(p for p in root.rglob("*") if p.is_dir())]:
                d.chmod(0o755)  # a root runner's sandbox user must read it
        return root

    def _new(self, name: str) -> ServiceProcess:
        from .processes import PidRegistry, ServiceProcess

        compiled = self.plan.services[name].process
        assert compiled is not None
        spec = ProcessService.model_validate(
            compiled.model_dump(exclude={"files", "binary_files", "source_sha256"}))
        proc = ServiceProcess(name, spec, pack_dir=self._source(name),
                              work_dir=self.work_dir)
        proc.registry = PidRegistry(registry_path())
        return proc

    async def acquire(self, environment_id: str, name: str) -> ServiceProcess:
        """A running instance of service `name`, in its initial state."""
        from .processes import ServiceError

        idle = self._idle.get((environment_id, name), [])
        while idle:
            proc = idle.pop()
            if not proc.running:
                await proc.stop()
                continue
            try:
                await proc.reset()
                return proc
            except ServiceError:
                await proc.stop()
        proc = self._new(name)
        self._all.append(proc)
        await proc.start()
        self.started += 1
        return proc

    def release(self, environment_id: str, name: str, proc: ServiceProcess) -> None:
        """Give an instance back after its chain (it is reset before its next use)."""
        self._idle.setdefault((environment_id, name), []).append(proc)

    async def close(self) -> None:
        """Stop every instance (graceful, then killed)."""
        procs, self._all = self._all, []
        self._idle.clear()
        try:
            await self.tool_workers.close()
            for proc in procs:
                await proc.stop()
        finally:
            self.tool_workers.kill_all()
            for proc in procs:
                proc.kill()

    def kill_all(self) -> None:
        self.tool_workers.kill_all()
        for proc in self._all:
            with contextlib.suppress(Exception):
                proc.kill()
        self._all = []
        self._idle.clear()


def state_of(snapshot: dict[str, Any] | None) -> dict[str, Any]:
    """The process services' states in an environment snapshot (those that have one)."""
    procs = (snapshot or {}).get("processes") or {}
    return {n: s for n, s in procs.items() if s is not None} if isinstance(procs, dict) else {}
