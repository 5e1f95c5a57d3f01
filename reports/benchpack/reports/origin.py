"""Is a run comparable with the published benchmark its pack reproduces? Every report says so
for the runs whose pack has an `origin:` (`benchpack.specs.origin`, recorded in
`runs.config.origin`): comparable when the pack lists no differences, else "not comparable"
with each difference. `bench report` adds the note to every report (`api._build`), `bench
compare` lists an origin that differs between runs with the other settings that must agree
(`comparability.FIELDS`), and `bench export tau2-submission` refuses a run with differences
unless told otherwise. Light to import: `bench report` calls it for every report."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from benchpack.specs.origin_label import RUN_CONFIG_KEY, OriginLabel, origin_of_config

from .sqltext import literals


def run_origins(con: Any, runs: Sequence[str]) -> dict[str, OriginLabel | None]:
    """Run id → its pack's origin (None: no origin recorded), in the order given, with the
    differences its sessions' endings call up (`OriginLabel.given`)."""
    if not runs:
        return {}
    marks = literals(runs)  # every report reads these: no bound parameters (`sqltext`)
    found: dict[str, OriginLabel | None] = {}
    for run, raw in con.execute(f"SELECT run_id, json_extract(config, '$.{RUN_CONFIG_KEY}') "
                                f"FROM runs WHERE run_id IN ({marks})").fetchall():
        value = json.loads(raw) if isinstance(raw, str) else raw
        found[str(run)] = origin_of_config({RUN_CONFIG_KEY: value})
    if any(o is not None and o.if_ended for o in found.values()):
        ended = {str(r): [str(t) for t in terms] for r, terms in con.execute(
            f"""SELECT run_id, list(DISTINCT termination) FILTER (WHERE termination IS NOT NULL)
                FROM sessions WHERE run_id IN ({marks}) GROUP BY run_id""").fetchall()}
        found = {r: o.given(ended.get(r, [])) if o is not None else None
                 for r, o in found.items()}
    return {r: found.get(r) for r in runs}


def origin_notes(con: Any, runs: Sequence[str]) -> list[str]:
    """One note per distinct verdict, naming its runs: what a report prints above its tables."""
    by_verdict: dict[tuple[bool, str], list[str]] = {}
    for run, origin in run_origins(con, runs).items():
        if origin is not None:
            by_verdict.setdefault((origin.comparable, origin.verdict()), []).append(run)
    notes = []
    for (comparable, verdict), members in by_verdict.items():
        who = ", ".join(members)
        notes.append(f"Origin ({who}): {verdict}." if comparable else
                     f"⚠ Origin ({who}): {verdict}. These figures are not comparable with the "
                     "benchmark's own (its leaderboard).")
    return notes


__all__ = ["origin_notes", "run_origins"]
