"""An ACP agent for tests/runtime/test_harness_output.py that mixes its own chatter into the
message stream, as Codex's ACP adapter does: per prompt a thought chunk, a warning sent as an
ordinary `agent_message_chunk`, then the model's reply (one call through the proxy in
`OPENAI_BASE_URL`, unless the prompt says NOMODEL) streamed 5 characters a chunk. CRASH: a
multi-line Python traceback on stderr, then exit 2."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from acp import PROTOCOL_VERSION, run_agent, text_block, update_agent_message
from acp.schema import (
    AgentCapabilities,
    AgentThoughtChunk,
    InitializeResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptResponse,
)

WARNING = "Model metadata for `x` not found. Defaulting to fallback metadata."


class NoticeAgent:
    conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=
                                  AgentCapabilities(mcp_capabilities=McpCapabilities(http=True)))

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any
                          ) -> NewSessionResponse:
        return NewSessionResponse(session_id="notice-1")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        text = getattr(prompt[-1], "text", "")
        if "CRASH" in text:
            frames = "".join(f'  File "/agent/step_{i}.py", line {i}, in step_{i}\n'
                             f"    return step_{i + 1}(state)\n" for i in range(60))
            sys.stderr.write("starting\n" * 400 + "Traceback (most recent call last):\n" +
                             frames + "KeyError: 'model'\nthe agent could not start\n")
            sys.stderr.flush()
            os._exit(2)
        await self.conn.session_update(session_id, AgentThoughtChunk(
            session_update="agent_thought_chunk", content=text_block("Let me think: 先查日志.")))
        await self.conn.session_update(session_id, update_agent_message(text_block(WARNING)))
        if "NOMODEL" in text:
            reply = "No model this time."
        else:
            from openai import AsyncOpenAI

            client = AsyncOpenAI(max_retries=0)
            out = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": text}])
            reply = out.choices[0].message.content or ""
        for i in range(0, len(reply), 5):
            await self.conn.session_update(session_id, update_agent_message(
                text_block(reply[i:i + 5])))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(NoticeAgent()))
