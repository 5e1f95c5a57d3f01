"""Protocol registry of the pack language: one module per protocol, same name as its compiler
step (`benchpack.compiler.protocols.<name>`) and its runtime interpreter
(`benchpack.runtime.protocols.<name>`).

A protocol module holds the author-facing models of its session material and declares
`NAME` and `SESSION_FIELDS` (the `Session` keys it owns). Adding a protocol: write the module,
list it in `_MODULES` below, add its keys to `Session` in `pack.py`.
"""

from __future__ import annotations

from types import ModuleType

from . import (
    instructed_user,
    intent_tracking,
    staged_disclosure,
    trigger_rubric,
    verified_outcome,
)

_MODULES: tuple[ModuleType, ...] = (intent_tracking, staged_disclosure, trigger_rubric,
                                    verified_outcome, instructed_user)

PROTOCOLS: tuple[str, ...] = tuple(m.NAME for m in _MODULES)
"""Protocol names, in the order the JSON Schema lists them."""
SESSION_FIELDS: dict[str, tuple[str, ...]] = {m.NAME: m.SESSION_FIELDS for m in _MODULES}
"""Protocol name → the session keys that belong to it."""
