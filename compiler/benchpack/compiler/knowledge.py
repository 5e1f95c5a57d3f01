"""Knowledge bases (issue 24, item 5): `knowledge:` → `Plan.knowledge`, the search tools the
retrieval configuration offers, and each session's `knowledge` (what its system prompt gets).

Called from the builder's phases: `collect_knowledge` (symbols), `compile_knowledge` (world,
before environments, so the tools exist), `environment_knowledge` (each environment),
`session_knowledge` (each session). The retrieval configuration is chosen at compile time — it
changes what the agent is offered and so every session's fingerprint — and `bench compile
--var NAME=VALUE` lets a run choose it when the pack writes `retrieval: "{{ vars.NAME }}"`.
Mistakes: E240 (a knowledge base's own: unknown configuration, duplicate or empty documents,
a glob matching nothing), E202 (unknown base or document id, with the nearest one), W340 (a
`golden` session naming no documents: the agent would get nothing).
"""

from __future__ import annotations

import glob
import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from benchpack.specs import pack as P
from benchpack.specs.knowledge import (
    RETRIEVALS,
    KnowledgeBase,
    KnowledgeDocument,
    KnowledgeResults,
    KnowledgeToolSpec,
)

from .core import Item, Loc
from .datafiles import first_error
from .diagnostics import suggest_fix
from .files import inside

if TYPE_CHECKING:
    from .world import WorldBuilder

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
SEARCH_TOOLS = {"bm25": ("search",), "grep": ("grep",), "bm25_grep": ("search", "grep")}
"""The tools each configuration offers (the others offer none of the base's own)."""
SHELL_BUILTINS = ("shell", "read_file", "grep", "list_files")


def collect_knowledge(b: WorldBuilder) -> None:
    """Phase 1: knowledge bases by name, across every pack file."""
    for src, model in b.models:
        for i, kb in enumerate(getattr(model, "knowledge", ())):
            b.collect(b.knowledge, kb.name, kb, src, ("knowledge", i), "knowledge base")


def compile_knowledge(b: WorldBuilder) -> None:
    for name, it in b.knowledge.items():
        _compile(b, name, it)


def _title(text: str, fallback: str) -> str:
    m = _HEADING.search(text)
    return m.group(1).strip() if m else fallback


def _compile(b: WorldBuilder, name: str, it: Item) -> None:
    kb: KnowledgeBase = it.obj
    loc: Loc = (it.src, it.path)
    docs: list[tuple[dict[str, Any], tuple[Any, ...]]] = []
    for i, doc in enumerate(kb.documents):
        docs.append(({"id": doc.id, "title": doc.title or _title(doc.text, doc.id),
                      "text": doc.text}, ("documents", i, "id")))
    for i, pattern in enumerate(kb.files):
        docs.extend(_files(b, pattern, loc, ("files", i)))
    if kb.file is not None:
        for row in _jsonl(b, kb.file, loc):
            docs.append((row, ("file",)))
    seen: dict[str, tuple[Any, ...]] = {}
    documents = []
    for d, sub in docs:
        if d["id"] in seen:
            b.err("E240", f"knowledge base `{name}` has two documents with the id `{d['id']}`",
                  loc, sub, "give every document its own id (file names are ids)")
            continue
        seen[d["id"]] = sub
        documents.append(d)
    if not documents:
        b.err("E240", f"knowledge base `{name}` has no documents", loc, (),
              "add `documents:`, `files: [kb/*.md]` or `file: docs.jsonl`")
    retrieval = b.render(kb.retrieval, {"vars": b.pack.vars}, loc, ("retrieval",)).strip()
    if retrieval not in RETRIEVALS:
        hint, fix = suggest_fix(retrieval, list(RETRIEVALS))
        if kb.retrieval.strip() != retrieval:
            fix = None  # the value came from a variable: the YAML text is not what to change
        if retrieval.startswith("embed"):
            hint = ("embeddings need an embedding model and are not offered; every "
                    "configuration listed runs offline: " + ", ".join(RETRIEVALS))
        b.err("E240", f"unknown retrieval configuration `{retrieval}` for knowledge base "
              f"`{name}`", loc, ("retrieval",),
              hint or "one of " + ", ".join(f"`{r}`" for r in RETRIEVALS), fix=fix)
        retrieval = "none"
    digest = hashlib.sha256(json.dumps(documents, sort_keys=True, ensure_ascii=False)
                            .encode("utf-8")).hexdigest()
    b.plan_knowledge[name] = {"name": name, "description": kb.description,
                              "documents": documents, "sha256": digest}
    b.knowledge_retrieval[name] = retrieval
    tools: list[str] = []
    for op in SEARCH_TOOLS.get(retrieval, ()):
        given = getattr(kb.tools, op)
        custom = given if isinstance(given, KnowledgeToolSpec) else None
        tool_name = (custom.name if custom else given) or f"{name}__{op}"
        at: tuple[Any, ...] = ("tools", op) if given else ("name",)
        spec = _tool_spec(kb, name, op, tool_name)
        if custom is not None and not _custom(b, spec, custom, op, loc, at):
            continue
        # a built-in's name (τ²'s `grep`): the environments offering this base give it up
        if tool_name in P.BUILTIN_TOOLS and custom is not None:
            b.knowledge_shadows[tool_name] = name
            b.plan_tools[tool_name] = spec
            b.tool_origin[tool_name] = f"knowledge base `{name}`"
            b.read_tools.add(tool_name)
        else:
            b.add_tool(tool_name, spec, f"knowledge base `{name}`", loc, at)
        tools.append(tool_name)
    b.knowledge_tools[name] = tools


ARGUMENT = {"search": "query", "grep": "pattern"}
"""The one argument each operation reads."""


def _custom(b: WorldBuilder, spec: dict[str, Any], custom: KnowledgeToolSpec, op: str,
            loc: Loc, sub: tuple[Any, ...]) -> bool:
    """A tool definition given in the pack over benchpack's; False (reported) when its
    parameters lack the argument the operation reads."""
    if custom.name in P.BUILTIN_TOOLS and custom.name in b.knowledge_shadows:
        b.err("E214", f"tool name `{custom.name}` is already used by knowledge base "
              f"`{b.knowledge_shadows[custom.name]}`", loc, (*sub, "name"), "rename one of them")
        return False
    if custom.description is not None:
        spec["description"] = custom.description
    if custom.parameters is not None:
        params = custom.parameters
        arg = ARGUMENT[op]
        b.check_schema(params, loc, (*sub, "parameters"), "`parameters`")
        if not isinstance(params.get("properties"), dict) or arg not in params["properties"]:
            b.err("E240", f"the {op} tool's `parameters` have no property `{arg}`", loc,
                  (*sub, "parameters"), f"the {op} tool reads one argument, `{arg}`: "
                  f"declare it under `properties:`")
            return False
        spec["parameters"] = params
    return True


def _tool_spec(kb: KnowledgeBase, name: str, op: str, tool_name: str) -> dict[str, Any]:
    about = f" ({kb.description.strip()})" if kb.description else ""
    if op == "search":
        desc = (f"Search the knowledge base `{name}`{about} for documents relevant to a "
                f"query. Returns up to {kb.top_k} documents, best first, each with its id, "
                "title, score and full text.")
        params = {"type": "object", "properties": {"query": {
            "type": "string", "description": "What to search for, in words."}},
            "required": ["query"]}
    else:
        desc = (f"Search every document of the knowledge base `{name}`{about} for a regular "
                "expression (case-insensitive). Returns up to "
                f"{kb.top_k} documents, the most matches first, each with its id, title, "
                "number of matches and full text.")
        params = {"type": "object", "properties": {"pattern": {
            "type": "string",
            "description": "A regular expression, e.g. `router.*reset` or `fee|charge`."}},
            "required": ["pattern"]}
    res = kb.results
    impl: dict[str, Any] = {"kind": "knowledge", "knowledge": name, "operation": op,
                            "top_k": kb.top_k}
    # only when not the defaults, so the plans of existing packs stay byte for byte
    impl.update({k: v for k, v in (("format", res.format), ("fill", res.fill),
                                   ("timing", res.timing))
                 if v != KnowledgeResults.model_fields[k].default})
    return {"name": tool_name, "description": desc, "parameters": params, "impl": impl,
            "group": None, "effect": "read"}


def _files(b: WorldBuilder, pattern: str, loc: Loc, sub: tuple[Any, ...]
           ) -> list[tuple[dict[str, Any], tuple[Any, ...]]]:
    base = loc[0].path.parent
    if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        b.err("E010", f"`{pattern}` is outside the pack directory", loc, sub,
              "keep every pack file under the folder of pack.yaml")
        return []
    matches = sorted(p for p in glob.glob(str(base / pattern), recursive=True)
                     if Path(p).is_file())
    if not matches:
        b.err("E240", f"`{pattern}` matches no file", loc, sub,
              "paths are relative to the file that declares the knowledge base")
        return []
    out = []
    for p in matches:
        if not inside(b.loaded.root, Path(p)):
            continue
        rel = str(Path(p).relative_to(base))
        text = b.read_text(rel, loc, sub)
        if text is None:
            continue
        doc_id = Path(p).stem
        out.append(({"id": doc_id, "title": _title(text, doc_id), "text": text}, sub))
    return out


def _jsonl(b: WorldBuilder, rel: str, loc: Loc) -> list[dict[str, Any]]:
    text = b.read_text(rel, loc, ("file",))
    if text is None:
        return []
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            doc = KnowledgeDocument.model_validate(json.loads(line))
        except json.JSONDecodeError as exc:
            b.err("E013", f"`{rel}` line {n}: not JSON ({exc.msg})", loc, ("file",))
            break
        except ValidationError as exc:
            b.err("E013", f"`{rel}` line {n}: {first_error(exc)}", loc, ("file",),
                  "each line is {\"id\": …, \"title\": …, \"text\": …}")
            break
        out.append({"id": doc.id, "title": doc.title or _title(doc.text, doc.id),
                    "text": doc.text})
    return out


def environment_knowledge(b: WorldBuilder, env_id: str, refs: list[str], loc: Loc,
                          tools: list[str], files: list[dict[str, Any]]) -> list[str]:
    """The knowledge bases an environment offers; their tools join `tools` (`shell`: the
    documents join the workspace `files` and the shell built-ins join `tools`)."""
    out: list[str] = []
    for i, ref in enumerate(refs):
        if not b.check_ref(ref, b.knowledge, "knowledge base", loc, ("knowledge", i)):
            b.knowledge_unresolved.add(env_id)
            continue
        if ref in out:
            continue
        out.append(ref)
        own = b.knowledge_tools.get(ref, ())
        if b.knowledge[ref].obj.tools.first:
            tools[:] = [*own, *(t for t in tools if t not in own)]
        else:
            tools.extend(t for t in own if t not in tools)
        if b.knowledge_retrieval.get(ref) == "shell":
            tools.extend(t for t in SHELL_BUILTINS if t not in tools)
            for d in b.plan_knowledge[ref]["documents"]:
                data = d["text"].encode("utf-8")
                files.append({"path": f"knowledge/{ref}/{_file_name(d['id'])}.md",
                              "encoding": "utf-8", "content": d["text"],
                              "sha256": hashlib.sha256(data).hexdigest()})
    # the plan's tool of that name answers every call by it: an environment without the base
    # would get its searches where it expects the built-in
    for builtin, owner in b.knowledge_shadows.items():
        if builtin in tools and owner not in out:
            b.err("E214", f"environment `{env_id}` offers the built-in `{builtin}`, but knowledge "
                  f"base `{owner}` took that name for its tool", loc, ("builtin_tools",),
                  f"leave `{builtin}` out of this environment's `builtin_tools:`, or give the "
                  "knowledge base's tool another name")
    return out


def _file_name(doc_id: str) -> str:
    return re.sub(r"[^\w.-]+", "_", doc_id).strip("._") or "doc"


def session_knowledge(b: WorldBuilder, required: list[str], env: dict[str, Any],
                      loc: Loc) -> dict[str, Any] | None:
    """A session's `knowledge` (None when its environment has no knowledge base, and then
    naming documents is a mistake)."""
    bases = list(env.get("knowledge", ()))
    if env["id"] in b.knowledge_unresolved:
        return None  # its unknown base is reported; the documents cannot be checked
    if not bases:
        if required:
            b.err("E202", f"`required_documents` names documents, but environment "
                  f"`{env['id']}` has no knowledge base", loc, ("required_documents",),
                  "add `knowledge: [<name>]` to the environment")
        return None
    by_id = {d["id"]: d for k in bases for d in b.plan_knowledge[k]["documents"]}
    for i, doc_id in enumerate(required):
        if doc_id not in by_id:
            hint, fix = suggest_fix(doc_id, list(by_id))
            b.err("E202", f"unknown document `{doc_id}` in the knowledge bases of environment "
                  f"`{env['id']}`", loc, ("required_documents", i), hint, fix=fix)
    retrievals = sorted({b.knowledge_retrieval[k] for k in bases})
    retrieval = retrievals[0] if len(retrievals) == 1 else "+".join(retrievals)
    context = None
    heading = b.knowledge[bases[0]].obj.heading
    if retrieval in b.knowledge[bases[0]].obj.in_policy:
        pass  # the policy holds them (`in_policy`)
    elif retrieval == "full":
        context = _context(heading, [d for k in bases for d in b.plan_knowledge[k]["documents"]])
    elif retrieval == "golden":
        if not required:
            b.lint("W340", "the retrieval configuration is `golden` but the session names no "
                   "`required_documents`: the agent gets no document", loc, (),
                   "list the documents the task needs under `required_documents`")
        context = _context(heading, [by_id[d] for d in required if d in by_id])
    out: dict[str, Any] = {"retrieval": retrieval, "bases": bases,
                           "sha256": [b.plan_knowledge[k]["sha256"] for k in bases]}
    if required:
        out["required_documents"] = list(required)
    if context is not None:
        out["context"] = context
    return out


def _context(heading: str, docs: list[dict[str, Any]]) -> str:
    parts = [heading.rstrip()] if heading.strip() else []
    for d in docs:
        text = d["text"].strip()
        first, _, rest = text.partition("\n")
        m = _HEADING.match(first)
        if m and m.group(1).strip() == d["title"]:  # the title once, not twice
            text = rest.strip()
        parts.append(f"## {d['title']} (id: {d['id']})\n\n{text}")
    return "\n\n".join(parts)
