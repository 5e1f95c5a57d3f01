"""The interface of a protocol's compile step (one module per protocol, registered in
`protocols/__init__.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchpack.specs import pack as P

    from ..build import Builder
    from ..core import Loc, SessionDraft

Material = Callable[["Builder", "P.Session", "Loc", Any, list[str], dict[str, Any]],
                    dict[str, Any]]
"""(builder, session, its location, the session's render function, its tools, its environment)
→ the plan keys this protocol contributes to the compiled session."""
Limits = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]
"""(the merged limits, the limits the pack defaults and the session set) → the limits."""
Opening = Callable[["Builder", "P.Session", "Loc", Any, "str | None"], "str | None"]
"""(builder, session, location, render, the rendered `request`) → the opening request."""
PlanCheck = Callable[["Builder", "SessionDraft", dict[str, Any], dict[str, dict[str, Any]],
                      dict[str, "SessionDraft"], list[str], dict[str, int]], None]
"""Checks that need the episode order (builder, draft, compiled session, all compiled sessions,
drafts by id, the episode's session order, each session's position in it)."""
LintReport = Callable[[str, str, tuple[Any, ...], "str | None"], None]
"""`report(code, message, sub_path, hint)`, as `lint.lint_session` passes it."""
Lint = Callable[[dict[str, Any], LintReport], None]
"""(the compiled session, report) → this protocol's own lints."""


def lacks(s: dict[str, Any], report: LintReport, key: str, what: str) -> None:
    """W308: the session of this protocol has no `key` (the material the protocol runs on)."""
    report("W308", f"{s['protocol']} session lacks {what}", (), f"add `{key}:`")


@dataclass(frozen=True)
class ProtocolCompiler:
    name: str
    """The protocol name, as in `benchpack.specs.protocols`."""
    default_limits: dict[str, Any]
    """Budgets when neither the session nor the pack defaults set them."""
    material: Material
    """Called for every session whatever its protocol (foreign keys are E204 already, but their
    own mistakes are still reported); returns this protocol's plan keys."""
    opening: Opening | None = None
    """Only for sessions of this protocol: derive or check the opening request."""
    plan_check: PlanCheck | None = None
    """Called for every session once the order is known."""
    own_limits: tuple[str, ...] = ()
    """`limits` keys only this protocol honours: set on another protocol's session they are an
    E204; from the pack's `defaults.limits` they reach only this protocol's sessions."""
    limits: Limits | None = None
    """Only for sessions of this protocol: adjust the merged limits (e.g. a default derived
    from another limit); gets the limits the pack and the session set themselves."""
    lint: Lint | None = None
    """Only for sessions of this protocol: its lints (W308, material it needs), run by
    `lint.lint_session` before the shared ones."""
