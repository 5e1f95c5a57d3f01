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

from pathlib import Path
from typing import Any

from benchpack.specs.text import LeakMatcher

from .builtin import ReportContext
from .model import BuiltinReport, Column, Estimate, ReportResult, Table

PREMATURE = {
    "staged_disclosure": "termination = 'done' AND stages_disclosed < stages",
    "instructed_user": "termination = 'done' AND passed IS DISTINCT FROM TRUE "
                       "AND status = 'finished'",
}
"""SQL over `sessions`: the simulated user stopped before the scenario was done."""


def _scanned_leaks(ctx: ReportContext, runs: list[str]
                   ) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(run, protocol) → (sessions with a leak, hidden intents leaked, intents) over the
    intent-tracking sessions of `runs` stored without `extra.intent_leaks` (stores written
    before the runtime decided it, imported runs): their user messages scanned here. Sessions
    the runtime wrote are counted in SQL (`simulator_rows`). A run's counts are kept under the
    store file's identity (`store_facts`): an old store read again is not scanned again
    (1.5 s for 84 k intents of the 1 M-turn benchmark store; 10 s before each text was
    tokenised once), and `bench run` or `--resume` on it fills `extra.intent_leaks` for good."""
    from benchpack.specs.storefile import record_store_facts, store_facts, store_identity

    identity = store_identity(ctx.db) if ctx.db is not None else None
    key = f"intent_leaks:{_rule_version()}"
    known = store_facts(ctx.db, identity).get(key, {}) if ctx.db is not None else {}
    out = {(r, "intent_tracking"): (int(c[0]), int(c[1]), int(c[2]))
           for r, c in known.items() if r in runs}
    todo = [r for r in runs if r not in known]
    if not todo:
        return out
    marks = ", ".join("?" * len(todo))
    rows = ctx.con.execute(f"""SELECT i.run_id, i.session_id, i.repeat, i.text,
            list(t.user_message ORDER BY t.turn) FILTER (WHERE t.user_message IS NOT NULL
                AND (i.turn IS NULL OR t.turn <= i.turn))
        FROM intent_status i JOIN sessions s USING (run_id, session_id, repeat)
             LEFT JOIN turns t USING (run_id, session_id, repeat)
        WHERE i.run_id IN ({marks}) AND i.pooled_from IS NULL AND s.ablation IS NULL
          AND s.protocol = 'intent_tracking' AND s.status IN ('finished', 'error')
          AND TRY_CAST(s.extra->>'$.intent_leaks' AS INTEGER) IS NULL
        GROUP BY i.run_id, i.session_id, i.repeat, i.intent_id, i.text, i.turn
        ORDER BY ALL""", todo).fetchall()
    per_session: dict[tuple[str, str, int], tuple[int, int]] = {}
    matcher = LeakMatcher()
    last = None
    for run, session, repeat, text, messages in rows:
        key_s = (str(run), str(session), int(repeat))
        if key_s != last:
            matcher.forget_messages()
            last = key_s
        leaked = int(any(matcher.leaks(str(text), str(m)) for m in (messages or [])))
        n_leaked, n = per_session.get(key_s, (0, 0))
        per_session[key_s] = (n_leaked + leaked, n + 1)
    counted = {r: (0, 0, 0) for r in todo}
    for (run, _, _), (leaked, n) in per_session.items():
        sessions, items, hidden = counted[run]
        counted[run] = (sessions + int(leaked > 0), items + leaked, hidden + n)
    if ctx.db is not None:
        record_store_facts(ctx.db, identity, {key: {**known, **counted}})
    out.update({(r, "intent_tracking"): c for r, c in counted.items() if c[2]})
    return out


def _rule_version() -> str:
    """The leak rule's code (`benchpack.specs.text`), hashed: counts kept under another rule
    are not reused."""
    import hashlib

    from benchpack.specs import text

    return hashlib.sha256(Path(text.__file__).read_bytes()).hexdigest()[:16]


def simulator_rows(ctx: ReportContext) -> list[dict[str, Any]]:
    """One dict per (run, protocol) with the counts the report and the summary show, counted
    in SQL: the cost does not grow with the transcripts' text."""
    cases = " ".join(f"WHEN '{p}' THEN ({sql})" for p, sql in PREMATURE.items())
    rows = ctx.rows(f"""WITH s AS (
            SELECT run_id, protocol, session_id, repeat,
                   error_kind = 'simulator' AS sim_error,
                   CASE protocol {cases} ELSE NULL END AS premature,
                   coalesce(user_turns, 0) AS user_turns,
                   TRY_CAST(extra->>'$.simulator_leaks' AS INTEGER) AS s_leaks,
                   TRY_CAST(extra->>'$.simulator_retries' AS INTEGER) AS retries,
                   TRY_CAST(extra->>'$.intent_leaks' AS INTEGER) AS i_leaks
            FROM sessions WHERE run_id IN $runs AND ablation IS NULL
              AND status IN ('finished', 'error')
        ), i AS (
            SELECT run_id, session_id, repeat, count(*) AS n FROM intent_status
            WHERE run_id IN $runs AND pooled_from IS NULL GROUP BY ALL
        ), j AS (
            SELECT s.*, i.n, CASE WHEN protocol = 'intent_tracking' AND i.n IS NOT NULL
                                  THEN i_leaks END AS il
            FROM s LEFT JOIN i USING (run_id, session_id, repeat)
        )
        SELECT run_id, protocol, count(*), count(*) FILTER (WHERE sim_error),
               count(*) FILTER (WHERE premature),
               CASE protocol WHEN 'intent_tracking' THEN count(*) FILTER (WHERE il > 0)
                    WHEN 'staged_disclosure' THEN count(*) FILTER (WHERE s_leaks <> 0)
                    ELSE 0 END,
               CASE protocol WHEN 'intent_tracking' THEN sum(coalesce(il, 0))
                    WHEN 'staged_disclosure' THEN sum(coalesce(s_leaks, 0)) ELSE 0 END,
               CASE WHEN protocol = 'intent_tracking'
                    THEN sum(CASE WHEN il IS NOT NULL THEN n ELSE 0 END) ELSE 0 END,
               CASE WHEN protocol = 'staged_disclosure' THEN sum(coalesce(retries, 0))
                    ELSE 0 END,
               sum(user_turns),
               count(*) FILTER (WHERE protocol = 'intent_tracking' AND n IS NOT NULL
                                AND il IS NULL)
        FROM j GROUP BY run_id, protocol ORDER BY run_id, protocol""")
    scanned = _scanned_leaks(ctx, sorted({str(r[0]) for r in rows if r[-1]}))
    out = []
    for run, protocol, *counts, _ in rows:
        a: dict[str, Any] = dict(zip(
            ("sessions", "sim_errors", "premature", "leak_sessions", "leaked_items",
             "hidden_items", "off_script", "user_turns"), map(int, counts), strict=True))
        more = scanned.get((str(run), str(protocol)), (0, 0, 0))
        a["leak_sessions"] += more[0]
        a["leaked_items"] += more[1]
        a["hidden_items"] += more[2]
        a.update(run=str(run), protocol=str(protocol),
                 premature_defined=protocol in PREMATURE,
                 leaks_defined=protocol in ("intent_tracking", "staged_disclosure"),
                 off_script_defined=protocol == "staged_disclosure")
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
            (f"{r['leaked_items']} of {r['hidden_items']} intents"
             if r["protocol"] == "intent_tracking" else
             f"{r['leaked_items']} caught" if r["leaks_defined"] else "–"),
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
