"""A minimal `cmd2:` harness (protocol v2): one process per turn, the answer on stdout.

    bench run build/ --agent "cmd2:--model openai/gpt-4o-mini python -m benchpack.runtime.agents.example_harness_v2"

It reads the turn from `$BENCHPACK_CONFIG` (the JSON config file) and asks the model through
the recording proxy (`OPENAI_BASE_URL` / `OPENAI_API_KEY` are already set to it, so the
`openai` client needs no arguments); benchpack records the tokens. Without `--model` it
answers without a model. A real harness would also connect to `$BENCHPACK_MCP_URL` (the
session's tools over MCP, when served) and keep its memory under `$HOME`, which is fresh per
session × repeat. The contract is in runtime/README.md, "The cmd2: protocol, version 2".
"""

import json
import os
import sys
from typing import Any


def main() -> int:
    with open(os.environ["BENCHPACK_CONFIG"], encoding="utf-8") as f:
        config: dict[str, Any] = json.load(f)
    request = config["user"]["content"]
    model = config["model"]["name"]
    if not model:  # no --model: show the contract without calling one
        print(f"You said: {request}")
        return 0
    from openai import OpenAI

    client = OpenAI()  # base URL and key from the environment: the proxy
    messages: Any = [{"role": "system", "content": config["system_prompt"]}] \
        if config["system_prompt"] else []
    messages += [{"role": m["role"], "content": m["content"]}
                 for m in config["prior"] + config["history"]]
    messages.append({"role": "user", "content": request})
    try:
        reply = client.chat.completions.create(model=model, messages=messages)
    except Exception as exc:  # the proxy's OpenAI-shaped error: say it on stderr, exit non-zero
        print(f"model call failed: {exc}", file=sys.stderr)
        return 1
    print(reply.choices[0].message.content or "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
