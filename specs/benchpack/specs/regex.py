"""Regular expressions written by strangers (pack rules, an agent's `grep`), compiled with RE2.

Python's `re` backtracks: `^(a+)+$` on forty `a`s and a `!` runs for minutes, and a pack rule or
an agent's grep pattern must never be able to stall a run. RE2 matches in time linear in the
text, at the price of refusing backreferences and lookaround — a refusal the compiler reports at
the rule's line, and the grep tool reports to the agent.

Python spellings packs already use are translated: `\\w` and `\\W` mean *Unicode* word
characters (as in Python, so `\\w+` matches `你好` as it matches `hello`), `\\uXXXX` and
`\\UXXXXXXXX` are code points, `\\Z` is the end of the text. `\\b` stays RE2's ASCII word
boundary.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 otherwise logs every refused pattern to stderr
_OPTIONS.max_mem = 32 << 20  # a pathological pattern fails to compile instead of eating memory

_WORD = r"\p{L}\p{N}\p{M}_"
HINT = ("patterns are RE2 (linear time): no backreferences like `\\1`, no lookaround like "
        "`(?=…)` or `(?<!…)`")


class RegexError(ValueError):
    """A pattern RE2 cannot compile; `reason` is RE2's own words."""

    def __init__(self, pattern: str, reason: str) -> None:
        super().__init__(f"invalid regular expression `{pattern}`: {reason}")
        self.pattern = pattern
        self.reason = reason


def _translate(pattern: str) -> str:
    """Python-only escapes → RE2: `\\w`/`\\W` → Unicode letter/number/mark/underscore classes
    (inside and outside `[…]`), `\\uXXXX`/`\\UXXXXXXXX` → `\\x{…}`, `\\Z` → `\\z`."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt == "w":
                out.append(_WORD if in_class else f"[{_WORD}]")
            elif nxt == "W" and not in_class:
                out.append(f"[^{_WORD}]")
            elif nxt in "uU" and _hex(pattern[i + 2:i + (6 if nxt == "u" else 10)]):
                width = 4 if nxt == "u" else 8
                out.append("\\x{" + pattern[i + 2:i + 2 + width] + "}")
                i += 2 + width
                continue
            elif nxt == "Z" and not in_class:
                out.append("\\z")
            else:  # `[\W]` has no RE2 spelling with Unicode classes; it keeps the ASCII meaning
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            out.append(c)
            i += 1
            # a `]` first in the class (after an optional `^`) is a literal
            if pattern[i:i + 1] == "^":
                out.append("^")
                i += 1
            if pattern[i:i + 1] == "]":
                out.append("]")
                i += 1
            continue
        if c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


def _hex(text: str) -> bool:
    return bool(text) and len(text) in (4, 8) and all(c in "0123456789abcdefABCDEF" for c in text)


@lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> Any:
    """The compiled RE2 pattern (`.search`, `.finditer` as in `re`), or `RegexError`."""
    try:
        return re2.compile(_translate(pattern), _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else str(exc)
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise RegexError(pattern, str(reason)) from None


def regex_problem(pattern: str) -> str | None:
    """Why RE2 refuses `pattern`, or None when it compiles."""
    try:
        compile_regex(pattern)
    except RegexError as exc:
        return exc.reason
    return None
