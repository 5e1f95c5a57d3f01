"""verified_outcome: the scoring policy (threshold, outcome weight, safety caps checked like
rules) and the `score:` block (graded items, gates, caps, dimensions, formula); the checklist
itself is common (checks.py)."""

from __future__ import annotations

import fnmatch
import re
from typing import TYPE_CHECKING, Any

import yaml

from benchpack.specs import pack as P
from benchpack.specs.formula import Problem, parse
from benchpack.specs.scoring import COMPONENT_PATTERN, REWARD_COMPONENTS, Score

from ..sourcefile import find_key
from .base import LintReport, ProtocolCompiler, lacks

if TYPE_CHECKING:
    from ..build import Builder
    from ..core import Loc
    from ..diagnostics import PathPart
    from ..loader import SourceFile


def verify(b: Builder, s: P.Session, loc: Loc, tools: list[str], env: dict[str, Any]) -> dict[str, Any] | None:
    v = s.verify
    if v is None:
        if s.protocol != "verified_outcome":
            return None
        v = P.Verify()
    caps = []
    for i, c in enumerate(v.caps):
        b.check_assertion(c.when, loc, ("verify", "caps", i, "when"), tools, env)
        caps.append({"id": c.id or f"cap{i + 1}",
                     "when": c.when.model_dump(mode="json", by_alias=True, exclude_unset=True),
                     "cap": c.cap, "reason": c.reason})
    return {"pass_threshold": v.pass_threshold, "outcome_weight": v.outcome_weight,
            "caps": caps}


# --------------------------------------------------------------------------- score:

_GOLD_ONLY = ("state", "actions")
"""Built-in components that need gold actions, which verified_outcome sessions do not have."""


def score(b: Builder, s: P.Session, loc: Loc, r: Any, tools: list[str],
          env: dict[str, Any]) -> dict[str, Any] | None:
    """The compiled `score:` block (ids filled in, texts rendered), every mistake located."""
    sc = s.score
    if sc is None:
        return None
    from ..checks import jmespath_problem

    if "verify" in s.model_fields_set and s.verify is not None:
        b.err("E226", "give `verify` (the checklist's soft score) or `score`, not both", loc,
              ("verify",), "move the caps into `score.items` with `cap:`", at_key=True)
    for key in ("communicate_match", "assertions_judge"):
        if getattr(sc, key) is not None:
            b.err("E226", f"`score.{key}` is for instructed_user sessions (τ²'s rules)", loc,
                  ("score", key), "drop it here", at_key=True)
    builtins = [n for n, given in (("communicate", sc.communicate),
                                   ("assertions", sc.assertions)) if given]
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    dims = {it.dimension for it in sc.items}
    for i, it in enumerate(sc.items):
        sub: tuple[PathPart, ...] = ("score", "items", i)
        iid = it.id or f"s{i + 1}"
        if iid in seen:
            b.err("E201", f"score item id `{iid}` is used twice", loc, (*sub, "id"))
        elif iid in REWARD_COMPONENTS or (iid in dims and iid != it.dimension):
            b.err("E226", f"score item id `{iid}` is also the name of a "
                  f"{'built-in component' if iid in REWARD_COMPONENTS else 'dimension'}", loc,
                  (*sub, "id"), "a formula could not tell them apart; rename the item")
        seen.add(iid)
        if it.dimension in REWARD_COMPONENTS:
            b.err("E226", f"dimension `{it.dimension}` is a built-in component", loc,
                  (*sub, "dimension"), "name the dimension e.g. `completion` or `safety`")
        if it.rule is not None:
            b.check_assertion(it.rule, loc, (*sub, "rule"), tools, env)
        for j, ev in enumerate(it.evidence or []):
            _tool_ref(b, ev.tool, tools, loc, (*sub, "evidence", j, "tool"))
            for k, path in enumerate(ev.result or []):
                _path_ref(b, path, loc, (*sub, "evidence", j, "result", k), jmespath_problem)
        for key in ("same", "compare"):
            join = getattr(it, key)
            if join is None:
                continue
            for side in ("a", "b"):
                ref = getattr(join, side)
                _tool_ref(b, ref.tool, tools, loc, (*sub, key, side, "tool"))
                if ref.result is not None:
                    _path_ref(b, ref.result, loc, (*sub, key, side, "result"), jmespath_problem)
        data = it.model_dump(mode="json", by_alias=True, exclude_none=True)
        data["id"] = iid
        if it.text is not None:
            data["text"] = r(it.text, *sub, "text")
        if it.rule is not None:
            data["rule"] = it.rule.model_dump(mode="json", by_alias=True, exclude_unset=True)
        items.append(data)

    names = [*builtins]
    for n in [*(it.dimension for it in sc.items), *(d["id"] for d in items)]:
        if n not in names and re.match(COMPONENT_PATTERN, n):
            names.append(n)
    if sc.reward is not None:
        for i, n in enumerate(sc.reward):
            if n not in builtins:
                msg, hint = _missing_builtin(n)
                b.err("E226", msg, loc, ("score", "reward", i), hint)
    if sc.formula is not None:
        _formula(b, sc.formula, names, builtins, loc)
    if sc.formula is None and sc.reward is None and not items and not builtins:
        b.err("E226", "the `score` block scores nothing", loc, ("score",),
              "add `items`, `communicate` or `assertions`", at_key=True)

    if sc.env_assertions:
        b.err("E204", "`score.env_assertions` belongs to the instructed_user protocol", loc,
              ("score", "env_assertions"), "check the final state with `rule` items")
    out = sc.model_dump(mode="json", by_alias=True, exclude_none=True)
    if not out.get("env_assertions"):  # instructed_user's (issue 24): plans stay byte for byte
        out.pop("env_assertions", None)
    out["items"] = items
    out["assertions"] = [r(a, "score", "assertions", i) or "" for i, a in
                         enumerate(sc.assertions)]
    return out


def _missing_builtin(name: str) -> tuple[str, str]:
    if name in _GOLD_ONLY:
        return (f"`{name}` needs gold actions, which verified_outcome sessions do not have",
                "score the outcome with `items` (rules on the final state), or use the "
                "instructed_user protocol")
    return (f"`{name}` is named but `score.{name}` lists nothing",
            f"add `{name}: […]` to `score`, or drop it here")


def _tool_ref(b: Builder, pattern: str, tools: list[str], loc: Loc,
              sub: tuple[PathPart, ...]) -> None:
    from ..checks import tool_suggestion

    if not any(fnmatch.fnmatchcase(t, pattern) for t in tools) and not b.lost_tool(pattern):
        hint, fix = tool_suggestion(pattern, tools)
        b.err("E202", f"no tool `{pattern}` in this session", loc, sub, hint, fix=fix)


_DOTTED = re.compile(r"^[\w-]+(\.[\w-]+)*$")


def _path_ref(b: Builder, path: str, loc: Loc, sub: tuple[PathPart, ...], problem_of: Any) -> None:
    if _DOTTED.match(path):
        return
    problem = problem_of(path)
    if problem:
        b.err("E206", f"`{path}` is neither a dotted path nor valid JMESPath: {problem}", loc,
              sub, "write `a.b.0.c`, or see https://jmespath.org/tutorial.html")


def _formula(b: Builder, text: str, names: list[str], builtins: list[str], loc: Loc) -> None:
    sub: tuple[PathPart, ...] = ("score", "formula")
    got = parse(text, known=[*names, *(n for n in REWARD_COMPONENTS if n not in names)])
    if isinstance(got, Problem):
        _formula_err(b, got.message, got.hint, got.line, got.col, loc, sub)
        return
    for n in REWARD_COMPONENTS:
        if n in got.names and n not in builtins:
            msg, hint = _missing_builtin(n)
            m = re.search(rf"(?<!\w){n}(?!\w)", text)
            before = text[:m.start()] if m else ""
            _formula_err(b, msg, hint, before.count("\n") + 1,
                         len(before) - (before.rfind("\n") + 1) + 1, loc, sub)


def _formula_err(b: Builder, message: str, hint: str | None, line: int, col: int, loc: Loc,
                 sub: tuple[PathPart, ...]) -> None:
    """E225 at the mistake itself: the formula string's YAML position plus the problem's
    line and column within the formula."""
    src, path = loc
    pos = locate_in_scalar(src, (*path, *sub), line, col)
    if pos is None:
        b.err("E225", f"score formula: {message} (formula line {line}, column {col})", loc,
              sub, hint or None)
        return
    full = (*path, *sub)
    if not b.salvaged.hides(src.shown, full, "error"):
        b.diags.error("E225", f"score formula: {message}", src.shown, full, hint or None,
                      line=pos[0], col=pos[1])


# --------------------------------------------------------------------------- positions


def locate_in_scalar(src: SourceFile, path: tuple[PathPart, ...], line: int,
                     col: int) -> tuple[int, int] | None:
    """1-based (line, column) in the file of the 1-based (line, column) `line:col` inside
    the string value at `path` (a score formula's mistake), or None when `path` is not a
    string. Plain, quoted and block scalars: the value's characters are walked against the
    file's, a folded line break or an indentation run standing for what the value holds."""
    node = src._composed()  # the loader's node tree with marks, composed once per file
    for part in path:
        if isinstance(node, yaml.SequenceNode) and isinstance(part, int) \
                and 0 <= part < len(node.value):
            node = node.value[part]
        elif isinstance(node, yaml.MappingNode) and (pair := find_key(node, part)):
            node = pair[1]
        else:
            return None
    if not isinstance(node, yaml.ScalarNode) or not isinstance(node.value, str):
        return None
    value: str = node.value
    lines = value.split("\n")
    offset = sum(len(x) + 1 for x in lines[:max(line - 1, 0)]) + col - 1
    text = src.text
    starts = [0]
    for row in text.split("\n")[:-1]:
        starts.append(starts[-1] + len(row) + 1)
    i = starts[node.start_mark.line] + node.start_mark.column
    end = len(text)
    block = node.style in ("|", ">")
    if block:
        i = text.find("\n", i) + 1  # content starts on the line after the indicator
    elif node.style in ("'", '"'):
        i += 1

    first = text[i:].lstrip("\r\n")
    width = len(first) - len(first.lstrip(" ")) if block else 0

    def indent(i: int) -> int:
        # a block scalar's lines carry the block's indentation in the file, not in the value
        n = 0
        while n < width and i < end and text[i] == " ":
            i, n = i + 1, n + 1
        return i

    i = indent(i)
    for ch in value[:offset]:
        if i >= end:
            break
        if text[i] == ch:
            i += 1
        elif ch in " \n" and text[i] in " \t\r\n":  # a folded line break
            while i < end and text[i] in " \t\r\n":
                i += 1
        else:
            i += 1  # an escape or a doubled quote in the file: one step, close enough
        i = indent(i) if i > 0 and text[i - 1] == "\n" else i
    at = max(k for k, start in enumerate(starts) if start <= i)
    return at + 1, i - starts[at] + 1


def material(b: Builder, s: P.Session, loc: Loc, r: Any, tools: list[str],
             env: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"verify": verify(b, s, loc, tools, env)}
    # `score:` also serves instructed_user sessions, whose compile step checks it its own way
    compiled = None if s.protocol == "instructed_user" else score(b, s, loc, r, tools, env)
    if compiled is not None:  # only when used: plans without it stay byte for byte
        out["score"] = compiled
    return out


def lint(s: dict[str, Any], report: LintReport) -> None:
    # a `score:` block grades the session without a checklist
    if not s.get("score") and not s.get("checklist"):
        lacks(s, report, "checklist", "a checklist")


COMPILER = ProtocolCompiler(
    name="verified_outcome",
    default_limits={"max_turns": 6, "max_steps_per_turn": 60, "turn_timeout_s": 1200.0},
    material=material,
    lint=lint,
)

__all__ = ["COMPILER", "Score", "material", "score", "verify"]
