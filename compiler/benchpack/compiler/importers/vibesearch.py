"""VibeSearchBench release files → a staged-disclosure pack with ground-truth graphs.

SOURCE is a file or a directory (read recursively, `*.json` in sorted order). Three shapes of
file are recognised by their keys:

- **task** (the benchmark's `tasks/*.json`, as its `load_data` reads them): `task_id`,
  `final_query`, `initial_query`, `sub_queries`, `user_queries`, `user_persona`, `language`,
  `nodes[{node_id, node_name}]`, `triples[{head_id, relation, tail_id}]`. This is the ground
  truth: each task becomes one staged-disclosure session whose graph is its triples with the node
  names resolved.
- **viewer trajectory** (`data/trajs/<subset>/<id>.json` of the project site): `qid`, `subset`,
  `question`, `short_title`, `turns`, `metrics`, … — one model's run. Only the question, the
  title and the subset are used (for a task that has no task file).
- **extraction** (`data/final_extractions/<subset>/<id>.json`): `{qid, total, triplets}`.
  Despite the folder name these are *not* ground truth: their triples are the answer graph of a
  released model run (they equal that run's `response` in the viewer file, which the site scores
  at triplet recall 0.17–0.72 against the real ground truth). So they are refused unless
  `graphs_from_extractions` is set, and then the session's graph is labelled a model's answer in
  the pack, the session tags and IMPORT_REPORT.md.

Files are joined per task on (subset, task number) — `task_002_concert`, `002` and `2` in the
`daily` folder are one task — or on the whole id when it has no number. Text is copied verbatim
in its own language (episode files start with `# benchpack: literal`); the graph files are JSON
lists of `{head, relation, tail}` in source order. Output depends only on the input bytes, so
importing again writes byte-identical files.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchpack.specs.release_ids import safe_id

from . import ImportError_, ImportResult
from .proactbench import comment_lines, dump

SUBSETS = ("daily", "pro")
DIFFICULTIES = ("easy", "medium", "hard")
MAX_TURNS = 30
"""The release's default user-turn budget in simulated mode (`--max-user-turns 30`)."""
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")

TASK_FIELDS: list[tuple[str, str, str]] = [
    ("task_id", "mapped", "episode id (`<subset>-<number>` or the id itself) and file names; "
     "kept whole in the episode's header comment"),
    ("initial_query", "mapped", "the opening stage (`when: start`), verbatim; without it the "
     "opening is `final_query`"),
    ("sub_queries[]", "mapped with loss", "one stage each, in order. The release's staged mode "
     "sends the next sub-query after every answer; here a stage is disclosed when the reply "
     "addresses the previous query (`when: mentions`, `about:` that query), so an agent that "
     "ignores the question does not advance"),
    ("final_query", "mapped with loss", "the session `description` and a header comment (the "
     "release's direct mode asks it in one message; a staged session discloses it piecewise); "
     "the opening stage when there is neither `initial_query` nor `sub_queries`"),
    ("user_queries[]", "mapped with loss", "kept in the episode's header comment; the "
     "release's runner does not read them either"),
    ("user_persona", "mapped", "the persona's `profile.role` (shown to the user simulator "
     "only); a placeholder when absent"),
    ("language", "mapped", "`metadata.language` (detected from the text when absent: any "
     "Chinese character → `zh`, else `en`)"),
    ("nodes[].node_id / node_name", "mapped with loss", "resolve the triple ends to names; "
     "benchpack scores triples, not nodes, so the release's node precision/recall/F1 are not "
     "computed; nodes in no triple are counted below"),
    ("triples[].head_id / relation / tail_id", "mapped", "`graphs/<id>.json` as `{head, "
     "relation, tail}` with node names, in source order (a missing node id is kept as the "
     "name, as the release's evaluator does)"),
    ("subset / domain / category / difficulty", "mapped", "`metadata.category` (the daily/pro "
     "split, from the field or the folder name), `metadata.domain` (`domain`, else `category`; "
     "a second one goes to `tags`), `metadata.difficulty` (easy/medium/hard; another value "
     "goes to `tags` as `difficulty:<value>`)"),
    ("(any other field)", "mapped with loss", "not known to this importer: kept verbatim in the "
     "episode's header comment and listed below"),
]

VIEWER_FIELDS: list[tuple[str, str, str]] = [
    ("qid", "mapped", "join key (subset, task number)"),
    ("subset", "mapped", "`metadata.category`"),
    ("question", "mapped", "the opening stage when there is no task file (the whole request "
     "in one message, as in the release's direct mode)"),
    ("short_title", "mapped", "episode and session title"),
    ("turns, response_preview, metrics, stats, termination, sample_idx", "dropped", "one "
     "model's run and its scores, not the benchmark"),
]

EXTRACTION_FIELDS: list[tuple[str, str, str]] = [
    ("qid", "mapped", "join key (subset, task number)"),
    ("triplets[].head / relation / tail", "mapped with loss", "only with "
     "--graphs-from-extractions: `graphs/<id>.json`, labelled a model's answer graph (it is "
     "not the ground truth); otherwise refused, or dropped when a task file gives the ground "
     "truth"),
    ("total", "mapped", "checked against the number of `triplets` (a mismatch is listed "
     "below)"),
]


@dataclass
class _Task:
    key: tuple[str, str]
    subset: str | None = None
    task: tuple[Path, dict[str, Any]] | None = None
    viewer: tuple[Path, dict[str, Any]] | None = None
    extraction: tuple[Path, dict[str, Any]] | None = None


@dataclass
class _Report:
    kinds: dict[str, int] = field(default_factory=lambda: {"task": 0, "viewer": 0,
                                                           "extraction": 0})
    ignored: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    inconsistencies: list[str] = field(default_factory=list)
    extra_fields: dict[str, list[str]] = field(default_factory=dict)
    triples: int = 0
    isolated_nodes: int = 0
    placeholders: list[str] = field(default_factory=list)
    single_stage: list[str] = field(default_factory=list)
    """Sessions with only an opening stage, W308 silenced in them (left for the user)."""


# --------------------------------------------------------------------------- reading


def _read(path: Path, shown: str) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ImportError_(f"{shown}: not UTF-8 text ({exc.reason} at byte {exc.start})"
                           ) from None
    except OSError as exc:
        raise ImportError_(f"{shown}: cannot read ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportError_(f"{shown}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg}) (is the "
                           "file complete? a truncated download stops mid-value)") from None
    if not isinstance(data, dict):
        raise ImportError_(f"{shown}:1:1: expected a JSON object, found "
                           f"{type(data).__name__} (VibeSearchBench task, trajectory and "
                           "extraction files are objects)")
    return data


def _kind(data: dict[str, Any]) -> str | None:
    if "task_id" in data and ("triples" in data or "nodes" in data):
        return "task"
    if "qid" in data and "triplets" in data:
        return "extraction"
    if "qid" in data and "question" in data:
        return "viewer"
    return None


def _text(data: dict[str, Any], key: str, where: str, required: bool = True) -> str | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ImportError_(f"{where}: field `{key}` must be non-empty text, found "
                           f"{json.dumps(value, ensure_ascii=False)[:40]}")
    return value


def _join_key(qid: str, subset: str | None) -> tuple[str, str]:
    m = re.fullmatch(r"(?:task_)?0*(\d+)(?:_.*)?", qid)
    return (subset or "", str(int(m.group(1))) if m else qid)


def _subset(data: dict[str, Any], path: Path) -> str | None:
    value = data.get("subset")
    if isinstance(value, str) and value:
        return value
    return path.parent.name if path.parent.name in SUBSETS else None


def _collect(source: Path, report: _Report) -> tuple[dict[tuple[str, str], _Task], Path]:
    if not source.exists():
        raise ImportError_(f"{source}: no such file or directory (give a VibeSearchBench task "
                           "file or a folder of them, e.g. tasks/ or data/)")
    root = source if source.is_dir() else source.parent
    files = sorted(source.rglob("*")) if source.is_dir() else [source]
    tasks: dict[tuple[str, str], _Task] = {}
    for path in files:
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if path.suffix != ".json":
            report.ignored.append(f"`{rel}`: not a `.json` file")
            continue
        data = _read(path, str(path))
        kind = _kind(data)
        if kind is None:
            raise ImportError_(f"{path}:1:1: not a VibeSearchBench task, trajectory or "
                               f"extraction file (keys: {', '.join(sorted(data))[:80]}) (a "
                               "task has `task_id` and `triples`; an extraction `qid` and "
                               "`triplets`)")
        report.kinds[kind] += 1
        qid = data["task_id"] if kind == "task" else data["qid"]
        if not isinstance(qid, str | int) or isinstance(qid, bool) or str(qid) == "":
            raise ImportError_(f"{path}:1:1: the task id must be text, found "
                               f"{json.dumps(qid)[:40]}")
        subset = _subset(data, path)
        key = _join_key(str(qid), subset)
        t = tasks.setdefault(key, _Task(key, subset))
        slot = getattr(t, kind)
        if slot is not None:
            raise ImportError_(f"{path}:1:1: a second {kind} file for task {qid} (the first is "
                               f"{slot[0]}) (give one release folder)")
        setattr(t, kind, (path, data))
    if not tasks:
        raise ImportError_(f"{source}: no VibeSearchBench `.json` files found (give the "
                           "tasks folder, or the site's data/ folder)")
    return tasks, root


# --------------------------------------------------------------------------- mapping


def _strings(value: Any, where: str, key: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ImportError_(f"{where}: field `{key}` must be a list of texts, found "
                           f"{type(value).__name__}")
    out = []
    for i, item in enumerate(value):
        if isinstance(item, dict):  # {"query": …} / {"text": …} objects are texts too
            item = item.get("query", item.get("text", item.get("content")))
        if not isinstance(item, str) or not item.strip():
            raise ImportError_(f"{where}: `{key}[{i}]` must be non-empty text, found "
                               f"{json.dumps(item, ensure_ascii=False)[:40]}")
        out.append(item)
    return out


def _task_graph(path: Path, data: dict[str, Any], report: _Report) -> list[dict[str, str]]:
    where = str(path)
    nodes = data.get("nodes") or []
    triples = data.get("triples")
    if not isinstance(nodes, list):
        raise ImportError_(f"{where}: field `nodes` must be a list of {{node_id, node_name}}")
    names: dict[str, str] = {}
    for i, n in enumerate(nodes):
        if not isinstance(n, dict) or not isinstance(n.get("node_id"), str | int) \
                or not isinstance(n.get("node_name"), str):
            raise ImportError_(f"{where}: `nodes[{i}]` must be {{node_id, node_name}}, found "
                               f"{json.dumps(n, ensure_ascii=False)[:60]}")
        names[str(n["node_id"])] = n["node_name"]
    if not isinstance(triples, list) or not triples:
        raise ImportError_(f"{where}: field `triples` must be a non-empty list of {{head_id, "
                           "relation, tail_id}} (the task's ground truth)")
    out = []
    used: set[str] = set()
    for i, t in enumerate(triples):
        ok = isinstance(t, dict) and all(isinstance(t.get(k), str | int) and str(t.get(k))
                                         for k in ("head_id", "tail_id")) \
            and isinstance(t.get("relation"), str) and t["relation"].strip()
        if not ok:
            raise ImportError_(f"{where}: `triples[{i}]` must be {{head_id, relation, "
                               f"tail_id}}, found {json.dumps(t, ensure_ascii=False)[:60]}")
        h, tl = str(t["head_id"]), str(t["tail_id"])
        used |= {h, tl}
        missing = [x for x in (h, tl) if x not in names]
        if missing:
            report.inconsistencies.append(f"`{path.name}`: triples[{i}] names node(s) "
                                          f"{', '.join(missing)} not in `nodes`; the id is "
                                          "used as the name")
        out.append({"head": names.get(h, h), "relation": t["relation"],
                    "tail": names.get(tl, tl)})
    report.isolated_nodes += len(set(names) - used)
    return out


def _extraction_graph(path: Path, data: dict[str, Any], report: _Report
                      ) -> list[dict[str, str]]:
    triplets = data.get("triplets")
    if not isinstance(triplets, list) or not triplets:
        raise ImportError_(f"{path}: field `triplets` must be a non-empty list of {{head, "
                           "relation, tail}}")
    out = []
    for i, t in enumerate(triplets):
        if not isinstance(t, dict) or not all(isinstance(t.get(k), str) and t[k].strip()
                                              for k in ("head", "relation", "tail")):
            raise ImportError_(f"{path}: `triplets[{i}]` must be {{head, relation, tail}} "
                               f"texts, found {json.dumps(t, ensure_ascii=False)[:60]}")
        out.append({"head": t["head"], "relation": t["relation"], "tail": t["tail"]})
    total = data.get("total")
    if total is not None and total != len(out):
        report.inconsistencies.append(f"`{path.name}`: total {total} but {len(out)} triplets; "
                                      "the triplets are imported")
    return out


def _language(data: dict[str, Any], texts: list[str]) -> str:
    lang = data.get("language")
    if isinstance(lang, str) and lang.strip():
        return lang.strip()
    return "zh" if any(_CJK.search(t) for t in texts) else "en"


def _episode_id(t: _Task) -> str:
    subset, num = t.key
    base = f"{int(num):03d}" if num.isdigit() else num
    return safe_id(f"{subset}-{base}" if subset else base)


def _graph_json(triples: list[dict[str, str]]) -> str:
    rows = ",\n".join("  " + json.dumps(t, ensure_ascii=False) for t in triples)
    return "[\n" + rows + "\n]\n"


def _build(t: _Task, root: Path, from_extractions: bool, report: _Report
           ) -> tuple[str, str, str, dict[str, Any], list[dict[str, str]]]:
    """(episode id, episode YAML, persona id, persona, graph triples) of one task."""
    eid = _episode_id(t)
    rel = {k: getattr(t, k)[0].relative_to(root).as_posix()
           for k in ("task", "viewer", "extraction") if getattr(t, k)}
    head: list[str] = ["benchpack: literal", "", "Imported by `bench import vibesearch` from "
                       + ", ".join(f"{rel[k]} ({k})" for k in rel) + "."]
    tags = ["vibesearch"]
    meta: dict[str, Any] = {}
    description = None
    user_queries: list[str] = []
    persona_text = None
    title = None
    if t.task is not None:
        path, data = t.task
        where = str(path)
        qid = str(data["task_id"])
        final = _text(data, "final_query", where)
        assert final is not None
        initial = _text(data, "initial_query", where, required=False)
        subs = _strings(data.get("sub_queries"), where, "sub_queries")
        user_queries = _strings(data.get("user_queries"), where, "user_queries")
        persona = data.get("user_persona")
        if persona is not None and not isinstance(persona, str):
            persona = json.dumps(persona, ensure_ascii=False, sort_keys=True)
        persona_text = persona or None
        opening = initial or (subs.pop(0) if subs else final)
        queries = [opening, *subs]
        description = final
        graph = _task_graph(path, data, report)
        # the daily/pro split is the category; a source `category` is a domain when there is
        # no `domain`, else a tag
        for k in ("domain", "category"):
            if isinstance(data.get(k), str) and data[k]:
                if "domain" not in meta:
                    meta["domain"] = data[k]
                else:
                    tags.append(f"{k}:{data[k]}")
        diff = data.get("difficulty")
        if isinstance(diff, str) and diff.lower() in DIFFICULTIES:
            meta["difficulty"] = diff.lower()
        elif diff is not None:
            tags.append(f"difficulty:{diff}")
        known = {"task_id", "final_query", "initial_query", "sub_queries", "user_queries",
                 "user_persona", "language", "nodes", "triples", "subset", "domain",
                 "category", "difficulty"}
        extra = sorted(set(data) - known)
        for k in extra:
            report.extra_fields.setdefault(k, []).append(qid)
            head.append(f"source field {k}: "
                        + json.dumps(data[k], ensure_ascii=False, sort_keys=True))
        lang = _language(data, queries)
        if t.extraction is not None:
            report.lines.append(f"`{rel['extraction']}`: dropped (a model's answer graph; "
                                f"`{rel['task']}` gives the ground truth)")
        graph_note = f"ground truth from {rel['task']} ({len(graph)} triples)"
    else:
        if t.extraction is None:
            report.lines.append(f"`{rel['viewer']}`: dropped (no task or triple file for "
                                "this task)")
            raise _Skip
        path, data = t.extraction
        qid = str(data["qid"])
        if not from_extractions:
            raise ImportError_(
                f"{path}:1:1: the triplets of a `final_extractions` file are one model's "
                "answer graph, not VibeSearchBench's ground truth (give the task files with "
                "`nodes` and `triples`, or --graphs-from-extractions to use them as a "
                "reference graph knowingly)")
        graph = _extraction_graph(path, data, report)
        tags.append("graph:model-extraction")
        graph_note = (f"a MODEL'S ANSWER GRAPH from {rel['extraction']} ({len(graph)} "
                      "triples), not the ground truth: scores measure agreement with that "
                      "model")
        question = None
        if t.viewer is not None:
            vpath, vdata = t.viewer
            question = _text(vdata, "question", str(vpath))
            st = vdata.get("short_title")
            title = st if isinstance(st, str) and st else None
        if question is None:
            question = (f"(The question of VibeSearchBench task {qid} is not in the imported "
                        "files: replace this line with it.)")
            report.placeholders.append(eid)
        queries = [question]
        lang = _language({}, [question, *(g["head"] for g in graph)])
    if t.viewer is not None and t.task is not None:
        report.lines.append(f"`{rel['viewer']}`: not used (the task file gives the queries)")
    if t.subset:
        meta["category"] = t.subset
    meta["language"] = lang
    meta["tags"] = tags
    report.triples += len(graph)
    head += [f"task id: {qid}", f"graph: {graph_note}"]
    for i, q in enumerate(user_queries, 1):
        head.append(f"user_queries[{i}]: {q}")
    stages: list[dict[str, Any]] = [{"id": "st1", "title": "opening",
                                     "when": {"kind": "start"}, "line": queries[0]}]
    for i, q in enumerate(queries[1:], 2):
        stages.append({"id": f"st{i}", "title": f"sub-query {i - 1}",
                       "when": {"kind": "mentions", "about": queries[i - 2]}, "line": q})
    session: dict[str, Any] = {"id": eid, "title": title or qid}
    if description:
        session["description"] = description
    session |= {"metadata": meta, "protocol": "staged_disclosure",
                "limits": {"max_turns": max(MAX_TURNS, len(stages) + 1)}, "stages": stages,
                "graph": {"file": f"../graphs/{eid}.json"}}
    if len(stages) == 1:
        # Known and left to the user, not an accident: say so where the warning would be, so
        # `compile --strict` passes and the gap is still listed (here and in the report).
        session["lint"] = {"ignore": ["W308"]}
        head.append("lint.ignore W308 (left for you to fill): the imported files give one "
                    "query only, so the opening is the request and no later stage discloses "
                    "anything; add `stages:` with the task's sub-queries to make it staged")
        report.single_stage.append(eid)
    pid = f"p-{eid}"
    episode = {"id": eid, "title": title or qid, "persona": pid, "sessions": [session]}
    text = ("# yaml-language-server: $schema=../../schemas/fragment.schema.json\n"
            + comment_lines(head) + dump({"episodes": [episode]}))
    role = persona_text or (f"A user of VibeSearchBench task {qid} (no persona in the "
                            "imported files)")
    return eid, text, pid, {"id": pid, "name": f"VibeSearchBench user {eid}",
                            "profile": {"role": role, "language": lang}}, graph


class _Skip(Exception):
    pass


# --------------------------------------------------------------------------- import


def import_pack(source: Path, out: Path, graphs_from_extractions: bool = False,
                name: str = "vibesearch") -> ImportResult:
    report = _Report()
    tasks, root = _collect(Path(source), report)
    built = []
    for key in sorted(tasks, key=lambda k: (k[0], int(k[1]) if k[1].isdigit() else -1, k[1])):
        try:
            built.append(_build(tasks[key], root, graphs_from_extractions, report))
        except _Skip:
            continue
    if not built:
        raise ImportError_(f"{source}: no task to import (trajectory files alone carry no "
                           "ground truth; give the task files)")
    ids = [b[0] for b in built]
    dup = next((i for i in ids if ids.count(i) > 1), None)
    if dup:
        raise ImportError_(f"{source}: two tasks map to the episode id {dup} (are two "
                           "releases mixed in one folder?)")
    result = ImportResult(Path(out))
    out = Path(out)
    (out / "episodes").mkdir(parents=True, exist_ok=True)
    (out / "graphs").mkdir(exist_ok=True)
    personas = []
    for eid, text, _pid, persona, graph in built:
        _write(out, Path("episodes") / f"{eid}.yaml", text, result)
        _write(out, Path("graphs") / f"{eid}.json", _graph_json(graph), result)
        personas.append(persona)
    _write(out, Path("pack.yaml"), _pack_yaml(name, Path(source), personas,
                                               graphs_from_extractions), result)
    _write(out, Path("IMPORT_REPORT.md"), _report_md(Path(source), built, report), result)
    result.sessions = len(built)
    result.dropped = list(report.lines)
    if report.placeholders:
        result.notes.append(f"{len(report.placeholders)} session(s) have a placeholder "
                            "request: the question is not in the imported files (see "
                            "IMPORT_REPORT.md)")
    if graphs_from_extractions and any("graph:model-extraction" in b[1] for b in built):
        result.notes.append("graphs come from final_extractions: a model's answers, not the "
                            "ground truth")
    return result


def _write(out: Path, rel: Path, text: str, result: ImportResult) -> None:
    (out / rel).write_bytes(text.encode("utf-8"))
    result.files.append(rel)


def _pack_yaml(name: str, source: Path, personas: list[dict[str, Any]],
               from_extractions: bool) -> str:
    head = ["yaml-language-server: $schema=../schemas/pack.schema.json", "",
            f"Imported by `bench import vibesearch` from {source.name} "
            f"({len(personas)} tasks). Each file in episodes/ is one task, its ground-truth "
            "graph is graphs/<id>.json;",
            "IMPORT_REPORT.md lists what became of every source field.",
            "The release's agents search the live web (search, visit, scholar search, python); "
            "this pack has no tools:",
            "give your agent its own web tools, or add a corpus and `tools:` as in "
            "taskpacks/mussel-genome-search."]
    if from_extractions:
        head.append("Graphs marked graph:model-extraction are a released model's answers, "
                    "not the ground truth.")
    pack = {"benchpack": 1, "name": name, "version": "0.1.0",
            "description": "VibeSearchBench tasks (imported): long-horizon proactive search "
                           "with staged disclosure, scored by triplet recall / precision / F1 "
                           "against each task's graph.",
            "metadata": {"tags": ["vibesearch", "imported"]},
            "defaults": {"limits": {"max_turns": MAX_TURNS}},
            "include": ["episodes/*.yaml"],
            "personas": personas}
    return comment_lines(head) + dump(pack)


def _table(rows: list[tuple[str, str, str]]) -> list[str]:
    return ["| field | fate | what became of it / why |", "|---|---|---|",
            *(f"| `{f}` | {fate} | {why} |" for f, fate, why in rows)]


def _report_md(source: Path, built: list[Any], report: _Report) -> str:
    k = report.kinds
    out = ["# Import report: VibeSearchBench", "",
           f"Source: `{source.name}`: {k['task']} task file(s), {k['viewer']} trajectory "
           f"file(s), {k['extraction']} extraction file(s). Imported: {len(built)} sessions, "
           f"{report.triples} graph triples.", "",
           "## Task files (`task_id`, `final_query`, `nodes`, `triples`, …)", "",
           *_table(TASK_FIELDS), "",
           f"Nodes in no triple (not scored): {report.isolated_nodes}.", "",
           "## Trajectory viewer files (`data/trajs/<subset>/<id>.json`)", "",
           *_table(VIEWER_FIELDS), "",
           "## Extraction files (`data/final_extractions/<subset>/<id>.json`)", "",
           *_table(EXTRACTION_FIELDS), "",
           "## Not in the release files, so not in the pack", "",
           "- the web tools (search, visit, scholar search, python) and the live web: the pack "
           "has no tools;",
           "- the user simulator's prompt and the triple-request prompt: benchpack's own "
           "staged-disclosure simulator and graph request are used;",
           "- node-level metrics: benchpack scores triples (recall, precision, F1); the "
           "LLM judge's collective/compositional coverage needs `--judge litellm:…`, the "
           "`rules` judge matches directly and by subsumption only (a lower bound)."]
    per = [f"- `{b[0]}`: {len(b[4])} triples" for b in built]
    out += ["", "## Sessions", "", *per]
    if report.placeholders or report.single_stage:
        out += ["", "## Left for you to fill", "",
                "Marked in the episode files; `bench compile --strict` passes without them, "
                "but these sessions do not yet run as the release's tasks do.", "",
                *(f"- `{e}`: placeholder request: no task or trajectory file gives its "
                  "question; replace the opening stage's line with it" for e in
                  report.placeholders),
                *(f"- `{e}`: one stage only (the opening): no sub-queries in the imported "
                  "files, so nothing is disclosed later; W308 (`lint.ignore` in the session) "
                  "until you add `stages:`" for e in report.single_stage)]
    if report.extra_fields:
        out += ["", "## Fields not known to this importer (kept in the episode comments)", "",
                *(f"- `{f}`: {', '.join(q)}" for f, q in sorted(report.extra_fields.items()))]
    if report.lines or report.ignored:
        out += ["", "## Files not imported", "", *(f"- {x}" for x in report.lines),
                *(f"- {x}" for x in report.ignored)]
    if report.inconsistencies:
        out += ["", "## Inconsistencies in the source", "",
                *(f"- {x}" for x in report.inconsistencies)]
    return "\n".join(out) + "\n"
