"""Python toolsets: `toolsets:` modules → plan tools (`python_tool`) and `Plan.toolsets`.

The module is read with `benchpack.specs.pytools.read_tools` (`ast`, never imported); its
problems become diagnostics located in the .py file itself (E217, W319). The service must
exist, `include`/`read_only` must name real functions, and every derived tool name must be
free (E214 through `add_tool`). Called from the world phase (`world.py`), after pack tools.
"""

from __future__ import annotations

import ast
import hashlib
from typing import TYPE_CHECKING, Any

from benchpack.specs import pack as P
from benchpack.specs.pytools import ModuleTools, PyToolSpec, read_tools

from .core import _Item
from .diagnostics import display_path, suggest_fix
from .loader import pack_relative

if TYPE_CHECKING:
    from .world import WorldBuilder

_READ_METHODS = frozenset(("get", "find", "rows", "next_id"))


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
            b.toolsets[key] = _Item(ts, src, ("toolsets", i))


def compile_toolsets(b: WorldBuilder) -> None:
    for key, it in b.toolsets.items():
        _compile(b, key, it)


def _compile(b: WorldBuilder, key: str, it: _Item) -> None:
    ts: P.Toolset = it.obj
    loc = (it.src, it.path)
    if ts.service is not None:
        b.check_ref(ts.service, b.services, "service", loc, ("service",))
    source = b.read_text(ts.module, loc, ("module",))
    if source is None:
        return
    path = it.src.path.parent / ts.module
    shown = display_path(path)
    found: ModuleTools = read_tools(source, shown)
    for p in found.problems:
        b.diags.error("E217" if p.severity == "error" else "W319", p.message, shown, (),
                      p.hint or None, line=p.line, col=p.col)
    # functions the module defines, even broken ones: `include: [a_broken_one]` is not a typo
    defined = _public_functions(source)
    for field in ("include", "read_only"):
        if defined is None:
            break  # the module does not parse (E217): its names are unknown, not missing
        for i, fn in enumerate(getattr(ts, field) or []):
            if fn not in defined:
                hint, fix = suggest_fix(fn, sorted(defined))
                b.err("E202", f"`{ts.module}` has no public function `{fn}`", loc, (field, i),
                      hint or ("its functions: " + ", ".join(sorted(defined))
                               if defined else None), fix=fix)
    if found.errors:
        return  # the plan would offer tools whose module cannot be trusted to load
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
    b.plan_toolsets[key] = {"name": key, "file": pack_relative(path, b.loaded.root), "service": ts.service,
                            "source": source, "sha256": digest}
    wanted = set(ts.include) if ts.include is not None else None
    read_only = set(ts.read_only or ())
    tree = ast.parse(source)
    names: list[str] = []
    for spec in found.tools:
        if wanted is not None and spec.name not in wanted:
            continue
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
        svc = b.toolsets[key].obj.service
        if svc is not None and svc in b.services and svc not in services:
            services.append(svc)
    return out
