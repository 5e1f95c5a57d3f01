"""Communicated information (τ²-bench `communicate_info`): each string must occur in some agent
message.

Matching is τ²'s, made safer: both texts are NFKC-normalised and case-folded
(`benchpack.specs.text.fold`, so full-width `Ｗ１２３` is `w123`), then spaces, `-`, `_` and
commas are dropped, so `#W123 has been cancelled` matches `#w-123 has been cancelled.` and
`1200` matches `$1,200`. `#` and other punctuation are kept. Unlike a bare substring test, a
match must not cut a word or number of the message: `W12` does not match `W123`. Chinese and
Japanese have no spaces between words, so there a match may start or end anywhere.

`match="tau2"` (`score.communicate_match: tau2`) is τ²-bench's own test instead: the string
lower-cased is a substring of an agent message with text (not blank) lower-cased and with its
commas removed — nothing else is normalised, the string's own commas stay (so it is then never
found), and `W12` is found in `W123`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchpack.specs.text import fold

_SEPARATORS = re.compile(r"[\s\-_,\u3000\uff0c\u3001]")
"""Spaces (any), `-`, `_`, commas (ASCII, full-width `，` and the ideographic `、`)."""


def _squeeze(text: str) -> tuple[str, list[int]]:
    """`text` folded without separators, and for each kept character its index in the folded
    text (to look at what surrounds a match)."""
    out, where = [], []
    for i, ch in enumerate(text):
        if not _SEPARATORS.match(ch):
            out.append(ch)
            where.append(i)
    return "".join(out), where


def _wordlike(ch: str) -> bool:
    # letters and digits of spaced scripts; CJK and other unsegmented scripts (U+2E80 on)
    # have no word boundaries to respect
    return ch.isalnum() and ord(ch) < 0x2E80


def find(needle: str, text: str) -> bool:
    """Whether `needle` occurs in `text` as the module docstring says."""
    n, _ = _squeeze(fold(needle))
    if not n:
        return False
    folded = fold(text)
    hay, where = _squeeze(folded)
    start = hay.find(n)
    while start != -1:
        end = start + len(n) - 1
        first, last = where[start], where[end]
        before = folded[first - 1] if first > 0 else ""
        after = folded[last + 1] if last + 1 < len(folded) else ""
        if not (_wordlike(n[0]) and before and _wordlike(before)) and \
                not (_wordlike(n[-1]) and after and _wordlike(after)):
            return True
        start = hay.find(n, start + 1)
    return False


@dataclass
class InfoResult:
    text: str
    passed: bool
    message: int | None
    """Index (among the session's messages) of the first agent message that says it."""


def find_tau2(needle: str, text: str) -> bool:
    """τ²'s `info.lower() in content.lower().replace(",", "")` over a message with text."""
    return bool(text.strip()) and needle.lower() in text.lower().replace(",", "")


def check(items: Sequence[str], messages: Sequence[Any], match: str = "words"
          ) -> list[InfoResult]:
    """For each item, whether some agent (assistant) message says it and which. A message is
    anything with `role` and `content` (`benchpack.runtime.types.Message`). `match`: `words`
    (`find`) or `tau2` (`find_tau2`)."""
    found = find_tau2 if match == "tau2" else find
    out = []
    for item in items:
        hit = next((i for i, m in enumerate(messages)
                    if getattr(m, "role", None) == "assistant" and getattr(m, "content", None)
                    and found(item, m.content)), None)
        out.append(InfoResult(item, hit is not None, hit))
    return out


def all_passed(results: Sequence[InfoResult]) -> float:
    """τ²'s communicate component: 1 when every item was said, else 0 (1 with no items, as a
    check with nothing to check holds)."""
    return 1.0 if all(r.passed for r in results) else 0.0


__all__ = ["InfoResult", "all_passed", "check", "find", "find_tau2"]
