"""A run's origin label as reports, `bench compare` and exports read it — the published
benchmark its pack reproduces and every known difference — and the words every report uses
for it. The pack-language model is `origin.Origin` (pydantic, what authors and importers
write); this module is its reading side, kept free of pydantic so that `bench report` and
`bench compare` do not pay pydantic's import (~0.2 s) to print one sentence.

Where a label lives: the pack's `origin:` → the plan's `pack.origin` → `runs.config.origin`
(`RUN_CONFIG_KEY`, written by `bench run` and `bench import-run`, kept by `bench rejudge`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

RUN_CONFIG_KEY = "origin"
"""Where a run keeps its origin: `runs.config[RUN_CONFIG_KEY]` (the pack's, as compiled)."""


@dataclass(frozen=True)
class OriginLabel:
    benchmark: str
    version: str
    differences: tuple[str, ...] = ()
    if_ended: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(termination, differences) that apply only to a run with a session that ended so
    (`Origin.if_ended`); `given` decides them for one run."""

    @property
    def comparable(self) -> bool:
        return not self.differences

    def given(self, terminations: Iterable[str]) -> OriginLabel:
        """This label for a run whose sessions ended with `terminations`: the conditional
        differences those endings call up join `differences`, the others are dropped."""
        ended = set(terminations)
        called = [d for term, diffs in self.if_ended if term in ended for d in diffs]
        return OriginLabel(self.benchmark, self.version,
                           self.differences + tuple(d for d in called
                                                    if d not in self.differences),
                           tuple(p for p in self.if_ended if p[0] not in ended))

    def label(self) -> str:
        """`tau2-bench a2c0247`."""
        return f"{self.benchmark} {self.version}"

    def verdict(self) -> str:
        """One sentence for a report: comparable, or not and why."""
        if self.comparable:
            unmet = "".join(f"; {len(d)} more if a session ends `{term}`"
                            for term, d in self.if_ended)
            return f"comparable with {self.label()} (no differences declared{unmet})"
        n = len(self.differences)
        return (f"not comparable with {self.label()}: {n} difference{'' if n == 1 else 's'} — "
                + "; ".join(self.differences))

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"benchmark": self.benchmark, "version": self.version,
                               "differences": list(self.differences)}
        if self.if_ended:
            out["if_ended"] = {term: list(diffs) for term, diffs in self.if_ended}
        return out


def origin_of_config(config: Mapping[str, Any] | None) -> OriginLabel | None:
    """A run's origin from its `runs.config` (None: the run's pack has none). A value that is
    not an origin (a store edited by hand) reads as one whose only difference says so: never
    as comparable."""
    raw = (config or {}).get(RUN_CONFIG_KEY)
    if raw is None:
        return None
    if isinstance(raw, dict):
        bench, version, diffs = raw.get("benchmark"), raw.get("version"), raw.get("differences")
        ended = raw.get("if_ended", {})
        if (isinstance(bench, str) and bench and isinstance(version, str) and version
                and isinstance(diffs, list) and all(isinstance(d, str) and d for d in diffs)
                and isinstance(ended, dict) and all(
                    isinstance(v, list) and all(isinstance(d, str) and d for d in v)
                    for v in ended.values())):
            return OriginLabel(bench, version, tuple(diffs),
                               tuple((str(k), tuple(v)) for k, v in sorted(ended.items())))
    name = raw.get("benchmark") if isinstance(raw, dict) else None
    return OriginLabel(str(name or "unknown benchmark"), "?",
                       ("the run's recorded origin is not readable",))


__all__ = ["RUN_CONFIG_KEY", "OriginLabel", "origin_of_config"]
