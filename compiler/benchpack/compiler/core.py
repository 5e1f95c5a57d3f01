"""The builder's shared state and helpers: diagnostics at authored places, pack file reads,
symbol tables and references, rendering (phase 1: symbols).

`Builder` (build.py) is assembled from this core, the world steps (world.py), the check steps
(checks.py) and one compile step per protocol (protocols/<name>.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from benchpack.specs import pack as P

from .diagnostics import CODES, LINT_CODES, Diagnostics, Fix, PathPart, suggest_fix
from .literal import is_literal
from .loader import (
    MAX_DATA_BYTES,
    LoadedPack,
    SourceFile,
    inside,
    near_file,
    pack_relative,
    path_problem,
)
from .render import RenderError, render
from .validate import Salvage, node_at

Loc = tuple[SourceFile, tuple[PathPart, ...]]

DEFAULT_ENV = "default"


@dataclass
class CompileOptions:
    ablation: bool = False
    """Also emit the without-dependencies variant of every dependency group's final session."""
    strict: bool = False
    """Treat warnings as errors."""
    vars: tuple[tuple[str, str], ...] = ()
    """`--var NAME=VALUE` overrides of the pack's `vars:` (e.g. a knowledge base's retrieval
    configuration chosen per run)."""


@dataclass
class Built:
    plan: dict[str, Any]
    order: list[str]


@dataclass
class Item:
    obj: Any
    src: SourceFile
    path: tuple[PathPart, ...]


@dataclass
class SessionDraft:
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


class BuilderCore:
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
        if options.vars:
            self.pack.vars.update(dict(options.vars))
        self.pack_src = models[0][0]
        self.models = models
        self.personas: dict[str, Item] = {}
        self.tools: dict[str, Item] = {}
        self.services: dict[str, Item] = {}
        self.streams: dict[str, Item] = {}
        self.corpora: dict[str, Item] = {}
        self.environments: dict[str, Item] = {}
        self.episodes: dict[str, Item] = {}
        self.plan_tools: dict[str, dict[str, Any]] = {}
        self.tool_origin: dict[str, str] = {}
        self.plan_envs: dict[str, dict[str, Any]] = {}
        self.plan_personas: dict[str, dict[str, Any]] = {}
        self.plan_services: dict[str, dict[str, Any]] = {}
        self.plan_streams: dict[str, dict[str, Any]] = {}
        self.plan_corpora: dict[str, dict[str, Any]] = {}
        self.read_tools: set[str] = set()
        # python toolsets (toolsets.py)
        self.toolsets: dict[str, Item] = {}
        self.plan_toolsets: dict[str, dict[str, Any]] = {}
        self.toolset_tools: dict[str, list[str]] = {}
        """Toolset → the plan tools it contributed."""
        # knowledge bases (knowledge.py, issue 24)
        self.knowledge: dict[str, Item] = {}
        self.plan_knowledge: dict[str, dict[str, Any]] = {}
        self.knowledge_retrieval: dict[str, str] = {}
        self.knowledge_tools: dict[str, list[str]] = {}
        self.knowledge_unresolved: set[str] = set()
        self.knowledge_shadows: dict[str, str] = {}
        """A built-in's name → the knowledge base whose tool took it (`tools.grep.name: grep`)."""
        """Environments naming an unknown knowledge base (already reported)."""
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

    def collect(self, table: dict[str, Item], key: str, obj: Any, src: SourceFile,
                path: tuple[PathPart, ...], what: str) -> None:
        if key in table:
            first = table[key]
            self.err("E201", f"{what} `{key}` is defined twice (first in {first.src.shown})",
                     (src, path), ("id" if hasattr(obj, "id") else "name",),
                     "ids must be unique across the pack")
            return
        table[key] = Item(obj, src, path)

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
        from .toolsets import collect_toolsets
        collect_toolsets(self)  # type: ignore[arg-type]
        from .knowledge import collect_knowledge
        collect_knowledge(self)  # type: ignore[arg-type]

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
