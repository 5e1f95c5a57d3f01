"""Lints of what an agent that does nothing would earn (issue 25), computed from the rules where
the compiler can: a session's null trace is the workspace files and declarative service rows it
starts with, no call, no message, an empty reply (`benchpack.specs.guards`). Rules over the
rows of a process (HTTP) service cannot be evaluated here and are left alone, as are judged
items.

- W320 `nothing-to-achieve`: every outcome item of the session holds when nothing happens, so
  the gate (`specs.guards`: guards count only beside an achieved outcome) leaves every agent
  at 0 on it — the checklist needs an item that asks the agent to act.
- W321 `do-nothing-credit`: a τ²-style reward (an instructed user's `score:`, or a verified
  `score:` block of components and no items) that an agent doing nothing would earn: every
  gold action only reads (the final state is the start state), or there are none, and nothing
  must be communicated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from benchpack.specs.guards import NullTrace, guard_ids

Report = Callable[[str, str, tuple[Any, ...], str | None], None]


def _state_services(rule: Any) -> Iterator[str]:
    """The services whose rows a rule reads (`state: svc.table`), nested rules included."""
    if isinstance(rule, dict):
        if isinstance(rule.get("state"), str):
            yield rule["state"].partition(".")[0]
        for key in ("all", "any"):
            for sub in rule.get(key) or []:
                yield from _state_services(sub)
        if "not" in rule:
            yield from _state_services(rule["not"])


def state_effects(tools: dict[str, dict[str, Any]], services: dict[str, dict[str, Any]],
                  ignores: Iterable[str]) -> dict[str, str]:
    """Plan tool → `read` / `write` as the `state` component sees it: a declarative service's
    operation writing a table the environment leaves out of the state check
    (`state_ignores`) changes nothing it compares, so it counts as a read."""
    left_out = set(ignores)
    tables = {(name, op["name"]): f"{name}.{op['table']}"
              for name, svc in services.items() for op in svc.get("operations") or []}
    out = {}
    for name, tool in tools.items():
        impl = tool.get("impl") or {}
        table = tables.get((str(impl.get("service")), str(impl.get("operation")))) \
            if impl.get("kind") == "service" else None
        out[name] = "read" if table in left_out else tool["effect"]
    return out


def lint_credit(s: dict[str, Any], report: Report, files: dict[str, str],
                state: dict[str, dict[str, list[dict[str, Any]]]],
                tool_effects: dict[str, str]) -> None:
    """W320 and W321 for one compiled session dict. `files`: the text files it starts with;
    `state`: the rows of its declarative services (a rule over any other service is not
    evaluated); `tool_effects`: plan tool → `read` / `write`."""
    null = NullTrace(files=files, state=state)
    # (path, item id, rule, counts towards the outcome) of every deterministic item
    items: list[tuple[tuple[Any, ...], str, dict[str, Any] | None, bool]] = []
    checklist = s.get("checklist") or []
    any_outcome = any(it.get("aspect") == "outcome" for it in checklist)
    for i, it in enumerate(checklist):
        rule = it.get("rule") if it.get("grader") != "python" else None
        items.append((("checklist", i), str(it["id"]), rule,
                      it.get("aspect") == "outcome" or not any_outcome))
    score = s.get("score") or {}
    for i, it in enumerate(score.get("items") or []):
        items.append((("score", "items", i), str(it.get("id") or f"s{i + 1}"), it.get("rule"),
                      not it.get("gate")))
    outcome = [(path, iid, rule) for path, iid, rule, counts in items if counts]
    known = [(iid, rule) for _, iid, rule in outcome
             if rule is not None and all(svc in state for svc in _state_services(rule))]
    if outcome and len(known) == len(outcome):
        guards = guard_ids(known, null)
        if len(guards) == len(outcome):
            report("W320", "every outcome item holds when the agent does nothing ("
                   + ", ".join(guards) + "): they count only beside an achieved outcome, so "
                   "no agent can score above 0 here", outcome[0][0],
                   "add an outcome item the agent must act for (a call made, a row changed, "
                   "a file written), or mark one of these `aspect: process`")
    # instructed users' components are the session's `reward`; a verified `score:` block
    # with `reward:` and no items is the same kind of score
    reward = s.get("reward") or (score if not score.get("items") else None)
    if reward and reward.get("reward"):
        _reward_credit(s, reward, report, tool_effects)


def _reward_credit(s: dict[str, Any], score: dict[str, Any], report: Report,
                   tool_effects: dict[str, str]) -> None:
    """W321 for a reward-only block: what each component gives an agent that does nothing."""
    actions = (s.get("gold") or {}).get("actions") or []
    held = {
        # the gold actions replayed change nothing when every one only reads
        "state": all(tool_effects.get(str(a.get("tool"))) == "read" for a in actions),
        "actions": not actions,
        "communicate": not score.get("communicate"),
    }
    reward = [str(c) for c in score["reward"]]
    if any(c not in held for c in reward):  # a judged component: cannot be told here
        return
    if all(held[c] for c in reward):
        report("W321", "an agent that does nothing passes this session: "
               + ", ".join(f"`{c}` holds with nothing done" for c in reward),
               ("score", "reward"),  # where the author wrote it, whichever the protocol
               "add what the agent must do or say (a gold action, `communicate:`), or an "
               "assertion the judge checks")
