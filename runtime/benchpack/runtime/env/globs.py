"""Globs for the workspace's `glob` and `grep` tools, compiled to RE2 (linear-time matching,
whatever the agent's pattern): `*`, `?` and `[…]` stay within one path segment, `**` spans any
number of segments. Apart from `workspace.py` because they are pure string work, tested on
their own."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from benchpack.specs.regex import RegexError, compile_regex

from .errors import ToolError

_SPECIAL = set("\\.^$|?*+()[]{}")


def _glob_segment(seg: str) -> str:
    """RE2 for one path segment of a glob: `*`, `?`, `[abc]`, `[!abc]`, other characters
    literal."""
    out, i = [], 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (j := seg.find("]", i + 2)) != -1:
            body = seg[i + 1:j]
            neg = body[0] in "!^"
            body = "".join("\\" + ch if ch in "\\[]^" else ch for ch in (body[1:] if neg else body))
            out.append(f"[^/{body}]" if neg else f"[{body}]")
            i = j
        else:
            out.append("\\" + c if c in _SPECIAL else c)
        i += 1
    return "".join(out)


def glob_regex(pattern: str) -> Any:
    """One RE2 expression for a whole-path glob: `*`, `?`, `[…]` stay in one path segment,
    `**` spans any number of them (none included). Linear to match, whatever the pattern."""
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    out: list[str] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
        else:
            out.append(_glob_segment(part) + ("" if last else "/"))
    try:
        return compile_regex("^" + "".join(out) + "$")
    except RegexError as exc:
        raise ToolError(f"invalid glob pattern `{pattern}`: {exc.reason}") from None


def glob_match(rel: str, pattern: str) -> bool:
    """`*.md` matches by file name; a pattern with `/` matches the whole relative path
    (`**/` also matches no directory at all)."""
    if "/" not in pattern:
        return glob_regex(pattern).search(PurePosixPath(rel).name) is not None
    return glob_regex(pattern).search(rel) is not None
