"""`bench import tau2 …/banking_knowledge -o PACK`: τ²-bench's banking_knowledge domain, as far
as benchpack can run it today — its knowledge base.

Written: the 698 documents (`documents/*.json`, `{id, title, content}`) as one JSONL knowledge
base, `knowledge/banking.jsonl`, in file-name order, with τ²'s search tool name (`KB_search`;
its `grep` is `KB_grep`, `grep` being a benchpack built-in) and top k (10); the retrieval configuration a variable (`--var retrieval=…`), τ²'s names mapped
to ours (`RETRIEVAL_NAMES`); every task's `required_documents` in IMPORT_REPORT.md. No task is
imported yet, and the report says why for each: all 97 need what issue 24's part A brings
(user-side tools, `initial_state`) or the banking toolset — τ²'s `KnowledgeTools`, whose
discoverable tools (`call_discoverable_agent_tool` and 50 others) run every gold action and
are not written for benchpack yet. τ²'s own tie order among equal BM25 scores follows its
directory listing (`Path.glob`, file-system order); the import's is the sorted file names.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from . import ImportError_, ImportResult

RETRIEVAL_NAMES: dict[str, str | None] = {
    "no_knowledge": "none", "full_kb": "full", "golden_retrieval": "golden", "bm25": "bm25",
    "bm25_grep": "bm25_grep", "grep_only": "grep", "terminal_use": "shell",
    "terminal_use_write": None, "openai_embeddings": None, "openai_embeddings_grep": None,
    "qwen_embeddings": None, "qwen_embeddings_grep": None, "all_tools": None,
}
"""τ²'s retrieval variants → benchpack's configuration (None: not offered, see the report)."""
TOP_K = 10
"""τ²'s `PipelineSpec.top_k` / `GrepSpec.top_k` default."""


def read_documents(source: Path) -> list[dict[str, str]]:
    """τ²'s documents as `{id, title, text}`, in file-name order."""
    folder = source / "documents"
    if not folder.is_dir():
        raise ImportError_(str(folder), "not found",
                           "banking_knowledge keeps its knowledge base in documents/*.json "
                           "(take the domain folder from a full clone)")
    docs = []
    for path in sorted(folder.glob("*.json")):
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ImportError_(str(path), f"not a JSON document ({exc})") from None
        if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str)
                                                for k in ("id", "content")):
            raise ImportError_(str(path), "a document has string `id` and `content`")
        docs.append({"id": raw["id"], "title": raw.get("title") or raw["id"],
                     "text": raw["content"]})
    if not docs:
        raise ImportError_(str(folder), "holds no documents/*.json")
    return docs


def _why_skipped(task: dict[str, Any]) -> list[str]:
    why = []
    init = task.get("initial_state") or {}
    for key in ("initialization_data", "initialization_actions", "message_history"):
        if init.get(key):
            why.append(f"initial_state.{key}")
    if task.get("user_tools"):
        why.append("user tools")
    names = {a.get("name") for a in (task.get("evaluation_criteria") or {}).get("actions")
             or []}
    if names:
        why.append("the banking toolset")
    return why or ["the banking toolset"]


def import_banking(source: Path, out: Path) -> ImportResult:
    docs = read_documents(source)
    tasks_path = source / "tasks.json"
    try:
        tasks = json.loads(tasks_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ImportError_(str(tasks_path), f"cannot read the tasks ({exc})") from None
    out.mkdir(parents=True, exist_ok=True)
    (out / "knowledge").mkdir(exist_ok=True)
    files = ["knowledge/banking.jsonl", "pack.yaml", "IMPORT_REPORT.md"]
    (out / files[0]).write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs),
                                encoding="utf-8")
    (out / "pack.yaml").write_text(_pack_yaml(len(docs)), encoding="utf-8")
    dropped = [f"{t.get('id')}: needs {', '.join(_why_skipped(t))}" for t in tasks]
    (out / "IMPORT_REPORT.md").write_text(_report(source, docs, tasks), encoding="utf-8")
    return ImportResult(out=out, files=files, sessions=0, dropped=dropped, notes=[
        f"{len(docs)} documents imported as the knowledge base `banking`; none of the "
        f"{len(tasks)} tasks yet (IMPORT_REPORT.md says what each needs)"])


def _pack_yaml(n: int) -> str:
    return f"""\
# τ²-bench, domain `banking_knowledge`, imported by `bench import tau2`: its knowledge base
# ({n} documents). No task yet: IMPORT_REPORT.md lists what each needs.
#
#   bench compile PACK -o build/ --var retrieval=bm25_grep
#   (none | full | golden | bm25 | grep | bm25_grep | shell; τ²'s embeddings variants need
#   an embedding model and are not offered)
benchpack: 1
name: tau2-banking-knowledge
description: τ²-bench banking_knowledge's knowledge base (no tasks imported yet).
vars:
  retrieval: bm25
knowledge:
  - name: banking
    description: Rho-Bank's internal and customer-facing documentation
    file: knowledge/banking.jsonl
    retrieval: "{{{{ vars.retrieval }}}}"
    top_k: {TOP_K}
    tools: {{search: KB_search, grep: KB_grep}}   # τ²'s KB_search; its `grep` is a built-in here
environments:
  - id: bank
    description: Rho-Bank's customer support desk.
    builtin_tools: []
    knowledge: [banking]
"""


def _report(source: Path, docs: list[dict[str, str]], tasks: list[dict[str, Any]]) -> str:
    reasons: Counter[str] = Counter()
    for t in tasks:
        reasons.update(_why_skipped(t))
    lines = [
        "# Import report: τ²-bench banking_knowledge", "",
        f"Source: `{source}`", "",
        f"- documents imported: {len(docs)} (knowledge base `banking`, "
        "`knowledge/banking.jsonl`, file-name order)",
        f"- tasks imported: 0 of {len(tasks)}", "",
        "## Why no task yet", "",
        "| needs | tasks |", "|---|---|",
        *[f"| {k} | {v} |" for k, v in reasons.most_common()], "",
        "User tools and initial states are issue 24's part A; the banking toolset (τ²'s "
        "`KnowledgeTools`: the discoverable tools behind `call_discoverable_agent_tool`, "
        "`unlock_discoverable_agent_tool`, `give_discoverable_user_tool`) is not written for "
        "benchpack yet.", "",
        "## Retrieval configurations", "",
        "| τ² variant | benchpack `--var retrieval=` |", "|---|---|",
        *[f"| `{k}` | {f'`{v}`' if v else 'not offered (embedding model or write shell)'} |"
          for k, v in RETRIEVAL_NAMES.items()], "",
        "Differences: a search returns only documents sharing a token with the query (τ² "
        "fills its top 10 with score-0 documents); ties keep file-name order (τ²'s follow its "
        "directory listing); search results are JSON `[{id, title, score, content}]` (τ²'s are "
        "text with a timing line); τ²'s `grep` tool is `KB_grep` (`grep` is a benchpack built-in); "
        "`full`/`golden` prompt text is benchpack's layout.", "",
        "## Tasks", "",
        "| task | required documents | needs |", "|---|---|---|",
        *[f"| {t.get('id')} | {len(t.get('required_documents') or [])} | "
          f"{', '.join(_why_skipped(t))} |" for t in tasks], "",
    ]
    return "\n".join(lines)
