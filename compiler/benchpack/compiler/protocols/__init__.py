"""Protocol compile steps: one module per protocol, the same name as its pack-language models
(`benchpack.specs.protocols.<name>`) and its runtime interpreter
(`benchpack.runtime.protocols.<name>`). Each module defines `COMPILER`
(a `ProtocolCompiler`); the `Builder` consults `PROTOCOL_COMPILERS` for default limits, the
opening request, the session's plan material and checks that need the episode order.

A protocol installed as a plug-in (`benchpack.specs.plugins`) brings its `ProtocolCompiler`
from outside the tree: `protocol_compiler` and `session_compilers` find it, and its plan keys
go under the session's `material` (the plan model knows no key of its own for it)."""

from __future__ import annotations

from functools import cache

from benchpack.specs.plugins import PluginError, plugin
from benchpack.specs.protocols import SESSION_FIELDS

from . import (
    instructed_user,
    intent_tracking,
    staged_disclosure,
    trigger_rubric,
    verified_outcome,
)
from .base import ProtocolCompiler

PROTOCOL_COMPILERS: dict[str, ProtocolCompiler] = {
    c.name: c for c in (intent_tracking.COMPILER, staged_disclosure.COMPILER,
                        trigger_rubric.COMPILER, verified_outcome.COMPILER,
                        instructed_user.COMPILER)
}

SESSION_FIELD_OWNERS: dict[str, tuple[str, ...]] = {
    key: tuple(name for name, keys in SESSION_FIELDS.items() if key in keys)
    for key in dict.fromkeys(k for keys in SESSION_FIELDS.values() for k in keys)}
"""Session key → the protocols it belongs to (`score:` serves verified_outcome and
instructed_user alike)."""

SESSION_KEY_ORDER: tuple[str, ...] = (
    "hidden_intents", "stages", "scenario", "triggers", "dialogue", "checklist", "graph", "verify")
"""Where the existing protocols' keys sit in a compiled session (plans are written in insertion
order and must stay byte for byte); a new protocol's keys follow them."""



def protocol_compiler(name: str) -> ProtocolCompiler:
    """The compile step of protocol `name`, built in or installed as a plug-in."""
    found = PROTOCOL_COMPILERS.get(name)
    return found if found is not None else plugin_compiler(name)


@cache
def plugin_compiler(name: str) -> ProtocolCompiler:
    compiler = plugin(name).compiler()
    if not isinstance(compiler, ProtocolCompiler) or compiler.name != name:
        raise PluginError(f"protocol plug-in `{name}`: compiler() must return a ProtocolCompiler "
                        f"named `{name}`")
    return compiler


def session_compilers(protocol: str) -> tuple[ProtocolCompiler, ...]:
    """The compile steps whose `material` and `plan_check` see a session of `protocol`: every
    built-in one (a foreign key's own mistakes still show), plus its plug-in's."""
    builtin = tuple(PROTOCOL_COMPILERS.values())
    return builtin if protocol in PROTOCOL_COMPILERS else (*builtin, plugin_compiler(protocol))


__all__ = ["PROTOCOL_COMPILERS", "SESSION_FIELD_OWNERS", "SESSION_KEY_ORDER", "ProtocolCompiler", "plugin_compiler",
           "protocol_compiler", "session_compilers"]
