"""A minimal `cmd:` harness (protocol v1, stdlib only): copy it and put your agent in `answer`.

    bench run build/ --agent "cmd:python -m benchpack.runtime.agents.example_harness"

Each turn it lists the workspace (if `list_files` is offered) and says what it found. The
protocol is described in runtime/README.md, "Agent adapters".
"""

import json
import sys
from typing import Any


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()  # one line per message, flushed, or the runtime waits for it


def receive() -> dict[str, Any] | None:
    line = sys.stdin.readline()
    if not line:
        return None  # EOF: the runtime has gone, so stop
    message: dict[str, Any] = json.loads(line)
    return message


def answer(request: str, tools: list[str]) -> str:
    if "list_files" not in tools:
        return f"You said: {request}"
    send({"type": "tool_call", "id": "c1", "name": "list_files", "arguments": {"path": "."}})
    result = receive()  # {"type": "tool_result", "id": "c1", "result": …, "error": …}
    if result is None or result["error"]:
        return "I could not list your files."
    send({"type": "log", "message": "listed the workspace"})
    return f"About “{request[:60]}”: your workspace holds {json.dumps(result['result'])}."


def main() -> None:
    tools: list[str] = []
    while (message := receive()) is not None:
        if message["type"] == "start":
            tools = [spec["function"]["name"] for spec in message["tools"]]
        elif message["type"] in ("user", "event"):
            request = message.get("content") or json.dumps(message.get("event"))
            text = answer(request, tools)
            # A real agent reports each model call so its tokens count in `llm_calls`:
            # send({"type": "llm_call", "model": "my-model", "prompt_tokens": 812,
            #       "completion_tokens": 64, "cost": 0.0012, "latency_s": 1.4})
            send({"type": "assistant", "content": text})
        elif message["type"] == "end":
            break


if __name__ == "__main__":
    main()
