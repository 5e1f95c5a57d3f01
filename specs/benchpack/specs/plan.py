"""The compiled plan: what `bench compile` writes and `bench run` reads.

Different from the pack language on purpose: every reference is resolved, every default is
filled in, every Jinja field is rendered, file contents are embedded, and each session carries a
fingerprint. The runtime loads this shape only (validated against `schemas/plan.schema.json`)
and never reads YAML.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from .base import FIELD_DOCS
from .discoverable import UnlockImpl
from .knowledge import KnowledgeImpl, PlanKnowledge, PlanSessionKnowledge
from .origin import Origin
from .pack import (
    Anchor,
    Assertion,
    DialogueTurn,
    Evidence,
    Metadata,
    Operation,
    PersonaProfile,
    Protocol,
    Rubric,
    ToolImpl,
)
from .scoring import Score
from .services import ProcessService
from .toolsets import PlanToolset, PyToolImpl

PLAN_SCHEMA_ID = "https://benchpack.dev/schemas/plan/v1"
PLAN_VERSION = 1


class PlanModel(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=FIELD_DOCS,
                              defer_build=True, populate_by_name=True)  # see `base.Spec`


class PlanPack(PlanModel):
    name: str
    version: str
    description: str | None = None
    content_hash: str
    """sha256 over every input file of the pack (paths and bytes)."""
    metadata: Metadata
    origin: Origin | None = None
    """The pack's `origin:` (left out of the plan when unset): a label, outside every
    fingerprint; `bench run` records it with the run."""


class PlanLimits(PlanModel):
    max_turns: int | None = None
    max_steps_per_turn: int | None = None
    turn_timeout_s: float | None = None
    max_messages: int | None = None
    """instructed_user; written only when set (as the two below), so older plans stay byte for
    byte."""
    max_tool_errors: int | None = None
    max_tool_result_chars: int | None = None


class PlanModels(PlanModel):
    agent: str | None = None
    simulator: str | None = None
    planner: str | None = None
    judge: str | None = None


class PlanDefaults(PlanModel):
    models: PlanModels
    limits: PlanLimits
    seed: int
    repeats: int
    temperature: float | None = None
    repeat_seeds: list[int] | None = None
    """Per-repeat seeds (`defaults.repeat_seeds`); only in plans that set them."""

    def seed_for(self, repeat: int) -> int:
        """The seed of 0-based `repeat`: its own when `repeat_seeds` covers it, else `seed`."""
        seeds = self.repeat_seeds or []
        return seeds[repeat] if 0 <= repeat < len(seeds) else self.seed


class PlanStyle(PlanModel):
    code: str
    """Canonical trait code, e.g. `E+Q+M`."""
    traits: dict[str, bool]
    """The six traits by name."""
    length: Literal["terse", "chatty"]
    min_words: int
    max_words: int
    directives: list[str]


class PlanPersona(PlanModel):
    id: str
    name: str | None = None
    profile: PersonaProfile
    style: PlanStyle | None = None
    facts: dict[str, Any]


class PlanFile(PlanModel):
    path: str
    """Path inside the workspace."""
    encoding: Literal["utf-8", "base64"]
    content: str
    sha256: str


class PlanTool(PlanModel):
    name: str
    description: str
    parameters: dict[str, Any]
    impl: ToolImpl | PyToolImpl | KnowledgeImpl | UnlockImpl
    """`python_tool` (a function of a toolset) exists only in plans."""
    group: str | None = None
    effect: Literal["read", "write"]
    python_source: str | None = None
    """`python` tools: the module's source, embedded at compile time."""


class PlanTable(PlanModel):
    key: str
    id_prefix: str | None = None
    row_schema: dict[str, Any] | None = None
    rows: list[dict[str, Any]]


class PlanProcess(ProcessService):
    """A process service as compiled: its files travel in the plan (`cwd` is relative to the
    pack root), so the plan is the same wherever it was compiled and runs without the pack."""

    files: dict[str, str] = Field(default_factory=dict)
    """UTF-8 files under `cwd`, by path from the pack root: written to a directory of the run
    that is mounted read-only at `/pack` in the service's sandbox."""
    binary_files: dict[str, str] = Field(default_factory=dict)
    """The other files under `cwd` (base64), likewise."""
    source_sha256: str
    """sha256 over the files under `cwd` (paths and bytes) when compiled: part of the
    fingerprints of the sessions that use the service."""


class PlanService(PlanModel):
    name: str
    description: str | None = None
    tables: dict[str, PlanTable]
    operations: list[Operation]
    group: str | None = None
    process: PlanProcess | None = None
    """HTTP services: the process to run (left out of the plan for declarative services)."""


class PlanEvent(PlanModel):
    at: str
    source: str
    action: str
    ref: str | None = None
    text: str | None = None
    data: dict[str, Any]
    noise: bool
    conflicts_with: str | None = None


class PlanEventStream(PlanModel):
    name: str
    description: str | None = None
    events: list[PlanEvent]
    """Sorted by time (stable)."""


class PlanDocument(PlanModel):
    id: str
    title: str
    url: str | None = None
    text: str
    published: str | None = None


class PlanCorpus(PlanModel):
    name: str
    description: str | None = None
    documents: list[PlanDocument]


class PlanHeartbeat(PlanModel):
    every_s: int
    start: str | None = None
    beats: int
    message: str | None = None


class PlanEnvironment(PlanModel):
    id: str
    description: str | None = None
    clock: str | None = None
    files: list[PlanFile]
    tools: list[str]
    """Every tool offered: built-ins, pack tools, service operations, stream readers."""
    services: list[str]
    event_streams: list[str]
    heartbeat: PlanHeartbeat | None = None
    toolsets: list[str] = Field(default_factory=list)
    """Python toolsets offered (keys of `Plan.toolsets`); left out of the plan when empty."""
    knowledge: list[str] = Field(default_factory=list)
    """Knowledge bases offered (keys of `Plan.knowledge`); left out of the plan when empty."""
    discoverable: list[str] = Field(default_factory=list)
    """Tools offered only once unlocked (keys of `Plan.tools`); left out when empty."""
    policy: str | None = None
    """The rendered policy: the agent's system prompt (left out of the plan when unset)."""
    user_toolsets: list[str] = Field(default_factory=list)
    """Toolsets of the simulated user (also in `toolsets`, which the runtime starts); left out
    when empty."""
    user_tools: list[str] = Field(default_factory=list)
    """The user's tools (dual control), never offered to the agent; left out when empty."""
    user_discoverable: list[str] = Field(default_factory=list)
    """The user's tools (also in `user_tools`) held back until the agent gives them with the
    give tool (issue 24); left out when empty."""
    state_ignores: list[str] = Field(default_factory=list)
    """`service.table`s the `state` reward component does not compare (`Environment.
    state_ignores`, checked); left out when empty."""


class PlanEpisode(PlanModel):
    id: str
    title: str | None = None
    persona: str
    environment: str
    memory: Literal["carry_over", "none"]
    sessions: list[str]
    """Plan ids of the episode's sessions in episode order (variants excluded)."""


class PlanTrigger(PlanModel):
    kind: Literal["user_message", "webhook", "heartbeat", "structured_input"]
    source: str | None = None
    payload: dict[str, Any] | None = None


class PlanIntent(PlanModel):
    id: str
    text: str
    scope: Literal["session", "persistent"]
    reveal: str | None = None
    evidence: list[str]


class PlanStage(PlanModel):
    id: str
    title: str | None = None
    kind: Literal["start", "mentions", "asks", "milestone"]
    about: str | None = None
    line: str
    otherwise: str | None = None


class PlanTriggerPoint(PlanModel):
    id: str
    type: Literal["emergent", "critical", "recovery"]
    turn: int
    anchors: list[str]
    rubric: Rubric


class PlanScenario(PlanModel):
    hidden_goal: str
    anchors: list[Anchor]
    proactive_subtasks: list[str]


class PlanChecklistItem(PlanModel):
    id: str
    text: str
    grader: Literal["rubric", "rule", "python"]
    rule: Assertion | None = None
    python: str | None = None
    """`file.py:function`; the file's source is embedded in `python_source`."""
    python_source: str | None = None
    evidence: Evidence | None = None
    weight: float
    aspect: Literal["outcome", "process"]


class PlanTriple(PlanModel):
    head: str
    relation: str
    tail: str
    dimension: str | None = None


class PlanGraph(PlanModel):
    triples: list[PlanTriple]
    batch_size: int


class PlanScoreCap(PlanModel):
    id: str
    when: Assertion
    cap: float
    reason: str


class PlanVerify(PlanModel):
    pass_threshold: float
    outcome_weight: float
    caps: list[PlanScoreCap]


class PlanVariant(PlanModel):
    style: str | None = None
    """Communication style this expansion uses."""
    ablation: Literal["without_dependencies"] | None = None
    base: str | None = None
    """Plan id of the session this variant derives from."""


class PlanInstruction(PlanModel):
    text: str
    """What the user says (structured instructions) or the instruction itself (plain text,
    followed by the LLM simulator only)."""
    if_: list[str] | None = Field(default=None, alias="if")
    after_turn: int | None = None
    stop: Literal["done", "transfer", "out_of_scope"] | None = None
    calls: list[dict[str, Any]] | None = None
    """The user's own tool calls `{tool, args}` made before saying `text` (written only when
    there are some)."""


class PlanUser(PlanModel):
    reason: str
    known: list[str]
    unknown: list[str]
    instructions: list[PlanInstruction]
    language: str | None = None
    text: str | None = None
    """The scenario an LLM simulator reads, verbatim (written only when given)."""
    tools: list[str] | None = None
    """The user's own tools this user is offered (written only when given: default all)."""


class PlanConversation(PlanModel):
    """instructed_user's dialogue rules, resolved (`defaults.conversation` under the session's
    own); see `benchpack.specs.protocols.instructed_user.Conversation`."""

    greeting: str | None
    simulator: Literal["tagged", "chat"]
    stop_tokens: Literal["end", "anywhere"]
    unfinished: Literal["score", "fail"]
    simulator_temperature: float
    solo: bool = False
    """No simulated user; the agent has the user's tools too (written only when true)."""
    end_tool: str | None = None
    """Solo mode: the tool whose call ends the session (written only when given)."""
    system_request: str | None = None
    """Solo mode: the request's text in the system prompt, `{request}` replaced (written only
    when given)."""


class PlanSession(PlanModel):
    id: str
    """Stable readable id: `session.<pack>.<episode>.<session>[@<style>][~nodeps]`."""
    name: str
    """The session id as written in the pack."""
    episode: str
    index: int
    """Position in the episode (0-based)."""
    title: str | None = None
    description: str | None = None
    source_file: str
    metadata: Metadata
    protocol: Protocol
    persona: str
    environment: str
    style: PlanStyle | None = None
    trigger: PlanTrigger
    request: str | None = None
    request_discloses: list[str] = Field(default_factory=list)
    """Anchor ids the request discloses (trigger_rubric); left out of the plan when empty."""
    depends_on: list[str]
    carry_over: bool
    """Whether the agent receives the episode's earlier sessions."""
    prior_sessions: list[str]
    """Earlier sessions whose transcripts the agent receives (episode memory)."""
    group: str | None = None
    """Dependency group id, when the session belongs to one."""
    variant: PlanVariant
    limits: PlanLimits
    files: list[PlanFile]
    tools: list[str]
    hidden_intents: list[PlanIntent]
    stages: list[PlanStage]
    scenario: PlanScenario | None = None
    triggers: list[PlanTriggerPoint]
    dialogue: list[DialogueTurn]
    checklist: list[PlanChecklistItem]
    graph: PlanGraph | None = None
    verify: PlanVerify | None = None
    score: Score | None = None
    """verified_outcome `score:` block with item ids filled in and texts rendered; written only
    when the session has one (older plans stay byte for byte)."""
    user: PlanUser | None = None
    """instructed_user: the rendered scenario (left out of the plan for other protocols)."""
    gold: dict[str, Any] | None = None
    """instructed_user: `{actions: [{id, tool, args, match, info}], ordered}`."""
    reward: dict[str, Any] | None = None
    """instructed_user: its compiled `score:` — `{reward: [components], communicate,
    assertions, pass_threshold}`, plus `communicate_match` and `assertions_judge` when not the
    defaults (the pack's `score:` of a verified_outcome session is `score`)."""
    initial_state: dict[str, Any] | None = None
    """instructed_user: `{data: {service: {table: {key: patch}}}, actions: [{tool | function,
    toolset, state; args, side}], history: [{role, content, tool_calls: [{id, tool, args,
    side}], tool_call_id}]}` (issue 24; left out when the session gives none)."""
    conversation: PlanConversation | None = None
    """instructed_user: the dialogue rules, when the session or `defaults.conversation` gives
    any (left out otherwise: today's behaviour)."""
    reference_solution: str | None = None
    knowledge: PlanSessionKnowledge | None = None
    """The environment's knowledge bases as this session gets them (left out without any)."""
    material: SkipJsonSchema[dict[str, Any] | None] = None
    """A plug-in protocol's compiled session material (`benchpack.specs.plugins`); left out of
    the plan, and of its JSON Schema, for the built-in protocols."""
    fingerprint: str
    """sha256 of what changes outcomes, chained with the fingerprints of its dependencies."""


class PlanGroup(PlanModel):
    id: str
    episode: str
    sessions: list[str]
    """Members in topological order."""
    final: str
    """The member every other member leads to (scored as the group's final task)."""


class Plan(PlanModel):
    schema_id: Literal["https://benchpack.dev/schemas/plan/v1"] = Field(alias="$schema")
    plan_version: Literal[1]
    benchpack_version: str
    pack: PlanPack
    defaults: PlanDefaults
    prompts: dict[str, str]
    """Prompt template overrides by name (the runtime has built-in defaults)."""
    personas: dict[str, PlanPersona]
    tools: dict[str, PlanTool]
    services: dict[str, PlanService]
    event_streams: dict[str, PlanEventStream]
    corpora: dict[str, PlanCorpus]
    environments: dict[str, PlanEnvironment]
    episodes: dict[str, PlanEpisode]
    sessions: dict[str, PlanSession]
    """By plan id, in topological order."""
    groups: list[PlanGroup]
    parent_map: dict[str, list[str]]
    child_map: dict[str, list[str]]
    toolsets: dict[str, PlanToolset] = Field(default_factory=dict)
    """Python toolsets by name: module source and hash; left out of the plan when empty."""
    knowledge: dict[str, PlanKnowledge] = Field(default_factory=dict)
    """Knowledge bases by name, with their documents; left out of the plan when empty."""
