"""The tools of one session: specs for the agent, validated and recorded execution.

`ToolBox` implements `types.ToolHandle`. It offers exactly `session.tools` (built-ins get the
fixed specs in `BUILTIN_SPECS`; pack tools, service operations and stream readers use the
plan's `parameters`), validates every call's arguments against the tool's JSON Schema
(Draft 2020-12; not for a python toolset with `check_arguments: false`, whose functions get
the arguments as sent, as τ²-bench's do), dispatches by implementation kind, and appends a `ToolRecord` for every call,
successful or not, stamped with the caller-set `turn` and `step`. Tool errors come back as the
record's `error`; `call` never raises for anything the agent did.

Every call has a time limit (`tool_timeout_s`): file, corpus and stream tools run in a worker
thread, so a slow one never blocks the event loop (other sessions keep going) and, when the
limit passes, the agent gets the tool error "timed out after N s" while the session goes on.
The walking tools also get the deadline, so the thread itself stops soon after.

Python tools (`impl.kind == "python"`) need `allow_python`; they run in the sandbox of
`benchpack.runtime.sandbox` from the source the plan embeds, receiving the arguments and a
read-only context (`files`, `clock`, `state`). Tests may pass in-process implementations in
`python_tools` (tool name → callable taking the arguments dict, sync or async).
"""

from __future__ import annotations

import asyncio
import difflib
import inspect
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from benchpack.specs.discoverable import UnlockImpl
from benchpack.specs.knowledge import KnowledgeImpl
from benchpack.specs.pack import (
    BuiltinImpl,
    CorpusImpl,
    PythonImpl,
    ServiceImpl,
    StaticImpl,
    StreamImpl,
)
from benchpack.specs.plan import Plan, PlanSession
from benchpack.specs.services import HttpImpl
from benchpack.specs.toolsets import PyToolImpl

from ..sandbox import run_function
from ..types import MessageBudget, ToolHandle, ToolRecord
from .builtin_specs import BUILTIN_EFFECTS, BUILTIN_SPECS, Effect
from .copying import copy_json
from .environment import EpisodeEnvironment
from .errors import ToolError
from .gifts import Gifts, give, held_back, not_given, take_gifts
from .knowledge import call_knowledge
from .shell import SHELL_TIMEOUT_S, run_shell
from .streams import read_stream

MAX_RENDER_CHARS = 20_000
"""How much of a tool result an LLM agent sees (`render_result`)."""
TOOL_TIMEOUT_S = 30.0
"""Default time limit of one tool call."""

if TYPE_CHECKING:  # imported by the first validator: a run whose sessions offer no tool
    # never loads jsonschema (~40 ms with referencing, attrs, rpds)
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

_validators: dict[str, Draft202012Validator] = {}
_by_schema: dict[int, tuple[dict[str, Any], Draft202012Validator]] = {}
"""Validators by schema object: a plan's schemas are the same objects in every session, so
the content key (a sorted JSON dump) is computed once per schema, not once per session."""


def validator(schema: dict[str, Any]) -> Draft202012Validator:
    """A cached Draft 2020-12 validator for a parameters schema."""
    hit = _by_schema.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    key = json.dumps(schema, sort_keys=True, default=str)
    v = _validators.get(key)
    if v is None:
        from jsonschema import Draft202012Validator

        if len(_validators) > 4096:
            _validators.clear()
        v = _validators[key] = Draft202012Validator(schema)
    if len(_by_schema) > 4096:
        _by_schema.clear()
    _by_schema[id(schema)] = (schema, v)
    return v


def argument_errors(schema: dict[str, Any], args: dict[str, Any], most: int = 5) -> list[str]:
    """Problems with `args` under the tool's parameters schema, as readable lines."""
    try:
        return _problems(validator(schema), args, most)
    except schema_error() as exc:  # the compiler checks schemas; never the agent's fault
        return [f"the tool's parameter schema is invalid: {exc.message}"]


def schema_error() -> type[SchemaError]:
    """jsonschema's `SchemaError`, for an `except` clause (evaluated only once something was
    raised, and then a validator had imported jsonschema)."""
    from jsonschema.exceptions import SchemaError

    return SchemaError


def _problems(v: Draft202012Validator, args: dict[str, Any], most: int = 5) -> list[str]:
    errors = sorted(v.iter_errors(args),
                    key=lambda e: ([str(p) for p in e.absolute_path], e.message))
    out = []
    for e in errors[:most]:
        where = ".".join(str(p) for p in e.absolute_path)
        out.append(f"{where}: {e.message}" if where else e.message)
    if len(errors) > most:
        out.append(f"… and {len(errors) - most} more")
    return out


def render_result(record: ToolRecord, limit: int = MAX_RENDER_CHARS) -> str:
    """The text an LLM agent sees for a tool call: `Error: …`, the result string, or the result
    as compact JSON, cut to `limit` characters with a note saying so."""
    if record.error is not None:
        text = f"Error: {record.error}"
    elif isinstance(record.result, str):
        text = record.result
    else:
        text = json.dumps(record.result, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = (text[:limit] + f"\n[… truncated: showing {limit} of {len(text)} characters; "
                "ask for less, e.g. with offset/limit, a filter or a narrower query]")
    return text


@dataclass(frozen=True)
class ToolDef:
    """A tool as offered in a session."""

    name: str
    description: str
    parameters: dict[str, Any]
    effect: Effect
    impl: Any
    """The plan's `ToolImpl`, or None for a built-in offered by name."""
    builtin: str | None
    """Which built-in runs it (a built-in by name, or a pack tool with a builtin impl)."""

    def spec(self) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": copy_json(self.parameters)}}


PythonTool = Callable[[dict[str, Any]], Any]

_SHARED_SPECS: dict[int, tuple[Plan, dict[tuple[str, ...], list[dict[str, Any]]]]] = {}
"""`ToolBox.shared_specs` by plan (the plan held, so its id is not reused) and tool names: a
plan's tool of a given name has one definition."""

_DEFINED: dict[int, tuple[Plan, dict[str, ToolDef | None]]] = {}
"""`ToolBox._define` by plan and tool name: a `ToolDef` is frozen and made only of the plan's
tool, so every session of a run shares one (eight built-ins a session cost 56 calls of the
event loop, `tests/runtime/test_per_session_work.py`)."""


def _per_plan(held: dict[int, tuple[Plan, Any]], plan: Plan, new: Callable[[], Any]) -> Any:
    """What `held` keeps for `plan`, made by `new` the first time; at most 8 plans are kept
    (those of finished runs: tests run many)."""
    hit = held.get(id(plan))
    if hit is None or hit[0] is not plan:
        if len(held) >= 8:
            held.pop(next(iter(held)))
        hit = held[id(plan)] = (plan, new())
    return hit[1]


class ToolBox:
    """Executes and records one session's tool calls (`types.ToolHandle`)."""

    budget: MessageBudget | None = None
    """Set by a protocol that limits messages and tool errors (`types.MessageBudget`): every
    finished call is reported to it, and once it is spent calls are refused."""
    _unchecked: frozenset[str] = frozenset()
    """Tools of toolsets with `check_arguments: false` (set per session in `__init__`)."""
    side: Literal["agent", "user"] = "agent"
    """Whose calls these are (`tool_calls.side`); set per toolbox in `__init__`."""

    def __init__(self, plan: Plan, session: PlanSession, env: EpisodeEnvironment,
                 allow_python: bool = False,
                 python_tools: Mapping[str, PythonTool] | None = None,
                 tool_timeout_s: float = TOOL_TIMEOUT_S, *, tools: list[str] | None = None,
                 side: Literal["agent", "user"] = "agent", gifts: Gifts | None = None) -> None:
        """`tools`: offer these instead of `session.tools` (the user's own tools, a replay
        over both sides' tools); `side`: stamped on every record; `gifts`: the user tools
        given so far, shared with the session's other toolboxes (default: this box's own)."""
        self.plan = plan
        self.side = side
        self.tool_timeout_s = tool_timeout_s
        self.session = session
        self.env = env
        self.allow_python = allow_python
        self.python_tools: dict[str, PythonTool] = dict(python_tools or {})
        self.records: list[ToolRecord] = []
        self.turn = 0
        self.step = 0
        conv = session.conversation
        self.end_tool = conv.end_tool if conv is not None and conv.solo and side == "agent" \
            else None
        """Solo mode's ending tool (`conversation.end_tool`): its call ends the session."""
        self.ended = False
        self.tools: dict[str, ToolDef] = {}
        defined: dict[str, ToolDef | None] = _per_plan(_DEFINED, plan, dict)
        for name in (session.tools if tools is None else tools):
            tool = defined[name] if name in defined else self._define(name, defined)
            if tool is not None:
                self.tools[name] = tool
        # discoverable tools (issue 24): defined now, offered once the agent unlocks them
        self.locked: dict[str, ToolDef] = {}
        env_plan = plan.environments.get(session.environment)
        # the user's own toolbox never holds the agent's locked tools
        unlockable = env_plan.discoverable if env_plan is not None and side == "agent" else ()
        for name in unlockable:
            tool = self._define(name, defined) if name not in self.tools else None
            if tool is not None:
                self.locked[name] = tool
        self.unlocked: list[dict[str, Any]] = []
        """Each unlock: `{tool, turn, step, call_id}` (stored in `sessions.extra.unlocked`)."""
        # the user's tools the agent gives (issue 24): held back until given (env/gifts.py)
        self.gifts = gifts if gifts is not None else Gifts()
        self.ungiven: dict[str, ToolDef] = {n: self.tools.pop(n) for n in held_back(self)}
        self._specs: list[dict[str, Any]] | None = None
        self._replaced = False
        held = (*self.tools.items(), *self.locked.items(), *self.ungiven.items())
        self._unchecked = frozenset(
            n for n, t in held
            if isinstance(t.impl, PyToolImpl) and t.impl.toolset in plan.toolsets
            and not plan.toolsets[t.impl.toolset].check_arguments)

    @property
    def specs(self) -> list[dict[str, Any]]:
        """The tool specs, this session's own copy (a harness or a `python:` agent may change
        it)."""
        self._take_gifts()
        if self._specs is None:
            self._specs = copy_json(self.shared_specs)
        return self._specs

    @specs.setter
    def specs(self, value: list[dict[str, Any]]) -> None:
        self._specs, self._replaced = value, True

    @property
    def shared_specs(self) -> list[dict[str, Any]]:
        """The same specs as one list object shared by every session of the run offering the
        same tools: read it, never change it. The litellm agent passes it to the LLM client,
        which then serialises and hashes the specs once a run instead of once a session (0.3 ms
        of the event loop's 1 ms per one-call session, benchmarks/http_bench.py)."""
        self._take_gifts()
        if self._replaced and self._specs is not None:  # what this session now offers
            return self._specs
        held: dict[tuple[str, ...], list[dict[str, Any]]] = _per_plan(
            _SHARED_SPECS, self.plan, dict)
        names = tuple(self.tools)
        shared = held.get(names)
        if shared is None:
            shared = held[names] = [t.spec() for t in self.tools.values()]
        return shared

    def _define(self, name: str, defined: dict[str, ToolDef | None]) -> ToolDef | None:
        """The plan's tool `name` as offered, from `defined` (this plan's, `_DEFINED`)."""
        if name not in defined:
            defined[name] = self._definition(name)
        return defined[name]

    def _definition(self, name: str) -> ToolDef | None:
        tool = self.plan.tools.get(name)
        if tool is not None:
            builtin = tool.impl.name if isinstance(tool.impl, BuiltinImpl) else None
            return ToolDef(tool.name, tool.description, tool.parameters, tool.effect, tool.impl,
                           builtin)
        spec = BUILTIN_SPECS.get(name)
        if spec is not None:
            return ToolDef(name, spec["description"], spec["parameters"], BUILTIN_EFFECTS[name],
                           None, name)
        return None

    # ------------------------------------------------------------------ calls

    def effect_of(self, name: str) -> Effect:
        tool = self.tools.get(name)
        return tool.effect if tool is not None else "read"

    def _unlock(self, args: dict[str, Any], cid: str) -> dict[str, Any]:
        name = args.get("tool_name")
        if not isinstance(name, str) or not name.strip():
            raise ToolError("give `tool_name`, the exact name of the tool to unlock")
        name = name.strip()
        if name in self.tools:
            return {"status": "already available", "tool": name}
        tool = self.locked.pop(name, None)
        if tool is None:  # no list of what could be unlocked: finding the name is the task
            raise ToolError(f"there is no tool `{name}` to unlock; check the exact name in "
                            "the documentation")
        self.tools[name] = tool
        if self._replaced and self._specs is not None:  # a harness's own list: extend it
            self._specs.append(tool.spec())
        else:
            self._specs = None
        self.unlocked.append({"tool": name, "turn": self.turn, "step": self.step,
                              "call_id": cid})
        return {"status": "unlocked", "tool": name, "description": tool.description,
                "parameters": copy_json(tool.parameters)}

    def _take_gifts(self) -> None:
        for tool in take_gifts(self) if self.ungiven else ():
            if self._replaced and self._specs is not None:  # a harness's own list: extend it
                self._specs.append(tool.spec())
            else:
                self._specs = None

    def _unknown(self, name: str) -> ToolError:
        if name in self.ungiven:  # the user's tool, not given yet
            return not_given(name)
        if name in self.locked:  # exists, but not unlocked yet
            return ToolError(f"unknown tool `{name}`; available tools: "
                             f"{', '.join(self.tools) or '(none)'}")
        if name in self.plan.tools or name in BUILTIN_SPECS:
            return ToolError(f"the tool `{name}` is not available in this session; available "
                             f"tools: {', '.join(self.tools) or '(none)'}")
        close = difflib.get_close_matches(str(name), list(self.tools), n=3, cutoff=0.6)
        hint = f" (did you mean {', '.join(f'`{c}`' for c in close)}?)" if close else ""
        return ToolError(f"unknown tool `{name}`{hint}; available tools: "
                         f"{', '.join(self.tools) or '(none)'}")

    async def call(self, name: str, args: dict[str, Any], call_id: str | None = None
                   ) -> ToolRecord:
        """Validate, execute and record one call. Never raises for the agent's mistakes: the
        problem is the record's `error`."""
        started = time.time()
        t0 = time.perf_counter()
        cid = call_id or f"call-{len(self.records) + 1}"
        if self.budget is not None and self.budget.reason is not None:
            # the session is over (τ² would have stopped): not run, not recorded, not graded
            return ToolRecord(call_id=cid, tool_name=name, call=args if isinstance(args, dict)
                              else {}, result=None, error=f"not executed: the session reached "
                              f"its {self.budget.reason} limit", started_at=started,
                              duration=0.0, turn=self.turn, step=self.step)
        if self.ended or name == self.end_tool:
            # τ²'s solo agent: the ending call is never run, and nothing runs after it; neither
            # is recorded, so no check counts them
            first, self.ended = not self.ended, True
            return ToolRecord(call_id=cid, tool_name=name, call=args if isinstance(args, dict)
                              else {}, result=None, error=None if first and name ==
                              self.end_tool else "not executed: the session has ended",
                              started_at=started, duration=0.0, turn=self.turn, step=self.step)
        self._take_gifts()
        tool = self.tools.get(name)
        recorded: dict[str, Any] = copy_json(args) if isinstance(args, dict) else {}
        result: Any = None
        error: str | None = None
        try:
            if tool is None:
                raise self._unknown(name)
            if not isinstance(args, dict):
                raise ToolError(f"arguments for `{name}` must be a JSON object, got "
                                f"{type(args).__name__}")
            try:
                # the validator is made (and jsonschema imported) at the first call
                # that needs it, not for every tool a session holds: a session whose
                # agent calls no tool, or a run's first request, waits for neither
                problems = _problems(validator(tool.parameters), args) \
                    if name not in self._unchecked else []
            except schema_error() as exc:
                problems = [f"the tool's parameter schema is invalid: {exc.message}"]
            if problems:
                raise ToolError(f"invalid arguments for `{name}`: " + "; ".join(problems))
            limit = self.tool_timeout_s
            if isinstance(tool.impl, UnlockImpl):
                result = self._unlock(args, cid) if tool.impl.kind == "unlock" else \
                    give(self, args, cid)
                limit = 0.0
            if isinstance(tool.impl, HttpImpl):  # the request has its own, pack-set limit
                limit = max(limit, tool.impl.timeout_s + 1.0)
            try:
                if limit:
                    result = await asyncio.wait_for(self._dispatch(tool, copy_json(args)),
                                                    limit)
            except TimeoutError:
                raise ToolError(f"`{name}` timed out after {self.tool_timeout_s:g} s; ask for "
                                "less (a narrower path, pattern or query)") from None
        except ToolError as exc:
            error = exc.message
            # an HTTP tool's failed request keeps its request and response (status, body)
            record_of = getattr(exc, "record", None)
            result = record_of() if callable(record_of) else None
        except Exception as exc:  # a bug in a tool implementation: record it, keep going
            error = f"internal error in `{name}`: {type(exc).__name__}: {exc}"
            result = None
        if error is not None:
            error = _without_host_paths(error, self.env.workspace.root)
        record = ToolRecord(call_id=cid, tool_name=name, call=recorded, result=result,
                            error=error, started_at=started,
                            duration=time.perf_counter() - t0, turn=self.turn, step=self.step,
                            effect=tool.effect if tool is not None else "read", side=self.side)
        self.records.append(record)
        if self.budget is not None:
            self.budget.tool_done(record.error is not None)
        return record

    async def _dispatch(self, tool: ToolDef, args: dict[str, Any]) -> Any:
        impl = tool.impl
        # --- python toolsets and the shell (issue 12, parts 1 and 6)
        if isinstance(impl, PyToolImpl):
            worker = self.env.pytool_worker(impl.toolset, self.allow_python)
            return await worker.call(tool.name, args)
        if tool.builtin == "shell":
            return await self._shell(args)
        # --- knowledge bases (issue 24): ranking 700 documents is CPU work, off the loop
        if isinstance(impl, KnowledgeImpl):
            kb = self.plan.knowledge.get(impl.knowledge)
            if kb is None:
                raise ToolError(f"the knowledge base `{impl.knowledge}` is not in this plan")
            return await asyncio.to_thread(call_knowledge, kb, impl, args)
        # ---
        if tool.builtin is not None or isinstance(impl, CorpusImpl | StreamImpl):
            deadline = time.monotonic() + self.tool_timeout_s
            return await asyncio.to_thread(self._in_thread, tool, args, deadline)
        if isinstance(impl, PythonImpl):
            return await self._python(tool, impl, args)
        if isinstance(impl, HttpImpl):
            return await self._http(tool, impl, args)
        return self._dispatch_sync(tool, args, None)

    async def _shell(self, args: dict[str, Any]) -> Any:
        # the file tools' workspace lock, taken without blocking the event loop (polled, so
        # a cancelled call never leaves it taken)
        lock = _workspace_lock(self.env.workspace)
        while not lock.acquire(blocking=False):
            await asyncio.sleep(0.02)
        try:
            # under the toolbox's own limit, so the command's output so far is reported
            limit = max(1.0, min(SHELL_TIMEOUT_S, self.tool_timeout_s - 1.0))
            return await run_shell(self.env.workspace, args.get("command"),
                                   allow_python=self.allow_python, timeout_s=limit)
        finally:
            lock.release()

    def _in_thread(self, tool: ToolDef, args: dict[str, Any], deadline: float) -> Any:
        # one call at a time per workspace, as on the event loop before: a call that timed out
        # finishes (it sees the deadline) before the next one touches the files
        with _workspace_lock(self.env.workspace):
            return self._dispatch_sync(tool, args, deadline)

    def _dispatch_sync(self, tool: ToolDef, args: dict[str, Any], deadline: float | None
                       ) -> Any:
        if tool.builtin is not None:
            return self._builtin(tool.builtin, args, deadline)
        impl = tool.impl
        if isinstance(impl, ServiceImpl):
            svc = self.env.services.get(impl.service)
            if svc is None:
                raise ToolError(f"the service `{impl.service}` is not available in this "
                                "environment")
            return svc.call(impl.operation, args)
        if isinstance(impl, CorpusImpl):
            if impl.corpus not in self.plan.corpora:
                raise ToolError(f"the corpus `{impl.corpus}` is not in this plan")
            index = self.env.corpus(impl.corpus)
            if impl.operation == "search":
                topn = next((args[k] for k in ("topn", "top_n", "limit", "n") if k in args), 10)
                return index.search(args.get("query"), topn)
            urls = next((args[k] for k in ("urls", "url", "ids", "id") if k in args), None)
            return index.visit(urls, args.get("goal"))
        if isinstance(impl, StreamImpl):
            stream = self.plan.event_streams.get(impl.stream)
            if stream is None:
                raise ToolError(f"the event stream `{impl.stream}` is not in this plan")
            return read_stream(stream, since=args.get("since"), until=args.get("until"),
                               source=args.get("source"), query=args.get("query"),
                               limit=args.get("limit"))
        if isinstance(impl, StaticImpl):
            return copy_json(impl.result)
        raise ToolError(f"the tool `{tool.name}` has no implementation this runtime knows")

    async def _python(self, tool: ToolDef, impl: PythonImpl, args: dict[str, Any]) -> Any:
        if not self.allow_python:
            raise ToolError(f"`{tool.name}` is a python tool; python tools need --allow-python")
        fn = self.python_tools.get(tool.name)
        if fn is not None:  # an in-process implementation supplied by the caller
            out = fn(args)
            if inspect.isawaitable(out):
                out = await out
        else:
            source = self.plan.tools[tool.name].python_source if tool.name in self.plan.tools \
                else None
            if not source:
                raise ToolError(f"`{tool.name}` is a python tool ({impl.entry}) whose source "
                                "is not in the plan; recompile the pack")
            context = {"files": self.env.workspace.files(), "clock": self.env.clock,
                       "state": {n: svc.snapshot() for n, svc in self.env.services.items()}}
            res = await run_function(source, impl.entry.rpartition(":")[2], [args, context],
                                     what=f"python tool `{tool.name}`")
            if res.error is not None:
                raise ToolError(res.error)
            out = res.value
        try:
            json.dumps(out)
        except (TypeError, ValueError) as exc:
            raise ToolError(f"`{tool.name}` returned a result that is not JSON: {exc}") from None
        return out

    async def _http(self, tool: ToolDef, impl: HttpImpl, args: dict[str, Any]) -> Any:
        """HTTP tools (issue 12, section 2): one request to the episode's service instance."""
        from .http_tools import call_http

        if not self.allow_python:
            raise ToolError(f"`{tool.name}` calls the HTTP service `{impl.service}`, pack code "
                            "that runs only with --allow-python")
        service = self.env.processes.get(impl.service)
        if service is None:
            raise ToolError(f"the service `{impl.service}` is not running in this environment")
        return await call_http(service, impl, args)

    def _builtin(self, name: str, args: dict[str, Any], deadline: float | None = None) -> Any:
        ws = self.env.workspace
        if name == "read_file":
            return ws.read_file(args.get("path"), args.get("offset", 0), args.get("limit"))
        if name == "write_file":
            return ws.write_file(args.get("path"), args.get("content"))
        if name == "edit_file":
            return ws.edit_file(args.get("path"), args.get("old"), args.get("new"),
                                args.get("count", 1))
        if name == "list_files":
            return ws.list_files(args.get("path", "."), deadline=deadline)
        if name == "glob":
            return ws.glob(args.get("pattern"), deadline=deadline)
        if name == "grep":
            return ws.grep(args.get("pattern"), args.get("path", "."), args.get("glob"),
                           deadline=deadline)
        if name == "ask_user":
            question = args.get("question")
            if not isinstance(question, str) or not question.strip():
                raise ToolError("give `question`, the question for the user")
            self.env.asked.append(question)
            return {"status": "asked", "note": "The user sees your question at the end of this "
                                               "turn and answers in their next message."}
        if name == "send_message":
            to, text, channel = args.get("to"), args.get("text"), args.get("channel")
            if not isinstance(to, str) or not to.strip():
                raise ToolError("give `to`, the recipient")
            if not isinstance(text, str) or not text.strip():
                raise ToolError("give `text`, the message")
            if channel is not None and not isinstance(channel, str):
                raise ToolError("`channel` must be a string")
            msg_id = f"msg-{len(self.env.outbox) + 1}"
            self.env.outbox.append({"id": msg_id, "to": to, "text": text, "channel": channel,
                                    "session": self.session.id, "turn": self.turn})
            return {"status": "sent", "id": msg_id}
        raise ToolError(f"unknown built-in tool `{name}`")


def _without_host_paths(text: str, root: Any) -> str:
    """The agent sees workspace-relative paths only: where the runner keeps the workspace (and
    so the user's name or directory layout) is none of its business."""
    r = str(root)
    return text.replace(r + "/", "").replace(r, ".")


_LOCKS_GUARD = threading.Lock()


def _workspace_lock(ws: Any) -> threading.Lock:
    with _LOCKS_GUARD:
        lock = getattr(ws, "_tool_lock", None)
        if lock is None:
            lock = threading.Lock()
            ws._tool_lock = lock
        return lock


def as_tool_handle(box: ToolBox) -> ToolHandle:
    """`ToolBox` is a `types.ToolHandle` (this function lets the type checker prove it)."""
    return box
