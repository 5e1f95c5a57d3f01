"""A run's origin label as reports, `bench compare` and exports read it — the published
benchmark its pack reproduces and every known difference — and the words every report uses
for it. The pack-language model is `origin.Origin` (pydantic, what authors and importers
write); this module is its reading side, kept free of pydantic so that `bench report` and
`bench compare` do not pay pydantic's import (~0.2 s) to print one sentence.

Where a label lives: the pack's `origin:` → the plan's `pack.origin` → `runs.config.origin`
(`RUN_CONFIG_KEY`, written by `bench run` and `bench import-run`, kept by `bench rejudge`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

RUN_CONFIG_KEY = "origin"
"""Where a run keeps its origin: `runs.config[RUN_CONFIG_KEY]` (the pack's, as compiled)."""


@dataclass(frozen=True)
class OriginLabel:
    benchmark: str
    version: str
    differences: tuple[str, ...] = ()

    @property
    def comparable(self) -> bool:
        return not self.differences

    def label(self) -> str:
        """`tau2-bench a2c0247`."""
        return f"{self.benchmark} {self.version}"

    def verdict(self) -> str:
        """One sentence for a report: comparable, or not and why."""
        if self.comparable:
            return f"comparable with {self.label()} (no differences declared)"
        n = len(self.differences)
        return (f"not comparable with {self.label()}: {n} difference{'' if n == 1 else 's'} — "
                + "; ".join(self.differences))

    def as_json(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "version": self.version,
                "differences": list(self.differences)}


def origin_of_config(config: Mapping[str, Any] | None) -> OriginLabel | None:
    """A run's origin from its `runs.config` (None: the run's pack has none). A value that is
    not an origin (a store edited by hand) reads as one whose only difference says so: never
    as comparable."""
    raw = (config or {}).get(RUN_CONFIG_KEY)
    if raw is None:
        return None
    if isinstance(raw, dict):
        bench, version, diffs = raw.get("benchmark"), raw.get("version"), raw.get("differences")
        if (isinstance(bench, str) and bench and isinstance(version, str) and version
                and isinstance(diffs, list) and all(isinstance(d, str) and d for d in diffs)):
            return OriginLabel(bench, version, tuple(diffs))
    name = raw.get("benchmark") if isinstance(raw, dict) else None
    return OriginLabel(str(name or "unknown benchmark"), "?",
                       ("the run's recorded origin is not readable",))


__all__ = ["RUN_CONFIG_KEY", "OriginLabel", "origin_of_config"]
