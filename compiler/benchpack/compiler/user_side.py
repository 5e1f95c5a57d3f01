"""Dual control, initial states, environment assertions (issue 24): the compile checks of
`environments[].user_toolsets`, `sessions[].initial_state`, the `calls` of a user's
instructions and `score.env_assertions` (`benchpack.specs.user_side`).

Every name is checked where it is written (E202 with the nearest valid one): a user's call
names a user tool, an initialisation call a tool (or toolset function) of its side, an
assertion a public function of a toolset of its side, a patch a service and table the
environment has. The compiler never runs anything: whether a call succeeds is the runtime's
(a set-up call that fails is a run error, not a wrong start)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from benchpack.specs import pack as P

from .diagnostics import suggest_fix
from .toolsets import toolset_services

if TYPE_CHECKING:
    from .build import Builder
    from .core import Loc
    from .world import WorldBuilder


def environment_user_toolsets(b: WorldBuilder, env: P.Environment, loc: Any,
                              agent_toolsets: list[str], services: list[str]
                              ) -> tuple[list[str], list[str]]:
    """The user's toolsets (plan keys) and tools; their services join `services` (the state
    check compares every service of the environment, the user's included)."""
    keys: list[str] = []
    tools: list[str] = []
    by_module = {it.obj.module: k for k, it in b.toolsets.items()}
    for i, ref in enumerate(env.user_toolsets):
        key = ref if ref in b.toolsets else by_module.get(ref)
        if key is None:
            b.check_ref(ref, b.toolsets, "toolset", loc, ("user_toolsets", i))
            continue
        if key in agent_toolsets:
            b.err("E201", f"toolset `{ref}` is offered to both the agent and the user", loc,
                  ("user_toolsets", i), "a tool belongs to one side: keep it in `toolsets` "
                  "(the agent's) or in `user_toolsets` (the user's)")
            continue
        if key in keys:
            continue
        keys.append(key)
        tools.extend(b.toolset_tools.get(key, ()))
        for svc in toolset_services(b.toolsets[key].obj):
            if svc in b.services and svc not in services:
                services.append(svc)
    return keys, tools


def environment_state_ignores(b: WorldBuilder, env: P.Environment, loc: Any,
                              services: list[str]) -> list[str]:
    """`state_ignores` checked against the tables of the environment's services (either
    side's): a name the state check could never meet would leave a difference in, silently."""
    tables = [f"{svc}.{t}" for svc in services
              for t in (b.plan_services.get(svc) or {}).get("tables") or {}]
    out: list[str] = []
    for i, name in enumerate(env.state_ignores):
        if name in tables:
            if name not in out:
                out.append(name)
            continue
        svc = name.partition(".")[0]
        if svc in b.broken:  # its service was dropped, and reported, already
            continue
        hint, fix = suggest_fix(name, tables)
        what = (f"service `{svc}` of environment `{env.id}` has no table `{name.partition('.')[2]}`"
                if svc in services else f"environment `{env.id}` has no table `{name}`")
        b.err("E202", what + " to leave out of the state check", loc, ("state_ignores", i),
              hint or ("name it `service.table`; its tables: " + ", ".join(tables) if tables
                       else "the environment has no service tables"), fix=fix)
    return out


def _functions(b: Builder, env: dict[str, Any], side: str) -> dict[str, tuple[str, str | None]]:
    """Public functions of the side's toolsets: name → (toolset key, its `State` parameter)."""
    user = set(env.get("user_toolsets") or ())
    out: dict[str, tuple[str, str | None]] = {}
    for key in env.get("toolsets") or ():
        if (key in user) != (side == "user"):
            continue
        ts = b.plan_toolsets.get(key)
        if ts is None:
            continue
        try:
            tree = ast.parse(ts["source"])
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                out.setdefault(node.name, (key, _state_param(node)))
    return out


def _state_param(node: ast.FunctionDef) -> str | None:
    # the parameter annotated `State` (as `pytools.read_tools` decides for tools)
    for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
        ann = a.annotation
        if (isinstance(ann, ast.Name) and ann.id == "State") or (isinstance(
                ann, ast.Attribute) and ann.attr == "State") or (isinstance(
                ann, ast.Constant) and ann.value == "State"):
            return a.arg
    return None


def side_tools(env: dict[str, Any], tools: list[str]) -> dict[str, list[str]]:
    return {"agent": tools, "user": list(env.get("user_tools") or ())}


def _call_target(b: Builder, env: dict[str, Any], tools: dict[str, list[str]], side: str,
                 tool: str, loc: Loc, at: tuple[Any, ...], helpers: bool
                 ) -> dict[str, Any] | None:
    """How a call of `tool` on `side` runs: `{tool}` for an offered tool, `{function, toolset,
    state}` for a toolset function that is not offered (set-up helpers); None after an E202."""
    if tool in tools[side]:
        return {"tool": tool}
    funcs = _functions(b, env, side) if helpers else {}
    if tool in funcs:
        key, state = funcs[tool]
        return {"function": tool, "toolset": key, "state": state}
    other = "user" if side == "agent" else "agent"
    where = ("the user's tools (`user_toolsets`)" if side == "user" else "the agent's tools")
    hint, fix = suggest_fix(tool, [*tools[side], *funcs])
    if helpers and tool not in tools[other] and tool in _functions(b, env, other):
        hint = f"`{tool}` is a function of the {other}'s toolsets: give `side: {other}`"
    elif tool in tools[other]:
        hint = f"`{tool}` is one of the {other}'s tools: give `side: {other}`" if helpers else \
            f"`{tool}` is one of the {other}'s tools"
    elif not tools[side] and side == "user":
        hint = hint or "give the environment `user_toolsets: [tools/….py]`"
    b.err("E202", f"`{tool}` is not one of {where}", loc, at, hint, fix=fix)
    return None


def user_calls(b: Builder, s: P.Session, loc: Loc, env: dict[str, Any], tools: list[str]
               ) -> list[list[dict[str, Any]]]:
    """Per instruction of `user.instructions`, its compiled `calls` (E202 for a tool the user
    does not have)."""
    out: list[list[dict[str, Any]]] = []
    sides = side_tools(env, tools)
    for i, ins in enumerate(s.user.instructions if s.user else []):
        calls: list[dict[str, Any]] = []
        for j, c in enumerate(getattr(ins, "calls", None) or []):
            if _call_target(b, env, sides, "user", c.tool, loc,
                            ("user", "instructions", i, "calls", j, "tool"), False) is not None:
                calls.append({"tool": c.tool, "args": c.args})
        out.append(calls)
    return out


def gold_side_ok(b: Builder, env: dict[str, Any], tools: list[str], tool: str,
                 requestor: str | None, loc: Loc, at: tuple[Any, ...]) -> bool | None:
    """For a gold action with `requestor: user`: True when the user has the tool, False after
    an E202; None for the agent's actions (checked as before)."""
    if requestor != "user" or not env.get("user_tools"):
        return None
    sides = side_tools(env, tools)
    return _call_target(b, env, sides, "user", tool, loc, (*at, "tool"), False) is not None


def initial_state(b: Builder, s: P.Session, loc: Loc, env: dict[str, Any], tools: list[str]
                  ) -> dict[str, Any] | None:
    st = s.initial_state
    if st is None:
        return None
    sides = side_tools(env, tools)
    data: dict[str, Any] = {}
    services = list(env.get("services") or ())
    for svc, tables in st.data.items():
        at: tuple[str | int, ...] = ("initial_state", "data", svc)
        if svc not in services:
            hint, fix = suggest_fix(svc, services)
            b.err("E202", f"the environment has no service `{svc}` to patch", loc, at,
                  hint or ("its services: " + ", ".join(services) if services else None),
                  at_key=True, fix=fix)
            continue
        known = list((b.plan_services.get(svc) or {}).get("tables") or {})
        for table in tables:
            if table not in known:
                hint, fix = suggest_fix(table, known)
                b.err("E202", f"service `{svc}` has no table `{table}`", loc, (*at, table),
                      hint or ("its tables: " + ", ".join(known) if known else None),
                      at_key=True, fix=fix)
        data[svc] = {t: rows for t, rows in tables.items() if t in known}
    actions = []
    for i, a in enumerate(st.actions):
        target = _call_target(b, env, sides, a.side, a.tool, loc,
                              ("initial_state", "actions", i, "tool"), True)
        if target is not None:
            actions.append({**target, "args": a.args, "side": a.side})
    history = []
    for i, m in enumerate(st.history):
        at = ("initial_state", "history", i)
        if m.role == "tool" and not m.tool_call_id:
            b.err("E211", "a `tool` message needs the `tool_call_id` of the call it answers",
                  loc, (*at, "role"), "add `tool_call_id: <the call's id>`")
        side = "user" if m.role == "user" else "agent"
        calls = []
        for j, c in enumerate(m.tool_calls):
            if m.role == "tool":
                b.err("E211", "a `tool` message cannot make tool calls", loc,
                      (*at, "tool_calls", j))
                break
            if _call_target(b, env, sides, side, c.tool, loc,
                            (*at, "tool_calls", j, "tool"), False) is not None:
                calls.append({"id": c.id or "", "tool": c.tool,
                              "args": c.args, "side": side})
        history.append({"role": m.role, "content": m.content, "tool_calls": calls,
                        "tool_call_id": m.tool_call_id})
    _answered(b, st, loc)
    return {"data": data, "actions": actions, "history": history}


def _answered(b: Builder, st: Any, loc: Loc) -> None:
    """Every tool call of the prior conversation is answered by a later `tool` message with
    its id, and every `tool` message answers an earlier call: a model is shown the history, and
    providers refuse an unanswered call or an answer to nothing (τ² validates it too)."""
    open_calls: dict[str, tuple[int, int]] = {}
    for i, m in enumerate(st.history):
        if m.role == "tool" and m.tool_call_id and \
                open_calls.pop(m.tool_call_id, None) is None:
            b.err("E211", f"this `tool` message answers `{m.tool_call_id}`, which no earlier "
                  "tool call of the history has", loc,
                  ("initial_state", "history", i, "tool_call_id"),
                  "give the id of a call above it (`tool_calls: [{id: …, tool: …}]`)")
        for j, c in enumerate(m.tool_calls if m.role != "tool" else []):
            if c.id is None:
                b.err("E211", "a tool call of the history needs an `id`, which the `tool` "
                      "message answering it names", loc,
                      ("initial_state", "history", i, "tool_calls", j), "add `id: call_1`",
                      at_key=True)
            else:
                open_calls[c.id] = (i, j)
    for cid, (i, j) in open_calls.items():
        b.err("E211", f"the tool call `{cid}` of the history is never answered", loc,
              ("initial_state", "history", i, "tool_calls", j, "id"),
              f"add `{{role: tool, tool_call_id: {cid}, content: …}}` after it")


def env_assertions(b: Builder, s: P.Session, loc: Loc, env: dict[str, Any]
                   ) -> list[dict[str, Any]]:
    sc = s.score
    out: list[dict[str, Any]] = []
    if sc is None:
        return out
    for i, a in enumerate(sc.env_assertions):
        funcs = _functions(b, env, a.side)
        at = ("score", "env_assertions", i, "function")
        if a.function not in funcs:
            other = _functions(b, env, "user" if a.side == "agent" else "agent")
            hint, fix = suggest_fix(a.function, list(funcs))
            if a.function in other:
                hint = f"`{a.function}` is in the other side's toolsets: give `side: " \
                       f"{'user' if a.side == 'agent' else 'agent'}`"
            b.err("E202", f"no toolset of the {a.side}'s has a public function "
                  f"`{a.function}`", loc, at,
                  hint or ("define it in a toolset of the environment's "
                           + ("`user_toolsets`" if a.side == "user" else "`toolsets`")),
                  fix=fix)
            continue
        key, state = funcs[a.function]
        out.append({"function": a.function, "toolset": key, "state": state, "args": a.args,
                    "side": a.side, "expect": a.expect, "message": a.message})
    return out


def offered_user_tools(b: Builder, s: P.Session, loc: Loc, env: dict[str, Any],
                       tools: list[str]) -> list[str]:
    """`user.tools`: the environment's user tools this session's user is offered (τ²'s
    per-task `user_tools`); E202 where a name is not one of them."""
    have = list(env.get("user_tools") or ())
    out: list[str] = []
    for i, name in enumerate(s.user.tools or [] if s.user else []):
        if name in have:
            if name not in out:
                out.append(name)
            continue
        hint, fix = suggest_fix(name, have)
        if name in tools:
            hint, fix = f"`{name}` is one of the agent's tools", None
        elif not have:
            hint = hint or "give the environment `user_toolsets: [tools/….py]`"
        b.err("E202", f"`{name}` is not one of the user's tools (`user_toolsets` of environment "
              f"`{env.get('id')}`)", loc, ("user", "tools", i), hint, fix=fix)
    return out
