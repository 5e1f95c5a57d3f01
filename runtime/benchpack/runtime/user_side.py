"""Dual control and initial states (issue 24): the simulated user's own toolbox, and the world
and conversation an instructed_user session starts from.

The user's tools (`environments[].user_toolsets`, the plan environment's `user_tools`) run in
a `ToolBox` of their own over the same episode environment, so their state is one more service
of it: snapshots, resume and the state check cover both sides without knowing about sides.
Their calls are stamped `side = user` and stored in `tool_calls` beside the agent's; the
agent is never offered them and `sessions.tool_calls` counts only its own. The user's
toolbox shares the agent's `Gifts` (env/gifts.py): a tool the agent gives is offered to the
user from then on.

`initial_state` is applied as τ² applies `set_state`, before the state the gold actions are
replayed on is taken: the table patches (`data`, objects merged key by key), then the
set-up calls (`actions`), then the tool calls of the prior conversation (`history`). The
calls run through throwaway toolboxes (not the session's records: τ² replays them before the
dialogue it scores); a set-up call that fails is raised as `InitialStateError` — starting
from a state the pack did not describe would score a different task.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .env.copying import copy_json
from .types import Message

if TYPE_CHECKING:
    from .env import ToolBox
    from .session import SessionContext


class InitialStateError(RuntimeError):
    """A set-up call of `initial_state` failed: the session cannot start as described (an
    `infrastructure` error: not the agent's)."""


def user_tools(ctx: SessionContext) -> list[str]:
    env = ctx.plan.environments.get(ctx.session.environment)
    return list(env.user_tools) if env is not None else []


def offered_user_tools(ctx: SessionContext) -> list[str]:
    """The user tools the session's user is offered: the plan user's `tools` (τ²'s per-task
    `user_tools`) out of the environment's, in the environment's order as τ²'s toolkit lists
    them; all of them without a `tools`. A tool the agent gives (`user_discoverable`) stays:
    the gift, not the list, decides when it is offered. The world's set-up and the gold replay
    use `user_tools` (every tool), as τ²'s environment does."""
    names = user_tools(ctx)
    only = getattr(ctx.session.user, "tools", None)
    if only is None:
        return names
    env = ctx.plan.environments.get(ctx.session.environment)
    keep = {*only, *(env.user_discoverable if env is not None else ())}
    return [t for t in names if t in keep]


def user_toolbox(ctx: SessionContext) -> ToolBox | None:
    """The session's user-side toolbox (None when the user is offered no tools), made on first
    use."""
    box = getattr(ctx, "_user_box", None)
    if box is None and offered_user_tools(ctx):
        from .env import ToolBox

        box = ToolBox(ctx.plan, ctx.session, ctx.env,
                      allow_python=ctx.run.options.allow_python, tools=offered_user_tools(ctx),
                      side="user", gifts=getattr(ctx.toolbox, "gifts", None))
        ctx._user_box = box  # type: ignore[attr-defined]
    return box


def all_records(ctx: SessionContext) -> list[Any]:
    """The agent's and the user's tool records in the order they were made."""
    box = getattr(ctx, "_user_box", None)
    if box is None or not box.records:
        return list(ctx.toolbox.records)
    return sorted([*ctx.toolbox.records, *box.records], key=lambda r: r.started_at)


async def user_calls(ctx: SessionContext, calls: list[dict[str, Any]], turn: int) -> list[Any]:
    """Make the user's own tool calls (`{tool, args}`) of one user turn; their records."""
    box = user_toolbox(ctx)
    if box is None or not calls:
        return []
    box.turn = turn
    out = []
    for c in calls:
        box.step += 1
        out.append(await box.call(str(c.get("tool") or c.get("name")),
                                  dict(c.get("args") or c.get("arguments") or {})))
    return out


# --------------------------------------------------------------------------- initial state


def merge(row: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """τ²'s update of a model with a dict: objects merge key by key, anything else replaces."""
    out = dict(row)
    for k, v in patch.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy_json(v)
    return out


def patch_tables(snapshot: dict[str, Any], data: dict[str, Any],
                 keys: dict[str, dict[str, str]]) -> dict[str, Any]:
    """`snapshot` (an environment snapshot) with the rows of `data` merged in; a row key is
    matched as text (JSON keys are text, a table's keys may be numbers)."""
    snap = copy_json(snapshot)
    for svc, tables in data.items():
        for table, rows in tables.items():
            current = snap["services"][svc][table]
            field = keys[svc][table]
            for key, fields in rows.items():
                at = next((i for i, r in enumerate(current) if str(r.get(field)) == str(key)),
                          None)
                if at is None:
                    current.append(merge({field: key}, fields))
                else:
                    current[at] = merge(current[at], fields)
    return snap


async def apply_initial_state(ctx: SessionContext) -> None:
    """Set the world and the conversation up as the session's `initial_state` says."""
    st = ctx.session.initial_state
    # toolsets that keep sides in step (`after_call`) do so when the world is built and again
    # once it is set up, as τ²'s environments sync at construction and after `set_state`
    hooked = ctx.env.hooked_workers(ctx.run.options.allow_python)
    await _after_calls(hooked, "before")
    if not st:
        return
    env = ctx.env
    if st.get("data"):
        keys = {n: {t: spec.key for t, spec in svc.tables.items()}
                for n, svc in env.services.items()}
        env.restore(patch_tables(env.snapshot(), st["data"], keys))
    boxes = _setup_boxes(ctx, setup=True)
    for a in st.get("actions") or []:
        await _setup_call(ctx, boxes, a, "initial_state.actions")
    boxes = _setup_boxes(ctx, setup=False)
    history: list[Message] = []
    for m in st.get("history") or []:
        calls = m.get("tool_calls") or []
        for c in calls:
            await _setup_call(ctx, boxes, c, "initial_state.history")
        msg = Message(m["role"], m.get("content") or "", 0,
                      tool_calls=[{"id": c["id"], "name": c["tool"], "arguments": c["args"]}
                                  for c in calls] or None,
                      tool_call_id=m.get("tool_call_id"))
        history.append(msg)
    if history and history[-1].role == "user" and not history[-1].tool_calls:
        # τ²: a history ending with the user's message goes on with the agent answering it —
        # the session's opening message (`prior_opening`), stored when the agent's turn starts
        ctx.extra["prior_opening"] = history.pop().content
    if history:
        ctx.messages.extend(history)
        # the agent sees the conversation it is in (its own and the user's messages)
        ctx.brief.history = [*ctx.brief.history, *history]
    await _after_calls(hooked, "after")


async def _after_calls(workers: list[Any], when: str) -> None:
    from .env.errors import ToolError

    for worker in workers:
        try:
            await worker.run_after_call()
        except ToolError as exc:
            raise InitialStateError(f"the after_call of {worker.what} failed {when} the "
                                    f"initial state: {exc.message}") from None


def _setup_boxes(ctx: SessionContext, setup: bool) -> dict[str, ToolBox]:
    """Toolboxes for the set-up calls (`setup`: building the world, where the user's tools the
    agent gives are all at hand) or the prior conversation's (a give in it holds for the
    session: the session's own gifts)."""
    from .env import ToolBox
    from .env.gifts import Gifts

    opts = ctx.run.options.allow_python
    env = ctx.plan.environments.get(ctx.session.environment)
    gifts = Gifts(names=set(env.user_discoverable if env is not None else ())) if setup \
        else getattr(ctx.toolbox, "gifts", None)
    return {"agent": ToolBox(ctx.plan, ctx.session, ctx.env, allow_python=opts, gifts=gifts),
            "user": ToolBox(ctx.plan, ctx.session, ctx.env, allow_python=opts,
                            tools=user_tools(ctx), side="user", gifts=gifts)}


async def _setup_call(ctx: SessionContext, boxes: dict[str, ToolBox], a: dict[str, Any],
                      where: str) -> Any:
    side = a.get("side") or "agent"
    if "function" in a:  # a toolset function that is not a tool (a set-up helper)
        from .env.errors import ToolError

        worker = ctx.env.pytool_worker(a["toolset"], ctx.run.options.allow_python)
        try:
            return await worker.call_function(a["function"], a.get("args") or {}, a["state"])
        except ToolError as exc:
            raise InitialStateError(f"{where}: {a['function']}({a.get('args')}) on the "
                                    f"{side}'s side failed: {exc.message}") from None
    record = await boxes[side].call(a["tool"], a.get("args") or {})
    if record.error is not None and where == "initial_state.actions":
        raise InitialStateError(f"{where}: {a['tool']}({a.get('args')}) on the {side}'s side "
                                f"failed: {record.error}")
    # a prior conversation's failed call stays as it happened (τ² replays it the same way)
    return record.result


__all__ = ["InitialStateError", "all_records", "apply_initial_state", "merge",
           "offered_user_tools", "patch_tables", "user_calls", "user_toolbox", "user_tools"]
