"""The exact inventory of a run: every (session, repeat) the plan promised, accounted for as
finished, errored with its kind, skipped or not run — so that no report shrinks a denominator
silently. `bench report inventory` shows it; every other report carries its one-line summary.

The promise is what `bench run` recorded (`runs.config.planned_sessions` × `runs.repeats`); a
run imported from released results (`runs.config.imported`) promised what the release holds; a
run recorded before either has no promise, and its inventory says so and counts what the store
holds. Errors of the agent are its failures (scored with the protocol's worst score, in the
figures); errors of the infrastructure, the simulator or the judge, skipped sessions (a
dependency failed) and sessions never run are left out of the figures, and counted here."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .model import BuiltinReport, Column, ReportResult, Table
from .sqltext import literals

if TYPE_CHECKING:
    from .builtin import ReportContext

EXCLUDED_KINDS = ("infrastructure", "simulator", "judge", "unclassified")
"""Error kinds left out of the figures (`agent` errors are scored as failures)."""


@dataclass
class Inventory:
    run: str
    promised: int | None
    """(session, repeat) pairs the plan promised; None when the run did not record it."""
    planned_sessions: int | None
    repeats: int
    finished: int = 0
    agent_errors: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    """Errors outside the agent, by kind."""
    skipped: int = 0
    other: int = 0
    """Rows in another state (a session still running, or interrupted mid-write)."""
    not_run: int | None = None
    """Promised pairs with no row in the store."""
    imported: str | None = None
    """`<format>, <source file>` of a run imported from released results (`bench import-run`,
    or a rejudge of one): it promised what the release holds, every row it stored."""

    @property
    def excluded(self) -> int:
        """Everything promised that no figure counts."""
        return (sum(self.errors.values()) + self.skipped + self.other + (self.not_run or 0))

    def line(self, label: str) -> str:
        from .builtin import excluded_text

        parts = [f"{self.finished:,} finished",
                 f"{self.agent_errors:,} agent error{'' if self.agent_errors == 1 else 's'} "
                 "(scored as failures)"]
        out = excluded_text(self.errors)
        if out:
            parts.append(out + " (excluded)")
        if self.skipped:
            parts.append(f"{self.skipped:,} skipped (a dependency failed; excluded)")
        if self.other:
            parts.append(f"{self.other:,} unfinished (excluded)")
        if self.imported is not None:
            head = f"{label}: {self.promised:,} imported ({self.imported})"
        elif self.promised is None:
            head = (f"{label}: promised not recorded (a run from before benchpack recorded its "
                    f"plan); in the store")
        else:
            head = (f"{label}: {self.promised:,} promised ({self.planned_sessions:,} sessions "
                    f"× {self.repeats} repeat{'' if self.repeats == 1 else 's'})")
            parts.append(f"{self.not_run:,} not run (excluded)")
        return f"{head} = {' + '.join(parts)}; {self.excluded:,} excluded from the figures"


def inventories(ctx: ReportContext) -> dict[str, Inventory]:
    """Run id → its inventory (ablation variants and `--alone` sessions count like any)."""
    out: dict[str, Inventory] = {}
    for run, repeats, config in ctx.rows("""SELECT run_id, coalesce(repeats, 1), config
            FROM runs WHERE run_id IN $runs ORDER BY run_id"""):
        cfg = json.loads(config) if isinstance(config, str) else (config or {})
        planned = cfg.get("planned_sessions")
        reps = int(repeats)
        imported = cfg.get("imported") if isinstance(cfg.get("imported"), dict) else None
        if imported is not None and planned is None:
            # a release's results: what it holds is the promise, and every row was stored
            (n,) = ctx.rows("""SELECT count(DISTINCT (session_id, repeat)) FROM sessions
                WHERE run_id = ?""", [run])
            out[run] = Inventory(run, int(n[0]), None, reps, not_run=0, imported=", ".join(
                str(imported[k]) for k in ("format", "source") if imported.get(k)))
            continue
        out[run] = Inventory(run, None if planned is None else len(planned) * reps,
                             None if planned is None else len(planned), reps)
        if planned:
            # the plan as SQL literals: DuckDB binds a Python list parameter at ~0.2 ms an
            # element (a plan of 2,000 sessions: 0.4 s a run, in every report's inventory line)
            ids = literals(planned)
            (recorded,) = ctx.rows(f"""SELECT count(DISTINCT (session_id, repeat)) FROM sessions
                WHERE run_id = ? AND session_id IN ({ids}) AND repeat < ?""", [run, reps])
            out[run].not_run = len(planned) * reps - int(recorded[0])
        elif planned is not None:  # an empty plan: nothing promised, nothing recorded of it
            out[run].not_run = 0
    # a store from before `sessions.error_kind` (schema < 3): its errors are unclassified
    # (asked of the table alone: `duckdb_columns()` binds every view of the connection first,
    # 0.01-0.02 s of each report on a fresh connection)
    kind_col = ("error_kind" if ctx.rows("""SELECT 1 FROM pragma_table_info('sessions')
        WHERE name = 'error_kind'""") else "NULL")
    for run, status, kind, n in ctx.rows(f"""SELECT run_id, status,
            coalesce({kind_col}, 'unclassified'), count(*) FROM sessions
            WHERE run_id IN $runs GROUP BY ALL"""):
        inv = out[run]
        if status == "finished":
            inv.finished += n
        elif status == "skipped":
            inv.skipped += n
        elif status == "error" and kind == "agent":
            inv.agent_errors += n
        elif status == "error":
            inv.errors[kind] = inv.errors.get(kind, 0) + n
        else:
            inv.other += n
    return out


def inventory_note(ctx: ReportContext) -> str:
    """The one line every report carries: each selected run's inventory."""
    labels = ctx.labels()
    return "Inventory — " + "; ".join(inv.line(labels[run])
                                      for run, inv in inventories(ctx).items())


def inventory(ctx: ReportContext) -> ReportResult:
    labels = ctx.labels()
    res = ReportResult("inventory", "Inventory",
                       "Every (session, repeat) the plan promised: finished, errored (by "
                       "whose error), skipped or not run; what the figures leave out.",
                       ctx.runs)
    t = Table("Per run", [Column("agent", "agent"), Column("run", "run"),
                          Column("promised", "promised", "int"),
                          Column("finished", "finished", "int"),
                          Column("agent_errors", "agent errors (scored)", "int"),
                          *[Column(k, f"{k} errors", "int") for k in EXCLUDED_KINDS],
                          Column("skipped", "skipped", "int"),
                          Column("unfinished", "unfinished", "int"),
                          Column("not_run", "not run", "int"),
                          Column("excluded", "excluded", "int")],
              notes=["promised = the plan's selected sessions × the run's repeats, as `bench "
                     "run` recorded them (an imported run: the session runs of the release; – "
                     "for a run recorded before either). Agent errors "
                     "count in every figure as failures; the other errors, skipped sessions "
                     "(a dependency failed), unfinished and never-run ones are excluded. "
                     "finished + agent errors + excluded = promised."])
    for run, inv in inventories(ctx).items():
        t.rows.append([labels[run], run, inv.promised, inv.finished, inv.agent_errors,
                       *[inv.errors.get(k, 0) for k in EXCLUDED_KINDS], inv.skipped,
                       inv.other, inv.not_run, inv.excluded])
    res.tables.append(t)
    return res


INVENTORY = BuiltinReport("inventory", "Inventory", "every promised (session, repeat): "
                          "finished, errored by kind, skipped, not run", inventory)
