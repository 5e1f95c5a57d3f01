"""benchpack.runtime: interprets compiled plans against agents. Reads plans only, never YAML,
and never imports benchpack.compiler."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .planfile import PlanError, load_plan

__all__ = ["PlanError", "load_plan"]


def __getattr__(name: str) -> Any:
    # the plan reader (pydantic models, JSON Schema) loads on first use, so light modules of the
    # runtime (secret redaction in every `bench` command) cost nothing at start-up
    if name in __all__:
        from . import planfile

        return getattr(planfile, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
