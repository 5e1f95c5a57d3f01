"""`bench parity tau2`, the execution half: the same call sequences through τ²'s own code (the
driver's `apply`) and through benchpack's real tool path — `EpisodeEnvironment` + `ToolBox` +
the sandboxed toolset worker, compared on `render_result`, the exact text an agent reads —
each sequence on a fresh database (a task's initial state for its gold list).

The compiled plan comes from the CLI (import and compile are the compiler's); this module only
reads it. τ² and ours run in turn per sequence; a τ² answer for the next sequence is fetched
in a thread while ours runs (the driver is a separate process).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchpack.specs.plan import Plan, PlanSession

from ..env.copying import copy_json
from ..env.environment import EpisodeEnvironment
from ..env.toolbox import ToolBox, render_result
from .callgen import Call, CallMaker, Sequence, Tool, gold_sequences
from .callgen_discoverable import as_templates, discoverable_tools, expand
from .compare import FIXTURES, Declared, Mismatch, Report, compare_sequence, declare, diff

Apply = Callable[[Sequence], dict[str, Any]]
"""τ²'s side: a sequence → the driver's `apply` answer."""


@dataclass
class ParityRun:
    plan: Plan
    domain: str
    extract: dict[str, Any]
    """The driver's `extract` of the domain (tools, database)."""
    tasks: list[dict[str, Any]]
    """tasks.json."""
    workdir: Path
    calls: int = 1000
    seed: int = 0
    permuted: bool = True
    """Also every gold list with its list arguments in another order."""
    service: str = ""
    """The pack's service holding τ²'s database (default: the domain's name)."""
    environment: str = ""
    """The pack's environment (default: the service's name)."""

    def __post_init__(self) -> None:
        self.service = self.service or self.domain
        self.environment = self.environment or self.service

    @property
    def tools(self) -> list[Tool]:
        """Both sides' tools: the agent's, then the user's own (issue 24)."""
        return [Tool(t["name"], t["schema"]["function"]["parameters"], bool(t["mutates_state"]))
                for t in [*self.extract["tools"], *(self.extract.get("user_tools") or [])]]

    @property
    def own_tables(self) -> set[str]:
        """Tables of the pack's service τ²'s database does not have: what τ² keeps in its
        toolkit's memory (banking's unlocked tools, its read-log allowlist)."""
        return set(self.plan.services[self.service].tables) - set(self.extract["db"] or {})

    def own_start(self, task_id: str | None) -> dict[str, dict[str, Any]]:
        """A task's initial rows of `own_tables` (τ² sets them up in memory)."""
        if task_id is None or not self.own_tables:
            return {}
        from benchpack.specs.release_ids import tau2_session_id

        session = next((s for s in self.plan.sessions.values() if s.name == tau2_session_id(
            task_id) or f"tau2-id:{task_id}" in (getattr(s.metadata, "tags", None) or [])),
                       None)
        start = (session.initial_state if session is not None else None) or {}
        data = (start.get("data") or {}).get(self.service) or {}
        tables = self.plan.services[self.service].tables
        return {t: {str(k): {tables[t].key: k, **(fields or {})} for k, fields in rows.items()}
                for t, rows in data.items() if t in self.own_tables}

    @property
    def user_tools(self) -> set[str]:
        return {t["name"] for t in self.extract.get("user_tools") or []}

    def sequences(self) -> list[Sequence]:
        """Every task's gold list (and permuted), then `calls` generated calls over both
        sides' tools (a user tool's call is made as the user's)."""
        gold = gold_sequences(self.tasks)
        out = list(gold)
        if self.permuted:
            out += gold_sequences(self.tasks, permute_seed=self.seed)
        gold_calls = [c for s in gold for c in s.calls]
        # banking's discoverable tools: stand-ins made as tools, run as unlock/give + call
        stand_ins = discoverable_tools(self.extract)
        maker = CallMaker(self.tools + stand_ins, self.extract["db"],
                          gold_calls + as_templates(gold_calls), seed=self.seed)
        made = maker.sequences(self.calls)
        for seq in made:
            if stand_ins:
                seq.calls = [x for c in seq.calls for x in expand(c, maker.rng)]
            for c in seq.calls:
                if c.name in self.user_tools:
                    c.requestor = "user"
        return out + made


def _session(plan: Plan, environment: str) -> PlanSession:
    for s in plan.sessions.values():
        if s.environment == environment:
            return s
    raise ValueError(f"the plan has no session in the environment `{environment}`")


def _keyed(rows: dict[str, list[dict[str, Any]]], keys: dict[str, str]
           ) -> dict[str, dict[str, Any]]:
    return {t: {str(r.get(keys[t])): r for r in table} for t, table in rows.items()}


def _changes(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]],
             exact: bool) -> dict[str, dict[str, Any]]:
    """Rows that differ (`exact`: by canonical JSON, else by Python equality, as the driver's
    per-call changes). The same object is the same row (rows are never changed in place)."""
    out: dict[str, dict[str, Any]] = {}
    for t in sorted(set(before) | set(after)):
        a, b = before.get(t, {}), after.get(t, {})
        for k in [*a, *(k for k in b if k not in a)]:
            if k in a and k in b:
                if a[k] is b[k]:
                    continue
                equal = (json.dumps(a[k], sort_keys=True) == json.dumps(b[k], sort_keys=True)
                         if exact else a[k] == b[k])
                if equal:
                    continue
            row = b.get(k)
            out.setdefault(t, {})[k] = copy_json(row) if row is not None else None
    return out


def _apply_start(state: Any, start: dict[str, dict[str, Any]]) -> None:
    for table, rows in start.items():
        for key, row in rows.items():
            if row is None:
                state.delete_row(table, key)
            else:
                state.put_row(table, row)


async def run_ours(plan: Plan, environment: str, service: str, calls: list[Call],
                   start: dict[str, dict[str, Any]], track: set[str], root: Path,
                   user_start: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """One sequence through benchpack's tool path, on a fresh environment (with τ²'s start
    changes applied first): each call's text as the agent reads it, error flag and changes.
    A call with `requestor: user` goes through the user's toolbox (its own tools, its own
    service `<service>_user`); its changes are `user_changes`."""
    env = EpisodeEnvironment.create(plan, environment, root)
    state = env.services[service]
    user_state = env.services.get(f"{service}_user")
    keys = {t: spec.key for t, spec in state.tables.items()}
    user_keys = {t: spec.key for t, spec in user_state.tables.items()} if user_state else {}
    _apply_start(state, start)
    if user_state is not None:
        _apply_start(user_state, user_start or {})
    session = _session(plan, environment)
    box = ToolBox(plan, session, env, allow_python=True)
    user_box = ToolBox(plan, session, env, allow_python=True, side="user",
                       tools=list(plan.environments[environment].user_tools))

    def rows() -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        return (_keyed(state.live_rows(), keys),
                _keyed(user_state.live_rows(), user_keys) if user_state else {})

    first = before = rows()
    out: list[dict[str, Any]] = []
    try:
        for call in calls:
            record = await (user_box if call.requestor == "user" else box).call(
                call.name, call.arguments)
            item: dict[str, Any] = {"content": render_result(record),
                                    "error": record.error is not None}
            if call.name in track:
                after = rows()
                item["changes"] = _changes(before[0], after[0], exact=False)
                user = _changes(before[1], after[1], exact=False)
                if user:
                    item["user_changes"] = user
                before = after
            out.append(item)
    finally:
        await env.aclose()
    final = rows()
    result = {"calls": out, "changes": _changes(first[0], final[0], exact=True)}
    user = _changes(first[1], final[1], exact=True)
    if user:
        result["user_changes"] = user
    return result


def fixture_mismatches(plan: Plan, service: str, db: dict[str, Any]) -> list[Mismatch]:
    """The pack's fixtures against τ²'s loaded database, row by row."""
    svc = plan.services[service]
    found = []
    for table, spec in svc.tables.items():
        ours = {str(r.get(spec.key)): r for r in spec.rows}
        theirs = db.get(table) or {}
        lines: list[str] = []
        for key in [*theirs, *(k for k in ours if k not in theirs)]:
            a, b = theirs.get(key), ours.get(key)
            if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True):
                diff(a, b, f"{table}[{json.dumps(key)}]", lines, limit=10)
        if lines:
            found.append(Mismatch("fixtures", None, FIXTURES, "db", lines))
    return found


ALIASED_USER_DB = ("τ²'s set_state points the user's toolkit at the agent's database after a "
                   "task's initialization_data (its user_db is then the agent's): those "
                   "tables are left out of the user's side")


def _user_tables_only(theirs: dict[str, Any], tables: set[str]) -> tuple[dict[str, Any], bool]:
    """τ²'s answer with its `user_db` parts cut to the user service's tables, and whether
    anything was cut (`ALIASED_USER_DB`)."""
    cut = False

    def keep(part: dict[str, Any] | None) -> dict[str, Any] | None:
        nonlocal cut
        if not part or "user_db" not in part:
            return part
        mine = {t: rows for t, rows in part["user_db"].items() if t in tables}
        cut = cut or len(mine) != len(part["user_db"])
        return {**part, "user_db": mine}

    out = {**theirs, "start": keep(theirs.get("start")), "changes": keep(theirs.get("changes")),
           "calls": [{**c, "changes": keep(c.get("changes"))} if "changes" in c else c
                     for c in theirs.get("calls") or []]}
    return out, cut


def _cut_tables(ours: dict[str, Any], tables: set[str]) -> None:
    """Our answer without the changes of `tables` (in place)."""
    for part in [ours, *ours["calls"]]:
        changes = part.get("changes")
        if changes:
            part["changes"] = {t: rows for t, rows in changes.items() if t not in tables}


async def run_parity(run: ParityRun, apply: Apply, declared: list[Declared],
                     progress: Callable[[str], None] | None = None) -> Report:
    """Every sequence on both sides, compared (see the module docstring)."""
    report = Report(run.domain, declared=list(declared))
    service = run.service
    own = run.own_tables
    if own:
        report.notes.append("left out of the row comparison: " + ", ".join(sorted(own))
                            + " (τ² keeps them in its toolkit's memory; what they do shows in "
                            "the texts, e.g. a call before an unlock is refused alike)")
    fixtures = fixture_mismatches(run.plan, service, run.extract["db"])
    declare(fixtures, declared)
    report.mismatches.extend(fixtures)
    for m in fixtures:
        report.row(FIXTURES).db += 1
        report.row(FIXTURES).declared += m.declared is not None
    track = {t.name for t in run.tools if t.mutates}
    sequences = run.sequences()
    pending = asyncio.ensure_future(asyncio.to_thread(apply, sequences[0])) if sequences \
        else None
    for i, seq in enumerate(sequences):
        assert pending is not None
        theirs = await pending
        pending = asyncio.ensure_future(asyncio.to_thread(apply, sequences[i + 1])) \
            if i + 1 < len(sequences) else None
        root = run.workdir / "ws"
        user_svc = run.plan.services.get(f"{service}_user")
        theirs, cut = _user_tables_only(theirs, set(user_svc.tables) if user_svc else set())
        if cut and ALIASED_USER_DB not in report.notes:
            report.notes.append(ALIASED_USER_DB)
        start = theirs.get("start") or {}
        ours = await run_ours(run.plan, run.environment, service, seq.calls,
                              {**start.get("db", {}), **run.own_start(seq.task_id)},
                              track, root, start.get("user_db", {}))
        shutil.rmtree(root, ignore_errors=True)
        if own:
            _cut_tables(ours, own)
        found = compare_sequence(seq.id, [c.as_json() for c in seq.calls], theirs, ours)
        declare(found, declared)
        report.add(found, [c.name for c in seq.calls])
        if progress is not None and (i + 1) % 20 == 0:
            progress(f"{i + 1}/{len(sequences)} sequences, "
                     f"{len(report.undeclared)} undeclared mismatches so far")
    return report
