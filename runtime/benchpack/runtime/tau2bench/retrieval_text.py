"""What the agent sees of a knowledge-base search, against τ²-bench's own (issue 24): for each
retrieval variant with search tools (bm25, grep, bm25_grep), the imported pack compiled with
that `--var retrieval` and τ²'s banking_knowledge environment of that variant (run by
`retrieval_driver.py` with τ²'s Python) get the same calls; every answer must be the same text,
character for character, and each search tool the same name, description, parameters and
place in the list of tools.

One figure is set aside: the milliseconds of `[Timing: retrieval=…ms, reranking=…ms,
total=…ms]`, the last line of a KB_search answer, measured on each side and different from call
to call on either; the rest of the line must be the same on both (`timed` counts them).

The calls are those of `retrieval.queries_of` — every document title as a query, every title's
longest word and a few regular expressions as a pattern — and a few edge cases (`EDGE_…`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchpack.specs.knowledge import KnowledgeImpl, PlanKnowledge

from ..env.knowledge import call_knowledge
from .retrieval import ask_driver

VARIANTS = {"bm25": "bm25", "grep": "grep_only", "bm25_grep": "bm25_grep"}
"""Our retrieval configuration → τ²'s variant."""
_TIMING = re.compile(r"\n\n\[Timing: [^\n]*\]\Z")
_ARGUMENT = {"search": "query", "grep": "pattern"}


@dataclass
class TextReport:
    compared: int = 0
    """Answers compared."""
    tools_compared: int = 0
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    timed: int = 0
    """Answers whose timing line's milliseconds were set aside (both sides had the line)."""
    per_variant: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        per = ", ".join(f"{k} {v}" for k, v in self.per_variant.items())
        return [f"answer texts compared: {self.compared} ({per})",
                f"search tools compared (name, description, parameters, place): "
                f"{self.tools_compared}",
                f"text mismatches: {len(self.mismatches)}",
                f"timing lines (milliseconds set aside): {self.timed}"]


def search_tools(plan: dict[str, Any], env: str) -> list[tuple[str, KnowledgeImpl]]:
    """The environment's knowledge tools in its order: (name, implementation)."""
    out = []
    for name in plan["environments"][env]["tools"]:
        impl = (plan["tools"].get(name) or {}).get("impl") or {}
        if impl.get("kind") == "knowledge":
            out.append((name, KnowledgeImpl.model_validate(impl)))
    return out


EDGE_QUERIES = ("", "   ", "zzqx qqzz", "路由器 指示灯", "FEE")
"""Besides the titles: nothing to search, a blank, words no document has (all score 0, the
fill alone), Chinese (benchpack splits it into characters, τ² does not), capitals."""
EDGE_PATTERNS = ("", "   ", "zzqxqqzz", "(?P<x>fee)", "FEE|Charge")
"""Besides the titles' words: nothing, a blank, no match, a Python-only group, capitals."""


def calls_of(tools: list[tuple[str, KnowledgeImpl]], queries: list[str],
             patterns: list[str]) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    for name, impl in tools:
        asked = [*queries, *EDGE_QUERIES] if impl.operation == "search" \
            else [*patterns, *EDGE_PATTERNS]
        calls.extend((name, {_ARGUMENT[impl.operation]: q}) for q in asked)
    return calls


def run_tau2_texts(checkout: Path, python: str,
                   calls: dict[str, list[tuple[str, dict[str, Any]]]]) -> dict[str, Any]:
    """τ²'s side: `{τ² variant: {tools, answers}}`."""
    texts: dict[str, Any] = ask_driver(checkout, python, {"variants": calls}, "environment",
                                       1800)["texts"]
    return texts


def _untimed(text: str) -> tuple[str, bool]:
    """The text with the timing line's milliseconds (only them) replaced by `…`."""
    m = _TIMING.search(text)
    if m is None:
        return text, False
    return text[:m.start()] + re.sub(r"=\d+ms", "=…ms", m.group()), True


def compare_texts(plans: dict[str, dict[str, Any]], env: str, base: str,
                  tau2: dict[str, Any], calls: dict[str, list[tuple[str, dict[str, Any]]]]
                  ) -> TextReport:
    """`plans`: our configuration → the compiled plan (JSON); `calls`: τ²'s variant → the
    calls made on both sides; `tau2`: `run_tau2_texts`'s answer."""
    report = TextReport()
    for ours, plan in plans.items():
        variant = VARIANTS[ours]
        kb = PlanKnowledge.model_validate(plan["knowledge"][base])
        tools = search_tools(plan, env)
        impls = dict(tools)
        theirs = tau2[variant]
        # each search tool as offered: the same definition, at the same place in the list
        their_tools = {t["name"]: (i, t) for i, t in enumerate(theirs["tools"])}
        env_tools = plan["environments"][env]["tools"]
        for name, _ in tools:
            report.tools_compared += 1
            mine = {"name": name, "description": plan["tools"][name]["description"],
                    "parameters": plan["tools"][name]["parameters"]}
            place, their = their_tools.get(name, (None, None))
            if their != mine or place != env_tools.index(name):
                report.mismatches.append({"variant": ours, "tool": name, "benchpack": mine,
                                          "tau2": their, "places": [env_tools.index(name),
                                                                    place]})
        for (name, args), text in zip(calls[variant], theirs["answers"], strict=True):
            answer = call_knowledge(kb, impls[name], args)
            mine_text = answer if isinstance(answer, str) else json.dumps(answer,
                                                                          ensure_ascii=False)
            a, timed_a = _untimed(mine_text)
            b, timed_b = _untimed(text)
            report.compared += 1
            report.per_variant[ours] = report.per_variant.get(ours, 0) + 1
            if a != b:
                at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                          min(len(a), len(b)))
                # where they part, with some context (answers are ten whole documents)
                report.mismatches.append({"variant": ours, "tool": name, "args": args,
                                          "at": at, "benchpack": a[max(0, at - 80):at + 160],
                                          "tau2": b[max(0, at - 80):at + 160]})
            elif timed_a and timed_b:
                report.timed += 1
    return report
