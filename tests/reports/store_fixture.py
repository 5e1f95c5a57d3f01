"""A small hand-made run store whose report figures are computed by hand in the tests.

Two runs (agents `model-a`, `model-b`), two repeats each:

intent tracking (PROC, COMP per session and repeat)
  model-a  s1 (4 intents): r0 3/4 completed+inferred, r1 2/4;  COMP 1.0, 0.5
           s2 (1 intent) : r0 0/1, r1 1/1;                    COMP 0.0, 1.0
  model-b  s1: r0 1/4, r1 1/4; s2: r0 1/1, r1 1/1;  COMP all 0.5
  → model-a PROC per repeat: r0 (0.75 + 0)/2 = 0.375, r1 (0.5 + 1)/2 = 0.75
    mean 0.5625, std over repeats = |0.75 − 0.375|/√2 = 0.265165…
  → micro (pooled) completed share of model-a: see `INTENTS`.
triggers (model-a): emergent PASS, PARTIAL; critical FAIL, PASS, (judge error); recovery PASS
verified (model-a): t1 passes 2/2, t2 passes 1/2; (model-b): t1 0/2, t2 2/2
staged (model-a): f1 0.5 (r0) and 0.7 (r1), category pro
ablation (model-a): s3 with PROC 1.0 / COMP 1.0, its variant s3~nodeps PROC 0.5 / COMP 1.0
  (variants are left out of every headline figure and of the status distributions)

transcripts (for the HTML drill-down; no report figure reads them): model-a s1 r1 (two turns,
a tool call, intents decided at turns 1 and 2, a 2-item checklist matching its COMP 0.5, text
that looks like HTML), the trigger session `tr` (one turn per trigger; the judged reply of
turn 3 was regenerated, so it differs from the transcript) and staged `sd` r0 (stage events).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchpack.runtime.store import SessionRows, Store

RUNS = {"run-a": "model-a", "run-b": "model-b"}


def _session(run: str, sid: str, repeat: int, protocol: str, **cols: Any) -> dict[str, Any]:
    base = {
        "run_id": run, "session_id": sid, "repeat": repeat, "fingerprint": "f" + sid,
        # one episode per session (a variant in its base's): every session is its own cluster
        "episode": "ep-" + sid.split("~")[0], "name": sid.split(".")[-1], "protocol": protocol, "persona": "p",
        "agent": RUNS[run], "status": "finished", "termination": "all_resolved",
        "turns": 3, "user_turns": 2, "assistant_turns": 4, "tool_calls": 1, "compactions": 0,
        "judge_errors": 0, "grader_errors": 0, "prompt_tokens": 100, "completion_tokens": 10,
        "cost": 0.01, "started_at": 0.0, "finished_at": 1.0, "duration_s": 1.0,
        "domain": "pharmacy", "category": "triage",
    }
    base.update(cols)
    return base


def _intents(statuses: list[str], turns: list[int] | None = None) -> list[tuple[Any, ...]]:
    return [(f"i{k}", f"intent {k} text", "session", st, turns[k] if turns else 1, None, None)
            for k, st in enumerate(statuses)]


HOSTILE = '<script>alert("x")</script> & </script><b>not bold</b>'
"""Text that must reach the page escaped (it stands in for arbitrary transcript content)."""
LONG_REPLY = "Plan: " + "word " * 1200
INTENT_TURNS = {("run-a", "s1", 1): [2, 1, 1, 2]}
"""Turns at which the intents of a session were decided (default: all at turn 1)."""


def _message(seq: int, turn: int, role: str, content: str, tool_calls: Any = None,
             call_id: str | None = None, name: str | None = None) -> tuple[Any, ...]:
    return (seq, turn, role, content, json.dumps(tool_calls) if tool_calls else None,
            call_id, name)


def _transcripts() -> dict[tuple[str, str, int], dict[str, list[tuple[Any, ...]]]]:
    """Child-table rows (without the run/session/repeat prefix) of the sessions that have a
    transcript."""
    s1 = {
        "messages": [
            _message(0, 1, "user", f"Check the INR log please. {HOSTILE}"),
            _message(1, 1, "assistant", "", [{"id": "c1", "name": "read_file",
                                             "arguments": {"path": "log.csv"}}]),
            _message(2, 1, "tool", '{"content": "P-1,4.6"}', call_id="c1", name="read_file"),
            _message(3, 1, "assistant", "P-1 is high. Shall I email the prescriber?"),
            _message(4, 2, "user", "Yes, and the dose is 35 mg a week."),
            _message(5, 2, "assistant", LONG_REPLY),
        ],
        "tool_calls": [(0, 1, 1, "c1", "read_file", "read", json.dumps({"path": "log.csv"}),
                        json.dumps({"content": "P-1,4.6"}), None, 0.0, 0.01, None, "agent")],
        "checklist_results": [
            ("note", "A note is filed.", "rule", 1.0, 1.0, "outcome", "1 call matched", None),
            ("email", f"The prescriber is emailed. {HOSTILE}", "rubric", 0.0, 1.0, "outcome",
             "no email sent", None)],
    }
    tr = {"messages": [m for k in range(1, 7) for m in (
        _message(2 * k - 2, k, "user", f"User turn {k}."),
        _message(2 * k - 1, k, "assistant",
                 "An earlier draft." if k == 3 else f"Reply {k}: here is quote {k} in context."))]}
    sd = {"messages": [_message(0, 1, "user", "Find me a flat."),
                       _message(1, 1, "assistant", "Which area?"),
                       _message(2, 2, "user", "Near the river."),
                       _message(3, 2, "assistant", "Here are three.")],
          "stage_events": [(1, "area", 0, "asks_about", "disclosed", "user named the area"),
                           (2, "budget", 1, "mentions", "pushed", HOSTILE)]}
    return {("run-a", "s1", 1): s1, ("run-a", "tr", 0): tr, ("run-a", "sd", 0): sd}


INTENTS = {  # (run, session, repeat) -> statuses
    ("run-a", "s1", 0): ["completed", "completed", "inferred", "provided"],
    ("run-a", "s1", 1): ["completed", "inferred", "provided", "provided"],
    ("run-a", "s2", 0): ["provided"],
    ("run-a", "s2", 1): ["completed"],
    ("run-b", "s1", 0): ["completed", "provided", "provided", "provided"],
    ("run-b", "s1", 1): ["inferred", "provided", "provided", "unresolved"],
    ("run-b", "s2", 0): ["completed"],
    ("run-b", "s2", 1): ["inferred"],
}
COMP = {("run-a", "s1", 0): 1.0, ("run-a", "s1", 1): 0.5, ("run-a", "s2", 0): 0.0,
        ("run-a", "s2", 1): 1.0}


def build_store(path: Path) -> Path:
    store = Store(path)
    try:
        for run, agent in RUNS.items():
            store.upsert_run({"run_id": run, "created_at": 1.0 if run == "run-a" else 2.0,
                              "updated_at": 3.0, "plan_path": "build", "plan_hash": "h",
                              "pack_name": "fixture", "pack_version": "1",
                              "benchpack_version": "0", "agent": agent, "simulator": "rules",
                              "judge": "rules", "repeats": 2, "config": {}, "status": "finished"})
        batch: list[SessionRows] = []
        for (run, sid, rep), statuses in INTENTS.items():
            n = len(statuses)
            counts = {s: statuses.count(s) for s in ("completed", "inferred", "provided",
                                                      "unresolved")}
            proc = (counts["completed"] + counts["inferred"]) / n
            batch.append(SessionRows(run, sid, rep, _session(
                run, sid, rep, "intent_tracking", intents=n, proc=proc,
                comp=COMP.get((run, sid, rep), 0.5), **counts),
                {"intent_status": [(run, sid, rep, *r) for r in _intents(
                    statuses, INTENT_TURNS.get((run, sid, rep)))]}))
        # dependency ablation: s3 and its variant, model-a, repeat 0
        batch.append(SessionRows("run-a", "s3", 0, _session(
            "run-a", "s3", 0, "intent_tracking", intents=2, completed=2, proc=1.0, comp=1.0,
            category="handoff"), {"intent_status": [
                ("run-a", "s3", 0, *r) for r in _intents(["completed", "completed"])]}))
        batch.append(SessionRows("run-a", "s3~nodeps", 0, _session(
            "run-a", "s3~nodeps", 0, "intent_tracking", intents=2, completed=1, provided=1,
            proc=0.5, comp=1.0, ablation="without_dependencies", base_session="s3",
            category="handoff"), {"intent_status": [
                ("run-a", "s3~nodeps", 0, *r) for r in _intents(["completed", "provided"])]}))
        # triggers, model-a
        labels = [("emergent", "PASS"), ("emergent", "PARTIAL"), ("critical", "FAIL"),
                  ("critical", "PASS"), ("critical", None), ("recovery", "PASS")]
        score = {"PASS": 1.0, "PARTIAL": 0.5, "FAIL": 0.0}
        rows = [("run-a", "tr", 0, f"t{k}", typ, k + 1, "offline", "authored", "[]", "p", "pa",
                 "f", f"Reply {k + 1}: here is quote {k + 1} in context.", lab,
                 score.get(lab) if lab else None, f"why {k + 1}" if k else HOSTILE,
                 f"quote {k + 1}", lab is not None, None if lab else "judge error")
                for k, (typ, lab) in enumerate(labels)]
        batch.append(SessionRows("run-a", "tr", 0, _session(
            "run-a", "tr", 0, "trigger_rubric", triggers=6, judge_errors=1,
            termination="offline"), {"triggers": rows}))
        # verified outcomes
        passes = {("run-a", "t1"): [True, True], ("run-a", "t2"): [True, False],
                  ("run-b", "t1"): [False, False], ("run-b", "t2"): [True, True]}
        for (run, task), outcome in passes.items():
            for rep, ok in enumerate(outcome):
                batch.append(SessionRows(run, task, rep, _session(
                    run, task, rep, "verified_outcome", score=0.9 if ok else 0.4, passed=ok,
                    termination="answered")))
        # staged disclosure
        for rep, f1 in enumerate([0.5, 0.7]):
            batch.append(SessionRows("run-a", "sd", rep, _session(
                "run-a", "sd", rep, "staged_disclosure", f1=f1, recall=f1, precision=f1,
                triples_gt=10, triples_predicted=8, kg_status="ok", termination="done",
                category="pro")))
        # llm calls: two judge calls (one failed), one cached agent call
        calls = [("run-a", "s1", 0, 0, "judge", "rubric", "j", "h1", 50, 5, 0.001, 0.2, False,
                  None, 1, 1, 0.0),
                 ("run-a", "s1", 0, 1, "judge", "rubric", "j", "h2", 50, 5, 0.0, 0.4, False,
                  "malformed output twice", 2, 1, 0.0),
                 ("run-a", "s1", 0, 2, "agent", "agent_step", "m", "h3", 70, 7, 0.0, 0.0, True,
                  None, 0, 1, 0.0)]
        batch[0].tables["llm_calls"] = calls
        for rows_ in batch:
            for table, data in _transcripts().get(
                    (rows_.run_id, rows_.session_id, rows_.repeat), {}).items():
                rows_.tables.setdefault(table, []).extend(
                    (rows_.run_id, rows_.session_id, rows_.repeat, *r) for r in data)
        store.write_batch(batch)
    finally:
        store.close()
    return path
