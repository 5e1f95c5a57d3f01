"""The pack language: what a pack author writes in YAML.

These pydantic models are the single source of truth. `schemas/pack.schema.json` and
`schemas/fragment.schema.json` are generated from them (field docstrings become the
descriptions editors show), and the compiler validates every file against them.
Text fields marked "(Jinja)" may use `{{ … }}` expressions; they are rendered at compile time in
a sandbox with the pack's `vars`, the persona, the episode and the session in scope.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)

# The models live in topical modules and one module per protocol (`protocols/<name>.py`);
# they are re-exported here because the compiler, the runtime and the tests import them as
# `benchpack.specs.pack.<Model>`.
from .base import (
    DURATION_PATTERN,
    ID_PATTERN,
    LANGUAGE_VERSION,
    LINT_CODE_PATTERN,
    NAME_PATTERN,
    PYTHON_ENTRY_PATTERN,
    STYLE_PATTERN,
    TOOL_NAME_PATTERN,
    Id,
    Spec,
    StyleCode,
    Timestamp,
    ToolName,
)
from .checklist import Assertion, ChecklistItem, CountBound, Evidence, Matcher, MatchValue
from .environment import (
    BUILTIN_TOOLS,
    BuiltinImpl,
    BuiltinToolName,
    Corpus,
    CorpusImpl,
    Document,
    Environment,
    Event,
    EventStream,
    Heartbeat,
    Operation,
    PolicyFile,
    PythonImpl,
    Service,
    ServiceImpl,
    StaticImpl,
    StreamImpl,
    Table,
    Tool,
    ToolImpl,
    WorkspaceFile,
)
from .knowledge import KnowledgeBase
from .origin import Origin
from .persona import (
    COHERENT_STYLES,
    STYLE_TRAITS,
    TRAIT_ORDER,
    CommunicationStyle,
    Persona,
    PersonaProfile,
    normalise_style,
)
from .plugins import is_plugin
from .protocols import (
    PROMPT_NAMES,
    PROTOCOLS,
    SESSION_FIELDS,
    Anchor,
    Conversation,
    DialogueTurn,
    Gold,
    GroundTruthGraph,
    GroundTruthTriple,
    HiddenIntent,
    Instruction,
    Rubric,
    Scenario,
    ScoreCap,
    Stage,
    StageTrigger,
    TriggerPoint,
    UserScenario,
    Verify,
)
from .scoring import Score
from .services import HttpImpl, ProcessService
from .toolsets import Toolset
from .user_side import EnvAssertion, InitAction, InitialState, PriorMessage, UserToolCall


def _plugin_protocol(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    # An installed plug-in's name passes; anything else is checked (and reported) as the
    # closed set of built-ins, which is also all the JSON Schema lists.
    return value if is_plugin(value) else handler(value)


# Built from the registry so a new protocol is named in one place; same schema as spelling
# the Literal out (the wrap validator adds nothing to it).
Protocol = Annotated[Literal[PROTOCOLS], WrapValidator(_plugin_protocol)]  # type: ignore[valid-type]

PromptName = Literal[PROMPT_NAMES]  # type: ignore[valid-type]


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
    max_messages: int | None = Field(default=None, ge=1, le=100_000)
    """instructed_user (τ²'s `max_steps`): the dialogue ends with `max_messages` once this many
    messages were exchanged — user messages, agent messages (each model response, tool calls
    included) and tool-result batches; the greeting does not count. Checked where τ² checks:
    after each user message, each agent text message and each tool-result batch (so a stop
    signal in the message that reaches the limit loses to it). Unset: no limit, and then
    `max_turns` defaults to this number (a turn takes at least two messages)."""
    max_tool_errors: int | None = Field(default=None, ge=1, le=100_000)
    """instructed_user (τ²'s `max_errors`): the dialogue ends with `max_tool_errors` once this
    many tool calls of the session failed (checked with `max_messages`; when both are reached
    at once, this one names the ending)."""
    max_tool_result_chars: int | None = Field(default=None, ge=0, le=10_000_000)
    """How much of a tool result an LLM agent (`litellm:`) is shown, in characters, the rest
    replaced by a note; 0: all of it (τ²). Default 20,000."""


class Defaults(Spec):
    """Pack-wide defaults."""

    models: Models = Field(default_factory=Models)
    """Default models per role."""
    limits: Limits = Field(default_factory=Limits)
    """Default budgets."""
    seed: int = 0
    """Base random seed passed to simulators and the agent where the provider supports it."""
    repeat_seeds: list[int] | None = Field(default=None, min_length=1, max_length=1000)
    """A seed per repeat (repeat 1 takes the first), replacing `seed` for repeats it covers:
    τ²-bench gives each trial its own seed, drawn from `random.seed(300)`, and
    `bench import tau2` writes those here."""
    repeats: int = Field(default=1, ge=1, le=100)
    """How many times `bench run` repeats each session by default (pass@k needs k repeats)."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature for the agent, when set (τ²: 0). Simulators and judges run at 0
    (an instructed_user simulator: `conversation.simulator_temperature`)."""
    conversation: Conversation | None = None
    """instructed_user: the dialogue rules of every session of this protocol (a session's own
    `conversation:` overrides them field by field)."""


class PromptFile(Spec):
    """A prompt template kept in its own file."""

    file: str
    """Path of a Jinja template, relative to the YAML file that names it."""



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
    request_discloses: list[str] = Field(default_factory=list)
    """trigger_rubric: anchor ids the `request` itself discloses (as `discloses` on a dialogue
    turn), so that live mode counts them as disclosed from turn 1."""
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
    # --- issue 12: instructed users (τ²-bench) and richer scoring
    user: UserScenario | None = None
    """instructed_user: the scenario the user simulator follows."""
    initial_state: InitialState | None = None
    """instructed_user: where the session starts (table patches, replayed set-up calls, a prior
    conversation); default: the environment as the episode left it."""
    gold: Gold | None = None
    """instructed_user: what a correct agent does (replayed for the state check)."""
    score: Score | None = None
    """How the session is scored. verified_outcome: graded items (judged on a scale, partial
    credit, keywords, joins across tool records), safety gates, caps, named dimensions and a
    score formula, replacing the checklist soft score of `verify`. instructed_user: τ²'s reward,
    the product of `reward: [state, actions, communicate, assertions]` (all or nothing)."""
    conversation: Conversation | None = None
    """instructed_user: how the dialogue runs and ends (greeting, simulator prompting, stop
    tokens, unfinished dialogues); over `defaults.conversation`."""
    # --- end issue 12
    required_documents: list[str] = Field(default_factory=list)
    """Knowledge-base documents this task needs, by id: what the `golden` retrieval
    configuration puts in the agent's system prompt."""

    _material: Any = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _plugin_keys(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        # A plug-in protocol's session material is the keys this model does not know; its own
        # model checks them at compile time (`benchpack.specs.plugins`), with their locations.
        if not (isinstance(data, dict) and is_plugin(data.get("protocol"))):
            return handler(data)
        known = {f.alias or n for n, f in cls.model_fields.items()}
        session = handler({k: v for k, v in data.items() if k in known})
        session._material = {k: v for k, v in data.items() if k not in known}
        return session

    @property
    def material(self) -> Any:
        """A plug-in protocol's session material: the session's keys this model does not
        declare, as a dict until the compiler has checked them, then the plug-in model's
        instance. Empty for the built-in protocols, whose keys are fields above."""
        return self._material

    @material.setter
    def material(self, checked: Any) -> None:
        self._material = checked


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
    toolsets: list[Toolset] = Field(default_factory=list)
    """Python modules whose public functions are tools with state (need --allow-python)."""
    knowledge: list[KnowledgeBase] = Field(default_factory=list)
    """Knowledge bases: document collections with a retrieval configuration (issue 24)."""


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
    origin: Origin | None = None
    """The published benchmark this pack reproduces (importers write it): its name, version
    and every known difference. Reports say whether the pack's runs are comparable with it."""


__all__ = [
    "BUILTIN_TOOLS",
    "COHERENT_STYLES",
    "DURATION_PATTERN",
    "ID_PATTERN",
    "LANGUAGE_VERSION",
    "LINT_CODE_PATTERN",
    "NAME_PATTERN",
    "PROMPT_NAMES",
    "PROTOCOLS",
    "PYTHON_ENTRY_PATTERN",
    "SESSION_FIELDS",
    "STYLE_PATTERN",
    "STYLE_TRAITS",
    "TOOL_NAME_PATTERN",
    "TRAIT_ORDER",
    "Anchor",
    "Assertion",
    "BuiltinImpl",
    "BuiltinToolName",
    "ChecklistItem",
    "CommunicationStyle",
    "Conversation",
    "Corpus",
    "CorpusImpl",
    "CountBound",
    "Defaults",
    "DialogueTurn",
    "Document",
    "EnvAssertion",
    "Environment",
    "Episode",
    "Event",
    "EventStream",
    "Evidence",
    "Fragment",
    "Gold",
    "GroundTruthGraph",
    "GroundTruthTriple",
    "Heartbeat",
    "HiddenIntent",
    "HttpImpl",
    "Id",
    "InitAction",
    "InitialState",
    "Instruction",
    "KnowledgeBase",
    "Limits",
    "LintSettings",
    "MatchValue",
    "Matcher",
    "Metadata",
    "Models",
    "Operation",
    "Origin",
    "Pack",
    "Persona",
    "PersonaProfile",
    "PolicyFile",
    "PriorMessage",
    "ProcessService",
    "PromptFile",
    "PromptName",
    "Protocol",
    "PythonImpl",
    "Rubric",
    "Scenario",
    "Score",
    "ScoreCap",
    "Service",
    "ServiceImpl",
    "Session",
    "SessionTrigger",
    "Spec",
    "Stage",
    "StageTrigger",
    "StaticImpl",
    "StreamImpl",
    "StyleCode",
    "Table",
    "Timestamp",
    "Tool",
    "ToolImpl",
    "ToolName",
    "Toolset",
    "TriggerPoint",
    "UserScenario",
    "UserToolCall",
    "Verify",
    "WorkspaceFile",
    "normalise_style",
]
