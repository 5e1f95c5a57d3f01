"""HTTP services (`services[].process`) and HTTP tools (`impl: {kind: http}`), issue 12 §2.

The compiler never runs the service: it checks what can be checked without it (the working
directory is a directory inside the pack, the command's script exists, the environment names do
not shadow what the runtime sets, a fixed port is unprivileged, every `{name}` of an HTTP tool
is one of the tool's parameters, the tool's service is a process service), renders `env` with
the pack vars, and records a hash of the files under `cwd` so that editing the service changes
the fingerprints of the sessions that use it.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchpack.specs import pack as P

from .loader import inside

if TYPE_CHECKING:
    from .core import Item, Loc
    from .world import WorldBuilder

RESERVED_ENV = ("PORT", "PATH", "HOME", "LANG")
"""Set by the runtime in the service's sandbox; a pack value would be overwritten or break it."""
MAX_SOURCE_FILES = 500
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SKIP_DIRS = {"__pycache__", "build", "node_modules", ".bench-cache"}


def process_service(b: WorldBuilder, name: str, it: Item) -> dict[str, Any] | None:
    """The plan's `process` of service `name`, or None after reporting its mistakes."""
    s: P.Service = it.obj
    proc = s.process
    assert proc is not None
    loc: Loc = (it.src, it.path)
    ok = True
    if s.tables or s.operations:
        key = "tables" if s.tables else "operations"
        b.err("E230", f"service `{name}` has both `process` and `{key}`", loc, (key,),
              "a service is either a process serving HTTP (its tools are `impl: {kind: http}`) "
              "or declarative tables with operations, not both")
        ok = False
    base = it.src.path.parent
    cwd = (base / proc.cwd).resolve() if not Path(proc.cwd).is_absolute() else Path(proc.cwd)
    root = b.loaded.root.resolve()
    if Path(proc.cwd).is_absolute() or not inside(root, cwd):
        b.err("E230", f"service `{name}`: `cwd: {proc.cwd}` is outside the pack directory", loc,
              ("process", "cwd"), "give a folder of the pack, relative to this YAML file "
              "(the service sees only the pack, read-only at /pack)")
        return None
    if not cwd.is_dir():
        b.err("E230", f"service `{name}`: `cwd: {proc.cwd}` is not a directory of the pack",
              loc, ("process", "cwd"), "create it or fix the path (relative to this YAML file)")
        return None
    # the script the interpreter runs, when the command names one: a typo found now, not as
    # "can't open file" in the service's log at run time
    if proc.command[0] in ("python", "python3") and len(proc.command) > 1 \
            and not proc.command[1].startswith("-"):
        script = proc.command[1]
        if not (cwd / script).is_file():
            b.err("E006", f"service `{name}`: the command's script `{script}` is not in "
                  f"`{proc.cwd}`", loc, ("process", "command", 1),
                  "paths in `command` are relative to `cwd`")
            ok = False
    if proc.port != "auto" and not 1024 <= proc.port <= 65535:
        b.err("E230", f"service `{name}`: port {proc.port} is not an unprivileged port", loc,
              ("process", "port"), "use `auto` (any port is free: each service has its own "
              "network) or a number from 1024 to 65535")
        ok = False
    env: dict[str, str] = {}
    for key, value in proc.env.items():
        if key in RESERVED_ENV:
            b.err("E230", f"service `{name}`: `env` sets `{key}`, which the runtime sets", loc,
                  ("process", "env", key), "the service gets its port as $PORT; rename the "
                  "variable")
            ok = False
            continue
        env[key] = b.render(value, {"vars": b.pack.vars}, loc, ("process", "env", key))
    if not ok:
        return None
    out = proc.model_dump(mode="json")
    files: dict[str, str] = {}
    binary: dict[str, str] = {}
    digest = _source_hash(b, cwd, loc, root, files, binary)
    # the plan carries the service's files (paths from the pack root), never where the pack
    # lies on disk: a plan is the same wherever it was compiled, and runs without the pack
    out.update(cwd=cwd.relative_to(root).as_posix() or ".", env=env, files=files,
               binary_files=binary, source_sha256=digest)
    return out


def _source_hash(b: WorldBuilder, cwd: Path, loc: Loc, root: Path, texts: dict[str, str],
                 binary: dict[str, str]) -> str:
    """sha256 over the files under `cwd` (relative paths and bytes), read through the builder
    so the compile cache notices an edited service; each file's content goes into `texts`
    (UTF-8) or `binary` (base64), keyed by its path from the pack root."""
    h = hashlib.sha256()
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(cwd):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        files.extend(Path(dirpath) / f for f in sorted(filenames) if not f.startswith("."))
        if len(files) >= MAX_SOURCE_FILES:
            break
    base = loc[0].path.parent
    for f in files[:MAX_SOURCE_FILES]:
        if f.is_symlink() or not f.is_file():
            continue
        data = b.read_data(os.path.relpath(f, base), loc, ("process", "cwd"))
        if data is not None:
            h.update(str(f.relative_to(cwd)).encode() + b"\0"
                     + hashlib.sha256(data).hexdigest().encode() + b"\n")
            key = f.resolve().relative_to(root).as_posix()
            try:
                texts[key] = data.decode("utf-8")
            except UnicodeDecodeError:
                binary[key] = base64.b64encode(data).decode("ascii")
    return h.hexdigest()


def check_http_tool(b: WorldBuilder, t: P.Tool, loc: Loc) -> None:
    """Check an HTTP tool against its service and its own parameters."""
    impl = t.impl
    assert isinstance(impl, P.HttpImpl)
    if b.check_ref(impl.service, b.services, "service", loc, ("impl", "service")) \
            and b.services[impl.service].obj.process is None:
        b.err("E231", f"tool `{t.name}`: service `{impl.service}` has no `process`", loc,
              ("impl", "service"), "HTTP tools call a service declared with `process:`; "
              "a declarative service's tools are its `operations`")
    props = t.parameters.get("properties") if isinstance(t.parameters, dict) else None
    names = set(props) if isinstance(props, dict) else set()
    for sub, template in (("path", impl.path), ("query", impl.query), ("body", impl.body)):
        for used in sorted(_placeholders(template)):
            if used not in names:
                b.err("E231", f"tool `{t.name}`: `{{{used}}}` in its {sub} is not one of its "
                      f"parameters", loc, ("impl", sub),
                      "add it under `parameters.properties` or fix the name"
                      + (f" (it has: {', '.join(sorted(names))})" if names else ""))


def _placeholders(template: Any) -> set[str]:
    """Every `{name}` of a template (same rule as the runtime's `http_tools.placeholders`,
    which the compiler may not import)."""
    if isinstance(template, str):
        return set(_PLACEHOLDER.findall(template))
    if isinstance(template, dict):
        return set().union(set(), *(_placeholders(v) for v in template.values()))
    if isinstance(template, list):
        return set().union(set(), *(_placeholders(v) for v in template))
    return set()


def http_services_of(b: WorldBuilder, tools: list[str]) -> list[str]:
    """The process services the HTTP tools among `tools` call (in tool order)."""
    out: list[str] = []
    for name in tools:
        tool = b.plan_tools.get(name)
        impl = tool.get("impl") if tool else None
        if isinstance(impl, dict) and impl.get("kind") == "http" and impl["service"] not in out:
            out.append(impl["service"])
    return out
