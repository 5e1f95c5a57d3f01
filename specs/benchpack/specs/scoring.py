"""The pack language of scoring real benchmarks use (τ²-bench, Claw-Anything): gold actions,
state checks, communicated information, NL assertions, graded rubric items with partial credit,
safety gates and caps, evidence selected by field, joins across tool records, and a score
formula over named components.

`verified_outcome` sessions take `Score` as `score:` (`Session.score`); `instructed_user`
sessions take `gold:` and `score:` (see the issue-12 design, sections 4 and 5). The runtime side
is `benchpack.runtime.graders.{state,actions,communicate,graded,evidence}`; the formula language
is `benchpack.specs.formula`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from .base import ID_PATTERN, Spec
from .checklist import Assertion
from .formula import Formula, parse
from .user_side import EnvAssertion

Id = Annotated[str, Field(pattern=ID_PATTERN)]
COMPONENT_PATTERN = r"^[^\W\d]\w{0,63}$"
"""A component name: a Python identifier (letters of any script, digits, `_`), so that a
formula can name it."""
ComponentName = Annotated[str, Field(pattern=COMPONENT_PATTERN)]
REWARD_COMPONENTS = ("state", "actions", "communicate", "assertions")
"""τ²-bench's reward basis: the built-in components, each 1 when every check of its kind holds
and 0 otherwise."""


# --------------------------------------------------------------------------- gold actions


class GoldAction(Spec):
    """A tool call a correct agent makes (τ²-bench `evaluation_criteria.actions`)."""

    id: Id | None = None
    """Identifier (default `a1`, `a2`…), shown with the per-action result."""
    tool: str = Field(min_length=1)
    """The tool's name."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The arguments of the call."""
    match: Literal["exact", "normalised", "subset", "tau2"] = "exact"
    """How the agent's arguments are compared: `exact` (equal JSON; 3 equals 3.0), `normalised`
    (strings compared case-folded without spaces, `-` or `_`; numbers as numbers, so `"3"`
    equals `3`), `subset` (only the keys listed in `args` are compared, exactly). Each of these
    needs its own successful call. `tau2` is τ²-bench's action check: the keys in `compare`
    (else the keys of the agent's call, so a call with no arguments matches) are compared with
    Python's `==` (3 equals 3.0 and `true` equals 1); any call of the tool counts, failed ones
    too, and one call may match several actions; never ordered."""
    compare: list[str] | None = None
    """`match: tau2` only: the argument names compared (τ²'s `compare_args`); `[]` compares
    none, so any call of the tool matches. Default: the keys of the agent's call."""
    requestor: Literal["assistant", "user"] | None = None
    """Who makes the call in τ² (`assistant`, or `user` for the user's own tools). Recorded
    only: τ²'s check ignores it, and so does ours."""
    info: str | None = None
    """What the action is for (shown in reports; τ²'s `info`)."""

    @model_validator(mode="after")
    def _compare_is_tau2(self) -> GoldAction:
        if self.compare is not None and self.match != "tau2":
            raise ValueError("`compare` is for `match: tau2` (τ²'s compare_args); with "
                             f"`match: {self.match}` every key of `args` is compared")
        return self


class Gold(Spec):
    """What a correct agent does: its tool calls, replayed on a fresh copy of the initial state
    for the `state` check and looked for among the agent's calls for the `actions` check."""

    actions: list[GoldAction] = Field(default_factory=list)
    """The gold tool calls, in the order a correct agent makes them."""
    ordered: bool = False
    """The agent's matching calls must come in this order (other calls may come between). By
    default any order counts."""


# --------------------------------------------------------------------------- evidence, joins


class FieldEvidence(Spec):
    """Fields of one tool's records shown to a rubric judge, so the judge sees what matters and
    little else (`evidence: {tool: crm__get, args: [customer_id], result: [email, status]}`)."""

    tool: str = Field(min_length=1)
    """The tool (glob patterns like `crm__*` allowed)."""
    args: list[str] | None = None
    """Argument names to show (dotted paths into nested arguments allowed); none: all
    arguments."""
    result: list[str] | None = None
    """Parts of the result to show: dotted paths (`customer.email`, `items.0.id`) or JMESPath
    expressions (`items[?status=='open'].id`); none: the whole result."""
    successful: bool | None = True
    """Show only calls that succeeded (true), only failed ones (false), or all (null)."""
    limit: int = Field(default=20, ge=1, le=200)
    """At most this many records (the last ones), so evidence stays within a judge's
    context."""


class RecordRef(Spec):
    """One side of a join: a value taken from each record of a tool. Give `result` or `args`."""

    tool: str = Field(min_length=1)
    """The tool (glob patterns allowed)."""
    result: str | None = None
    """A dotted path or JMESPath expression into the record's result."""
    args: str | None = None
    """An argument name (or a dotted path into the arguments)."""
    successful: bool | None = True
    """Use only calls that succeeded (true), failed (false), or all (null)."""

    @model_validator(mode="after")
    def _one_side(self) -> RecordRef:
        if (self.result is None) == (self.args is None):
            raise ValueError("give exactly one of `result` and `args`")
        return self


class Join(Spec):
    """Records of two tools refer to each other: e.g. the note updated is the note created
    (`a: {tool: notes__create, result: id}`, `b: {tool: notes__update, args: note_id}`)."""

    a: RecordRef
    """The records referred to (usually the creating or reading call)."""
    b: RecordRef
    """The records that refer (usually the updating call)."""
    op: Literal["equals", "contains", "lt", "le", "gt", "ge"] = "equals"
    """How `b`'s value relates to `a`'s: `equals` (strings compared trimmed and case-folded;
    numbers as numbers), `contains` (b's text contains a's), or a numeric comparison of b to
    a (`lt`: b < a)."""
    every: bool = False
    """Every `b` record must relate to some `a` record (and there must be one); by default
    one related pair suffices."""


# --------------------------------------------------------------------------- graded items


class PartialCredit(Spec):
    """A partial-credit rule: `credit` when any of the keyword groups is found."""

    any_of: list[list[str]] = Field(min_length=1)
    """Keyword groups; the rule holds when every keyword of at least one group is found
    (case-, width- and separator-insensitive; Chinese works)."""
    credit: float = Field(gt=0, le=1)
    """The item's score when the rule holds (the highest holding rule counts)."""

    @field_validator("any_of")
    @classmethod
    def _no_empty_group(cls, v: list[list[str]]) -> list[list[str]]:
        if any(not g or any(not k.strip() for k in g) for g in v):
            raise ValueError("every group needs at least one non-empty keyword")
        return v


TextSource = Literal["assistant", "reply", "calls", "output"]


class ScoreItem(Spec):
    """One graded criterion. Choose one way to grade it: `text` alone (an LLM rubric judge,
    YES/NO, or on `scale`), `rule` (a declarative check, 0 or 1), `keywords` (the share of
    keyword entries found), `credits` (partial credit), `same` or `compare` (a join across tool
    records, 0 or 1)."""

    id: Id | None = None
    """Identifier (default `s1`, `s2`…); a formula may name it when it is an identifier."""
    text: str | None = None
    """The criterion in words (Jinja): what a judge grades, or a label for the other kinds."""
    dimension: ComponentName = "score"
    """The component (dimension) the item counts towards, e.g. `completion`, `robustness`,
    `communication`, `safety`; a dimension's score is the weighted mean of its scored items."""
    weight: float = Field(default=1.0, gt=0, le=100)
    """Weight within its dimension."""
    scale: tuple[float, float] | None = None
    """A judge's scale, e.g. `[1, 10]`: the judge's number is normalised to 0–1 (lo → 0,
    hi → 1). Without it the judge answers YES/NO. An answer off the scale is a judge error,
    never 0."""
    rule: Assertion | None = None
    """Grade with a declarative rule (0 or 1)."""
    keywords: list[str | list[str]] | None = None
    """Claw's `keywords_present`: each entry must be found; a list entry is found when any of its
    alternatives is. The score is the share of entries found."""
    credits: list[PartialCredit] | None = None
    """Partial-credit rules; the score is the highest credit among the rules that hold, else 0."""
    in_: TextSource = Field(default="output", alias="in")
    """Where `keywords` and `credits` look: `assistant` (the agent's messages), `reply` (its
    final reply), `calls` (the arguments of its successful tool calls, e.g. an e-mail body it
    sent), `output` (messages and call arguments)."""
    same: Join | None = None
    """Passes when records of two tools refer to the same thing (op `equals`)."""
    compare: Join | None = None
    """Passes when a value of one tool's records relates to another's as `op` says."""
    evidence: list[FieldEvidence] | None = None
    """Fields of tool records shown to the judge (judge items only)."""
    gate: bool = False
    """A safety gate: when the item fails, the whole score is 0, whatever the formula says."""
    cap: float | None = Field(default=None, ge=0, le=1)
    """When the item fails, the final score is at most this."""
    pass_at: float = Field(default=1.0, gt=0, le=1)
    """The item passes (for `gate` and `cap`) when its score reaches this; 1: full marks."""

    @model_validator(mode="after")
    def _one_kind(self) -> ScoreItem:
        kinds = [k for k in ("rule", "keywords", "credits", "same", "compare")
                 if getattr(self, k) is not None]
        if len(kinds) > 1:
            raise ValueError(f"give one way to grade the item, not {' and '.join(kinds)}")
        if not kinds and not self.text:
            raise ValueError("give `text` for a judge, or one of rule, keywords, credits, "
                             "same, compare")
        if self.scale is not None:
            if kinds:
                raise ValueError("`scale` is for judged items; drop it or the "
                                 f"`{kinds[0]}`")
            lo, hi = self.scale
            if not lo < hi:
                raise ValueError("`scale` must be [lo, hi] with lo < hi")
        if self.evidence is not None and kinds:
            raise ValueError("`evidence` is shown to a judge; this item has no judge")
        if self.keywords is not None and (not self.keywords or any(
                not (k.strip() if isinstance(k, str) else k and all(x.strip() for x in k))
                for k in self.keywords)):
            raise ValueError("`keywords` needs non-empty entries")
        if self.same is not None and self.same.op != "equals":
            raise ValueError("`same` compares with `equals`; use `compare` for other ops")
        return self


# --------------------------------------------------------------------------- the score block


class Score(Spec):
    """How a session is scored. Built-in components (`reward` names them): `state` (the final
    state equals the gold actions replayed on the initial state), `actions` (every gold action
    was called), `communicate` (every string was said), `assertions` (every NL assertion judged
    YES). Graded `items` add their dimensions. The final score is the `formula` over the
    components, else the product of the `reward` components (τ²-style), else the weighted mean
    of the items; gates and caps apply last."""

    reward: list[Literal["state", "actions", "communicate", "assertions", "env_assertions"]
                 ] | None = None
    """τ²'s reward basis: the final score is the product of these components (each 0 or 1)."""
    communicate: list[str] = Field(default_factory=list)
    """Information the agent must tell the user: each must occur in some agent message
    (case-insensitive, ignoring spaces, `-`, `_` and commas; `#` kept; Chinese works)."""
    communicate_match: Literal["words", "tau2"] | None = None
    """instructed_user: how `communicate` strings are found. `words` (default): as above, never
    cutting a word or number of the message. `tau2` (τ²-bench): `text.lower()` is a substring
    of an agent text message (the greeting included) lower-cased with its commas removed; so
    `W12` is found in `W123`, and a string that itself has a comma is never found."""
    assertions: list[str] = Field(default_factory=list)
    """Natural-language assertions judged YES/NO by the rubric judge (Jinja)."""
    env_assertions: list[EnvAssertion] = Field(default_factory=list)
    """instructed_user: predicates over the final world (`user_side.EnvAssertion`), the
    `env_assertions` component: 1 when every one returns its `expect`."""
    assertions_judge: Literal["rubric", "tau2"] | None = None
    """instructed_user: who judges `assertions`. `rubric` (default): the rubric judge, YES/NO
    per assertion. `tau2` (τ²-bench): one judge call for all of them with the template
    `instructed_user.assertions_judge` over the whole trajectory as `role: content` lines; the
    answer is JSON `{"results": [{"expectedOutcome", "reasoning", "metExpectation"}]}` and the
    component holds when every `metExpectation` does (an empty list holds, as in τ²)."""
    items: list[ScoreItem] = Field(default_factory=list)
    """Graded criteria."""
    formula: str | None = None
    """The final score over named components (dimensions, built-in components, item ids), e.g.
    `safety * max(0.8 * completion + 0.2 * robustness, completion)`; see
    `benchpack.specs.formula`."""
    pass_threshold: float = Field(default=1.0, gt=0, le=1)
    """Final score needed to pass (1: τ²-style all-or-nothing)."""

    @field_validator("communicate", "assertions")
    @classmethod
    def _non_empty(cls, v: list[str]) -> list[str]:
        if any(not s.strip() for s in v):
            raise ValueError("entries cannot be empty")
        return v

    @model_validator(mode="after")
    def _one_combination(self) -> Score:
        if self.reward is not None and self.formula is not None:
            raise ValueError("give `reward` or `formula`, not both (a reward is the formula "
                             f"`{' * '.join(self.reward) or '1'}`)")
        return self

    def component_names(self) -> list[str]:
        """Every name a formula may use: built-in components, dimensions and item ids that are
        identifiers."""
        import re

        names = list(REWARD_COMPONENTS)
        for i, item in enumerate(self.items, start=1):
            for n in (item.dimension, item.id or f"s{i}"):
                if n not in names and re.match(COMPONENT_PATTERN, n):
                    names.append(n)
        return names

    def parsed_formula(self) -> Formula | None:
        """The formula checked against the component names (a `ValueError` with the located
        problem when it is wrong); None without one."""
        if self.formula is None:
            return None
        f = parse(self.formula, known=self.component_names())
        if not isinstance(f, Formula):
            raise ValueError(f"formula {f}")
        return f


__all__ = ["COMPONENT_PATTERN", "REWARD_COMPONENTS", "FieldEvidence", "Gold", "GoldAction",
           "Join", "PartialCredit", "RecordRef", "Score", "ScoreItem"]
