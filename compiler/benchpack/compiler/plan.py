"""Plan assembly: order, groups, ablation variants, fingerprints, lints, and the JSON writer."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

from benchpack.specs import PLAN_SCHEMA_ID, PLAN_VERSION

from .build import Builder, check_origin, check_prompts
from .core import SessionDraft
from .diagnostics import PathPart
from .lint import lint_session
from .lint_credit import lint_credit, state_effects
from .protocols import session_compilers
from .toolsets import OPTION_DEFAULTS

# What changes outcomes. Titles, descriptions, tags, source files and ids stay out.
_FINGERPRINT_KEYS = (
    "protocol", "persona", "style", "trigger", "request", "carry_over", "limits", "files", "tools",
    "hidden_intents", "stages", "scenario", "triggers", "dialogue", "checklist", "graph", "verify",
    "reference_solution",
)


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str).encode("utf-8")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def assemble(b: Builder, drafts: list[SessionDraft], episodes: dict[str, Any],
             order: list[str], groups: list[Any], content_hash: str,
             version: str) -> dict[str, Any]:
    by_id = {d.sid: d for d in drafts}
    prompts = check_prompts(b.pack, b.pack_src, b)
    check_origin(b.pack, b.pack_src, b)
    sessions: dict[str, dict[str, Any]] = {}
    # episode memory: sessions of the episode that run earlier (same style variant family)
    ep_order: dict[str, list[str]] = {}
    position: dict[str, int] = {}
    for sid in order:
        bucket = ep_order.setdefault(by_id[sid].episode, [])
        position[sid] = len(bucket)
        bucket.append(sid)
    for sid in order:
        d = by_id[sid]
        s = d.data
        if s["carry_over"]:
            s["prior_sessions"] = [
                o for o in ep_order[d.episode][: position[sid]]
                if by_id[o].style_code in (None, d.style_code)
            ]
        sessions[sid] = s
    for g in groups:
        for m in g.members:
            sessions[m]["group"] = g.id

    # environment context visible to persistent-intent lint
    env_text = {eid: [f["content"] for f in env["files"] if f["encoding"] == "utf-8"]
                for eid, env in b.plan_envs.items()}
    for sid in order:
        d = by_id[sid]
        s = sessions[sid]
        earlier: list[str] = []
        for o in ep_order[d.episode][: position[sid]]:
            x = sessions[o]
            earlier.append(x.get("request") or "")
            earlier.extend(i["text"] for i in x["hidden_intents"])
            earlier.extend(st["line"] for st in x["stages"])
            earlier.extend(t["user"] for t in x["dialogue"])
            earlier.extend(f["content"] for f in x["files"] if f["encoding"] == "utf-8")
        ws = list(env_text.get(s["environment"], [])) + [
            f["content"] for f in s["files"] if f["encoding"] == "utf-8"]
        for c in session_compilers(s["protocol"]):
            if c.plan_check is not None:
                c.plan_check(b, d, s, sessions, by_id, ep_order[d.episode], position)
        ignore = set(s.pop("_ignore"))

        def report(code: str, msg: str, sub: tuple[PathPart, ...], hint: str | None,
                   _d: SessionDraft = d, _ignore: set[str] = ignore) -> None:
            b.lint(code, msg, (_d.src, _d.path), _map_sub(_d, sub), hint, _ignore)

        lint_session(s, report, earlier, ws)
        lint_credit(s, report, _start_files(b, s, [sessions[o] for o in
                                                    ep_order[d.episode][: position[sid] + 1]]),
                    _declared_state(b, s), state_effects(
                        b.plan_tools, b.plan_services,
                        b.plan_envs.get(s["environment"], {}).get("state_ignores") or ()))

    if b.options.ablation:
        for g in groups:
            base = sessions[g.final]
            v = copy.deepcopy(base)
            v["id"] = f"{g.final}~nodeps"
            v["depends_on"] = []
            v["prior_sessions"] = []
            v["carry_over"] = False
            v["group"] = None
            v["variant"] = {"style": base["variant"]["style"], "ablation": "without_dependencies",
                            "base": g.final}
            sessions[v["id"]] = v
            order.insert(order.index(g.final) + 1, v["id"])

    # fingerprints, parents first
    for sid in order:
        s = sessions[sid]
        own = {k: s[k] for k in _FINGERPRINT_KEYS}
        if s.get("request_discloses"):  # only when set, so other fingerprints do not move
            own["request_discloses"] = s["request_discloses"]
        if s.get("score"):  # verified_outcome `score:`; likewise only when set
            own["score"] = s["score"]
        for key in ("user", "gold", "reward", "conversation",  # instructed_user; likewise
                    "knowledge",  # knowledge bases (issue 24); likewise
                    "material"):  # a plug-in protocol's; likewise
            if key in s:
                own[key] = s[key]
        own["persona_profile"] = b.plan_personas.get(s["persona"])
        own["environment"] = b.plan_envs.get(s["environment"])
        own["tool_specs"] = {t: b.plan_tools.get(t) for t in s["tools"]}
        locked = (own["environment"] or {}).get("discoverable")
        if locked:  # tools unlocked mid-session (issue 24); only when there are some
            own["discoverable_specs"] = {t: b.plan_tools.get(t) for t in locked}
        procs = _process_services(b, own["environment"])
        if procs:  # only when used, so other fingerprints do not move
            own["process_services"] = procs
        options = _toolset_options(b, own["environment"])
        if options:  # likewise only when a toolset changes a default
            own["toolset_options"] = options
        own["prompts"] = prompts
        own["models"] = b.pack.defaults.models.model_dump()
        own["seed"] = b.pack.defaults.seed
        if b.pack.defaults.repeat_seeds:  # only when set, so other fingerprints do not move
            own["repeat_seeds"] = b.pack.defaults.repeat_seeds
        parents = sorted(sessions[p]["fingerprint"] for p in s["depends_on"])
        s["fingerprint"] = sha256(canonical({"own": own, "parents": parents,
                                             "prior": [sessions[p]["fingerprint"]
                                                       for p in s["prior_sessions"]]}))

    parent_map = {sid: list(sessions[sid]["depends_on"]) for sid in order}
    child_map: dict[str, list[str]] = {sid: [] for sid in order}
    for sid in order:
        for p in parent_map[sid]:
            child_map[p].append(sid)

    defaults = b.pack.defaults
    used_envs = sorted({s["environment"] for s in sessions.values()})
    used_tools = sorted({t for s in sessions.values() for t in s["tools"]} | set(b.tools)
                        | {t for e in b.plan_envs.values() for t in e.get("discoverable", ())}
                        | {t for e in used_envs for t in b.plan_envs[e].get("user_tools", ())})
    meta: dict[str, Any] = {"category": None, "domain": None, "difficulty": None, "language": None, "tags": []}
    if b.pack.metadata:
        meta.update(b.pack.metadata.model_dump())
    return {
        "$schema": PLAN_SCHEMA_ID,
        "plan_version": PLAN_VERSION,
        "benchpack_version": version,
        "pack": {"name": b.pack.name, "version": b.pack.version,
                 "description": b.pack.description, "content_hash": content_hash,
                 "metadata": meta,
                 # a label outside every fingerprint; only when set, so plans stay byte for byte
                 **({"origin": b.pack.origin.for_vars(b.pack.vars).as_config()}
                    if b.pack.origin else {})},
        "defaults": {"models": defaults.models.model_dump(), "limits": _limits(defaults.limits),
                     "seed": defaults.seed, "repeats": defaults.repeats,
                     "temperature": defaults.temperature,
                     **({"repeat_seeds": list(defaults.repeat_seeds)} if defaults.repeat_seeds
                        else {})},
        "prompts": prompts,
        "personas": dict(sorted(b.plan_personas.items())),
        "tools": {t: b.plan_tools[t] for t in used_tools if t in b.plan_tools},
        "services": dict(sorted(b.plan_services.items())),
        "event_streams": dict(sorted(b.plan_streams.items())),
        "corpora": dict(sorted(b.plan_corpora.items())),
        "environments": {e: b.plan_envs[e] for e in used_envs},
        "episodes": episodes,
        "sessions": {sid: sessions[sid] for sid in order},
        "groups": [{"id": g.id, "episode": by_id[g.final].episode, "sessions": list(g.members),
                    "final": g.final} for g in groups],
        "parent_map": parent_map,
        "child_map": child_map,
        **_toolsets(b, [b.plan_envs[e] for e in used_envs]),
        **_knowledge(b, [b.plan_envs[e] for e in used_envs]),
    }


_NEWER_LIMITS = ("max_messages", "max_tool_errors", "max_tool_result_chars")


def _limits(limits: Any) -> dict[str, Any]:
    """The pack's default limits; the ones added for τ² parity only when set (plans that do not
    use them stay byte for byte)."""
    return {k: v for k, v in limits.model_dump().items()
            if v is not None or k not in _NEWER_LIMITS}


def _knowledge(b: Builder, envs: list[dict[str, Any]]) -> dict[str, Any]:
    """`knowledge` of the plan: the bases an environment offers, only when there are some."""
    used = sorted({k for e in envs for k in e.get("knowledge", ())})
    return {"knowledge": {k: b.plan_knowledge[k] for k in used}} if used else {}


def _toolsets(b: Builder, envs: list[dict[str, Any]]) -> dict[str, Any]:
    """`toolsets` of the plan: the ones an environment offers, and only when there are some
    (plans without toolsets stay byte for byte)."""
    used = sorted({t for e in envs for t in e.get("toolsets", ())})
    return {"toolsets": {t: b.plan_toolsets[t] for t in used if t in b.plan_toolsets}} \
        if used else {}
def _toolset_options(b: Builder, env: dict[str, Any] | None) -> dict[str, Any]:
    """The run-time options (argument checks, atomicity, error texts) of the toolsets an
    environment offers, where they differ from the defaults: they change what the agent sees."""
    out: dict[str, Any] = {}
    # a toolset's further services and its after-call hook change outcomes too
    for key in (env or {}).get("toolsets", ()):
        own = {k: v for k, v in (b.plan_toolsets.get(key) or {}).items()
               if k in OPTION_DEFAULTS or k in ("services", "after_call")}
        if own:
            out[key] = own
    return out


def _process_services(b: Builder, env: dict[str, Any] | None) -> dict[str, Any]:
    """The HTTP services an environment runs, as they change outcomes: their settings and a
    hash of their files, without where the pack lies on disk."""
    out: dict[str, Any] = {}
    for name in (env or {}).get("services", []):
        proc = (b.plan_services.get(name) or {}).get("process")
        if proc:
            # the files count through their hash (`source_sha256`)
            own = {k: v for k, v in proc.items() if k not in ("files", "binary_files")}
            out[name] = own
    return out


def _map_sub(d: SessionDraft, sub: tuple[PathPart, ...]) -> tuple[PathPart, ...]:
    """Compiled-session paths → authored paths (a `start` stage is not in the compiled list)."""
    if sub and sub[0] == "stages" and len(sub) > 1 and isinstance(sub[1], int):
        stages = d.model.stages
        if stages and stages[0].when.kind == "start":
            return ("stages", sub[1] + 1, *sub[2:])
    if sub and sub[0] in ("triggers",) and len(sub) > 1 and isinstance(sub[1], int):
        compiled = sorted(range(len(d.model.triggers)), key=lambda i: d.model.triggers[i].turn)
        if sub[1] < len(compiled):
            return ("triggers", compiled[sub[1]], *sub[2:])
    return sub


def write_plan(plan: dict[str, Any], out: Path) -> bytes:
    """Deterministic JSON: one line per top-level entry and per session, so diffs stay readable
    while the C encoder keeps writing fast."""
    parts = ["{\n"]
    keys = list(plan)
    for i, key in enumerate(keys):
        value = plan[key]
        sep = "," if i < len(keys) - 1 else ""
        if key in ("sessions", "personas", "environments", "tools", "services", "episodes",
                   "parent_map", "child_map", "toolsets") and isinstance(value, dict) and value:
            parts.append(f"{json.dumps(key)}: {{\n")
            items = list(value.items())
            for j, (k, v) in enumerate(items):
                comma = "," if j < len(items) - 1 else ""
                parts.append(f"  {json.dumps(k, ensure_ascii=False)}: "
                             f"{json.dumps(v, ensure_ascii=False, separators=(',', ':'))}{comma}\n")
            parts.append(f"}}{sep}\n")
        else:
            parts.append(f"{json.dumps(key)}: "
                         f"{json.dumps(value, ensure_ascii=False, separators=(',', ':'))}{sep}\n")
    parts.append("}\n")
    data = "".join(parts).encode("utf-8")
    out.mkdir(parents=True, exist_ok=True)
    target = out / "plan.json"
    if not target.exists() or target.read_bytes() != data:
        tmp = target.with_suffix(".json.tmp")
        tmp.write_bytes(data)
        tmp.replace(target)
    return data


def _start_files(b: Any, s: dict[str, Any], upto: list[dict[str, Any]]) -> dict[str, str]:
    """The text files a session starts with, as far as the plan knows them: its environment's
    and those the episode's sessions up to it place (what agents wrote is not known here)."""
    out: dict[str, str] = {}
    for f in [*b.plan_envs[s["environment"]]["files"], *(f for o in upto for f in o["files"])]:
        if f["encoding"] == "utf-8":
            out[f["path"]] = f["content"]
    return out


def _declared_state(b: Any, s: dict[str, Any]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The rows of the session's declarative services (process services' are not known)."""
    out = {}
    for name in b.plan_envs[s["environment"]]["services"]:
        svc = b.plan_services.get(name) or {}
        if svc and not svc.get("process"):
            out[name] = {t: list(tab["rows"]) for t, tab in svc["tables"].items()}
    return out
