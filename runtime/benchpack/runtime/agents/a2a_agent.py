"""`a2a:[--model M] [--no-mcp] <agent URL>`: the agent under test is an A2A server (issue 26),
reached with the official `a2a-sdk` client (its agent card read from
`<URL>/.well-known/agent-card.json`).

- One A2A task per session × repeat, in a context of its own: the first turn's message opens
  it; a later turn continues it while the agent waits for input (`input-required`), otherwise
  starts the next task in the same context. Each turn is one `SendMessage` (non-streaming).
- The message carries, in `metadata.benchpack`, what the agent needs to work in the benchmark:
  `mcp` (`url`, `transport`: the session's tools over MCP, served per session as for `cmd2:`),
  `model` (`base_url`, `api_key`, `name`: the recording proxy, so its model calls are recorded
  when it uses them), `session_id`, `turn`, `system_prompt` (on the first turn), `tools`
  (their specs, for reference).
- The answer is the text of the artifacts the turn produced (text parts, in order), or, when it
  produced none, the text of the agent's reply message or the task's status message. A task
  that ends `failed` or `rejected` is the agent's error, its status message quoted whole;
  `canceled` too. A turn past `turn_timeout_s` is cancelled (`CancelTask`) and ends `timeout`.
- Tool calls made over MCP are the toolbox's records, as with `cmd2:`/`acp:`.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..types import AgentReply, LLMCallRecord, Message, SessionBrief
from . import render_event, tool_call_messages
from .proxied import ProxiedAdapter

if TYPE_CHECKING:
    from ..llm import LLMClient
    from .registry import AgentContext

USAGE = "a2a:[--model MODEL] [--no-mcp] <agent URL>"
FAILED = {"TASK_STATE_FAILED": "failed", "TASK_STATE_REJECTED": "rejected",
          "TASK_STATE_CANCELED": "canceled", "TASK_STATE_AUTH_REQUIRED": "auth-required"}
"""Task states that end a turn as the agent's error."""


@dataclass(frozen=True)
class A2aOptions:
    url: str
    model: str | None = None
    mcp: bool = True


def parse_argument(argument: str) -> A2aOptions:
    """`[--model M] [--no-mcp] <url>` → options; ValueError (one line) on a mistake."""
    try:
        words = shlex.split(argument)
    except ValueError as exc:
        raise ValueError(f"a2a: cannot split `{argument}`: {exc} ({USAGE})") from None
    model: str | None = None
    mcp = True
    while words and words[0].startswith("--"):
        word = words.pop(0)
        if word == "--model":
            if not words:
                raise ValueError(f"a2a: --model needs a value ({USAGE})")
            model = words.pop(0)
        elif word == "--no-mcp":
            mcp = False
        else:
            raise ValueError(f"a2a: unknown option `{word}` ({USAGE})")
    if len(words) != 1 or not words[0].startswith(("http://", "https://")):
        raise ValueError(f"a2a: needs one agent URL, http(s)://… ({USAGE}; e.g. "
                         "a2a:http://127.0.0.1:9999)")
    return A2aOptions(url=words[0].rstrip("/"), model=model, mcp=mcp)


def make_adapter(argument: str, context: AgentContext) -> A2aAgent:
    """Registry factory of `a2a:<options> <url>`."""
    try:
        import a2a.client  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"a2a: needs the A2A SDK ({exc}) (hint: pip install "
                         "'a2a-sdk[http-server]')") from None
    try:
        options = parse_argument(argument)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return A2aAgent(options, llm=context.llm)


class A2aAgent(ProxiedAdapter):
    """See the module docstring."""

    def __init__(self, options: A2aOptions, *, llm: Callable[[], LLMClient]) -> None:
        self.options = options
        self.llm = llm
        self.proxy_model = options.model
        self.name = f"a2a:{options.url}"
        self._client: Any = None
        self._http: Any = None
        self._client_lock = asyncio.Lock()

    async def client(self) -> Any:
        """The A2A client, made once per run from the agent's card."""
        async with self._client_lock:
            if self._client is None:
                import httpx
                from a2a.client import ClientConfig, create_client

                self._http = httpx.AsyncClient(timeout=None)
                try:
                    self._client = await create_client(self.options.url, client_config=
                                                       ClientConfig(streaming=False,
                                                                    httpx_client=self._http))
                except Exception as exc:
                    await self._http.aclose()
                    self._http = None
                    raise UsageError(f"a2a: no A2A agent at {self.options.url}: "
                                     f"{_describe(exc)} (hint: is it running? its card must "
                                     "be at /.well-known/agent-card.json)") from None
            return self._client

    async def open(self, brief: SessionBrief) -> A2aSession:
        return await self._opened(A2aSession(self, brief))

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        await super().aclose()


class A2aSession:
    """One session × repeat: its A2A context and task, MCP server and proxy route."""

    def __init__(self, agent: A2aAgent, brief: SessionBrief) -> None:
        self.agent = agent
        self.brief = brief
        self.route: Any = None
        self.mcp: Any = None
        self.context_id = str(uuid.uuid4())
        self.task_id: str | None = None
        self.waiting = False
        """The task waits for our next message (`input-required`)."""
        self.seen: set[str] = set()
        """Artifact ids already answered."""
        self.turns = 0

    def _turn_number(self) -> int:
        turn = getattr(self.brief.tools, "turn", None)
        return turn if isinstance(turn, int) and turn > 0 else self.turns

    def _record(self, record: LLMCallRecord) -> None:
        if self.brief.recorder is not None:
            self.brief.recorder(record)

    async def setup(self) -> None:
        from ..mcp import start_mcp_server

        await self.agent.client()
        proxy = await self.agent.proxy()
        self.route = proxy.open_session(recorder=self._record, turn=self._turn_number,
                                        seed=self.brief.seed, repeat=self.brief.repeat)
        if self.agent.options.mcp:
            self.mcp = await start_mcp_server(self.brief.tools, max_steps=self.brief.max_steps,
                                              result_chars=self.brief.max_tool_result_chars)

    def _metadata(self, number: int) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "session_id": self.brief.session_id, "repeat": self.brief.repeat, "turn": number,
            "mcp": {"url": str(self.mcp.url), "transport": "http"} if self.mcp else None,
            "model": {"base_url": self.route.base_url, "api_key": self.route.api_key,
                      "name": self.agent.options.model or ""},
            "tools": getattr(self.brief.tools, "specs", []),
        }
        if self.turns == 1:
            meta["system_prompt"] = self.brief.system_prompt
        return {"benchpack": json.loads(json.dumps(meta, default=str))}

    async def turn(self, message: str | None, event: dict[str, Any] | None) -> AgentReply:
        from a2a.helpers import new_text_message
        from a2a.types import Role, SendMessageRequest

        self.turns += 1
        number = self._turn_number()
        records = getattr(self.brief.tools, "records", None)
        before = len(records) if isinstance(records, list) else 0

        def reply(answer: str = "", stop: Any = "answer", error: str | None = None
                  ) -> AgentReply:
            made = list(records[before:]) if isinstance(records, list) else []
            refused = getattr(self.mcp, "refused", None)
            if stop == "answer" and refused is not None and refused(number):
                stop = "step_budget"
            msgs = [m for r in made for m in tool_call_messages(r, number)]
            if stop in ("answer", "step_budget") or answer:
                msgs.append(Message("assistant", answer, number))
            return AgentReply(text=answer, tool_records=made, messages=msgs,
                              steps=len(made) + 1, stop_reason=stop, error=error)

        text = message if message is not None else render_event(event)
        msg = new_text_message(text, context_id=self.context_id,
                               task_id=self.task_id if self.waiting else None,
                               role=Role.ROLE_USER)
        msg.metadata.update(self._metadata(number))
        client = await self.agent.client()
        try:
            async with asyncio.timeout(self.brief.turn_timeout_s):
                last: Any = None
                async for response in client.send_message(SendMessageRequest(message=msg)):
                    last = response
        except TimeoutError:
            await self._cancel(client)
            return reply(stop="timeout")
        except Exception as exc:
            return reply(stop="error", error=f"the A2A agent failed: {_describe(exc)}")
        if last is None:
            return reply(stop="error", error="the A2A agent sent no answer")
        if last.HasField("message"):
            self.waiting = False
            return reply(_text(last.message.parts))
        return self._task_reply(last.task, reply)

    def _task_reply(self, task: Any, reply: Callable[..., AgentReply]) -> AgentReply:
        from a2a.types import TaskState

        self.task_id = task.id
        state = TaskState.Name(task.status.state)
        self.waiting = state == "TASK_STATE_INPUT_REQUIRED"
        new = [a for a in task.artifacts if a.artifact_id not in self.seen]
        self.seen.update(a.artifact_id for a in new)
        status_text = _text(task.status.message.parts) if task.status.HasField("message") \
            else ""
        if state in FAILED:
            self.task_id, self.waiting = None, False
            return reply(stop="error", error=f"the A2A task ended {FAILED[state]}" +
                         (f":\n{status_text}" if status_text else ""))
        answer = "\n".join(t for a in new if (t := _text(a.parts))) or status_text
        if state not in ("TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED"):
            # still working after a blocking send: what it has so far, marked
            return reply(answer, stop="error",
                         error=f"the A2A task is still {state.removeprefix('TASK_STATE_')}"
                         .lower())
        return reply(answer)

    async def _cancel(self, client: Any) -> None:
        from a2a.types import CancelTaskRequest

        if self.task_id is not None:
            try:
                async with asyncio.timeout(5.0):
                    await client.cancel_task(CancelTaskRequest(id=self.task_id))
            except Exception:  # already ended, or the agent is gone: nothing to cancel
                pass
        self.task_id, self.waiting = None, False

    async def close(self) -> None:
        if self.waiting and self.task_id is not None and self.agent._client is not None:
            await self._cancel(self.agent._client)
        if self.mcp is not None:
            mcp, self.mcp = self.mcp, None
            await mcp.close()
        if self.route is not None:
            route, self.route = self.route, None
            if self.agent._proxy is not None:
                self.agent._proxy.close_session(route)


def _text(parts: Any) -> str:
    return "".join(p.text for p in parts if p.HasField("text")).strip()


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


__all__ = ["A2aAgent", "A2aOptions", "A2aSession", "make_adapter", "parse_argument"]
