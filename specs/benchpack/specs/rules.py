"""The rule language interpreter: declarative checks over a finished session's trace.

Here, beside the models (`benchpack.specs.pack.Assertion`, its docstrings), because two stages
need the same meaning: the runtime grades sessions with it (`benchpack.runtime.graders`
re-exports it) and the compiler evaluates rules over what a session starts with, to tell the
items that hold when nothing happens (`benchpack.specs.guards`). One source (tool records, a call
sequence, service state, a workspace file, messages, the final reply), optional narrowing
(`where`, `successful`, `query` in JMESPath), one predicate (default `exists: true`), or the
combinators `all` / `any` / `not`. Tool calls that failed count only when a rule says
`successful: false` or `any`. Odd data never raises: a path that does not exist simply does
not match.

String equality in `where` literals is case-insensitive and ignores surrounding whitespace;
`contains` and friends are case-insensitive; `regex` is case-sensitive (`(?i)` to change that).
Pack patterns (`regex`, `grounded`, `where: {regex}`) run on RE2 (`benchpack.specs.regex`), in
time linear in the text: a rule like `^(a+)+$` cannot stall a run, whatever the reply.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .regex import compile_regex


class RuleRecord(Protocol):
    """A tool call as rules see it (the runtime's `ToolRecord`)."""

    @property
    def tool_name(self) -> str: ...
    @property
    def call(self) -> dict[str, Any]: ...
    @property
    def result(self) -> Any: ...
    @property
    def error(self) -> str | None: ...


class RuleMessage(Protocol):
    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...


class Trace(Protocol):
    """What a rule may inspect (the runtime's `graders.Trace`, or `guards.null_trace`)."""

    @property
    def tool_records(self) -> Sequence[RuleRecord]: ...
    @property
    def state(self) -> dict[str, dict[str, list[dict[str, Any]]]]: ...
    @property
    def files(self) -> dict[str, str]: ...
    @property
    def messages(self) -> Sequence[RuleMessage]: ...
    @property
    def reply(self) -> str: ...
    def read_results_text(self) -> str: ...

_MISSING = object()
SOURCES = ("tool", "sequence", "state", "file", "messages", "reply")
PREDICATES = ("exists", "count", "equals", "contains", "contains_any", "not_contains", "regex",
              "json_schema", "grounded")


@dataclass
class RuleResult:
    passed: bool
    detail: str
    missing: bool = False
    """The rule asked about a file that does not exist (other than whether it exists): it
    failed, and a `not` around it fails too — a missing file never satisfies a rule (before,
    `{file: order.csv, not_contains: [oxycodone]}` held for an agent that wrote no order)."""


def evaluate(rule: dict[str, Any], trace: Trace) -> RuleResult:
    try:
        return _eval(rule, trace)
    except Exception as exc:  # a rule must never take the run down
        return RuleResult(False, f"invalid rule: {type(exc).__name__}: {exc}")


def _eval(rule: dict[str, Any], trace: Trace) -> RuleResult:
    if "all" in rule:
        subs = [_eval(r, trace) for r in rule["all"] or []]
        failed = [s for s in subs if not s.passed]
        return RuleResult(not failed, "all passed" if not failed else
                          "; ".join(s.detail for s in failed), any(s.missing for s in failed))
    if "any" in rule:
        subs = [_eval(r, trace) for r in rule["any"] or []]
        ok = [s for s in subs if s.passed]
        return RuleResult(bool(ok), ok[0].detail if ok else
                          "none passed: " + "; ".join(s.detail for s in subs),
                          not ok and any(s.missing for s in subs))
    if "not" in rule:
        sub = _eval(rule["not"], trace)
        if sub.missing:  # nothing to check is not the opposite of a failed check
            return RuleResult(False, f"not ({sub.detail})", True)
        return RuleResult(not sub.passed, f"not ({sub.detail})")
    if "sequence" in rule:
        return _sequence(rule["sequence"], trace, _successful(rule))
    label, data, is_collection = _select(rule, trace)
    if "file" in rule and data is None and not _asks_presence(rule):
        return RuleResult(False, f"{label}: nothing to check", True)
    if rule.get("query"):
        import jmespath

        data = jmespath.search(rule["query"], data)
        label += f" | {rule['query']}"
        is_collection = isinstance(data, list)
    return _predicate(rule, data, is_collection, label, trace)


# --------------------------------------------------------------------------- sources


def _record_view(r: Any) -> dict[str, Any]:
    return {"tool": r.tool_name, "args": r.call, "result": r.result, "error": r.error}


def _select(rule: dict[str, Any], trace: Trace) -> tuple[str, Any, bool]:
    if "tool" in rule:
        pattern = rule["tool"]
        recs = [_record_view(r) for r in trace.tool_records
                if fnmatch.fnmatchcase(r.tool_name, pattern)]
        want = _successful(rule)
        if want is not None:
            recs = [r for r in recs if (r["error"] is None) == want]
        label = f"calls of {pattern}"
        if rule.get("where"):
            recs = [r for r in recs if _where(r, rule["where"])]
            label += " matching " + _where_text(rule["where"])
        return label, recs, True
    if "state" in rule:
        svc, _, table = str(rule["state"]).partition(".")
        rows = [dict(r) for r in trace.state.get(svc, {}).get(table, [])]
        label = f"rows of {rule['state']}"
        if rule.get("where"):
            rows = [r for r in rows if _where(r, rule["where"])]
            label += " matching " + _where_text(rule["where"])
        return label, rows, True
    if "file" in rule:
        text = trace.files.get(str(rule["file"]))
        if text is None:
            return f"file {rule['file']} (missing)", None, False
        if rule.get("query") or rule.get("json_schema") is not None:
            try:
                return f"file {rule['file']}", json.loads(text), False
            except json.JSONDecodeError:
                if rule.get("json_schema") is not None:
                    return f"file {rule['file']} (not JSON)", _MISSING, False
        return f"file {rule['file']}", text, False
    if "messages" in rule:
        who = rule["messages"]
        texts = [m.content for m in trace.messages
                 if (who == "all" or m.role == who) and m.content]
        return f"{who} messages", texts, True
    if "reply" in rule:
        return "final reply", trace.reply, False
    raise ValueError("no source")


def _asks_presence(rule: dict[str, Any]) -> bool:
    """Whether a file rule asks only whether the file is there (`exists`, `count`)."""
    return not any(rule.get(k) is not None for k in PREDICATES if k not in ("exists", "count")) \
        and not rule.get("query")


def _successful(rule: dict[str, Any]) -> bool | None:
    """Which tool calls a rule counts: successful ones unless it says otherwise (a call that
    failed did not do the thing); `false` only failed calls, `any` (None here) every call."""
    value = rule.get("successful", True)
    return None if value is None or value == "any" else bool(value)


def _sequence(names: list[str], trace: Trace, successful: bool | None = True) -> RuleResult:
    """The tools were called in this order, other calls in between allowed (a subsequence);
    only calls that succeeded take part, or failed ones (`False`), or all (`None`)."""
    i = 0
    for r in trace.tool_records:
        if successful is not None and (r.error is None) != successful:
            continue
        if i < len(names) and fnmatch.fnmatchcase(r.tool_name, names[i]):
            i += 1
    ok = i == len(names)
    return RuleResult(ok, f"called {' → '.join(names)} in order" if ok else
                      f"sequence stopped before {names[i]} ({i}/{len(names)} steps)")


# --------------------------------------------------------------------------- where


def _path(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(obj, dict):
            if part not in obj:
                return _MISSING
            obj = obj[part]
        elif isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
            obj = obj[int(part)]
        else:
            return _MISSING
    return obj


def _norm(v: Any) -> Any:
    return v.strip().lower() if isinstance(v, str) else v


def _match(value: Any, m: Any) -> bool:
    """A literal is an equality test; a matcher's operators must all hold (an empty matcher
    matches nothing)."""
    if value is _MISSING:
        return False
    if not isinstance(m, dict):
        return bool(_norm(value) == _norm(m))
    tests = []
    if "equals" in m:
        tests.append(_norm(value) == _norm(m["equals"]))
    if "contains" in m:
        tests.append(str(m["contains"]).lower() in _text(value).lower())
    if "regex" in m:
        tests.append(compile_regex(str(m["regex"])).search(_text(value)) is not None)
    if "one_of" in m:
        tests.append(any(_norm(value) == _norm(x) for x in m["one_of"] or []))
    if "gt" in m or "lt" in m:
        try:
            num = float(value)
        except (TypeError, ValueError):
            return False
        tests.append(("gt" not in m or num > float(m["gt"])) and
                     ("lt" not in m or num < float(m["lt"])))
    return bool(tests) and all(tests)


def _where(obj: dict[str, Any], where: dict[str, Any]) -> bool:
    return all(_match(_path(obj, path), m) for path, m in where.items())


def _where_text(where: dict[str, Any]) -> str:
    parts = []
    for path, m in where.items():
        if isinstance(m, dict) and m:
            op, val = next(iter(m.items()))
            parts.append(f"{path} {op} {val!r}")
        else:
            parts.append(f"{path} = {m!r}")
    return ", ".join(parts)


# --------------------------------------------------------------------------- predicates


def _text(value: Any) -> str:
    if value is None or value is _MISSING:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return "\n".join(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _present(value: Any) -> bool:
    return value is not None and value is not _MISSING and value != [] and value != "" \
        and value != {}


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def _predicate(rule: dict[str, Any], data: Any, coll: bool, label: str,
               trace: Trace) -> RuleResult:
    n = len(data) if isinstance(data, list) else (0 if not _present(data) else 1)
    if "count" in rule and rule["count"] is not None:
        c = rule["count"]
        ok = ((c.get("min") is None or n >= c["min"]) and (c.get("max") is None or n <= c["max"])
              and (c.get("equals") is None or n == c["equals"]))
        return RuleResult(ok, f"{n} {label} (wanted {_bounds(c)})")
    if "equals" in rule:
        ok = data == rule["equals"] or (isinstance(data, str) and isinstance(rule["equals"], str)
                                        and data.strip() == rule["equals"].strip())
        return RuleResult(ok, f"{label} = {_short(data)}" + ("" if ok else
                                                            f", expected {_short(rule['equals'])}"))
    text = _text(data)
    low = text.lower()
    if "contains" in rule and rule["contains"] is not None:
        missing = [w for w in _as_list(rule["contains"]) if w.lower() not in low]
        return RuleResult(not missing and _present(data),
                          f"{label} contains all" if not missing else
                          f"{label} lacks {', '.join(repr(m) for m in missing)}")
    if "contains_any" in rule and rule["contains_any"] is not None:
        hit = [w for w in rule["contains_any"] if w.lower() in low]
        return RuleResult(bool(hit), f"{label} contains {hit[0]!r}" if hit else
                          f"{label} contains none of {rule['contains_any']}")
    if "not_contains" in rule and rule["not_contains"] is not None:
        found = [w for w in _as_list(rule["not_contains"]) if w.lower() in low]
        return RuleResult(not found, f"{label} avoids them" if not found else
                          f"{label} contains {', '.join(repr(f) for f in found)}")
    if "regex" in rule and rule["regex"] is not None:
        m = compile_regex(rule["regex"]).search(text)
        return RuleResult(m is not None, f"{label} matches /{rule['regex']}/" if m else
                          f"{label} does not match /{rule['regex']}/")
    if "json_schema" in rule and rule["json_schema"] is not None:
        if data is _MISSING or data is None:
            return RuleResult(False, f"{label}: nothing valid to check")
        from jsonschema import Draft202012Validator

        errors = list(Draft202012Validator(rule["json_schema"]).iter_errors(data))
        return RuleResult(not errors, f"{label} valid under the schema" if not errors else
                          f"{label} invalid: {errors[0].message}")
    if "grounded" in rule and rule["grounded"] is not None:
        # whole matches (a pattern's groups must not split an id), looked up as whole tokens:
        # `EVT-31` is not grounded by a result that only holds `EVT-318`
        found = sorted({m.group(0) for m in compile_regex(rule["grounded"]).finditer(text)
                        if m.group(0)})
        seen = trace.read_results_text()
        # `re` is safe here: the pattern is one escaped literal, which cannot backtrack
        ungrounded = [f for f in found
                      if re.search(rf"(?<!\w){re.escape(f)}(?!\w)", seen) is None]
        return RuleResult(not ungrounded, f"{len(found)} ids in {label}, all read first"
                          if not ungrounded else
                          f"{label} mentions ids never read: {', '.join(ungrounded[:5])}")
    want = rule.get("exists", True)
    present = n > 0 if coll or isinstance(data, list) else _present(data)
    return RuleResult(present == bool(want), f"{n} {label}" if coll else
                      f"{label} {'present' if present else 'absent'}")


def _bounds(c: dict[str, Any]) -> str:
    if c.get("equals") is not None:
        return f"exactly {c['equals']}"
    lo, hi = c.get("min"), c.get("max")
    if lo is not None and hi is not None:
        return f"{lo}–{hi}"
    return f"≥ {lo}" if lo is not None else f"≤ {hi}"


def _short(v: Any) -> str:
    s = _text(v) if not isinstance(v, str) else v
    return repr(s if len(s) <= 60 else s[:57] + "...")
