"""`bench import tau2`, issue 24: what τ² keeps beside the agent's database — the user's own
tools and database (dual control), a task's `initial_state`, its `env_assertions` — mapped to
`user_toolsets`, `initial_state` and `score.env_assertions` (`benchpack.specs.user_side`).

The mapping follows τ²'s `Environment.set_state` and `EnvironmentEvaluator`: data patches
(`agent_data` → the domain's service, `user_data` → the user's), then `initialization_actions`
(`env_type` `assistant` → `side: agent`), then the tool calls of `message_history`; each
assertion's `func_name`, `arguments`, `env_type` and `assert_value` (default true).
Functions a toolset module lists in `HELPERS` (τ²'s non-tool methods: set-up and assertion
helpers) are left out of the tools offered (`include:`) and stay callable by name."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

USER_TOOLSETS = {"mock": "mock_user.py", "telecom": "telecom_user.py"}
"""Domains whose user has tools of its own (τ²'s `user_tools`), and our module for them."""
SYNCED = {"telecom": "sync_sides"}
"""Domains whose two sides τ² keeps in step after every call (`sync_tools`): the `after_call`
of both toolsets, which then hold both services."""
SIDE = {"assistant": "agent", "user": "user"}
NO_USER = ("it needs the user's own tools, and this domain folder has no user_db.json (or "
           "benchpack no user toolset for it)")


def user_service(domain: str) -> str:
    return f"{domain}_user"


def helpers(module: Path) -> set[str]:
    """The module's `HELPERS = (…)` names (public functions that are not tools)."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "HELPERS"
                                                for t in node.targets):
            value = ast.literal_eval(node.value)
            return {str(v) for v in value}
    return set()


class Unsupported(Exception):
    """A part of a task's initial state benchpack cannot set up (the task is not imported)."""


def initial_state(raw: dict[str, Any], domain: str, has_user: bool) -> dict[str, Any] | None:
    """The session's `initial_state` (None when the task starts from the released database)."""
    st = raw.get("initial_state") or {}
    if not any(st.get(k) for k in ("initialization_data", "initialization_actions",
                                   "message_history")):
        unknown = sorted(k for k, v in st.items() if v)
        if unknown:
            raise Unsupported("its initial state has fields benchpack does not know: "
                              + ", ".join(unknown))
        return None
    out: dict[str, Any] = {}
    data = st.get("initialization_data") or {}
    patches: dict[str, Any] = {}
    for part, service in (("agent_data", domain), ("user_data", user_service(domain))):
        if data.get(part):
            if part == "user_data" and not has_user:
                raise Unsupported("its initialization_data changes a user database this "
                                  "domain does not have")
            patches[service] = data[part]
    if patches:
        out["data"] = patches
    actions = []
    for a in st.get("initialization_actions") or []:
        side = SIDE.get(str(a.get("env_type")))
        if side is None:
            raise Unsupported(f"an initialization action has env_type {a.get('env_type')!r}")
        if side == "user" and not has_user:
            raise Unsupported(NO_USER)
        actions.append({"tool": str(a.get("func_name")), "args": a.get("arguments") or {},
                        "side": side})
    if actions:
        out["actions"] = actions
    history = [_message(m) for m in st.get("message_history") or []]
    if history:
        out["history"] = history
    return out


def _message(m: dict[str, Any]) -> dict[str, Any]:
    role = str(m.get("role"))
    if role not in ("user", "assistant", "tool"):
        raise Unsupported(f"its message history has a `{role}` message")
    out: dict[str, Any] = {"role": role}
    if m.get("content") is not None:
        out["content"] = str(m["content"])
    calls = [{"id": str(c.get("id")), "tool": str(c.get("name")),
              "args": c.get("arguments") or {}} for c in m.get("tool_calls") or []]
    if calls:
        out["tool_calls"] = calls
    if role == "tool":
        out["tool_call_id"] = str(m.get("id"))
    return out


def env_assertions(crit: dict[str, Any], has_user: bool = True) -> list[dict[str, Any]]:
    out = []
    for a in crit.get("env_assertions") or []:
        side = SIDE.get(str(a.get("env_type")))
        if side is None:
            raise Unsupported(f"an env assertion has env_type {a.get('env_type')!r}")
        if side == "user" and not has_user:
            raise Unsupported(NO_USER)
        item: dict[str, Any] = {"function": str(a.get("func_name")),
                                "args": a.get("arguments") or {}, "side": side,
                                "expect": a.get("assert_value", True)}
        if a.get("message"):
            item["message"] = str(a["message"])
        out.append(item)
    return out


def history_turns(session: dict[str, Any]) -> int:
    """User messages of the prior conversation: a scripted agent's entries answer them first."""
    history = (session.get("initial_state") or {}).get("history") or []
    if history and history[-1]["role"] == "user" and not history[-1].get("tool_calls"):
        history = history[:-1]  # the session opens with it: the agent's first entry answers it
    return sum(1 for m in history if m["role"] == "user")


__all__ = ["SYNCED", "USER_TOOLSETS", "Unsupported", "env_assertions", "helpers", "history_turns",
           "initial_state", "user_service"]
