"""Checklists and declarative rule checks (`Assertion`): sources, predicates, tool and
parameter references, state references, regexes, JMESPath queries, JSON Schemas."""

from __future__ import annotations

import fnmatch
from typing import Any

import jmespath
from jmespath.exceptions import IncompleteExpressionError, LexerError, ParseError

from benchpack.specs import pack as P
from benchpack.specs.regex import HINT as REGEX_HINT
from benchpack.specs.regex import regex_problem

from .core import Loc
from .diagnostics import Fix, PathPart, suggest_fix
from .loader import GLOB_CHARS
from .world import WorldBuilder


class CheckBuilder(WorldBuilder):
    def check_assertion(self, a: P.Assertion, loc: Loc, sub: tuple[PathPart, ...],
                        tools: list[str], env: dict[str, Any]) -> None:
        given = a.model_fields_set
        combinators = [k for k in ("all", "any", "not_") if k in given]
        sources = [k for k in ("tool", "sequence", "state", "file", "messages", "reply") if k in given]
        preds = [k for k in ("exists", "count", "equals", "contains", "contains_any",
                             "not_contains", "regex", "json_schema", "grounded") if k in given]
        if combinators:
            if len(combinators) > 1 or sources or preds:
                self.err("E211", "a combinator (`all`, `any`, `not`) must stand alone in its "
                         "check", loc, sub, "nest the other keys in a sub-check")
            for k in combinators:
                subs = getattr(a, k)
                key = "not" if k == "not_" else k
                if isinstance(subs, list):
                    if not subs:
                        self.err("E211", f"`{key}` needs at least one check", loc, (*sub, key))
                    for i, x in enumerate(subs):
                        self.check_assertion(x, loc, (*sub, key, i), tools, env)
                elif subs is not None:
                    self.check_assertion(subs, loc, (*sub, key), tools, env)
            return
        if len(sources) != 1:
            self.err("E211", "a check needs exactly one source: tool, sequence, state, file, "
                     "messages or reply" + (f" (found {', '.join(sources)})" if sources else ""),
                     loc, sub)
            return
        if len(preds) > 1:
            self.err("E211", f"a check states one predicate; found {', '.join(preds)}", loc, sub,
                     "split it with `all:`")
        if a.tool is not None and not any(fnmatch.fnmatchcase(t, a.tool) for t in tools) \
                and not self.lost_tool(a.tool):
            hint, fix = tool_suggestion(a.tool, tools)
            self.err("E202", f"no tool `{a.tool}` in this session", loc, (*sub, "tool"), hint,
                     fix=fix)
        elif a.tool is not None and a.where:
            self.check_where_args(a.tool, a.where, tools, loc, sub)
        for i, t in enumerate(a.sequence or []):
            if not any(fnmatch.fnmatchcase(x, t) for x in tools) and not self.lost_tool(t):
                hint, fix = tool_suggestion(t, tools)
                self.err("E202", f"no tool `{t}` in this session", loc, (*sub, "sequence", i),
                         hint, fix=fix)
        if a.sequence is not None and len(a.sequence) < 2:
            self.err("E211", "`sequence` needs at least two tools", loc, (*sub, "sequence"))
        if a.state is not None:
            self.check_state_ref(a.state, env, loc, (*sub, "state"))
        for pkey in ("regex", "grounded"):
            pattern = getattr(a, pkey)
            if pattern is not None:
                problem = regex_problem(pattern)
                if problem:
                    self.err("E205", f"invalid regular expression: {problem}", loc,
                             (*sub, pkey), regex_hint(problem))
        for path, m in (a.where or {}).items():
            if isinstance(m, P.Matcher):
                ops = [k for k in m.model_fields_set]
                if len(ops) != 1:
                    self.err("E211", f"`where.{path}` needs exactly one operator", loc,
                             (*sub, "where", path), "equals, contains, regex, one_of, gt or lt")
                if m.regex is not None:
                    problem = regex_problem(m.regex)
                    if problem:
                        self.err("E205", f"invalid regular expression: {problem}", loc,
                                 (*sub, "where", path, "regex"), regex_hint(problem))
        if a.query is not None:
            problem = jmespath_problem(a.query)
            if problem:
                self.err("E206", f"invalid JMESPath query: {problem}", loc, (*sub, "query"),
                         "see https://jmespath.org/tutorial.html")
        if a.json_schema is not None:
            self.check_schema(a.json_schema, loc, (*sub, "json_schema"), "`json_schema`")

    def check_where_args(self, pattern: str, where: dict[str, Any], tools: list[str], loc: Loc,
                         sub: tuple[PathPart, ...]) -> None:
        """`where: {args.<name>: …}` must name a parameter of the matched tool(s)."""
        matched = [t for t in tools if fnmatch.fnmatchcase(t, pattern)]
        if not matched:
            return  # the missing tool is the mistake (reported, or a consequence of a drop)
        params: set[str] = set()
        for t in matched:
            spec = self.plan_tools.get(t) or _BUILTIN_PARAMS.get(t)
            schema = spec["parameters"] if spec and "parameters" in spec else spec
            if not isinstance(schema, dict) or schema.get("additionalProperties") is True:
                return
            props = schema.get("properties")
            if not isinstance(props, dict):
                return
            params |= set(props)
        for key in where:
            head, _, rest = key.partition(".")
            if head == "args" and rest:
                name = rest.split(".")[0]
                if name not in params:
                    hint, fix = suggest_fix(name, params)
                    if fix is not None:  # the key is the whole path: rename it
                        fix = _key_fix(f"args.{fix.new}{rest[len(name):]}", key, where)
                    self.err("E202", f"`{pattern}` has no parameter `{name}`", loc,
                             (*sub, "where", key), hint or
                             ("its parameters: " + ", ".join(sorted(params)) if params else None),
                             fix=fix)
            elif head not in ("args", "result", "error", "tool"):
                hint, fix = suggest_fix(f"args.{key}", [f"args.{p}" for p in params])
                self.err("E211", f"`where` paths on tool records start with `args.`, `result.`, "
                         f"`error` or `tool`; found `{key}`", loc, (*sub, "where", key), hint,
                         fix=fix and _key_fix(fix.new, key, where))

    def check_state_ref(self, ref: str, env: dict[str, Any], loc: Loc,
                        sub: tuple[PathPart, ...]) -> None:
        svc, _, table = ref.partition(".")
        if svc not in env["services"]:
            hint, fix = suggest_fix(svc, env["services"])
            self.err("E202", f"no service `{svc}` in this session's environment", loc, sub,
                     hint or "write `service.table`",
                     fix=fix and Fix("replace_value", ref, f"{fix.new}.{table}"))
        elif table not in self.plan_services[svc]["tables"]:
            hint, fix = suggest_fix(table, self.plan_services[svc]["tables"])
            self.err("E202", f"service `{svc}` has no table `{table}`", loc, sub,
                     hint or "write `service.table`",
                     fix=fix and Fix("replace_value", ref, f"{svc}.{fix.new}"))

    def checklist(self, s: P.Session, loc: Loc, r: Any, tools: list[str],
                  env: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        seen: set[str] = set()
        for i, c in enumerate(s.checklist):
            sub = ("checklist", i)
            cid = c.id or f"c{i + 1}"
            if cid in seen:
                self.err("E201", f"checklist id `{cid}` is used twice", loc, (*sub, "id"))
            seen.add(cid)
            if c.rule is not None and c.python is not None:
                self.err("E211", "give either `rule` or `python`, not both", loc, sub)
            if c.rule is not None:
                self.check_assertion(c.rule, loc, (*sub, "rule"), tools, env)
            source = None
            if c.python is not None:
                source = self.read_text(c.python.split(":")[0], loc, (*sub, "python"))
            if c.evidence is not None:
                for j, t in enumerate(c.evidence.tools):
                    if not any(fnmatch.fnmatchcase(x, t) for x in tools) and not self.lost_tool(t):
                        hint, fix = tool_suggestion(t, tools)
                        self.err("E202", f"no tool `{t}` in this session", loc,
                                 (*sub, "evidence", "tools", j), hint, fix=fix)
                for j, st in enumerate(c.evidence.state):
                    self.check_state_ref(st, env, loc, (*sub, "evidence", "state", j))
            grader = "python" if c.python else "rule" if c.rule else "rubric"
            out.append({
                "id": cid, "text": r(c.text, *sub, "text"), "grader": grader,
                "rule": c.rule.model_dump(mode="json", by_alias=True, exclude_unset=True)
                if c.rule else None,
                "python": c.python, "python_source": source,
                "evidence": c.evidence.model_dump(mode="json") if c.evidence else None,
                "weight": c.weight, "aspect": c.aspect,
            })
        return out


_BUILTIN_PARAMS: dict[str, dict[str, Any]] = {
    "read_file": {"properties": {"path": {}, "offset": {}, "limit": {}}},
    "write_file": {"properties": {"path": {}, "content": {}}},
    "edit_file": {"properties": {"path": {}, "old": {}, "new": {}, "count": {}}},
    "list_files": {"properties": {"path": {}}},
    "glob": {"properties": {"pattern": {}}},
    "grep": {"properties": {"pattern": {}, "path": {}, "glob": {}}},
    "ask_user": {"properties": {"question": {}}},
    "send_message": {"properties": {"to": {}, "text": {}, "channel": {}}},
}


def tool_suggestion(pattern: str, tools: list[str]) -> tuple[str | None, Fix | None]:
    """Hint and fix for a tool name matching no tool; a glob pattern is never rewritten."""
    hint, fix = suggest_fix(pattern, tools)
    return hint, None if GLOB_CHARS.search(pattern) else fix


def _key_fix(new: str, old: str, mapping: dict[str, Any]) -> Fix | None:
    """Renaming key `old` of `mapping` to `new`, unless that key exists already."""
    return None if new in mapping else Fix("rename_key", old, new)


def jmespath_problem(query: str) -> str | None:
    """Why a JMESPath query does not compile, in one line; None when it does."""
    try:
        jmespath.compile(query)
    except IncompleteExpressionError:
        return "the query ends too early"
    except LexerError as exc:  # a ParseError subclass: test it first
        return f"{exc.message.rstrip('.:')} at character {exc.lexer_position + 1}"
    except ParseError as exc:
        return f"unexpected `{exc.token_value}` at character {exc.lex_position + 1}"
    except Exception as exc:  # the library's own failures on odd input
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


_REGEX_HINTS = (
    (("character set", "missing ]"), "`[` starts a character class; for a literal bracket write "
     "`\\[` (in YAML single quotes: 'a \\[b')"),
    (("subpattern", "missing )", "unbalanced parenthesis"), "`(` starts a group; for a literal "
     "parenthesis write `\\(`"),
    (("nothing to repeat", "multiple repeat", "missing argument to repetition",
      "no argument for repetition", "bad repetition operator"),
     "`*`, `+`, `?` and `{` repeat what precedes them; for the character itself write `\\*`, "
     "`\\+`, `\\?`"),
    (("bad escape", "trailing backslash", "trailing \\"), "a backslash starts an escape; "
     "write `\\\\` for a literal one"),
)


def regex_hint(problem: str) -> str:
    """How to fix a common regex mistake, from the regex engine's message; else what RE2 (the
    linear-time engine every pack regex runs on) cannot do."""
    for needles, hint in _REGEX_HINTS:
        if any(n in problem for n in needles):
            return hint
    return REGEX_HINT
