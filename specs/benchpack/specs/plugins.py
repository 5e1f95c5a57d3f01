"""Protocols installed as plug-ins: the `benchpack.protocols` entry-point group (issue 30).

A built-in protocol is a module in each stage's `protocols/` folder; a plug-in protocol is a
package outside the source tree that names one object in this group, under the protocol's name:

    [benchpack.protocols]
    echo_check = my_package.echo_check:PLUGIN

The object answers one call per stage, each importing only what that stage needs, so that
validating a pack never imports the runtime and `bench query` never imports the compiler:

- `material()` → the pydantic model of its session material: the session keys a pack gives a
  session of this protocol besides the shared ones (`id`, `request`, `checklist`…). The pack
  model lets them through for such a session and the compiler validates them with this model,
  so its mistakes are `file:line:col: message (hint)` like any other; they reach the plan as
  the session's `material`.
- `compiler()` → its `benchpack.compiler.protocols.ProtocolCompiler` (its `material` step gets
  the session with `session.material` the validated model's instance; what it returns is
  written under the plan session's `material`).
- `interpreter()` → its runtime interpreter (`benchpack.runtime.protocols.base`); its metrics
  go to `sessions.extra` (it has no column of its own: `metric_columns` stays empty).
- `reports()` → its `benchpack.reports.protocols.ProtocolReports` (views, reports, compare
  units, and the `metrics` the run summary shows).

Entry points are read once per process, and only when something asks for a protocol that is
not built in (a built-in pack, plan or store never reads them); a plug-in named like a
built-in is ignored (the built-in wins), and so is one named outside `NAME_PATTERN`.
The JSON Schemas in `schemas/` describe the built-in protocols only: a plug-in's keys are
checked by its own model at compile time, not by an editor.
"""

from __future__ import annotations

from functools import cache
from typing import Any

GROUP = "benchpack.protocols"


class PluginError(Exception):
    """A protocol plug-in that cannot be used (it fails to import, lacks a stage, returns the
    wrong object): the installed package's fault, neither the pack's nor benchpack's; the CLI
    prints it as one `✗` line and exits 1."""


NAME_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
"""What a plug-in protocol may be called (as the built-in ones are): the reports quote the
name into SQL, so it holds no quote, space or dot."""


@cache
def plugin_entry_points() -> dict[str, Any]:
    """Protocol name → its entry point, for every installed plug-in (built-in names, and
    names outside `NAME_PATTERN`, skipped)."""
    import re
    from importlib.metadata import entry_points

    from .protocols import PROTOCOLS

    return {ep.name: ep for ep in entry_points(group=GROUP)
            if ep.name not in PROTOCOLS and re.fullmatch(NAME_PATTERN, ep.name)}


def plugin_names() -> tuple[str, ...]:
    """The installed plug-in protocols, sorted."""
    return tuple(sorted(plugin_entry_points()))


def is_plugin(name: object) -> bool:
    from .protocols import PROTOCOLS

    return isinstance(name, str) and name not in PROTOCOLS and name in plugin_entry_points()


@cache
def plugin(name: str) -> Any:
    """The plug-in object of protocol `name` (its entry point, loaded once)."""
    ep = plugin_entry_points().get(name)
    if ep is None:
        raise LookupError(f"no protocol plug-in `{name}` is installed (group {GROUP})")
    try:
        obj = ep.load()
    except Exception as exc:  # whatever its import raises, it is the plug-in's
        raise PluginError(f"protocol plug-in `{name}` ({ep.value}) failed to load: "
                          f"{type(exc).__name__}: {exc} (hint: fix or reinstall the package "
                          "that provides it)") from exc
    for stage in ("material", "compiler", "interpreter", "reports"):
        if not callable(getattr(obj, stage, None)):
            raise PluginError(f"protocol plug-in `{name}` ({ep.value}) has no `{stage}()`")
    return obj


@cache
def material_model(name: str) -> Any:
    """The pydantic model of plug-in `name`'s session material."""
    from pydantic import BaseModel

    model = plugin(name).material()
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise PluginError(f"protocol plug-in `{name}`: material() must return a pydantic "
                          f"model class, not {model!r}")
    return model


def consulted() -> bool:
    """Whether this process has read the entry points (a pack named a protocol that is not
    built in): only then can a compiled plan depend on what is installed."""
    return plugin_entry_points.cache_info().currsize > 0


def installed_identity() -> dict[str, str]:
    """Each installed plug-in's entry point and a sha256 over its package's Python files:
    what a cached compile must find unchanged (installing, removing or editing a plug-in
    changes what a pack using it compiles to)."""
    import hashlib
    from importlib.util import find_spec
    from pathlib import Path

    out = {}
    for name, ep in sorted(plugin_entry_points().items()):
        digest = hashlib.sha256(ep.value.encode())
        spec = find_spec(ep.value.split(":")[0].split(".")[0])
        places = list(spec.submodule_search_locations or []) if spec else []
        files = sorted(f for d in places for f in Path(d).rglob("*.py"))
        if spec and spec.origin and not places:
            files = [Path(spec.origin)]
        for f in files:
            digest.update(f"{f.name}\0".encode() + f.read_bytes())
        out[name] = digest.hexdigest()
    return out


__all__ = ["GROUP", "PluginError", "consulted", "installed_identity", "is_plugin", "material_model", "plugin", "plugin_entry_points",
           "plugin_names"]
