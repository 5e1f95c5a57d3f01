"""benchpack.specs: the pack language and the compiled plan, as pydantic models.

Everything else (compiler, runtime, reports) imports from here; this package imports nothing
from them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .pack import (
        BUILTIN_TOOLS,
        COHERENT_STYLES,
        LANGUAGE_VERSION,
        PROMPT_NAMES,
        PROTOCOLS,
        STYLE_TRAITS,
        Fragment,
        Pack,
        normalise_style,
    )
    from .plan import PLAN_SCHEMA_ID, PLAN_VERSION, Plan
    from .schema import json_schemas

# name → submodule: the models (pydantic) load on first use, so light modules of this package
# (store-file checks, text, regex) cost `bench query` nothing
_WHERE = {
    **dict.fromkeys(("BUILTIN_TOOLS", "COHERENT_STYLES", "LANGUAGE_VERSION", "PROMPT_NAMES",
                     "PROTOCOLS", "STYLE_TRAITS", "Fragment", "Pack", "normalise_style"), "pack"),
    **dict.fromkeys(("PLAN_SCHEMA_ID", "PLAN_VERSION", "Plan"), "plan"),
    "json_schemas": "schema",
}

__all__ = [
    "BUILTIN_TOOLS",
    "COHERENT_STYLES",
    "LANGUAGE_VERSION",
    "PLAN_SCHEMA_ID",
    "PLAN_VERSION",
    "PROMPT_NAMES",
    "PROTOCOLS",
    "STYLE_TRAITS",
    "Fragment",
    "Pack",
    "Plan",
    "json_schemas",
    "normalise_style",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
