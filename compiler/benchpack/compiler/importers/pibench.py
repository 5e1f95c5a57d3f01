"""π-Bench persona directories → an intent-tracking pack.

SOURCE is one persona directory (`profile.yaml`, `episode.yaml`, `tools.yaml`,
`tasks/<task_id>/{task.yaml, assets…}`) or a `data/` directory holding several: one pack, one
episode per persona, one intent-tracking session per task. The episode keeps `depends_on`
exactly as `episode.yaml` gives it (sessions are written in a dependency order, stable on the
file's order). Task assets are copied to `files/<persona>/<task_id>/` and placed in the
workspace when their session starts, under the path the task names them by.

The AppWorld apps the tasks use (`objectives.tools`: Simple Note, Gmail, Todoist, Phone,
Amazon) become benchpack's own stateful toolsets under the same tool names, and the grader
scripts (`tools_evaluation_path`) we have descriptions of become rules (`pibench_apps.py`);
the rest is kept as comments and reported so, never passed off as mapped.

Every text is copied verbatim (`# benchpack: literal`: braces are never Jinja). Output depends
only on the input bytes, so importing again writes byte-identical files. `partial=True` accepts
sampled releases (a persona without `profile.yaml` or `episode.yaml`), reporting each gap.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from benchpack.specs.release_ids import safe_id

from . import ImportError_, ImportResult
from . import pibench_apps as apps
from .pibench_fields import FATES, FIELDS, LINT_IGNORED  # noqa: F401 (re-exported)
from .proactbench import dump

DIFFICULTIES = ("easy", "medium", "hard")
TRIGGERS = {"user": "user_message"}
"""π-Bench trigger types → benchpack session trigger kinds (the release uses only `user`)."""

# --------------------------------------------------------------------------- reading


class _Loader(yaml.SafeLoader):
    """Safe YAML that remembers where each mapping and list started."""


def _construct(loader: _Loader, node: yaml.Node, deep: bool = False) -> Any:
    if isinstance(node, yaml.MappingNode):
        value: Any = _Map(loader.construct_mapping(node, deep=True))
    elif isinstance(node, yaml.SequenceNode):
        value = _List(loader.construct_sequence(node, deep=True))
    else:  # registered for mappings and sequences only
        raise TypeError(f"not a mapping or a list: {node.tag}")
    value.mark = (node.start_mark.line + 1, node.start_mark.column + 1)
    return value


class _Map(dict):  # type: ignore[type-arg]
    mark = (1, 1)


class _List(list):  # type: ignore[type-arg]
    mark = (1, 1)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct)


def _at(path: Path, obj: Any) -> str:
    line, col = getattr(obj, "mark", (1, 1))
    return f"{path}:{line}:{col}"


def read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ImportError_(f"{path}: no such file (a π-Bench persona directory holds "
                           "profile.yaml, episode.yaml and tasks/<task_id>/task.yaml)") from None
    except UnicodeDecodeError as exc:
        raise ImportError_(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as exc:
        m = exc.problem_mark or exc.context_mark
        where = f"{path}:{m.line + 1}:{m.column + 1}" if m else str(path)
        raise ImportError_(f"{where}: not valid YAML ({exc.problem or exc.context}) (check "
                           "the indentation and quoting on that line)") from None
    except yaml.YAMLError as exc:
        raise ImportError_(f"{path}: not valid YAML ({exc})") from None


def _need(obj: Any, key: str, kind: type | tuple[type, ...], path: Path) -> Any:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        found = "nothing" if value is None else type(value).__name__
        raise ImportError_(f"{_at(path, obj)}: `{key}` must be {names}, found {found} (is this "
                           "a π-Bench v2 file?)")
    return value


def _mapping(data: Any, path: Path) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ImportError_(f"{path}:1:1: must be a YAML mapping, found "
                           f"{type(data).__name__} (is this a π-Bench v2 file?)")
    return data


# --------------------------------------------------------------------------- model


@dataclass
class _Report:
    unknown: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    apps: dict[str, list[str]] = field(default_factory=dict)
    """Per task: what became of its app tools and grader script (the report's app section)."""

    def version(self, obj: dict[str, Any], path: Path) -> None:
        v = obj.get("schema_version")
        if v not in (None, "v2"):
            self.notes.append(f"{path.parent.name}/{path.name}: schema_version `{v}` (this "
                              "importer reads v2; check the result)")

    def extra_keys(self, obj: dict[str, Any], known: set[str], what: str) -> None:
        for k in obj:
            if k not in known:
                self.unknown[f"{what}.{k}"] += 1


@dataclass
class _Persona:
    dir: Path
    user_id: str
    profile: dict[str, Any] | None
    episode_id: str
    order: list[str]
    depends: dict[str, list[str]]
    tasks: dict[str, dict[str, Any]]
    tool_names: list[str]
    apps: set[str] = field(default_factory=set)
    """The apps of benchpack's toolsets its tasks use."""
    products: list[dict[str, Any]] = field(default_factory=list)
    """Amazon products its tasks name (the shop's seed)."""


TASK_KEYS = {"schema_version", "task_id", "user_id", "environment_id", "title", "description",
             "task_type", "trigger", "intent", "objectives", "metadata"}


def _read_persona(pdir: Path, partial: bool, report: _Report) -> _Persona:
    name = pdir.name
    tasks_dir = pdir / "tasks"
    if not tasks_dir.is_dir():
        raise ImportError_(f"{pdir}: no tasks/ directory (give a π-Bench persona directory, "
                           "data/<Persona>, or the data/ directory holding them)")
    profile = None
    if (pdir / "profile.yaml").is_file():
        profile = _mapping(read_yaml(pdir / "profile.yaml"), pdir / "profile.yaml")
        report.version(profile, pdir / "profile.yaml")
        report.extra_keys(profile, {"schema_version", "user_id", "role", "preferences",
                                    "long_term_goals"}, "profile.yaml")
    elif not partial:
        raise ImportError_(f"{pdir / 'profile.yaml'}: no such file (every π-Bench persona has "
                           "one; for a sampled release without it pass --partial)")
    else:
        report.notes.append(f"`{name}`: no profile.yaml; the persona is a placeholder")
    user_id = str(profile.get("user_id") or name) if profile else name
    tasks: dict[str, dict[str, Any]] = {}
    for tdir in sorted(p for p in tasks_dir.iterdir() if p.is_dir()):
        tpath = tdir / "task.yaml"
        task = _mapping(read_yaml(tpath), tpath)
        tid = _need(task, "task_id", str, tpath)
        if tid != tdir.name:
            raise ImportError_(f"{_at(tpath, task)}: task_id `{tid}` differs from its directory "
                               f"`{tdir.name}` (rename one so they agree)")
        task["__path"], task["__dir"] = tpath, tdir
        tasks[tid] = task
    if not tasks:
        raise ImportError_(f"{tasks_dir}: no task directories (expected tasks/<task_id>/task.yaml)")
    epath = pdir / "episode.yaml"
    depends: dict[str, list[str]] = {}
    if epath.is_file():
        ep = _mapping(read_yaml(epath), epath)
        report.version(ep, epath)
        report.extra_keys(ep, {"schema_version", "episode_id", "user_id", "tasks"}, "episode.yaml")
        episode_id = str(ep.get("episode_id") or f"ep_{name}")
        if ep.get("user_id") not in (None, user_id):
            raise ImportError_(f"{_at(epath, ep)}: user_id `{ep['user_id']}` differs from "
                               f"profile.yaml's `{user_id}` (one persona per directory)")
        entries = _need(ep, "tasks", list, epath)
        for e in entries:
            if not isinstance(e, dict) or not isinstance(e.get("task_id"), str):
                raise ImportError_(f"{_at(epath, e if isinstance(e, dict) else entries)}: each "
                                   "task needs a `task_id` (and a `depends_on` list)")
            report.extra_keys(e, {"task_id", "depends_on"}, "episode.yaml tasks[]")
            tid = e["task_id"]
            if tid in depends:
                raise ImportError_(f"{_at(epath, e)}: task `{tid}` is listed twice")
            if tid not in tasks:
                raise ImportError_(f"{_at(epath, e)}: task `{tid}` has no "
                                   f"tasks/{tid}/task.yaml (add it or remove the entry)")
            deps = e.get("depends_on") or []
            if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
                raise ImportError_(f"{_at(epath, e)}: `depends_on` of `{tid}` must be a list "
                                   "of task ids")
            depends[tid] = list(deps)
        for tid, deps in depends.items():
            for d in deps:
                if d not in depends:
                    e = next(x for x in entries if x["task_id"] == tid)
                    raise ImportError_(f"{_at(epath, e)}: `{tid}` depends on unknown task "
                                       f"`{d}` (every depends_on must name a task of this "
                                       "episode)")
        missing = [t for t in tasks if t not in depends]
        if missing and not partial:
            raise ImportError_(f"{epath}: task `{missing[0]}` is not in the episode (list it "
                               "under `tasks:`, or pass --partial to append it)")
        for t in missing:
            report.notes.append(f"`{name}`: task `{t}` is not in episode.yaml; appended with "
                                "no dependencies")
            depends[t] = []
        order = _topological(depends, epath, entries)
    elif not partial:
        raise ImportError_(f"{epath}: no such file (it gives the sessions' order and "
                           "dependencies; for a sampled release without it pass --partial)")
    else:
        report.notes.append(f"`{name}`: no episode.yaml; tasks in id order, no dependencies "
                            "known")
        episode_id = f"ep_{name}"
        depends = {t: [] for t in sorted(tasks)}
        order = sorted(tasks)
    tool_names: list[str] = []
    if (pdir / "tools.yaml").is_file():
        tools = _mapping(read_yaml(pdir / "tools.yaml"), pdir / "tools.yaml")
        report.extra_keys(tools, {"tool_names"}, "tools.yaml")
        tool_names = [str(t) for t in tools.get("tool_names") or []]
    return _Persona(pdir, user_id, profile, episode_id, order, depends, tasks, tool_names)


def _topological(depends: dict[str, list[str]], path: Path, entries: list[Any]) -> list[str]:
    """A dependency order, stable on the file's order; a cycle is a located error."""
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(t: str, stack: list[str]) -> None:
        if state.get(t) == 2:
            return
        if state.get(t) == 1:
            cycle = [*stack[stack.index(t):], t]
            e = next(x for x in entries if x["task_id"] == cycle[0])
            raise ImportError_(f"{_at(path, e)}: dependency cycle "
                               f"{' → '.join(cycle)} (an episode's tasks must form a DAG)")
        state[t] = 1
        for d in depends[t]:
            visit(d, [*stack, t])
        state[t] = 2
        order.append(t)

    for t in depends:
        visit(t, [])
    return order


# --------------------------------------------------------------------------- writing


def _comment(lines: list[str], indent: str = "") -> str:
    return "".join(f"{indent}# {x}".rstrip() + "\n" for x in lines)


def _session(p: _Persona, tid: str, report: _Report, files_out: dict[Path, bytes]
             ) -> tuple[dict[str, Any], list[str], str | None]:
    """(session, comment lines, language) for one task."""
    t = p.tasks[tid]
    path: Path = t["__path"]
    report.version(t, path)
    report.extra_keys(t, TASK_KEYS | {"__path", "__dir"}, "task.yaml")
    if t.get("user_id") not in (None, p.user_id):
        raise ImportError_(f"{_at(path, t)}: user_id `{t['user_id']}` differs from the persona "
                           f"`{p.user_id}` (a task belongs to its persona directory)")
    intent = _need(t, "intent", dict, path)
    report.extra_keys(intent, {"initial_input", "hidden_intent"}, "task.yaml intent")
    request = _need(intent, "initial_input", str, path)
    hidden = []
    for k, h in enumerate(intent.get("hidden_intent") or [], 1):
        if not isinstance(h, dict) or not isinstance(h.get("content"), str):
            raise ImportError_(f"{_at(path, h if isinstance(h, dict) else intent)}: each "
                               "hidden_intent needs a `content` text")
        report.extra_keys(h, {"content"}, "task.yaml hidden_intent[]")
        hidden.append({"id": f"i{k}", "text": h["content"]})
    if not hidden:
        raise ImportError_(f"{_at(path, intent)}: `hidden_intent` is empty (an intent-tracking "
                           "session needs at least one)")
    trig = t.get("trigger") or {}
    ttype = trig.get("type", "user") if isinstance(trig, dict) else None
    if ttype not in TRIGGERS:
        raise ImportError_(f"{_at(path, trig if isinstance(trig, dict) else t)}: trigger type "
                           f"`{ttype}` is not supported (π-Bench tasks use `user`)")
    obj = t.get("objectives") or {}
    if not isinstance(obj, dict):
        raise ImportError_(f"{_at(path, t)}: `objectives` must be a mapping")
    report.extra_keys(obj, {"tools", "checklist", "files_read", "tools_evaluation_path"},
                      "task.yaml objectives")
    files_read = [str(f) for f in obj.get("files_read") or []]
    checklist = []
    for k, c in enumerate(obj.get("checklist") or [], 1):
        if not isinstance(c, dict) or not isinstance(c.get("criterion"), str):
            raise ImportError_(f"{_at(path, c if isinstance(c, dict) else obj)}: each checklist "
                               "item needs a `criterion` text")
        report.extra_keys(c, {"criterion"}, "task.yaml checklist[]")
        item: dict[str, Any] = {"id": f"c{k}", "text": c["criterion"]}
        if files_read:
            item["evidence"] = {"files": files_read}
        checklist.append(item)
    meta = t.get("metadata") or {}
    tags = ["pibench"]
    difficulty = None
    task_type = t.get("task_type")
    if task_type is not None:
        tags.append(f"task_type:{task_type}")
    if t.get("environment_id"):
        tags.append(f"environment_id:{t['environment_id']}")
    for k, v in meta.items() if isinstance(meta, dict) else []:
        if k == "difficulty" and v in DIFFICULTIES:
            difficulty = v
        elif isinstance(v, (str, int, float, bool)):
            tags.append(f"{k}:{v}")
        elif isinstance(v, list) and all(isinstance(x, (str, int, float)) for x in v):
            tags += [f"{k}:{x}" for x in v]
        else:
            report.unknown[f"task.yaml metadata.{k} (not a scalar or list)"] += 1
    comments = [f"{tid}: tasks/{tid}/task.yaml"]
    fates: list[str] = []
    for spec in obj.get("tools") or []:
        if isinstance(spec, dict):
            for tool, sel in spec.items():
                app = re.sub(r"^mcp_appworld_", "", str(tool)).split("__", 1)[0]
                if f"app:{app}" not in tags:
                    tags.append(f"app:{app}")
                sel = sel if isinstance(sel, dict) else {}
                named = apps.app_of(str(tool)) or ("", "")
                ours = named[0] in apps.APPS and named[1] in apps.operations(named[0])
                if ours:
                    p.apps.add(named[0])
                    if named[0] == "amazon":
                        known = {x["name"] for x in p.products}
                        p.products += [x for x in apps.seed_products(request)
                                       if x["name"] not in known]
                elif f"`{tool}`" not in " ".join(fates):
                    fates.append(f"`{tool}`: not offered (no such operation in benchpack's "
                                 "toolsets)")
                comments.append(f"  {'app tool (benchpack toolset)' if ours else 'AppWorld tool (not implemented)'}"
                                f": {tool}; grader evidence call "
                                f"{list(sel.get('call') or [])} result "
                                f"{list(sel.get('result') or [])} (kept as a comment)")
    grader = obj.get("tools_evaluation_path")
    derived: list[dict[str, Any]] = []
    if grader:
        derived, why = apps.grader_rules(str(grader), request, p.user_id)
        if why:
            comments.append(f"  grader script (kept as a comment, not run): {grader}: {why}")
            fates.append(f"grader `{grader}` dropped: {why}")
        else:
            comments.append(f"  grader script: {grader}: its {len(derived)} documented checks "
                            "are the checklist items g1… (rules)")
            fates.append(f"grader `{grader}`: {len(derived)} checks mapped to rules g1–"
                         f"g{len(derived)}")
            report.counts["grader checks"] += len(derived)
    if fates or any(t.startswith("app:") for t in tags):
        report.apps[tid] = fates
    if files_read and not checklist:
        comments.append(f"  files read (no checklist to attach them to): {files_read}")
    s: dict[str, Any] = {"id": safe_id(tid)}
    if t.get("title"):
        s["title"] = str(t["title"])
    if t.get("description"):
        s["description"] = str(t["description"])
    s["protocol"] = "intent_tracking"
    if p.depends.get(tid):
        s["depends_on"] = [safe_id(d) for d in p.depends[tid]]
    s["request"] = request
    assets = []
    tdir: Path = t["__dir"]
    for f in sorted(x for x in tdir.rglob("*") if x.is_file() and x.name != "task.yaml"):
        rel = f.relative_to(tdir).as_posix()
        dest = Path("files") / safe_id(p.dir.name) / safe_id(tid) / rel
        files_out[dest] = f.read_bytes()
        assets.append({"path": rel, "source": f"../{dest.as_posix()}"})
        report.counts["assets"] += 1
    if assets:
        s["files"] = assets
    s["hidden_intents"] = hidden
    checklist += [{"id": f"g{k}", **item} for k, item in enumerate(derived, 1)]
    if checklist:
        s["checklist"] = checklist
    md: dict[str, Any] = {}
    if task_type is not None:
        md["category"] = str(task_type)
    if difficulty:
        md["difficulty"] = difficulty
    md["tags"] = tags
    s["metadata"] = md
    report.counts["sessions"] += 1
    report.counts["hidden intents"] += len(hidden)
    report.counts["checklist items"] += len(checklist) - len(derived)  # the release's criteria
    report.counts["dependencies"] += len(p.depends.get(tid, []))
    return s, comments, None


def _persona_yaml(p: _Persona) -> tuple[dict[str, Any], str]:
    prof = p.profile or {}
    prefs = prof.get("preferences") or {}
    language = str(prefs.get("language") or "en") if isinstance(prefs, dict) else "en"
    profile: dict[str, Any] = {"role": str(prof.get("role") or f"π-Bench persona {p.user_id} "
                                           "(profile.yaml not in this release sample)")}
    if isinstance(prefs, dict) and prefs:
        profile["preferences"] = [f"{k}: {v}" for k, v in prefs.items()]
    if prof.get("long_term_goals"):
        profile["long_term_goals"] = [str(g) for g in prof["long_term_goals"]]
    profile["language"] = language
    # No `style:`: a style always carries word bounds (terse 5–25, chatty 40–100, ProactBench's),
    # which π-Bench never states; `verbosity: high` next to them contradicted them (W322).
    # The preference stays in `profile.preferences`, word for word, as the release gives it.
    persona: dict[str, Any] = {"id": safe_id(p.user_id), "name": p.user_id, "profile": profile}
    return persona, language


def import_pack(source: Path, out: Path, partial: bool = False) -> ImportResult:
    source = Path(source)
    if not source.is_dir():
        raise ImportError_(f"{source}: not a directory (give a π-Bench persona directory, "
                           "data/<Persona>, or the data/ directory holding them)")
    if (source / "tasks").is_dir():
        dirs = [source]
    else:
        dirs = sorted(d for d in source.iterdir() if (d / "tasks").is_dir())
        if not dirs:
            raise ImportError_(f"{source}: no persona directories (expected <Persona>/tasks/ "
                               "here, or tasks/ itself)")
    report = _Report()
    personas = [_read_persona(d, partial, report) for d in dirs]
    ids = Counter(safe_id(p.user_id) for p in personas)
    if any(n > 1 for n in ids.values()):
        raise ImportError_(f"{source}: two persona directories share the user_id "
                           f"`{next(k for k, n in ids.items() if n > 1)}`")
    result = ImportResult(out)
    files_out: dict[Path, bytes] = {}
    episodes: list[tuple[str, str]] = []
    persona_specs = []
    for p in personas:
        persona, language = _persona_yaml(p)
        persona_specs.append(persona)
        blocks = []
        sessions = []
        for tid in p.order:
            s, comments, _ = _session(p, tid, report, files_out)
            s["metadata"]["language"] = language
            sessions.append(s)
            blocks.append(comments)
        ep = {"id": safe_id(p.episode_id), "title": f"π-Bench {p.user_id}",
              "persona": persona["id"], "memory": "carry_over",
              "metadata": {"domain": p.user_id}, "sessions": sessions}
        world: dict[str, Any] = {}
        if p.apps:
            world = {"environments": [apps.app_env(p.user_id, p.apps)]}
            ep = {**dict(list(ep.items())[:4]), "environment": world["environments"][0]["id"],
                  **dict(list(ep.items())[4:])}
        rel = p.dir.name
        head = ["benchpack: literal", "", f"Imported by `bench import pibench` from {rel}/ "
                "(episode.yaml, tasks/*/task.yaml).",
                "One session per task; depends_on exactly as episode.yaml gives it.",
                "Where each session came from, and what is not imported (see IMPORT_REPORT.md):"]
        for b in blocks:
            head += b
        if p.apps:
            head += ["", "The apps its tasks use are benchpack's own stateful toolsets "
                     "(tools/pibench/<app>.py), under AppWorld's tool names; they start empty "
                     "(the release holds no AppWorld state) but for Amazon products the tasks "
                     "name. They are not AppWorld: see IMPORT_REPORT.md."]
        text = ("# yaml-language-server: $schema=../schemas/fragment.schema.json\n"
                + _comment(head) + dump({**world, "episodes": [ep]}))
        episodes.append((safe_id(p.dir.name), text))
    name = "pibench" if len(personas) > 1 else safe_id(f"pibench-{personas[0].dir.name}").lower()
    products: list[dict[str, Any]] = []
    for p in personas:
        products += [x for x in p.products if x["name"] not in {y["name"] for y in products}]
    app_world, tool_files = apps.app_world(sorted({a for p in personas for a in p.apps}),
                                           products)
    files_out.update(tool_files)
    out.mkdir(parents=True, exist_ok=True)
    (out / "episodes").mkdir(exist_ok=True)
    for eid, text in episodes:
        _write(out, Path("episodes") / f"{eid}.yaml", text.encode("utf-8"), result)
    for dest, data in sorted(files_out.items()):
        (out / dest).parent.mkdir(parents=True, exist_ok=True)
        _write(out, dest, data, result)
    _write(out, Path("pack.yaml"), _pack_yaml(name, personas, persona_specs, app_world)
           .encode("utf-8"), result)
    _write(out, Path("IMPORT_REPORT.md"), _report_md(source, personas, report).encode("utf-8"),
           result)
    result.sessions = report.counts["sessions"]
    result.notes += report.notes
    if report.unknown:
        result.notes.append(f"{sum(report.unknown.values())} source field(s) not in the "
                            "π-Bench v2 shape were dropped (see IMPORT_REPORT.md)")
    return result


def _write(out: Path, rel: Path, data: bytes, result: ImportResult) -> None:
    (out / rel).write_bytes(data)
    result.files.append(rel)


def _pack_yaml(name: str, personas: list[_Persona], specs: list[dict[str, Any]],
               app_world: dict[str, Any]) -> str:
    head = ["yaml-language-server: $schema=../schemas/pack.schema.json", "benchpack: literal",
            "", "Imported by `bench import pibench` from "
            + ", ".join(f"{p.dir.name}/" for p in personas) + ".",
            "Personas come from profile.yaml; episodes/ holds one episode per persona; files/ "
            "the task assets.", "IMPORT_REPORT.md lists what became of every source field.",
            "", "AppWorld tools named by tools.yaml (kept as a comment; the tools the tasks "
            "use come from benchpack's own app toolsets, see episodes/):"]
    for p in personas:
        if p.tool_names:
            head += textwrap.wrap(f"{p.user_id}: " + ", ".join(p.tool_names), 96,
                                  initial_indent="  ", subsequent_indent="    ",
                                  break_on_hyphens=False)
    pack = {"benchpack": 1, "name": name, "version": "0.1.0",
            "description": "π-Bench personas (imported): multi-session episodes with hidden "
                           "intents (PROC) and checklists (COMP), intent-tracking protocol.",
            "metadata": {"tags": ["pibench", "imported"]},
            "include": ["episodes/*.yaml"], "personas": specs, **app_world,
            "lint": {"ignore": list(LINT_IGNORED)}}
    if app_world:
        head += ["", "services/toolsets: the AppWorld apps the tasks use, as benchpack's own "
                 "stateful toolsets (tools/pibench/), under AppWorld's tool names; not AppWorld "
                 "(see IMPORT_REPORT.md). They run code: bench run … --allow-python."]
    head += ["", "lint.ignore: warnings about the released content itself, kept verbatim:"]
    head += [f"  {code}: {why}" for code, why in LINT_IGNORED.items()]
    return _comment(head) + dump(pack)


def _fate_counts() -> Counter[str]:
    return Counter(fate for _, fate, _ in FIELDS)


def _report_md(source: Path, personas: list[_Persona], report: _Report) -> str:
    c = report.counts
    fates = _fate_counts()
    out = ["# Import report: π-Bench", "",
           f"Source: `{source.name}/` ({len(personas)} persona(s): "
           + ", ".join(f"{p.user_id} {len(p.tasks)} tasks" for p in personas) + ").",
           f"Sessions {c['sessions']}, hidden intents {c['hidden intents']}, checklist items "
           f"{c['checklist items']}, dependencies {c['dependencies']}, assets {c['assets']}.",
           f"Fields: {fates['mapped']} mapped, {fates['mapped with loss']} mapped with loss, "
           f"{fates['kept as a comment']} kept as a comment (in the pack's YAML, not used), "
           f"{fates['dropped']} dropped.", "",
           "## Fields", "", "| field | fate | what became of it / why |", "|---|---|---|"]
    out += [f"| `{f}` | {fate} | {why} |" for f, fate, why in FIELDS]
    out += ["", "## Not imported by design", "",
            "- Scores: PROC needs the simulated user and intent judge, COMP the checklist judge; "
            "run the pack to get them. Of the grader scripts' binary checks, only those of "
            "the scripts described in GRADERS.md are scored (as rules, items `g…`).",
            "- π-Bench's 18 task categories (paper, Table 5) are not in the task files; "
            "`task_type` is the category here."]
    if report.apps:
        out += ["", "## App tasks and grader scripts", "",
                f"Grader checks mapped to rules: {report.counts['grader checks']}.", ""]
        for tid, said in sorted(report.apps.items()):
            out += [f"- `{tid}`: " + ("; ".join(said) if said else "its app tools are "
                                      "benchpack's toolsets; no grader script")]
    if report.unknown:
        out += ["", "## Fields not in the π-Bench v2 shape (dropped)", ""]
        out += [f"- `{k}` ({n}×)" for k, n in sorted(report.unknown.items())]
    if report.notes:
        out += ["", "## Gaps in the source", ""] + [f"- {x}" for x in report.notes]
    return "\n".join(out) + "\n"
