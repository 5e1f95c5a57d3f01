"""`bench import tau2 …/banking_knowledge --tau2 CHECKOUT`: τ²'s own texts for the banking
pack, read from the user's checkout through the driver's `extract` (nothing of τ²'s is stored
in this repository) — the agent's and the customer's tool definitions (`specs:` files), what an
unlock or a hand-over shows of each discoverable tool (written over the toolset's `CATALOG`),
and the agent's system prompt of each retrieval variant, `policy.md`, a Jinja file whose branch
`bench compile --var retrieval=…` selects as it selects the knowledge base's configuration.

τ²'s `full_kb` prompt, every document inside its policy in its layout, is the `full` branch
(the knowledge base's `in_policy: [full]` then appends nothing). Its `golden_retrieval` prompt
is per task (the task's required documents inside its policy); a pack's policy is per
environment, so `golden` gets τ²'s `no_knowledge` prompt with the documents appended in
benchpack's layout (`kb-in-prompt`, a declared difference).
"""

from __future__ import annotations

import json
import re
from typing import Any

from . import ImportError_

IN_PROMPT = ("golden_retrieval",)
FALLBACK = {"golden": "no_knowledge"}
"""Our configuration → the τ² variant whose prompt stands in for it (the difference above)."""


def variants(names: dict[str, str | None]) -> list[str]:
    """The τ² variants whose prompts an import asks the driver for (those we offer)."""
    return [k for k, v in names.items() if v is not None and k not in IN_PROMPT]


def policy_template(extract: dict[str, Any], names: dict[str, str | None]) -> str:
    """policy.md: `{% if vars.retrieval == "<ours>" %}<τ²'s prompt>{% elif … %}…{% endif %}`,
    each prompt verbatim (a raw block)."""
    prompts = extract.get("agent_system_prompts") or {}
    ours = {v: k for k, v in names.items() if v is not None and k not in IN_PROMPT}
    branches: list[str] = []
    for mine in [v for v in names.values() if v is not None]:
        theirs = ours.get(mine) or FALLBACK.get(mine)
        text = prompts.get(theirs) if theirs else None
        if not isinstance(text, str):
            raise ImportError_("τ² extract", f"has no agent prompt for the retrieval variant "
                               f"`{theirs}`", "the checkout's driver output is incomplete")
        if "{% endraw %}" in text:
            raise ImportError_(f"τ²'s `{theirs}` prompt", "contains `{% endraw %}`, which a "
                               "template cannot quote")
        branches.append(f'{"if" if not branches else "elif"} vars.retrieval == '
                        f'{json.dumps(mine)} %}}{{% raw %}}{text}{{% endraw %}}')
    return "".join("{% " + b for b in branches) + "{% endif %}"


def catalog(extract: dict[str, Any], names: set[str]) -> str:
    """The toolset's `CATALOG = {…}` with τ²'s descriptions: name → (description,
    [(parameter, type, description, required)])."""
    found = extract.get("discoverable") or {}
    missing = sorted(names - set(found))
    if missing:
        raise ImportError_("τ² extract", "τ² does not describe the discoverable tools "
                           + ", ".join(missing), "the checkout is older than this benchpack")
    lines = ["CATALOG = {"]
    for name in sorted(names):
        info = found[name]
        params = [(p, str(d.get("type", "string")), str(d.get("description", "")),
                   bool(d.get("required", True)))
                  for p, d in (info.get("parameters") or {}).items()]
        lines.append(f"    {name!r}: ({str(info.get('description', ''))!r}, {params!r}),")
    return "\n".join(lines) + "\n}\n"


_CATALOG = re.compile(r"^CATALOG = \{\n.*?^\}\n", re.M | re.S)


def with_catalog(source: str, text: str) -> str:
    source, n = _CATALOG.subn(lambda _m: text, source, count=1)
    if n != 1:
        raise ImportError_("tools/banking.py", "the toolset has no `CATALOG = {` … `}` block")
    return source


def knowledge_tools(extract: dict[str, Any]) -> str:
    """The knowledge base's `results:` and `tools:` lines (pack.yaml) making a search what
    τ²'s bm25/grep/bm25_grep variants show: its tools' names, descriptions and parameters (its
    `grep` takes the built-in's name), its text answers, the top k filled at score 0."""
    found = extract.get("knowledge_tools") or {}
    if set(found) != {"search", "grep"}:
        raise ImportError_("τ² extract", "has no definition of the KB_search and grep tools",
                           "the checkout is older than this benchpack")
    first = sorted(int(t.get("position", -1)) for t in found.values()) == [0, 1]
    lines = ["    results: {format: text, fill: true, timing: true}   # τ²'s text answers, "
             "top k filled at score 0\n", "    tools:   # τ²'s own definitions\n",
             f"      first: {json.dumps(first)}   # τ² offers them before its others\n"]
    for op in ("search", "grep"):
        t = found[op]
        tool = {"name": t["name"], "description": t["description"],
                "parameters": t["parameters"]}
        lines.append(f"      {op}: {json.dumps(tool, ensure_ascii=False)}\n")
    return "".join(lines)


def in_tau2_order(docs: list[dict[str, str]], extract: dict[str, Any]) -> list[dict[str, str]]:
    """The documents in the order τ² loads them (its `glob`, the file system's order), which
    its ranking keeps among equal scores."""
    order = [str(i) for i in extract.get("knowledge_order") or []]
    by_id = {d["id"]: d for d in docs}
    if sorted(order) != sorted(by_id):
        raise ImportError_("τ² extract", "τ²'s knowledge base holds other documents than "
                           "documents/*.json", "import the domain folder of that checkout")
    return [by_id[i] for i in order]
