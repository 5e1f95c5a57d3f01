"""Lints: authoring mistakes that compile but weaken the benchmark.

Warnings by default, errors under `--strict`; silence one with `lint: {ignore: [Wxxx]}` on the
session or the pack. Text comparisons are normalised (case, punctuation, whitespace) and fuzzy,
with a cheap token-overlap prefilter so large packs stay fast.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
from typing import Any

from rapidfuzz import fuzz

from benchpack.specs.text import grams, width, words

WINDOWS = {"emergent": (1, 3), "critical": (4, 7), "recovery": (8, 10)}
_STOP = frozenset(
    ["a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "by", "at", "from", "as", "is", "are", "be", "been", "was", "were", "it", "its", "this", "that", "these", "those", "your", "my", "our", "their", "his", "her", "i", "you", "we", "they", "me", "us", "them", "do", "does", "did", "not", "no", "so", "if", "then", "than", "into", "about", "over", "under", "up", "out", "all", "any", "each", "every", "some", "such", "can", "could", "should", "would", "will", "must", "may", "might", "also", "just", "only", "very", "more", "most", "other", "own", "same", "too"]
)
_REQ_VERB = re.compile(
    r"\b(must|should|shall|include[sd]?|includes|state[sd]?|list[sd]?|provide[sd]?|contain[sd]?|"
    r"send[s]?|create[sd]?|write[s]?|give[s]?|mention[s]?|name[sd]?|explain[s]?|add[s]?|use[sd]?|"
    r"delete[sd]?|remove[sd]?|update[sd]?|set[s]?|report[s]?|ask[s]?)\b",
    re.IGNORECASE,
)
_BUNDLE = re.compile(r"\b(and also|as well as|additionally|in addition|plus also)\b|此外|另外|并且|同时还",
                     re.IGNORECASE)
_REQ_VERB_ZH = re.compile(r"必须|应当|应该|需要|须|应|列出|说明|写明|提到|包含|包括|发送|创建|删除|更新")
# A clause opening with one of these is an alternative to the one before: met either way, it is
# one requirement, not a second one.
_OR_CLAUSE = re.compile(r"^(alternatively|or|otherwise|failing that|either)\b|^(或者|或是|或|要么|否则)",
                        re.IGNORECASE)
_GRADER_NOTE = re.compile(r"^(substantially|similar|equivalent|wording|e\.g\.|for example|i\.e\.)",
                          re.IGNORECASE)


def normalise(text: str) -> str:
    """Words, and each character of unsegmented scripts, joined by spaces (`specs.text`)."""
    return " ".join(words(text))


def _content(word: str) -> bool:
    return word not in _STOP and (len(word) > 2 or word.isdigit() or not word.isascii())


def content_tokens(text: str) -> set[str]:
    return grams(text, _content)


def leaks(secret: str, visible: str) -> bool:
    """Whether `secret` already appears (near-verbatim) in `visible`."""
    s, v = normalise(secret), normalise(visible)
    if not s or not v:
        return False
    if s in v:
        return width(s) >= 12
    toks = content_tokens(secret)
    if len(toks) < 3:
        return False
    vt = content_tokens(visible)
    if len(toks & vt) / len(toks) < 0.8:
        return False
    return fuzz.partial_ratio(s, v) >= 85


def bundles(text: str) -> bool:
    """Whether a checklist item packs several independent requirements."""
    if _BUNDLE.search(text):
        return True
    parts = [p.strip() for p in re.split(r"(?<=[.;!?])\s+(?=[A-Z0-9])|;\s*|(?<=[。；！？])", text)
             if p.strip()]
    parts = [p for p in parts if not _GRADER_NOTE.match(p) and not _OR_CLAUSE.match(p)]
    with_verbs = [p for p in parts if _REQ_VERB.search(p) or _REQ_VERB_ZH.search(p)]
    if len(with_verbs) >= 2:
        return True
    return bool(re.search(r"(^|\s)(\(?[1-9][.)]|[a-d]\))\s.*\s(\(?[2-9][.)]|[b-e]\))\s", text))


def required_tools(rule: Any) -> list[str]:
    """Tools a rule can only pass by calling (a plain presence check, a count of at least one,
    a sequence, or any of these under `all`)."""
    if not isinstance(rule, dict):
        return []
    if "all" in rule:
        return [t for r in rule["all"] or [] for t in required_tools(r)]
    out = list(rule.get("sequence") or [])
    tool = rule.get("tool")
    if tool and not rule.get("query"):
        count = rule.get("count")
        if count is not None:
            if max(count.get("min") or 0, count.get("equals") or 0) >= 1:
                out.append(tool)
        elif rule.get("exists") is not False:
            out.append(tool)
    return out


def _banned_tool(when: dict[str, Any]) -> str | None:
    """The tool pattern a cap condition punishes on any call, or None when it is narrower."""
    if when.get("tool") and set(when) <= {"tool", "exists"} and when.get("exists", True):
        return str(when["tool"])
    return None


Report = Callable[[str, str, tuple[Any, ...], str | None], None]


def lint_session(s: dict[str, Any], report: Report, earlier_text: Iterable[str],
                 workspace_text: Iterable[str]) -> None:
    """Run every lint on one compiled session dict. `report(code, message, sub_path, hint)`."""
    protocol = s["protocol"]
    request = s.get("request") or ""
    visible = [request]
    if s["trigger"].get("payload"):
        visible.append(str(s["trigger"]["payload"]))

    # W308 and the like: what the session's protocol needs (`ProtocolCompiler.lint`)
    from .protocols import protocol_compiler

    own = protocol_compiler(protocol).lint
    if own is not None:
        own(s, report)

    # W301: hidden intents / hidden goal leaked into what the agent sees first
    for i, it in enumerate(s["hidden_intents"]):
        if any(leaks(it["text"], v) for v in visible):
            report("W301", f"hidden intent `{it['id']}` is already stated in the initial request",
                   ("hidden_intents", i, "text"),
                   "a hidden intent must be absent from the request; reword one of them")
    if s["scenario"]:
        goal = s["scenario"]["hidden_goal"]
        shown = visible + [t["user"] for t in s["dialogue"]]
        if any(leaks(goal, v) for v in shown):
            report("W301", "the hidden goal is stated to the assistant", ("scenario", "hidden_goal"),
                   "the goal must be recoverable from anchors, never said outright")

    # W302: a stage line already disclosed by the request or an earlier stage
    stage_src: list[str] = [request]
    for i, st in enumerate(s["stages"]):
        if any(leaks(st["line"], v) for v in stage_src):
            report("W302", f"stage `{st['id']}` repeats information disclosed earlier",
                   ("stages", i, "line"), "each stage should disclose something new")
        stage_src.append(st["line"])

    # W303: a trigger rubric spelled out in the user's own messages before the trigger
    for i, t in enumerate(s["triggers"]):
        said = visible + [d["user"] for d in s["dialogue"] if d["turn"] <= t["turn"]]
        if any(leaks(t["rubric"]["pass"], v) for v in said):
            report("W303", f"the pass criterion of trigger `{t['id']}` is stated by the user",
                   ("triggers", i, "rubric", "pass"), "the assistant must infer it, not be told")

    # W304: a ground-truth fact given away by the user
    if s["graph"]:
        # where the author must reword: the stage line (or the request) that says the fact
        user_lines: list[tuple[tuple[Any, ...], str]] = [(("request",), request)] + [
            (("stages", i, "line"), st["line"]) for i, st in enumerate(s["stages"])]
        norm_lines = [(where, normalise(x)) for where, x in user_lines]
        for t in s["graph"]["triples"]:
            head, tail = normalise(t["head"]), normalise(t["tail"])
            if width(tail) < 4 or width(head) < 3 or head == tail:
                continue
            for where, line in norm_lines:
                if f" {tail} " in f" {line} " and f" {head} " in f" {line} ":
                    report("W304", f"ground-truth fact ({t['head']} | {t['relation']} | "
                           f"{t['tail']}) is stated by the user", where,
                           "the user should ask for facts, not supply them; reword the line or "
                           "silence W304 for this session")
                    break

    # W305: more than one primary anchor in one authored user turn
    primary = {a["id"] for a in (s["scenario"] or {}).get("anchors", []) if a["primary"]}
    for i, d in enumerate(s["dialogue"]):
        n = sum(1 for a in d["discloses"] if a in primary)
        if n > 1:
            report("W305", f"turn {d['turn']} discloses {n} primary anchors", ("dialogue", i,
                   "discloses"), "drip at most one primary anchor per user turn")

    # W316/W317: trigger anchors disclosed in time, and enough of them for the trigger type
    disclosed_at: dict[str, int] = {}
    for d in s["dialogue"]:
        for a in d["discloses"]:
            disclosed_at.setdefault(a, d["turn"])
    for i, t in enumerate(s["triggers"]):
        if s["dialogue"]:
            late = [a for a in t["anchors"] if disclosed_at.get(a, 10**9) > t["turn"]]
            for a in late:
                when = (f"only at turn {disclosed_at[a]}" if a in disclosed_at
                        else "by no dialogue turn")
                report("W316", f"trigger `{t['id']}` at turn {t['turn']} relies on anchor `{a}`, "
                       f"disclosed {when}", ("triggers", i, "anchors"),
                       "disclose the anchor at or before the trigger's turn")
        minimum = {"emergent": 1, "critical": 2}.get(t["type"], 0)
        if len(t["anchors"]) < minimum:
            report("W317", f"{t['type']} trigger `{t['id']}` relies on {len(t['anchors'])} "
                   f"anchor(s); it needs at least {minimum}", ("triggers", i, "anchors"),
                   "Emergent tests one anchor, Critical the synthesis of two or more")

    # W306/W310: trigger windows and counts
    for i, t in enumerate(s["triggers"]):
        lo, hi = WINDOWS[t["type"]]
        if not lo <= t["turn"] <= hi:
            report("W306", f"{t['type']} trigger at turn {t['turn']} is outside its window "
                   f"(turns {lo}–{hi})", ("triggers", i, "turn"),
                   "Emergent 1–3, Critical 4–7, Recovery 8–10")
    if s["triggers"] and not 3 <= len(s["triggers"]) <= 6:
        report("W310", f"{len(s['triggers'])} trigger points; a dialogue should have 3–6",
               ("triggers",), None)

    # W307: bundled checklist items
    for i, c in enumerate(s["checklist"]):
        if c["grader"] == "rubric" and bundles(c["text"]):
            report("W307", f"checklist item `{c['id']}` seems to bundle several requirements",
                   ("checklist", i, "text"), "split it into one item per requirement")

    # W318: a tool the checklist requires and a cap forbids outright: a correct agent fails
    caps = (s.get("verify") or {}).get("caps") or []
    for ci, cap in enumerate(caps):
        banned = _banned_tool(cap.get("when") or {})
        if banned is None:
            continue
        for c in s["checklist"]:
            needed = [t for t in required_tools(c.get("rule")) if fnmatch.fnmatchcase(t, banned)]
            if needed:
                report("W318", f"checklist item `{c['id']}` requires a call of `{needed[0]}`, "
                       f"which cap `{cap['id']}` punishes on any call: a correct agent always "
                       "fails", ("verify", "caps", ci, "when"),
                       "narrow the cap with `where:` to the harmful calls, or drop the item")
                break

    # W309: persistent intents without supporting evidence
    earlier = [normalise(x) for x in earlier_text]
    files = [normalise(x) for x in workspace_text]
    for i, it in enumerate(s["hidden_intents"]):
        if it["scope"] != "persistent" or it["evidence"]:
            continue
        if not any(leaks(it["text"], e) for e in earlier + files):
            report("W309", f"persistent intent `{it['id']}` has no supporting evidence in earlier "
                   "sessions or the workspace", ("hidden_intents", i),
                   "list where it can be recovered with `evidence: [session-id or file path]`")


# W322: a style directive that contradicts the style's word bounds. The simulator is told both
# ("terse messages of 5-25 words; write at length"), and an LLM user follows one at random.
_LONG = re.compile(r"\b(?:verbose|wordy|lengthy|long-winded|at length|long messages?)\b"
                   r"|verbosity\W+(?:\w+\W+){0,6}?(?:high|very high)\b|冗长|长篇|啰嗦|话多",
                   re.IGNORECASE)
_SHORT = re.compile(r"\b(?:concise|terse|brief|succinct|short messages?|one-liners?)\b"
                    r"|verbosity\W+(?:\w+\W+){0,6}?(?:low|very low)\b|简洁|简短|言简意赅",
                    re.IGNORECASE)
_WORDS = re.compile(r"(\d+)\s*(?:-|–|to)\s*(\d+)\s*words|(?:at most|under|no more than)\s*(\d+)"
                    r"\s*words|(?:at least|over|more than)\s*(\d+)\s*words", re.IGNORECASE)
CHATTY_FROM = 40
"""The fewest words of a chatty style (40–100 by default): a "write at length" directive with
an upper bound under it contradicts the bounds, as a "be brief" one does with a lower bound
above a terse style's 25."""


def style_contradictions(directives: Iterable[str], lo: int, hi: int) -> list[tuple[int, str]]:
    """(directive index, why) for each directive contradicting the word bounds `lo`–`hi`."""
    out = []
    for i, d in enumerate(directives):
        m = _WORDS.search(d)
        if m:
            a, b, most, least = (int(x) if x else None for x in m.groups())
            want_lo, want_hi = (a, b) if a is not None else (least, most)
            if (want_hi is not None and want_hi < lo) or (want_lo is not None and want_lo > hi):
                out.append((i, f"it asks for {m.group(0)}, the bounds are {lo}–{hi} words"))
            continue
        if _LONG.search(d) and not _SHORT.search(d) and hi < CHATTY_FROM:
            out.append((i, f"it asks for long messages, the bounds are {lo}–{hi} words"))
        elif _SHORT.search(d) and not _LONG.search(d) and lo > 25:
            out.append((i, f"it asks for short messages, the bounds are {lo}–{hi} words"))
    return out
