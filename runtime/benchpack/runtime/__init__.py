"""benchpack.runtime: interprets compiled plans against agents. Reads plans only, never YAML,
and never imports benchpack.compiler."""

from .planfile import PlanError, load_plan

__all__ = ["PlanError", "load_plan"]
