"""The named size and time limits of a run and of `bench view`, in one table (issue 27).

Shared by the runtime (which enforces the run's) and the reports (the viewer's): neither
imports the other, so the table lives here, beside the store file format. Each limit has a
name, a default and what happens beyond it; exceeding one is always a recorded, typed outcome
(a clipped text with its digest, an error of whoever produced the oversize thing, a refused
query), never a crash. Measured before the limits: a refused 512 MB `write_file` argument was
stored whole (541 MB store, 5.9 GB peak), a 2 GB one killed the store writer (exit 3, the run
left `running`), a 10 MB model reply cost 1.1 GB and 2 minutes, 10,000 tool calls in one reply
were all executed, and a viewer query of `range(1e13)` ran on after its client left.

`BENCHPACK_LIMIT_<NAME>` (upper case) overrides a default for one process, e.g.
`BENCHPACK_LIMIT_MODEL_REPLY_BYTES=33554432`; `markdown_table()` renders the README's table
(a test keeps the two equal).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class Limit:
    name: str
    default: int
    unit: str
    what: str
    beyond: str
    """What happens past the limit."""

    @property
    def value(self) -> int:
        """The default, or `BENCHPACK_LIMIT_<NAME>` when set to a positive whole number (an
        unusable override is ignored: a limit must never be switched off by a typo)."""
        raw = os.environ.get(f"BENCHPACK_LIMIT_{self.name.upper()}", "")
        try:
            chosen = int(raw.replace("_", ""))
        except ValueError:
            return self.default
        return chosen if chosen > 0 else self.default


TOOL_ARGUMENT_BYTES = Limit(
    "tool_argument_bytes", 1 * MIB, "bytes",
    "one tool call's arguments as stored (`tool_calls.call`, the assistant message's "
    "`tool_calls`)",
    "the first 64 KiB and the sha256 of the whole are stored (`{\"_clipped\": …}`); the call "
    "itself ran with the whole arguments")
TOOL_RESULT_BYTES = Limit(
    "tool_result_bytes", 1 * MIB, "bytes",
    "one tool result as stored in `tool_calls.result` (the tool message that carried it to "
    "the model has `stored_text_bytes`)",
    "the first 64 KiB and the sha256 of the whole are stored")
STORED_TEXT_BYTES = Limit(
    "stored_text_bytes", 4 * MIB, "bytes",
    "any other text the store writes (a message, an error, a model call's prompt or reply)",
    "the first 64 KiB and the sha256 of the whole are stored")
MODEL_REPLY_BYTES = Limit(
    "model_reply_bytes", 8 * MIB, "bytes",
    "one model reply (agent, simulator, judge) read from the provider",
    "the call fails, not retried (`limit model_reply_bytes: …`): for the agent an agent "
    "error, the session's worst score; reading stops at the limit")
TOOL_CALLS_PER_REPLY = Limit(
    "tool_calls_per_reply", 128, "calls",
    "tool calls one model reply asks for",
    "none of them runs; the call fails (`limit tool_calls_per_reply: …`), an agent error")
VIEW_QUERY_SECONDS = Limit(
    "view_query_seconds", 10, "seconds",
    "one `bench view` SQL query (also stopped when its page is closed)",
    "the query is interrupted; the page says so (`bench query` has no limit)")
VIEW_QUERY_ROWS = Limit(
    "view_query_rows", 1000, "rows",
    "rows a `bench view` SQL page shows",
    "the first ones are shown; the CSV download has more")
VIEW_CSV_ROWS = Limit(
    "view_csv_rows", 100_000, "rows",
    "rows a `bench view` CSV download carries",
    "the download is refused, saying to use `bench query --format csv`")

LIMITS = (TOOL_ARGUMENT_BYTES, TOOL_RESULT_BYTES, STORED_TEXT_BYTES, MODEL_REPLY_BYTES,
          TOOL_CALLS_PER_REPLY, VIEW_QUERY_SECONDS, VIEW_QUERY_ROWS, VIEW_CSV_ROWS)
"""Every named limit, in the order the README lists them."""


def _shown(limit: Limit) -> str:
    n = limit.default
    if limit.unit == "bytes" and n % MIB == 0:
        return f"{n // MIB} MiB"
    return f"{n:,} {limit.unit}"


def markdown_table() -> str:
    rows = ["| limit | default | applies to | beyond it |", "| --- | --- | --- | --- |"]
    rows += [f"| `{x.name}` | {_shown(x)} | {x.what} | {x.beyond} |" for x in LIMITS]
    return "\n".join(rows) + "\n"


__all__ = ["LIMITS", "MODEL_REPLY_BYTES", "STORED_TEXT_BYTES", "TOOL_ARGUMENT_BYTES",
           "TOOL_CALLS_PER_REPLY", "TOOL_RESULT_BYTES", "VIEW_CSV_ROWS", "VIEW_QUERY_ROWS",
           "VIEW_QUERY_SECONDS", "Limit", "markdown_table"]
