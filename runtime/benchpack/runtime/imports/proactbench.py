"""`bench import-run proactbench <model>_proactivity_bench_results.jsonl`: a released model's
results → a run in the store, with the tables an offline `bench run` of the imported pack writes.

Per results row (one dialogue) one finished `trigger_rubric` session (trigger mode `offline`):

- `triggers`: one row per trigger point, the regenerated answer as `response` and the released
  judge's label, rationale and evidence (SKIPPED kept as SKIPPED: not in N, as ProactBench);
- `messages` / `turns`: with `--plan` (the plan compiled from `bench import proactbench` of the
  corpus) every turn of the fixed dialogue, the regenerated answer at trigger turns and the
  reference answer elsewhere, and `extra.reference_responses` holds the curation-time answers
  the regenerated ones replaced — exactly what an offline run stores, so `bench rejudge` can
  re-judge it. Without a plan only the trigger turns are known (the results file keeps no
  others): they are stored, and rejudging needs the plan;
- `llm_calls`: the released per-dialogue token usage, one row per role (`agent`, `judge`) with
  `purpose` = 'imported' and `attempts` = the released call count (no latency, cost, prompts).

The session ids are those `bench import proactbench` gives the corpus (`session_key`, which
must stay equal to the importer's; a test checks it), so the run joins the imported pack.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchpack.specs.jsonl import read_jsonl
from benchpack.specs.persona import COHERENT_STYLES
from benchpack.specs.release_fields import need
from benchpack.specs.release_ids import proactbench_episode_id, proactbench_session_key, safe_id

from ..store import SessionRows, Store
from .base import ImportRunError

SCORES = {"PASS": 1.0, "PARTIAL": 0.5, "FAIL": 0.0}
TYPES = ("EMERGENT", "CRITICAL", "RECOVERY")


episode_id = proactbench_episode_id  # the ids `bench import proactbench` gave the sessions
session_key = proactbench_session_key


@dataclass
class ImportRunSummary:
    run_id: str
    sessions: int = 0
    triggers: int = 0
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    return read_jsonl(path, ImportRunError,
                      "the released <model>_proactivity_bench_results.jsonl")


def _get(row: dict[str, Any], key: str, kind: type, where: str) -> Any:
    return need(row, key, kind, where, ImportRunError, "a ProactBench results file")


def default_run_id(path: Path, rows: list[tuple[int, dict[str, Any]]]) -> str:
    model = rows[0][1].get("evaluated_model")
    base = model if isinstance(model, str) and model else path.name.split(
        "_proactivity_bench_results")[0]
    return f"proactbench-{safe_id(base)}"


def import_run(path: Path, db: Path, run_id: str | None = None, plan_path: Path | None = None,
               pack: str = "proactbench",
               progress: Callable[[int], None] | None = None) -> ImportRunSummary:
    rows = _rows(path)
    plan = None
    if plan_path is not None:
        from ..planfile import load_plan
        plan = load_plan(plan_path)
        pack = plan.pack.name
    rid = run_id or default_run_id(path, rows)
    summary = ImportRunSummary(rid)
    models = {r.get("evaluated_model") for _, r in rows}
    if len(models) > 1:
        raise ImportRunError(f"{path}: rows of several models ({', '.join(map(str, models))}); "
                             "a run is one agent: import one model's file at a time")
    model = str(models.pop())
    batch: list[SessionRows] = []
    seen: dict[str, int] = {}
    missing_plan = 0
    for n, row in rows:
        where = f"{path}:{n}"
        uid = _get(row, "unique_id_eval", str, where)
        style = row.get("style_combination_index")
        if not isinstance(style, int) or not 1 <= style <= 24:
            raise ImportRunError(f"{where}: `style_combination_index` must be 1–24, found "
                                 f"{json.dumps(style)}")
        sid = session_key(pack, uid, style)
        if sid in seen:
            raise ImportRunError(f"{where}: dialogue {uid} repeats line {seen[sid]} (one row "
                                 "per dialogue)")
        seen[sid] = n
        ps = None
        if plan is not None:
            ps = plan.sessions.get(sid)
            if ps is None:
                missing_plan += 1
        batch.append(_session(rid, sid, row, where, model, ps, summary))
    if missing_plan:
        summary.notes.append(f"{missing_plan} dialogue(s) are not in the plan {plan_path}: "
                             "stored with their trigger turns only")
    store = Store(db)
    try:
        if store.run_exists(rid):
            raise ImportRunError(f"run `{rid}` is already in {db} (pass --run-id NEW_ID, or "
                                 "use another --db)")
        now = time.time()
        store.upsert_run({
            "run_id": rid, "created_at": now, "updated_at": now,
            "plan_path": str(plan_path) if plan_path else None,
            "plan_hash": None, "pack_name": plan.pack.name if plan else pack,
            "pack_version": plan.pack.version if plan else None,
            "benchpack_version": None, "agent": model, "simulator": None,
            "judge": "imported", "repeats": 1,
            "config": {"imported": {"format": "proactbench", "source": path.name,
                                    "plan": str(plan_path) if plan_path else None}},
            "status": "finished"})
        store.write_batch(batch)
    finally:
        store.close()
    summary.sessions = len(batch)
    return summary


def _session(rid: str, sid: str, row: dict[str, Any], where: str, model: str, ps: Any,
             summary: ImportRunSummary) -> SessionRows:
    prefix = (rid, sid, 0)
    points = _get(row, "trigger_points", list, where)
    records = {r.get("turn"): r for r in _get(row, "turn_records", list, where)
               if isinstance(r, dict)}
    trig_rows = []
    refs: dict[str, str] = {}
    for i, tp in enumerate(points):
        w = f"{where}: trigger_points[{i}]"
        if not isinstance(tp, dict):
            raise ImportRunError(f"{w}: must be an object")
        turn = _get(tp, "turn", int, w)
        rub = _get(tp, "evaluation_rubric", dict, w)
        typ = str(rub.get("type"))
        if typ not in TYPES:
            raise ImportRunError(f"{w}: rubric type `{typ}` is not one of {', '.join(TYPES)}")
        res = tp.get("evaluation_result")
        if not isinstance(res, dict):
            raise ImportRunError(f"{w}: no `evaluation_result` (is this the corpus, not a "
                                 "results file? import the corpus with `bench import`)")
        status, score = res.get("status"), res.get("score")
        if status == "SKIPPED":
            label = "SKIPPED"
        elif score in SCORES:
            label = score
        else:
            raise ImportRunError(f"{w}: evaluation_result score {json.dumps(score)} with "
                                 f"status {json.dumps(status)} (expected PASS, PARTIAL or "
                                 "FAIL, or status SKIPPED)")
        rec = records.get(turn)
        response = rec.get("assistant_response") if isinstance(rec, dict) else None
        if isinstance(rec, dict) and isinstance(rec.get("original_assistant_response"), str):
            refs[str(turn)] = rec["original_assistant_response"]
        anchors: list[str] = []
        if ps is not None:
            anchors = next((list(t.anchors) for t in ps.triggers if t.turn == turn), [])
        trig_rows.append((*prefix, f"t{turn}", typ.lower(), turn, "offline", "authored",
                          json.dumps(anchors), rub.get("pass_criteria"),
                          rub.get("partial_criteria"), rub.get("fail_criteria"), response,
                          label, SCORES.get(label), res.get("rationale"), res.get("evidence"),
                          None, None))
        c = summary.counts.setdefault(typ.lower(), {})
        c[label] = c.get(label, 0) + 1
        summary.triggers += 1

    # the dialogue: every turn from the plan, or only the trigger turns the release keeps
    regenerated = {t: r.get("assistant_response") for t, r in records.items()}
    if ps is not None and ps.dialogue:
        turns = [(d.turn, d.user, regenerated.get(d.turn) if d.turn in regenerated
                  else d.assistant or "") for d in ps.dialogue]
    else:
        turns = [(int(t), str(r.get("user_message") or ""), str(r.get("assistant_response")
                                                               or ""))
                 for t, r in sorted(records.items()) if isinstance(t, int)]
    messages, turn_rows = [], []
    for seq, (turn, user, answer) in enumerate(turns):
        messages.append((*prefix, 2 * seq, turn, "user", user, None, None, None))
        messages.append((*prefix, 2 * seq + 1, turn, "assistant", answer, None, None, None))
        turn_rows.append((*prefix, turn, user, answer, 1, 0, "stop", None, None))

    raw_usage = row.get("token_usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    calls = []
    tokens = [0, 0]
    for seq, (key, role) in enumerate((("assistant", "agent"), ("judge", "judge"))):
        u = usage.get(key)
        if not isinstance(u, dict):
            continue
        pt, ct = int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0)
        tokens[0] += pt
        tokens[1] += ct
        calls.append((*prefix, seq, role, "imported", model if role == "agent" else None, None,
                      pt, ct, None, None, None, None, int(u.get("calls") or 0), None, None))

    judged = [r[15] for r in trig_rows if r[15] in SCORES]
    n = len(judged)
    extra = {"imported": {"format": "proactbench", "unique_id_eval": row["unique_id_eval"],
                          "source_evaluated_model": row.get("source_evaluated_model"),
                          "line": where.rsplit(":", 1)[1],
                          "dialogue": "plan" if ps is not None else "trigger turns only"},
             "reference_responses": refs, "triggers_judged": n,
             "dialogue_source": "authored"}
    category = str(row.get("category_key") or "").removesuffix("_persona") or None
    session = {
        "run_id": rid, "session_id": sid, "repeat": 0,
        "fingerprint": ps.fingerprint if ps is not None else None,
        "episode": ps.episode if ps is not None else episode_id(str(row["unique_id_eval"])),
        "name": "dialogue", "protocol": "trigger_rubric",
        "persona": ps.persona if ps is not None else None,
        "style": COHERENT_STYLES[int(row["style_combination_index"]) - 1],
        "category": category, "language": "en", "agent": model,
        "status": "finished", "termination": "script_end",
        "turns": len(turns), "user_turns": len(turns), "assistant_turns": len(turns),
        "tool_calls": 0, "trigger_mode": "offline", "triggers": len(trig_rows),
        "trigger_pass_rate": judged.count("PASS") / n if n else None,
        "trigger_score": sum(SCORES[x] for x in judged) / n if n else None,
        "judge_errors": 0, "grader_errors": 0,
        "prompt_tokens": tokens[0], "completion_tokens": tokens[1], "extra": extra}
    return SessionRows(rid, sid, 0, session, {"triggers": trig_rows, "messages": messages,
                                              "turns": turn_rows, "llm_calls": calls})


__all__ = ["ImportRunError", "ImportRunSummary", "default_run_id", "episode_id", "import_run",
           "session_key"]
