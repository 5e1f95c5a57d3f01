"""instructed_user: the user scenario (rendered), gold actions (their tools must be offered to
the session and their arguments must validate against the tool's parameters) and the score
block (τ²-style reward components). Sessions of this protocol open with the scenario's reason
when they give no `request`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from benchpack.specs import pack as P

from .. import user_side as us
from ..diagnostics import suggest_fix
from .base import ProtocolCompiler

if TYPE_CHECKING:
    from ..build import Builder
    from ..core import Loc

NAME = "instructed_user"


def user(s: P.Session, r: Any) -> dict[str, Any] | None:
    u = s.user
    if u is None:
        return None
    instructions = []
    for i, x in enumerate(u.instructions):
        if isinstance(x, str):
            instructions.append({"text": r(x, "user", "instructions", i)})
        else:
            instructions.append({"text": r(x.say, "user", "instructions", i, "say"),
                                 "if": list(x.if_) if x.if_ is not None else None,
                                 "after_turn": x.after_turn, "stop": x.stop})
    out = {"reason": r(u.reason, "user", "reason"),
           "known": [r(k, "user", "known", i) for i, k in enumerate(u.known)],
           "unknown": [r(k, "user", "unknown", i) for i, k in enumerate(u.unknown)],
           "instructions": instructions,
           "language": u.language or (s.metadata.language if s.metadata else None)}
    if u.text is not None:  # verbatim; only when given, so older plans stay byte for byte
        out["text"] = u.text
    return out


def gold(b: Builder, s: P.Session, loc: Loc, tools: list[str],
         env: dict[str, Any] | None = None) -> dict[str, Any] | None:
    g = s.gold
    if g is None:
        return None
    actions = []
    seen: set[str] = set()
    for i, a in enumerate(g.actions):
        aid = a.id or f"a{i + 1}"
        if aid in seen:
            b.err("E201", f"gold action id `{aid}` is used twice", loc, ("gold", "actions", i, "id"))
        seen.add(aid)
        at = ("gold", "actions", i)
        user_side = us.gold_side_ok(b, env or {}, tools, a.tool, a.requestor, loc, at)
        if user_side is False:
            pass  # reported: not one of the user's tools
        elif a.tool not in tools and user_side is None:
            if not b.lost_tool(a.tool):
                hint, fix = suggest_fix(a.tool, tools)
                b.err("E202", f"gold action uses the tool `{a.tool}`, which this session does "
                      "not offer", loc, (*at, "tool"),
                      hint or "add it to the environment's tools or services", fix=fix)
        else:
            spec = b.plan_tools.get(a.tool)
            schema = spec.get("parameters") if spec else None
            if isinstance(schema, dict) and a.match != "subset" and (
                    a.match != "tau2" or a.compare is None):
                try:
                    errors = sorted(Draft202012Validator(schema).iter_errors(a.args),
                                    key=lambda e: list(e.absolute_path))
                except SchemaError:
                    errors = []  # the tool's own schema error is reported where it is defined
                for e in errors[:3]:
                    sub: tuple[str | int, ...] = (*at, "args",
                                                  *[str(p) for p in e.absolute_path][:1])
                    b.err("E211", f"gold action `{aid}` ({a.tool}): {e.message}", loc, sub,
                          "the arguments must be valid for the tool's `parameters`, as an "
                          "agent's call would have to be")
        action: dict[str, Any] = {"id": aid, "tool": a.tool, "args": a.args, "match": a.match,
                                  "info": a.info}
        if a.match == "tau2":  # the τ² keys only when used: older plans stay byte for byte
            action["compare"] = a.compare
            if a.requestor is not None:
                action["requestor"] = a.requestor
            if g.ordered:
                b.err("E211", f"gold action `{aid}` matches as τ² does, which has no order",
                      loc, (*at, "match"), "drop `ordered: true`, or use another `match`")
        elif a.requestor is not None:
            action["requestor"] = a.requestor
        actions.append(action)
    return {"actions": actions, "ordered": g.ordered}


def score(b: Builder, s: P.Session, loc: Loc, r: Any, has_gold: bool,
          env: dict[str, Any] | None = None) -> dict[str, Any] | None:
    if s.protocol != NAME:  # `score:` of another protocol (verified_outcome) is checked there
        return None
    sc = s.score or P.Score()
    if sc.items or sc.formula is not None:
        key = "items" if sc.items else "formula"
        b.err("E204", f"`score.{key}` is not supported by the instructed_user protocol yet",
              loc, ("score", key), "use `reward: [state, actions, communicate, assertions]`")
    reward = list(sc.reward) if sc.reward is not None else (
        (["state"] if has_gold else []) + (["communicate"] if sc.communicate else [])
        + (["assertions"] if sc.assertions else [])
        + (["env_assertions"] if sc.env_assertions else []))
    if s.protocol == NAME and ("state" in reward or "actions" in reward) and not has_gold:
        comp = "state" if "state" in reward else "actions"
        b.err("E211", f"the reward uses `{comp}`, which needs gold actions", loc,
              ("score", "reward"), "add `gold: {actions: [...]}` (an empty list means: "
              "nothing may change)")
    if s.protocol == NAME and "communicate" in reward and not sc.communicate:
        b.err("E211", "the reward uses `communicate`, but `score.communicate` is empty", loc,
              ("score", "reward"), "list what the agent must tell the user")
    if s.protocol == NAME and "assertions" in reward and not sc.assertions:
        b.err("E211", "the reward uses `assertions`, but `score.assertions` is empty", loc,
              ("score", "reward"), "list the assertions the judge checks")
    if s.protocol == NAME and "env_assertions" in reward and not sc.env_assertions:
        b.err("E211", "the reward uses `env_assertions`, but `score.env_assertions` is empty",
              loc, ("score", "reward"), "list the predicates: `env_assertions: [{function: …, "
              "args: {…}, expect: true}]`")
    out: dict[str, Any] = {"reward": reward, "communicate": list(sc.communicate),
                           "assertions": [r(a, "score", "assertions", i)
                                          for i, a in enumerate(sc.assertions)],
                           "pass_threshold": sc.pass_threshold}
    # τ²'s matching and judging only when chosen: older plans stay byte for byte
    if sc.communicate_match not in (None, "words"):
        out["communicate_match"] = sc.communicate_match
    if sc.assertions_judge not in (None, "rubric"):
        out["assertions_judge"] = sc.assertions_judge
    if env is not None and sc.env_assertions:  # issue 24; only when given
        out["env_assertions"] = us.env_assertions(b, s, loc, env)
    return out


def conversation(b: Builder, s: P.Session) -> dict[str, Any] | None:
    """The dialogue rules: `defaults.conversation` under the session's own, field by field;
    None when neither gives any (the plan then has no `conversation`: today's behaviour)."""
    layers = [c for c in (b.pack.defaults.conversation, s.conversation) if c is not None]
    if s.protocol != NAME or not layers:
        return None
    out = P.Conversation().model_dump(mode="json")
    for layer in layers:
        out.update({k: getattr(layer, k) for k in layer.model_fields_set})
    if not out.get("solo"):  # issue 24: only when on, so older plans stay byte for byte
        out.pop("solo", None)
    for key in ("end_tool", "system_request"):
        if out.get(key) is None:
            out.pop(key, None)
    return out


def solo_ending(b: Builder, s: P.Session, loc: Loc, conv: dict[str, Any],
                tools: list[str]) -> None:
    """`end_tool` and `system_request` belong to solo mode; the ending tool must be one the
    session offers, and it goes last (τ² appends its `done` after every other tool)."""
    def at(key: str) -> tuple[str, ...]:
        given = s.conversation is not None and key in s.conversation.model_fields_set
        return ("conversation", key) if given else ()
    for key in ("end_tool", "system_request"):
        if conv.get(key) is not None and not conv.get("solo"):
            b.err("E216", f"session `{s.id}` sets `conversation.{key}` without solo mode: it "
                  "only applies to a session the agent works alone", loc, at(key),
                  "add `solo: true` to the conversation, or remove the key")
    request = conv.get("system_request")
    if request is not None and "{request}" not in request:
        b.err("E216", f"session `{s.id}`'s `conversation.system_request` has no `{{request}}`: "
              "the request would not reach the agent", loc, at("system_request"),
              'write where the request goes, e.g. "\\n\\nTask: {request}"')
    end = conv.get("end_tool")
    if end is None or not conv.get("solo"):
        return
    if end not in tools:
        hint, fix = suggest_fix(end, tools)
        b.err("E216", f"session `{s.id}`'s ending tool `{end}` is not a tool it offers the "
              "agent", loc, at("end_tool"), hint or "declare the tool in the environment's "
              "`tools:` (a `static` one does: it is never run)",
              fix=fix if at("end_tool") else None)
        return
    tools.remove(end)
    tools.append(end)


def limits(merged: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    # with a message limit, the turn budget must not end the dialogue first: a turn takes at
    # least two messages (the user's and the agent's answer), so max_messages turns never bind
    if merged.get("max_messages") is not None and "max_turns" not in given:
        return {**merged, "max_turns": merged["max_messages"]}
    return merged


def material(b: Builder, s: P.Session, loc: Loc, r: Any, tools: list[str],
             env: dict[str, Any]) -> dict[str, Any]:
    if s.protocol == NAME and s.user is None:
        b.err("E211", f"instructed_user session `{s.id}` has no `user:` scenario", loc, ("user",),
              "add `user: {reason: …, known: […], unknown: […], instructions: […]}`",
              at_key=True)
    out: dict[str, Any] = {}
    u = user(s, r)
    if u is not None:  # the user's own tool calls (issue 24), only where there are some
        for ins, calls in zip(u["instructions"], us.user_calls(b, s, loc, env, tools),
                              strict=True):
            if calls:
                ins["calls"] = calls
        if s.user is not None and s.user.tools is not None:  # only when given: plans stay
            u["tools"] = us.offered_user_tools(b, s, loc, env, tools)
    conv = conversation(b, s)
    if s.protocol == NAME and env.get("user_tools") and not (conv or {}).get("solo") \
            and (conv or {}).get("simulator", "tagged") == "tagged":
        # the `tagged` LLM user (one prompt per message) is never offered tools: under an LLM
        # simulator the user could not do its side, so a dual-control task is unwinnable
        b.lint("W341", f"session `{s.id}`'s user has tools (`user_toolsets` of environment "
               f"`{env['id']}`) but its LLM simulator is `tagged`, which is not offered them: "
               "an LLM user would never call them (the rules and scripted users do)", loc,
               ("conversation", "simulator") if s.conversation is not None
               and "simulator" in s.conversation.model_fields_set else ("user",),
               "set `conversation: {simulator: chat}` on the session or under `defaults`")
    if conv is not None and conv.get("solo"):
        # solo mode: the agent is offered the user's tools beside its own (in place: the
        # session's `tools` is this list)
        tools.extend(t for t in env.get("user_tools") or () if t not in tools)
    if conv is not None:
        solo_ending(b, s, loc, conv, tools)
    # a discoverable tool (issue 24) is offered once unlocked: gold may use it after the unlock
    g = gold(b, s, loc, [*tools, *env.get("discoverable", ())], env)
    sc = score(b, s, loc, r, g is not None, env)
    start = us.initial_state(b, s, loc, env, tools) if s.protocol == NAME else None
    # only when given: the plans of other protocols stay byte for byte
    # the compiled `score:` is the plan's `reward` (a verified_outcome `score:` is `score`)
    for key, value in (("user", u), ("gold", g), ("reward", sc), ("initial_state", start),
                       ("conversation", conv)):
        if value is not None:
            out[key] = value
    return out


def opening(b: Builder, s: P.Session, loc: Loc, r: Any, request: str | None) -> str | None:
    # the simulator opens with the reason; `request` (when given) overrides the first message
    if request is not None or s.user is None:
        return request
    return str(r(s.user.reason, "user", "reason"))


COMPILER = ProtocolCompiler(
    name=NAME,
    default_limits={"max_turns": 30, "max_steps_per_turn": 30, "turn_timeout_s": 600.0},
    material=material,
    opening=opening,
    own_limits=("max_messages", "max_tool_errors"),
    limits=limits,
)
