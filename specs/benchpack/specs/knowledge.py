"""Knowledge bases (issue 24, item 5): a document collection an agent consults, and how it
reaches the agent — the retrieval configuration.

The user-written shape (`knowledge:` at pack level, named by `environments[].knowledge`, a
session's golden documents in `required_documents`) and the compiled one (`Plan.knowledge`, the
`knowledge` implementation of the search tools, `PlanSession.knowledge`).

```yaml
knowledge:
  - name: handbook
    files: [kb/*.md]            # one document per file (id: the file name without extension)
    file: kb/extra.jsonl        # and/or JSONL rows {id, title, text}
    retrieval: "{{ vars.retrieval }}"   # none | full | golden | bm25 | grep | bm25_grep | shell
    top_k: 5
    results: {format: text, fill: true}   # default: JSON of the matching documents
    tools: {search: KB_search}            # or {name, description, parameters}; `first: true`
environments:
  - id: desk
    knowledge: [handbook]
```

Retrieval configurations (every one runs offline; embeddings need a model and are not offered):
`none` (no documents, no tools), `full` (every document in the system prompt), `golden` (the
session's `required_documents` in the system prompt), `bm25` (a search tool ranking with BM25,
`rank_bm25.BM25Okapi` as τ²-bench), `grep` (a regular-expression tool ranking by match count),
`bm25_grep` (both tools), `shell` (the documents as workspace files under
`knowledge/<name>/`, with the `shell`, `read_file`, `grep` and `list_files` built-ins; `shell`
needs `--allow-python`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import FIELD_DOCS, Spec, ToolName

RETRIEVALS: tuple[str, ...] = ("none", "full", "golden", "bm25", "grep", "bm25_grep", "shell")
"""The retrieval configurations, each runs offline."""


class KnowledgeDocument(Spec):
    """One document of a knowledge base."""

    id: Annotated[str, Field(min_length=1)]
    """Stable identifier (what search results and `required_documents` name)."""
    title: str | None = None
    """Title (default: the first Markdown heading of the text, else the id)."""
    text: str
    """Full text."""


class KnowledgeToolSpec(Spec):
    """A knowledge base's tool as another benchmark offers it: its name, and optionally its
    description and parameters schema (which must keep the tool's one argument, `query` for
    `search`, `pattern` for `grep`)."""

    name: ToolName
    """Tool name; may be a built-in's (`grep`), which the environments offering this base then
    give up."""
    description: str | None = None
    """What the agent reads (default: benchpack's text)."""
    parameters: dict[str, Any] | None = None
    """JSON Schema of the arguments (default: benchpack's)."""


class KnowledgeTools(Spec):
    """Names (or full definitions) of a knowledge base's tools (an imported benchmark's)."""

    search: ToolName | KnowledgeToolSpec | None = None
    """The BM25 search tool (default `<name>__search`)."""
    grep: ToolName | KnowledgeToolSpec | None = None
    """The regular-expression search tool (default `<name>__grep`)."""
    first: bool = False
    """Offer these tools before the environment's others (default: after them)."""


class KnowledgeResults(Spec):
    """What a search answers.

    `format: json` (the default): `[{id, title, score, content}]`. `format: text`: one entry
    per document, `N. <title>` then indented `ID:`, `Score:` (4 decimals) and `Content:` lines,
    entries separated by a blank line; no document gives `No relevant documents found.`
    (search) or `No matches found for pattern: <pattern>` (grep)."""

    format: Literal["json", "text"] = "json"
    """`json` or `text` (above)."""
    fill: bool = False
    """`search`: always `top_k` documents, those sharing no word with the query following at
    score 0 in document order (default: only documents sharing a word)."""
    timing: bool = False
    """`format: text`, `search`: a last line `[Timing: retrieval=<ms>ms, reranking=0ms,
    total=<ms>ms]`, the search's measured time (it varies from call to call)."""


class KnowledgeBase(Spec):
    """A document collection (a company handbook, product manuals) with a retrieval
    configuration saying how the agent gets at it."""

    name: ToolName
    """Knowledge base name; prefixes its tools."""
    description: str | None = None
    """What the documents are, shown in the search tools' descriptions."""
    documents: list[KnowledgeDocument] = Field(default_factory=list)
    """Documents, inline."""
    files: list[str] = Field(default_factory=list)
    """Document files (globs such as `kb/*.md`), relative to the declaring YAML file: one
    document each, its id the file name without extension, its title the first `#` heading."""
    file: str | None = None
    """A JSONL file of documents (fields `id`, `text`, optional `title`)."""
    retrieval: str = "bm25"
    """How the agent reaches the documents: `none`, `full`, `golden`, `bm25`, `grep`,
    `bm25_grep` or `shell` (Jinja: `"{{ vars.retrieval }}"` lets `bench compile --var
    retrieval=grep` choose per run)."""
    top_k: int = Field(default=5, ge=1, le=50)
    """Documents a search returns."""
    tools: KnowledgeTools = Field(default_factory=KnowledgeTools)
    """Tool names (or definitions), when not the defaults."""
    results: KnowledgeResults = Field(default_factory=KnowledgeResults)
    """What a search answers (format, fill)."""
    heading: str = "# Knowledge base"
    """The line above the documents placed in the system prompt (`full`, `golden`)."""
    in_policy: list[Literal["full", "golden"]] = Field(default_factory=list)
    """Configurations whose documents the environment's policy holds itself (an imported
    benchmark's own prompt, e.g. a Jinja branch on `vars.retrieval`): under them nothing is
    appended to the system prompt."""


# --------------------------------------------------------------------------- compiled


class _PlanModel(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=FIELD_DOCS,
                              defer_build=True)  # see `base.Spec`


class KnowledgeImpl(_PlanModel):
    """Compiled only: a tool answered from a knowledge base."""

    kind: Literal["knowledge"]
    knowledge: str
    """Key of `Plan.knowledge`."""
    operation: Literal["search", "grep"]
    """`search`: BM25 over the documents; `grep`: a regular expression, ranked by matches."""
    top_k: int
    """Documents a call returns."""
    format: Literal["json", "text"] = "json"
    """The result's layout (`KnowledgeResults`)."""
    fill: bool = False
    """`search`: top k filled with score-0 documents."""
    timing: bool = False
    """`text` search: a last line with the measured time."""


class PlanKnowledgeDocument(_PlanModel):
    id: str
    title: str
    text: str


class PlanKnowledge(_PlanModel):
    name: str
    description: str | None = None
    documents: list[PlanKnowledgeDocument]
    sha256: str
    """Of the documents, so every session using the base moves its fingerprint when they
    change."""


class PlanSessionKnowledge(_PlanModel):
    """What a session gets of its environment's knowledge bases."""

    retrieval: str
    """The configuration in force."""
    bases: list[str]
    """Knowledge bases (keys of `Plan.knowledge`)."""
    sha256: list[str]
    """The bases' document hashes (in the fingerprint)."""
    required_documents: list[str] = Field(default_factory=list)
    """The documents the task needs (what `golden` shows; kept for reports otherwise)."""
    context: str | None = None
    """Text appended to the agent's system prompt (`full`, `golden`)."""


__all__ = [
    "RETRIEVALS",
    "KnowledgeBase",
    "KnowledgeDocument",
    "KnowledgeImpl",
    "KnowledgeResults",
    "KnowledgeToolSpec",
    "KnowledgeTools",
    "PlanKnowledge",
    "PlanKnowledgeDocument",
    "PlanSessionKnowledge",
]
