"""Outcome criteria shared by protocols: declarative rule checks (`Assertion`), judge
evidence and checklist items."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import PYTHON_ENTRY_PATTERN, Id, Spec

# --------------------------------------------------------------------------- graders

MatchValue = str | int | float | bool | None


class Matcher(Spec):
    """A test applied to one value. Give exactly one operator."""

    equals: Any = None
    """Equal to this value."""
    contains: str | None = None
    """String contains this text (case-insensitive)."""
    regex: str | None = None
    """Matches this regular expression (Python syntax, searched anywhere)."""
    one_of: list[Any] | None = None
    """Equal to one of these values."""
    gt: float | None = None
    """Greater than."""
    lt: float | None = None
    """Less than."""


class CountBound(Spec):
    """Bounds on a number of matches."""

    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)
    equals: int | None = Field(default=None, ge=0)


class Assertion(Spec):
    """A declarative check. Choose one source (`tool`, `sequence`, `state`, `file`, `messages`,
    `reply`), optionally narrow it (`where`, `query`), and state one predicate; or combine
    checks with `all`, `any`, `not`. Without a predicate the check is `exists: true`."""

    # sources
    tool: str | None = None
    """Tool-call records of this tool (glob patterns like `gmail__*` allowed)."""
    sequence: list[str] | None = None
    """These tools were called in this order (other calls may come between)."""
    state: str | None = None
    """Final state of a service table, as `service.table`."""
    file: str | None = None
    """A workspace file's final content."""
    messages: Literal["assistant", "user", "all"] | None = None
    """Message texts of the session."""
    reply: bool | None = None
    """The agent's final reply."""
    # narrowing
    where: dict[str, MatchValue | Matcher] | None = None
    """Keep records whose fields match, by dotted path: `args.to`, `result.status`, or a row
    field for `state`."""
    query: str | None = None
    """JMESPath expression applied to the selected data (records, rows, parsed JSON file)."""
    successful: bool | Literal["any"] = True
    """`tool` and `sequence`: which calls count. `true` (the default): only calls that returned
    without error, since a failed call did not do the thing; `false`: only failed calls (the
    agent tried); `any`: every call, failed or not. A cap's `when` counts every call unless it
    says otherwise (a forbidden call that failed was still attempted)."""
    # predicates
    exists: bool | None = None
    """Something was selected (or, with `false`, nothing was)."""
    count: CountBound | None = None
    """Number of selected records or rows."""
    equals: Any = None
    """The selected value equals this."""
    contains: str | list[str] | None = None
    """The selected text contains all of these (case-insensitive)."""
    contains_any: list[str] | None = None
    """The selected text contains at least one of these."""
    not_contains: str | list[str] | None = None
    """The selected text contains none of these."""
    regex: str | None = None
    """The selected text matches this regular expression."""
    json_schema: dict[str, Any] | None = None
    """The selected value (a file is parsed as JSON) is valid under this JSON Schema."""
    grounded: str | None = None
    """Every entity in the selected text matching this regex also appears in a result of a
    `read` tool (no invented identifiers)."""
    # combinators
    all: list[Assertion] | None = None
    """Every sub-check holds."""
    any: list[Assertion] | None = None
    """At least one sub-check holds."""
    not_: Assertion | None = Field(default=None, alias="not")
    """The sub-check does not hold."""


class Evidence(Spec):
    """Evidence added to a rubric judge's context for one checklist item, selected by the
    author so the judge sees what matters and little else."""

    tools: list[str] = Field(default_factory=list)
    """Tool-call records of these tools (globs allowed)."""
    files: list[str] = Field(default_factory=list)
    """Final content of these workspace files."""
    state: list[str] = Field(default_factory=list)
    """Final state of these service tables (`service.table`)."""


class ChecklistItem(Spec):
    """One atomic outcome criterion. Graded by an LLM rubric judge unless `rule` or `python`
    is given."""

    id: Id | None = None
    """Identifier (default `c1`, `c2`…)."""
    text: str
    """The criterion, one requirement only (Jinja)."""
    rule: Assertion | None = None
    """Grade with a declarative rule instead of a judge."""
    python: str | None = Field(default=None, pattern=PYTHON_ENTRY_PATTERN)
    """Grade with `file.py:function` (runs only with `--allow-python`, in a sandboxed
    subprocess; receives the tool history and returns 0/1 or a dict of item scores)."""
    evidence: Evidence | None = None
    """Evidence for the rubric judge."""
    weight: float = Field(default=1.0, gt=0, le=100)
    """Weight in verified-outcome soft scores (COMP is an unweighted mean)."""
    aspect: Literal["outcome", "process"] = "outcome"
    """Verified outcome: outcome items weigh more than process items."""


Assertion.model_rebuild()
