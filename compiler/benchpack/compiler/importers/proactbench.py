"""ProactBench `final_dialogues.jsonl` (+ optional `selected_tasks.jsonl`) → a trigger-rubric pack.

One episode file per dialogue (`episodes/<unique_id_eval>.yaml`), each with one offline session:
the dialogue's style (`style_combination_index` → the paper's Appendix C order, which is
`COHERENT_STYLES`), its trigger points and prospective rubrics, and the authored dialogue. With
the selected tasks, the session also carries the scenario: hidden goal, anchors (the
`implicit_anchors`, ids `a1`, `a2`, …) and proactive subtasks, and each dialogue turn says which
anchors its user message discloses.

The release does not say which turn discloses which anchor. The curation planner's order for a
turn (`planner.tactical_order.content_payload`) names the facts to reveal, usually verbatim,
sometimes paraphrased. So a turn discloses an anchor when its payload or user message contains
the anchor text (exact), or else most of the anchor's content words (inferred; reported per
dialogue in IMPORT_REPORT.md); an anchor never matched has no disclosure turn (reported).

Every text is copied verbatim: the episode files start with `# benchpack: literal`, so braces
in the released text are never rendered as Jinja. Output depends only on the input bytes (no
dates, no absolute paths), so importing again writes byte-identical files.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from benchpack.specs import release_ids
from benchpack.specs.jsonl import read_jsonl as _read_jsonl
from benchpack.specs.persona import COHERENT_STYLES
from benchpack.specs.release_fields import need as need_field

from . import ImportError_, ImportResult

TYPES = ("EMERGENT", "CRITICAL", "RECOVERY")
CATEGORIES = ("professional", "sports", "arts", "travel", "culinary")
INFERRED_SHARE = 0.6
"""Share of an anchor's content words a turn must contain to count as disclosing it."""


# --------------------------------------------------------------------------- reading


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, row) of every non-blank line; a broken line is a located error."""
    return _read_jsonl(path, ImportError_, "the path of the released JSONL file")


def need(row: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    return need_field(row, key, kind, where, ImportError_, "a ProactBench release file")


def style_code(index: Any, where: str) -> str:
    if not isinstance(index, int) or isinstance(index, bool) or not 1 <= index <= 24:
        raise ImportError_(f"{where}: `style_combination_index` must be 1–24, found "
                           f"{json.dumps(index)} (ProactBench styles are numbered 1–24)")
    return COHERENT_STYLES[index - 1]


safe_id = release_ids.safe_id
episode_id = release_ids.proactbench_episode_id
session_key = release_ids.proactbench_session_key
"""The ids the run importer (`runtime/imports/proactbench.py`) finds these sessions by."""


# --------------------------------------------------------------------------- anchors


_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", re.sub(r"[\u2018\u2019\u201c\u201d'\"`]", "", text)).strip()


def _words(text: str) -> set[str]:
    """Content words: Latin words of 4+ letters, and each CJK character (Chinese has no
    spaces; single characters are its smallest unit that survives paraphrase)."""
    t = _norm(text)
    return {w for w in re.findall(r"[^\W\d_]{4,}", _CJK.sub(" ", t))} | set(_CJK.findall(t))


def disclosure(anchor: str, turns: list[str]) -> tuple[int | None, str]:
    """(0-based index of the first turn that discloses `anchor`, 'exact' | 'inferred' | '')."""
    a = _norm(anchor).rstrip(".。")
    for i, text in enumerate(turns):
        if a and a in _norm(text):
            return i, "exact"
    words = _words(anchor)
    if words:
        for i, text in enumerate(turns):
            if len(words & _words(text)) >= INFERRED_SHARE * len(words):
                return i, "inferred"
    return None, ""


# --------------------------------------------------------------------------- YAML output


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # a person edits each list in place; `&id001` / `*id001` would hide it


def _str(dumper: yaml.SafeDumper, value: str) -> Any:
    style = "|" if "\n" in value and not re.search(r"[ \t]\n|\n[ \t]*\n\s*$|^\s", value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100,
                     default_flow_style=False)


# --------------------------------------------------------------------------- import


class _Report:
    """What became of every source field, for IMPORT_REPORT.md."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.disclosures: Counter[str] = Counter()
        self.per_dialogue: list[str] = []
        self.mismatches: list[str] = []


FIELDS: list[tuple[str, str, str]] = [
    # (source field, fate, what became of it / why)
    ("uuid", "mapped", "persona id `p-<uuid[:12]>` and the episode id; kept whole in the "
     "episode's `description`"),
    ("unique_id_eval", "mapped", "episode id (`<blueprint>.s<style>.<uuid[:12]>`) and the "
     "file name; kept whole in the episode's header comment"),
    ("blueprint_id", "mapped", "episode title and id"),
    ("scenario_id", "mapped", "session title; joins `selected_tasks.jsonl`"),
    ("category_key", "mapped", "`metadata.category` (`sports_persona` → `sports`)"),
    ("style_combination_index", "mapped", "`styles: [<code>]` via the paper's Appendix C order "
     "(1 NONE … 24 E+V+Q+M)"),
    ("evaluated_model", "mapped with loss", "named in the header comment and the episode tags "
     "(`source-model:…`); the reference answers are that model's, not a benchpack agent's"),
    ("num_turns_completed", "mapped", "checked equal to the number of turn records (the "
     "dialogue has that many turns)"),
    ("trigger_points[].turn", "mapped", "`triggers[].turn` (id `t<turn>`)"),
    ("trigger_points[].evaluation_rubric.type", "mapped", "`triggers[].type` (lower case)"),
    ("trigger_points[].evaluation_rubric.pass_criteria / partial_criteria / fail_criteria",
     "mapped", "`triggers[].rubric.pass / partial / fail`, verbatim"),
    ("trigger_points[].evaluation_result", "dropped", "the curation-time judge label of the "
     "source model's answers: a result, not part of the benchmark (import a results file with "
     "`bench import-run` for a model's labels)"),
    ("trigger_stats", "dropped", "counts of the curation-time labels above (derived data)"),
    ("turn_records[].turn", "mapped", "`dialogue[].turn`"),
    ("turn_records[].user_message", "mapped", "`dialogue[].user` (turn 1 also as the session "
     "`request`), verbatim"),
    ("turn_records[].assistant_response", "mapped", "`dialogue[].assistant`: the reference "
     "answer, replaced by the agent's own answer at trigger turns when replayed"),
    ("turn_records[].planner.tactical_order.content_payload", "mapped with loss", "used to "
     "decide `dialogue[].discloses` (see Anchors below), not kept"),
    ("turn_records[].planner (other fields)", "dropped", "the curation planner's internal "
     "state; its `evaluation_rubric` duplicates `trigger_points[]`; offline replay does not "
     "use it"),
    ("token_usage", "dropped", "curation-run token counts (planner, user agent), not part of "
     "the benchmark"),
]

SELECTED_FIELDS: list[tuple[str, str, str]] = [
    ("uuid + <category>_persona_scenarios[].scenario_id", "mapped", "join key to the dialogue"),
    ("hidden_main_goal", "mapped", "`scenario.hidden_goal`"),
    ("implicit_anchors[]", "mapped", "`scenario.anchors[]` (ids `a1`, `a2`, …; `primary: "
     "true`)"),
    ("proactive_subtasks[].task / logic", "mapped", "`scenario.proactive_subtasks[]` as "
     "`<task> — <logic>`"),
    ("explicit_trigger", "mapped with loss", "kept in a comment: the dialogue's own opening "
     "message (turn 1) is the request, as the user agent wrote it in the dialogue's style"),
    ("ideal_assistant_trajectory[]", "mapped with loss", "kept in a comment over the scenario "
     "(benchpack has no field for a reference trajectory; rubrics are what is scored)"),
    ("persona_alignment_check", "dropped", "a curation-time audit note"),
    ("scenarios of other (uuid, category) pairs", "dropped", "only the scenarios of imported "
     "dialogues are used"),
]


def _scenario_index(path: Path) -> dict[tuple[str, str], tuple[int, dict[str, Any]]]:
    index: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    for n, row in read_jsonl(path):
        uuid = need(row, "uuid", str, f"{path}:{n}")
        for cat in CATEGORIES:
            for sc in row.get(f"{cat}_persona_scenarios") or []:
                if isinstance(sc, dict) and isinstance(sc.get("scenario_id"), str):
                    index[(uuid, sc["scenario_id"])] = (n, sc)
    return index


def comment_lines(lines: list[str]) -> str:
    return "".join(f"# {x}".rstrip() + "\n" for x in lines)


def import_pack(source: Path, out: Path, selected: Path | None = None,
                name: str = "proactbench") -> ImportResult:
    selected = Path(selected) if selected is not None else None
    rows = read_jsonl(source)
    scenarios = _scenario_index(selected) if selected is not None else {}
    report = _Report()
    result = ImportResult(out)
    episodes: list[tuple[str, str]] = []
    personas: dict[str, str] = {}
    seen_ids: dict[str, int] = {}
    for n, row in rows:
        where = f"{source}:{n}"
        uid = need(row, "unique_id_eval", str, where)
        if uid in seen_ids:
            raise ImportError_(f"{where}: `unique_id_eval` {uid} repeats line {seen_ids[uid]} "
                               "(it is the corpus's primary key)")
        seen_ids[uid] = n
        text, persona = _episode(row, where, source.name, scenarios, selected, report)
        eid = episode_id(uid)
        episodes.append((eid, text))
        personas.setdefault(persona, row["uuid"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "episodes").mkdir(exist_ok=True)
    for eid, text in episodes:
        _write(out, Path("episodes") / f"{eid}.yaml", text, result)
    _write(out, Path("pack.yaml"), _pack_yaml(name, source, selected, personas, len(rows)),
           result)
    _write(out, Path("IMPORT_REPORT.md"), _report_md(source, selected, rows, report), result)
    result.sessions = len(episodes)
    if report.disclosures["unknown"]:
        result.notes.append(f"{report.disclosures['unknown']} anchor(s) have no disclosure "
                            "turn (see IMPORT_REPORT.md)")
    if selected is None:
        result.notes.append("no --selected file: sessions have no scenario (hidden goal, "
                            "anchors); live mode needs them, offline replay does not")
    return result


def _write(out: Path, rel: Path, text: str, result: ImportResult) -> None:
    (out / rel).write_bytes(text.encode("utf-8"))
    result.files.append(rel)


def _episode(row: dict[str, Any], where: str, source_name: str,
             scenarios: dict[tuple[str, str], tuple[int, dict[str, Any]]],
             selected: Path | None, report: _Report) -> tuple[str, str]:
    uid = row["unique_id_eval"]
    uuid = need(row, "uuid", str, where)
    blueprint = need(row, "blueprint_id", str, where)
    scenario_id = need(row, "scenario_id", str, where)
    category = need(row, "category_key", str, where)
    style = style_code(row.get("style_combination_index"), where)
    records = need(row, "turn_records", list, where)
    points = need(row, "trigger_points", list, where)
    model = row.get("evaluated_model")
    turns: list[dict[str, Any]] = []
    for i, rec in enumerate(records):
        w = f"{where}: turn_records[{i}]"
        if not isinstance(rec, dict):
            raise ImportError_(f"{w}: must be an object")
        if need(rec, "turn", int, w) != i + 1:
            raise ImportError_(f"{w}: turn {rec['turn']}, expected {i + 1} (turns are "
                               "numbered 1, 2, 3… in order)")
        turns.append({"turn": i + 1, "user": need(rec, "user_message", str, w),
                      "assistant": need(rec, "assistant_response", str, w)})
    if not turns:
        raise ImportError_(f"{where}: `turn_records` is empty (a dialogue needs turns)")
    done = row.get("num_turns_completed")
    if done is not None and done != len(turns):
        report.mismatches.append(f"`{uid}`: num_turns_completed {done} but {len(turns)} turn "
                                 "records; the records are imported")
    triggers = []
    for i, tp in enumerate(points):
        w = f"{where}: trigger_points[{i}]"
        if not isinstance(tp, dict):
            raise ImportError_(f"{w}: must be an object")
        turn = need(tp, "turn", int, w)
        rub = need(tp, "evaluation_rubric", dict, w)
        typ = need(rub, "type", str, f"{w}.evaluation_rubric")
        if typ not in TYPES:
            raise ImportError_(f"{w}.evaluation_rubric: type `{typ}` is not one of "
                               f"{', '.join(TYPES)}")
        if not 1 <= turn <= len(turns):
            raise ImportError_(f"{w}: turn {turn} is outside the dialogue's {len(turns)} turns")
        triggers.append({"id": f"t{turn}", "type": typ.lower(), "turn": turn, "rubric": {
            "pass": need(rub, "pass_criteria", str, f"{w}.evaluation_rubric"),
            "partial": need(rub, "partial_criteria", str, f"{w}.evaluation_rubric"),
            "fail": need(rub, "fail_criteria", str, f"{w}.evaluation_rubric")}})
        report.seen[typ] += 1

    session: dict[str, Any] = {
        "id": "dialogue", "title": f"{scenario_id}, style {row['style_combination_index']} "
        f"({style})", "protocol": "trigger_rubric", "styles": [style],
        "request": turns[0]["user"]}
    header_extra: list[str] = []
    found = scenarios.get((uuid, scenario_id))
    if selected is not None and found is None:
        report.per_dialogue.append(f"`{uid}`: no scenario for ({uuid}, {scenario_id}) in "
                                   f"{selected.name}; imported without one")
    if found is not None:
        sn, sc = found
        anchors = [a for a in sc.get("implicit_anchors") or [] if isinstance(a, str)]
        payloads = []
        for rec in records:
            order = (rec.get("planner") or {}).get("tactical_order") or {}
            payload = order.get("content_payload") or []
            payloads.append(" ".join(p for p in payload if isinstance(p, str)) + " "
                            + rec["user_message"])
        discloses: dict[int, list[str]] = {}
        notes = []
        for k, text in enumerate(anchors, 1):
            at, how = disclosure(text, payloads)
            report.disclosures[how or "unknown"] += 1
            if at is None:
                notes.append(f"a{k} never disclosed")
            else:
                discloses.setdefault(at, []).append(f"a{k}")
                if how == "inferred":
                    notes.append(f"a{k} at turn {at + 1} (inferred)")
        if notes:
            report.per_dialogue.append(f"`{uid}`: " + "; ".join(notes))
        for i, t in enumerate(turns):
            t["discloses"] = discloses.get(i, [])
        session["request_discloses"] = discloses.get(0, [])
        subtasks = []
        for st in sc.get("proactive_subtasks") or []:
            if isinstance(st, dict):
                subtasks.append(" — ".join(str(st[k]) for k in ("task", "logic") if st.get(k)))
            elif isinstance(st, str):
                subtasks.append(st)
        session["scenario"] = {
            "hidden_goal": need(sc, "hidden_main_goal", str, f"{selected}:{sn}"),
            "anchors": [{"id": f"a{k}", "text": a, "primary": True}
                        for k, a in enumerate(anchors, 1)],
            "proactive_subtasks": subtasks}
        header_extra = [f"scenario: {selected.name if selected else ''}:{sn} "
                        f"({scenario_id}); explicit trigger: {sc.get('explicit_trigger', '')}"]
        for step in sc.get("ideal_assistant_trajectory") or []:
            if isinstance(step, dict):
                header_extra.append(f"ideal step {step.get('step')} ({step.get('type')}): "
                                    f"{step.get('description')}")
    for t in triggers:
        t["anchors"] = sorted({a for tu in turns[:t["turn"]] for a in tu.get("discloses", [])},
                              key=lambda a: int(a[1:]))
    session["triggers"] = triggers
    session["dialogue"] = turns
    cat = category.removesuffix("_persona")
    persona = f"p-{safe_id(uuid)[:12]}"
    episode = {"id": episode_id(uid), "title": blueprint,
               "description": f"ProactBench dialogue {uid}", "persona": persona,
               "memory": "none",
               "metadata": {"category": cat, "tags": ["proactbench", f"scenario:{scenario_id}",
                                                      f"source-model:{model}"]},
               "sessions": [session]}
    head = ["benchpack: literal", "", f"Imported from {source_name}:{where.rsplit(':', 1)[1]} "
            f"by `bench import proactbench`.", f"unique_id_eval: {uid}",
            f"Reference answers written by {model} at curation time; at trigger turns the "
            "agent under test answers instead.", *header_extra]
    text = ("# yaml-language-server: $schema=../../schemas/fragment.schema.json\n"
            + comment_lines(head) + dump({"episodes": [episode]}))
    return text, persona


LINT_IGNORED = {
    "W306": "trigger turns are where the release's planner put them; the windows (Emergent 1–3, "
            "Critical 4–7, Recovery 8–10) are the paper's guideline, not a rule of the data",
    "W310": "the number of trigger points per dialogue is the release's",
    "W316": "anchors a dialogue discloses only later or never are the release's; "
            "IMPORT_REPORT.md lists them",
    "W317": "a trigger's anchors are the release's (--selected); without --selected none are "
            "known: left for you to fill by importing with --selected selected_tasks.jsonl",
}
"""Lint warnings about the released dialogues themselves, silenced in the pack with the
reason (issue 28: an imported pack compiles under --strict; what it says is in the report)."""


def _pack_yaml(name: str, source: Path, selected: Path | None, personas: dict[str, str],
               n: int) -> str:
    head = ["yaml-language-server: $schema=../schemas/pack.schema.json", "",
            f"Imported by `bench import proactbench` from {source.name}"
            + (f" and {selected.name}" if selected else "") + f" ({n} dialogues).",
            "Each file in episodes/ is one released dialogue; IMPORT_REPORT.md lists what "
            "became of every source field.",
            "Persona text is not in the release (ProactBench resolves the uuid against "
            "Nemotron-Personas-USA, CC-BY-4.0, NVIDIA);",
            "offline replay never shows it to anyone, so each persona here is a placeholder."]
    pack = {"benchpack": 1, "name": name, "version": "0.1.0",
            "description": "ProactBench released dialogues (imported), replayed offline: the "
                           "agent answers at each trigger turn, a judge scores the answer "
                           "against the trigger's rubric.",
            "metadata": {"language": "en", "tags": ["proactbench", "imported"]},
            "defaults": {"limits": {"max_turns": 10}},
            "include": ["episodes/*.yaml"],
            "personas": [{"id": pid, "name": f"ProactBench persona {uuid[:12]}",
                          "profile": {"role": f"ProactBench persona {uuid} (profile text not "
                                              "in the release)"}}
                         for pid, uuid in sorted(personas.items())],
            "lint": {"ignore": list(LINT_IGNORED)}}
    head += ["", "lint.ignore: warnings about the released content itself, kept verbatim:"]
    head += [f"  {code}: {why}" for code, why in LINT_IGNORED.items()]
    return comment_lines(head) + dump(pack)


def _report_md(source: Path, selected: Path | None, rows: list[Any], report: _Report) -> str:
    out = ["# Import report: ProactBench", "",
           f"Source: `{source.name}` ({len(rows)} dialogues)"
           + (f", `{selected.name}`" if selected else ", no selected tasks file") + ".",
           "Trigger points: " + ", ".join(f"{t.lower()} {report.seen[t]}" for t in TYPES)
           + f" (total {sum(report.seen.values())}).", "",
           f"## `{source.name}` fields", "", "| field | fate | what became of it / why |",
           "|---|---|---|"]
    out += [f"| `{f}` | {fate} | {why} |" for f, fate, why in FIELDS]
    if selected is not None:
        out += ["", f"## `{selected.name}` fields", "", "| field | fate | what became of it / "
                "why |", "|---|---|---|"]
        out += [f"| `{f}` | {fate} | {why} |" for f, fate, why in SELECTED_FIELDS]
        d = report.disclosures
        out += ["", "## Anchors", "",
                "The release does not say which turn discloses which anchor. A turn discloses "
                "an anchor when its planner payload or user message contains the anchor text "
                f"(exact: {d['exact']}), or else at least {INFERRED_SHARE:.0%} of its content "
                f"words (inferred: {d['inferred']}); anchors matched by neither have no "
                f"disclosure turn (unknown: {d['unknown']}). A trigger's `anchors` are those "
                "disclosed up to its turn.", ""]
        out += [f"- {x}" for x in report.per_dialogue] or ["- every anchor matched exactly"]
    elif report.per_dialogue:
        out += ["", "## Notes", ""] + [f"- {x}" for x in report.per_dialogue]
    if report.mismatches:
        out += ["", "## Inconsistencies in the source", ""] + [f"- {x}" for x in
                                                                report.mismatches]
    return "\n".join(out) + "\n"
