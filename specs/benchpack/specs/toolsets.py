"""Python toolsets (issue 12, section 1): a pack module whose public functions are tools.

The user-written shape (`toolsets:` at pack level, referenced from `environments[].toolsets`)
and the compiled one (`Plan.toolsets`, and the `python_tool` implementation of each derived
plan tool). The compiler reads the module with `pytools.read_tools` (never imports it); the
runtime runs it in the sandboxed tool worker (`runtime/env/pytools.py`).

```yaml
toolsets:
  - module: tools/shop.py     # relative to the declaring YAML file
    service: shop             # the tables the functions read and change (`State`)
    prefix: ""                # tool names = prefix + function name
    include: [get_order_details, cancel_pending_order]
environments:
  - id: store
    toolsets: [tools/shop.py] # the module as written, or the toolset's `name`
```
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import ID_PATTERN, Spec

PY_MODULE_PATTERN = r"^[^:\x00]+\.py$"
PREFIX_PATTERN = r"^([A-Za-z_][A-Za-z0-9_-]{0,31})?$"


class Toolset(Spec):
    """A Python module whose public top-level functions are tools with state. Needs
    `--allow-python` at run time (the module runs in the bubblewrap sandbox)."""

    module: Annotated[str, Field(pattern=PY_MODULE_PATTERN)]
    """The `.py` file, relative to the declaring YAML file. It is read (never imported) at
    compile time: type hints become the tools' JSON Schemas, docstrings their descriptions."""
    name: Annotated[str, Field(pattern=ID_PATTERN)] | None = None
    """What environments call it (default: `module` as written)."""
    service: str | None = None
    """The declarative service whose tables the functions receive as `State` (read and
    changed); an environment offering the toolset gets this service's state."""
    prefix: Annotated[str, Field(pattern=PREFIX_PATTERN)] = ""
    """Tool names are `prefix` + the function's name."""
    include: list[str] | None = None
    """Only these functions become tools (default: every public function)."""
    read_only: list[str] | None = None
    """Functions that only read the state (`effect: read`; grounding checks compare replies
    with read results). Default: a function is `read` when its `State` parameter is only
    used for `get`, `find`, `rows` and `next_id`, `write` otherwise."""


class _PlanModel(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class PyToolImpl(_PlanModel):
    """Compiled only (never written in a pack): a tool served by a function of a toolset."""

    kind: Literal["python_tool"]
    toolset: str
    """Key of `Plan.toolsets`."""
    function: str
    """The function's name in the module."""
    state_param: str | None = None
    """The parameter that receives the `State`."""
    sha256: str
    """Of the module source, so the fingerprint of every session offering the tool moves
    when the module changes."""


class PlanToolset(_PlanModel):
    name: str
    file: str
    """The module, relative to the pack root (shown in errors)."""
    service: str | None = None
    source: str
    """The module's source, embedded (the runtime never reads pack files)."""
    sha256: str
