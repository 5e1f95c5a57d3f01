"""What an agent works in: tools and their implementations, services, event streams,
workspace files, corpora, environments."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from .base import (
    DURATION_PATTERN,
    PYTHON_ENTRY_PATTERN,
    TOOL_NAME_PATTERN,
    Id,
    Spec,
    Timestamp,
    ToolName,
)
from .discoverable import Discoverable

# HTTP services and tools (issue 12, section 2): their models live in services.py
from .services import HttpImpl, ProcessService

BuiltinToolName = Literal[
    "read_file",
    "write_file",
    "edit_file",
    "list_files",
    "glob",
    "grep",
    "ask_user",
    "send_message",
    "shell",
]
"""`shell` is opt-in: never among the defaults (`BUILTIN_TOOLS`), and it needs --allow-python."""
BUILTIN_TOOLS: tuple[str, ...] = (
    "read_file",
    "write_file",
    "edit_file",
    "list_files",
    "glob",
    "grep",
    "ask_user",
    "send_message",
)


# --------------------------------------------------------------------------- environment


class BuiltinImpl(Spec):
    """A built-in tool implemented by the runtime."""

    kind: Literal["builtin"]
    name: BuiltinToolName
    """Which built-in tool."""


class ServiceImpl(Spec):
    """A tool backed by an operation of a declarative service."""

    kind: Literal["service"]
    service: str
    """Service name."""
    operation: str
    """Operation name within the service."""


class CorpusImpl(Spec):
    """A tool backed by an offline document corpus (search tasks run without the internet)."""

    kind: Literal["corpus"]
    corpus: str
    """Corpus name."""
    operation: Literal["search", "visit"]
    """`search` returns ranked snippets for a query; `visit` returns documents by URL or id."""


class StreamImpl(Spec):
    """A tool that reads an event stream (with optional time window, source and text filters)."""

    kind: Literal["stream"]
    stream: str
    """Event stream name."""


class StaticImpl(Spec):
    """A tool that always returns the same result (useful for stubs of external systems)."""

    kind: Literal["static"]
    result: Any = None
    """The value returned to the agent."""


class PythonImpl(Spec):
    """A tool implemented by a Python function in the pack: `function(args)` (or
    `function(args, context)` with `{"files", "state", "clock"}`) returns a JSON value. Runs
    only with `--allow-python`, in an isolated subprocess with time and memory limits; it cannot
    change the workspace or services."""

    kind: Literal["python"]
    entry: str = Field(pattern=PYTHON_ENTRY_PATTERN)
    """`path/to/file.py:function`, relative to the YAML file that declares the tool."""


ToolImpl = Annotated[
    BuiltinImpl | ServiceImpl | CorpusImpl | StreamImpl | StaticImpl | PythonImpl | HttpImpl,
    Field(discriminator="kind"),
]


class Tool(Spec):
    """A tool the agent can call."""

    name: ToolName
    """Name the agent sees."""
    description: str
    """What the tool does, as shown to the agent."""
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    """JSON Schema of the arguments (an object schema). Calls are validated against it."""
    impl: ToolImpl
    """How the runtime implements the tool."""
    group: str | None = None
    """Device or interface group (e.g. `phone-gui`, `laptop-cli`), for reports."""
    effect: Literal["read", "write"] = "read"
    """`read` tools observe the world; `write` tools change it. Grounding checks compare the
    agent's reply with results of read tools."""


class Table(Spec):
    """A table of a declarative service: fixture rows the operations read and change."""

    key: str = "id"
    """Primary-key field."""
    id_prefix: str | None = None
    """Prefix for keys of created rows, e.g. `TASK-` gives `TASK-1`, `TASK-2`…"""
    row_schema: dict[str, Any] | None = None
    """JSON Schema of a row; created and updated rows are validated against it."""
    rows: list[dict[str, Any]] = Field(default_factory=list)
    """Fixture rows, inline."""
    fixture: str | None = None
    """Fixture file (JSON list, JSONL or CSV), relative to the declaring YAML file. Rows from
    the file come after inline rows."""


class Operation(Spec):
    """An operation of a service, exposed to the agent as the tool `<service>__<name>`."""

    name: Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]
    """Operation name."""
    kind: Literal["list", "get", "search", "create", "update", "delete"]
    """`list` rows (equality filters), `get` one by key, `search` by text, `create`, `update`
    or `delete` a row."""
    table: str
    """Table the operation works on."""
    description: str | None = None
    """Description shown to the agent (a sensible one is generated when omitted)."""
    filter_fields: list[str] = Field(default_factory=list)
    """`list`: fields the agent may filter on by equality."""
    search_fields: list[str] = Field(default_factory=list)
    """`search`: fields matched against the query text (all string fields when empty)."""
    fields: list[str] | None = None
    """`create`/`update`: fields the agent may set (all schema fields when omitted)."""
    required: list[str] = Field(default_factory=list)
    """`create`: fields that must be given."""
    tool_name: ToolName | None = None
    """Override the tool name (default `<service>__<operation>`)."""


class Service(Spec):
    """A stateful service: simulated over fixture tables (to-do list, mailbox, CRM…), or a
    process of the pack serving HTTP (`process:`, whose tools are `impl: {kind: http}`)."""

    name: ToolName
    """Service name; prefixes its tools."""
    description: str | None = None
    """What the service is, for the agent and for reports."""
    tables: dict[str, Table] = Field(default_factory=dict)
    """Tables by name (a declarative service; not with `process`)."""
    operations: list[Operation] = Field(default_factory=list)
    """Operations, each exposed as a tool."""
    group: str | None = None
    """Device or interface group its tools belong to."""
    # ---- HTTP services (issue 12, section 2)
    process: ProcessService | None = None
    """A process serving HTTP instead of tables (needs `bench run --allow-python`); its tools
    are pack tools with `impl: {kind: http, service: <name>}`."""


class Event(Spec):
    """One timestamped activity record."""

    at: Timestamp
    """When it happened (ISO 8601)."""
    source: str
    """Service, device or app that recorded it."""
    action: str
    """What happened, e.g. `open_message`, `send_reply`."""
    ref: str | None = None
    """Identifier of the affected record, e.g. `MSG-5024`."""
    text: str | None = None
    """Free-text detail."""
    data: dict[str, Any] = Field(default_factory=dict)
    """Structured detail."""
    noise: bool = False
    """Author annotation: irrelevant to every task. Never shown to the agent."""
    conflicts_with: str | None = None
    """Author annotation: `ref` of an event this one contradicts. Never shown to the agent."""


class EventStream(Spec):
    """A long activity log the agent can read through a tool `<name>__read`."""

    name: ToolName
    """Stream name."""
    description: str | None = None
    """What the stream records."""
    events: list[Event] = Field(default_factory=list)
    """Events, inline."""
    file: str | None = None
    """Events from a JSONL or CSV file (columns at, source, action, ref, text)."""
    tool: bool = True
    """Expose the `<name>__read` tool to the agent."""


class Heartbeat(Spec):
    """Periodic wake-ups of an always-on agent with no user message."""

    every: Annotated[str, Field(pattern=DURATION_PATTERN)]
    """Interval, e.g. `30m`, `2h`, `1d`."""
    start: Timestamp | None = None
    """Time of the first beat (default: the environment clock)."""
    beats: int = Field(default=1, ge=1, le=1000)
    """How many beats a heartbeat-triggered session receives."""
    message: str | None = None
    """Optional system text delivered with each beat (Jinja)."""


class WorkspaceFile(Spec):
    """A file placed in the episode workspace before its first session."""

    path: str
    """Path inside the workspace (relative, no `..`)."""
    source: str | None = None
    """File in the pack to copy, relative to the declaring YAML file."""
    content: str | None = None
    """Inline content (Jinja)."""

    @field_validator("path")
    @classmethod
    def _relative(cls, v: str) -> str:
        parts = v.replace("\\", "/").split("/")
        if (v.startswith("/") or ".." in parts or v.strip() == "" or re.match(r"^[A-Za-z]:", v)
                or "\x00" in v):
            raise ValueError("workspace paths must be relative and stay inside the workspace")
        return v

    @model_validator(mode="after")
    def _one_source(self) -> WorkspaceFile:
        if (self.source is None) == (self.content is None):
            raise ValueError("give exactly one of `source` or `content`")
        return self


class Document(Spec):
    """A document of an offline corpus."""

    id: str
    """Stable identifier."""
    title: str
    """Title returned in search results."""
    url: str | None = None
    """URL the agent can `visit`."""
    text: str
    """Full text."""
    published: Timestamp | None = None
    """Publication date, when known."""


class Corpus(Spec):
    """An offline document collection standing in for the web or a library."""

    name: ToolName
    """Corpus name."""
    description: str | None = None
    """What the corpus contains."""
    documents: list[Document] = Field(default_factory=list)
    """Documents, inline."""
    file: str | None = None
    """Documents from a JSONL file (fields id, title, url, text)."""


class PolicyFile(Spec):
    """A policy kept in its own file (Markdown or plain text)."""

    file: str
    """Path of the policy, relative to the YAML file that names it."""
    literal: bool = False
    """Take the file verbatim instead of rendering it as Jinja (imported policies often
    contain `{{`)."""


class Environment(Spec):
    """The world an episode runs in: workspace, tools, services, event streams, clock."""

    id: Id
    """Identifier used by episodes (`environment: <id>`)."""
    description: str | None = None
    """What this environment represents."""
    clock: Timestamp | None = None
    """Simulated current time at the start of the episode."""
    files: list[WorkspaceFile] = Field(default_factory=list)
    """Workspace files, persisted across the episode's sessions."""
    builtin_tools: list[BuiltinToolName] | None = None
    """Built-in tools offered (default: all of them)."""
    tools: list[str] = Field(default_factory=list)
    """Pack tools offered, by name."""
    services: list[str] = Field(default_factory=list)
    """Services available; their operations become tools."""
    event_streams: list[str] = Field(default_factory=list)
    """Event streams available to the agent."""
    heartbeat: Heartbeat | None = None
    """Heartbeat schedule for proactive sessions."""
    # --- python toolsets (issue 12, section 1)
    toolsets: list[str] = Field(default_factory=list)
    """Python toolsets offered, by `name` (default: the `module` path as written); their
    functions become tools and their service's state is part of the environment."""
    knowledge: list[str] = Field(default_factory=list)
    """Knowledge bases available, by name; each one's `retrieval` says how (issue 24)."""
    discoverable: Discoverable | None = None
    """Tools offered only once the agent unlocks them during the session (issue 24)."""
    user_toolsets: list[str] = Field(default_factory=list)
    """Python toolsets the simulated user gets (dual control, τ²'s user tools), by `name` or
    module: their functions are the user's tools (never offered to the agent) and their
    service is the user's own state (in the state check, beside the agent's)."""
    state_ignores: list[str] = Field(default_factory=list)
    """Tables the `state` reward component leaves out of its comparison, as `service.table`
    (of either side's services): bookkeeping a reference benchmark keeps outside its state
    hash, e.g. `[banking.unlocked_agent_tools]` (τ² keeps agent unlocks in memory). They are
    still recorded (episode snapshots, `tool_calls`) and rules reading `state:` still see
    them; the run summary and `bench report explain` name them beside the state result."""
    policy: str | PolicyFile | None = None
    """The agent's system prompt / domain policy (τ²-bench's `policy.md`), inline (Jinja; tag
    it `!literal` to keep braces) or `{file: policy.md}`. Every agent adapter shows it as the
    system prompt, instead of benchpack's generic assistant prompt."""
