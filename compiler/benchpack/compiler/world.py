"""Phase 2, the world: services, event streams, corpora and pack tools become plan tools;
environments, workspace files, personas and communication styles."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import ValidationError

from benchpack.specs import pack as P

from .core import DEFAULT_ENV, BuilderCore, Item, Loc, iso
from .datafiles import DataError, first_error, read_rows
from .diagnostics import PathPart, suggest_fix
from .discoverable import environment_discoverable, environment_gifts
from .http import check_http_tool, http_services_of, process_service
from .knowledge import compile_knowledge, environment_knowledge
from .lint import style_contradictions
from .render import RenderError, render
from .toolsets import compile_toolsets, environment_toolsets
from .user_side import environment_state_ignores, environment_user_toolsets
from .validate import node_at

_DURATION = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class WorldBuilder(BuilderCore):
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
            elif isinstance(impl, P.HttpImpl):
                check_http_tool(self, t, loc)
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
        compile_toolsets(self)
        compile_knowledge(self)
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

    def service(self, name: str, it: Item) -> None:
        s: P.Service = it.obj
        loc = (it.src, it.path)
        # ---- HTTP services (issue 12, section 2): a process instead of tables
        if s.process is not None:
            process = process_service(self, name, it)
            if process is not None:
                self.plan_services[name] = {"name": name, "description": s.description,
                                            "tables": {}, "operations": [], "group": s.group,
                                            "process": process}
            return
        if not s.tables:
            self.err("E230", f"service `{name}` has neither `tables` nor `process`", loc, (),
                     "give `tables:` (a declarative service) or `process:` (an HTTP service)",
                     at_key=True)
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

    def stream(self, name: str, it: Item) -> None:
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

    def corpus(self, name: str, it: Item) -> None:
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

    def environment(self, name: str, it: Item) -> None:
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
        # an HTTP tool brings the process service it calls into the environment
        services.extend(s for s in http_services_of(self, tools) if s not in services)
        streams = []
        for i, s in enumerate(env.event_streams):
            if self.check_ref(s, self.streams, "event stream", loc, ("event_streams", i)):
                streams.append(s)
                if f"{s}__read" in self.plan_tools:
                    tools.append(f"{s}__read")
        toolsets = environment_toolsets(self, env, loc, tools, services)
        user_toolsets, user_tools = environment_user_toolsets(self, env, loc, toolsets, services)
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
        knowledge = environment_knowledge(self, name, env.knowledge, loc, tools, files)
        locked = environment_discoverable(self, env.discoverable, loc, tools, services,
                                          user_tools)
        gifts = environment_gifts(self, env.discoverable, loc, tools, user_tools)
        self.check_time(env.clock, loc, ("clock",))
        hb = None
        if env.heartbeat:
            h = env.heartbeat
            self.check_time(h.start, loc, ("heartbeat", "start"))
            hb = {"every_s": int(h.every[:-1]) * _DURATION[h.every[-1]], "start": iso(h.start),
                  "beats": h.beats, "message": h.message}
        self.plan_envs[name] = {
            "id": name, "description": env.description, "clock": iso(env.clock),
            "files": files, "tools": list(dict.fromkeys(tools)), "services": services,
            "event_streams": streams, "heartbeat": hb,
        }
        if toolsets or user_toolsets:  # only when used: plans without stay byte for byte
            self.plan_envs[name]["toolsets"] = [*toolsets, *user_toolsets]
        if user_toolsets:  # dual control (issue 24)
            self.plan_envs[name]["user_toolsets"] = user_toolsets
            self.plan_envs[name]["user_tools"] = list(dict.fromkeys(user_tools))
        ignores = environment_state_ignores(self, env, loc, services)
        if ignores:  # tables the state check leaves out; likewise only when some
            self.plan_envs[name]["state_ignores"] = ignores
        if gifts:  # the user's tools the agent gives (issue 24); likewise only when some
            self.plan_envs[name]["user_discoverable"] = gifts
        if knowledge:  # only when used, so plans without knowledge bases stay byte for byte
            self.plan_envs[name]["knowledge"] = knowledge
        if locked:  # likewise
            self.plan_envs[name]["discoverable"] = locked
        policy = self.policy(env, loc)
        if policy is not None:  # only when given: other plans and fingerprints stay as they were
            self.plan_envs[name]["policy"] = policy

    def policy(self, env: P.Environment, loc: Loc) -> str | None:
        p = env.policy
        if p is None:
            return None
        ctx = {"vars": self.pack.vars, "environment": {"id": env.id}}
        if isinstance(p, P.PolicyFile):
            text = self.read_text(p.file, loc, ("policy", "file"))
            if text is None:
                return None
            if p.literal:
                return text
            try:
                return render(text, ctx)
            except RenderError as exc:
                self.err(exc.code, f"{p.file}: {exc.message}", loc, ("policy", "file"),
                         exc.hint)
                return text
        text = self.render(p, ctx, loc, ("policy",))
        if not text.strip():
            self.err("E104", "`policy` is empty", loc, ("policy",),
                     "write the agent's policy, or leave `policy` out for the default prompt")
        return text

    def check_time(self, value: Any, loc: Loc, sub: Sequence[PathPart]) -> None:
        """A time YAML left as text (`99999-99-99T99:99:99` is not a YAML timestamp) must still
        be a real ISO 8601 date or date-time: the runtime computes with it."""
        if not isinstance(value, str):
            return
        try:
            datetime.fromisoformat(value.strip())
        except ValueError:
            self.err("E104", f"`{value}` is not a real date-time", loc, sub,
                     "write ISO 8601, e.g. 2026-04-08T09:00:00 (optionally with Z or +02:00)")

    def persona(self, name: str, it: Item) -> None:
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
        else:
            for i, why in style_contradictions(st.directives, lo, hi):
                self.lint("W322", f"style directive contradicts the style's length: {why}",
                          loc, (*sub, "directives", i),
                          "set min_words/max_words to what the directive asks, or drop it")
        return {
            "code": code,
            "traits": {n: (letter in letters) for letter, n in P.STYLE_TRAITS.items()},
            "length": "chatty" if chatty else "terse",
            "min_words": lo, "max_words": hi, "directives": list(st.directives),
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
