"""Diagnostics: every problem in a pack, located, collected, reported together.

A diagnostic is created with the file and the JSON path of the offending node; line and column
are filled in afterwards by `locate_all`, which composes libyaml's node tree (with marks) only
for the files that have something to report (clean packs never pay for position tracking).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Severity = Literal["error", "warning"]
PathPart = str | int
FixKind = Literal["rename_key", "replace_value"]

# Stable codes. Never renumber; add new ones at the end of their block.
CODES: dict[str, tuple[Severity, str]] = {
    # files and YAML
    "E001": ("error", "yaml-syntax"),
    "E002": ("error", "duplicate-key"),
    "E003": ("error", "not-utf8"),
    "E004": ("error", "empty-file"),
    "E005": ("error", "file-too-large"),
    "E006": ("error", "file-not-found"),
    "E007": ("error", "include-loop"),
    "E008": ("error", "include-matched-nothing"),
    "E009": ("error", "not-a-mapping"),
    "E010": ("error", "outside-pack"),
    "E011": ("error", "alias-expansion"),
    "E012": ("error", "unreadable-file"),
    "E013": ("error", "bad-data-file"),
    # schema
    "E101": ("error", "unknown-key"),
    "E102": ("error", "missing-key"),
    "E103": ("error", "wrong-type"),
    "E104": ("error", "invalid-value"),
    # references and semantics
    "E201": ("error", "duplicate-id"),
    "E202": ("error", "unknown-reference"),
    "E203": ("error", "dependency-cycle"),
    "E204": ("error", "protocol-mismatch"),
    "E205": ("error", "invalid-regex"),
    "E206": ("error", "invalid-jmespath"),
    "E207": ("error", "invalid-json-schema"),
    "E208": ("error", "template-syntax"),
    "E209": ("error", "template-undefined"),
    "E210": ("error", "template-unsafe"),
    "E211": ("error", "invalid-assertion"),
    "E212": ("error", "missing-request"),
    "E213": ("error", "bad-dependency"),
    "E214": ("error", "tool-name-clash"),
    "E215": ("error", "invalid-style"),
    "E216": ("error", "invalid-dialogue"),
    "E217": ("error", "bad-tool-module"),
    "E225": ("error", "invalid-formula"),  # issue 12: verified_outcome `score.formula`
    "E226": ("error", "invalid-score"),  # issue 12: verified_outcome `score:` block
    # HTTP services and tools (issue 12, section 2; numbered apart from the block above so
    # parallel additions to it do not collide)
    "E230": ("error", "invalid-process-service"),
    "E231": ("error", "invalid-http-tool"),
    # knowledge bases (issue 24, item 5; knowledge.py)
    "E240": ("error", "invalid-knowledge-base"),
    "E241": ("error", "discoverable-tool-unavailable"),  # issue 24, item 4: discoverable.py
    "E245": ("error", "invalid-toolset-services"),  # issue 24, telecom: toolsets.py
    # lints (warnings; errors under --strict)
    "W301": ("warning", "leak-intent"),
    "W302": ("warning", "leak-stage"),
    "W303": ("warning", "leak-rubric"),
    "W304": ("warning", "leak-fact"),
    "W305": ("warning", "anchor-dump"),
    "W306": ("warning", "trigger-window"),
    "W307": ("warning", "bundled-item"),
    "W308": ("warning", "missing-material"),
    "W309": ("warning", "unsupported-persistent-intent"),
    "W310": ("warning", "trigger-count"),
    "W311": ("warning", "incoherent-style"),
    "W312": ("warning", "unused-material"),
    "W314": ("warning", "unknown-schema-keyword"),
    "W315": ("warning", "unknown-conflict-ref"),
    "W316": ("warning", "anchor-not-disclosed"),
    "W317": ("warning", "too-few-anchors"),
    "W318": ("warning", "required-and-capped"),
    "W319": ("warning", "tool-module"),
    "W320": ("warning", "nothing-to-achieve"),  # issue 25: guards only (lint_credit.py)
    "W321": ("warning", "do-nothing-credit"),  # issue 25: a reward nothing earns
    "W340": ("warning", "golden-without-documents"),  # issue 24: knowledge.py
    "W341": ("warning", "user-tools-not-offered"),  # issue 24: tagged LLM user, user tools
    "W322": ("warning", "contradicting-style"),  # issue 28: a directive against the bounds
}
LINT_CODES = tuple(code for code, (severity, _) in CODES.items() if severity == "warning")
"""The codes a `lint: {ignore: […]}` list may name."""


@dataclass(frozen=True)
class Fix:
    """A mechanical edit that resolves a diagnostic, at the diagnostic's path: rename the key
    `old` to `new`, or replace the scalar `old` with `new`. Offered only when the suggestion is
    unambiguous, so that `bench validate --fix` may apply it without asking."""

    kind: FixKind
    old: str
    new: str

    def describe(self, done: bool = True) -> str:
        """`renamed `a` → `b``, or with done=False `rename `a` → `b``."""
        verb = "rename" if self.kind == "rename_key" else "replace"
        return f"{verb}{'d' if done else ''} `{self.old}` → `{self.new}`"


@dataclass
class Diagnostic:
    """One problem, with enough context to fix it without reading the compiler."""

    code: str
    message: str
    file: str
    """Path as the user should see it (relative to the working directory when possible)."""
    path: tuple[PathPart, ...] = ()
    """JSON path of the offending node inside `file`."""
    hint: str | None = None
    line: int | None = None
    col: int | None = None
    at_key: bool = False
    """Point at the key named by the last path element rather than at its value."""
    fix: Fix | None = None
    """The edit that resolves this diagnostic, when it is unambiguous."""
    severity: Severity = field(init=False)

    def __post_init__(self) -> None:
        self.severity = CODES[self.code][0]

    @property
    def name(self) -> str:
        return CODES[self.code][1]

    @property
    def json_path(self) -> str:
        out = "$"
        for part in self.path:
            out += f"[{part}]" if isinstance(part, int) else f".{part}"
        return out

    def format(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}:{self.col or 1}"
        text = f"{where}: {self.severity} {self.code} {self.message}"
        if self.path:
            text += f" [at {self.json_path}]"
        if self.hint:
            text += f" (hint: {self.hint})"
        if self.fix:
            text += " [fixable]"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "json_path": self.json_path,
            "message": self.message,
            "hint": self.hint,
            "fix": None if self.fix is None else {
                "kind": self.fix.kind, "path": list(self.path), "old": self.fix.old,
                "new": self.fix.new},
        }


class Diagnostics:
    """An ordered, de-duplicated collection."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []
        self._seen: set[tuple[Any, ...]] = set()

    def add(self, diag: Diagnostic) -> None:
        key = (diag.code, diag.file, diag.path, diag.message)
        if key not in self._seen:
            self._seen.add(key)
            self.items.append(diag)

    def error(self, code: str, message: str, file: str, path: Sequence[PathPart] = (),
              hint: str | None = None, *, at_key: bool = False,
              line: int | None = None, col: int | None = None, fix: Fix | None = None) -> None:
        self.add(Diagnostic(code, message, file, tuple(path), hint, line, col, at_key, fix))

    warn = error  # severity comes from the code

    def extend(self, diags: Iterable[Diagnostic]) -> None:
        for d in diags:
            self.add(d)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity == "warning"]

    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.items)

    def sorted(self) -> list[Diagnostic]:
        return sorted(
            self.items,
            key=lambda d: (d.file, d.line or 0, d.col or 0, d.code, d.message),
        )

    def __len__(self) -> int:
        return len(self.items)


SIMILARITY_CUTOFF = 0.6


def _loose(word: str) -> str:
    return re.sub(r"[\s_\-.]+", "", word.lower())


def _closest(word: str, candidates: Iterable[str]) -> tuple[str | None, bool]:
    """(the closest candidate, whether it is the only one above the similarity cutoff)."""
    pool = [c for c in candidates if isinstance(c, str)]
    if not pool or not isinstance(word, str):
        return None, False
    # the same word but for case or separators (`todo_create` -> `todo__create`)
    for norm in (str.lower, _loose):
        same = [c for c in pool if norm(c) == norm(word)]
        if same:
            return same[0], len(same) == 1
    close = difflib.get_close_matches(word, pool, n=2, cutoff=SIMILARITY_CUTOFF)
    if close:
        return close[0], len(close) == 1
    # plural/singular slips and prefixes (`intent` -> `hidden_intents`): a guess, never a fix
    for c in pool:
        if word.rstrip("s") and (c.endswith(word) or c.endswith(word + "s") or c.startswith(word)):
            return c, False
    return None, False


def suggest(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate, for 'did you mean' hints."""
    return _closest(word, candidates)[0]


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    found = suggest(word, candidates)
    return f"did you mean `{found}`?" if found else None


def suggest_fix(word: str, candidates: Iterable[str], kind: FixKind = "replace_value",
                taken: Iterable[Any] = ()) -> tuple[str | None, Fix | None]:
    """The 'did you mean' hint for `word`, and the fix replacing it when exactly one candidate
    is close enough (and, for a key, when no key of that name exists already: `taken`)."""
    found, unique = _closest(word, candidates)
    if found is None:
        return None, None
    hint = f"did you mean `{found}`?"
    if not unique or found == word or found in taken:
        return hint, None
    return hint, Fix(kind, word, found)


def settle_fixes(items: Sequence[Diagnostic]) -> None:
    """Withdraw fixes that contradict each other: two edits of one node, or two keys of one
    mapping that would both get the same name (which of them is meant is anyone's guess)."""
    fixed = [d for d in items if d.fix is not None]
    if len(fixed) < 2:
        return
    claims: dict[tuple[Any, ...], list[Diagnostic]] = {}
    for d in fixed:
        assert d.fix is not None
        claims.setdefault(("node", d.file, d.path), []).append(d)
        if d.fix.kind == "rename_key":
            claims.setdefault(("key", d.file, d.path[:-1], d.fix.new), []).append(d)
    for group in claims.values():
        if len({(d.fix, d.path) for d in group}) > 1:
            for d in group:
                d.fix = None


def display_path(path: Path, base: Path | None = None) -> str:
    """A path as the user typed it, relative to the working directory when inside it."""
    base = base or Path.cwd()
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)
