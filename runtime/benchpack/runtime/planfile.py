"""Load and validate a compiled plan (`plan.json`) before anything runs."""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from benchpack.specs import PLAN_VERSION, Plan
from benchpack.specs.plan import PlanGroup
from benchpack.specs.schema import plan_schema

from .errors import UsageError

if TYPE_CHECKING:  # imported when a plan fails: it only explains the failure
    from jsonschema import Draft202012Validator


def unknown_protocols(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(protocol, session id) of the plan's sessions whose protocol is not built in and no
    installed plug-in (`benchpack.specs.plugins`) provides: said as such, not as the schema
    error their plug-in's `material` would otherwise be."""
    from benchpack.specs.plugins import is_plugin
    from benchpack.specs.protocols import PROTOCOLS

    sessions = data.get("sessions")
    return [(str(s.get("protocol")), str(sid))
            for sid, s in (sessions.items() if isinstance(sessions, dict) else ())
            if isinstance(s, dict) and isinstance(s.get("protocol"), str)
            and s["protocol"] not in PROTOCOLS and not is_plugin(s["protocol"])]


class PlanError(UsageError):
    """The plan cannot be used: missing, not JSON, wrong version, or not matching the schema."""


PLAN_MAX_DEPTH = 128
"""The compiler refuses pack data nested more than 100 levels; the plan wraps it in a few levels
of its own (`$.services.<name>.tables.<table>.rows[i]`). The runtime copies, redacts and stores
values recursively: a deeper value would end a run in a RecursionError."""


def _too_deep(data: Any) -> bool:
    """Whether `data` nests more than PLAN_MAX_DEPTH lists and objects; iterative, so the check
    itself has no recursion limit. Walked a level at a time with exact type tests (JSON gives
    plain dicts and lists): a (value, depth) pair per container cost ~20 ms of a 1,000-session
    plan's start-up, a level's list comprehension ~5 ms."""
    level = [data] if type(data) in (dict, list) else []
    for _ in range(PLAN_MAX_DEPTH):
        level = [v for c in level for v in (c.values() if type(c) is dict else c)
                 if type(v) is dict or type(v) is list]
        if not level:
            return False
    return True


def _deep_path(data: Any) -> str:
    """The JSON path of the first value nested too deep (called once `_too_deep` found one:
    the paths cost more than the check)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if len(path) >= PLAN_MAX_DEPTH:
            shown = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path[:12])
            return "$" + shown + ("…" if len(path) > 12 else "")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        stack.extend((v, (*path, k)) for k, v in items if isinstance(v, dict | list))
    return "$"


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(plan_schema())


def load_plan(path: str | Path) -> Plan:
    """Read `plan.json` (or a directory holding it), validate it against the plan JSON Schema,
    and return the typed plan."""
    p = Path(path)
    if p.is_dir():
        p = p / "plan.json"
    try:
        data: Any = json.loads(p.read_bytes())
    except FileNotFoundError:
        raise PlanError(f"{p}: no plan here (run `bench compile PACK -o {p.parent}`)") from None
    except (OSError, ValueError) as exc:
        raise PlanError(f"{p}: not a readable JSON plan ({exc})") from None
    if not isinstance(data, dict):
        raise PlanError(f"{p}: not a plan")
    if _too_deep(data):
        raise PlanError(f"{p}: the plan nests more than {PLAN_MAX_DEPTH} levels deep at "
                        f"{_deep_path(data)} "
                        "(hint: recompile the pack with this benchpack, which refuses data "
                        "nested more than 100 levels; flatten that value)")
    version = data.get("plan_version")
    if version != PLAN_VERSION:
        raise PlanError(f"{p}: plan version {version!r} is not supported (expected {PLAN_VERSION}); "
                        "recompile the pack with this benchpack")
    unknown = unknown_protocols(data)
    if unknown:
        name, session = unknown[0]
        raise PlanError(f"{p}: session {session} is of protocol `{name}`, neither built in nor "
                        "an installed plug-in (hint: install the package that provides it; "
                        f"{len(unknown)} session{'s' if len(unknown) != 1 else ''} affected)")
    # The plan JSON Schema is generated from `Plan`, so the model validates the same contract;
    # it runs in compiled code. The jsonschema validator only runs to explain a failure.
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
        if errors:
            first = errors[0]
            where = "/".join(str(x) for x in first.absolute_path) or "(top)"
            raise PlanError(f"{p}: plan does not match its schema at {where}: {first.message} "
                            f"({len(errors)} problem{'s' if len(errors) != 1 else ''})") from None
        raise PlanError(f"{p}: plan does not match its schema: "
                        f"{str(exc).splitlines()[0]}") from None


@dataclass(frozen=True)
class GroupIndex:
    """A plan's dependency groups indexed once: per-session lookups used to scan every group
    of the plan, which made a run quadratic in its number of sessions."""

    by_id: dict[str, PlanGroup]
    finals: frozenset[str]


_GROUP_INDEXES: dict[int, tuple[weakref.ref[Plan], GroupIndex]] = {}


def group_index(plan: Plan) -> GroupIndex:
    """The dependency groups of `plan` by id (the first of a repeated id, as a scan finds it)
    and the set of final sessions, built on first use and kept while the plan lives."""
    key = id(plan)
    hit = _GROUP_INDEXES.get(key)
    if hit is not None and hit[0]() is plan:
        return hit[1]
    by_id: dict[str, PlanGroup] = {}
    for g in plan.groups:
        by_id.setdefault(g.id, g)
    index = GroupIndex(by_id, frozenset(g.final for g in plan.groups))

    def forget(ref: weakref.ref[Plan], key: int = key) -> None:
        if _GROUP_INDEXES.get(key, (None,))[0] is ref:
            del _GROUP_INDEXES[key]

    _GROUP_INDEXES[key] = (weakref.ref(plan, forget), index)
    return index
