"""`bench serve-a2a`: benchpack as an A2A assessor (issue 26). An A2A client sends a request
naming a compiled plan and the agent to assess (its A2A URL or agent card); benchpack runs the
plan against it through the `a2a:` adapter and answers with the run's scores as an artifact.

The request is the message's data part (or its text, as JSON):

```json
{"plan": "build", "agent": "http://127.0.0.1:9999",
 "sessions": ["inr-clinic-review"], "alone": true, "repeats": 1}
```

- `plan`: a directory holding `plan.json`, relative to the server's `--plans` directory and
  inside it (a client names plans, it never sends code: packs are compiled by whoever runs
  the server). `agent`: the assessed agent's URL; or `agent_card`: its card (the first
  interface's URL is used). Only A2A agents: a client cannot make the server run a command.
- `sessions` (ids, names or globs), `alone`, `repeats`: as `bench run`'s options.
- The simulator, judge, model endpoint, store and cache are the server's (its options).

The task goes `working` → `completed` with one artifact `scores` (a data part: the run's
summary and one row per session × repeat from the store: status, error kind, the protocol's
scores) and a text part (one line); a request it cannot run is `rejected` with the reason, a
run that fails is `failed` with the error. One run at a time (one store writer): a request
that arrives meanwhile waits.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .run_types import RunOptions

SESSION_COLUMNS = ("session_id", "repeat", "status", "error_kind", "termination", "turns",
                   "tool_calls", "proc", "comp", "score", "passed", "recall", "precision", "f1",
                   "trigger_score", "prompt_tokens", "completion_tokens")
"""The per-session columns the artifact carries."""


class AssessRequestError(ValueError):
    """A request the assessor refuses (the task is `rejected` with this reason)."""


@dataclass(frozen=True)
class AssessorConfig:
    plans: Path
    """Plans are looked up under this directory, never outside it."""
    base: RunOptions
    """The server's run options; a request fills in plan, agent, sessions, alone, repeats."""
    runs: list[str] = field(default_factory=list)


def parse_request(data: Any, plans: Path) -> dict[str, Any]:
    """The request (a dict, or JSON text) → `{plan, agent, sessions, alone, repeats}`."""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise AssessRequestError(f"the request is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise AssessRequestError("the request must be an object with `plan` and `agent`")
    unknown = sorted(set(data) - {"plan", "agent", "agent_card", "sessions", "alone",
                                  "repeats"})
    if unknown:
        raise AssessRequestError(f"unknown field(s) {', '.join(unknown)} (allowed: plan, "
                                 "agent, agent_card, sessions, alone, repeats)")
    plan = data.get("plan")
    if not isinstance(plan, str) or not plan:
        raise AssessRequestError("`plan` must name a compiled plan directory")
    root = plans.resolve()
    where = (root / plan).resolve()
    if where != root and root not in where.parents:
        raise AssessRequestError(f"`plan` {plan!r} is outside the served plans directory")
    if not (where / "plan.json").is_file():
        raise AssessRequestError(f"`plan` {plan!r}: no plan.json there (compile the pack on "
                                 "the server with `bench compile`)")
    url = data.get("agent")
    card = data.get("agent_card")
    if url is None and isinstance(card, dict):
        interfaces = card.get("supported_interfaces") or card.get("supportedInterfaces") or []
        url = (interfaces[0].get("url") if interfaces and isinstance(interfaces[0], dict)
               else card.get("url"))
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise AssessRequestError("`agent` must be the assessed agent's A2A URL (http(s)://…), "
                                 "or `agent_card` its card")
    sessions = data.get("sessions", [])
    if not isinstance(sessions, list) or not all(isinstance(s, str) for s in sessions):
        raise AssessRequestError("`sessions` must be a list of session ids, names or globs")
    repeats = data.get("repeats")
    if repeats is not None and (not isinstance(repeats, int) or not 1 <= repeats <= 100):
        raise AssessRequestError("`repeats` must be a whole number from 1 to 100")
    return {"plan": where, "agent": f"a2a:{url}", "sessions": sessions,
            "alone": bool(data.get("alone", False)), "repeats": repeats}


def session_rows(db: Path, run_id: str) -> list[dict[str, Any]]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        cols = ", ".join(f'"{c}"' for c in SESSION_COLUMNS)
        rows = con.execute(f"SELECT {cols} FROM sessions WHERE run_id = ? "
                           "ORDER BY session_id, repeat", [run_id]).fetchall()
    finally:
        con.close()
    return [dict(zip(SESSION_COLUMNS, r, strict=True)) for r in rows]


def assess(config: AssessorConfig, request: dict[str, Any],
           run: Callable[[RunOptions], Any] | None = None) -> dict[str, Any]:
    """Run the request's plan against its agent (blocking); the scores artifact's data."""
    from .runner import run_plan

    options = replace(config.base, plan=request["plan"], agent=request["agent"],
                      sessions=request["sessions"], alone=request["alone"],
                      repeats=request["repeats"], progress=False, run_id=None)
    summary = (run or run_plan)(options)
    config.runs.append(summary.run_id)
    keep = ("run_id", "sessions_total", "finished", "errors", "skipped_deps", "proc", "comp",
            "score", "f1", "trigger_score", "judge_errors", "prompt_tokens",
            "completion_tokens", "cost", "llm_calls", "wall_s", "repeats", "pass_counts",
            "agent_errors")
    out = {k: getattr(summary, k) for k in keep}
    out["db"] = str(summary.db)
    out["agent"] = request["agent"]
    out["sessions"] = session_rows(Path(summary.db), summary.run_id)
    scores: dict[str, Any] = json.loads(json.dumps(out, default=str))
    return scores


def one_line(scores: dict[str, Any]) -> str:
    shown = ", ".join(f"{k} {scores[k]:.3f}" for k in ("proc", "comp", "score", "f1",
                                                         "trigger_score")
                      if isinstance(scores.get(k), int | float))
    return (f"run {scores['run_id']}: {scores['finished']}/{scores['sessions_total']} sessions "
            f"finished, {scores['errors']} errors" + (f"; {shown}" if shown else ""))


def executor_class() -> Any:
    """The `AgentExecutor` (a2a-sdk imported on first use)."""
    from a2a.helpers import (
        get_message_text,
        new_task_from_user_message,
        new_text_status_update_event,
    )
    from a2a.server.agent_execution import AgentExecutor
    from a2a.types import Artifact, Part, TaskArtifactUpdateEvent, TaskState
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
    from google.protobuf.struct_pb2 import Value  # type: ignore[import-untyped]

    class AssessorExecutor(AgentExecutor):
        def __init__(self, config: AssessorConfig) -> None:
            self.config = config
            self.lock = threading.Lock()

        async def execute(self, context: Any, event_queue: Any) -> None:
            message = context.message
            task = context.current_task or new_task_from_user_message(message)
            if context.current_task is None:
                await event_queue.enqueue_event(task)

            async def status(state: Any, text: str) -> None:
                await event_queue.enqueue_event(new_text_status_update_event(
                    task.id, task.context_id, state, text))

            data = next((MessageToDict(p.data) for p in message.parts if p.HasField("data")),
                        None)
            try:
                request = parse_request(data if data is not None else
                                        get_message_text(message), self.config.plans)
            except AssessRequestError as exc:
                await status(TaskState.TASK_STATE_REJECTED, str(exc))
                return
            await status(TaskState.TASK_STATE_WORKING,
                         f"running {request['plan'].name} against {request['agent']}")
            try:
                scores = await asyncio.to_thread(self._assess, request)
            except Exception as exc:
                text = str(exc).strip()
                await status(TaskState.TASK_STATE_FAILED,
                             f"the run failed: {type(exc).__name__}" + (f": {text}" if text
                                                                         else ""))
                return
            value = Value()
            value.struct_value.update(scores)
            artifact = Artifact(artifact_id=f"scores-{scores['run_id']}", name="scores",
                                parts=[Part(data=value, media_type="application/json"),
                                       Part(text=one_line(scores))])
            await event_queue.enqueue_event(TaskArtifactUpdateEvent(
                task_id=task.id, context_id=task.context_id, artifact=artifact,
                last_chunk=True))
            await status(TaskState.TASK_STATE_COMPLETED, one_line(scores))

        def _assess(self, request: dict[str, Any]) -> dict[str, Any]:
            with self.lock:  # one store writer: runs one after the other
                return assess(self.config, request)

        async def cancel(self, context: Any, event_queue: Any) -> None:
            task = context.current_task
            if task is not None:  # a run in progress finishes; its scores stay in the store
                await event_queue.enqueue_event(new_text_status_update_event(
                    task.id, task.context_id, TaskState.TASK_STATE_CANCELED, "cancelled"))

    return AssessorExecutor


def build_app(config: AssessorConfig, url: str) -> Any:
    """The Starlette app: the agent card at `/.well-known/agent-card.json`, JSON-RPC at `/`."""
    from importlib.metadata import version

    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
    from starlette.applications import Starlette

    card = AgentCard(
        name="benchpack assessor",
        description="Runs a compiled benchpack plan against an A2A agent and returns its "
                    "scores.",
        version=version("benchpack"),
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", url=url + "/",
                                             protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["application/json", "text/plain"],
        default_output_modes=["application/json", "text/plain"],
        skills=[AgentSkill(
            id="assess", name="Assess an agent",
            description='{"plan": "<dir under the served plans>", "agent": "<A2A URL>", '
                        '"sessions": [...], "alone": false, "repeats": 1} → the scores',
            tags=["benchmark", "evaluation"])])
    handler = DefaultRequestHandler(agent_executor=executor_class()(config),
                                    task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=create_agent_card_routes(card) +
                     create_jsonrpc_routes(handler, rpc_url="/"))


async def serve(config: AssessorConfig, host: str, port: int,
                ready: Callable[[str], None]) -> None:
    """Serve until cancelled."""
    import socket

    import uvicorn

    # IPPROTO_TCP: asyncio sets TCP_NODELAY only then (else a 40 ms delayed-ACK wait a reply)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    url = f"http://{host}:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(build_app(config, url), log_level="warning",
                                           lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    ready(url)
    await task


__all__ = ["AssessRequestError", "AssessorConfig", "assess", "build_app", "parse_request",
           "serve", "session_rows"]
