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
    specs: tools/shop.specs.json   # optional: {function: {description, parameters}} as offered
    check_arguments: true     # JSON-Schema check of the arguments before each call
    atomic: true              # a call that raises changes nothing
    plain_errors: false       # an exception's tool error text: `Type: message (line N of file)`
    services: []              # further services whose tables the same `State` holds
    after_call: null          # a function run after every successful call (`fn(state)`)
environments:
  - id: store
    toolsets: [tools/shop.py] # the module as written, or the toolset's `name`
```
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import FIELD_DOCS, ID_PATTERN, Spec

PY_MODULE_PATTERN = r"^[^:\x00]+\.py$"
JSON_FILE_PATTERN = r"^[^:\x00]+\.json$"
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
    specs: Annotated[str, Field(pattern=JSON_FILE_PATTERN)] | None = None
    """A JSON file, relative to the declaring YAML file, `{function: {"description": …,
    "parameters": {JSON Schema object}}}`: exactly what the agent is offered for each function
    it names, instead of the description and schema derived from the docstring and type hints
    (a released benchmark's own tool definitions, e.g. `bench import tau2 --tau2`). It may
    name only public functions of the module."""
    check_arguments: bool = True
    """Check each call's arguments against the tool's JSON Schema before calling (a mismatch is
    the call's error and the function does not run). `false`: the function receives whatever
    the agent sent, and fails with its own errors (τ²-bench validates nothing)."""
    atomic: bool = True
    """A call that raises changes nothing. `false`: the changes it made before raising stay
    (applied, and checked against the row schemas, like a success's), as with tools that
    change their database in place (τ²-bench)."""
    plain_errors: bool = False
    """An exception other than `ToolError` is shown to the agent as `Type: message (line N of
    file)`. `true`: the tool error text of every exception is `str(exc)` alone (what τ²-bench
    shows after its `Error: `)."""


    services: list[str] = Field(default_factory=list)
    """Further services whose tables the same `State` also holds (read and changed), for tools
    that work across several services, such as a customer's phone and the operator's
    database. Needs `service`; table names must be distinct across them. An environment
    offering the toolset gets these services too."""
    after_call: str | None = None
    """A public function of the module (not offered as a tool), `fn(state)`, run after every
    successful call of the toolset, in the same call (its changes are the call's): keeps
    derived state in step across services, as τ²-bench's `sync_tools` does. It also runs once
    before a session's `initial_state` is applied and once after it."""


class _PlanModel(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=FIELD_DOCS,
                              defer_build=True)  # see `base.Spec`


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
    check_arguments: bool = True
    """`Toolset.check_arguments` (written to the plan only when `false`)."""
    atomic: bool = True
    """`Toolset.atomic` (written to the plan only when `false`)."""
    plain_errors: bool = False
    """`Toolset.plain_errors` (written to the plan only when `true`)."""
    services: list[str] = Field(default_factory=list)
    """`Toolset.services` (written to the plan only when there are some)."""
    after_call: str | None = None
    """`Toolset.after_call` (written to the plan only when set)."""
