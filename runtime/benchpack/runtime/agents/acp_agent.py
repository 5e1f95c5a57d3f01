"""`acp:<command>`: a harness that speaks the Agent Client Protocol (Zed's ACP) on its stdio.

Driven with the `agent-client-protocol` library (`acp`), client side. Per session × repeat:

- The agent process starts once, under `reaper.py` (its process group dies with the session,
  with the runner, or on a timeout it did not answer), in the workspace, with the isolation of
  `cmd2:` (`isolation.py`: fresh HOME/XDG/TMPDIR, credentials scrubbed except `--pass-env`) and
  the recording model proxy in `OPENAI_BASE_URL` & co. (`proxy.py`). Its stderr is drained into
  a tail quoted when it fails.
- `initialize`, then `session/new` with the workspace as `cwd` and the session's tools as one
  MCP server named `benchpack`: by URL (`type: http`) when the agent advertises
  `mcpCapabilities.http`, else as the stdio relay command every ACP agent must support
  (`--mcp http|stdio` forces one). The server is ours (`mcp/server.py`), so every call is
  validated and recorded as a native one.
- Each turn is one `session/prompt`. The first one carries the benchmark's context (system
  prompt, earlier sessions, replayed history) as a leading text block: ACP has no system prompt.
  The reply is the agent's `agent_message_chunk` texts, concatenated in arrival order.
- The agent's own tool calls (`tool_call` / `tool_call_update`: its built-in Read, Edit, shell…)
  are kept as `messages` rows with role `tool`, name `harness` and a JSON body (title, kind,
  status, input, output, permission). Not as `tool_calls` rows: those are the benchmark's tools,
  which the session's counts, step numbers and graders are about; a harness that runs `ls`
  before answering has not called a tool of the task. Role `tool` keeps them out of what the
  judges read as the agent's words and out of `replay:` (which re-executes assistant calls).
- Permission requests are answered by policy: a session tool (its title names one of the
  session's tools, bare or as `mcp__benchpack__x`, `benchpack/x`…) is allowed; anything else is
  rejected unless `--allow-builtin-tools`. No human is there to ask.
- A turn past `turn_timeout_s` sends `session/cancel`; an agent that ends the prompt within
  `CANCEL_GRACE_S` keeps its session, one that does not is killed with its group and later
  turns fail at once. `close()` closes the connection (stdin EOF), waits `CLOSE_GRACE_S`, then
  kills the group; the MCP server, the proxy route and the directories go on every exit path.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import UsageError
from ..types import AgentReply, LLMCallRecord, Message, SessionBrief
from . import render_event, tool_call_messages
from .cmd_agent import (
    MAX_LINE_BYTES,
    STDERR_TAIL_BYTES,
    HarnessError,
    spawn_group,
)
from .harness_output import failure_detail, reply_texts, split_chunks
from .harness_process import anchor_paths, plain_message, signal_group, wait_exit, workspace_of
from .isolation import Isolation, check_pass_env
from .proxied import ProxiedAdapter, check_executable

if TYPE_CHECKING:
    from ..llm import LLMClient
    from .registry import AgentContext

USAGE = ("acp:[--model MODEL] [--pass-env NAME]… [--allow-builtin-tools] [--mcp http|stdio] "
         "<command>, e.g. acp:--model openai/gpt-4o-mini gemini --experimental-acp")
MCP_NAME = "benchpack"
HARNESS = "harness"
"""`messages.name` of a harness's own tool-call events."""
START_TIMEOUT_S = 60.0
"""How long `initialize` + `session/new` may take (a harness may load a model list first);
not the turn's budget, which is for answering."""
CANCEL_GRACE_S = 5.0
CLOSE_GRACE_S = 2.0
OUTPUT_CHARS = 4_000
"""What is kept of a built-in tool's output in its event (a `cat` of a big file is not news)."""

McpMode = Literal["http", "stdio"]


@dataclass(frozen=True)
class AcpOptions:
    command: str
    model: str | None = None
    pass_env: tuple[str, ...] = ()
    allow_builtin_tools: bool = False
    mcp: McpMode | None = None
    """None: by URL when the agent advertises `mcpCapabilities.http`, else stdio."""


def parse_argument(argument: str) -> AcpOptions:
    """`[--model M] [--pass-env NAME]… [--allow-builtin-tools] [--mcp http|stdio] [--]
    command…` → options."""
    try:
        words = shlex.split(argument)
    except ValueError as exc:
        raise UsageError(f"acp:{argument}: cannot split the command line ({exc})") from None
    model: str | None = None
    keep: list[str] = []
    allow = False
    mcp: McpMode | None = None
    while words and words[0].startswith("--"):
        word = words.pop(0)
        if word == "--":
            break
        name, eq, value = word.partition("=")
        if name == "--allow-builtin-tools" and not eq:
            allow = True
            continue
        if name not in ("--model", "--pass-env", "--mcp"):
            raise UsageError(f"acp: unknown option `{name}` (use {USAGE})")
        if not eq:
            if not words:
                raise UsageError(f"acp: `{name}` needs a value (use {USAGE})")
            value = words.pop(0)
        if name == "--model":
            model = value
        elif name == "--pass-env":
            keep.extend(check_pass_env([value]))
        elif value in ("http", "stdio"):
            mcp = value  # type: ignore[assignment]
        else:
            raise UsageError(f"acp: --mcp takes `http` or `stdio`, not `{value}`")
    if not words:
        raise UsageError(f"acp: needs a command ({USAGE})")
    return AcpOptions(shlex.join(words), model, tuple(keep), allow, mcp)


def make_adapter(argument: str, context: AgentContext) -> AcpAgent:
    """Registry factory of `acp:<options and command>`."""
    return AcpAgent(parse_argument(argument), llm=context.llm, uri=f"acp:{argument}")


class AcpAgent(ProxiedAdapter):
    """See the module docstring. `llm` builds the run's client (the proxy's upstream)."""

    def __init__(self, options: AcpOptions, *, llm: Callable[[], LLMClient],
                 uri: str | None = None) -> None:
        argv = shlex.split(options.command)
        self.options = options
        self.argv = anchor_paths(argv, Path.cwd())
        self.name = uri or f"acp:{options.command}"
        self.llm = llm
        self.proxy_model = options.model
        check_executable(self.argv, argv[0], self.name, "acp:./my_agent or acp:python my_agent.py")

    async def open(self, brief: SessionBrief) -> AcpSession:
        return await self._opened(AcpSession(self, brief))


def session_tool_matcher(names: list[str]) -> Callable[[str | None], bool]:
    """Whether a permission request's title names one of the session's tools: bare (`search`)
    or as harnesses qualify MCP tools (`mcp__benchpack__search`, `benchpack/search`,
    `benchpack.search`, `benchpack:search`, `search (benchpack MCP Server)`)."""
    if not names:
        return lambda title: False
    alt = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    pattern = re.compile(
        rf"(?:(?:mcp__)?{MCP_NAME}(?:__|/|\.|:))?(?:{alt})(?:\s*\({MCP_NAME}[^)]*\))?")
    return lambda title: title is not None and pattern.fullmatch(title.strip()) is not None


def _on_our_server(raw_input: Any) -> bool:
    """Whether a request names the session's MCP server in its input: Codex's ACP adapter asks
    to "Approve MCP tool call" with `{"server_name": "benchpack", …}`, the tool only in prose."""
    return isinstance(raw_input, dict) and raw_input.get("server_name") == MCP_NAME


@dataclass
class _Event:
    """A harness's own tool call, as its notifications told it."""

    id: str
    turn: int
    at: float
    title: str = ""
    kind: str | None = None
    status: str | None = None
    input: Any = None
    output: Any = None
    session_tool: bool = False
    permission: str | None = None
    """`allowed` or `denied` when the agent asked."""

    def update(self, u: Any) -> None:
        for name in ("title", "kind", "status"):
            value = getattr(u, name, None)
            if value is not None:
                setattr(self, name, value)
        if getattr(u, "raw_input", None) is not None:
            self.input = u.raw_input
        if getattr(u, "raw_output", None) is not None:
            self.output = u.raw_output
        elif getattr(u, "content", None):
            self.output = "\n".join(t for c in u.content if (t := _content_text(c)))

    def message(self) -> Message:
        output = self.output
        if isinstance(output, str) and len(output) > OUTPUT_CHARS:
            output = output[:OUTPUT_CHARS] + f"… [{len(output) - OUTPUT_CHARS} more chars]"
        body = {"title": self.title, "kind": self.kind, "status": self.status,
                "input": self.input, "output": output, "session_tool": self.session_tool,
                "permission": self.permission}
        return Message("tool", json.dumps(body, ensure_ascii=False, default=str), self.turn,
                       tool_call_id=f"acp:{self.id}", name=HARNESS)


def _content_text(c: Any) -> str:
    inner = getattr(c, "content", None)
    text = getattr(inner, "text", None) if inner is not None else getattr(c, "text", None)
    return text if isinstance(text, str) else ""


class _Client:
    """The client half of ACP that this adapter implements: updates and permissions. Files
    and terminals are not offered (the capabilities say so): the agent uses its own."""

    def __init__(self, session: AcpSession) -> None:
        self.session = session

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.session.on_update(update)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> Any:
        return self.session.on_permission(tool_call, options)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from acp import RequestError

        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


@dataclass
class _TurnState:
    number: int
    chunks: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    model_replies: list[str] = field(default_factory=list)
    """Replies of the turn's proxied model calls (canonical JSON)."""
    events: dict[str, _Event] = field(default_factory=dict)

    def answer(self) -> tuple[str, list[Message]]:
        """The reply, and the thoughts and notices stored apart as `harness` rows."""
        texts = reply_texts(self.model_replies) if self.model_replies else None
        answer, notices = split_chunks(self.chunks, texts)
        apart = [("thought", t) for t in ["".join(self.thoughts).strip()] if t]
        apart += [("notice", n) for n in notices if n]
        return answer, [Message("tool", json.dumps({"title": kind, "kind": kind, "text": text},
                                                   ensure_ascii=False),
                                self.number, tool_call_id=f"acp:{kind}-{i}", name=HARNESS)
                        for i, (kind, text) in enumerate(apart, 1)]


class AcpSession:
    """One session × repeat: its agent process, ACP connection and session, MCP server and
    isolated directories."""

    def __init__(self, agent: AcpAgent, brief: SessionBrief) -> None:
        self.agent = agent
        self.brief = brief
        self.iso = Isolation.create(prefix="benchpack-acp-")
        self.route: Any = None
        self.mcp: Any = None
        self.mcp_mode: McpMode | None = None
        self.conn: Any = None
        self.acp_session: str | None = None
        self.proc: asyncio.subprocess.Process | None = None
        self.pids: list[int] = []
        self.turns = 0
        self.dead: str | None = None
        self.events: list[_Event] = []
        """Every built-in tool event of the session (also in the turns' messages)."""
        self._state: _TurnState | None = None
        self._lifeline: int | None = None
        self._stderr = bytearray()
        self._stderr_task: asyncio.Task[None] | None = None
        names = [s["function"]["name"] for s in brief.tools.specs]
        self._is_session_tool = session_tool_matcher(names)

    # ------------------------------------------------------------------ start

    def _record(self, record: LLMCallRecord) -> None:
        """A proxied model call: recorded, and its reply kept for telling the turn's reply
        apart from the harness's notices (`harness_output.split_chunks`)."""
        if self._state is not None and record.reply is not None:
            self._state.model_replies.append(record.reply)
        if self.brief.recorder is not None:
            self.brief.recorder(record)

    def _turn_number(self) -> int:
        turn = getattr(self.brief.tools, "turn", None)
        return turn if isinstance(turn, int) and turn > 0 else self.turns

    def environment(self, workspace: str | None) -> dict[str, str]:
        env = self.iso.environment(os.environ, keep=self.agent.options.pass_env)
        route = self.route
        env.update({
            "BENCHPACK_SESSION_ID": self.brief.session_id,
            "BENCHPACK_REPEAT": str(self.brief.repeat),
            "BENCHPACK_WORKSPACE": workspace or "",
            "BENCHPACK_MCP_URL": str(self.mcp.url) if self.mcp is not None else "",
            "BENCHPACK_MODEL": self.agent.options.model or "",
            # what each model SDK reads unprompted: OpenAI's, Anthropic's
            **route.environment(),
        })
        return env

    async def setup(self) -> None:
        from acp import PROTOCOL_VERSION
        from acp.client.connection import ClientSideConnection
        from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

        from ..mcp import start_mcp_server

        proxy = await self.agent.proxy()
        self.route = proxy.open_session(recorder=self._record,
                                        turn=self._turn_number, seed=self.brief.seed,
                                        repeat=self.brief.repeat)
        # the step budget holds over MCP as for `cmd:`/`cmd2:` (tool calls per turn)
        self.mcp = await start_mcp_server(self.brief.tools, max_steps=self.brief.max_steps,
                                          result_chars=self.brief.max_tool_result_chars)
        workspace = workspace_of(self.brief)
        cwd = workspace or str(self.iso.root)
        proc, self._lifeline = await spawn_group(self.agent.argv, cwd,
                                                 self.environment(workspace), MAX_LINE_BYTES)
        self.proc = proc
        self.pids.append(proc.pid)
        self._stderr_task = asyncio.create_task(self._drain_stderr(proc))
        assert proc.stdin is not None and proc.stdout is not None
        # `_Client` implements the two methods an agent needs of us (the Protocol lists all)
        self.conn = ClientSideConnection(_Client(self), proc.stdin,  # type: ignore[arg-type]
                                         proc.stdout)
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                init = await self.conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(
                        fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
                        terminal=False),
                    client_info=Implementation(name="benchpack", version=_version()))
                caps = getattr(getattr(init, "agent_capabilities", None), "mcp_capabilities",
                               None)
                http = bool(getattr(caps, "http", False))
                self.mcp_mode = self.agent.options.mcp or ("http" if http else "stdio")
                if self.mcp_mode == "http" and not http:
                    raise HarnessError("--mcp http: the agent does not advertise "
                                       "mcpCapabilities.http (hint: use --mcp stdio)")
                created = await self.conn.new_session(cwd=cwd, mcp_servers=[self._mcp_entry()])
        except TimeoutError:
            raise HarnessError(self._failure(
                f"the agent did not start an ACP session within {START_TIMEOUT_S:g} s"
            )) from None
        except HarnessError:
            raise
        except Exception as exc:
            raise HarnessError(self._failure(f"ACP start failed: {_describe(exc)}")) from None
        self.acp_session = created.session_id

    def _mcp_entry(self) -> Any:
        from acp.schema import HttpMcpServer, McpServerStdio

        if self.mcp_mode == "http":
            return HttpMcpServer(type="http", name=MCP_NAME, url=self.mcp.url, headers=[])
        cmd = self.mcp.stdio_command
        return McpServerStdio(name=MCP_NAME, command=cmd[0], args=cmd[1:], env=[])

    async def _drain_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        with contextlib.suppress(Exception):
            while chunk := await proc.stderr.read(65536):
                self._stderr.extend(chunk)
                if len(self._stderr) > STDERR_TAIL_BYTES:
                    del self._stderr[:-STDERR_TAIL_BYTES]

    def _failure(self, what: str) -> str:
        code = self.proc.returncode if self.proc is not None else None
        if code is not None and code != 0:
            what += (f"; the agent was killed by signal {-code}" if code < 0
                     else f"; the agent exited with code {code}")
        return what + failure_detail(self._stderr.decode("utf-8", "replace"))

    # ------------------------------------------------------------------ notifications

    def _event(self, tool_call_id: str) -> _Event:
        state = self._state
        turn = state.number if state is not None else self._turn_number()
        # looked up in the turn: agents number their calls per prompt (`call-1` every turn),
        # and a late update between turns belongs to the last event of that id
        found = state.events.get(tool_call_id) if state is not None else next(
            (e for e in reversed(self.events) if e.id == tool_call_id), None)
        if found is None:
            found = _Event(tool_call_id, turn, time.time())
            self.events.append(found)
            if state is not None:
                state.events[tool_call_id] = found
        return found

    def on_update(self, update: Any) -> None:
        kind = getattr(update, "session_update", None)
        state = self._state
        if kind in ("agent_message_chunk", "agent_thought_chunk") and state is not None:
            text = getattr(update.content, "text", None)
            if isinstance(text, str):
                (state.chunks if kind == "agent_message_chunk" else state.thoughts).append(text)
        elif kind in ("tool_call", "tool_call_update"):
            event = self._event(update.tool_call_id)
            event.update(update)
            event.session_tool = event.session_tool or self._is_session_tool(event.title) or \
                _on_our_server(event.input)

    def on_permission(self, tool_call: Any, options: list[Any]) -> Any:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        event = self._event(tool_call.tool_call_id)
        event.update(tool_call)
        event.session_tool = event.session_tool or self._is_session_tool(event.title) or \
                _on_our_server(event.input)
        allow = event.session_tool or self.agent.options.allow_builtin_tools
        wanted = ("allow_once", "allow_always") if allow else ("reject_once", "reject_always")
        chosen = next((o for kind in wanted for o in options if o.kind == kind), None)
        event.permission = "allowed" if allow else "denied"
        if chosen is None:  # no option says what we mean: cancelling is the safe refusal
            event.permission = "denied"
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id))

    # ------------------------------------------------------------------ turns

    def _context(self) -> str:
        """The benchmark's context for the first prompt: ACP has no system prompt."""
        brief = self.brief
        parts = [brief.system_prompt.strip()] if brief.system_prompt.strip() else []
        prior = [p for m in brief.prior if (p := plain_message(m)) and p["role"] in ("user", "assistant")
                 and p["content"]]
        if prior:
            parts.append("Earlier sessions:\n" + "\n".join(
                f"{p['role'].upper()}: {p['content']}" for p in prior))
        history = [p for m in brief.history if (p := plain_message(m)) and p["content"]]
        if history:
            parts.append("This conversation so far:\n" + "\n".join(
                f"{p['role'].upper()}: {p['content']}" for p in history))
        return "\n\n".join(parts)

    async def turn(self, message: str | None, event: dict[str, Any] | None) -> AgentReply:
        from acp import text_block

        self.turns += 1
        state = _TurnState(self._turn_number())
        tools = self.brief.tools
        records = getattr(tools, "records", None)
        before = len(records) if isinstance(records, list) else 0

        apart: list[Message] = []

        def reply(answer: str = "", stop: Any = "answer", error: str | None = None
                  ) -> AgentReply:
            made = list(records[before:]) if isinstance(records, list) else []
            refused = getattr(self.mcp, "refused", None)
            if stop == "answer" and refused is not None and refused(state.number):
                stop = "step_budget"
            timed: list[tuple[float, list[Message]]] = [
                (r.started_at, tool_call_messages(r, state.number)) for r in made]
            timed += [(e.at, [e.message()]) for e in state.events.values()]
            msgs = [m for _, ms in sorted(timed, key=lambda x: x[0]) for m in ms]
            msgs += apart
            if stop in ("answer", "step_budget") or answer:
                msgs.append(Message("assistant", answer, state.number))
            return AgentReply(text=answer, tool_records=made, messages=msgs,
                              steps=len(made) + 1, stop_reason=stop, error=error)

        if self.dead is not None:
            return reply(stop="error", error=self.dead)
        text = message if message is not None else render_event(event)
        blocks = [text_block(text)]
        if self.turns == 1 and (context := self._context()):
            blocks.insert(0, text_block(context))
        self._state = state
        task = asyncio.create_task(self.conn.prompt(session_id=self.acp_session, prompt=blocks))
        try:
            done, _ = await asyncio.wait({task}, timeout=self.brief.turn_timeout_s)
            if not done:
                await self._cancel(task)
                answer, apart[:] = state.answer()
                return reply(answer, stop="timeout")
            try:
                response = task.result()
            except Exception as exc:
                await self._kill()
                self.dead = self._failure(f"the agent failed during the prompt: "
                                          f"{_describe(exc)}")
                return reply(stop="error", error=self.dead)
        finally:
            if not task.done():  # cancelled from outside (Ctrl-C): close() kills the agent
                task.cancel()
            self._state = None
        answer, apart[:] = state.answer()
        stop = getattr(response, "stop_reason", "end_turn")
        if stop == "max_turn_requests":
            return reply(answer, stop="step_budget")
        if stop == "cancelled":  # cancelled without us asking: the agent gave up the turn
            return reply(answer, stop="error", error="the agent cancelled the turn")
        return reply(answer)

    async def _cancel(self, task: asyncio.Task[Any]) -> None:
        """`session/cancel`, then the group if the agent does not end the prompt in time."""
        with contextlib.suppress(Exception):
            await self.conn.cancel(session_id=self.acp_session)
        done, _ = await asyncio.wait({task}, timeout=CANCEL_GRACE_S)
        if done and not task.cancelled() and task.exception() is None:
            return  # the agent honoured the cancel: its session goes on
        task.cancel()
        await self._kill()
        self.dead = (f"the agent was killed after turn {self._turn_number()} timed out "
                     f"({self.brief.turn_timeout_s:g} s) and did not answer session/cancel "
                     f"within {CANCEL_GRACE_S:g} s")

    async def _kill(self) -> None:
        proc = self.proc
        if proc is None:
            return
        signal_group(proc, 9)
        await wait_exit(proc, 10.0)
        if self._stderr_task is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 1.0)

    # ------------------------------------------------------------------ shutdown

    async def close(self) -> None:
        proc = self.proc
        try:
            if self.conn is not None:
                conn, self.conn = self.conn, None
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(CLOSE_GRACE_S):
                        await conn.close()  # stdin EOF: an ACP agent's cue to exit
            if proc is not None:
                if not await wait_exit(proc, CLOSE_GRACE_S if self.dead is None else 0.0):
                    signal_group(proc, 15)
                    if not await wait_exit(proc, 1.0):
                        signal_group(proc, 9)
                        await wait_exit(proc, 10.0)
                signal_group(proc, 9)  # whatever the agent left in its group
        finally:
            if self._stderr_task is not None:
                self._stderr_task.cancel()
                with contextlib.suppress(BaseException):
                    await self._stderr_task
                self._stderr_task = None
            if self._lifeline is not None:
                with contextlib.suppress(OSError):
                    os.close(self._lifeline)
                self._lifeline = None
            if self.route is not None:
                with contextlib.suppress(Exception):
                    (await self.agent.proxy()).close_session(self.route)
                self.route = None
            if self.mcp is not None:
                mcp, self.mcp = self.mcp, None
                await mcp.close()
            self.iso.close()


def _describe(exc: BaseException) -> str:
    data = getattr(exc, "data", None)
    text = str(exc) or type(exc).__name__
    if data:
        text += f" ({json.dumps(data, ensure_ascii=False, default=str)[:500]})"
    return f"{type(exc).__name__}: {text}"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("benchpack")
    except PackageNotFoundError:
        return "0"
