"""Python toolsets: `toolsets:` modules → plan tools (`python_tool`) and `Plan.toolsets`.

The module is read with `benchpack.specs.pytools.read_tools` (`ast`, never imported); its
problems become diagnostics located in the .py file itself (E217, W319). The service must
exist, `include`/`read_only` must name real functions, and every derived tool name must be
free (E214 through `add_tool`). Called from the world phase (`world.py`), after pack tools.

A `specs:` file (`{function: {description, parameters}}`, an imported benchmark's own tool
definitions) replaces what the docstrings and type hints would give for the functions it names;
its mistakes are located in the JSON file itself (E013 shape, E202 unknown function, E207
schema). The run-time options (`check_arguments`, `atomic`, `plain_errors`) go into the plan
only when they differ from the defaults, so plans without them stay byte for byte.
"""

from __future__ import annotations

import ast
import hashlib
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from benchpack.specs import pack as P
from benchpack.specs.pytools import ModuleTools, PyToolSpec, read_tools

from .core import Item
from .datafiles import DataError, parse_json
from .diagnostics import PathPart, display_path, suggest_fix
from .loader import pack_relative
from .sourcefile import SourceFile

if TYPE_CHECKING:
    from .world import WorldBuilder

_READ_METHODS = frozenset(("get", "find", "rows", "next_id"))
OPTION_DEFAULTS: dict[str, bool] = {"check_arguments": True, "atomic": True,
                                    "plain_errors": False}
"""The run-time options of a toolset and their defaults (a plan records only changed ones)."""


def toolset_key(ts: P.Toolset) -> str:
    return ts.name or ts.module


def collect_toolsets(b: WorldBuilder) -> None:
    """Phase 1: toolsets by name (or module path), across every pack file."""
    for src, model in b.models:
        for i, ts in enumerate(getattr(model, "toolsets", ())):
            key = toolset_key(ts)
            if key in b.toolsets:
                first = b.toolsets[key]
                b.err("E201", f"toolset `{key}` is defined twice (first in {first.src.shown})",
                      (src, ("toolsets", i)), ("name" if ts.name else "module",),
                      "give each toolset its own module or `name`")
                continue
            b.toolsets[key] = Item(ts, src, ("toolsets", i))


def compile_toolsets(b: WorldBuilder) -> None:
    for key, it in b.toolsets.items():
        _compile(b, key, it)


def _compile(b: WorldBuilder, key: str, it: Item) -> None:
    ts: P.Toolset = it.obj
    loc = (it.src, it.path)
    if ts.service is not None:
        b.check_ref(ts.service, b.services, "service", loc, ("service",))
    _check_services(b, ts, loc)
    source = b.read_text(ts.module, loc, ("module",))
    if source is None:
        return
    path = it.src.path.parent / ts.module
    shown = display_path(path)
    defined = _public_functions(source)
    given: dict[str, tuple[str, dict[str, Any]]] | None = None
    if ts.specs is not None:
        given = _read_specs(b, ts, loc, defined)
        if given is None:
            return  # reported: offering derived tools instead would hide the mistake
    found: ModuleTools = read_tools(source, shown, given)
    for p in found.problems:
        b.diags.error("E217" if p.severity == "error" else "W319", p.message, shown, (),
                      p.hint or None, line=p.line, col=p.col)
    # functions the module defines, even broken ones: `include: [a_broken_one]` is not a typo
    for field in ("include", "read_only", "after_call"):
        if defined is None:
            break  # the module does not parse (E217): its names are unknown, not missing
        value = getattr(ts, field)
        for i, fn in enumerate([value] if isinstance(value, str) else value or []):
            sub: tuple[PathPart, ...] = (field,) if isinstance(value, str) else (field, i)
            if fn not in defined:
                hint, fix = suggest_fix(fn, sorted(defined))
                b.err("E202", f"`{ts.module}` has no public function `{fn}`", loc, sub,
                      hint or ("its functions: " + ", ".join(sorted(defined))
                               if defined else None), fix=fix)
    if defined is not None and ts.after_call in defined:
        _check_hook(b, ts, source, loc)
    if found.errors:
        return  # the plan would offer tools whose module cannot be trusted to load
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
    b.plan_toolsets[key] = {"name": key, "file": pack_relative(path, b.loaded.root),
                            "service": ts.service, "source": source, "sha256": digest,
                            **toolset_options(ts), **toolset_reach(ts)}
    wanted = set(ts.include) if ts.include is not None else None
    read_only = set(ts.read_only or ())
    tree = ast.parse(source)
    names: list[str] = []
    for spec in found.tools:
        if wanted is not None and spec.name not in wanted:
            continue
        if spec.name == ts.after_call:
            if ts.include is not None:
                b.err("E245", f"`{spec.name}` is the toolset's `after_call`: it cannot also be "
                      "a tool", loc, ("include", ts.include.index(spec.name)),
                      "leave it out of `include`")
            continue  # the hook runs after calls; it is never offered
        name = ts.prefix + spec.name
        if len(name) > 64:
            b.err("E104", f"tool name `{name}` (prefix + function) is longer than 64 "
                  "characters", loc, ("prefix",), "use a shorter prefix")
            continue
        if ts.read_only is not None:
            effect = "read" if spec.name in read_only else "write"
        else:
            effect = _effect(tree, spec)
        impl: dict[str, Any] = {"kind": "python_tool", "toolset": key, "function": spec.name,
                                "state_param": spec.state_param, "sha256": digest}
        origin = f"toolset `{key}`"
        b.add_tool(name, {"name": name, "description": spec.description,
                          "parameters": spec.parameters, "impl": impl, "group": None,
                          "effect": effect}, origin, loc, ("module",))
        if b.plan_tools.get(name, {}).get("impl") is impl:  # not refused as a clash
            names.append(name)
    b.toolset_tools[key] = names


def toolset_reach(ts: P.Toolset) -> dict[str, Any]:
    """`services` and `after_call` when set (plans without them stay byte for byte)."""
    out: dict[str, Any] = {}
    if ts.services:
        out["services"] = list(ts.services)
    if ts.after_call is not None:
        out["after_call"] = ts.after_call
    return out


def _check_services(b: WorldBuilder, ts: P.Toolset, loc: Any) -> None:
    """E245: `services` needs `service`, names each service once, and no table name is in
    two of them (the one `State` would hold two tables of that name)."""
    if not ts.services:
        return
    if ts.service is None:
        b.err("E245", "`services` needs `service` (the toolset's own service)", loc,
              ("services",), "name the main service in `service:` and the others in "
              "`services:`")
        return
    owner: dict[str, str] = {}
    if ts.service in b.services:
        owner = {t: ts.service for t in b.services[ts.service].obj.tables}
    seen = {ts.service}
    for i, name in enumerate(ts.services):
        if name in seen:
            b.err("E245", f"service `{name}` is named twice by this toolset", loc,
                  ("services", i), "name each service once (`service` is already one)")
            continue
        seen.add(name)
        if not b.check_ref(name, b.services, "service", loc, ("services", i)):
            continue
        for table in b.services[name].obj.tables:
            if table in owner:
                b.err("E245", f"table `{table}` is in both `{owner[table]}` and `{name}`", loc,
                      ("services", i), "the toolset's `State` holds the tables of all its "
                      "services by name: rename one of the tables")
            else:
                owner[table] = name


def toolset_options(ts: P.Toolset) -> dict[str, bool]:
    """The toolset's run-time options that differ from the defaults."""
    return {k: getattr(ts, k) for k, default in OPTION_DEFAULTS.items()
            if getattr(ts, k) != default}


def _read_specs(b: WorldBuilder, ts: P.Toolset, loc: Any, defined: set[str] | None
                ) -> dict[str, tuple[str, dict[str, Any]]] | None:
    """function → (description, parameters) from the `specs:` file, or None after reporting
    what is wrong (located in the JSON file)."""
    assert ts.specs is not None
    text = b.read_text(ts.specs, loc, ("specs",))
    if text is None:
        return None
    path = loc[0].path.parent / ts.specs
    shown = display_path(path)
    hint = ('{"<function>": {"description": "…", "parameters": {"type": "object", '
            '"properties": {…}}}}')
    try:
        data = parse_json(text)
    except DataError as exc:
        b.err("E013", f"`{ts.specs}`: {exc}", loc, ("specs",), exc.hint or hint)
        return None
    src = SourceFile(path, shown, text.encode("utf-8"), text=text)
    ok = True

    def bad(code: str, message: str, where: tuple[PathPart, ...], why: str | None,
            at_key: bool = False) -> None:
        nonlocal ok
        ok = False
        line, col = src.locate(where, at_key) or (1, 1)
        b.diags.error(code, message, shown, where, why, line=line, col=col, at_key=at_key)

    if not isinstance(data, dict):
        bad("E013", "a tool specs file is an object of functions", (), hint)
        return None
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for fn, spec in data.items():
        if defined is not None and fn not in defined:
            found, _ = suggest_fix(fn, sorted(defined))
            bad("E202", f"`{ts.module}` has no public function `{fn}`", (fn,),
                found or ("its functions: " + ", ".join(sorted(defined))), at_key=True)
            continue
        if not isinstance(spec, dict) or set(spec) != {"description", "parameters"}:
            bad("E013", f"the spec of `{fn}` must have exactly `description` and `parameters`",
                (fn,), hint)
            continue
        if not isinstance(spec["description"], str):
            bad("E013", f"the description of `{fn}` must be text", (fn, "description"), None)
            continue
        params = spec["parameters"]
        if not isinstance(params, dict) or params.get("type") != "object":
            bad("E207", f"the parameters of `{fn}` must be a JSON Schema object "
                        '(`"type": "object"`)', (fn, "parameters"), hint)
            continue
        try:
            Draft202012Validator.check_schema(params)
        except SchemaError as exc:
            inner = tuple(p for p in exc.path if isinstance(p, str | int))
            where = "/".join(str(p) for p in inner) or "top level"
            bad("E207", f"the parameters of `{fn}` are not a valid JSON Schema ({where}: "
                        f"{exc.message})", (fn, "parameters", *inner),
                "see https://json-schema.org/understanding-json-schema/")
            continue
        out[fn] = (spec["description"], params)
    return out if ok else None


def _check_hook(b: WorldBuilder, ts: P.Toolset, source: str, loc: Any) -> None:
    """E245: the `after_call` is called as `fn(state)`: one positional parameter, nothing else
    required, and not a coroutine (it runs inside the call, after the tool returned)."""
    fn = next(n for n in ast.parse(source).body if isinstance(
        n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == ts.after_call)
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    required = len(positional) - len(a.defaults)
    takes_one = required == 1 or (required == 0 and (bool(positional) or a.vararg is not None))
    kw_required = [k.arg for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None]
    if isinstance(fn, ast.AsyncFunctionDef) or not takes_one or kw_required:
        b.err("E245", f"the after_call `{ts.after_call}` (line {fn.lineno} of `{ts.module}`) must "
              "be called as `fn(state)`", loc, ("after_call",),
              "give it one parameter, the `State` (e.g. `def sync(db: State) -> None`), and "
              "make it a plain `def`")


def _public_functions(source: str) -> set[str] | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and not n.name.startswith("_")}


def _effect(tree: ast.Module, spec: PyToolSpec) -> str:
    """`read` when the `State` parameter is only the receiver of read methods; anything else
    (a `put`, passing it to a helper, storing it) may change the state: `write`."""
    if spec.state_param is None:
        return "read"
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
               and n.name == spec.name), None)
    if fn is None:
        return "write"
    uses = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == spec.state_param]
    reads = 0
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and \
                node.func.value.id == spec.state_param and node.func.attr in _READ_METHODS:
            reads += 1
    return "read" if len(uses) == reads else "write"


def environment_toolsets(b: WorldBuilder, env: P.Environment, loc: Any, tools: list[str],
                         services: list[str]) -> list[str]:
    """The toolsets an environment offers (plan keys); their tools join `tools` and their
    services join `services` (the state, without the services' operation tools)."""
    out: list[str] = []
    by_module = {it.obj.module: k for k, it in b.toolsets.items()}
    for i, ref in enumerate(env.toolsets):
        key = ref if ref in b.toolsets else by_module.get(ref)
        if key is None:
            b.check_ref(ref, b.toolsets, "toolset", loc, ("toolsets", i))
            continue
        if key in out:
            continue
        out.append(key)
        tools.extend(b.toolset_tools.get(key, ()))
        for svc in toolset_services(b.toolsets[key].obj):
            if svc in b.services and svc not in services:
                services.append(svc)
    return out


def toolset_services(ts: P.Toolset) -> list[str]:
    """Every service whose tables the toolset's `State` holds (its own first)."""
    return ([ts.service] if ts.service is not None else []) + list(ts.services)
