"""`cmd:<command>`: an external harness run as a subprocess, speaking JSON lines.

The protocol (version 1) is documented for harness authors in `runtime/README.md`, "Agent
adapters"; `example_harness.py` is a working minimum. In short: one process per session, started
in the episode workspace with the parent's environment; the runtime writes `start`, then one
`user` or `event` per turn, a `tool_result` for every `tool_call`, and `end` on close; the
harness writes `tool_call`, `llm_call` and `log` lines and ends each turn with `assistant`.

Decisions, each also stated in the README:

- stdout carries protocol lines only: a line that is not a JSON object with a string `type`
  (or has an unknown type) is a protocol error; the turn ends with `error` and the harness is
  killed. Blank lines are ignored. Logs go to stderr or `{"type": "log"}`.
- stderr is read continuously into a bounded tail (`STDERR_TAIL_BYTES`) attached to errors.
- A harness that exits mid-turn ends the turn with `error` (exit code and stderr tail); later
  turns of the session fail at once.
- `brief.turn_timeout_s` bounds a whole turn: the process (group) is killed and the turn ends
  with `timeout`; the next turn starts a fresh process whose `start.history` holds the session
  so far.
- At most `brief.max_steps` tool calls run per turn; later calls are answered with an error
  `tool_result` without running, and the turn ends with `step_budget` when the harness answers.
- `close()` sends `end`, reads what is left (late `llm_call` lines still count) for
  `close_grace_s`, then terminates and finally kills the process group, and always reaps it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shlex
import shutil
import signal
import sys
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import UsageError
from ..types import AgentReply, LLMCallRecord, Message, SessionBrief, ToolRecord
from . import Recorder, render_event, tool_call_messages
from .harness_process import anchor_paths, plain_message, signal_group, wait_exit, workspace_of

if TYPE_CHECKING:
    from .registry import AgentContext

PROTOCOL_VERSION = 1
MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest line the harness may write (a longer one is a protocol error)."""
STDERR_TAIL_BYTES = 64 * 1024
ERROR_TAIL_CHARS = 2_000
"""How much of the stderr tail an error message quotes."""
CLOSE_GRACE_S = 2.0
LOG_LINES = 200
LOG_LINE_CHARS = 4_000
"""What is kept of each `log` line (a harness may write 16 MB lines: 200 of them were 2 GB)."""
MAX_TOKENS_PER_CALL = 100_000_000
MAX_COST_PER_CALL = 10_000.0
MAX_LATENCY_S = 86_400.0
"""Harness-reported figures beyond these are protocol errors: one 1e18 token count or a cost
of 1e308 would swamp every sum in the store."""

log = logging.getLogger(__name__)

Stop = Literal["answer", "step_budget", "timeout", "error"]


class HarnessError(RuntimeError):
    """The harness broke the protocol, crashed, or could not be started."""


def make_adapter(argument: str, context: AgentContext) -> CmdAgent:
    """Registry factory of `cmd:<command>`."""
    return CmdAgent(argument)


class CmdAgent:
    """`cmd:<command>`: the command line is split with `shlex` (POSIX rules), its relative paths
    anchored to the current directory (`anchor_paths`), and run once per session. `env` replaces
    the inherited environment when given."""

    def __init__(self, command: str, *, close_grace_s: float = CLOSE_GRACE_S,
                 max_line_bytes: int = MAX_LINE_BYTES,
                 env: Mapping[str, str] | None = None) -> None:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise UsageError(f"cmd:{command}: cannot split the command line ({exc})") from None
        if not argv:
            raise UsageError("cmd: needs a command, e.g. cmd:python my_harness.py")
        self.argv = anchor_paths(argv, Path.cwd())
        self.name = f"cmd:{command}"
        self.close_grace_s = close_grace_s
        self.max_line_bytes = max_line_bytes
        self.env = dict(env) if env is not None else None
        path = (self.env if self.env is not None else os.environ).get("PATH")
        if shutil.which(self.argv[0], path=path) is None:  # fail before the run, not per session
            where = "no such executable file" if os.sep in argv[0] else "not found on PATH"
            raise UsageError(f"cmd:{command}: `{argv[0]}`: {where} (hint: give the program's "
                             "path, e.g. cmd:./my_harness or cmd:python my_harness.py)")

    async def open(self, brief: SessionBrief) -> CmdSession:
        session = CmdSession(self, brief, brief.recorder)
        try:
            async with asyncio.timeout(brief.turn_timeout_s):
                await session.launch()
        except TimeoutError:
            await session.close()
            raise HarnessError(f"`{self.argv[0]}` did not read its start message within "
                               f"{brief.turn_timeout_s:g} s") from None
        except BaseException:
            await session.close()
            raise
        return session

    def environment(self) -> dict[str, str]:
        """The child's environment: the parent's (the harness reads its own API keys), with
        Python's stdio made unbuffered UTF-8 unless the user chose otherwise."""
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.setdefault("PYTHONIOENCODING", "utf-8")
        return env


@dataclass
class _Turn:
    number: int
    records: list[ToolRecord] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    refused: int = 0
    """Tool calls refused because the step budget was spent."""

    def reply(self, text: str = "", stop: Stop = "answer", error: str | None = None,
              compactions: int = 0) -> AgentReply:
        if stop == "answer" and self.refused:
            stop = "step_budget"
        return AgentReply(text=text, tool_records=self.records, messages=self.messages,
                          steps=len(self.records) + 1, stop_reason=stop, compactions=compactions,
                          error=error)


class CmdSession:
    """One session's harness process."""

    def __init__(self, agent: CmdAgent, brief: SessionBrief, recorder: Recorder | None) -> None:
        self.agent = agent
        self.brief = brief
        self.recorder = recorder
        self.proc: asyncio.subprocess.Process | None = None
        self.pids: list[int] = []
        """Every process started for this session (a timeout restarts the harness)."""
        self.calls: list[LLMCallRecord] = []
        self.logs: deque[str] = deque(maxlen=LOG_LINES)
        self.transcript: list[dict[str, str]] = []
        """This session's user inputs and answers so far, for a restart's `start.history`."""
        self.turns = 0
        self.dead: str | None = None
        """Why the harness cannot go on (crash or protocol error); later turns fail with it."""
        self._stderr = bytearray()
        self._stderr_task: asyncio.Task[None] | None = None
        self._lifeline: int | None = None
        """Write end of the reaper's lifeline (`reaper.py`): closed once the harness is dead."""
        self._closed = False

    # ------------------------------------------------------------------ process

    async def launch(self) -> None:
        """Start the harness and send `start`."""
        cwd = workspace_of(self.brief)
        proc, self._lifeline = await spawn_group(self.agent.argv, cwd, self.agent.environment(),
                                                 self.agent.max_line_bytes)
        self.proc = proc
        self.pids.append(proc.pid)
        self._stderr = bytearray()
        self._stderr_task = asyncio.create_task(self._read_stderr(proc))
        brief = self.brief
        prior = [plain_message(m) for m in brief.prior if m.role in ("user", "assistant")]
        history = [plain_message(m) for m in getattr(brief, "history", None) or []]
        await self._send({
            "type": "start", "protocol_version": PROTOCOL_VERSION,
            "session_id": brief.session_id, "name": brief.name, "protocol": brief.protocol,
            "repeat": brief.repeat, "seed": brief.seed, "temperature": brief.temperature,
            "system_prompt": brief.system_prompt, "tools": brief.tools.specs,
            "prior": [m for m in prior if m is not None],
            "history": [m for m in history if m is not None] + self.transcript,
            "limits": {"max_steps": brief.max_steps, "turn_timeout_s": brief.turn_timeout_s,
                       # how much of a result a litellm: agent shows its model; only when set
                       **({"max_tool_result_chars": brief.max_tool_result_chars}
                          if brief.max_tool_result_chars is not None else {})},
        })

    async def _read_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        while chunk := await proc.stderr.read(65536):
            self._stderr += chunk
            if len(self._stderr) > STDERR_TAIL_BYTES:
                del self._stderr[:-STDERR_TAIL_BYTES]

    def stderr_tail(self, limit: int = ERROR_TAIL_CHARS) -> str:
        text = self._stderr.decode("utf-8", errors="replace").rstrip()
        return text[-limit:]

    async def _kill(self, sig: int = signal.SIGKILL) -> None:
        """Stop the harness: `sig` to its process group (it may have children), SIGKILL if a
        gentler `sig` has not worked within a second; then reap it and let go of its pipes."""
        proc = self.proc
        self.proc = None
        if proc is None:
            return
        signal_group(proc, sig)
        if sig != signal.SIGKILL and not await wait_exit(proc, 1.0):
            signal_group(proc, signal.SIGKILL)
        if not await wait_exit(proc, 10.0):
            log.warning("%s: pid %d survived SIGKILL", self.agent.name, proc.pid)
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None
        await self._stderr_done()
        # A grandchild that left the group may hold the pipes open, and asyncio closes the
        # transport only once they are: close our ends (asyncio has no public call for it).
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()

    async def _stderr_done(self) -> None:
        task = self._stderr_task
        if task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(task), 1.0)
            except Exception:
                task.cancel()

    async def _exited(self, what: str) -> HarnessError:
        """The error for a harness that stopped talking, with its exit status."""
        proc = self.proc
        status = "closed its stdout"
        if proc is not None and await wait_exit(proc, 2.0):
            code = proc.returncode or 0
            status = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        return HarnessError(f"the harness {status} {what}")

    # ------------------------------------------------------------------ lines

    async def _send(self, obj: dict[str, Any]) -> None:
        proc = self.proc
        if proc is None or proc.stdin is None:
            raise HarnessError("the harness is not running")
        data = json.dumps(obj, ensure_ascii=False, default=str) + "\n"
        try:
            proc.stdin.write(data.encode("utf-8"))
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise await self._exited(f"before reading the `{obj['type']}` message") from None

    async def _receive(self) -> dict[str, Any]:
        """The next protocol message from stdout."""
        proc = self.proc
        if proc is None or proc.stdout is None:
            raise HarnessError("the harness is not running")
        while True:
            try:
                raw = await proc.stdout.readline()
            except ValueError:  # asyncio's LimitOverrunError, re-raised by readline
                raise HarnessError(f"the harness wrote a stdout line longer than "
                                   f"{self.agent.max_line_bytes} bytes") from None
            if not raw:
                raise await self._exited("before answering")
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise HarnessError("the harness wrote a stdout line that is not UTF-8: "
                                   f"{_clip(repr(raw))}") from None
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise HarnessError(
                    f"the harness wrote a stdout line that is not JSON ({exc.msg}, column "
                    f"{exc.colno}): {_clip(line.rstrip())!r}. stdout is for protocol messages "
                    "only: write logs to stderr or as {\"type\": \"log\", \"message\": …}"
                ) from None
            if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
                raise HarnessError("every stdout line must be a JSON object with a string "
                                   f"`type`; got {_clip(line.rstrip())!r}")
            return obj

    # ------------------------------------------------------------------ turns

    def _turn_number(self) -> int:
        turn = getattr(self.brief.tools, "turn", None)
        return turn if isinstance(turn, int) and turn > 0 else self.turns

    async def turn(self, message: str | None, event: dict[str, Any] | None) -> AgentReply:
        self.turns += 1
        state = _Turn(self._turn_number())
        if self.dead is not None:
            return state.reply(stop="error", error=self.dead)
        text = message if message is not None else render_event(event)
        try:
            async with asyncio.timeout(self.brief.turn_timeout_s):
                if self.proc is None:  # killed by an earlier timeout: start afresh
                    await self.launch()
                self.transcript.append({"role": "user", "content": text})
                if message is not None:
                    await self._send({"type": "user", "content": message})
                else:
                    await self._send({"type": "event", "event": event or {}})
                return await self._converse(state)
        except TimeoutError:
            log.warning("%s: turn %d timed out after %g s; killing the harness", self.agent.name,
                        state.number, self.brief.turn_timeout_s)
            await self._kill()
            return state.reply(stop="timeout")
        except HarnessError as exc:
            await self._kill()  # first, so that the stderr tail is complete
            tail = self.stderr_tail()
            self.dead = f"{exc}; stderr (last lines):\n{tail}" if tail else str(exc)
            return state.reply(stop="error", error=self.dead)

    async def _converse(self, state: _Turn) -> AgentReply:
        while True:
            msg = await self._receive()
            kind = msg["type"]
            if kind == "tool_call":
                await self._tool_call(msg, state)
            elif kind == "assistant":
                content = msg.get("content")
                compactions = msg.get("compactions", 0)
                if not isinstance(content, str):
                    raise HarnessError("`assistant` needs `content`, a string")
                if not isinstance(compactions, int) or compactions < 0:
                    raise HarnessError("`compactions` must be a non-negative integer")
                self.transcript.append({"role": "assistant", "content": content})
                state.messages.append(Message("assistant", content, state.number))
                return state.reply(content, compactions=compactions)
            elif not self._side_message(msg, state.number):
                raise HarnessError(f"unknown message type `{_clip(kind, 80)}` (expected "
                                   "tool_call, assistant, llm_call or log; protocol version "
                                   f"{PROTOCOL_VERSION})")

    def _side_message(self, msg: dict[str, Any], turn: int) -> bool:
        """Handle `llm_call` and `log`, which may come at any time; False for other types."""
        if msg["type"] == "log":
            line = str(msg.get("message", ""))[:LOG_LINE_CHARS]
            self.logs.append(line)
            log.debug("%s: %s", self.agent.name, line)
            return True
        if msg["type"] == "llm_call":
            record = _llm_record(msg, turn)
            self.calls.append(record)
            if self.recorder is not None:
                self.recorder(record)
            return True
        return False

    async def _tool_call(self, msg: dict[str, Any], state: _Turn) -> None:
        name = msg.get("name")
        if not isinstance(name, str) or not name:
            raise HarnessError("`tool_call` needs `name`, a string")
        call_id = str(msg.get("id") or f"call-{state.number}-{len(state.records) + 1}")
        args: Any = msg.get("arguments", {})
        if isinstance(args, str):  # OpenAI-style JSON text is accepted too
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError as exc:
                args = exc
        if not isinstance(args, dict):
            await self._send({"type": "tool_result", "id": call_id, "result": None,
                              "error": "`arguments` must be a JSON object; the call was not "
                                       "executed"})
            return
        if len(state.records) >= self.brief.max_steps:
            state.refused += 1
            await self._send({"type": "tool_result", "id": call_id, "result": None,
                              "error": f"step budget spent ({self.brief.max_steps} tool calls "
                                       "this turn); the call was not executed: answer now"})
            return
        tools = self.brief.tools
        if hasattr(tools, "step"):
            tools.step = len(state.records) + 1
        record = await tools.call(name, args, call_id)
        state.records.append(record)
        state.messages.extend(tool_call_messages(record, state.number))
        await self._send({"type": "tool_result", "id": call_id, "result": record.result,
                          "error": record.error})

    # ------------------------------------------------------------------ shutdown

    async def close(self) -> None:
        """Send `end`, give the harness `close_grace_s` to finish (its late `llm_call` and `log`
        lines are kept), then terminate, kill and reap it."""
        if self._closed:
            return
        self._closed = True
        proc = self.proc
        if proc is None:
            await self._stderr_done()
            return
        try:
            async with asyncio.timeout(self.agent.close_grace_s):
                with contextlib.suppress(HarnessError):
                    await self._send({"type": "end"})
                if proc.stdin is not None:
                    proc.stdin.close()
                await self._drain(proc)
                await wait_exit(proc, self.agent.close_grace_s)
        except TimeoutError:
            log.info("%s: the harness did not exit within %g s of `end`; terminating it",
                     self.agent.name, self.agent.close_grace_s)
        finally:
            await self._kill(signal.SIGTERM)

    async def _drain(self, proc: asyncio.subprocess.Process) -> None:
        """Read stdout to its end after `end`, keeping `llm_call` and `log` lines."""
        assert proc.stdout is not None
        turn = self._turn_number()
        while True:
            try:
                raw = await proc.stdout.readline()
            except ValueError:
                return
            if not raw:
                return
            try:
                msg = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(msg, dict) and isinstance(msg.get("type"), str):
                with contextlib.suppress(HarnessError):
                    self._side_message(msg, turn)


REAPER = str(Path(__file__).with_name("reaper.py"))


async def spawn_group(argv: list[str], cwd: str | None, env: dict[str, str], limit: int
                      ) -> tuple[asyncio.subprocess.Process, int]:
    """Start `argv` under `reaper.py`, the leader of a new process group, with piped stdio.
    Returns the process (the reaper: signalling its group reaches the harness) and the write
    end of its lifeline, which the caller closes once the process is dead; if this process
    dies first, the kernel closes it and the reaper kills the group."""
    if shutil.which(argv[0], path=env.get("PATH")) is None:  # the reaper would only exit 127
        raise HarnessError(f"cannot start `{argv[0]}`: no such executable file")
    read, write = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-S", REAPER, str(read), "--", *argv,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=cwd, env=env, limit=limit,
            start_new_session=True, pass_fds=(read,))
    except OSError as exc:
        os.close(write)
        raise HarnessError(f"cannot start `{argv[0]}`: {exc.strerror or exc}") from None
    finally:
        os.close(read)
    return proc, write


def _llm_record(msg: dict[str, Any], turn: int) -> LLMCallRecord:
    """An `llm_call` line as an `LLMCallRecord` (role `agent`, purpose `harness`)."""

    def count(key: str) -> int:
        value = msg.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or \
                not 0 <= value <= MAX_TOKENS_PER_CALL:
            raise HarnessError(f"`llm_call.{key}` must be an integer from 0 to "
                               f"{MAX_TOKENS_PER_CALL:,}, got {value!r:.40}")
        return value

    def number(key: str, default: float | None, most: float) -> float | None:
        value = msg.get(key, default)
        if value is None:
            return None
        if not isinstance(value, int | float) or isinstance(value, bool) or \
                not 0 <= value <= most:  # also refuses nan and inf
            raise HarnessError(f"`llm_call.{key}` must be a number from 0 to {most:g}, "
                               f"got {value!r:.40}")
        return float(value)

    latency = number("latency_s", 0.0, MAX_LATENCY_S) or 0.0
    error = msg.get("error")
    return LLMCallRecord(
        role="agent", model=str(msg.get("model") or "unknown"),
        prompt_hash=str(msg.get("prompt_hash") or ""), prompt_tokens=count("prompt_tokens"),
        completion_tokens=count("completion_tokens"), cost=number("cost", None, MAX_COST_PER_CALL),
        latency_s=latency, cache_hit=bool(msg.get("cache_hit", False)),
        error=None if error is None else str(error), attempts=1,
        started_at=time.time() - latency, turn=turn, purpose="harness")


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more]"
