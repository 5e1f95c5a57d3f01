"""Semantic checks, linking, rendering and plan assembly.

Input: validated models with their origin (file, JSON path). Output: the plan as plain
JSON-ready dicts (shape: `benchpack.specs.plan.Plan`). Every problem becomes a diagnostic at the
place the author wrote the offending value.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import jmespath
from jmespath.exceptions import IncompleteExpressionError, LexerError, ParseError
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import ValidationError

from benchpack.specs import pack as P

from .datafiles import DataError, first_error, read_rows, read_triples
from .diagnostics import CODES, LINT_CODES, Diagnostics, Fix, PathPart, suggest_fix
from .graph import build_dag, dependency_groups, find_cycles, stable_order
from .literal import is_literal
from .loader import (
    GLOB_CHARS,
    MAX_DATA_BYTES,
    LoadedPack,
    SourceFile,
    inside,
    near_file,
    pack_relative,
    path_problem,
)
from .render import RenderError, check_syntax, render
from .validate import Salvage, node_at

Loc = tuple[SourceFile, tuple[PathPart, ...]]

DEFAULT_LIMITS: dict[str, dict[str, Any]] = {
    "intent_tracking": {"max_turns": 12, "max_steps_per_turn": 30, "turn_timeout_s": 600.0},
    "staged_disclosure": {"max_turns": 20, "max_steps_per_turn": 40, "turn_timeout_s": 900.0},
    "trigger_rubric": {"max_turns": 10, "max_steps_per_turn": 10, "turn_timeout_s": 300.0},
    "verified_outcome": {"max_turns": 6, "max_steps_per_turn": 60, "turn_timeout_s": 1200.0},
}
DEFAULT_ENV = "default"
_DURATION = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass
class CompileOptions:
    ablation: bool = False
    """Also emit the without-dependencies variant of every dependency group's final session."""
    strict: bool = False
    """Treat warnings as errors."""


@dataclass
class Built:
    plan: dict[str, Any]
    order: list[str]


@dataclass
class _Item:
    obj: Any
    src: SourceFile
    path: tuple[PathPart, ...]


@dataclass
class _SessionDraft:
    sid: str
    base: str
    episode: str
    index: int
    model: P.Session
    src: SourceFile
    path: tuple[PathPart, ...]
    style_code: str | None
    deps: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


def iso(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


class Builder:
    def __init__(self, loaded: LoadedPack, models: list[tuple[SourceFile, Any]],
                 diags: Diagnostics, options: CompileOptions,
                 salvaged: Salvage | None = None) -> None:
        self.loaded = loaded
        self.salvaged = salvaged or Salvage()
        # names of items that failed validation: references to them are not reported again
        self.broken: set[str] = self.salvaged.names
        self.diags = diags
        self.options = options
        self.pack: P.Pack = models[0][1]
        self.pack_src = models[0][0]
        self.models = models
        self.personas: dict[str, _Item] = {}
        self.tools: dict[str, _Item] = {}
        self.services: dict[str, _Item] = {}
        self.streams: dict[str, _Item] = {}
        self.corpora: dict[str, _Item] = {}
        self.environments: dict[str, _Item] = {}
        self.episodes: dict[str, _Item] = {}
        self.plan_tools: dict[str, dict[str, Any]] = {}
        self.tool_origin: dict[str, str] = {}
        self.plan_envs: dict[str, dict[str, Any]] = {}
        self.plan_personas: dict[str, dict[str, Any]] = {}
        self.plan_services: dict[str, dict[str, Any]] = {}
        self.plan_streams: dict[str, dict[str, Any]] = {}
        self.plan_corpora: dict[str, dict[str, Any]] = {}
        self.read_tools: set[str] = set()
        self._pack_paths: dict[str, str] = {}
        self.pack_ignore = self.lint_settings(self.pack.lint, (self.pack_src, ()))
        self.session_ignore: set[str] = set()
        """Lints silenced by the session being built (`session_body` sets it)."""

    # ------------------------------------------------------------------ helpers

    def err(self, code: str, msg: str, loc: Loc, sub: Sequence[PathPart] = (),
            hint: str | None = None, at_key: bool = False, fix: Fix | None = None) -> None:
        src, path = loc
        full = (*path, *sub)
        if not self.salvaged.hides(src.shown, full, CODES[code][0]):
            self.diags.error(code, msg, src.shown, full, hint, at_key=at_key, fix=fix)

    def lint(self, code: str, msg: str, loc: Loc, sub: Sequence[PathPart] = (),
             hint: str | None = None, ignore: Iterable[str] = (), fix: Fix | None = None) -> None:
        """A warning, unless the pack, the session being built, or `ignore` silences it."""
        if code in ignore or code in self.pack_ignore or code in self.session_ignore:
            return
        self.err(code, msg, loc, sub, hint, fix=fix)

    def lint_settings(self, settings: P.LintSettings | None, loc: Loc) -> set[str]:
        """The codes a `lint: {ignore: …}` block silences; unknown codes are errors (a typo
        there would silently silence nothing)."""
        if settings is None:
            return set()
        for i, code in enumerate(settings.ignore):
            if code not in LINT_CODES:
                hint, fix = suggest_fix(code, LINT_CODES)
                self.err("E104", f"`{code}` is not a lint code", loc, ("lint", "ignore", i),
                         hint or "lint codes are " + ", ".join(LINT_CODES), fix=fix)
        return set(settings.ignore)

    def pack_path(self, src: SourceFile) -> str:
        """A pack file's path relative to the pack root: what plans record, so that they do
        not depend on where the pack was compiled from."""
        if src.shown not in self._pack_paths:
            self._pack_paths[src.shown] = pack_relative(src.path, self.loaded.root)
        return self._pack_paths[src.shown]

    def read_data(self, rel: str, loc: Loc, sub: Sequence[PathPart]) -> bytes | None:
        src = loc[0]
        problem = path_problem(rel)
        if problem:
            self.err("E104", problem, loc, sub)
            return None
        path = (src.path.parent / rel)
        if not inside(self.loaded.root, path):
            self.err("E010", f"`{rel}` is outside the pack directory", loc, sub,
                     "keep every pack file under the folder of pack.yaml")
            return None
        real = path.resolve()
        if real in self.loaded.data_files:
            return self.loaded.data_files[real]
        try:
            if real.is_dir():
                self.err("E012", f"`{rel}` is a directory, not a file", loc, sub)
                return None
            size = real.stat().st_size
            if size > MAX_DATA_BYTES:
                self.err("E005", f"`{rel}` is {size / 2**20:.1f} MiB; the limit is "
                         f"{MAX_DATA_BYTES // 2**20} MiB", loc, sub, "keep fixture data small")
                return None
            data = real.read_bytes()
        except FileNotFoundError:
            hint, fix = near_file(path, rel)
            if fix is not None and node_at(src.data, (*loc[1], *sub)) != rel:
                fix = None  # the path is part of the value (`tools/x.py:function`)
            self.err("E006", f"file `{rel}` not found", loc, sub, hint, fix=fix)
            return None
        except OSError as exc:
            self.err("E012", f"cannot read `{rel}`: {exc.strerror or exc}", loc, sub)
            return None
        self.loaded.data_files[real] = data
        return data

    def read_text(self, rel: str, loc: Loc, sub: Sequence[PathPart]) -> str | None:
        data = self.read_data(rel, loc, sub)
        if data is None:
            return None
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError:
            self.err("E003", f"`{rel}` is not UTF-8 text", loc, sub)
            return None

    def collect(self, table: dict[str, _Item], key: str, obj: Any, src: SourceFile,
                path: tuple[PathPart, ...], what: str) -> None:
        if key in table:
            first = table[key]
            self.err("E201", f"{what} `{key}` is defined twice (first in {first.src.shown})",
                     (src, path), ("id" if hasattr(obj, "id") else "name",),
                     "ids must be unique across the pack")
            return
        table[key] = _Item(obj, src, path)

    def lost_tool(self, name: str) -> bool:
        """Whether tool `name` may be missing only because validation dropped it, its service
        or its operation (`service__operation`): the drop is reported, the missing tool not."""
        return name in self.broken or any(p in self.broken for p in name.split("__", 1))

    def check_ref(self, name: str, table: dict[str, Any], what: str, loc: Loc,
                  sub: Sequence[PathPart]) -> bool:
        if name in table:
            return True
        if name in self.broken:
            return False
        known = [*table, *self.broken]
        hint, fix = suggest_fix(name, known)
        self.err("E202", f"unknown {what} `{name}`", loc, sub,
                 hint or (f"define it under `{what.split()[-1]}s:`" if not known else None),
                 fix=fix)
        return False

    # ------------------------------------------------------------------ phase 1: symbols

    def symbols(self) -> None:
        for src, model in self.models:
            for i, x in enumerate(model.personas):
                self.collect(self.personas, x.id, x, src, ("personas", i), "persona")
            for i, x in enumerate(model.tools):
                self.collect(self.tools, x.name, x, src, ("tools", i), "tool")
            for i, x in enumerate(model.services):
                self.collect(self.services, x.name, x, src, ("services", i), "service")
            for i, x in enumerate(model.event_streams):
                self.collect(self.streams, x.name, x, src, ("event_streams", i), "event stream")
            for i, x in enumerate(model.corpora):
                self.collect(self.corpora, x.name, x, src, ("corpora", i), "corpus")
            for i, x in enumerate(model.environments):
                self.collect(self.environments, x.id, x, src, ("environments", i), "environment")
            for i, x in enumerate(model.episodes):
                self.collect(self.episodes, x.id, x, src, ("episodes", i), "episode")

    # ------------------------------------------------------------------ phase 2: world

    def check_schema(self, schema: Any, loc: Loc, sub: Sequence[PathPart], what: str) -> None:
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            inner = tuple(p for p in exc.path if isinstance(p, str | int))
            hint: str | None = "see https://json-schema.org/understanding-json-schema/"
            fix = None
            if inner and inner[-1] == "type" and isinstance(exc.instance, str):
                found, fix = suggest_fix(exc.instance, _JSON_TYPES)
                hint = found or "types are " + ", ".join(f"`{t}`" for t in _JSON_TYPES)
            where = "/".join(str(p) for p in inner) or "top level"
            self.err("E207", f"{what} is not a valid JSON Schema ({where}: {exc.message})",
                     loc, (*sub, *inner), hint, fix=fix)
            return
        for path, key in _unknown_keywords(schema):
            hint, fix = suggest_fix(key, JSON_SCHEMA_KEYWORDS, "rename_key",
                                    node_at(schema, path[:-1]) or ())
            if hint is None and " " in key:
                hint = "a description containing `, ` must be quoted"
            self.lint("W314", f"`{key}` is not a JSON Schema keyword in {what}", loc,
                      (*sub, *path), hint, fix=fix)

    def add_tool(self, name: str, tool: dict[str, Any], origin: str, loc: Loc,
                 sub: Sequence[PathPart]) -> None:
        if name in P.BUILTIN_TOOLS:
            self.err("E214", f"tool name `{name}` clashes with a built-in tool", loc, sub,
                     "rename it")
            return
        if name in self.plan_tools:
            self.err("E214", f"tool name `{name}` is already used by {self.tool_origin[name]}",
                     loc, sub, "rename one of them (service tools are `<service>__<operation>`)")
            return
        self.plan_tools[name] = tool
        self.tool_origin[name] = origin
        if tool["effect"] == "read":
            self.read_tools.add(name)

    def world(self) -> None:
        for b in P.BUILTIN_TOOLS:
            self.read_tools.add(b) if b in ("read_file", "list_files", "glob", "grep") else None
        for name, it in self.services.items():
            self.service(name, it)
        for name, it in self.streams.items():
            self.stream(name, it)
        for name, it in self.corpora.items():
            self.corpus(name, it)
        for name, it in self.tools.items():
            t: P.Tool = it.obj
            loc = (it.src, it.path)
            self.check_schema(t.parameters, loc, ("parameters",), "`parameters`")
            if t.parameters.get("type", "object") != "object":
                self.err("E207", "tool parameters must be an object schema", loc, ("parameters",),
                         "use `type: object` with `properties:`")
            impl = t.impl
            if isinstance(impl, P.ServiceImpl) and self.check_ref(
                    impl.service, self.services, "service", loc, ("impl", "service")):
                ops = [o.name for o in self.services[impl.service].obj.operations]
                if impl.operation not in ops:
                    hint, fix = suggest_fix(impl.operation, ops)
                    self.err("E202", f"service `{impl.service}` has no operation `{impl.operation}`",
                             loc, ("impl", "operation"), hint, fix=fix)
            elif isinstance(impl, P.CorpusImpl):
                self.check_ref(impl.corpus, self.corpora, "corpus", loc, ("impl", "corpus"))
            elif isinstance(impl, P.StreamImpl):
                self.check_ref(impl.stream, self.streams, "event stream", loc, ("impl", "stream"))
            source = None
            if isinstance(impl, P.PythonImpl):
                # embedded so the runtime never reads pack files; it runs only with
                # --allow-python, in a sandboxed subprocess
                source = self.read_text(impl.entry.split(":")[0], loc, ("impl", "entry"))
            tool = {
                "name": t.name, "description": t.description, "parameters": t.parameters,
                "impl": impl.model_dump(mode="json", exclude_none=True), "group": t.group,
                "effect": t.effect,
            }
            if source is not None:
                tool["python_source"] = source
            self.add_tool(name, tool, f"the tool in {it.src.shown}", loc, ("name",))
        for name, it in self.environments.items():
            self.environment(name, it)
        if DEFAULT_ENV not in self.plan_envs:
            self.plan_envs[DEFAULT_ENV] = {
                "id": DEFAULT_ENV, "description": "empty workspace with the built-in tools",
                "clock": None, "files": [], "tools": list(P.BUILTIN_TOOLS), "services": [],
                "event_streams": [], "heartbeat": None,
            }
        for name, it in self.personas.items():
            self.persona(name, it)

    def service(self, name: str, it: _Item) -> None:
        s: P.Service = it.obj
        loc = (it.src, it.path)
        tables: dict[str, Any] = {}
        for tname, table in s.tables.items():
            rows = [dict(r) for r in table.rows]
            if table.fixture:
                rows.extend(self.fixture_rows(table.fixture, loc, ("tables", tname, "fixture")))
            if table.row_schema is not None:
                self.check_schema(table.row_schema, loc, ("tables", tname, "row_schema"),
                                  "`row_schema`")
            keys = [r.get(table.key) for r in rows]
            dup = sorted({str(k) for k in keys if k is not None and keys.count(k) > 1})
            if dup:
                self.err("E201", f"table `{tname}` has duplicate `{table.key}` values: "
                         + ", ".join(dup[:5]), loc, ("tables", tname))
            tables[tname] = {"key": table.key, "id_prefix": table.id_prefix,
                             "row_schema": table.row_schema, "rows": rows}
        ops = []
        seen_ops: set[str] = set()
        for i, op in enumerate(s.operations):
            sub = ("operations", i)
            if op.name in seen_ops:
                self.err("E201", f"operation `{op.name}` is defined twice", loc, (*sub, "name"))
                continue
            seen_ops.add(op.name)
            if op.table not in s.tables:
                hint, fix = suggest_fix(op.table, s.tables)
                self.err("E202", f"service `{name}` has no table `{op.table}`", loc, (*sub, "table"),
                         hint, fix=fix)
                continue
            ops.append(op.model_dump(mode="json", exclude_none=True))
            tool_name = op.tool_name or f"{name}__{op.name}"
            table = s.tables[op.table]
            self.add_tool(tool_name, {
                "name": tool_name,
                "description": op.description or _op_description(op, name),
                "parameters": _op_parameters(op, table),
                "impl": {"kind": "service", "service": name, "operation": op.name},
                "group": s.group,
                "effect": "read" if op.kind in ("list", "get", "search") else "write",
            }, f"service `{name}`", loc, (*sub, "name"))
        self.plan_services[name] = {"name": name, "description": s.description, "tables": tables,
                                    "operations": ops, "group": s.group}

    def fixture_rows(self, rel: str, loc: Loc, sub: Sequence[PathPart]) -> list[dict[str, Any]]:
        text = self.read_text(rel, loc, sub)
        if text is None:
            return []
        try:
            return read_rows(rel, text)
        except DataError as exc:
            self.err("E013", f"`{rel}`: {exc}", loc, sub,
                     exc.hint or "a JSON list of objects, JSON Lines, or CSV with a header line")
            return []

    def file_items(self, rel: str, model: type[P.Event] | type[P.Document], loc: Loc,
                   sub: Sequence[PathPart]) -> list[dict[str, Any]]:
        """Events or documents from a data file, each validated like an inline one."""
        out = []
        for i, row in enumerate(self.fixture_rows(rel, loc, sub), start=1):
            try:
                out.append(model.model_validate(row).model_dump(mode="json"))
            except ValidationError as exc:
                self.err("E013", f"`{rel}` {model.__name__.lower()} {i}: {first_error(exc)}",
                         loc, sub)
                break
        return out

    def stream(self, name: str, it: _Item) -> None:
        st: P.EventStream = it.obj
        loc = (it.src, it.path)
        events = [e.model_dump(mode="json") for e in st.events]
        if st.file:
            events.extend(self.file_items(st.file, P.Event, loc, ("file",)))
        for e in events:
            e["at"] = iso(e["at"])
        events.sort(key=lambda e: e["at"])
        refs = {e["ref"] for e in events if e.get("ref")}
        keys = {str(r.get(t.key)) for svc in self.services.values()
                for t in svc.obj.tables.values() for r in t.rows}
        keys |= {str(r.get(t["key"])) for svc in self.plan_services.values()
                 for t in svc["tables"].values() for r in t["rows"]}
        for i, e in enumerate(events):
            target = e.get("conflicts_with")
            if target and target not in refs and target not in keys:
                hint, fix = suggest_fix(target, sorted(refs | keys))
                in_yaml = i < len(st.events)  # later events come from the stream's data file
                self.lint("W315", f"`conflicts_with: {target}` names no event ref in this stream "
                          "and no row of a service", loc,
                          ("events", i, "conflicts_with") if in_yaml else ("file",), hint,
                          fix=fix if in_yaml else None)
        self.plan_streams[name] = {"name": name, "description": st.description, "events": events}
        if st.tool:
            self.add_tool(f"{name}__read", {
                "name": f"{name}__read",
                "description": (st.description or f"The {name} activity log.")
                + " Returns events, oldest first; filter by time window, source or text.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "since": {"type": "string", "description": "ISO time, inclusive"},
                        "until": {"type": "string", "description": "ISO time, exclusive"},
                        "source": {"type": "string", "description": "only this service/device"},
                        "query": {"type": "string", "description": "text to look for"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 500},
                    },
                },
                "impl": {"kind": "stream", "stream": name},
                "group": None,
                "effect": "read",
            }, f"event stream `{name}`", loc, ("name",))

    def corpus(self, name: str, it: _Item) -> None:
        c: P.Corpus = it.obj
        loc = (it.src, it.path)
        docs = [d.model_dump(mode="json") for d in c.documents]
        if c.file:
            docs.extend(self.file_items(c.file, P.Document, loc, ("file",)))
        for d in docs:
            d["published"] = iso(d.get("published"))
        self.plan_corpora[name] = {"name": name, "description": c.description, "documents": docs}

    def workspace_file(self, f: P.WorkspaceFile, loc: Loc, sub: Sequence[PathPart],
                       ctx: dict[str, Any] | None) -> dict[str, Any] | None:
        if f.source is not None:
            data = self.read_data(f.source, loc, (*sub, "source"))
            if data is None:
                return None
            try:
                content, enc = data.decode("utf-8"), "utf-8"
            except UnicodeDecodeError:
                content, enc = base64.b64encode(data).decode("ascii"), "base64"
        else:
            content = f.content or ""
            if ctx is not None:
                content = self.render(content, ctx, loc, (*sub, "content"))
            enc = "utf-8"
            data = content.encode("utf-8")
        return {"path": f.path, "encoding": enc, "content": content,
                "sha256": hashlib.sha256(data).hexdigest()}

    def environment(self, name: str, it: _Item) -> None:
        env: P.Environment = it.obj
        loc = (it.src, it.path)
        tools: list[str] = list(env.builtin_tools if env.builtin_tools is not None
                                else P.BUILTIN_TOOLS)
        for i, t in enumerate(env.tools):
            if self.check_ref(t, self.tools, "tool", loc, ("tools", i)):
                tools.append(t)
        services = []
        for i, s in enumerate(env.services):
            if self.check_ref(s, self.services, "service", loc, ("services", i)):
                services.append(s)
                tools.extend(t for t, o in self.tool_origin.items() if o == f"service `{s}`")
        streams = []
        for i, s in enumerate(env.event_streams):
            if self.check_ref(s, self.streams, "event stream", loc, ("event_streams", i)):
                streams.append(s)
                if f"{s}__read" in self.plan_tools:
                    tools.append(f"{s}__read")
        files = []
        seen: set[str] = set()
        for i, f in enumerate(env.files):
            if f.path in seen:
                self.err("E201", f"workspace file `{f.path}` is listed twice", loc, ("files", i))
                continue
            seen.add(f.path)
            pf = self.workspace_file(f, loc, ("files", i), {"vars": self.pack.vars})
            if pf:
                files.append(pf)
        hb = None
        if env.heartbeat:
            h = env.heartbeat
            hb = {"every_s": int(h.every[:-1]) * _DURATION[h.every[-1]], "start": iso(h.start),
                  "beats": h.beats, "message": h.message}
        self.plan_envs[name] = {
            "id": name, "description": env.description, "clock": iso(env.clock),
            "files": files, "tools": list(dict.fromkeys(tools)), "services": services,
            "event_streams": streams, "heartbeat": hb,
        }

    def persona(self, name: str, it: _Item) -> None:
        p: P.Persona = it.obj
        style = None
        if p.style is not None:
            st = p.style if isinstance(p.style, P.CommunicationStyle) else P.CommunicationStyle(code=p.style)
            style = self.style(st, (it.src, it.path), ("style",))
        loc = (it.src, it.path)
        ctx = {"vars": self.pack.vars, "persona": {"id": p.id, "name": p.name, "facts": p.facts}}
        profile = p.profile.model_dump(mode="json")
        for key, value in profile.items():
            if isinstance(value, str):
                profile[key] = self.render(value, ctx, loc, ("profile", key))
            elif isinstance(value, list):
                profile[key] = [self.render(v, ctx, loc, ("profile", key, i))
                                for i, v in enumerate(value)]
        self.plan_personas[name] = {
            "id": p.id, "name": p.name, "profile": profile,
            "style": style, "facts": p.facts,
        }

    def style(self, st: P.CommunicationStyle, loc: Loc,
              sub: Sequence[PathPart]) -> dict[str, Any] | None:
        letters = [c for c in re.split(r"\++", st.code) if c and c != "NONE"]
        if len(set(letters)) != len(letters):
            self.err("E215", f"style `{st.code}` repeats a trait", loc, sub,
                     "each of E P V Q M I at most once")
            return None
        code = P.normalise_style(st.code)
        if code not in P.COHERENT_STYLES:
            self.lint("W311", f"style `{code}` combines conflicting registers", loc, sub,
                      "preciseness (P) reads unnaturally with E, V or M; see the 24 coherent "
                      "styles in the README")
        chatty = "E" in letters
        lo, hi = (40, 100) if chatty else (5, 25)
        lo = st.min_words or lo
        hi = st.max_words or hi
        if lo > hi:
            self.err("E104", f"min_words ({lo}) is above max_words ({hi})", loc, sub)
        return {
            "code": code,
            "traits": {n: (letter in letters) for letter, n in P.STYLE_TRAITS.items()},
            "length": "chatty" if chatty else "terse",
            "min_words": lo, "max_words": hi, "directives": list(st.directives),
        }

    # ------------------------------------------------------------------ rendering

    def render(self, text: str, ctx: dict[str, Any], loc: Loc, sub: Sequence[PathPart]) -> str:
        src, path = loc
        if src.literal or (src.literal_paths and is_literal(src.literal_paths, (*path, *sub))):
            return text
        try:
            return render(text, ctx)
        except RenderError as exc:
            self.err(exc.code, exc.message, loc, sub, exc.hint)
            return text

    # ------------------------------------------------------------------ phase 3: sessions

    def sessions(self) -> tuple[list[_SessionDraft], dict[str, Any]]:
        drafts: list[_SessionDraft] = []
        episodes_out: dict[str, Any] = {}
        pack_name = self.pack.name
        for ep_id, it in self.episodes.items():
            ep: P.Episode = it.obj
            eloc = (it.src, it.path)
            persona_ok = self.check_ref(ep.persona, self.personas, "persona", eloc, ("persona",))
            env_id = ep.environment or DEFAULT_ENV
            if ep.environment is not None and not self.check_ref(
                    ep.environment, self.environments, "environment", eloc, ("environment",)):
                env_id = DEFAULT_ENV
            names: dict[str, int] = {}
            for si, s in enumerate(ep.sessions):
                if s.id in names:
                    self.err("E201", f"session `{s.id}` appears twice in episode `{ep_id}`",
                             (it.src, (*it.path, "sessions", si)), ("id",))
                    continue
                names[s.id] = si
            ep_sessions: list[str] = []
            for si, s in enumerate(ep.sessions):
                if names.get(s.id) != si:
                    continue
                loc = (it.src, (*it.path, "sessions", si))
                styles = self.session_styles(s, ep, loc)
                for code in styles:
                    base = f"session.{pack_name}.{ep_id}.{s.id}"
                    sid = base if code is None else f"{base}@{code}"
                    d = _SessionDraft(sid=sid, base=base, episode=ep_id, index=si, model=s,
                                      src=it.src, path=loc[1], style_code=code)
                    drafts.append(d)
                    if code is None or code == styles[0]:
                        ep_sessions.append(sid)
            episodes_out[ep_id] = {
                "id": ep_id, "title": ep.title, "persona": ep.persona, "environment": env_id,
                "memory": ep.memory, "sessions": ep_sessions,
            }
            if not persona_ok:
                continue
        by_base: dict[str, list[_SessionDraft]] = {}
        for d in drafts:
            by_base.setdefault(d.base, []).append(d)
        for d in drafts:
            self.resolve_deps(d, by_base)
        for d in drafts:
            self.session_body(d, episodes_out[d.episode])
        return drafts, episodes_out

    def session_styles(self, s: P.Session, ep: P.Episode, loc: Loc) -> list[str | None]:
        if s.styles is None:
            return [None]
        if s.styles in ("all", "coherent"):
            return list(P.COHERENT_STYLES)
        out: list[str | None] = []
        for i, code in enumerate(s.styles):
            norm = P.normalise_style(code)
            if norm in out:
                self.err("E215", f"style `{code}` is listed twice", loc, ("styles", i))
                continue
            out.append(norm)
        if not out:
            self.err("E215", "`styles` is empty", loc, ("styles",), "list at least one style")
            return [None]
        return out

    def resolve_deps(self, d: _SessionDraft, by_base: dict[str, list[_SessionDraft]]) -> None:
        loc = (d.src, d.path)
        ep_prefix = f"session.{self.pack.name}.{d.episode}."
        for i, dep in enumerate(d.model.depends_on):
            if dep == d.model.id:
                self.err("E203", f"session `{dep}` depends on itself", loc, ("depends_on", i))
                continue
            targets = by_base.get(ep_prefix + dep)
            if not targets and dep in self.broken:
                continue
            if not targets:
                ep_names = {b.removeprefix(ep_prefix) for b in by_base if b.startswith(ep_prefix)}
                other = [b for b in by_base if b.endswith("." + dep)]
                hint, fix = suggest_fix(dep, sorted(ep_names))
                if other and not hint:
                    hint = "dependencies must be in the same episode"
                self.err("E202", f"unknown session `{dep}` in episode `{d.episode}`", loc,
                         ("depends_on", i), hint, fix=fix)
                continue
            if len(targets) == 1 and targets[0].style_code is None:
                d.deps.append(targets[0].sid)
                continue
            match = [t for t in targets if t.style_code == d.style_code]
            if match:
                d.deps.append(match[0].sid)
            else:
                styles = ", ".join(t.style_code or "NONE" for t in targets)
                self.err("E213", f"`{dep}` is expanded over styles, so `{d.model.id}` must be "
                         "expanded over the same styles to depend on it", loc, ("depends_on", i),
                         f"add `styles: [{styles}]` to `{d.model.id}`")

    def session_body(self, d: _SessionDraft, episode: dict[str, Any]) -> None:
        s = d.model
        loc = (d.src, d.path)
        ep_item = self.episodes[d.episode]
        ep: P.Episode = ep_item.obj
        ignore = self.pack_ignore | self.lint_settings(s.lint, loc)
        self.session_ignore = ignore
        try:
            self._session_body(d, episode, ep, loc, ignore)
        finally:
            self.session_ignore = set()

    def _session_body(self, d: _SessionDraft, episode: dict[str, Any], ep: P.Episode, loc: Loc,
                      ignore: set[str]) -> None:
        s = d.model
        persona = self.plan_personas.get(ep.persona)
        style = persona.get("style") if persona else None
        if d.style_code is not None:
            style = self.style(P.CommunicationStyle(code=d.style_code), loc, ("styles",))
        ctx = {
            "vars": self.pack.vars,
            "persona": persona or {},
            "episode": {"id": ep.id, "title": ep.title},
            "session": {"id": s.id, "title": s.title},
            "style": style or {"code": "NONE", "length": "terse"},
        }

        def r(text: str | None, *sub: PathPart) -> str | None:
            return None if text is None else self.render(text, ctx, loc, sub)

        meta: dict[str, Any] = {"category": None, "domain": None, "difficulty": None,
                                "language": None, "tags": []}
        for m in (self.pack.metadata, ep.metadata, s.metadata):
            if m is None:
                continue
            for k, v in m.model_dump().items():
                if k == "tags":
                    meta["tags"] = sorted(set(meta["tags"]) | set(v))
                elif v is not None:
                    meta[k] = v
        if meta["language"] is None and persona:
            meta["language"] = persona["profile"].get("language")

        env = self.plan_envs.get(episode["environment"]) or self.plan_envs[DEFAULT_ENV]
        tools = list(env["tools"])
        for i, t in enumerate(s.tools):
            if self.check_ref(t, self.tools, "tool", loc, ("tools", i)) and t not in tools:
                tools.append(t)
        files = []
        for i, f in enumerate(s.files):
            pf = self.workspace_file(f, loc, ("files", i), ctx)
            if pf:
                files.append(pf)

        limits: dict[str, Any] = dict(DEFAULT_LIMITS[s.protocol])
        for lim in (self.pack.defaults.limits, s.limits):
            if lim is not None:
                limits.update({k: v for k, v in lim.model_dump().items() if v is not None})

        trigger = s.trigger.model_dump(mode="json")
        request = r(s.request, "request")
        if s.protocol == "staged_disclosure" and s.stages and s.stages[0].when.kind == "start":
            if request is not None:
                self.err("E204", "the opening is given twice: as `request` and as a `start` stage",
                         loc, ("stages", 0, "when", "kind"), "keep one of them")
            else:
                request = r(s.stages[0].line, "stages", 0, "line")
        if request is None and s.trigger.kind == "user_message" and not s.dialogue:
            self.err("E212", f"session `{s.id}` starts with a user message but has no `request`",
                     loc, ("request",), "add `request: …` (the user's opening message)")
        if request is None and s.trigger.kind != "user_message":
            payload = s.trigger.payload or {}
            request = json.dumps(payload, ensure_ascii=False, sort_keys=True) if payload else None

        self.protocol_material(s, loc)
        intents = self.intents(s, loc, r)
        stages = self.stages(s, loc, r)
        scenario, anchors = self.scenario(s, r)
        triggers = self.triggers(s, loc, r, anchors)
        dialogue = self.dialogue(s, loc, r, anchors)
        for j, a in enumerate(s.request_discloses if s.protocol == "trigger_rubric" else []):
            self.check_ref(a, anchors, "anchor", loc, ("request_discloses", j))
        if s.request_discloses and s.request is None:
            self.err("E212", "`request_discloses` names anchors of the opening request, but the "
                     "session has no `request`", loc, ("request_discloses",),
                     "add `request: …` or remove `request_discloses`", at_key=True)
        checklist = self.checklist(s, loc, r, tools, env)
        graph = self.graph(s, loc)
        verify = self.verify(s, loc, tools, env)
        carry = s.carry_over if s.carry_over is not None else ep.memory == "carry_over"
        d.data = {
            "id": d.sid, "name": s.id, "episode": d.episode, "index": d.index,
            "title": s.title, "description": s.description, "source_file": self.pack_path(d.src),
            "metadata": meta, "protocol": s.protocol, "persona": ep.persona,
            "environment": env["id"], "style": style, "trigger": trigger, "request": request,
            "depends_on": list(dict.fromkeys(d.deps)), "prior_sessions": [],
            "carry_over": carry, "group": None,
            "variant": {"style": d.style_code, "ablation": None, "base": None},
            "limits": limits, "files": files, "tools": tools, "hidden_intents": intents,
            "stages": stages, "scenario": scenario, "triggers": triggers, "dialogue": dialogue,
            "checklist": checklist, "graph": graph, "verify": verify,
            "reference_solution": r(s.reference_solution, "reference_solution"),
            "fingerprint": "",
            "_ignore": sorted(ignore),
        }
        if s.request_discloses:  # left out when empty: older plans stay byte for byte
            d.data["request_discloses"] = list(s.request_discloses)

    def protocol_material(self, s: P.Session, loc: Loc) -> None:
        owners = {
            "hidden_intents": "intent_tracking", "stages": "staged_disclosure",
            "scenario": "trigger_rubric", "triggers": "trigger_rubric", "graph": "staged_disclosure",
            "request_discloses": "trigger_rubric",
            "verify": "verified_outcome",
        }
        for key, proto in owners.items():
            value = getattr(s, key)
            if value and s.protocol != proto:
                self.err("E204", f"`{key}` belongs to the {proto} protocol, but this session is "
                         f"{s.protocol}", loc, (key,), f"remove it or set `protocol: {proto}`",
                         at_key=True)

    def intents(self, s: P.Session, loc: Loc, r: Any) -> list[dict[str, Any]]:
        out = []
        seen: set[str] = set()
        for i, x in enumerate(s.hidden_intents):
            iid = x.id or f"i{i + 1}"
            if iid in seen:
                self.err("E201", f"intent id `{iid}` is used twice", loc, ("hidden_intents", i, "id"))
            seen.add(iid)
            out.append({"id": iid, "text": r(x.text, "hidden_intents", i, "text"),
                        "scope": x.scope, "reveal": r(x.reveal, "hidden_intents", i, "reveal"),
                        "evidence": list(x.evidence)})
        return out

    def stages(self, s: P.Session, loc: Loc, r: Any) -> list[dict[str, Any]]:
        out = []
        for i, st in enumerate(s.stages):
            sub = ("stages", i)
            if st.when.kind == "start" and i > 0:
                self.err("E204", "only the first stage can be triggered by `start`", loc,
                         (*sub, "when", "kind"), "use mentions, asks or milestone")
            if st.when.kind != "start" and not (st.when.about or "").strip():
                self.err("E102", f"a `{st.when.kind}` trigger needs `about` (what to look for)",
                         loc, (*sub, "when"), "add `about: …`")
            if st.when.kind == "start" and i == 0:
                continue  # its line is the opening request
            out.append({"id": st.id or f"st{i + 1}", "title": st.title, "kind": st.when.kind,
                        "about": r(st.when.about, *sub, "when", "about"),
                        "line": r(st.line, *sub, "line"),
                        "otherwise": r(st.otherwise, *sub, "otherwise")})
        ids = [x["id"] for x in out]
        for i, sid in enumerate(ids):
            if ids.count(sid) > 1:
                self.err("E201", f"stage id `{sid}` is used twice", loc, ("stages", i, "id"))
                break
        return out

    def scenario(self, s: P.Session, r: Any) -> tuple[dict[str, Any] | None, dict[str, bool]]:
        if s.scenario is None:
            return None, {}
        sc = s.scenario
        anchors = []
        for i, a in enumerate(sc.anchors):
            anchors.append({"id": a.id, "text": r(a.text, "scenario", "anchors", i, "text"),
                            "primary": a.primary})
        return ({"hidden_goal": r(sc.hidden_goal, "scenario", "hidden_goal"),
                 "anchors": anchors,
                 "proactive_subtasks": [r(t, "scenario", "proactive_subtasks", i)
                                        for i, t in enumerate(sc.proactive_subtasks)]},
                {a.id: a.primary for a in sc.anchors})

    def triggers(self, s: P.Session, loc: Loc, r: Any, anchors: dict[str, bool]) -> list[dict[str, Any]]:
        out = []
        seen: set[str] = set()
        for i, t in enumerate(s.triggers):
            sub = ("triggers", i)
            tid = t.id or f"t{t.turn}"
            if tid in seen:
                self.err("E201", f"two trigger points share id `{tid}`", loc, (*sub, "turn"),
                         "one trigger per turn, or give explicit ids")
            seen.add(tid)
            for j, a in enumerate(t.anchors):
                self.check_ref(a, anchors, "anchor", loc, (*sub, "anchors", j))
            out.append({"id": tid, "type": t.type, "turn": t.turn, "anchors": list(t.anchors),
                        "rubric": {"pass": r(t.rubric.pass_, *sub, "rubric", "pass"),
                                   "partial": r(t.rubric.partial, *sub, "rubric", "partial"),
                                   "fail": r(t.rubric.fail, *sub, "rubric", "fail")}})
        return sorted(out, key=lambda t: t["turn"])

    def dialogue(self, s: P.Session, loc: Loc, r: Any, anchors: dict[str, bool]) -> list[dict[str, Any]]:
        out = []
        for i, t in enumerate(s.dialogue):
            sub = ("dialogue", i)
            if t.turn != i + 1:
                self.err("E216", f"dialogue turns must be numbered 1, 2, 3…; found {t.turn} at "
                         f"position {i + 1}", loc, (*sub, "turn"))
            for j, a in enumerate(t.discloses):
                self.check_ref(a, anchors, "anchor", loc, (*sub, "discloses", j))
            out.append({"turn": t.turn, "user": r(t.user, *sub, "user"),
                        "assistant": r(t.assistant, *sub, "assistant"),
                        "discloses": list(t.discloses)})
        if out:
            for i, tp in enumerate(s.triggers):
                if tp.turn > len(out):
                    self.err("E216", f"trigger at turn {tp.turn} but the authored dialogue has "
                             f"{len(out)} turns", loc, ("triggers", i, "turn"))
        return out

    # ------------------------------------------------------------------ graders

    def check_assertion(self, a: P.Assertion, loc: Loc, sub: tuple[PathPart, ...],
                        tools: list[str], env: dict[str, Any]) -> None:
        given = a.model_fields_set
        combinators = [k for k in ("all", "any", "not_") if k in given]
        sources = [k for k in ("tool", "sequence", "state", "file", "messages", "reply") if k in given]
        preds = [k for k in ("exists", "count", "equals", "contains", "contains_any",
                             "not_contains", "regex", "json_schema", "grounded") if k in given]
        if combinators:
            if len(combinators) > 1 or sources or preds:
                self.err("E211", "a combinator (`all`, `any`, `not`) must stand alone in its "
                         "check", loc, sub, "nest the other keys in a sub-check")
            for k in combinators:
                subs = getattr(a, k)
                key = "not" if k == "not_" else k
                if isinstance(subs, list):
                    if not subs:
                        self.err("E211", f"`{key}` needs at least one check", loc, (*sub, key))
                    for i, x in enumerate(subs):
                        self.check_assertion(x, loc, (*sub, key, i), tools, env)
                elif subs is not None:
                    self.check_assertion(subs, loc, (*sub, key), tools, env)
            return
        if len(sources) != 1:
            self.err("E211", "a check needs exactly one source: tool, sequence, state, file, "
                     "messages or reply" + (f" (found {', '.join(sources)})" if sources else ""),
                     loc, sub)
            return
        if len(preds) > 1:
            self.err("E211", f"a check states one predicate; found {', '.join(preds)}", loc, sub,
                     "split it with `all:`")
        if a.tool is not None and not any(fnmatch.fnmatchcase(t, a.tool) for t in tools) \
                and not self.lost_tool(a.tool):
            hint, fix = _tool_suggestion(a.tool, tools)
            self.err("E202", f"no tool `{a.tool}` in this session", loc, (*sub, "tool"), hint,
                     fix=fix)
        elif a.tool is not None and a.where:
            self.check_where_args(a.tool, a.where, tools, loc, sub)
        for i, t in enumerate(a.sequence or []):
            if not any(fnmatch.fnmatchcase(x, t) for x in tools) and not self.lost_tool(t):
                hint, fix = _tool_suggestion(t, tools)
                self.err("E202", f"no tool `{t}` in this session", loc, (*sub, "sequence", i),
                         hint, fix=fix)
        if a.sequence is not None and len(a.sequence) < 2:
            self.err("E211", "`sequence` needs at least two tools", loc, (*sub, "sequence"))
        if a.state is not None:
            self.check_state_ref(a.state, env, loc, (*sub, "state"))
        for pkey in ("regex", "grounded"):
            pattern = getattr(a, pkey)
            if pattern is not None:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    self.err("E205", f"invalid regular expression: {exc}", loc, (*sub, pkey),
                             regex_hint(str(exc)))
        for path, m in (a.where or {}).items():
            if isinstance(m, P.Matcher):
                ops = [k for k in m.model_fields_set]
                if len(ops) != 1:
                    self.err("E211", f"`where.{path}` needs exactly one operator", loc,
                             (*sub, "where", path), "equals, contains, regex, one_of, gt or lt")
                if m.regex is not None:
                    try:
                        re.compile(m.regex)
                    except re.error as exc:
                        self.err("E205", f"invalid regular expression: {exc}", loc,
                                 (*sub, "where", path, "regex"), regex_hint(str(exc)))
        if a.query is not None:
            problem = jmespath_problem(a.query)
            if problem:
                self.err("E206", f"invalid JMESPath query: {problem}", loc, (*sub, "query"),
                         "see https://jmespath.org/tutorial.html")
        if a.json_schema is not None:
            self.check_schema(a.json_schema, loc, (*sub, "json_schema"), "`json_schema`")

    def check_where_args(self, pattern: str, where: dict[str, Any], tools: list[str], loc: Loc,
                         sub: tuple[PathPart, ...]) -> None:
        """`where: {args.<name>: …}` must name a parameter of the matched tool(s)."""
        matched = [t for t in tools if fnmatch.fnmatchcase(t, pattern)]
        if not matched:
            return  # the missing tool is the mistake (reported, or a consequence of a drop)
        params: set[str] = set()
        for t in matched:
            spec = self.plan_tools.get(t) or _BUILTIN_PARAMS.get(t)
            schema = spec["parameters"] if spec and "parameters" in spec else spec
            if not isinstance(schema, dict) or schema.get("additionalProperties") is True:
                return
            props = schema.get("properties")
            if not isinstance(props, dict):
                return
            params |= set(props)
        for key in where:
            head, _, rest = key.partition(".")
            if head == "args" and rest:
                name = rest.split(".")[0]
                if name not in params:
                    hint, fix = suggest_fix(name, params)
                    if fix is not None:  # the key is the whole path: rename it
                        fix = _key_fix(f"args.{fix.new}{rest[len(name):]}", key, where)
                    self.err("E202", f"`{pattern}` has no parameter `{name}`", loc,
                             (*sub, "where", key), hint or
                             ("its parameters: " + ", ".join(sorted(params)) if params else None),
                             fix=fix)
            elif head not in ("args", "result", "error", "tool"):
                hint, fix = suggest_fix(f"args.{key}", [f"args.{p}" for p in params])
                self.err("E211", f"`where` paths on tool records start with `args.`, `result.`, "
                         f"`error` or `tool`; found `{key}`", loc, (*sub, "where", key), hint,
                         fix=fix and _key_fix(fix.new, key, where))

    def check_state_ref(self, ref: str, env: dict[str, Any], loc: Loc,
                        sub: tuple[PathPart, ...]) -> None:
        svc, _, table = ref.partition(".")
        if svc not in env["services"]:
            hint, fix = suggest_fix(svc, env["services"])
            self.err("E202", f"no service `{svc}` in this session's environment", loc, sub,
                     hint or "write `service.table`",
                     fix=fix and Fix("replace_value", ref, f"{fix.new}.{table}"))
        elif table not in self.plan_services[svc]["tables"]:
            hint, fix = suggest_fix(table, self.plan_services[svc]["tables"])
            self.err("E202", f"service `{svc}` has no table `{table}`", loc, sub,
                     hint or "write `service.table`",
                     fix=fix and Fix("replace_value", ref, f"{svc}.{fix.new}"))

    def checklist(self, s: P.Session, loc: Loc, r: Any, tools: list[str],
                  env: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        seen: set[str] = set()
        for i, c in enumerate(s.checklist):
            sub = ("checklist", i)
            cid = c.id or f"c{i + 1}"
            if cid in seen:
                self.err("E201", f"checklist id `{cid}` is used twice", loc, (*sub, "id"))
            seen.add(cid)
            if c.rule is not None and c.python is not None:
                self.err("E211", "give either `rule` or `python`, not both", loc, sub)
            if c.rule is not None:
                self.check_assertion(c.rule, loc, (*sub, "rule"), tools, env)
            source = None
            if c.python is not None:
                source = self.read_text(c.python.split(":")[0], loc, (*sub, "python"))
            if c.evidence is not None:
                for j, t in enumerate(c.evidence.tools):
                    if not any(fnmatch.fnmatchcase(x, t) for x in tools) and not self.lost_tool(t):
                        hint, fix = _tool_suggestion(t, tools)
                        self.err("E202", f"no tool `{t}` in this session", loc,
                                 (*sub, "evidence", "tools", j), hint, fix=fix)
                for j, st in enumerate(c.evidence.state):
                    self.check_state_ref(st, env, loc, (*sub, "evidence", "state", j))
            grader = "python" if c.python else "rule" if c.rule else "rubric"
            out.append({
                "id": cid, "text": r(c.text, *sub, "text"), "grader": grader,
                "rule": c.rule.model_dump(mode="json", by_alias=True, exclude_unset=True)
                if c.rule else None,
                "python": c.python, "python_source": source,
                "evidence": c.evidence.model_dump(mode="json") if c.evidence else None,
                "weight": c.weight, "aspect": c.aspect,
            })
        return out

    def graph(self, s: P.Session, loc: Loc) -> dict[str, Any] | None:
        g = s.graph
        if g is None:
            return None
        triples: list[dict[str, Any]] = []
        for t in g.triples:
            if isinstance(t, tuple):
                triples.append({"head": t[0], "relation": t[1], "tail": t[2], "dimension": None})
            else:
                triples.append(t.model_dump(mode="json"))
        if g.file:
            text = self.read_text(g.file, loc, ("graph", "file"))
            if text is not None:
                triples.extend(self.triples_file(g.file, text, loc))
        seen: set[tuple[str, str, str]] = set()
        uniq = []
        for tr in triples:
            key = (tr["head"].strip().lower(), tr["relation"].strip().lower(),
                   tr["tail"].strip().lower())
            if key not in seen:
                seen.add(key)
                uniq.append(tr)
        return {"triples": uniq, "batch_size": g.batch_size}

    def triples_file(self, rel: str, text: str, loc: Loc) -> list[dict[str, Any]]:
        try:
            return read_triples(rel, text)
        except DataError as exc:
            self.err("E013", f"`{rel}`: {exc}", loc, ("graph", "file"),
                     exc.hint or "a JSON list of {head, relation, tail} objects, or TSV lines")
            return []

    def verify(self, s: P.Session, loc: Loc, tools: list[str], env: dict[str, Any]) -> dict[str, Any] | None:
        v = s.verify
        if v is None:
            if s.protocol != "verified_outcome":
                return None
            v = P.Verify()
        caps = []
        for i, c in enumerate(v.caps):
            self.check_assertion(c.when, loc, ("verify", "caps", i, "when"), tools, env)
            caps.append({"id": c.id or f"cap{i + 1}",
                         "when": c.when.model_dump(mode="json", by_alias=True, exclude_unset=True),
                         "cap": c.cap, "reason": c.reason})
        return {"pass_threshold": v.pass_threshold, "outcome_weight": v.outcome_weight,
                "caps": caps}

    def unused(self, drafts: list[_SessionDraft]) -> None:
        """W312: things defined but never used (often a typo in the place that should use them)."""
        if any(self.salvaged.dropped.values()) or any(f.data is None for f in self.loaded.files):
            return  # what validation dropped, or a file that did not parse, may well use them
        used_personas = {it.obj.persona for it in self.episodes.values()}
        used_envs = {it.obj.environment for it in self.episodes.values()}
        used_services = {s for e in self.environments.values() for s in e.obj.services}
        used_streams = {s for e in self.environments.values() for s in e.obj.event_streams}
        used_tools = {t for e in self.environments.values() for t in e.obj.tools}
        used_tools |= {t for d in drafts for t in d.model.tools}
        used_corpora = {it.obj.impl.corpus for it in self.tools.values()
                        if isinstance(it.obj.impl, P.CorpusImpl)}
        for table, used, what in (
            (self.personas, used_personas, "persona"), (self.environments, used_envs, "environment"),
            (self.services, used_services, "service"), (self.streams, used_streams, "event stream"),
            (self.tools, used_tools, "tool"), (self.corpora, used_corpora, "corpus"),
        ):
            for name, it in table.items():
                if name not in used:
                    self.lint("W312", f"{what} `{name}` is defined but never used",
                              (it.src, it.path))

    # ------------------------------------------------------------------ phase 4: graph

    def order(self, drafts: list[_SessionDraft]) -> tuple[list[str], list[Any]] | None:
        ids = [d.sid for d in drafts]
        rank = {d.sid: i for i, d in enumerate(drafts)}
        edges = [(p, d.sid) for d in drafts for p in d.deps]
        g = build_dag(ids, edges)
        cycles = find_cycles(g)
        if cycles:
            by_id = {d.sid: d for d in drafts}
            for cyc in cycles:
                first = by_id[cyc[0]]
                names = [by_id[c].model.id for c in cyc]
                text = " → ".join([*names, names[0]])
                dep_index = next((i for i, x in enumerate(first.model.depends_on)
                                  if f"{first.base.rsplit('.', 1)[0]}.{x}" in
                                  {by_id[c].base for c in cyc}), 0)
                self.err("E203", f"dependency cycle: {text}", (first.src, first.path),
                         ("depends_on", dep_index) if first.model.depends_on else (),
                         "a session can only depend on sessions that can run before it")
            return None
        order = stable_order(g, rank)
        episode_of = {d.sid: d.episode for d in drafts}
        per_episode: dict[str, list[str]] = {}
        for n in order:
            per_episode.setdefault(episode_of[n], []).append(n)
        groups = []
        for members in per_episode.values():
            if any(g.in_degree(n) for n in members):
                groups.extend(dependency_groups(g.subgraph(members), members))
        return order, groups


_BUILTIN_PARAMS: dict[str, dict[str, Any]] = {
    "read_file": {"properties": {"path": {}, "offset": {}, "limit": {}}},
    "write_file": {"properties": {"path": {}, "content": {}}},
    "edit_file": {"properties": {"path": {}, "old": {}, "new": {}, "count": {}}},
    "list_files": {"properties": {"path": {}}},
    "glob": {"properties": {"pattern": {}}},
    "grep": {"properties": {"pattern": {}, "path": {}, "glob": {}}},
    "ask_user": {"properties": {"question": {}}},
    "send_message": {"properties": {"to": {}, "text": {}, "channel": {}}},
}

JSON_SCHEMA_KEYWORDS = frozenset((
    "type", "properties", "required", "items", "prefixItems", "additionalProperties",
    "patternProperties", "enum", "const", "description", "title", "default", "examples",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
    "pattern", "format", "minItems", "maxItems", "uniqueItems", "contains", "minContains",
    "maxContains", "minProperties", "maxProperties", "dependentRequired", "dependentSchemas",
    "propertyNames", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$ref", "$defs",
    "definitions", "$id", "$schema", "$comment", "$anchor", "$dynamicRef", "$dynamicAnchor",
    "$vocabulary", "readOnly", "writeOnly", "deprecated", "multipleOf", "unevaluatedItems",
    "unevaluatedProperties", "contentEncoding", "contentMediaType", "contentSchema", "nullable",
))
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains",
               "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema")


def _unknown_keywords(schema: Any, path: tuple[PathPart, ...] = ()) -> list[tuple[tuple[PathPart, ...], str]]:
    """Keys of a JSON Schema that are no keyword (usually a YAML slip such as an unquoted
    `, ` inside a flow mapping). `x-` extensions are allowed."""
    out: list[tuple[tuple[PathPart, ...], str]] = []
    if not isinstance(schema, dict):
        return out
    for key, value in schema.items():
        if not isinstance(key, str):
            continue
        if key not in JSON_SCHEMA_KEYWORDS and not key.startswith("x-"):
            out.append(((*path, key), key))
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                out.extend(_unknown_keywords(sub, (*path, key, name)))
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            for i, sub in enumerate(value):
                out.extend(_unknown_keywords(sub, (*path, key, i)))
        elif key in _SCHEMA_ONE:
            out.extend(_unknown_keywords(value, (*path, key)))
    return out


_JSON_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")


def _tool_suggestion(pattern: str, tools: list[str]) -> tuple[str | None, Fix | None]:
    """Hint and fix for a tool name matching no tool; a glob pattern is never rewritten."""
    hint, fix = suggest_fix(pattern, tools)
    return hint, None if GLOB_CHARS.search(pattern) else fix


def _key_fix(new: str, old: str, mapping: dict[str, Any]) -> Fix | None:
    """Renaming key `old` of `mapping` to `new`, unless that key exists already."""
    return None if new in mapping else Fix("rename_key", old, new)


def jmespath_problem(query: str) -> str | None:
    """Why a JMESPath query does not compile, in one line; None when it does."""
    try:
        jmespath.compile(query)
    except IncompleteExpressionError:
        return "the query ends too early"
    except LexerError as exc:  # a ParseError subclass: test it first
        return f"{exc.message.rstrip('.:')} at character {exc.lexer_position + 1}"
    except ParseError as exc:
        return f"unexpected `{exc.token_value}` at character {exc.lex_position + 1}"
    except Exception as exc:  # the library's own failures on odd input
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def _op_description(op: P.Operation, service: str) -> str:
    what = {
        "list": f"List rows of `{op.table}`" + (f", filtered by {', '.join(op.filter_fields)}"
                                                 if op.filter_fields else ""),
        "get": f"Get one row of `{op.table}` by its key",
        "search": f"Search `{op.table}` by text",
        "create": f"Create a row in `{op.table}`",
        "update": f"Update a row of `{op.table}`",
        "delete": f"Delete a row of `{op.table}`",
    }[op.kind]
    return f"{what} ({service})."


def _op_parameters(op: P.Operation, table: P.Table) -> dict[str, Any]:
    props: dict[str, Any] = {}
    declared = (table.row_schema or {}).get("properties")
    schema_props = declared if isinstance(declared, dict) else {}  # E207 reports a bad one

    def field_schema(name: str) -> dict[str, Any]:
        sch = schema_props.get(name)
        return dict(sch) if isinstance(sch, dict) else {}

    required: list[str] = []
    if op.kind == "list":
        for f in op.filter_fields:
            props[f] = field_schema(f)
        props["limit"] = {"type": "integer", "minimum": 1, "maximum": 500}
    elif op.kind == "search":
        props["query"] = {"type": "string", "description": "text to look for"}
        props["limit"] = {"type": "integer", "minimum": 1, "maximum": 500}
        required = ["query"]
    elif op.kind in ("get", "delete"):
        props[table.key] = field_schema(table.key) or {"type": ["string", "integer"]}
        required = [table.key]
    else:
        names = op.fields if op.fields is not None else [n for n in schema_props if n != table.key]
        if op.fields is None and not schema_props:
            sample = table.rows[0] if table.rows else {}
            names = [n for n in sample if n != table.key]
        if op.kind == "update":
            props[table.key] = field_schema(table.key) or {"type": ["string", "integer"]}
            required = [table.key]
        for n in names:
            props[n] = field_schema(n)
        if op.kind == "create":
            required = list(op.required)
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    return out


_REGEX_HINTS = (
    (("character set", "missing ]"), "`[` starts a character class; for a literal bracket write "
     "`\\[` (in YAML single quotes: 'a \\[b')"),
    (("subpattern", "missing )", "unbalanced parenthesis"), "`(` starts a group; for a literal "
     "parenthesis write `\\(`"),
    (("nothing to repeat", "multiple repeat", "missing argument to repetition"),
     "`*`, `+`, `?` and `{` repeat what precedes them; for the character itself write `\\*`, "
     "`\\+`, `\\?`"),
    (("bad escape", "trailing backslash"), "a backslash starts an escape; write `\\\\` for a "
     "literal one"),
)


def regex_hint(problem: str) -> str | None:
    """How to fix a common regex mistake, from the regex engine's message."""
    for needles, hint in _REGEX_HINTS:
        if any(n in problem for n in needles):
            return hint
    return None


def check_prompts(pack: P.Pack, src: SourceFile, builder: Builder) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in pack.prompts.items():
        loc = (src, ("prompts",))
        if isinstance(value, P.PromptFile):
            text = builder.read_text(value.file, loc, (name, "file"))
            if text is None:
                continue
        else:
            text = value
        problem = check_syntax(text)
        if problem:
            builder.err(problem.code, problem.message, loc, (name,))
            continue
        out[name] = text
    return dict(sorted(out.items()))
