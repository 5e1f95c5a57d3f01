"""`bench parity tau2-dialogues`: whole dialogues through τ²'s own runner and through benchpack's,
both talking to one scripted model endpoint (`scripted_model.py`), compared on what decides a
score — the ending and the reward with its components — and on what every model was shown:
each request of the agent, the user simulator and the judge, side by side.

The "model" answers as a pure function of the request (`Script`), so the two sides hold the
same conversation exactly when they show their models the same things. Kinds of trajectory:

- `gold`: the agent makes the task's gold calls, one per model response, then says it is done
  with the task's communicate strings; the user opens, then makes its own gold calls
  (`requestor: user`, with its own tools: dual control), one per response, then stops;
- `nothing`: the agent only says "Done."; the user opens, then stops;
- `permuted`: as gold, every list argument of two or more items reversed (order dependence);
- `errors`: the agent keeps calling a tool that fails (τ²'s error limit);
- `steps`: the agent keeps calling a read tool that succeeds (the message limit);
- `unfinished`: agent and user keep talking, nobody stops (the message limit).

The judge answers every NL assertion "met", so the NL component decides nothing by itself
but its prompt is compared. This module runs benchpack's side and compares; the CLI imports
and compiles the pack and asks τ²'s driver (`simulate`) for τ²'s side.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

KINDS = ("gold", "nothing", "permuted", "errors", "steps", "unfinished")
STOP = "###STOP###"
# a task id may hold brackets (telecom's `[mms_issue]…[PERSONA:Easy]`): up to the first `/kind]`
_REF = re.compile(r"\[ref (?P<task>[^\n/]+?)/(?P<kind>[a-z_]+)\]")
_MODEL = re.compile(r"(?P<side>[a-z0-9]+)-(?P<role>agent|user|judge)-(?P<kind>[a-z_]+)$")
TERMINATION = {"done": "user_stop", "transfer": "user_stop", "out_of_scope": "user_stop",
               "max_messages": "max_steps", "max_tool_errors": "too_many_errors"}
"""benchpack's session ending → τ²'s termination reason."""
COMPONENT = {"state": "DB", "actions": "ACTION", "communicate": "COMMUNICATE",
             "assertions": "NL_ASSERTION", "env_assertions": "ENV_ASSERTION"}


@dataclass
class ScriptTask:
    id: str
    scenario: str
    """The scenario text as the user simulator's system prompt holds it."""
    gold: list[dict[str, Any]]
    """`{name, arguments}` of the agent's gold calls."""
    communicate: list[str] = field(default_factory=list)
    assertions: list[str] = field(default_factory=list)
    prior_user: int = 0
    """The user's messages of the task's prior conversation (τ²'s `message_history`), which
    the user simulator's chat holds as its own."""
    prior_calls: int = 0
    """The agent's tool-call messages of the prior conversation."""
    user_gold: list[dict[str, Any]] = field(default_factory=list)
    """`{name, arguments}` of the user's own gold calls (`requestor: user`)."""
    prior_user_calls: int = 0
    """The user's tool-call messages of the prior conversation."""


def opening(task: str, kind: str) -> str:
    return f"Hi, I need some help with my account. [ref {task}/{kind}]"


def reversed_lists(args: dict[str, Any]) -> dict[str, Any]:
    return {k: list(reversed(v)) if isinstance(v, list) and len(v) > 1 else v
            for k, v in args.items()}


def content_text(m: dict[str, Any]) -> str:
    c = m.get("content")
    if isinstance(c, list):  # content parts
        return "".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
    return str(c or "")


class Script:
    """What the agent, user simulator and judge answer (see the module docstring)."""

    def __init__(self, tasks: list[ScriptTask], failing: tuple[str, dict[str, Any]],
                 passing: tuple[str, dict[str, Any]]) -> None:
        self.tasks = {t.id: t for t in tasks}
        self.failing = failing
        self.passing = passing

    def task_of(self, role: str, body: dict[str, Any]) -> ScriptTask:
        if role == "user":
            system = "".join(content_text(m) for m in body["messages"]
                             if m.get("role") == "system")
            found = [t for t in self.tasks.values() if t.scenario and t.scenario in system]
            # a short scenario may be part of a longer one: the longest found is the prompt's
            longest = max((len(t.scenario) for t in found), default=0)
            found = [t for t in found if len(t.scenario) == longest]
            if len(found) != 1:
                raise LookupError(f"{len(found)} tasks' scenarios are in the user simulator's "
                                  "system prompt")
            return found[0]
        for m in body["messages"]:
            hit = _REF.search(content_text(m))
            if hit and hit["task"] in self.tasks:
                return self.tasks[hit["task"]]
        raise LookupError("no [ref task/kind] marker in the conversation")

    def __call__(self, role: str, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        task = self.task_of(role, body)
        if role == "user":
            # the user's chat holds its own messages as the assistant's: said, or tool calls
            mine = [m for m in body["messages"] if m.get("role") == "assistant"]
            calls = sum(1 for m in mine if m.get("tool_calls")) - task.prior_user_calls
            own = len(mine) - calls - task.prior_user_calls - task.prior_user
            if own > 0 and kind in ("gold", "permuted") and calls < len(task.user_gold):
                call = task.user_gold[calls]
                args = reversed_lists(call["arguments"]) if kind == "permuted" \
                    else call["arguments"]
                return call_message(calls, call["name"], args, prefix="ucall")
            say = opening(task.id, kind) if own == 0 else (
                "Let me think about it." if kind == "unfinished"
                else f"Thank you, that is all. {STOP}")
            return {"role": "assistant", "content": say}
        if role == "judge":
            results = [{"expectedOutcome": a, "reasoning": "scripted", "metExpectation": True}
                       for a in task.assertions]
            return {"role": "assistant", "content": json.dumps({"results": results})}
        done = sum(1 for m in body["messages"]
                   if m.get("role") == "assistant" and m.get("tool_calls")) - task.prior_calls
        if kind in ("gold", "permuted") and done < len(task.gold):
            call = task.gold[done]
            args = reversed_lists(call["arguments"]) if kind == "permuted" else call["arguments"]
            return call_message(done, call["name"], args)
        if kind == "errors":
            return call_message(done, *self.failing)
        if kind == "steps":
            return call_message(done, *self.passing)
        if kind == "unfinished":
            return {"role": "assistant", "content": "Could you tell me a little more?"}
        words = ["Done."] if kind == "nothing" else ["Done.", *task.communicate]
        return {"role": "assistant", "content": " ".join(words)}


def call_message(i: int, name: str, args: dict[str, Any], prefix: str = "call"
                 ) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"{prefix}_{i}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(args)}}]}


T = TypeVar("T")


def gold_calls(criteria: dict[str, Any], requestor: str | None = None) -> list[dict[str, Any]]:
    """`{name, arguments}` of a task's gold actions, in order; `requestor`: only that side's
    (τ²'s default requestor is the assistant)."""
    return [{"name": a["name"], "arguments": a.get("arguments") or {}}
            for a in criteria.get("actions") or []
            if requestor is None or a.get("requestor", "assistant") == requestor]


def text_rounds(tasks: Sequence[T], text: Callable[[T], str]) -> list[list[T]]:
    """`tasks` in rounds where no task's `text` is part of another's: a scripted model tells
    its task by that text in its prompt (the user's scenario, the solo agent's ticket), and
    mock's tasks share theirs."""
    out: list[list[T]] = []
    for t in tasks:
        for r in out:
            if all(text(t) not in text(o) and text(o) not in text(t) for o in r):
                r.append(t)
                break
        else:
            out.append([t])
    return out


def script_tasks(tasks: list[dict[str, Any]], extract: dict[str, Any],
                 ids: list[str]) -> list[ScriptTask]:
    """The scripted tasks from tasks.json and the driver's extract (scenario texts)."""
    scenario = {str(t["id"]): str(t["scenario"]) for t in extract.get("tasks") or []}
    out = []
    for t in tasks:
        tid = str(t.get("id"))
        if tid not in ids:
            continue
        crit = t.get("evaluation_criteria") or {}
        gold = gold_calls(crit, "assistant")
        history = (t.get("initial_state") or {}).get("message_history") or []
        user_gold = gold_calls(crit, "user")
        out.append(ScriptTask(tid, scenario.get(tid, ""), gold,
                              [str(c) for c in crit.get("communicate_info") or []],
                              [str(c) for c in crit.get("nl_assertions") or []],
                              sum(1 for m in history if m.get("role") == "user"
                                  and m.get("content")),
                              sum(1 for m in history if m.get("role") == "assistant"
                                  and m.get("tool_calls")),
                              user_gold,
                              sum(1 for m in history if m.get("role") == "user"
                                  and m.get("tool_calls"))))
    return out


# --------------------------------------------------------------------------- benchpack's side


def run_ours(plan_dir: Path, kinds: list[str], task_ids: list[str], base_url: str,
             prefix: str = "bp", concurrency: int = 2,
             progress: Callable[[str], None] | None = None,
             names: dict[str, str] | None = None) -> dict[str, Any]:
    """benchpack's runner on each kind (one run over the tasks), every model the scripted
    endpoint; `{"<task>/<kind>": {termination, reward, breakdown, error}}` in τ²'s words.
    `names`: τ² task id → session name, where they differ (telecom's ids are no pack ids)."""
    names = names or {}
    back = {names.get(t, t): t for t in task_ids}
    import duckdb

    from ..run_types import RunOptions
    from ..runner import run_plan

    out: dict[str, Any] = {}
    from ..tmpdirs import temporary

    with temporary("benchpack-parity-dialogues-") as tmp:
        for kind in kinds:
            if progress is not None:
                progress(f"benchpack: {kind} × {len(task_ids)} task(s)")
            db = Path(tmp) / f"{kind}.duckdb"
            options = RunOptions(
                plan=plan_dir, agent=f"litellm:openai/{prefix}-agent-{kind}",
                simulator=f"litellm:openai/{prefix}-user-{kind}",
                judge=f"litellm:openai/{prefix}-judge-{kind}", db=db, allow_python=True,
                sessions=[names.get(t, t) for t in task_ids], max_concurrency=concurrency,
                progress=False,
                api_base=base_url, use_cache=False, cache_dir=Path(tmp) / "cache",
                max_retries=0)
            run_plan(options)
            con = duckdb.connect(str(db), read_only=True)
            try:
                rows = con.execute("SELECT name, termination, score, error, extra "
                                   "FROM sessions").fetchall()
            finally:
                con.close()
            for name, termination, score, error, extra in rows:
                reward = (json.loads(extra or "{}").get("reward") or {})
                parts = reward.get("components") or {}
                basis = reward.get("basis") or []
                out[f"{back.get(str(name), name)}/{kind}"] = {
                    "termination": TERMINATION.get(str(termination), str(termination)),
                    "reward": score, "error": error,
                    "breakdown": {COMPONENT[c]: parts.get(c) for c in basis
                                  if c in COMPONENT}}
    return out


# --------------------------------------------------------------------------- comparison


def shown(body: dict[str, Any]) -> dict[str, Any]:
    """What a request shows the model, without what only names the call (ids, model name):
    each message's role, text, tool calls (name, parsed arguments), the tools offered and the
    sampling settings."""
    messages = []
    for m in body.get("messages") or []:
        item: dict[str, Any] = {"role": m.get("role"), "content": content_text(m)}
        calls = []
        for c in m.get("tool_calls") or []:
            fn = c.get("function") or {}
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except json.JSONDecodeError:
                args = fn.get("arguments")
            calls.append({"name": fn.get("name"), "arguments": args})
        if calls:
            item["tool_calls"] = calls
        messages.append(item)
    tools = [{"name": (t.get("function") or {}).get("name"),
              "description": (t.get("function") or {}).get("description"),
              "parameters": (t.get("function") or {}).get("parameters")}
             for t in body.get("tools") or []]
    return {"messages": messages, "tools": tools, "temperature": body.get("temperature"),
            "seed": body.get("seed"),
            # "auto" is what a request offering tools gets when it names no choice
            "tool_choice": body.get("tool_choice") or ("auto" if tools else None)}


@dataclass
class DialogueMismatch:
    key: str
    """`<task>/<kind>`, or `<task>/<kind>/<role>` for a request difference."""
    what: str
    detail: str


@dataclass
class DialogueReport:
    outcomes: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """key → (τ²'s outcome, ours)."""
    requests: dict[str, int] = field(default_factory=dict)
    """role → requests compared (pairs)."""
    mismatches: list[DialogueMismatch] = field(default_factory=list)
    declared: dict[str, int] = field(default_factory=dict)
    """A declared difference → how many requests it explained, or runs for one of `endings`."""
    endings: set[str] = field(default_factory=set)
    """The declared differences that explain a run's ending and reward, counted in runs."""
    notes: list[str] = field(default_factory=list)

    def declare_ending(self, why: str) -> None:
        """One more run whose ending `why` explains."""
        self.endings.add(why)
        self.declared[why] = self.declared.get(why, 0) + 1

    def as_json(self) -> dict[str, Any]:
        return {"outcomes": {k: {"tau2": a, "benchpack": b} for k, (a, b) in
                             self.outcomes.items()},
                "requests": self.requests,
                "mismatches": [m.__dict__ for m in self.mismatches],
                "declared": self.declared, "notes": self.notes}


ASSERTION_RAISES = ("τ²'s env-assertion helpers raise for a row that is not there, which ends "
                    "its evaluation with an error; benchpack's say the assertion does not hold "
                    "(the reward is 0, issue 24)")
"""A declared outcome difference: τ² crashed evaluating with `ValueError: … not found` where
benchpack's reward is 0 and the state check failed anyway."""


def _assertion_raised(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (a.get("termination") == "crashed" and a.get("reward") is None
            and str(a.get("error") or "").startswith("ValueError: ")
            and str(a.get("error")).endswith(" not found") and b.get("reward") == 0.0
            and not b.get("error"))


def compare_outcomes(theirs: dict[str, Any], ours: dict[str, Any], report: DialogueReport
                     ) -> None:
    for key in sorted(set(theirs) | set(ours)):
        a, b = theirs.get(key), ours.get(key)
        report.outcomes[key] = (a, b)
        if a is None or b is None:
            report.mismatches.append(DialogueMismatch(key, "missing", "τ² ran it" if b is None
                                                      else "benchpack ran it"))
            continue
        if _assertion_raised(a, b):
            report.declare_ending(ASSERTION_RAISES)
            continue
        if b.get("error"):
            report.mismatches.append(DialogueMismatch(key, "error", str(b["error"])))
        if a["termination"] != b["termination"]:
            report.mismatches.append(DialogueMismatch(
                key, "ending", f"τ² {a['termination']}, benchpack {b['termination']}"))
        if a["reward"] != b["reward"]:
            report.mismatches.append(DialogueMismatch(
                key, "reward", f"τ² {a['reward']}, benchpack {b['reward']}"))
        for comp, value in (a.get("breakdown") or {}).items():
            if comp in b.get("breakdown", {}) and b["breakdown"][comp] != value:
                report.mismatches.append(DialogueMismatch(
                    key, "component", f"{comp}: τ² {value}, benchpack {b['breakdown'][comp]}"))


Declaration = tuple[str, str, Callable[[dict[str, Any]], dict[str, Any]]]
"""A declared difference: (its text, the role it concerns, what to drop from both sides'
`shown` before comparing again)."""


def without_tools(x: dict[str, Any]) -> dict[str, Any]:
    return {**x, "tools": [], "tool_choice": None}


class TaskFinder(Protocol):
    """What the comparison needs of a script (`Script`, `solo.SoloScript`): a request's task."""

    def task_of(self, role: str, body: dict[str, Any]) -> Any: ...


def compare_requests(requests: list[dict[str, Any]], script: TaskFinder,
                     sides: tuple[str, str],
                     report: DialogueReport,
                     declared: Sequence[Declaration] = ()) -> None:
    """Pair each side's requests by (task, kind, role) in order and compare what they show; a
    difference a declaration removes is counted under it, not as a mismatch."""
    seqs: dict[tuple[str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for body in requests:
        m = _MODEL.search(str(body.get("model", "")))
        if m is None or m["side"] not in sides:
            continue
        try:
            task = script.task_of(m["role"], body).id
        except LookupError:
            task = "?"
        seqs[(m["side"], task, m["kind"], m["role"])].append(shown(body))
    theirs, ours = sides
    keys = sorted({k[1:] for k in seqs})
    for task, kind, role in keys:
        a, b = seqs.get((theirs, task, kind, role), []), seqs.get((ours, task, kind, role), [])
        report.requests[role] = report.requests.get(role, 0) + min(len(a), len(b))
        where = f"{task}/{kind}/{role}"
        if len(a) != len(b):
            report.mismatches.append(DialogueMismatch(
                where, "requests", f"τ² made {len(a)}, benchpack {len(b)}"))
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if x == y:
                continue
            why = next((text for text, who, drop in declared
                        if who == role and drop(x) == drop(y)), None)
            if why is not None:
                report.declared[why] = report.declared.get(why, 0) + 1
                continue
            report.mismatches.append(DialogueMismatch(where, "shown", f"request {i + 1}: "
                                                      + first_difference(x, y)))
            break


def first_difference(a: Any, b: Any, path: str = "") -> str:
    """Where two JSON values first differ, and how (short)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in [*a, *(k for k in b if k not in a)]:
            if a.get(k) != b.get(k):
                return first_difference(a.get(k), b.get(k), f"{path}.{k}" if path else str(k))
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
        if len(a) != len(b):
            return f"{path}: τ² has {len(a)} items, benchpack {len(b)}"
    if isinstance(a, str) and isinstance(b, str):
        i = next((n for n, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                 min(len(a), len(b)))
        return (f"{path}: differ at character {i}: τ² …{a[max(0, i - 30):i + 40]!r}…, "
                f"benchpack …{b[max(0, i - 30):i + 40]!r}…")
    return f"{path}: τ² {json.dumps(a, default=str)[:200]}, benchpack " \
           f"{json.dumps(b, default=str)[:200]}"


def render(report: DialogueReport, examples: int = 10) -> str:
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for key, (a, b) in report.outcomes.items():
        kind = key.rsplit("/", 1)[-1]
        by_kind[kind][0] += 1
        same = a is not None and b is not None and a["reward"] == b["reward"] and \
            a["termination"] == b["termination"]
        by_kind[kind][1] += same
    lines = [f"{'kind':<12}{'dialogues':>10}{'same ending and reward':>24}"]
    lines += [f"{k:<12}{n:>10}{s:>24}" for k, (n, s) in sorted(by_kind.items())]
    lines.append("requests compared: " + ", ".join(f"{r} {n}" for r, n in
                                                   sorted(report.requests.items())))
    if report.mismatches:
        lines.append(f"{len(report.mismatches)} mismatch(es):")
        lines += [f"  {m.key} {m.what}: {m.detail}" for m in report.mismatches[:examples]]
        if len(report.mismatches) > examples:
            lines.append(f"  … and {len(report.mismatches) - examples} more (--json)")
    else:
        lines.append("no mismatch: every dialogue ended alike, scored alike, and showed every "
                     "model the same requests" + (" but for the declared differences below"
                                                  if report.declared else ""))
    lines += [f"declared: {why} ({n} {'run' if why in report.endings else 'request'}"
              f"{'' if n == 1 else 's'})" for why, n in report.declared.items()]
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)


__all__ = ["KINDS", "DialogueReport", "Script", "ScriptTask", "call_message",
           "compare_outcomes", "compare_requests", "content_text", "render", "run_ours",
           "script_tasks", "shown"]
