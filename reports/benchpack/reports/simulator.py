"""The `simulator` report: can the simulated user be trusted in this run? Per run and protocol,
from what the store records (a swapped user simulator moved a pass rate from ~50 to 78,
tau2-bench PR #345; fixing its premature stops from 63 to 79, tau2-bench#182):

- simulator errors: sessions that ended with `error_kind = 'simulator'`;
- premature stops: the simulated user ended the dialogue before the scenario was done —
  `staged_disclosure`: the done signal with stages still undisclosed; `instructed_user`: the
  user's `done` stop signal on a session that did not pass (an upper bound: it also counts an
  agent that failed and said it had finished, which the store cannot tell apart);
  `intent_tracking` and `trigger_rubric` are ended by the runtime or the script, not the user
  (–);
- leaks: `intent_tracking`: a hidden intent given away verbatim or near-verbatim
  (`leaks`, Chinese too; decided at run time, `extra.intent_leaks`) in a user message of a
  turn no later than the one the intent was resolved in (completed, inferred or provided: the user may volunteer it only in the turn
  after), any turn for an unresolved one; `staged_disclosure`: the LLM wordings the runtime
  caught leaking a hidden stage twice (replaced by the rules wording, `extra.simulator_leaks`);
  `instructed_user`: the hidden `unknown` items are not in the store (–);
- off-script turns: `staged_disclosure`: user turns whose LLM wording was rejected and asked
  again (`extra.simulator_retries`); nothing else records one (–).

Rates are over the run's sessions of that protocol (errors outside the simulator included,
ablation variants and skipped sessions left out); each count says its denominator."""

from __future__ import annotations

from typing import Any

from .builtin import ReportContext
from .model import BuiltinReport, Column, Estimate, ReportResult, Table
from .protocols import PROTOCOL_REPORTS
from .protocols.base import SimulatorChecks


def _per_protocol(checks: dict[str, SimulatorChecks], figure: str) -> str:
    """One figure's SQL for every protocol that defines it (0 for the others)."""
    whens = " ".join(f"WHEN '{name}' THEN ({getattr(c, figure)})" for name, c in checks.items()
                     if getattr(c, figure) is not None)
    return f"CASE protocol {whens} ELSE 0 END" if whens else "0"


def simulator_rows(ctx: ReportContext) -> list[dict[str, Any]]:
    """One dict per (run, protocol) with the counts the report and the summary show, counted
    in SQL (each protocol's `SimulatorChecks`): the cost does not grow with the transcripts'
    text."""
    from .plugin_metrics import plugin_protocols

    checks = {name: p.simulator for name, p in PROTOCOL_REPORTS.items()
              if p.simulator is not None}
    checks.update({name: p.simulator for name, p in plugin_protocols(ctx)
                   if p is not None and p.simulator is not None})
    premature = " ".join(f"WHEN '{name}' THEN ({c.premature})" for name, c in checks.items()
                         if c.premature is not None)
    # the three counters of `extra` read with one parse of it (a path each parsed it three
    # times: half of this query on 1 M turns)
    rows = ctx.rows(f"""WITH e AS (
            SELECT run_id, protocol, session_id, repeat,
                   error_kind = 'simulator' AS sim_error,
                   CASE protocol {premature} ELSE NULL END AS premature,
                   coalesce(user_turns, 0) AS user_turns,
                   json_extract_string(extra, ['$.simulator_leaks', '$.simulator_retries',
                                               '$.intent_leaks']) AS counters
            FROM sessions WHERE run_id IN $runs AND ablation IS NULL
              AND status IN ('finished', 'error')
        ), s AS (
            SELECT * EXCLUDE (counters), TRY_CAST(counters[1] AS INTEGER) AS s_leaks,
                   TRY_CAST(counters[2] AS INTEGER) AS retries,
                   TRY_CAST(counters[3] AS INTEGER) AS i_leaks
            FROM e
        ), i AS (
            SELECT run_id, session_id, repeat, count(*) AS n FROM intent_status
            WHERE run_id IN $runs AND pooled_from IS NULL GROUP BY ALL
        ), j AS (
            SELECT s.*, i.n, CASE WHEN i.n IS NOT NULL THEN i_leaks END AS il
            FROM s LEFT JOIN i USING (run_id, session_id, repeat)
        )
        SELECT run_id, protocol, count(*), count(*) FILTER (WHERE sim_error),
               count(*) FILTER (WHERE premature),
               {_per_protocol(checks, "leak_sessions")}, {_per_protocol(checks, "leaked")},
               {_per_protocol(checks, "hidden")}, {_per_protocol(checks, "off_script")},
               sum(user_turns), {_per_protocol(checks, "needs_scan")}
        FROM j GROUP BY run_id, protocol ORDER BY run_id, protocol""")
    scanned: dict[tuple[str, str], tuple[int, int, int]] = {}
    for name, c in checks.items():
        todo = sorted({str(r[0]) for r in rows if r[1] == name and r[-1]})
        if c.scan is not None and todo:
            scanned.update({(run, name): counts for run, counts in c.scan(ctx, todo).items()})
    out = []
    for run, protocol, *counts, _ in rows:
        a: dict[str, Any] = dict(zip(
            ("sessions", "sim_errors", "premature", "leak_sessions", "leaked_items",
             "hidden_items", "off_script", "user_turns"), map(int, counts), strict=True))
        more = scanned.get((str(run), str(protocol)), (0, 0, 0))
        a["leak_sessions"] += more[0]
        a["leaked_items"] += more[1]
        a["hidden_items"] += more[2]
        own = checks.get(str(protocol))
        a.update(run=str(run), protocol=str(protocol),
                 premature_defined=own is not None and own.premature is not None,
                 leaks_defined=own is not None and own.leak_sessions is not None,
                 off_script_defined=own is not None and own.off_script is not None,
                 leaked_text=own.leaked_text if own is not None else "")
        out.append(a)
    return out


def _rate(k: int, n: int, defined: bool = True) -> Estimate:
    return Estimate(k / n if defined and n else None)


def simulator_report(ctx: ReportContext) -> ReportResult:
    labels = ctx.labels()
    res = ReportResult("simulator", "Simulator validity", "Per run and protocol: simulator "
                       "errors, premature stops, leaks of hidden content, off-script turns.",
                       ctx.runs)
    t = Table("Simulated user", [
        Column("agent", "agent"), Column("protocol", "protocol"),
        Column("sessions", "sessions", "int"),
        Column("sim_errors", "simulator errors", "int"), Column("sim_error_rate", "rate", "pct"),
        Column("premature", "premature stops", "int"),
        Column("premature_rate", "rate", "pct"),
        Column("leak_sessions", "sessions with a leak", "int"),
        Column("leak_rate", "rate", "pct"), Column("leaked", "hidden items leaked"),
        Column("off_script", "off-script turns"), Column("user_turns", "user turns", "int")],
        notes=[__doc__.split("\n\n", 1)[1].split("\n\nRates")[0].replace("\n", " "),
               "Rates are over the sessions of the row (errors included, ablation variants "
               "and skipped sessions left out); – where the store cannot tell."])
    for r in simulator_rows(ctx):
        n = r["sessions"]
        t.rows.append([
            labels[r["run"]], r["protocol"], n, r["sim_errors"], _rate(r["sim_errors"], n),
            r["premature"] if r["premature_defined"] else None,
            _rate(r["premature"], n, r["premature_defined"]),
            r["leak_sessions"] if r["leaks_defined"] else None,
            _rate(r["leak_sessions"], n, r["leaks_defined"]),
            (r["leaked_text"].format(leaked=r["leaked_items"], hidden=r["hidden_items"])
             if r["leaks_defined"] else "–"),
            str(r["off_script"]) if r["off_script_defined"] else "–", r["user_turns"]])
    res.tables.append(t)
    return res


def summary_note(ctx: ReportContext) -> str | None:
    """One line for the run summary when the simulated user misbehaved in any selected run."""
    labels = ctx.labels()
    parts = []
    for r in simulator_rows(ctx):
        found = [f"{k} {what}" for k, what in (
            (r["sim_errors"], "simulator errors"), (r["premature"], "premature stops"),
            (r["leak_sessions"], "sessions with a leak of hidden content"),
            (r["off_script"], "off-script turns")) if k]
        if found:
            parts.append(f"{labels[r['run']]} · {r['protocol']}: " + ", ".join(found)
                         + f" in {r['sessions']} sessions")
    if not parts:
        return None
    return ("⚠ Simulated user: " + "; ".join(parts) + " (bench report simulator).")


SIMULATOR = BuiltinReport("simulator", "Simulator validity", "simulator errors, premature "
                          "stops, leaks of hidden content, off-script turns", simulator_report)

__all__ = ["SIMULATOR", "simulator_report", "simulator_rows", "summary_note"]
