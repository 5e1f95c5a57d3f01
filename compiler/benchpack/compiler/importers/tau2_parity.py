"""The parts of `bench import tau2` that make a pack behave as τ² does (issue 23).

`import_pack(..., tau2=EXTRACT)` receives what τ²'s own code says about the domain — the
driver's `extract` (`benchpack.runtime.tau2bench`), obtained by the CLI from the user's
checkout: the database as τ²'s models load it, the agent's tool definitions, the policy and
the prompts. This module turns that into pack files (nothing of τ²'s is stored in this
repository) and assembles the toolset module: the shared prelude inlined, the pydantic
version of τ²'s error texts, and the `--fix` switches, each a recorded difference.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import ImportError_

TOOLS_DIR = Path(__file__).with_name("tau2_tools")
PRELUDE_START = "# ---- prelude"
PRELUDE_END = "# ---- end of prelude"
OPTIONS = {"check_arguments": False, "atomic": False, "plain_errors": True}
"""The toolset options of every τ² import: τ² checks no argument, keeps what a failing tool
changed, and shows the agent `Error: {exception}`."""

FIXES: dict[str, dict[str, tuple[str, str]]] = {
    # domain → fix → (what changes, why τ² is thought wrong)
    "retail": {
        "payment-rounding": (
            "`modify_pending_order_items` rounds the price difference to cents before it is "
            "paid or refunded (τ² records the float sum, e.g. 94.54999999999995, as the "
            "payment amount and in the gift card balance before rounding the balance)",
            "a payment of a fraction of a cent is not money anyone can pay"),
        "item-prices": (
            "`modify_pending_order_items` gives each changed item its own new variant's price "
            "and options (τ² gives every changed item the price and options of the last new "
            "item in the list)",
            "τ²'s result depends on the order the agent lists the items in: the same "
            "correct change scores 1 or 0"),
    },
}


def check_fixes(domain: str, fixes: Sequence[str]) -> list[str]:
    known = FIXES.get(domain, {})
    for fix in fixes:
        if fix not in known:
            raise ImportError_(f"--fix {fix}", f"not a fix of the τ² domain `{domain}`",
                               "fixes: " + (", ".join(sorted(known)) or "none for this domain"))
    return sorted(set(fixes))


def differences(domain: str, fixes: Sequence[str]) -> list[dict[str, str]]:
    """The recorded differences from τ² an import makes (one per `--fix`)."""
    return [{"id": f"fix:{f}", "domain": domain, "what": FIXES[domain][f][0],
             "why": FIXES[domain][f][1]} for f in fixes]


def toolset_source(module: Path, pydantic: str | None, fixes: Sequence[str]) -> str:
    """The toolset module as written into the pack: the prelude inlined where the module marks
    it, the pydantic version of τ²'s Python, the fixes switched on."""
    source = module.read_text(encoding="utf-8")
    start, end = source.find(PRELUDE_START), source.find(PRELUDE_END)
    if start >= 0 and end > start:
        line_end = source.index("\n", end) + 1
        prelude = (TOOLS_DIR / "prelude.py").read_text(encoding="utf-8")
        body = prelude[_after_docstring(prelude):].strip("\n")
        source = (source[:start] + f"{PRELUDE_START} (inlined from benchpack's tau2_tools/"
                  f"prelude.py) ----\n{body}\n{PRELUDE_END} ----\n" + source[line_end:])
    source = _inline(source)
    if pydantic:
        version = ".".join(pydantic.split(".")[:2])
        source = re.sub(r'^PYDANTIC_DOCS = "[^"]*"', f'PYDANTIC_DOCS = "{version}"', source,
                        count=1, flags=re.M)
    if fixes:
        line = "FIXES = frozenset({" + ", ".join(f'"{f}"' for f in fixes) + "})"
        source, n = re.subn(r"^FIXES = frozenset\(\)", line, source, count=1, flags=re.M)
        if n != 1:
            raise ImportError_(str(module), "the toolset has no `FIXES = frozenset()` line")
    return source


_INLINE = re.compile(r"^# ---- inline (\S+\.py) ----\n.*?^# ---- end of inline ----\n",
                     re.M | re.S)


def _inline(source: str) -> str:
    """Each `# ---- inline <file> ----` … `# ---- end of inline ----` block (an import, so the
    module runs from the repository too) replaced by that tau2_tools file's code: a toolset
    too long for one file is written in parts, and a pack module is one file. A part's own
    inline blocks go: the module inlines every part it needs, in order."""
    def part(m: re.Match[str]) -> str:
        path = TOOLS_DIR / m.group(1)
        text = path.read_text(encoding="utf-8")
        body = _INLINE.sub("", text[_after_docstring(text):]).strip("\n")
        return (f"# ---- inline {m.group(1)} (inlined from benchpack's tau2_tools/"
                f"{m.group(1)}) ----\n{body}\n# ---- end of inline ----\n")
    return _INLINE.sub(part, source)


def _after_docstring(source: str) -> int:
    """Where the module's code starts (after its docstring)."""
    import ast

    tree = ast.parse(source)
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and \
            isinstance(first.value.value, str):
        lines = source.splitlines(True)
        return sum(len(x) for x in lines[:first.end_lineno or 0])
    return 0


def check_extract(extract: dict[str, Any], domain: str, tools: list[str]) -> None:
    """The extract is of this domain, and our toolset has every tool τ² offers."""
    if extract.get("domain") != domain:
        raise ImportError_(f"τ² extract of `{extract.get('domain')}`",
                           f"the domain folder is `{domain}`")
    missing = [t["name"] for t in extract.get("tools", []) if t["name"] not in tools]
    if missing:
        raise ImportError_(f"τ² domain `{domain}`", "τ² offers tools our toolset does not "
                           "implement: " + ", ".join(missing),
                           "the checkout is newer than this benchpack")


def specs_json(extract: dict[str, Any]) -> str:
    """`tools/<domain>.specs.json`: each tool's description and parameters exactly as τ²'s
    `Tool.openai_schema` offers them, in τ²'s order."""
    out = {}
    for t in extract["tools"]:
        fn = t["schema"]["function"]
        out[t["name"]] = {"description": fn["description"], "parameters": fn["parameters"]}
    return json.dumps(out, ensure_ascii=False, indent=1) + "\n"


def tool_order(extract: dict[str, Any]) -> list[str]:
    return [t["name"] for t in extract["tools"]]


def prompt_files(extract: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """The τ² texts the lead's integration needs, as files under `tau2/` (path → (content,
    what it is)). Not pack fields yet: the pack does not read them."""
    files: dict[str, tuple[str, str]] = {
        "tau2/agent_system_prompt.md": (extract["agent_system_prompt"],
                                        "the system prompt of τ²'s `LLMAgent` (instructions "
                                        "and the policy)"),
        "tau2/first_agent_message.txt": (extract["first_agent_message"],
                                         "the agent's first message, sent before the user "
                                         "simulator speaks"),
    }
    for i, variant in enumerate(extract.get("user_prompts") or []):
        n = "" if i == 0 else f"_{i + 1}"
        files[f"tau2/user_system_prompt{n}.prefix.md"] = (
            variant["prefix"], f"the user simulator's system prompt before the scenario "
            f"(variant {i + 1})")
        files[f"tau2/user_system_prompt{n}.suffix.md"] = (
            variant["suffix"], f"… and after it (variant {i + 1})")
    scenarios = {t["id"]: {"scenario": t["scenario"], "user_prompt": t["user_prompt"] + 1,
                           "user_tools": t["user_tools"]} for t in extract.get("tasks") or []}
    files["tau2/user_scenarios.json"] = (
        json.dumps(scenarios, ensure_ascii=False, indent=1) + "\n",
        "per task: `str(user_scenario)` (what the simulator's prompt holds between prefix and "
        "suffix), which prompt variant, the user's tools")
    judge = extract.get("nl_judge") or {}
    files["tau2/nl_judge.json"] = (
        json.dumps(judge, ensure_ascii=False, indent=1) + "\n",
        "the NL-assertion judge's messages for a marked conversation and marked assertions "
        "(`markers` says which text stands for what), its model and arguments")
    meta = {"python": extract.get("python"), "pydantic": extract.get("pydantic"),
            "tools": [{k: t[k] for k in ("name", "type", "mutates_state")}
                      for t in extract["tools"]],
            "user_tools": [{**{k: t[k] for k in ("name", "type", "mutates_state")},
                            "schema": t["schema"]} for t in extract.get("user_tools") or []],
            "user_db": extract.get("user_db"), "defaults": extract.get("defaults")}
    files["tau2/extract.json"] = (
        json.dumps(meta, ensure_ascii=False, indent=1) + "\n",
        "τ²'s Python and pydantic versions, each tool's type and `mutates_state`, the user's "
        "tools and database, τ²'s defaults (max steps, max errors, models, temperatures)")
    return files


_QUIRKS = {
    "airline": ["τ²'s quirks are kept, because its gold final states depend on them: new "
                "reservation ids HATHAT, HATHAU, HATHAV; certificate ids certificate_3221322 "
                "… 3221324; the clock fixed at 2024-05-15T15:00:00; a cancellation neither "
                "credits gift cards nor releases seats; a flight change does not move seats."],
    "retail": ["`modify_pending_order_items` keeps τ²'s arithmetic unless a `--fix` says "
               "otherwise: the price difference is not rounded before it is paid (amounts such "
               "as 94.54999999999995), and every changed item takes the price and options of "
               "the last new item listed (so the result depends on the order of the items)."],
    "telecom": ["Both toolsets (the operator's and the customer's phone) hold both services and "
                "run `sync_sides` after every call (τ²'s `sync_tools`). One difference: a new "
                "draft bill (`refuel_data` for a customer without one) is named `B` + 8 hex "
                "digits derived from the customer and the number of bills, where τ² draws them "
                "at random (`draft-bill-id`); τ²'s `break_vpn` degrades the VPN details all its "
                "phones share, ours only this phone's."],
}


def report(domain: str, extract: dict[str, Any] | None, prompts: dict[str, tuple[str, str]],
           diffs: list[dict[str, str]]) -> list[str]:
    """IMPORT_REPORT.md's section on the tools and on comparability with τ²."""
    lines = ["## Tools and comparability with τ²", "",
             f"`tools/{domain}.py` is benchpack's own implementation of τ²'s `{domain}` tools, "
             "written to behave as τ²'s code does: the same result texts, error texts and "
             "order of checks, the same arithmetic, changes that stay when a call fails "
             "halfway (`atomic: false`), no argument check before the call "
             "(`check_arguments: false`: a wrong argument fails as it does in τ²), and the "
             "agent reads `Error: <message>` (`plain_errors: true`). "
             "`bench parity tau2 --tau2 CHECKOUT --domain " + domain + "` compares it call by "
             "call with τ²'s own code.", ""]
    lines += [f"- {q}" for q in _QUIRKS.get(domain, [])]
    if extract is None:
        lines += ["", "**Not comparable with τ²-bench scores.** This import did not read a τ² "
                  "checkout: the tool descriptions and parameter schemas the agent reads are "
                  "benchpack's own (from `tools/" + domain + ".py`'s docstrings and type "
                  "hints, not τ²'s), and the fixtures are " + (
                      "db.toml and user_db.toml with τ²'s model defaults filled in by benchpack "
                      "(`tau2_telecom.SHAPES`)" if domain == "telecom" else
                      "db.json as released (τ²'s models add default fields when they load it, "
                      "which its tool results show)") + ". Import with "
                  "`--tau2 CHECKOUT` for τ²'s own definitions, database and prompts."]
    else:
        lines += ["", f"Read from the τ² checkout with τ²'s own Python ({extract.get('python')}, "
                  f"pydantic {extract.get('pydantic')}): the database as τ²'s models load it "
                  "(the fixtures), each tool's description and parameters exactly as τ² offers "
                  f"them (`tools/{domain}.specs.json`, the toolset's `specs:`), the agent's "
                  "system prompt (τ²'s instructions around the policy: `policy.md`), the "
                  "greeting (`defaults.conversation.greeting`), the user simulator's system "
                  "prompt (`tau2/user_system.j2`, with each task's scenario text as "
                  "`user.text`) and the NL-assertion judge's prompt (`tau2/assertions_judge.j2`), "
                  "both named in `prompts:`. The files τ²'s driver returned are kept for "
                  "reference:", ""]
        lines += [f"- `{rel}`: {what}" for rel, (_, what) in prompts.items()]
    if diffs:
        lines += ["", "**Deliberate differences from τ² (not comparable with τ²-bench "
                  "scores):**", ""]
        lines += [f"- `{d['id']}`: {d['what']}. Why: {d['why']}." for d in diffs]
    elif extract is not None:
        lines += ["", "No deliberate difference from τ²'s tools."]
    return lines
