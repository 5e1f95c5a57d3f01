"""One (episode, repeat) run's world: workspace, service state, outbox and questions."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchpack.specs.plan import Plan, PlanEnvironment, PlanFile
from benchpack.specs.toolsets import PyToolImpl

from .copying import copy_json
from .corpus import CorpusIndex
from .errors import ToolError
from .pytool_pool import WorkerPool
from .pytools import PyToolWorker, ToolBinding
from .service_pool import ServicePool, process_services, state_of
from .services import ServiceState
from .workspace import Workspace

if TYPE_CHECKING:
    from .processes import ServiceProcess

SNAPSHOT_VERSION = 1


class EpisodeEnvironment:
    """The environment an episode's sessions share, from the first session to the last."""

    def __init__(self, plan: Plan, environment: PlanEnvironment, workspace: Workspace) -> None:
        self.plan = plan
        self.environment = environment
        self.workspace = workspace
        self.services: dict[str, ServiceState] = {
            name: ServiceState(plan.services[name]) for name in environment.services
            if name in plan.services}
        self.outbox: list[dict[str, Any]] = []
        """Messages sent with the `send_message` built-in: `{id, to, text, channel, turn}`."""
        self.asked: list[str] = []
        """Questions asked with the `ask_user` built-in, in order."""
        self._corpora: dict[str, CorpusIndex] = {}
        self._workers: dict[str, PyToolWorker] = {}
        """Python toolsets: one sandboxed worker each, started at the toolset's first call,
        working on (a replica of) `services`, which stay the source of truth."""
        # ---- HTTP services (issue 12, section 2): process instances borrowed from the run's
        # pool for this episode chain; the runner sets `process_pool`
        self.process_pool: ServicePool | None = None
        self.tool_workers: WorkerPool | None = None
        """The run's idle python tool workers (`pytool_pool`), set by the runner."""
        self.processes: dict[str, ServiceProcess] = {}
        self._process_state: dict[str, Any] = {}

    @classmethod
    def create(cls, plan: Plan, environment_id: str, root: Path, *,
               absent: bool = False) -> EpisodeEnvironment:
        """A fresh environment: `root` is emptied, the environment's files are written into it
        and every service starts from its fixture rows. `absent`: the caller knows `root` does
        not exist yet (no file-system check)."""
        if environment_id not in plan.environments:
            raise KeyError(f"the plan has no environment `{environment_id}`; it has: "
                           f"{', '.join(sorted(plan.environments)) or '(none)'}")
        env = plan.environments[environment_id]
        ws = Workspace(root, clear=True, absent=absent)
        ws.materialise(env.files)
        return cls(plan, env, ws)

    @property
    def clock(self) -> str | None:
        return self.environment.clock

    def add_session_files(self, files: Iterable[PlanFile]) -> None:
        """Write a session's own files into the workspace (overwriting same-named files)."""
        self.workspace.materialise(files)

    def corpus(self, name: str) -> CorpusIndex:
        """The search index of a plan corpus (built on first use)."""
        index = self._corpora.get(name)
        if index is None:
            index = self._corpora[name] = CorpusIndex(self.plan.corpora[name])
        return index

    # ------------------------------------------------------------------ python toolsets

    def pytool_worker(self, toolset: str, allow_python: bool) -> PyToolWorker:
        """The worker of a plan toolset in this environment (created on first use; its
        process starts at its first call)."""
        worker = self._workers.get(toolset)
        if worker is not None:
            worker.allow_python = allow_python
            return worker
        ts = self.plan.toolsets.get(toolset)
        if ts is None:
            raise ToolError(f"the python toolset `{toolset}` is not in this plan; recompile "
                            "the pack")
        state = None
        if ts.service is not None:
            state = self.services.get(ts.service)
            if state is None:
                raise ToolError(f"the python toolset `{toolset}` needs the service "
                                f"`{ts.service}`, which this environment does not have")
        extra: dict[str, ServiceState] = {}
        for name in ts.services:
            if name not in self.services:
                raise ToolError(f"the python toolset `{toolset}` needs the service `{name}`, "
                                "which this environment does not have")
            extra[name] = self.services[name]
        tools = {name: ToolBinding(t.impl.function, t.impl.state_param, t.parameters)
                 for name, t in self.plan.tools.items()
                 if isinstance(t.impl, PyToolImpl) and t.impl.toolset == toolset}
        worker = self._workers[toolset] = PyToolWorker(
            ts.source, tools, state, filename=ts.file, allow_python=allow_python,
            check_arguments=ts.check_arguments, atomic=ts.atomic, plain_errors=ts.plain_errors,
            # a pooled worker is matched on one service's rows: one over several starts afresh
            pool=None if extra else self.tool_workers, services=extra,
            after_call=ts.after_call)
        return worker

    def hooked_workers(self, allow_python: bool) -> list[PyToolWorker]:
        """The workers of this environment's toolsets (the user's too) that have an
        `after_call`, in plan order."""
        return [self.pytool_worker(key, allow_python) for key, ts in self.plan.toolsets.items()
                if ts.after_call is not None and key in self.environment.toolsets]

    async def aclose(self) -> None:
        """Stop every toolset worker and wait until they are reaped (the episode is over)."""
        workers, self._workers = list(self._workers.values()), {}
        for worker in workers:
            await worker.aclose()

    def snapshot(self, rows: str = "copy") -> dict[str, Any]:
        """Workspace files, service rows (and key counters), outbox and questions; JSON-
        serialisable, for resuming an episode after a crash. `rows`: `copy`; `live`, the
        services' own row objects in new lists (for a reader only: a service never changes a
        row in place, so they stay as they are; no copy of a large database per session);
        `none`, no rows (the caller keeps `live_rows()`)."""
        return {
            "version": SNAPSHOT_VERSION,
            "environment": self.environment.id,
            "files": self.workspace.snapshot(),
            "services": {name: svc.snapshot() if rows == "copy" else svc.live_rows()
                         for name, svc in self.services.items()} if rows != "none" else {},
            "counters": {name: svc.counters() for name, svc in self.services.items()},
            "outbox": copy_json(self.outbox),
            "asked": list(self.asked),
        }

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Put the environment back in the state of a `snapshot()`."""
        self.workspace.restore(dict(snapshot.get("files") or {}))
        counters = snapshot.get("counters") or {}
        for name, tables in (snapshot.get("services") or {}).items():
            svc = self.services.get(name)
            if svc is not None:
                svc.restore(tables, counters.get(name))
        self.outbox = copy_json(list(snapshot.get("outbox") or []))
        self.asked = [str(q) for q in snapshot.get("asked") or []]
        for worker in self._workers.values():  # their replicas predate the restored state
            worker.reset()
        self._process_state = state_of(snapshot)  # put back by `ensure_processes`

    # ---- HTTP services (issue 12, section 2)

    async def ensure_processes(self) -> None:
        """Have every process service of the environment running (borrowed from the pool, in
        its initial state, or the restored one after `restore`)."""
        names = [n for n in process_services(self.plan, self.environment.id)
                 if n not in self.processes]
        if not names:
            return
        if self.process_pool is None:
            raise RuntimeError("this environment runs HTTP services but has no service pool")
        for name in names:
            proc = await self.process_pool.acquire(self.environment.id, name)
            self.processes[name] = proc
            if name in self._process_state:
                await proc.restore(self._process_state.pop(name))

    async def snapshot_processes(self) -> dict[str, Any]:
        """Each process service's state (`state.get`), None for one without state endpoints
        (a resumed episode then re-runs from its start)."""
        return {name: await proc.snapshot() for name, proc in sorted(self.processes.items())}

    def release_processes(self) -> None:
        """Give the services back to the pool (the next repeat gets them reset)."""
        procs, self.processes = self.processes, {}
        if self.process_pool is not None:
            for name, proc in procs.items():
                self.process_pool.release(self.environment.id, name, proc)
