"""The protocol interpreter interface and its registry.

A protocol drives the conversation of one session (who says what, when it ends) and returns
its own measurements and rows. Everything shared — agent turns, tool records, transcripts,
checklist grading, the store — lives in `session.py`, so adding a protocol never needs a special
case in the core.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from benchpack.specs.plugins import PluginError, is_plugin, plugin, plugin_names

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
    """Protocol name → interpreter: the built-in ones registered by `default_protocols()`,
    and a protocol installed as a plug-in (`benchpack.specs.plugins`, the `benchpack.protocols`
    entry-point group) the first time a session of it is asked for. A plug-in's metrics go to
    `sessions.extra`: it declares no column (the store has none for it)."""

    def __init__(self) -> None:
        self._items: dict[str, ProtocolInterpreter] = {}
        # every session's row asks for both (benchmarks/http_bench.py: ~30 generator steps a
        # session); what the registered protocols declare, so only `register` changes them
        self._columns: tuple[tuple[str, ...], frozenset[str]] | None = None

    def register(self, interpreter: ProtocolInterpreter) -> None:
        self._items[interpreter.name] = interpreter
        self._columns = None

    def get(self, name: str) -> ProtocolInterpreter:
        found = self._items.get(name)
        if found is None and is_plugin(name):
            found = plugin_interpreter(name)
            self.register(found)
        if found is None:
            raise LookupError(f"no interpreter for protocol `{name}` (known: "
                              f"{', '.join(sorted(self._items))}; plug-ins: "
                              f"{', '.join(plugin_names()) or 'none installed'})")
        return found

    def names(self) -> list[str]:
        return sorted(self._items)

    def metric_columns(self) -> tuple[str, ...]:
        """Every registered protocol's `sessions` metric columns, in registration order."""
        return self._declared()[0]

    def score_columns(self) -> frozenset[str]:
        return self._declared()[1]

    def _declared(self) -> tuple[tuple[str, ...], frozenset[str]]:
        if self._columns is None:
            protocols = self._items.values()
            self._columns = (
                tuple(dict.fromkeys(c for p in protocols for c in p.metric_columns)),
                frozenset(c for p in protocols for c in p.score_columns))
        return self._columns

    def pass_k_protocols(self) -> list[str]:
        """The protocols whose `passed` pass@k counts, in registration order."""
        return [p.name for p in self._items.values() if p.pass_k]


def plugin_interpreter(name: str) -> ProtocolInterpreter:
    """The interpreter of plug-in `name`, checked against what the store can hold."""
    interpreter: ProtocolInterpreter = plugin(name).interpreter()
    if interpreter.name != name:
        raise PluginError(f"protocol plug-in `{name}`: interpreter() returned one named "
                        f"`{interpreter.name}`")
    if interpreter.metric_columns or interpreter.score_columns:
        raise PluginError(f"protocol plug-in `{name}` declares `sessions` columns "
                        f"({', '.join(interpreter.metric_columns)}), which the store does not "
                        "have: a plug-in's metrics go to `sessions.extra` (leave "
                        "`metric_columns` and `score_columns` empty)")
    if interpreter.pass_k:  # the summary and the `verified_tasks` view would disagree
        raise PluginError(f"protocol plug-in `{name}` declares `pass_k`, which is counted for "
                        "the built-in protocols only (leave it False)")
    return interpreter


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
