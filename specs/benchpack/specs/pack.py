"""The pack language: what a pack author writes in YAML.

These pydantic models are the single source of truth. `schemas/pack.schema.json` and
`schemas/fragment.schema.json` are generated from them (field docstrings become the
descriptions editors show), and the compiler validates every file against them.
Text fields marked "(Jinja)" may use `{{ … }}` expressions; they are rendered at compile time in
a sandbox with the pack's `vars`, the persona, the episode and the session in scope.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

LANGUAGE_VERSION = 1

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$"
NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
TOOL_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"
STYLE_PATTERN = r"^(NONE|[EPVQMI](\+{1,2}[EPVQMI]){0,5})$"
DURATION_PATTERN = r"^[1-9][0-9]{0,5}(s|m|h|d)$"
PYTHON_ENTRY_PATTERN = r"^[^:]+\.py:[A-Za-z_][A-Za-z0-9_]*$"
LINT_CODE_PATTERN = r"^W[0-9]{3}$"

Id = Annotated[str, Field(pattern=ID_PATTERN)]
ToolName = Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]
StyleCode = Annotated[str, Field(pattern=STYLE_PATTERN)]
Timestamp = datetime | date | str

Protocol = Literal["intent_tracking", "staged_disclosure", "trigger_rubric", "verified_outcome"]
PROTOCOLS: tuple[str, ...] = (
    "intent_tracking",
    "staged_disclosure",
    "trigger_rubric",
    "verified_outcome",
)

BuiltinToolName = Literal[
    "read_file",
    "write_file",
    "edit_file",
    "list_files",
    "glob",
    "grep",
    "ask_user",
    "send_message",
]
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

PromptName = Literal[
    "intent_tracking.completion_check",
    "intent_tracking.clarification_check",
    "intent_tracking.user_turn",
    "staged_disclosure.user",
    "staged_disclosure.extract_graph",
    "staged_disclosure.graph_judge",
    "trigger_rubric.planner",
    "trigger_rubric.user",
    "trigger_rubric.judge",
    "checklist.rubric_judge",
    "verified_outcome.rubric_judge",
    "heartbeat.wake",
]
PROMPT_NAMES: tuple[str, ...] = PromptName.__args__  # type: ignore[attr-defined]

# Communication style traits (Communication Styles Inventory), letter -> name.
STYLE_TRAITS: dict[str, str] = {
    "E": "expressiveness",
    "P": "preciseness",
    "V": "verbal_aggressiveness",
    "Q": "questioningness",
    "M": "emotionality",
    "I": "impression_manipulativeness",
}
TRAIT_ORDER = "EPVQMI"

# The 24 trait combinations that stay natural and distinguishable in short dialogues
# (ProactBench appendix C). Others combine conflicting registers: P with E, V or M.
COHERENT_STYLES: tuple[str, ...] = (
    "NONE", "I", "M", "Q", "Q+I", "Q+M", "V", "V+M", "V+Q", "V+Q+M",
    "P", "P+I", "P+Q", "P+Q+I",
    "E", "E+I", "E+M", "E+Q", "E+Q+I", "E+Q+M", "E+V", "E+V+M", "E+V+Q", "E+V+Q+M",
)  # fmt: skip


def normalise_style(code: str) -> str:
    """Canonical form of a style code: trait letters in E,P,V,Q,M,I order joined by '+'."""
    if code == "NONE":
        return code
    letters = {c for c in re.split(r"\++", code) if c}
    return "+".join(c for c in TRAIT_ORDER if c in letters) or "NONE"


class Spec(BaseModel):
    """Base of every pack-language model: unknown keys are errors, docstrings document fields."""

    model_config = ConfigDict(
        extra="forbid",
        use_attribute_docstrings=True,
        populate_by_name=True,
        str_strip_whitespace=False,
    )


# --------------------------------------------------------------------------- metadata, defaults


class Metadata(Spec):
    """Descriptive labels used to slice reports. Sessions inherit unset fields from their
    episode, episodes from the pack."""

    category: str | None = None
    """Task category or workflow type, e.g. `crisis-communication` or `game-selection`."""
    domain: str | None = None
    """User domain, e.g. `pharmacy`, `law`, `marketing`."""
    difficulty: Literal["easy", "medium", "hard"] | None = None
    """Author's difficulty estimate."""
    language: str | None = None
    """Language of the user-facing text (BCP-47 code such as `en` or `zh`)."""
    tags: list[str] = Field(default_factory=list)
    """Free labels; they never change outcomes and stay out of fingerprints."""


class Models(Spec):
    """Default model for each role, as `litellm:<model>`, `rules` (deterministic, offline) or
    another adapter URI. `bench run` flags override these."""

    agent: str | None = None
    """The agent under evaluation (normally chosen on the command line)."""
    simulator: str | None = None
    """The user simulator (intent tracking, staged disclosure, trigger-rubric user agent)."""
    planner: str | None = None
    """The trigger-rubric planner (live mode)."""
    judge: str | None = None
    """Judges: intent status checks, rubric checklist items, graph coverage, trigger scores."""


class Limits(Spec):
    """Budgets that end a session. Unset values fall back to the pack defaults, then to the
    protocol's built-in defaults."""

    max_turns: int | None = Field(default=None, ge=1, le=200)
    """Maximum number of user turns (rounds) before the session ends with `turn_budget`."""
    max_steps_per_turn: int | None = Field(default=None, ge=1, le=500)
    """Maximum agent steps (model calls) while answering one user turn."""
    turn_timeout_s: float | None = Field(default=None, gt=0, le=86400)
    """Wall-clock limit for one agent turn, in seconds."""


class Defaults(Spec):
    """Pack-wide defaults."""

    models: Models = Field(default_factory=Models)
    """Default models per role."""
    limits: Limits = Field(default_factory=Limits)
    """Default budgets."""
    seed: int = 0
    """Base random seed passed to simulators and the agent where the provider supports it."""
    repeats: int = Field(default=1, ge=1, le=100)
    """How many times `bench run` repeats each session by default (pass@k needs k repeats)."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature for the agent, when set."""


class PromptFile(Spec):
    """A prompt template kept in its own file."""

    file: str
    """Path of a Jinja template, relative to the YAML file that names it."""


# --------------------------------------------------------------------------- personas


class CommunicationStyle(Spec):
    """How the simulated user writes. Six binary traits from the Communication Styles Inventory:
    E expressiveness, P preciseness, V verbal aggressiveness, Q questioningness, M emotionality,
    I impression manipulativeness. Styles with E are chatty (40–100 words a message), others
    terse (5–25 words)."""

    code: StyleCode = "NONE"
    """Trait letters joined by `+`, e.g. `E+Q+M`, or `NONE` for a neutral style."""
    min_words: int | None = Field(default=None, ge=1, le=1000)
    """Override the lower word bound of the length rule."""
    max_words: int | None = Field(default=None, ge=1, le=2000)
    """Override the upper word bound of the length rule."""
    directives: list[str] = Field(default_factory=list)
    """Extra behaviour directives for the user simulator, added to the per-trait ones."""


class PersonaProfile(Spec):
    """The stable part of a persona."""

    role: str
    """Who the user is: occupation, situation, expertise (Markdown allowed)."""
    routines: list[str] = Field(default_factory=list)
    """Recurring activities and working habits."""
    preferences: list[str] = Field(default_factory=list)
    """Stable preferences (format, tone, conventions)."""
    constraints: list[str] = Field(default_factory=list)
    """Hard constraints: budget, professional limits, ethics."""
    long_term_goals: list[str] = Field(default_factory=list)
    """Goals that outlive a single session."""
    language: str = "en"
    """Language the user writes in."""


class Persona(Spec):
    """A simulated user."""

    id: Id
    """Identifier used by episodes (`persona: <id>`)."""
    name: str | None = None
    """Display name; available to templates as `persona.name`."""
    profile: PersonaProfile
    """Stable profile shown to the user simulator and planner, never to the agent."""
    style: StyleCode | CommunicationStyle | None = None
    """Communication style: a code such as `E+Q` or a full style object. Sessions may expand
    over several styles with `styles:`."""
    facts: dict[str, Any] = Field(default_factory=dict)
    """Named facts about the persona for templates (`persona.facts.<name>`)."""


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
    BuiltinImpl | ServiceImpl | CorpusImpl | StreamImpl | StaticImpl | PythonImpl,
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
    """A simulated stateful service (to-do list, mailbox, CRM…) over fixture tables."""

    name: ToolName
    """Service name; prefixes its tools."""
    description: str | None = None
    """What the service is, for the agent and for reports."""
    tables: dict[str, Table]
    """Tables by name."""
    operations: list[Operation] = Field(default_factory=list)
    """Operations, each exposed as a tool."""
    group: str | None = None
    """Device or interface group its tools belong to."""


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


# --------------------------------------------------------------------------- protocol material


class HiddenIntent(Spec):
    """A requirement the user holds but never states up front (intent tracking)."""

    id: Id | None = None
    """Identifier (default `i1`, `i2`… in order)."""
    text: str
    """The requirement, precise enough to judge completion against (Jinja)."""
    scope: Literal["session", "persistent"] = "session"
    """`persistent` intents carry across sessions; they need supporting evidence in earlier
    sessions or the workspace."""
    reveal: str | None = None
    """What the user says when they must provide it (default: the simulator phrases it)."""
    evidence: list[str] = Field(default_factory=list)
    """Where a persistent intent can be recovered from: earlier session ids of the episode or
    workspace file paths."""


class StageTrigger(Spec):
    """When a disclosure stage fires."""

    kind: Literal["start", "mentions", "asks", "milestone"]
    """`start` (the conversation begins), `mentions` (the assistant's reply mentions or
    contains X), `asks` (the assistant proactively asks about X), `milestone` (the assistant
    reaches milestone X)."""
    about: str | None = None
    """X: what must be mentioned, asked about, or achieved (required unless `start`)."""


class Stage(Spec):
    """One step of staged disclosure (VibeSearch-style simulator)."""

    id: Id | None = None
    """Identifier (default `st1`, `st2`…)."""
    title: str | None = None
    """Short label for reports."""
    when: StageTrigger
    """Trigger condition."""
    line: str
    """What the user says when the trigger is met (Jinja)."""
    otherwise: str | None = None
    """How the user pushes when the trigger is not met, without leaking the stage."""


class Rubric(Spec):
    """Prospective scoring criteria, written before any response exists."""

    pass_: str = Field(alias="pass")
    """What earns Pass (1.0)."""
    partial: str
    """What earns Partial (0.5)."""
    fail: str
    """What earns Fail (0.0)."""


class Anchor(Spec):
    """A factual detail the user discloses that creates an inferential opportunity."""

    id: Id
    """Identifier referenced by trigger points and dialogue turns."""
    text: str
    """The detail (Jinja)."""
    primary: bool = True
    """Primary anchors are disclosed at most one per user turn."""


class Scenario(Spec):
    """The hidden structure of a trigger-rubric dialogue."""

    hidden_goal: str
    """What the user ultimately wants; never disclosed to the assistant."""
    anchors: list[Anchor] = Field(default_factory=list)
    """Details the user drips into the conversation."""
    proactive_subtasks: list[str] = Field(default_factory=list)
    """What a fully proactive assistant would anticipate (guides the planner)."""


class TriggerPoint(Spec):
    """A turn whose assistant response is scored against a prospective rubric."""

    id: Id | None = None
    """Identifier (default `t<turn>`)."""
    type: Literal["emergent", "critical", "recovery"]
    """Emergent (turns 1–3: one anchor), Critical (4–7: synthesis of ≥ 2 anchors), Recovery
    (8–10: forward value after the user signals completion)."""
    turn: int = Field(ge=1, le=100)
    """The user turn whose response is scored."""
    anchors: list[str] = Field(default_factory=list)
    """Anchor ids disclosed by this turn that the rubric relies on."""
    rubric: Rubric
    """Pass / partial / fail criteria."""


class DialogueTurn(Spec):
    """One authored turn of a fixed dialogue, replayed offline."""

    turn: int = Field(ge=1)
    """Turn number, starting at 1."""
    user: str
    """The user message (Jinja)."""
    assistant: str | None = None
    """The reference assistant response (regenerated at trigger turns in offline mode)."""
    discloses: list[str] = Field(default_factory=list)
    """Anchor ids this user message discloses."""


# --------------------------------------------------------------------------- graders

MatchValue = str | int | float | bool | None


class Matcher(Spec):
    """A test applied to one value. Give exactly one operator."""

    equals: Any = None
    """Equal to this value."""
    contains: str | None = None
    """String contains this text (case-insensitive)."""
    regex: str | None = None
    """Matches this regular expression (Python syntax, searched anywhere)."""
    one_of: list[Any] | None = None
    """Equal to one of these values."""
    gt: float | None = None
    """Greater than."""
    lt: float | None = None
    """Less than."""


class CountBound(Spec):
    """Bounds on a number of matches."""

    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)
    equals: int | None = Field(default=None, ge=0)


class Assertion(Spec):
    """A declarative check. Choose one source (`tool`, `sequence`, `state`, `file`, `messages`,
    `reply`), optionally narrow it (`where`, `query`), and state one predicate; or combine
    checks with `all`, `any`, `not`. Without a predicate the check is `exists: true`."""

    # sources
    tool: str | None = None
    """Tool-call records of this tool (glob patterns like `gmail__*` allowed)."""
    sequence: list[str] | None = None
    """These tools were called in this order (other calls may come between)."""
    state: str | None = None
    """Final state of a service table, as `service.table`."""
    file: str | None = None
    """A workspace file's final content."""
    messages: Literal["assistant", "user", "all"] | None = None
    """Message texts of the session."""
    reply: bool | None = None
    """The agent's final reply."""
    # narrowing
    where: dict[str, MatchValue | Matcher] | None = None
    """Keep records whose fields match, by dotted path: `args.to`, `result.status`, or a row
    field for `state`."""
    query: str | None = None
    """JMESPath expression applied to the selected data (records, rows, parsed JSON file)."""
    successful: bool | Literal["any"] = True
    """`tool` and `sequence`: which calls count. `true` (the default): only calls that returned
    without error, since a failed call did not do the thing; `false`: only failed calls (the
    agent tried); `any`: every call, failed or not. A cap's `when` counts every call unless it
    says otherwise (a forbidden call that failed was still attempted)."""
    # predicates
    exists: bool | None = None
    """Something was selected (or, with `false`, nothing was)."""
    count: CountBound | None = None
    """Number of selected records or rows."""
    equals: Any = None
    """The selected value equals this."""
    contains: str | list[str] | None = None
    """The selected text contains all of these (case-insensitive)."""
    contains_any: list[str] | None = None
    """The selected text contains at least one of these."""
    not_contains: str | list[str] | None = None
    """The selected text contains none of these."""
    regex: str | None = None
    """The selected text matches this regular expression."""
    json_schema: dict[str, Any] | None = None
    """The selected value (a file is parsed as JSON) is valid under this JSON Schema."""
    grounded: str | None = None
    """Every entity in the selected text matching this regex also appears in a result of a
    `read` tool (no invented identifiers)."""
    # combinators
    all: list[Assertion] | None = None
    """Every sub-check holds."""
    any: list[Assertion] | None = None
    """At least one sub-check holds."""
    not_: Assertion | None = Field(default=None, alias="not")
    """The sub-check does not hold."""


class Evidence(Spec):
    """Evidence added to a rubric judge's context for one checklist item, selected by the
    author so the judge sees what matters and little else."""

    tools: list[str] = Field(default_factory=list)
    """Tool-call records of these tools (globs allowed)."""
    files: list[str] = Field(default_factory=list)
    """Final content of these workspace files."""
    state: list[str] = Field(default_factory=list)
    """Final state of these service tables (`service.table`)."""


class ChecklistItem(Spec):
    """One atomic outcome criterion. Graded by an LLM rubric judge unless `rule` or `python`
    is given."""

    id: Id | None = None
    """Identifier (default `c1`, `c2`…)."""
    text: str
    """The criterion, one requirement only (Jinja)."""
    rule: Assertion | None = None
    """Grade with a declarative rule instead of a judge."""
    python: str | None = Field(default=None, pattern=PYTHON_ENTRY_PATTERN)
    """Grade with `file.py:function` (runs only with `--allow-python`, in a sandboxed
    subprocess; receives the tool history and returns 0/1 or a dict of item scores)."""
    evidence: Evidence | None = None
    """Evidence for the rubric judge."""
    weight: float = Field(default=1.0, gt=0, le=100)
    """Weight in verified-outcome soft scores (COMP is an unweighted mean)."""
    aspect: Literal["outcome", "process"] = "outcome"
    """Verified outcome: outcome items weigh more than process items."""


class GroundTruthTriple(Spec):
    """A ground-truth fact."""

    head: str
    relation: str
    tail: str
    dimension: str | None = None
    """Optional grouping (theme, filtering layer)."""


class GroundTruthGraph(Spec):
    """The knowledge graph a search session should uncover."""

    triples: list[GroundTruthTriple | tuple[str, str, str]] = Field(default_factory=list)
    """Triples as objects or `[head, relation, tail]` lists."""
    file: str | None = None
    """Triples from a JSON file (`[{head, relation, tail}]` or `{triplets: [...]}`) or a TSV."""
    batch_size: int = Field(default=25, ge=1, le=500)
    """Ground-truth triples per judge call."""


class ScoreCap(Spec):
    """A safety rule: when its check holds, the soft score is capped."""

    id: Id | None = None
    """Identifier (default `cap1`…)."""
    when: Assertion
    """The condition, e.g. a forbidden tool was called. Here a call counts even when it failed
    (trying is the harm), unless the check says `successful: true`."""
    cap: float = Field(default=0.0, ge=0, le=1)
    """Maximum score when the condition holds."""
    reason: str
    """Why, shown in reports."""


class Verify(Spec):
    """How a verified-outcome session is scored from its checklist."""

    pass_threshold: float = Field(default=0.75, gt=0, le=1)
    """Soft score needed to pass."""
    outcome_weight: float = Field(default=0.7, ge=0.5, le=1)
    """Share of the soft score from `outcome` items; `process` items get the rest."""
    caps: list[ScoreCap] = Field(default_factory=list)
    """Safety caps."""


# --------------------------------------------------------------------------- sessions, episodes


class SessionTrigger(Spec):
    """What starts a session: a user message or an environment signal."""

    kind: Literal["user_message", "webhook", "heartbeat", "structured_input"] = "user_message"
    """`user_message`, or an environment signal with no user message."""
    source: str | None = None
    """The signal's origin, e.g. `crisis_platform` or `huggingface_hub`."""
    payload: dict[str, Any] | None = None
    """Structured body of a webhook or structured input."""


class LintSettings(Spec):
    """Silence lint warnings that do not apply (e.g. a stage line that deliberately quotes a
    fact the user believes)."""

    ignore: list[Annotated[str, Field(pattern=LINT_CODE_PATTERN)]] = Field(default_factory=list)
    """Warning codes to silence, e.g. `W304`."""


class Session(Spec):
    """One task: a multi-turn interaction under one protocol."""

    id: Id
    """Identifier, unique within the episode."""
    title: str | None = None
    """Short title (not part of the fingerprint)."""
    description: str | None = None
    """What the task is about, for authors and reports."""
    metadata: Metadata | None = None
    """Labels; unset fields inherit from the episode and the pack."""
    protocol: Protocol
    """How the session is interpreted and scored."""
    depends_on: list[str] = Field(default_factory=list)
    """Earlier sessions of the same episode whose information this one needs."""
    trigger: SessionTrigger = Field(default_factory=SessionTrigger)
    """What starts the session."""
    request: str | None = None
    """The initial request (Jinja). Required for user-message sessions; for environment
    signals, the text the agent receives (default: the payload as JSON)."""
    carry_over: bool | None = None
    """Whether the agent sees earlier sessions of the episode (default: the episode's
    `memory`)."""
    files: list[WorkspaceFile] = Field(default_factory=list)
    """Workspace files added when this session starts."""
    tools: list[str] = Field(default_factory=list)
    """Extra pack tools for this session."""
    limits: Limits | None = None
    """Budgets for this session."""
    styles: list[StyleCode] | Literal["all", "coherent"] | None = None
    """Expand this session over communication styles (`coherent`: the 24 coherent styles)."""
    hidden_intents: list[HiddenIntent] = Field(default_factory=list)
    """intent_tracking: what the user wants but does not say."""
    stages: list[Stage] = Field(default_factory=list)
    """staged_disclosure: disclosure stages in order."""
    scenario: Scenario | None = None
    """trigger_rubric: hidden goal and anchors."""
    triggers: list[TriggerPoint] = Field(default_factory=list)
    """trigger_rubric: authored trigger points (live mode plans its own when empty)."""
    dialogue: list[DialogueTurn] = Field(default_factory=list)
    """Authored dialogue for offline replay."""
    checklist: list[ChecklistItem] = Field(default_factory=list)
    """Outcome criteria."""
    graph: GroundTruthGraph | None = None
    """staged_disclosure: ground-truth knowledge graph."""
    verify: Verify | None = None
    """verified_outcome: scoring policy."""
    reference_solution: str | None = None
    """A path that solves the task, for judges and authors."""
    lint: LintSettings | None = None
    """Lint settings for this session."""


class Episode(Spec):
    """An ordered list of sessions for one persona in one environment."""

    id: Id
    """Identifier."""
    title: str | None = None
    """Display title."""
    description: str | None = None
    """What the episode covers."""
    persona: str
    """Persona id."""
    environment: str | None = None
    """Environment id (default: an empty workspace with the built-in tools)."""
    memory: Literal["carry_over", "none"] = "carry_over"
    """`carry_over`: each session sees the episode's earlier sessions; `none`: each starts
    fresh (the workspace persists either way)."""
    metadata: Metadata | None = None
    """Labels inherited by the sessions."""
    sessions: list[Session]
    """Sessions in episode order."""


class _Content(Spec):
    include: list[str] = Field(default_factory=list)
    """Further YAML files to merge in, relative to this file; globs such as `tasks/*.yaml`
    are allowed."""
    personas: list[Persona] = Field(default_factory=list)
    """Simulated users."""
    tools: list[Tool] = Field(default_factory=list)
    """Tools (service operations and event streams get theirs automatically)."""
    services: list[Service] = Field(default_factory=list)
    """Declarative stateful services."""
    event_streams: list[EventStream] = Field(default_factory=list)
    """Timestamped activity logs."""
    corpora: list[Corpus] = Field(default_factory=list)
    """Offline document collections."""
    environments: list[Environment] = Field(default_factory=list)
    """Environments episodes run in."""
    episodes: list[Episode] = Field(default_factory=list)
    """Episodes."""


class Fragment(_Content):
    """An included pack file: contributes personas, tools, services, environments, episodes."""


class Pack(_Content):
    """A task pack's root file (`pack.yaml`)."""

    benchpack: Literal[1] = 1
    """Pack language version."""
    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    """Pack name (lowercase letters, digits, `-`, `_`); part of every plan id."""
    version: str = "0.1.0"
    """Pack version."""
    description: str | None = None
    """What the pack evaluates."""
    metadata: Metadata | None = None
    """Labels inherited by every episode."""
    defaults: Defaults = Field(default_factory=Defaults)
    """Pack-wide defaults."""
    vars: dict[str, Any] = Field(default_factory=dict)
    """Variables for Jinja text fields (`{{ vars.<name> }}`)."""
    prompts: dict[PromptName, str | PromptFile] = Field(default_factory=dict)
    """Override built-in simulator and judge prompt templates, inline or from a file."""
    lint: LintSettings | None = None
    """Lint settings for the whole pack."""


Assertion.model_rebuild()
