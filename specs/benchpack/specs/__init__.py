"""benchpack.specs: the pack language and the compiled plan, as pydantic models.

Everything else (compiler, runtime, reports) imports from here; this package imports nothing
from them.
"""

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
