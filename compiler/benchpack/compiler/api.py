"""The compiler's public functions. The CLI is a thin layer over these."""

from __future__ import annotations

import contextlib
import gc
import glob as globlib
import hashlib
import json
import os
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from benchpack.specs import plugins

from .build import Builder, CompileOptions
from .diagnostics import Diagnostic, Diagnostics, Fix, settle_fixes
from .graph import render_dot, render_mermaid, render_text
from .loader import GLOB_CHARS, LoadedPack, load_pack, locate_all, pack_relative
from .plan import assemble, sha256, write_plan
from .validate import Salvage, validate_file

CACHE_FORMAT = 2


def benchpack_version() -> str:
    try:
        return version("benchpack")
    except PackageNotFoundError:  # running from a source tree without installing
        return "0.0.0+source"


_CODE: list[str] = []


def compiler_code() -> str:
    """The version plus a fingerprint of the compiler's and the pack language's own source
    files (path, size, mtime): an editable install's version does not change when its code
    does, and a cached plan from older code (another plan format) must not be served."""
    if not _CODE:
        from benchpack import specs

        from . import __file__ as here

        roots = [Path(here).parent, Path(specs.__file__).parent]
        h = hashlib.sha256(benchpack_version().encode())
        for root in roots:
            for f in sorted(root.rglob("*.py")):
                st = f.stat()
                h.update(f"{f.relative_to(root.parent)}|{st.st_size}|{st.st_mtime_ns}".encode())
        _CODE.append(h.hexdigest()[:16])
    return _CODE[0]


@dataclass
class CompileResult:
    diagnostics: list[Diagnostic]
    plan: dict[str, Any] | None = None
    plan_bytes: bytes | None = None
    content_hash: str | None = None
    cached: bool = False
    files: list[str] = field(default_factory=list)
    internal_error: str | None = None
    """A compiler failure while checking a pack that already has errors (some checks were
    skipped); always None for packs without errors."""
    root: Path | None = None
    """The pack directory (resolved): `bench validate --fix` writes nothing outside it."""
    fix_sources: dict[str, tuple[Path, str]] = field(default_factory=dict)
    """File as shown → (resolved path, sha256 of the bytes checked), for the files that have
    fixable diagnostics: a fix is applied only to the content it was computed from."""

    @property
    def ok(self) -> bool:
        return self.plan is not None or (self.plan_bytes is not None)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning"]

    def load_plan(self) -> dict[str, Any] | None:
        if self.plan is None and self.plan_bytes is not None:
            self.plan = json.loads(self.plan_bytes)
        return self.plan


def _content_hash(loaded: LoadedPack, options: CompileOptions) -> str:
    h = hashlib.sha256()
    entries = [(pack_relative(f.path, loaded.root), f.sha256) for f in loaded.files]
    entries += [(pack_relative(p, loaded.root), sha256(b)) for p, b in loaded.data_files.items()]
    for name, digest in sorted(entries):
        h.update(name.encode() + b"\0" + digest.encode() + b"\n")
    return h.hexdigest()


@dataclass
class _Compiled:
    loaded: LoadedPack | None = None
    plan: dict[str, Any] | None = None
    content_hash: str | None = None
    internal_error: str | None = None


def _compile_loaded(target: Path, options: CompileOptions, diags: Diagnostics) -> _Compiled:
    loaded = load_pack(target, diags)
    if loaded is None:
        return _Compiled()
    models: list[tuple[Any, Any]] = []
    salvaged = Salvage()
    for src in loaded.files:
        if src.data is None:
            continue
        model = validate_file(src, diags, salvaged)
        if model is not None:
            models.append((src, model))
    pack_ok = bool(loaded.files) and bool(models) and models[0][0] is loaded.files[0]
    if not pack_ok:
        locate_all(diags, loaded.files)
        return _Compiled(loaded)
    internal_error = None
    try:
        b = Builder(loaded, models, diags, options, salvaged)
        b.symbols()
        b.world()
        drafts, episodes = b.sessions()
        b.unused(drafts)
        ordered = b.order(drafts)
        plan = None
        content_hash = None
        if ordered is not None:
            order, groups = ordered
            content_hash = _content_hash(loaded, options)
            plan = assemble(b, drafts, episodes, order, groups, content_hash,
                            benchpack_version())
    except Exception as exc:
        # Semantic checks of a pack with errors run on salvaged parts; if they trip over the
        # damage, the errors already reported are what the author needs. The failure is kept
        # (CompileResult.internal_error) so that tests see it; without errors it is a bug.
        if not diags.has_errors():
            raise
        internal_error = _describe(exc)
        plan = None
        content_hash = None
    locate_all(diags, loaded.files)
    if diags.has_errors() or (options.strict and diags.items):
        plan = None
    return _Compiled(loaded, plan, content_hash, internal_error)


def _describe(exc: Exception) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{type(exc).__name__}: {exc} ({Path(frame.filename).name}:{frame.lineno})"


# --------------------------------------------------------------------------- cache


def cache_dir() -> Path:
    base = os.environ.get("BENCHPACK_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "benchpack" / "compile"


def _index_path(target: Path, options: CompileOptions) -> Path:
    key = f"{target.resolve()}|{options.ablation}|{options.strict}|{compiler_code()}"
    return cache_dir() / f"index-{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"


def _inputs_unchanged(index: dict[str, Any]) -> bool:
    for path, digest in index["files"].items():
        try:
            if hashlib.sha256(Path(path).read_bytes()).hexdigest() != digest:
                return False
        except OSError:
            return False
    for pattern, matched in index["globs"].items():
        now = sorted(str(Path(p).resolve()) for p in globlib.glob(pattern, recursive=True)
                     if Path(p).is_file())
        if now != matched:
            return False
    return True


def _cached(target: Path, options: CompileOptions) -> CompileResult | None:
    try:
        index = json.loads(_index_path(target, options).read_text())
        if index.get("format") != CACHE_FORMAT or not _inputs_unchanged(index):
            return None
        if "plugins" in index and index["plugins"] != plugins.installed_identity():
            return None  # a protocol plug-in the pack uses (or lacked) changed
        plan_bytes = (cache_dir() / f"plan-{index['key']}.json").read_bytes()
    except (OSError, ValueError, KeyError):
        return None
    diags = [_diag_from(d) for d in index.get("diagnostics", [])]
    return CompileResult(diagnostics=diags, plan_bytes=plan_bytes,
                         content_hash=index["content_hash"], cached=True)


def _diag_from(d: dict[str, Any]) -> Diagnostic:
    path = tuple(d.get("path") or ())
    fix = d.get("fix")
    return Diagnostic(d["code"], d["message"], d["file"], path, d.get("hint"), d.get("line"),
                      d.get("col"), fix=Fix(fix["kind"], fix["old"], fix["new"]) if fix else None)


def _store(target: Path, options: CompileOptions, loaded: LoadedPack, content_hash: str,
           plan_bytes: bytes, diags: list[Diagnostic]) -> None:
    globs: dict[str, list[str]] = {}
    for src in loaded.files:
        data = src.data if isinstance(src.data, dict) else {}
        for pattern in data.get("include", []) or []:
            if isinstance(pattern, str) and GLOB_CHARS.search(pattern):
                full = str(src.path.parent / pattern)
                globs[full] = sorted(str(Path(p).resolve()) for p in
                                     globlib.glob(full, recursive=True) if Path(p).is_file())
        # knowledge bases' `files:` globs (issue 24): a document added or removed recompiles
        for kb in data.get("knowledge", []) or []:
            for pattern in (kb.get("files") or []) if isinstance(kb, dict) else []:
                if isinstance(pattern, str):
                    full = str(src.path.parent / pattern)
                    globs[full] = sorted(str(Path(p).resolve()) for p in
                                         globlib.glob(full, recursive=True) if Path(p).is_file())
    files = {str(f.path): f.sha256 for f in loaded.files}
    files.update({str(p): sha256(b) for p, b in loaded.data_files.items()})
    key = f"{content_hash}|{options.ablation}|{options.strict}|{compiler_code()}"
    # only a pack naming a protocol that is not built in reads the entry points (~0.1 s)
    used = {"plugins": plugins.installed_identity()} if plugins.consulted() else {}
    key = hashlib.sha256((key + json.dumps(used)[1:-1]).encode()).hexdigest()
    index = {"format": CACHE_FORMAT, "key": key, "content_hash": content_hash, "files": files,
             "globs": globs, **used,
             "diagnostics": [{"code": d.code, "message": d.message, "file": d.file,
                              "path": list(d.path), "hint": d.hint, "line": d.line, "col": d.col,
                              "fix": d.as_dict()["fix"]}
                             for d in diags]}
    try:
        cdir = cache_dir()
        cdir.mkdir(parents=True, exist_ok=True)
        (cdir / f"plan-{key}.json").write_bytes(plan_bytes)
        tmp = _index_path(target, options).with_suffix(".tmp")
        tmp.write_text(json.dumps(index))
        tmp.replace(_index_path(target, options))
    except OSError:
        pass  # the cache is an optimisation; a read-only home must not fail a compile


# --------------------------------------------------------------------------- public API


def validate_pack(target: str | Path, *, strict: bool = False,
                  variables: dict[str, str] | None = None) -> CompileResult:
    """Check a pack without writing anything."""
    diags = Diagnostics()
    c = _compile_loaded(Path(target), CompileOptions(
        strict=strict, vars=tuple(sorted((variables or {}).items()))), diags)
    return _result(c, diags)


def _result(c: _Compiled, diags: Diagnostics) -> CompileResult:
    settle_fixes(diags.items)
    fixable = {d.file for d in diags.items if d.fix is not None}
    return CompileResult(diagnostics=diags.sorted(), plan=c.plan, content_hash=c.content_hash,
                         files=[f.shown for f in c.loaded.files] if c.loaded else [],
                         internal_error=c.internal_error,
                         root=c.loaded.root if c.loaded else None,
                         fix_sources={f.shown: (f.path, f.sha256) for f in c.loaded.files
                                      if f.shown in fixable} if c.loaded and fixable else {})


def compile_pack(target: str | Path, out: str | Path | None = None, *, ablation: bool = False,
                 strict: bool = False, use_cache: bool = True,
                 variables: dict[str, str] | None = None) -> CompileResult:
    """Compile a pack into `out/plan.json` (when `out` is given). Unchanged packs are served
    from the compile cache, keyed by the content of every input file. `variables` override
    the pack's `vars:` (`bench compile --var NAME=VALUE`)."""
    target = Path(target)
    options = CompileOptions(ablation=ablation, strict=strict,
                             vars=tuple(sorted((variables or {}).items())))
    use_cache = use_cache and not options.vars  # the cache keys the pack's files, not --var
    if use_cache:
        hit = _cached(target, options)
        if hit is not None:
            if out is not None and hit.plan_bytes is not None:
                _write_bytes(Path(out), hit.plan_bytes)
            return hit
    diags = Diagnostics()
    with _collector_paused():
        c = _compile_loaded(target, options, diags)
        result = _result(c, diags)
        plan, loaded, content_hash = c.plan, c.loaded, c.content_hash
        if plan is None or loaded is None or content_hash is None:
            return result
        out_dir = Path(out) if out is not None else None
        if out_dir is not None:
            result.plan_bytes = write_plan(plan, out_dir)
        else:
            import tempfile

            with tempfile.TemporaryDirectory() as tmp:
                result.plan_bytes = write_plan(plan, Path(tmp))
    if use_cache:
        _store(target, options, loaded, content_hash, result.plan_bytes, result.diagnostics)
    return result


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a pack compiles. Compiling builds millions of
    long-lived objects (YAML nodes, the pack and plan models); each full collection walks all
    of them, so compile time per session grew with the pack: 0.37 ms at 1 k sessions, 0.60 ms
    at 50 k (benchmarks/scale_bench.py). What compiling leaves as cyclic garbage is collected
    once it is over, as before."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _write_bytes(out: Path, data: bytes) -> None:
    out.mkdir(parents=True, exist_ok=True)
    target = out / "plan.json"
    if not target.exists() or target.read_bytes() != data:
        tmp = target.with_suffix(".json.tmp")
        tmp.write_bytes(data)
        tmp.replace(target)


def graph_pack(target: str | Path, fmt: str = "text", *, ablation: bool = False) -> tuple[str | None, CompileResult]:
    """The dependency graph of a pack as text, Mermaid or DOT."""
    result = compile_pack(target, None, ablation=ablation)
    plan = result.load_plan()
    if plan is None:
        return None, result
    episodes = {
        ep: [s for s in plan["sessions"] if plan["sessions"][s]["episode"] == ep]
        for ep in plan["episodes"]
    }
    labels = {}
    for sid, s in plan["sessions"].items():
        label = s["name"]
        if s["variant"]["style"]:
            label += f" @{s['variant']['style']}"
        if s["variant"]["ablation"]:
            label += " (without dependencies)"
        label += f" [{s['protocol']}]"
        if s["group"]:
            label += f" {{group {s['group'].rsplit('.', 1)[-1]}}}"
        labels[sid] = label
    renderer = {"text": render_text, "mermaid": render_mermaid, "dot": render_dot}[fmt]
    return renderer(episodes, plan["parent_map"], labels), result
