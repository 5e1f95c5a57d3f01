"""Are two runs comparable? Runs whose figures differ for a reason other than the agent — the
pack changed, another judge, simulator or planner, other prompt templates, another benchpack —
cannot be compared as if only the agent differed (a judge swap moved scores between 38 % and
62 %, ClawBench#242; a simulator swap a pass rate from ~50 to 78, tau2-bench PR #345).

`differences` lists what differs, read from the `runs` table (and its `config`); `bench compare`
refuses such runs, and every report over several runs of one pack notes them. Light to import
(no statistics): `bench report` calls it for every report."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchpack.specs.origin_label import origin_of_config

from .sqltext import literals

_DEFAULT = "(default)"


@dataclass(frozen=True)
class Difference:
    field: str
    values: dict[str, str]
    """Run id → the value, in the order the runs were given."""

    def text(self) -> str:
        return f"{self.field}: " + ", ".join(f"{run} {value}"
                                             for run, value in self.values.items())


def _config(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return raw if isinstance(raw, dict) else {}


def _role(uri: Any, files: dict[str, Any], role: str) -> str | None:
    """A role as compared: a scripted file by its content (one file named by a relative and
    an absolute path is one simulator), anything else by its URI."""
    if isinstance(uri, str) and uri.startswith("scripted:") and files.get(role):
        return f"scripted file sha256 {str(files[role])[:12]}"
    return None if uri is None else str(uri)


def run_settings(con: Any, runs: Sequence[str]) -> dict[str, dict[str, str | None]]:
    """Run id → the settings that must agree for a comparison (None: not recorded)."""
    if not runs:
        return {}
    marks = literals(runs)  # every report reads these: no bound parameters (`sqltext`)
    rows = con.execute(f"""SELECT run_id, pack_name, pack_version, plan_hash, benchpack_version,
            judge, simulator, config FROM runs WHERE run_id IN ({marks})""").fetchall()
    out: dict[str, dict[str, str | None]] = {}
    for run, name, version, plan_hash, bp_version, judge, simulator, raw in rows:
        config = _config(raw)
        files: dict[str, Any] = (config["role_files"] if isinstance(config.get("role_files"),
                                                                   dict) else {})
        out[str(run)] = {
            "pack": f"{name} {version} (fingerprint {str(plan_hash or '?')[:12]})",
            "judge": _role(judge, files, "judge"),
            "simulator": _role(simulator, files, "simulator"),
            "planner": _role(config.get("planner"), files, "planner") or _DEFAULT,
            # recorded since `bench compare` exists; older runs: covered by the pack
            # fingerprint (the pack's overrides) and the benchpack version (built-ins)
            "prompt templates": (str(config["prompt_templates"])[:12]
                                 if config.get("prompt_templates") else None),
            "benchpack version": bp_version,
            "trigger mode": config.get("trigger_mode"),
            "graph grader": config.get("graph_grader"),
            # the pack's `origin:` label (benchpack.specs.origin): a run comparable with a
            # published benchmark beside one that is not
            "origin": (origin.verdict() if (origin := origin_of_config(config)) is not None
                       else None),
        }
    return out


FIELDS = ("pack", "judge", "simulator", "planner", "prompt templates", "benchpack version",
          "trigger mode", "graph grader", "origin")
"""What must agree, in the order differences are listed. An unrecorded value (None, a run
from before it was recorded) is not a difference."""


def differences(con: Any, runs: Sequence[str]) -> list[Difference]:
    settings = run_settings(con, runs)
    found = []
    for f in FIELDS:
        values = {r: settings[r][f] for r in runs if r in settings}
        known = {v for v in values.values() if v is not None}
        if len(known) > 1:
            found.append(Difference(f, {r: str(v) if v is not None else "(not recorded)"
                                        for r, v in values.items()}))
    return found


def mixed_note(con: Any, runs: Sequence[str]) -> str | None:
    """For a report over several runs: the runs of one pack whose settings differ (runs of
    different packs are never compared row by row, so they are not flagged)."""
    if len(runs) < 2:
        return None
    marks = literals(runs)  # every report reads these: no bound parameters (`sqltext`)
    by_pack: dict[str, list[str]] = {}
    for run, pack in con.execute(f"SELECT run_id, pack_name FROM runs WHERE run_id IN "
                                 f"({marks}) ORDER BY run_id").fetchall():
        by_pack.setdefault(str(pack), []).append(str(run))
    parts = []
    for pack, members in by_pack.items():
        if len(members) > 1:
            diffs = differences(con, members)
            if diffs:
                parts.append(f"{pack}: " + "; ".join(d.text() for d in diffs))
    if not parts:
        return None
    return ("⚠ Not comparable: runs of the same pack differ in more than the agent — "
            + " | ".join(parts) + ". Their figures differ for these reasons too "
            "(bench compare refuses them without --allow-incomparable).")
