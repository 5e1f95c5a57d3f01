"""Human ratings of judged items: read a CSV or JSONL file, validate every row against the run,
store the ratings in `human_ratings` (`bench ratings import`).

One rating per row. Fields (column names in CSV, keys in JSONL; `fields` renames them, e.g.
`{"rater": "annotator_id"}`; the aliases are tried when a field is not renamed):

| field | aliases | value |
| --- | --- | --- |
| `session` | `session_id` | the session's plan id, or its name when that is unique in the run |
| `repeat` | | the repeat (default 0) |
| `kind` | | `trigger`, `checklist` or `triple` (default: whichever the item id names) |
| `item` | `item_id` | trigger id, checklist item id, or ground-truth triple index (0-based) |
| `rater` | `annotator_id`, `annotator` | who rated |
| `label` | `score` | trigger: Pass / Partial / Fail (or 1 / 0.5 / 0); checklist: YES / NO (1 / 0, true / false); triple, covered: yes / no (1 / 0, true / false, covered / not covered) |
| `rationale` | | optional text |
| `confidence` | | optional number |

Only items a judge decided can be rated: scored trigger points, rubric checklist items, and
ground-truth triples of sessions whose agent produced a graph. Every row is checked and every
problem is reported as `file:line: message` before anything is written; a file with problems
imports nothing. Ratings are stored under the run whose dialogues they rate (a re-judged run's
ratings go to its source run, so every judge of those dialogues is compared with them);
importing the same (session, repeat, kind, item, rater) again replaces the earlier rating.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = ("trigger", "checklist", "triple")
SCALES: dict[str, tuple[str, ...]] = {"trigger": ("FAIL", "PARTIAL", "PASS"),
                                      "checklist": ("NO", "YES"), "triple": ("NO", "YES")}
"""Each kind's labels, worst first (the order the agreement statistics use)."""
SCORES = {"FAIL": 0.0, "PARTIAL": 0.5, "PASS": 1.0, "NO": 0.0, "YES": 1.0}
FIELDS = ("session", "repeat", "kind", "item", "rater", "label", "rationale", "confidence")
ALIASES: dict[str, tuple[str, ...]] = {
    "session": ("session", "session_id"), "repeat": ("repeat",), "kind": ("kind",),
    "item": ("item", "item_id"), "rater": ("rater", "annotator_id", "annotator"),
    "label": ("label", "score"), "rationale": ("rationale",), "confidence": ("confidence",)}
REQUIRED = ("session", "item", "rater", "label")
_WORDS = {
    "trigger": {"pass": "PASS", "partial": "PARTIAL", "fail": "FAIL"},
    "checklist": {"yes": "YES", "no": "NO", "true": "YES", "false": "NO"},
    "triple": {"yes": "YES", "no": "NO", "true": "YES", "false": "NO", "covered": "YES",
               "not covered": "NO", "uncovered": "NO"},
}
_NUMBERS = {"trigger": {1.0: "PASS", 0.5: "PARTIAL", 0.0: "FAIL"},
            "checklist": {1.0: "YES", 0.0: "NO"}, "triple": {1.0: "YES", 0.0: "NO"}}


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    message: str

    def format(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class RatingsError(Exception):
    """The file has problems (all of them listed); nothing was imported."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(p.format() for p in problems))
        self.problems = problems


@dataclass
class ImportResult:
    run_id: str
    """The run the ratings are stored under (the source run of a re-judged one)."""
    imported: int
    replaced: int
    """Earlier ratings of the same item by the same rater that these replaced."""
    by_kind: dict[str, int] = field(default_factory=dict)
    raters: int = 0
    other_models: int = 0
    """proactbench: rows rating another model's answers (left for that model's run)."""


@dataclass
class _Run:
    """What a rating may refer to in one run: sessions and their judged items."""

    run_id: str
    ids: set[tuple[str, int]]
    names: dict[str, list[str]]
    items: dict[tuple[str, int], dict[str, set[str]]]
    """(session, repeat) → kind → item ids."""
    skipped: dict[tuple[str, int], set[str]]
    """Trigger ids that were not scored (beyond the dialogue)."""
    rule_items: dict[tuple[str, int], set[str]]


def import_ratings(con: Any, path: str | Path, run_id: str, *, fmt: str | None = None,
                   fields: Mapping[str, str] | None = None) -> ImportResult:
    """Validate every row of `path` against run `run_id` and store the ratings (module
    docstring); `con` is a writable connection to a store that has `human_ratings`."""
    path = Path(path)
    unknown = [k for k in (fields or {}) if k not in FIELDS]
    if unknown:
        raise ValueError(f"unknown rating field(s) {unknown}; the fields are "
                         f"{', '.join(FIELDS)}")
    run = _load_run(con, run_id)
    other = 0
    if fmt == "proactbench":
        rows, problems, other = _read_proactbench(con, path, run)
    else:
        rows, problems = _read(path, fmt, dict(fields or {}))
    ratings = []
    seen: dict[tuple[str, int, str, str, str], int] = {}
    for line, row in rows:
        where = Path(row.pop("_file", path))  # proactbench: a directory's files
        try:
            rating = _check(run, row)
        except ValueError as exc:
            problems.append(Problem(str(where), line, str(exc)))
            continue
        key = rating[:5]
        if key in seen:
            problems.append(Problem(str(where), line, f"{rating[2]} `{rating[3]}` of "
                                    f"`{rating[0]}` (repeat {rating[1]}) is rated twice by "
                                    f"`{rating[4]}` (first at line {seen[key]})"))
            continue
        seen[key] = line
        ratings.append((*rating, f"{where.name}:{line}"))
    if not rows and other and not problems:  # before "no ratings": there were, of others
        problems.append(Problem(str(path), 1, f"all {other} ratings are of other models' "
                                f"answers than run `{run.run_id}`'s agent (hint: import them "
                                "into the run of the model the item ids name)"))
    if not rows and not problems:
        kind = "directory" if path.is_dir() else "file"
        problems.append(Problem(str(path), 1, f"no ratings in the {kind}"))
    if problems:
        raise RatingsError(sorted(problems, key=lambda p: (p.path, p.line)))
    result = _store(con, run.run_id, ratings)
    result.other_models = other
    return result


# ProactBench human-eval item ids: `{uuid}__{SCENARIO}__s{style}__{Model}__t{turn}`, where Model
# is a display name ("Claude-Opus-4.7" for the run agent `claude-opus-4-7`)
_PB_ITEM = re.compile(r"([0-9a-fA-F-]+)__([A-Z]+_\d+)__s(\d+)__(.+)__t(\d+)")
_PB_LABELS = {"pass": "PASS", "partial": "PARTIAL", "fail": "FAIL"}


def _model_key(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.casefold())


def _session_index(ids: Any) -> dict[tuple[str, str, int], str]:
    """(uuid[:12], SCENARIO, style index) → session id, for sessions `bench import proactbench`
    named (`session.<pack>.BP_<SCENARIO>_<x>.s<style>.<uuid[:12]>.dialogue@<code>`)."""
    out = {}
    for sid in ids:
        m = re.search(r"\.BP_([A-Z]+_\d+)_[^.]*\.s(\d+)\.([0-9A-Za-z-]{1,12})\.dialogue@", sid)
        if m:
            out[(m.group(3), m.group(1), int(m.group(2)))] = sid
    return out


def _read_proactbench(con: Any, path: Path, run: _Run
                      ) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem], int]:
    """The released rating files as they are (a file, or a directory of `*.jsonl`): each row's
    item id names the dialogue, the model and the trigger turn; rows of other models than the
    run's agent are counted, not imported — except in the run of a released sample
    (`--items`), which holds every model's rated answers. A row keeps its file in `_file`."""
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    agent = con.execute("SELECT agent FROM runs WHERE run_id = ?", [run.run_id]).fetchone()
    agent_key = _model_key(str(agent[0] if agent and agent[0] else ""))
    sessions = _session_index(s for s, _ in run.ids)
    # `--items sample_items.json` made this run: one session per rated answer, named by the
    # item id without its turn, all models together
    sampled = any(_PB_ITEM.fullmatch(f"{s}__t0") for s, _ in run.ids)
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[Problem] = []
    other = 0
    if not files:
        problems.append(Problem(str(path), 1, "no *.jsonl rating files in the directory"))
    for f in files:
        try:
            text = f.read_bytes().decode("utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem(str(f), 1, f"cannot read the file ({exc})"))
            continue
        for line, raw in _lines(text):
            try:
                row = json.loads(raw)
            except json.JSONDecodeError as exc:
                problems.append(Problem(str(f), line, f"invalid JSON: {exc.msg} at column "
                                        f"{exc.colno}"))
                continue
            item = str(row.get("item_id") or "") if isinstance(row, dict) else ""
            m = _PB_ITEM.fullmatch(item)
            if not m:
                problems.append(Problem(str(f), line, f"item_id `{item}` is not "
                                        "{uuid}__{SCENARIO}__s{style}__{Model}__t{turn}"))
                continue
            uuid, scenario, style, model, turn = m.groups()
            if sampled:  # the run of a released sample: its sessions are the item ids
                key = item.rsplit("__t", 1)[0]
                if (key, 0) not in run.ids or f"t{turn}" not in run.items.get((key, 0), {}).get(
                        "trigger", set()):
                    problems.append(Problem(str(f), line, f"item `{item}` is not in the "
                                            f"sample of run `{run.run_id}` (hint: rate items of "
                                            "the same sample_items.json)"))
                    continue
                rows.append((line, {"_file": str(f), "session": key, "item": f"t{turn}",
                                    "kind": "trigger", "rater": row.get("annotator_id"),
                                    "label": row.get("score"),
                                    "rationale": row.get("rationale"),
                                    "confidence": row.get("confidence")}))
                continue
            if not agent_key or _model_key(model) not in agent_key:
                other += 1
                continue
            sid = sessions.get((uuid[:12], scenario, int(style)))
            if sid is None:
                problems.append(Problem(str(f), line, f"no session of dialogue {uuid} "
                                        f"({scenario}, style {style}) in run `{run.run_id}` "
                                        "(hint: import the corpus with `bench import "
                                        "proactbench` and the results with its plan)"))
                continue
            rows.append((line, {"_file": str(f), "session": sid, "item": f"t{turn}",
                                "kind": "trigger", "rater": row.get("annotator_id"),
                                "label": row.get("score"), "rationale": row.get("rationale"),
                                "confidence": row.get("confidence")}))
    return rows, problems, other


def _load_run(con: Any, run_id: str) -> _Run:
    tables = {str(r[0]) for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    if "human_ratings" not in tables:
        raise ValueError("the store has no `human_ratings` table (open it with this benchpack "
                         "through `bench ratings import`)")
    row = con.execute("SELECT config FROM runs WHERE run_id = ?", [run_id]).fetchone()
    if row is None:
        known = [str(r[0]) for r in con.execute(
            "SELECT run_id FROM runs ORDER BY created_at DESC LIMIT 5").fetchall()]
        raise ValueError(f"no run `{run_id}` in the store " + (
            f"(latest: {', '.join(known)})" if known else "(it has no runs yet)"))
    config = json.loads(row[0]) if isinstance(row[0], str) else (row[0] or {})
    source = str(config.get("source_run") or run_id)
    run = _Run(source, set(), {}, {}, {}, {})
    for sid, name, repeat in con.execute(
            "SELECT session_id, name, repeat FROM sessions WHERE run_id = ? AND status = "
            "'finished'", [source]).fetchall():
        run.ids.add((str(sid), int(repeat)))
        ids = run.names.setdefault(str(name), [])
        if sid not in ids:
            ids.append(str(sid))
    queries = {
        "trigger": "SELECT session_id, repeat, trigger_id, label = 'SKIPPED' FROM triggers "
                   "WHERE run_id = ?",
        "checklist": "SELECT session_id, repeat, item_id, grader <> 'rubric' FROM "
                     "checklist_results WHERE run_id = ?",
        "triple": "SELECT t.session_id, t.repeat, CAST(t.idx AS VARCHAR), false FROM triples t "
                  "JOIN sessions s USING (run_id, session_id, repeat) WHERE t.run_id = ? AND "
                  "t.side = 'ground_truth' AND s.triples_predicted > 0",
    }
    for kind, sql in queries.items():
        for sid, repeat, item, unjudged in con.execute(sql, [source]).fetchall():
            key = (str(sid), int(repeat))
            if unjudged:
                target = run.skipped if kind == "trigger" else run.rule_items
                target.setdefault(key, set()).add(str(item))
            else:
                run.items.setdefault(key, {}).setdefault(kind, set()).add(str(item))
    return run


# --------------------------------------------------------------------------- reading


def _read(path: Path, fmt: str | None, fields: dict[str, str]
          ) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem]]:
    """(line, {field: value}) per rating row, and the problems found while reading."""
    name = str(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        return [], [Problem(name, 1, "no such file")]
    except UnicodeDecodeError as exc:
        return [], [Problem(name, 1, f"not UTF-8 text ({exc.reason} at byte {exc.start})")]
    except OSError as exc:  # a directory, no permission
        return [], [Problem(name, 1, f"cannot read the file ({exc.strerror or exc})")]
    suffix = path.suffix.lower()
    fmt = fmt or {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}.get(suffix)
    if fmt is None:
        return [], [Problem(name, 1, f"cannot tell the format from `{suffix or path.name}` "
                                     "(hint: pass --format csv or --format jsonl)")]
    if fmt == "jsonl":
        return _read_jsonl(name, text, fields)
    if fmt == "csv":
        return _read_csv(name, text, fields)
    raise ValueError(f"unknown ratings format `{fmt}` (csv or jsonl)")


def _pick(keys: list[str], fields: dict[str, str]) -> dict[str, str]:
    """Field → the key that holds it (renamed by `fields`, else the first alias present)."""
    out = {}
    for f in FIELDS:
        if f in fields:
            if fields[f] in keys:
                out[f] = fields[f]
        else:
            found = next((a for a in ALIASES[f] if a in keys), None)
            if found is not None:
                out[f] = found
    return out


def _missing(name: str, keys: list[str], fields: dict[str, str], picked: dict[str, str]
             ) -> list[str]:
    out = []
    for f in REQUIRED:
        if f not in picked:
            wanted = fields.get(f) or " or ".join(f"`{a}`" for a in ALIASES[f])
            if f in fields:
                wanted = f"`{wanted}`"
            close = difflib.get_close_matches(fields.get(f, f), keys, n=1)
            hint = (f" (hint: `--field {f}={close[0]}`?)" if close else
                    f" (hint: name the column with `--field {f}=COLUMN`)")
            out.append(f"no {wanted} {name} for the {f}{hint}")
    return out


def _read_csv(name: str, text: str, fields: dict[str, str]
              ) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return [], [Problem(name, 1, "the file is empty (expected a header row)")]
    except csv.Error as exc:
        return [], [Problem(name, 1, f"malformed CSV: {exc}")]
    header = [h.strip() for h in header]
    picked = _pick(header, fields)
    missing = _missing("column", header, fields, picked)
    if missing:
        return [], [Problem(name, 1, m) for m in missing]
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[Problem] = []
    last = reader.line_num
    while True:
        start = last + 1
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.append(Problem(name, start, f"malformed CSV: {exc}"))
            break
        last = reader.line_num
        if not values or all(not v.strip() for v in values):
            continue
        if len(values) != len(header):
            problems.append(Problem(name, start, f"{len(values)} values for {len(header)} "
                                    "columns"))
            continue
        record = dict(zip(header, values, strict=True))
        rows.append((start, {f: record[k] for f, k in picked.items()}))
    return rows, problems


def _read_jsonl(name: str, text: str, fields: dict[str, str]
                ) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[Problem] = []
    for line, raw in _lines(text):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(Problem(name, line, f"invalid JSON: {exc.msg} at column "
                                    f"{exc.colno}"))
            continue
        if not isinstance(data, dict):
            problems.append(Problem(name, line, "each line must be one JSON object"))
            continue
        keys = list(data)
        picked = _pick(keys, fields)
        missing = _missing("key", keys, fields, picked)
        if missing:
            problems += [Problem(name, line, m) for m in missing]
            continue
        rows.append((line, {f: data[k] for f, k in picked.items()}))
    return rows, problems


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            yield number, raw


# --------------------------------------------------------------------------- checking


def _text(value: Any, what: str) -> str:
    if value is None or isinstance(value, bool | dict | list):
        raise ValueError(f"`{what}` must be text, got {json.dumps(value)}")
    text = str(value).strip()
    if not text:
        raise ValueError(f"`{what}` is empty")
    return text


def _check(run: _Run, row: dict[str, Any]
           ) -> tuple[str, int, str, str, str, str, float, str | None, float | None]:
    """One validated rating: (session, repeat, kind, item, rater, label, score, rationale,
    confidence). Raises ValueError with the row's first problem."""
    session = _text(row.get("session"), "session")
    repeat = _repeat(row.get("repeat"))
    rater = _text(row.get("rater"), "rater")
    item = _text(row.get("item"), "item")
    sid = _session(run, session, repeat)
    kind = _kind(run, sid, repeat, item, row.get("kind"))
    label = _label(kind, row.get("label"))
    rationale = row.get("rationale")
    confidence = row.get("confidence")
    conf: float | None = None
    if confidence not in (None, ""):
        try:
            conf = float(confidence)
        except (TypeError, ValueError):
            raise ValueError(f"`confidence` must be a number, got {json.dumps(confidence)}") \
                from None
    return (sid, repeat, kind, item, rater, label, SCORES[label],
            None if rationale in (None, "") else str(rationale), conf)


def _repeat(value: Any) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        raise ValueError(f"`repeat` must be a whole number ≥ 0, got {json.dumps(value)}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"`repeat` must be a whole number ≥ 0, got {json.dumps(value)}") \
            from None
    if number < 0 or number != int(number):
        raise ValueError(f"`repeat` must be a whole number ≥ 0, got {json.dumps(value)}")
    return int(number)


def _session(run: _Run, session: str, repeat: int) -> str:
    if any(sid == session for sid, _ in run.ids):
        sid = session
    elif session in run.names:
        ids = run.names[session]
        if len(ids) > 1:
            raise ValueError(f"session name `{session}` names {len(ids)} sessions of run "
                             f"`{run.run_id}` ({', '.join(sorted(ids)[:3])}…); use the plan id")
        sid = ids[0]
    else:
        candidates = sorted({*run.names, *(s for s, _ in run.ids)})
        close = difflib.get_close_matches(session, candidates, n=1)
        hint = f" (hint: did you mean `{close[0]}`?)" if close else ""
        raise ValueError(f"no finished session `{session}` in run `{run.run_id}`{hint}")
    if (sid, repeat) not in run.ids:
        repeats = sorted(r for s, r in run.ids if s == sid)
        raise ValueError(f"session `{session}` has no finished repeat {repeat} in run "
                         f"`{run.run_id}` (repeats: {', '.join(map(str, repeats))})")
    return sid


def _kind(run: _Run, sid: str, repeat: int, item: str, given: Any) -> str:
    items = run.items.get((sid, repeat), {})
    if given not in (None, ""):
        kind = str(given).strip().lower()
        if kind not in KINDS:
            raise ValueError(f"`kind` must be one of {', '.join(KINDS)}, got {json.dumps(given)}")
        kinds = [kind]
    else:
        kinds = [k for k in KINDS if item in items.get(k, set())]
        if len(kinds) > 1:
            raise ValueError(f"item `{item}` is a {' and a '.join(kinds)} of `{sid}`; add a "
                             "`kind` column")
        if not kinds:
            kinds = [k for k in KINDS if items.get(k)] or list(KINDS)
    kind = kinds[0]
    if item in items.get(kind, set()):
        return kind
    if item in run.skipped.get((sid, repeat), set()) and kind == "trigger":
        raise ValueError(f"trigger `{item}` of `{sid}` was not scored (it lies beyond the "
                         "dialogue): there is no judgement to compare")
    if item in run.rule_items.get((sid, repeat), set()) and kind == "checklist":
        raise ValueError(f"checklist item `{item}` of `{sid}` is graded by a rule or a python "
                         "grader, not a judge")
    known = sorted(items.get(kind, set()))
    close = difflib.get_close_matches(item, known, n=1)
    hint = (f" (hint: did you mean `{close[0]}`?)" if close else
            f" (known: {', '.join(known[:8])})" if known else "")
    what = "ground-truth triple index" if kind == "triple" else f"{kind} id"
    raise ValueError(f"no judged {what} `{item}` in `{sid}` (repeat {repeat}){hint}")


def _label(kind: str, value: Any) -> str:
    allowed = {"trigger": "Pass, Partial or Fail (or 1, 0.5, 0)",
               "checklist": "YES or NO (or 1, 0, true, false)",
               "triple": "yes or no (or 1, 0, true, false, covered, not covered)"}[kind]
    if isinstance(value, bool) and kind != "trigger":
        return "YES" if value else "NO"
    if isinstance(value, int | float) and not isinstance(value, bool):
        found = _NUMBERS[kind].get(float(value))
    elif isinstance(value, str):
        text = " ".join(value.strip().lower().split())
        found = _WORDS[kind].get(text)
        if found is None:
            try:
                found = _NUMBERS[kind].get(float(text))
            except ValueError:
                found = None
    else:
        found = None
    if found is None:
        raise ValueError(f"a {kind} rating must be {allowed}, got {json.dumps(value)}")
    return found


# --------------------------------------------------------------------------- writing


def _store(con: Any, run_id: str, ratings: list[tuple[Any, ...]]) -> ImportResult:
    now = time.time()
    existing = {tuple(r) for r in con.execute(
        "SELECT session_id, repeat, kind, item_id, rater FROM human_ratings WHERE run_id = ?",
        [run_id]).fetchall()}
    again = [list(r[:5]) for r in ratings if tuple(r[:5]) in existing]
    con.execute("BEGIN TRANSACTION")
    try:
        if again:
            con.executemany("DELETE FROM human_ratings WHERE run_id = ? AND session_id = ? AND "
                            "repeat = ? AND kind = ? AND item_id = ? AND rater = ?",
                            [[run_id, *k] for k in again])
        con.executemany("INSERT INTO human_ratings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [[run_id, *r, now] for r in ratings])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    by_kind: dict[str, int] = {}
    for r in ratings:
        by_kind[r[2]] = by_kind.get(r[2], 0) + 1
    return ImportResult(run_id, len(ratings), len(again), by_kind, len({r[4] for r in ratings}))


__all__ = ["ALIASES", "FIELDS", "KINDS", "SCALES", "SCORES", "ImportResult", "Problem",
           "RatingsError", "import_ratings"]
