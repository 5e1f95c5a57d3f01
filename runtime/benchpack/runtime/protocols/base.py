"""The protocol interpreter interface and its registry.

A protocol drives the conversation of one session (who says what, when it ends) and returns
its own measurements and rows. Everything shared — agent turns, tool records, transcripts,
checklist grading, the store — lives in `session.py`, so adding a protocol never needs a special
case in the core.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..rejudge_types import RejudgeInput, RejudgePart

if TYPE_CHECKING:
    from benchpack.specs.plan import Plan, PlanSession

    from ..session import SessionContext


@dataclass
class ProtocolResult:
    termination: str
    """Why the session ended: protocol-specific (`all_resolved`, `turn_budget`, `done`,
    `agent_answer`, `round_budget`, `error`…)."""
    metrics: dict[str, Any] = field(default_factory=dict)
    """Columns of the `sessions` row this protocol fills (e.g. `proc`, `completed`)."""
    tables: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    """Protocol-specific rows, without the (run_id, session_id, repeat) prefix."""
    judge_errors: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    error_kind: str | None = None
    """Whose error ended the session (`agent`, `infrastructure`, `simulator`, `judge`); when
    None on an error, the runner infers it (an errored agent reply: `agent`)."""


class ProtocolInterpreter(Protocol):
    name: str
    # read-only (properties), so a class attribute of a narrower type satisfies them

    @property
    def metric_columns(self) -> tuple[str, ...]:
        """Its metrics that have a `sessions` column of their own (the store's DDL holds
        them); any other metric it returns goes to the row's `extra`."""
        ...

    @property
    def score_columns(self) -> frozenset[str]:
        """Those of `metric_columns` that are scores: NULL for a session that ended in an
        error (unknown, not 0); its counts say how far it got."""
        ...

    @property
    def pass_k(self) -> bool:
        """Its sessions' `passed` is a task outcome that pass@k counts (the run summary's)."""
        ...

    async def run(self, ctx: SessionContext) -> ProtocolResult:
        ...

    def worst_scores(self, plan: Plan, s: PlanSession, metrics: dict[str, Any]
                     ) -> dict[str, Any]:
        """Its worst score on each figure the session defines, for a session whose agent
        failed (crashed, malformed output): left unknown, the session would drop out of every
        average, and an agent crashing on hard tasks would score higher than one that tried.
        `metrics` are what the run measured before it failed."""
        ...

    async def rejudge(self, inp: RejudgeInput) -> RejudgePart:
        """`bench rejudge`: its own parts of a finished session judged again by the new judge
        (what the checklist and a `score:` block do not cover); merged after those."""
        ...

    def stored_dialogue_end(self, row: dict[str, Any], turns: list[tuple[Any, ...]]
                            ) -> int | None:
        """The task's last turn for a session stored before `extra.dialogue_end` was, where
        the protocol can tell it from the row and its turns; None: the whole transcript."""
        ...


class ProtocolDefaults:
    """What a protocol without columns, pass@k or worst scores of its own declares (its
    metrics all go to the row's `extra`): subclass it and set what differs."""

    metric_columns: tuple[str, ...] = ()
    score_columns: frozenset[str] = frozenset()
    pass_k = False

    def worst_scores(self, plan: Plan, s: PlanSession, metrics: dict[str, Any]
                     ) -> dict[str, Any]:
        return {}

    async def rejudge(self, inp: RejudgeInput) -> RejudgePart:
        return RejudgePart()

    def stored_dialogue_end(self, row: dict[str, Any], turns: list[tuple[Any, ...]]
                            ) -> int | None:
        return None


class ProtocolRegistry:
    """Protocol name → interpreter. No entry-point group: a protocol is a row through every
    stage (its pack-language model in `specs`, whose `protocol` field is a closed Literal, its
    compile step, its reports), so an interpreter installed alone could never receive a
    session; the `benchpack.protocols` group this registry used to read never loaded anything
    (issue 30). A new protocol is added in-tree (runtime/README.md, "Adding a protocol")."""

    def __init__(self) -> None:
        self._items: dict[str, ProtocolInterpreter] = {}

    def register(self, interpreter: ProtocolInterpreter) -> None:
        self._items[interpreter.name] = interpreter

    def get(self, name: str) -> ProtocolInterpreter:
        try:
            return self._items[name]
        except KeyError:
            raise LookupError(f"no interpreter for protocol `{name}` (known: "
                              f"{', '.join(sorted(self._items))})") from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def metric_columns(self) -> tuple[str, ...]:
        """Every registered protocol's `sessions` metric columns, in registration order."""
        return tuple(dict.fromkeys(c for p in self._items.values() for c in p.metric_columns))

    def score_columns(self) -> frozenset[str]:
        return frozenset(c for p in self._items.values() for c in p.score_columns)

    def pass_k_protocols(self) -> list[str]:
        """The protocols whose `passed` pass@k counts, in registration order."""
        return [p.name for p in self._items.values() if p.pass_k]


def default_protocols() -> ProtocolRegistry:
    from .instructed_user import InstructedUser
    from .intent_tracking import IntentTracking
    from .staged_disclosure import StagedDisclosure
    from .trigger_rubric import TriggerRubric
    from .verified_outcome import VerifiedOutcome

    reg = ProtocolRegistry()
    for interpreter in (IntentTracking(), StagedDisclosure(), TriggerRubric(), VerifiedOutcome(),
                        InstructedUser()):
        reg.register(interpreter)
    return reg
