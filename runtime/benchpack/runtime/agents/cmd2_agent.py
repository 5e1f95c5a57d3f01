"""`cmd2:<command>`: a real harness (a CLI agent) run once per turn — protocol version 2.

No relay: the harness gets the user's turn, its workspace, the session's tools (over MCP, when
the runtime serves them) and a model endpoint (the recording proxy, `proxy.py`) through
environment variables and a JSON config file, and answers on stdout. The contract is in
`runtime/README.md`, "The `cmd2:` protocol, version 2"; `example_harness_v2.py` is a working
minimum. Decisions:

- One process per turn, in the workspace, under `reaper.py` (its process group dies with the
  turn, with the runner, or on timeout). The user's message is on stdin (then EOF), in
  `BENCHPACK_USER_MESSAGE` (when under 100 KB) and in the config file.
- The answer is stdout, UTF-8, surrounding whitespace stripped. A non-zero exit is an agent
  error (exit code and stderr tail); a turn past `turn_timeout_s` is killed (`timeout`).
- Isolation (`isolation.py`): HOME, XDG and TMPDIR are fresh per session × repeat and kept
  across the session's turns (a harness's own memory of this conversation), the environment
  scrubbed of credentials except `--pass-env` names. The model endpoint replaces the key.
- Tokens: every call through the proxy is recorded (role `agent`, purpose `proxy`) in the
  session and turn that made it; nothing is taken from the harness's word.
- MCP: `cmd2:` serves each session's toolbox over MCP (`mcp_factory`, `--no-mcp` turns it
  off), started with the session and closed with it, on every exit path. The harness finds it
  three ways: `BENCHPACK_MCP_URL`, the config's `mcp`, and a ready `mcpServers` file
  (`BENCHPACK_MCP_CONFIG`) — by URL, or with `--mcp-transport stdio` by the bridge's command.
  `Cmd2Agent(mcp=…)` takes any async factory `(brief) -> endpoint` with `url` (and optionally
  `transport`, `close()`, `harness_config()`, `refused(turn)`). Tool calls made over MCP land in
  `brief.tools.records`; a turn's reply carries the ones made during it. The step budget is the
  `cmd:` adapter's: `max_steps` tool calls per turn, later ones refused (an MCP tool error, not
  run, not recorded) and the turn ends as `step_budget`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import shlex
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import UsageError
from ..types import AgentReply, Message, SessionBrief
from . import render_event
from .cmd_agent import (
    MAX_LINE_BYTES,
    STDERR_TAIL_BYTES,
    HarnessError,
    spawn_group,
)
from .harness_output import ERROR_QUOTE_CHARS, failure_detail
from .harness_process import anchor_paths, plain_message, signal_group, wait_exit, workspace_of
from .isolation import Isolation, check_pass_env
from .proxied import ProxiedAdapter, check_executable

if TYPE_CHECKING:
    from ..llm import LLMClient
    from .registry import AgentContext

PROTOCOL_VERSION = 2
ENV_MESSAGE_MAX = 100_000
"""Longest user message also put in `BENCHPACK_USER_MESSAGE` (Linux caps one variable at
128 KiB); longer ones are in the file and on stdin only."""
MAX_ANSWER_BYTES = MAX_LINE_BYTES
USAGE = ("cmd2:[--model MODEL] [--pass-env NAME]… [--no-mcp | --mcp-transport http|stdio] "
         "<command>, e.g. cmd2:--model openai/gpt-4o-mini python my_harness.py")
MCP_TRANSPORTS = ("http", "stdio")

McpFactory = Callable[[SessionBrief], Awaitable[Any]]


class Cmd2Options(NamedTuple):
    model: str | None
    pass_env: list[str]
    command: str
    mcp: str | None = "http"
    """The MCP transport the harness is given (`http`, `stdio`), None with `--no-mcp`."""


def parse_argument(argument: str) -> Cmd2Options:
    """`[--model M] [--pass-env NAME]… [--no-mcp | --mcp-transport T] [--] command…`."""
    try:
        words = shlex.split(argument)
    except ValueError as exc:
        raise UsageError(f"cmd2:{argument}: cannot split the command line ({exc})") from None
    model: str | None = None
    keep: list[str] = []
    transport: str | None = "http"
    no_mcp = chosen = False
    while words and words[0].startswith("--"):
        word = words.pop(0)
        if word == "--":
            break
        name, eq, value = word.partition("=")
        if name == "--no-mcp":
            if eq:
                raise UsageError(f"cmd2: `--no-mcp` takes no value (use {USAGE})")
            no_mcp = True
            continue
        if name not in ("--model", "--pass-env", "--mcp-transport"):
            raise UsageError(f"cmd2: unknown option `{name}` (use {USAGE})")
        if not eq:
            if not words:
                raise UsageError(f"cmd2: `{name}` needs a value (use {USAGE})")
            value = words.pop(0)
        if name == "--model":
            model = value
        elif name == "--mcp-transport":
            if value not in MCP_TRANSPORTS:
                raise UsageError(f"cmd2: `--mcp-transport {value}`: use http or stdio")
            transport, chosen = value, True
        else:
            keep.extend(check_pass_env([value]))
    if no_mcp and chosen:
        raise UsageError("cmd2: `--no-mcp` and `--mcp-transport` contradict each other "
                         "(keep one)")
    if not words:
        raise UsageError(f"cmd2: needs a command ({USAGE})")
    return Cmd2Options(model, keep, shlex.join(words), None if no_mcp else transport)


def mcp_factory(transport: str = "http") -> McpFactory:
    """The default per-session MCP server: the session's toolbox, its step budget enforced."""
    async def start(brief: SessionBrief) -> Any:
        from ..mcp import start_mcp_server

        return await start_mcp_server(brief.tools, transport,  # type: ignore[arg-type]
                                      max_steps=brief.max_steps,
                                      result_chars=brief.max_tool_result_chars)
    return start


def make_adapter(argument: str, context: AgentContext) -> Cmd2Agent:
    """Registry factory of `cmd2:<options and command>`."""
    opts = parse_argument(argument)
    return Cmd2Agent(opts.command, llm=context.llm, model=opts.model, pass_env=opts.pass_env,
                     mcp=mcp_factory(opts.mcp) if opts.mcp else None, uri=f"cmd2:{argument}")


class Cmd2Agent(ProxiedAdapter):
    """See the module docstring. `llm` builds the run's client (the proxy's upstream)."""

    def __init__(self, command: str, *, llm: Callable[[], LLMClient], model: str | None = None,
                 pass_env: list[str] | tuple[str, ...] = (), mcp: McpFactory | None = None,
                 uri: str | None = None) -> None:
        argv = shlex.split(command)
        if not argv:
            raise UsageError(f"cmd2: needs a command ({USAGE})")
        self.argv = anchor_paths(argv, Path.cwd())
        self.name = uri or f"cmd2:{command}"
        self.llm = llm
        self.model = model
        self.pass_env = list(pass_env)
        self.mcp = mcp
        self.proxy_model = model
        check_executable(self.argv, argv[0], self.name,
                         "cmd2:./my_harness or cmd2:python my_harness.py")

    async def open(self, brief: SessionBrief) -> Cmd2Session:
        return await self._opened(Cmd2Session(self, brief))


class Cmd2Session:
    """One session × repeat: its isolated directories, proxy route and MCP endpoint."""

    def __init__(self, agent: Cmd2Agent, brief: SessionBrief) -> None:
        self.agent = agent
        self.brief = brief
        self.iso = Isolation.create()
        self.route: Any = None
        self.mcp: Any = None
        self.turns = 0
        self.transcript: list[dict[str, str]] = []
        self.pids: list[int] = []
        self._proc: asyncio.subprocess.Process | None = None

    async def setup(self) -> None:
        proxy = await self.agent.proxy()
        self.route = proxy.open_session(recorder=self.brief.recorder or (lambda r: None),
                                        turn=self._turn_number, seed=self.brief.seed,
                                        repeat=self.brief.repeat)
        if self.agent.mcp is not None:
            self.mcp = await self.agent.mcp(self.brief)
            self.mcp_config_path.write_text(
                json.dumps(self.mcp_servers(), ensure_ascii=False, indent=1), "utf-8")

    @property
    def mcp_config_path(self) -> Path:
        return self.iso.root / "mcp.json"

    def mcp_servers(self) -> dict[str, Any]:
        """The `mcpServers` file most harnesses read (Claude Code, Cursor, Gemini CLI)."""
        make = getattr(self.mcp, "harness_config", None)
        if make is not None:
            return dict(make())
        return {"mcpServers": {"benchpack": {"type": "http", "url": str(self.mcp.url)}}}

    def _turn_number(self) -> int:
        turn = getattr(self.brief.tools, "turn", None)
        return turn if isinstance(turn, int) and turn > 0 else self.turns

    # ------------------------------------------------------------------ the contract

    def config(self, text: str, event: dict[str, Any] | None, workspace: str | None
               ) -> dict[str, Any]:
        brief = self.brief
        prior = [p for m in brief.prior if (p := plain_message(m)) and p["role"] in ("user", "assistant")]
        history = [p for m in brief.history if (p := plain_message(m))] + self.transcript
        mcp: dict[str, Any] | None = None
        if self.mcp is not None:
            mcp = {"url": str(self.mcp.url),
                   "transport": str(getattr(self.mcp, "transport", "http")),
                   "config_file": str(self.mcp_config_path)}
            command = getattr(self.mcp, "stdio_command", None)
            if mcp["transport"] == "stdio" and command:
                mcp.update(command=command[0], args=list(command[1:]))
        return {
            "protocol_version": PROTOCOL_VERSION, "session_id": brief.session_id,
            "name": brief.name, "protocol": brief.protocol, "repeat": brief.repeat,
            "seed": brief.seed, "temperature": brief.temperature, "turn": self._turn_number(),
            "system_prompt": brief.system_prompt,
            "user": {"content": text, "event": event},
            "prior": prior, "history": history, "tools": brief.tools.specs,
            "workspace": workspace, "mcp": mcp,
            "model": {"base_url": self.route.base_url, "api_key": self.route.api_key,
                      "name": self.agent.model or ""},
            "limits": {"max_steps": brief.max_steps, "turn_timeout_s": brief.turn_timeout_s,
                       # how much of a result a litellm: agent shows its model; only when set
                       **({"max_tool_result_chars": brief.max_tool_result_chars}
                          if brief.max_tool_result_chars is not None else {})},
            "paths": {"home": str(self.iso.home), "tmp": str(self.iso.tmp)},
        }

    def environment(self, config: dict[str, Any], config_path: Path, message_path: Path,
                    text: str) -> dict[str, str]:
        env = self.iso.environment(os.environ, keep=self.agent.pass_env)
        model = config["model"]
        env.update({
            "BENCHPACK_PROTOCOL_VERSION": str(PROTOCOL_VERSION),
            "BENCHPACK_CONFIG": str(config_path),
            "BENCHPACK_SESSION_ID": self.brief.session_id,
            "BENCHPACK_REPEAT": str(self.brief.repeat),
            "BENCHPACK_TURN": str(config["turn"]),
            "BENCHPACK_WORKSPACE": config["workspace"] or "",
            "BENCHPACK_USER_MESSAGE_FILE": str(message_path),
            "BENCHPACK_MCP_URL": (config["mcp"] or {}).get("url", ""),
            "BENCHPACK_MCP_TRANSPORT": (config["mcp"] or {}).get("transport", ""),
            "BENCHPACK_MCP_CONFIG": (config["mcp"] or {}).get("config_file", ""),
            "BENCHPACK_MODEL": model["name"],
        })
        env.update(self.route.environment())
        if len(text.encode("utf-8")) <= ENV_MESSAGE_MAX:
            env["BENCHPACK_USER_MESSAGE"] = text
        return env

    # ------------------------------------------------------------------ turns

    async def turn(self, message: str | None, event: dict[str, Any] | None) -> AgentReply:
        self.turns += 1
        number = self._turn_number()
        tools = self.brief.tools
        records = getattr(tools, "records", None)
        before = len(records) if isinstance(records, list) else 0
        text = message if message is not None else render_event(event)
        workspace = workspace_of(self.brief)
        config = self.config(text, event, workspace)
        config_path = self.iso.root / "config.json"
        message_path = self.iso.root / "user_message.txt"
        config_path.write_text(json.dumps(config, ensure_ascii=False, indent=1), "utf-8")
        message_path.write_text(text, "utf-8")
        env = self.environment(config, config_path, message_path, text)

        def reply(answer: str = "", stop: Any = "answer", error: str | None = None
                  ) -> AgentReply:
            made = records[before:] if isinstance(records, list) else []
            refused = getattr(self.mcp, "refused", None)
            if stop == "answer" and refused is not None and refused(number):
                stop = "step_budget"
            msgs = [Message("assistant", answer, number)] if stop == "answer" else []
            return AgentReply(text=answer, tool_records=list(made), messages=msgs,
                              steps=len(made) + 1, stop_reason=stop, error=error)

        try:
            answer = await self._run(env, workspace, text)
        except TimeoutError:
            return reply(stop="timeout")
        except HarnessError as exc:
            return reply(stop="error", error=str(exc))
        self.transcript += [{"role": "user", "content": text},
                            {"role": "assistant", "content": answer}]
        return reply(answer)

    async def _run(self, env: dict[str, str], cwd: str | None, text: str) -> str:
        proc, lifeline = await spawn_group(self.agent.argv, cwd, env, MAX_LINE_BYTES)
        self._proc = proc
        self.pids.append(proc.pid)
        try:
            async with asyncio.timeout(self.brief.turn_timeout_s):
                out, err = await _communicate(proc, text.encode("utf-8"))
            code = proc.returncode or 0
            if code != 0:
                what = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
                raise HarnessError(f"the harness {what}" + failure_detail(
                    err.decode("utf-8", "replace"),
                    out[-ERROR_QUOTE_CHARS * 4:].decode("utf-8", "replace")))
            try:
                return out.decode("utf-8").strip()
            except UnicodeDecodeError:
                raise HarnessError("the harness's answer (stdout) is not UTF-8") from None
        finally:
            signal_group(proc, 9)
            await wait_exit(proc, 10.0)
            with contextlib.suppress(OSError):
                os.close(lifeline)
            self._proc = None

    async def close(self) -> None:
        proc = self._proc
        if proc is not None:  # a turn cancelled mid-flight (Ctrl-C): its finally kills it too
            signal_group(proc, 9)
        if self.route is not None:
            with contextlib.suppress(Exception):
                (await self.agent.proxy()).close_session(self.route)
            self.route = None
        mcp, self.mcp = self.mcp, None
        try:
            if mcp is not None:
                closing = getattr(mcp, "close", None) or getattr(mcp, "aclose", None)
                if closing is not None:
                    result = closing()
                    if inspect.isawaitable(result):
                        await result
        finally:
            self.iso.close()


async def _communicate(proc: asyncio.subprocess.Process, data: bytes) -> tuple[bytes, bytes]:
    """`communicate`, with stdout capped at `MAX_ANSWER_BYTES` and stderr at its tail."""
    assert proc.stdin and proc.stdout and proc.stderr
    out = bytearray()
    err = bytearray()

    async def feed() -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(data)  # type: ignore[union-attr]
            await proc.stdin.drain()  # type: ignore[union-attr]
        proc.stdin.close()  # type: ignore[union-attr]

    async def read_err() -> None:
        while chunk := await proc.stderr.read(65536):  # type: ignore[union-attr]
            err.extend(chunk)
            if len(err) > STDERR_TAIL_BYTES:
                del err[:-STDERR_TAIL_BYTES]

    async def read_out() -> None:
        while chunk := await proc.stdout.read(65536):  # type: ignore[union-attr]
            out.extend(chunk)
            if len(out) > MAX_ANSWER_BYTES:
                raise HarnessError(f"the harness's answer is longer than {MAX_ANSWER_BYTES} "
                                   "bytes")

    await asyncio.gather(feed(), read_err(), read_out())
    await proc.wait()
    return bytes(out), bytes(err)
