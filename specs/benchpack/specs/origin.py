"""The pack's `origin:`: which published benchmark a pack reproduces, at which commit or
release, and every known way it differs from it — what an importer writes so that a figure is
never shown as comparable with a benchmark's leaderboard unless the pack says so.

A pack with an origin and no differences claims parity: its scores stand beside the
benchmark's own (e.g. τ²-bench's pass^k). Any difference — a saner arithmetic offered as an
explicit import option, a task left out, a rule not implemented — is listed; every report of
such a run says "not comparable" and lists them, and `bench export tau2-submission` refuses it
unless told `--allow-differences` (and then says so in the submission). The reading side and
the words reports use are `origin_label` (no pydantic); the plan keeps this model as
`pack.origin`, `bench run` records it in `runs.config.origin`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .base import Spec
from .origin_label import OriginLabel


class Origin(Spec):
    """The published benchmark this pack reproduces, as importers write it, e.g. `{benchmark:
    tau2-bench, version: a2c0247, differences: []}`. Reports say whether a run of the pack is
    comparable with the benchmark (no differences) or list the differences."""

    benchmark: Annotated[str, Field(min_length=1, max_length=100)]
    """The benchmark's name, e.g. `tau2-bench`."""
    version: Annotated[str, Field(min_length=1, max_length=100)]
    """The benchmark's commit or release the pack was made from, e.g. `a2c0247` or `v1.0.1`."""
    differences: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    """Every known way this pack differs from the benchmark in what decides a score or what the
    agent sees, one short sentence each. Empty: the pack claims parity, and reports call its
    runs comparable with the benchmark."""
    if_ended: dict[Annotated[str, Field(min_length=1, max_length=40)],
                   list[Annotated[str, Field(min_length=1)]]] = Field(default_factory=dict)
    """Differences that show only in a session that ended a certain way, by its
    `sessions.termination` (e.g. `{agent_error: ["solo-text-reply: …"]}`: the benchmark treats
    a solo agent's text answer otherwise). A run with such a session lists them beside
    `differences`; a run with none is as comparable as if they were not written."""
    if_vars: dict[Annotated[str, Field(min_length=1, max_length=100)],
                  dict[Annotated[str, Field(min_length=1, max_length=100)],
                       list[Annotated[str, Field(min_length=1)]]]] = Field(default_factory=dict)
    """Differences that hold only for some values of a pack variable, by variable and value
    (e.g. `{retrieval: {golden: ["kb-in-prompt: …"]}}`: only `--var retrieval=golden` composes
    the prompt otherwise). `bench compile` adds those of the values it compiles with to
    `differences` and drops the rest, so a plan lists exactly what holds for it."""

    def for_vars(self, values: dict[str, object]) -> Origin:
        """This origin as compiled with the pack variables `values`: the `if_vars` differences
        of their values joined to `differences` (in the order written), the rest dropped."""
        extra = [d for var, by_value in self.if_vars.items() if var in values
                 for d in by_value.get(str(values[var]), [])]
        return self.model_copy(update={
            "differences": [*self.differences, *(d for d in extra if d not in self.differences)],
            "if_vars": {}})

    def as_label(self) -> OriginLabel:
        return OriginLabel(self.benchmark, self.version, tuple(self.differences),
                           tuple((k, tuple(v)) for k, v in sorted(self.if_ended.items())))

    def as_config(self) -> dict[str, object]:
        """What plans and `runs.config.origin` keep: `if_ended` only when set, so the plans of
        packs without it stay byte for byte what they were; never `if_vars`, which the
        compiler resolves (`for_vars`)."""
        out = self.model_dump(mode="json")
        if not self.if_ended:
            del out["if_ended"]
        del out["if_vars"]
        return out


__all__ = ["Origin"]
