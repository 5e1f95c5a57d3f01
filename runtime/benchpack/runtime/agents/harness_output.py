"""What a real harness prints, sorted (issue 26): the answer the judge reads is the harness's
reply, never its warnings; an error quotes the harness's own message whole.

- `split_chunks`: an ACP agent's message chunks, told apart into the reply and notices. Codex's
  ACP adapter sends its warnings ("Model metadata for `x` not found. Defaulting to fallback
  metadata…") as ordinary `agent_message_chunk`s, with nothing marking them. When the turn's
  model calls went through the recording proxy we know what the model said: a chunk that is
  part of no model reply of the turn was written by the harness, not the model, and is stored
  apart. With no proxied call in the turn (the harness called its provider itself), or when no
  chunk is the model's words (the agent writes its answer itself), every chunk is kept:
  nothing tells them apart. A harness that wraps the model's words in its own ("Answer: …")
  has its own words stored apart.
- `failure_detail`: the part of a failed harness's output an error quotes: stderr, or stdout
  when stderr is empty (Claude Code prints `API Error: …` on stdout); from a line start, and
  from the last Python traceback's first line when it is within reach, so a multi-line error
  is never cut in the middle.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

ERROR_QUOTE_CHARS = 8_000
"""The most an error quotes of a harness's output (more than `cmd:`'s 2,000: a Node or
Python stack trace with its message runs to a few thousand characters)."""

_TRACEBACK = re.compile(r"^(Traceback \(most recent call last\):|\S*Error: |Error: )", re.M)
_SPACE = re.compile(r"\s+")


def _squash(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def reply_texts(replies: Iterable[str | None]) -> list[str]:
    """The content of each recorded model reply (`LLMCallRecord.reply`, canonical JSON)."""
    out = []
    for reply in replies:
        if not reply:
            continue
        try:
            message = json.loads(reply)
        except ValueError:
            continue
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str) and content.strip():
            out.append(content)
    return out


def split_chunks(chunks: list[str], model_texts: list[str] | None
                 ) -> tuple[str, list[str]]:
    """(the answer, the notices): see the module docstring. `model_texts` None: the turn
    made no proxied model call, every chunk is the answer."""
    if not model_texts:
        return "".join(chunks).strip(), []
    said = [_squash(t) for t in model_texts]
    answer: list[str] = []
    notices: list[str] = []
    for chunk in chunks:
        core = _squash(chunk)
        if not core or any(core in text for text in said):
            answer.append(chunk)
        else:
            notices.append(chunk.strip())
    if not any(_squash(a) for a in answer):
        # no chunk is the model's words: the agent writes its answer itself (a summary, a
        # template); nothing tells its notices from its answer then, so all of it is kept
        return "".join(chunks).strip(), []
    return "".join(answer).strip(), notices


def failure_detail(stderr: str, stdout: str = "", limit: int = ERROR_QUOTE_CHARS) -> str:
    """`; stderr (last lines):\\n…` (or stdout's), or "" when the harness said nothing."""
    for name, text in (("stderr", stderr), ("stdout", stdout)):
        text = text.rstrip()
        if text:
            return f"; {name} (last lines):\n{_tail(text, limit)}"
    return ""


def _tail(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    window = text[-limit:]
    starts = [m.start() for m in _TRACEBACK.finditer(window)]
    if starts:  # the first error block in reach, whole
        return window[starts[0]:]
    newline = window.find("\n")
    return window[newline + 1:] if 0 <= newline < len(window) - 1 else window


__all__ = ["ERROR_QUOTE_CHARS", "failure_detail", "reply_texts", "split_chunks"]
