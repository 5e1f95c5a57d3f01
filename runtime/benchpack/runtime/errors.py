"""The runtime's error hierarchy: what the user can fix is one class, everything else is a bug.

The CLI maps `BenchError` (and only it) to `✗ message` and exit 1; any other exception that
escapes a command is a benchpack bug and exits 3 with "please report it". Before this module
the CLI caught every `ValueError` as a user error, so a real bug (an `int("x")` deep in a
grader, a `dict.index` miss) printed as if the user had made a mistake and exited 1 — 67 bare
`raise ValueError(...)` in the runtime made the two impossible to tell apart.

- `UsageError`: a mistake in what the user asked for — an option, a plan, a run id, a file
  named on the command line. Also a `ValueError`, so library callers that caught
  `ValueError` keep working.
- `EnvironmentProblem`: something the machine lacks or refuses — no working bubblewrap, a
  service's command not installed, a Ray cluster that cannot be joined, a store another
  program holds. Checked before the first session (`preflight`), so a run never starts
  without it.
- `LimitExceeded`: a named limit (`limits.py`) was exceeded. Inside a session it becomes a
  recorded outcome (an error of the party that produced the oversize thing); raised to the
  CLI it is a one-line refusal.

Library code raises these with a message that reads as a sentence after `✗ ` (what, why, and
the fix in parentheses); the CLI adds nothing but the mark.
"""

from __future__ import annotations


class BenchError(Exception):
    """A user mistake or an environment problem: the CLI prints `✗ <message>` and exits 1."""


class UsageError(BenchError, ValueError):
    """A mistake in the options, the plan, the store or the files the user named."""


class EnvironmentProblem(BenchError, RuntimeError):
    """The machine lacks something the run needs (bubblewrap, a command, a cluster, the
    store's lock)."""


class LimitExceeded(BenchError):
    """A named limit (`benchpack.runtime.limits`) was exceeded: `limit` is its name, `size`
    what was met, `allowed` the limit's value."""

    def __init__(self, message: str, *, limit: str, size: int, allowed: int) -> None:
        super().__init__(message)
        self.limit, self.size, self.allowed = limit, size, allowed


__all__ = ["BenchError", "EnvironmentProblem", "LimitExceeded", "UsageError"]
