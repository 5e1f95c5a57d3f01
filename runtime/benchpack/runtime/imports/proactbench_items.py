"""`bench ratings import --format proactbench --items sample_items.json`: the released
human-eval sample (dataset/human_eval/sample_items.json, a JSON list of the trigger points shown
to the raters, each with the judge's label) → a run the ratings attach to, so
`bench report agreement --humans` compares them with that judge without the five evaluated
models' runs and without a converter.

One finished `trigger_rubric` session per rated answer — item id
`{uuid}__{SCENARIO}__s{style}__{Model}__t{turn}` minus `__t{turn}`, so one dialogue answered by
two models is two sessions — holding one trigger `t{turn}` per sampled item: its type, the
judge's label, rationale and evidence, the answer under review and the rubric when the item
carries them. The session id is that key itself, which is how the rating reader finds it.

Fields read: item_id, trigger_type, judge_score (required); judge_rationale, judge_evidence,
evaluated_model, persona_category, assistant_response, rubric.{pass,partial,fail}_criteria
(kept when present). Not stored: dialogue_history, communication_style and anchors (the
agreement figures do not use them; the full dialogues come with `bench import proactbench`).

The run records the items file's SHA-256: importing more rating files against the same sample
reuses the run; a different sample under the same run id is refused.

Without the sample (`bench ratings import RESULTS --format proactbench`, no `--items`, no
`--run`), `import_rated_items` makes the run from the item ids the rating files themselves
name: the same sessions and triggers, with no trigger type and no judge label. Agreement among
the raters (Krippendorff's α over the rated items) needs nothing more; everything that compares
with the judge, and the per-type rows, need the sample (`JUDGE_FIGURES`).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..store import SessionRows, Store

RUN_ID = "proactbench-human-eval"
FORMAT = "proactbench-human-eval"
RATED_FORMAT = "proactbench-rated-items"
"""A run made from the rating files alone (no sample_items.json)."""
JUDGE_FIGURES = ("the per-type rows (emergent / critical / recovery: the trigger types are in "
                 "sample_items.json)", "the consensus-vs-judge confusion matrix, exact "
                 "agreement and Cohen's κ (unweighted, linear, quadratic)", "α humans + judge",
                 "each rater vs the judge (and so the paper's pre-registered exclusion of "
                 "raters with κ_quad < 0.10 against the judge)")
"""What a run of rated items without the sample cannot give: all need sample_items.json."""
ITEM = re.compile(r"([0-9a-fA-F-]+)__([A-Z]+_\d+)__s(\d+)__(.+)__t(\d+)")
"""A ProactBench human-eval item id; `reports.ratings` parses rating rows with the same shape."""
TYPES = ("EMERGENT", "CRITICAL", "RECOVERY")
LABELS = {"pass": "PASS", "partial": "PARTIAL", "fail": "FAIL"}
SCORES = {"PASS": 1.0, "PARTIAL": 0.5, "FAIL": 0.0}


class ItemsError(UsageError):
    """A sample file that cannot be used: one located line."""


@dataclass
class ItemsRun:
    run_id: str
    items: int
    sessions: int
    created: bool


def _load(path: Path) -> tuple[list[dict[str, Any]], str]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ItemsError(f"{path}: no such file (give the released "
                         "dataset/human_eval/sample_items.json)") from None
    except OSError as exc:
        raise ItemsError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        items = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ItemsError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ItemsError(f"{path}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg}) (is the file "
                         "complete?)") from None
    if not isinstance(items, list) or not items:
        raise ItemsError(f"{path}:1:1: expected a JSON list of items (the released "
                         "sample_items.json), found "
                         f"{'an empty list' if items == [] else type(items).__name__}")
    return items, hashlib.sha256(data).hexdigest()


def _check(path: Path, i: int, it: Any) -> tuple[str, str, int, str, str]:
    """(session key, item id, turn, type, judge label) of item `i`."""
    if not isinstance(it, dict):
        raise ItemsError(f"{path}: item {i}: must be a JSON object")
    raw = it.get("item_id")
    iid = raw if isinstance(raw, str) else json.dumps(raw)
    m = ITEM.fullmatch(iid) if isinstance(raw, str) else None
    if m is None:
        raise ItemsError(f"{path}: item {i}: item_id `{iid}` is not "
                         "{uuid}__{SCENARIO}__s{style}__{Model}__t{turn}")
    where = f"{path}: item {i} ({iid})"
    typ = str(it.get("trigger_type") or "").upper()
    if typ not in TYPES:
        raise ItemsError(f"{where}: `trigger_type` must be EMERGENT, CRITICAL or RECOVERY, "
                         f"found {json.dumps(it.get('trigger_type'))}")
    label = LABELS.get(str(it.get("judge_score") or "").strip().lower())
    if label is None:
        raise ItemsError(f"{where}: `judge_score` must be Pass, Partial or Fail, found "
                         f"{json.dumps(it.get('judge_score'))}")
    return iid.rsplit("__t", 1)[0], iid, int(m.group(5)), typ.lower(), label


def import_items(path: Path, db: Path, run_id: str = RUN_ID) -> ItemsRun:
    items, digest = _load(path)
    checked = [_check(path, i, it) for i, it in enumerate(items)]
    seen: dict[str, int] = {}
    for i, (_, iid, *_rest) in enumerate(checked):
        if iid in seen:
            raise ItemsError(f"{path}: item {i} ({iid}): repeats item {seen[iid]}")
        seen[iid] = i
    store = Store(db)
    try:
        existing = store.run_exists(run_id)
        if existing is not None:
            config = existing.get("config")
            config = json.loads(config) if isinstance(config, str) else (config or {})
            imported = config.get("imported") or {}
            if imported.get("format") == FORMAT and imported.get("sha256") == digest:
                return ItemsRun(run_id, len(items), int(imported.get("sessions") or 0), False)
            raise ItemsError(f"{path}: run `{run_id}` in {db} was not made from this items "
                             "file (pass --run NEW_ID to keep both, or use another --db)")
        sessions: dict[str, list[tuple[dict[str, Any], int, str, str]]] = {}
        for it, (key, _, turn, typ, label) in zip(items, checked, strict=True):
            sessions.setdefault(key, []).append((it, turn, typ, label))
        batch = [_session(run_id, key, rows) for key, rows in sorted(sessions.items())]
        now = time.time()
        store.upsert_run({
            "run_id": run_id, "created_at": now, "updated_at": now, "plan_path": None,
            "plan_hash": None, "pack_name": "proactbench", "pack_version": None,
            "benchpack_version": None, "agent": "several (human-eval sample)",
            "simulator": None, "judge": "imported", "repeats": 1,
            "config": {"imported": {"format": FORMAT, "source": path.name, "sha256": digest,
                                    "items": len(items), "sessions": len(batch)}},
            "status": "finished"})
        store.write_batch(batch)
    finally:
        store.close()
    return ItemsRun(run_id, len(items), len(batch), True)


def import_rated_items(results: Path, db: Path, run_id: str = RUN_ID) -> ItemsRun:
    """The run the released rating files attach to when sample_items.json is not at hand: one
    session per rated answer and one trigger per rated turn, as `import_items` makes them, but
    with no type and no judge label. A run of the same id made from the sample is reused (its
    items are a superset); one made from other rating files is refused."""
    files = sorted(results.glob("*.jsonl")) if results.is_dir() else [results]
    if not files or not all(f.is_file() for f in files):
        raise ItemsError(f"{results}: no such rating file, or no *.jsonl in the directory "
                         "(give the released dataset/human_eval/results)")
    turns: dict[str, set[int]] = {}
    problems: list[str] = []
    for f in files:
        try:
            text = f.read_bytes().decode("utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{f}:1: cannot read the file ({exc})")
            continue
        for line, raw in enumerate(text.splitlines(), 1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except json.JSONDecodeError as exc:
                problems.append(f"{f}:{line}:{exc.colno}: invalid JSON ({exc.msg})")
                continue
            iid = row.get("item_id") if isinstance(row, dict) else None
            m = ITEM.fullmatch(iid) if isinstance(iid, str) else None
            if m is None:
                problems.append(f"{f}:{line}: item_id {json.dumps(iid)} is not "
                                "{uuid}__{SCENARIO}__s{style}__{Model}__t{turn}")
                continue
            turns.setdefault(m.group(0).rsplit("__t", 1)[0], set()).add(int(m.group(5)))
    if problems:
        raise ItemsError("\n".join(problems) + f"\n{len(problems)} problem(s); nothing imported")
    ids = sorted(f"{k}__t{t}" for k, ts in turns.items() for t in ts)
    digest = hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()
    store = Store(db)
    try:
        existing = store.run_exists(run_id)
        if existing is not None:
            config = existing.get("config")
            config = json.loads(config) if isinstance(config, str) else (config or {})
            imported = config.get("imported") or {}
            if imported.get("format") == FORMAT or (imported.get("format") == RATED_FORMAT
                                                    and imported.get("sha256") == digest):
                return ItemsRun(run_id, len(ids), int(imported.get("sessions") or 0), False)
            raise ItemsError(f"{results}: run `{run_id}` in {db} was not made from these "
                             "ratings (pass --run NEW_ID to keep both, or use another --db)")
        batch = [_session(run_id, key, [({"item_id": f"{key}__t{t}"}, t, None, None)
                                        for t in sorted(ts)])
                 for key, ts in sorted(turns.items())]
        now = time.time()
        store.upsert_run({
            "run_id": run_id, "created_at": now, "updated_at": now, "plan_path": None,
            "plan_hash": None, "pack_name": "proactbench", "pack_version": None,
            "benchpack_version": None, "agent": "several (human-eval ratings)",
            "simulator": None, "judge": None, "repeats": 1,
            "config": {"imported": {"format": RATED_FORMAT, "source": results.name,
                                    "sha256": digest, "items": len(ids),
                                    "sessions": len(batch),
                                    "needs_sample_items": list(JUDGE_FIGURES)}},
            "status": "finished"})
        store.write_batch(batch)
    finally:
        store.close()
    return ItemsRun(run_id, len(ids), len(batch), True)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _session(rid: str, sid: str,
             rows: Sequence[tuple[dict[str, Any], int, str | None, str | None]]) -> SessionRows:
    """One session of rated answers; type and label None for a run of rated items alone."""
    prefix = (rid, sid, 0)
    triggers = []
    for it, turn, typ, label in sorted(rows, key=lambda r: r[1]):
        raw = it.get("rubric")
        rub: dict[str, Any] = raw if isinstance(raw, dict) else {}
        triggers.append((*prefix, f"t{turn}", typ, turn, "offline", "authored", "[]",
                         _text(rub.get("pass_criteria")), _text(rub.get("partial_criteria")),
                         _text(rub.get("fail_criteria")), _text(it.get("assistant_response")),
                         label, SCORES.get(label or ""), _text(it.get("judge_rationale")),
                         _text(it.get("judge_evidence")), None, None))
    first = rows[0][0]
    labels = [r[3] for r in rows if r[3] is not None]
    category = str(first.get("persona_category") or "").removesuffix("_persona") or None
    model = _text(first.get("evaluated_model")) or sid.rsplit("__", 1)[-1]
    session = {
        "run_id": rid, "session_id": sid, "repeat": 0, "fingerprint": None,
        "episode": sid.rsplit("__", 1)[0], "name": sid, "protocol": "trigger_rubric",
        "persona": None, "style": None, "category": category, "language": "en",
        "agent": model, "status": "finished", "termination": "script_end", "turns": 0,
        "user_turns": 0, "assistant_turns": 0, "tool_calls": 0, "trigger_mode": "offline",
        "triggers": len(rows),
        "trigger_pass_rate": labels.count("PASS") / len(labels) if labels else None,
        "trigger_score": sum(SCORES[x] for x in labels) / len(labels) if labels else None,
        "judge_errors": 0,
        "grader_errors": 0, "prompt_tokens": 0, "completion_tokens": 0,
        "extra": {"imported": {"format": FORMAT, "items": [r[0]["item_id"] for r in rows]}}}
    return SessionRows(rid, sid, 0, session, {"triggers": triggers})


__all__ = ["FORMAT", "ITEM", "JUDGE_FIGURES", "RATED_FORMAT", "RUN_ID", "ItemsError", "ItemsRun",
           "import_items", "import_rated_items"]
