"""A `cmd2:` harness built on a real agent framework, pydantic-ai: the worked example of how a
harness finds the session's tools (MCP) and its model (the recording proxy).

    pip install "pydantic-ai-slim[openai,mcp]"
    bench run build/ --agent "cmd2:--model openai/gpt-4o-mini python -m benchpack.runtime.agents.example_harness_pydantic_ai"

One process per turn (protocol v2). From `$BENCHPACK_CONFIG` it takes the turn, the
conversation so far, the system prompt, and:

- `mcp`: the session's tools. `url` is the streamable HTTP endpoint; with
  `cmd2:--mcp-transport stdio …` it launches `command`/`args` instead (a bridge to the same
  server). Every call is validated and recorded by benchpack, like a built-in agent's.
- `model`: `base_url` and `api_key` of the recording proxy (also in `OPENAI_BASE_URL` /
  `OPENAI_API_KEY`): benchpack records every call's tokens, whatever the harness reports.

The answer goes to stdout; logs and errors to stderr (a non-zero exit is the turn's error).
The contract is in runtime/README.md, "The cmd2: protocol, version 2".
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any


def toolset(mcp: dict[str, Any] | None) -> list[Any]:
    """The session's MCP server as a pydantic-ai toolset (none without `mcp`)."""
    if not mcp:
        return []
    from pydantic_ai.mcp import MCPToolset

    # 'failed': a tool error goes back to the model as the tool's result, as benchpack's own
    # agent does; pydantic-ai's default ('retry') would wrap it in retry instructions
    if mcp.get("command"):
        from fastmcp.client.transports import StdioTransport

        transport: Any = StdioTransport(command=mcp["command"], args=list(mcp.get("args", [])))
        return [MCPToolset(transport, tool_error_behavior="failed")]
    return [MCPToolset(mcp["url"], tool_error_behavior="failed")]


def history(config: dict[str, Any]) -> list[Any]:
    """Earlier sessions and this session's earlier turns, as pydantic-ai messages."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    out: list[Any] = []
    for m in config["prior"] + config["history"]:
        if m["role"] == "user":
            out.append(ModelRequest(parts=[UserPromptPart(content=m["content"])]))
        elif m["role"] == "assistant":
            out.append(ModelResponse(parts=[TextPart(content=m["content"] or "")]))
    return out


async def turn(config: dict[str, Any]) -> str:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    endpoint = config["model"]
    # the name only matters without `cmd2:--model` (then it is the litellm model name)
    model = OpenAIChatModel(endpoint["name"] or "openai/gpt-4o-mini", provider=OpenAIProvider(
        base_url=endpoint["base_url"], api_key=endpoint["api_key"]))
    agent = Agent(model, instructions=config["system_prompt"] or None,
                  toolsets=toolset(config.get("mcp")),
                  model_settings={"temperature": config["temperature"]}
                  if config.get("temperature") is not None else None)
    # benchpack refuses tool calls past the step budget; this bounds the model calls too
    limits = UsageLimits(request_limit=int(config["limits"]["max_steps"]) + 1)
    async with agent:  # connects to the MCP server once for the whole turn
        result = await agent.run(config["user"]["content"], message_history=history(config),
                                 usage_limits=limits)
    return str(result.output)


def main() -> int:
    with open(os.environ["BENCHPACK_CONFIG"], encoding="utf-8") as f:
        config: dict[str, Any] = json.load(f)
    try:
        answer = asyncio.run(turn(config))
    except Exception as exc:  # one line on stderr: benchpack quotes it as the turn's error
        print(f"pydantic-ai harness: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
