"""What one `bench run` is made of, shared by the orchestration (`runner`), the executors
(`chains` locally, `ray_executor` on a cluster) and `bench rejudge`: the options, the run
context, the summary, the LLM client and agent factories and the progress bar."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchpack.specs.plan import Plan

from .env.service_pool import ServicePool
from .judges.base import Templates
from .protocols.base import ProtocolRegistry
from .roles import Roles
from .store import Store
from .types import AgentAdapter

RUNS_VERSION = 1


@dataclass(kw_only=True, frozen=True)
class ClientOptions:
    """How a command's one LLM client talks to providers: `bench run` and `bench rejudge`
    share these (and `make_llm_client`). Frozen, as are the options built on them: a stage
    that settles one (a resumed run's inherited judge) makes new options with
    `dataclasses.replace`, so no later stage sees them change under it."""

    api_base: str | None = None
    api_key_env: str | None = None
    """Name of the environment variable holding the API key (the key itself is never stored)."""
    cache_dir: str | Path | None = None
    use_cache: bool = True
    max_retries: int = 4
    max_concurrent_per_model: int = 8
    requests_per_minute: dict[str, float] = field(default_factory=dict)
    timeout_s: float = 120.0
    retry_backoff_s: float = 1.0
    llm_backend: Any = None
    """Programmatic use only: an LLM backend replacing litellm (tests, benchmarks)."""


@dataclass(frozen=True)
class RunOptions(ClientOptions):
    plan: str | Path
    agent: str
    simulator: str | None = None
    """User simulator URI (`rules`, `scripted:<file>`, `litellm:<model>`); default: the pack's
    `defaults.models.simulator`, else `rules`."""
    judge: str | None = None
    """Judge URI; default: the pack's `defaults.models.judge`, else `rules`."""
    planner: str | None = None
    """Trigger-rubric planner URI; default: the pack's, else the simulator's."""
    db: str | Path = "bench.duckdb"
    run_id: str | None = None
    resume: bool = False
    repeats: int | None = None
    max_concurrency: int = 4
    allow_python: bool = False
    sessions: list[str] = field(default_factory=list)
    """Only run sessions whose id or name matches one of these globs."""
    alone: bool = False
    """Run the `sessions` selected without the sessions they depend on (which are otherwise
    pulled in): those lacking context are marked `extra.context = "alone"` and kept out of the
    headline figures."""
    work_dir: str | Path | None = None
    progress: bool = True
    trigger_mode: str = "auto"
    """Trigger rubrics: `live` (planner + user agent), `offline` (replay a fixed dialogue,
    regenerate the trigger turns only), or `auto` (offline when a dialogue is available)."""
    dialogue_from: str | None = None
    """Trigger rubrics, offline: take the fixed dialogues from this earlier run's transcripts
    (same store) instead of the pack's authored ones."""
    graph_grader: str = "auto"
    """Staged disclosure: `llm` (coverage judge), `match` (deterministic normalised matching),
    or `auto` (`match` when the judge is `rules`, else `llm`)."""
    max_cost: float | None = None
    """USD this invocation may spend on LLM calls (`budget.Budget`); None: no limit."""
    force: bool = False
    """Start even when the estimate exceeds `max_cost` (the guard still stops the run)."""
    announce: Callable[[str], None] | None = None
    """Where the cost estimate is told before the run starts (the CLI: stderr)."""
    executor: str = "local"
    """`local` (asyncio tasks in this process) or `ray` (`ray_executor`)."""
    ray_address: str | None = None
    """`--executor ray`: the cluster to join (default: start a local one, shut down after)."""
    ray_workers: int | None = None
    """`--executor ray`: worker actors (one CPU each); default: the cluster's CPUs."""
    close_in_background: bool = False
    """Return once every row is committed, with the store's last checkpoint still running on a
    thread (`Store.close_in_background`): the caller must call the summary's `wait_closed()`
    (the CLI, after printing the summary). Otherwise the store is closed before returning."""
    ending: Callable[[], None] | None = None
    """Called once when the run's last chain starts (the local executor): what is left are the
    sessions in flight, mostly waits for their models. The CLI imports what prints the summary
    then, which the end of the run otherwise waited for (issue 31)."""


@dataclass
class RunSummary:
    run_id: str
    db: Path
    sessions_total: int
    sessions_run: int
    sessions_skipped_resume: int
    finished: int
    errors: int
    skipped_deps: int
    proc: float | None
    """Headline figures, each the mean over the sessions of the protocol that defines it
    (ablation variants left out): PROC and COMP (intent tracking; COMP wherever there is a
    checklist), verified-outcome score, triple F1; and the trigger score, ProactBench's
    weighted score pooled over judged triggers (`bench report triggers`)."""
    comp: float | None
    score: float | None
    f1: float | None
    trigger_score: float | None
    judge_errors: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    llm_calls: int
    cache_hits: int
    wall_s: float
    repeats: int = 1
    pass_counts: list[tuple[int, int]] = field(default_factory=list)
    """Verified outcome, per task: (graded repeats n, passes c) — the inputs of pass@k and
    pass^k, which `benchpack.reports.stats` computes."""
    first_errors: list[str] = field(default_factory=list)
    """`<session>: <error>` for the first few distinct session errors (what to fix first)."""
    alone: int = 0
    """Finished sessions run with `--alone` without their dependencies (not in the figures)."""
    heuristic_judge: bool = False
    """The judge was `rules`: the scores it decided are a keyword heuristic, to be labelled."""
    grader_errors: int = 0
    """Checklist items a rule or python grader could not grade (neither passed nor failed:
    COMP and scores leave them out)."""
    python_refused: int = 0
    """Of those, python graders not run for want of `--allow-python`."""
    agent_errors: int = 0
    """Errored sessions whose error was the agent's: scored as failures in the figures."""
    ablation_variants: int = 0
    """Of the `finished` sessions, the ablation variants (left out of the headline figures)."""
    excluded: dict[str, int] = field(default_factory=dict)
    """Errored sessions left out of the figures, by error kind (infrastructure, simulator,
    judge, budget; `unclassified` for errors stored before error kinds)."""
    unpriced_calls: int = 0
    """LLM calls answered by a model litellm has no price for: `cost` leaves them out."""
    imported_calls: int = 0
    """`llm_calls` rows of an imported run (a release's token counts): no call benchpack made,
    so not in `llm_calls` (their tokens are)."""
    max_cost: float | None = None
    estimate: float | None = None
    """`--max-cost`: the estimated cost of what this invocation was to run."""
    spent: float = 0.0
    """What this invocation's LLM calls cost (priced calls; unpriced ones are counted apart)."""
    state_left_out: list[str] = field(default_factory=list)
    """`service.table`s some session's state check did not compare (environments'
    `state_ignores`): printed beside the figures, so a score is read with them in mind."""
    budget_stopped: int = 0
    """Sessions stopped by the budget (stored as errors of kind `budget`; `--resume` reruns
    them); nonzero means the run stopped before the end."""

    wait_closed: Callable[[], None] | None = field(default=None, repr=False, compare=False)
    """With `RunOptions.close_in_background`: waits for the store's close, raising what it
    raised; None when the store was closed before the summary was returned."""

    def as_dict(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in self.__dict__.items()
                if k != "wait_closed"}


class RunInterrupted(Exception):
    """Ctrl-C (SIGINT) stopped a run. The sessions committed before it stay in the store and
    the run is marked `interrupted`; `--resume run_id` runs the rest (the sessions cut short
    left no rows, so nothing is stored twice)."""

    def __init__(self, run_id: str, db: Path, done: int, total: int) -> None:
        super().__init__(f"run {run_id} interrupted: {done} of {total} sessions done")
        self.run_id, self.db, self.done, self.total = run_id, db, done, total


class RunContext:
    """Everything shared by the sessions of one run. Built once; no process-wide singletons."""

    def __init__(self, options: RunOptions, plan: Plan, store: Store, run_id: str,
                 agent: AgentAdapter, protocols: ProtocolRegistry, work_dir: Path,
                 llm: Callable[[], Any]) -> None:
        self.options = options
        self.plan = plan
        self.store = store
        self.run_id = run_id
        self.agent = agent
        self.agent_name = agent.name
        self.protocols = protocols
        self.templates = Templates(plan.prompts)
        models = plan.defaults.models
        self.roles = Roles.resolve(
            {"simulator": options.simulator, "judge": options.judge, "planner": options.planner},
            {"simulator": models.simulator, "judge": models.judge, "planner": models.planner},
            self.templates, llm, plan.defaults.seed)
        self.roles.seeds = list(plan.defaults.repeat_seeds or [])
        self.work_dir = work_dir
        self.work_dir_made = False
        """Whether `work_dir` is a fresh directory this run made (so a chain's directory in it
        cannot exist before the chain makes it)."""
        self.alone: dict[str, list[str]] = {}
        """Sessions run with `--alone` → the sessions they depend on that did not run."""
        self.llm = llm
        """The run's one LLM client (created on first use: litellm is slow to import)."""
        self.services = ServicePool(plan, work_dir)
        """The run's HTTP service instances (issue 12, section 2)."""
        self.budget: Any = None
        """`--max-cost`: the run's `budget.Budget`, shared with its LLM client."""


def redactor_for(options: ClientOptions) -> Any:
    """What the store masks: every key in the environment, the `--api-key-env` one whatever
    its name, and keys inside `--api-base`."""
    from .redact import Redactor

    return Redactor.from_environment(extra_names=[options.api_key_env], urls=[options.api_base])


def make_llm_client(options: ClientOptions) -> Any:
    from .cache import ResponseCache
    from .llm import LLMClient, LLMConfig

    cache_dir = Path(options.cache_dir) if options.cache_dir else Path(".bench-cache")
    cache = ResponseCache(cache_dir, redact=redactor_for(options))
    cache.enabled = options.use_cache
    api_key = os.environ.get(options.api_key_env) if options.api_key_env else None
    if api_key is None and options.api_base and not os.environ.get("OPENAI_API_KEY"):
        # local OpenAI-compatible servers (vLLM, llama.cpp, Ollama…) ignore the key, but the
        # OpenAI client refuses to send a request without one
        api_key = "no-key"
    config = LLMConfig(api_base=options.api_base, api_key=api_key,
                       max_retries=options.max_retries, timeout_s=options.timeout_s,
                       max_concurrent_per_model=options.max_concurrent_per_model,
                       requests_per_minute=dict(options.requests_per_minute),
                       backoff_base_s=options.retry_backoff_s)
    return LLMClient(config, cache=cache, backend=options.llm_backend)


def make_agent(spec: str, options: RunOptions, llm: Callable[[], Any]) -> AgentAdapter:
    """The agent adapter for `spec` (`<scheme>:<argument>`, see `agents.registry`)."""
    from .agents.registry import AgentContext, default_agent_registry

    return default_agent_registry().create(spec, AgentContext(llm=llm, options=options))


def new_run_id(plan: Plan, agent: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    tail = hashlib.sha256(f"{plan.pack.content_hash}{agent}{uuid.uuid4()}".encode()).hexdigest()
    return f"{plan.pack.name}-{stamp}-{tail[:6]}"



def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # replaced by a test, or closed
        return False


class Progress:
    """A progress bar on stderr (nothing when disabled, when stderr is not a terminal, or when
    there is nothing to do)."""

    def __init__(self, total: int, enabled: bool, label: str = "bench run") -> None:
        self.total = total
        self.done = 0
        self.errors = 0
        self._bar: Any = None
        self._task: Any = None
        # a log file or pipe gets no bar: rich would still redraw it ten times a second on a
        # thread of its own, taking the interpreter lock from the sessions, to print it once
        if enabled and total and _is_terminal(sys.stderr):
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as Bar

            # on stderr, the stream checked above: stdout carries the summary (and `--json`)
            self._bar = Bar(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
                            TextColumn("ETA"), TimeRemainingColumn(), transient=False,
                            console=Console(stderr=True))
            self._task = self._bar.add_task("run", total=total, info="")
            self._bar.start()

    def committed(self, info: str, error: bool = False) -> Callable[[], None]:
        """What the store calls (on its writer thread) once a session is durable: the bar
        advances on the event loop then, never before the session's commit."""
        loop = asyncio.get_running_loop()

        def report() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is watching
                loop.call_soon_threadsafe(self.advance, info, error)
        return report

    def advance(self, info: str, error: bool = False) -> None:
        self.done += 1
        self.errors += int(error)
        if self._bar is not None:
            self._bar.update(self._task, advance=1,
                             info=f"{info[:40]}" + (f" [red]{self.errors} err" if self.errors else ""))

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()

