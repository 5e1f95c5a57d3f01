"""verified_outcome: the scoring policy (threshold, outcome weight, safety caps checked like
rules); the checklist itself is common (checks.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchpack.specs import pack as P

from .base import ProtocolCompiler

if TYPE_CHECKING:
    from ..build import Builder
    from ..core import Loc


def verify(b: Builder, s: P.Session, loc: Loc, tools: list[str], env: dict[str, Any]) -> dict[str, Any] | None:
    v = s.verify
    if v is None:
        if s.protocol != "verified_outcome":
            return None
        v = P.Verify()
    caps = []
    for i, c in enumerate(v.caps):
        b.check_assertion(c.when, loc, ("verify", "caps", i, "when"), tools, env)
        caps.append({"id": c.id or f"cap{i + 1}",
                     "when": c.when.model_dump(mode="json", by_alias=True, exclude_unset=True),
                     "cap": c.cap, "reason": c.reason})
    return {"pass_threshold": v.pass_threshold, "outcome_weight": v.outcome_weight,
            "caps": caps}


def material(b: Builder, s: P.Session, loc: Loc, r: Any, tools: list[str],
             env: dict[str, Any]) -> dict[str, Any]:
    return {"verify": verify(b, s, loc, tools, env)}


COMPILER = ProtocolCompiler(
    name="verified_outcome",
    default_limits={"max_turns": 6, "max_steps_per_turn": 60, "turn_timeout_s": 1200.0},
    material=material,
)
