"""What `bench rejudge` hands a protocol interpreter, and what it gets back (issue 30 item 1:
each protocol re-judges its own parts — triggers, a knowledge graph, a reward, intent checks —
so `rejudge.py` names none of them). The shared parts (checklist, `score:` block) stay in
`rejudge.py`; a protocol's part is merged after them, as `bench run` merges its own results."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchpack.specs.plan import Plan, PlanSession

    from .roles import Roles
    from .store import Store
    from .types import LLMCallRecord, Message, ToolRecord


@dataclass
class RejudgeSite:
    """A finished session as judge factories see it (`roles.JudgeSite`)."""

    roles: Roles
    session: PlanSession
    repeat: int
    recorder: Callable[[LLMCallRecord], None]


@dataclass
class RejudgeInput:
    """One finished session of the source run, read back from the store."""

    site: RejudgeSite
    plan: Plan
    store: Store
    source: str
    """The run whose transcripts are read (the original, even when rejudging a rejudge)."""
    graph_grader: str
    row: dict[str, Any]
    """Its `sessions` row."""
    stored: dict[str, list[tuple[Any, ...]]]
    """Its rows of every per-session table, without the (run, session, repeat) prefix."""
    extra: dict[str, Any]
    """Its `sessions.extra` as stored (read it; the rejudge writes its own)."""
    messages: list[Message]
    records: list[ToolRecord]
    files: dict[str, str]


@dataclass
class RejudgePart:
    """A protocol's re-judged figures, merged into the new session row after the checklist's
    and the `score:` block's (a key here replaces theirs)."""

    metrics: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    """Judge errors, worded for the session's error list."""
    judge_errors: int = 0


__all__ = ["RejudgeInput", "RejudgePart", "RejudgeSite"]
