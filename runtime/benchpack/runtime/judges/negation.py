"""Negative criteria for the `rules` judges ("should not …", "must not …", "never …", "不应 …",
"不得 …", "不要 …", "禁止 …").

A keyword heuristic reads "Should not send a first-contact email" as a list of words to find, so
an agent that does nothing fails it and one that does the forbidden thing passes. Here a
negative sentence is judged by the *absence* of what it forbids instead:

- the forbidden part is what follows the negation, minus a condition ("without …", "before …",
  "unless …", "在未…的情况下", "未…就", "在…之前"), which says *when* it is forbidden;
- fewer than `ABSENT` (half) of its content words in what the agent produced: not shown, the
  criterion holds (YES). Stricter than the 60 % at which a positive criterion counts as shown:
  a keyword match misses reworded acts ("paid" for "pay"), so a doubtful absence leans to
  undecided rather than to a YES;
- otherwise the words are there, but a keyword match cannot tell "sent X" from "did not send X"
  or whether the condition held: **undecided** (a judge error, the item unscored), never NO.

A criterion of several sentences mixes both: its positive sentences are judged together by
coverage as before (their NO stays a NO), every negative sentence by absence; any undecided
negative sentence leaves the criterion undecided. A criterion with no negation is judged exactly
as before this module existed."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .intent import coverage, tokens

THRESHOLD = 0.6
"""The share at which a positive part counts as shown (as in `score.RULES_THRESHOLD`)."""
ABSENT = 0.5

# English: modal negations anywhere; an imperative "do not"/"don't"/"avoid" only at the start
# of a sentence, since "they do not need a visa" describes rather than forbids.
_EN_ANY = r"\b(?:should\s+not|shouldn[’']t|must\s+not|mustn[’']t|may\s+not|never)\b"
_EN_START = r"^(?:\W*)(?:do\s+not|don[’']t|avoid)\b"
# Chinese: modal prohibitions; 不能/不会 stay out ("说明用户不能退款" describes a rule).
_ZH = "(?:不应该|不应当|不应|不得|不要|禁止|切勿|严禁|不可以|不可)"
_NEG = re.compile(rf"{_EN_ANY}|{_ZH}", re.IGNORECASE)
_NEG_START = re.compile(_EN_START, re.IGNORECASE)

# Conditions on the forbidden act: removed from it (they are not what must be absent).
_CONDITIONS = [
    re.compile(r"在未.+?的?(?:情况下|前提下|时候|时)"),
    re.compile(r"在.+?(?:之前|以前)"),
    re.compile(r"未经?.+?(?:就|便|而|之前|以前|前)"),
    re.compile(r"\b(?:without|before|unless|until|prior\s+to)\b[^,;]*", re.IGNORECASE),
]
_SENTENCES = re.compile(r"[^.!?。！？;；\n]+[.!?。！？;；]?")
# Within a sentence that forbids, the clauses before the prohibition may ask for something
# ("Asks before booking, and does not book without confirmation"): those are positive. A
# clause opening with a condition belongs to the prohibition after it; clauses after it
# continue it ("should not pay or email the vendor").
_CLAUSE = re.compile(r"\s*(?:[,，]\s*(?:and|but)?|\b(?:and|but)\b|并且|而且|但是|但)\s*",
                     re.IGNORECASE)
_CLAUSE_NEG = re.compile(r"^\W*(?:does\s+not|doesn[’']t|do\s+not|don[’']t|avoid|never)\b",
                         re.IGNORECASE)
_CONDITION_START = re.compile(r"^\W*(?:without|before|unless|until|prior\s+to|if|在未|未经|在)",
                              re.IGNORECASE)


@dataclass
class Negative:
    sentence: str
    forbidden: str
    condition: str
    """The removed condition ("" when none), for the verdict's reason."""


def split(text: str) -> tuple[str, list[Negative]]:
    """(the positive sentences joined, the negative ones) of a criterion."""
    positive: list[str] = []
    negatives: list[Negative] = []
    for m in _SENTENCES.finditer(text):
        s = m.group(0).strip()
        if not s:
            continue
        if not (_NEG.search(s) or _NEG_START.search(s)
                or any(_CLAUSE_NEG.search(c) for c in _CLAUSE.split(s))):
            positive.append(s)
            continue
        before, s = _asked_first(s)
        positive += before
        hit = _NEG.search(s) or _NEG_START.search(s) or _CLAUSE_NEG.search(s)
        if hit is None:  # the prohibition was a clause's opening "does not …"
            positive.append(s)
            continue
        rest = s[hit.end():]
        conditions = [c.group(0) for pat in _CONDITIONS for c in pat.finditer(s)]
        for c in conditions:
            rest = rest.replace(c, " ")
        negatives.append(Negative(s, rest.strip(" ，,。.;；:："), "; ".join(conditions)))
    return " ".join(positive), negatives


def _asked_first(sentence: str) -> tuple[list[str], str]:
    """(the clauses before the prohibition that ask for something, the prohibition with what
    follows it)."""
    parts = _CLAUSE.split(sentence)
    for i, part in enumerate(parts):
        if _NEG.search(part) or _CLAUSE_NEG.search(part) or (i == 0 and _NEG_START.search(part)):
            start = i
            while start > 0 and _CONDITION_START.search(parts[start - 1]):
                start -= 1
            if start == 0:
                return [], sentence
            # the prohibition keeps its own wording from where its first clause starts
            cut = _find(sentence, parts[:start], parts[start])
            return [p for p in parts[:start] if p.strip()], sentence[cut:]
    return [], sentence


def _find(sentence: str, before: list[str], part: str) -> int:
    """Where `part` starts in `sentence`, after the clauses `before` it."""
    pos = 0
    for b in before:
        pos = sentence.index(b, pos) + len(b)
    return sentence.index(part, pos)


def judge(text: str, own: str) -> tuple[bool | None, str, float | None] | None:
    """The rules verdict on a criterion with a negation: (YES / NO / None for undecided, why,
    the positive part's coverage or None when it has none), or None when `text` has no
    negation (judge it by coverage as usual)."""
    positive, negatives = split(text)
    if not negatives:
        return None
    why: list[str] = []
    c_pos = None
    if tokens(positive):
        c_pos = coverage(positive, own)
        why.append(f"{c_pos:.0%} of the key words of what it asks for")
        if c_pos < THRESHOLD:
            return False, (f"rules (keyword heuristic): {why[0]} in what the agent said, did "
                           "or wrote"), c_pos
    undecided = []
    for n in negatives:
        c = coverage(n.forbidden, own) if n.forbidden else 0.0
        if c < ABSENT:
            why.append(f"{c:.0%} of the key words of what it forbids (“{n.forbidden}”)")
        else:
            undecided.append(f"{c:.0%} of the key words of what it forbids (“{n.forbidden}”) "
                             "are there, which a keyword match cannot tell from saying it "
                             "was not done" + (f" or from the condition (“{n.condition}”) "
                                                "not holding" if n.condition else ""))
    if undecided:
        return None, "rules (negation): undecided: " + "; ".join(undecided), c_pos
    return True, ("rules (negation): " + "; ".join(why) + " in what the agent said, did or "
                  "wrote"), c_pos


__all__ = ["ABSENT", "THRESHOLD", "Negative", "judge", "split"]
