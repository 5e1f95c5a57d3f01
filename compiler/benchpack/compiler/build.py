"""Semantic checks, linking, rendering and plan assembly.

Input: validated models with their origin (file, JSON path). Output: the plan as plain
JSON-ready dicts (shape: `benchpack.specs.plan.Plan`). Every problem becomes a diagnostic at the
place the author wrote the offending value.
"""

from __future__ import annotations

import json
from typing import Any

from benchpack.specs import pack as P

from .checks import CheckBuilder, jmespath_problem, regex_hint
from .core import DEFAULT_ENV, BuilderCore, Built, CompileOptions, Item, Loc, SessionDraft, iso
from .diagnostics import PathPart, suggest_fix
from .graph import build_dag, dependency_groups, find_cycles, stable_order
from .http import http_services_of
from .knowledge import session_knowledge
from .loader import SourceFile
from .protocols import (
    PROTOCOL_COMPILERS,
    SESSION_FIELD_OWNERS,
    SESSION_KEY_ORDER,
    protocol_compiler,
    session_compilers,
)
from .render import check_syntax
from .validate import report_validation_error
from .world import WorldBuilder

__all__ = [
    "DEFAULT_ENV",
    "Builder",
    "BuilderCore",
    "Built",
    "CheckBuilder",
    "CompileOptions",
    "Item",
    "Loc",
    "SessionDraft",
    "WorldBuilder",
    "check_prompts",
    "iso",
    "jmespath_problem",
    "regex_hint",
]

class Builder(CheckBuilder):
    """Phases 3 and 4 (sessions, dependency order) over the core, world and check steps; each
    session's protocol material comes from the protocol compilers' registry."""

    # ------------------------------------------------------------------ phase 3: sessions

    def sessions(self) -> tuple[list[SessionDraft], dict[str, Any]]:
        drafts: list[SessionDraft] = []
        episodes_out: dict[str, Any] = {}
        pack_name = self.pack.name
        for ep_id, it in self.episodes.items():
            ep: P.Episode = it.obj
            eloc = (it.src, it.path)
            # an unknown persona is reported here; its sessions still compile, so their own
            # mistakes are reported in the same pass
            self.check_ref(ep.persona, self.personas, "persona", eloc, ("persona",))
            env_id = ep.environment or DEFAULT_ENV
            if ep.environment is not None and not self.check_ref(
                    ep.environment, self.environments, "environment", eloc, ("environment",)):
                env_id = DEFAULT_ENV
            names: dict[str, int] = {}
            for si, s in enumerate(ep.sessions):
                if s.id in names:
                    self.err("E201", f"session `{s.id}` appears twice in episode `{ep_id}`",
                             (it.src, (*it.path, "sessions", si)), ("id",))
                    continue
                names[s.id] = si
            ep_sessions: list[str] = []
            for si, s in enumerate(ep.sessions):
                if names.get(s.id) != si:
                    continue
                loc = (it.src, (*it.path, "sessions", si))
                styles = self.session_styles(s, ep, loc)
                for code in styles:
                    base = f"session.{pack_name}.{ep_id}.{s.id}"
                    sid = base if code is None else f"{base}@{code}"
                    d = SessionDraft(sid=sid, base=base, episode=ep_id, index=si, model=s,
                                      src=it.src, path=loc[1], style_code=code)
                    drafts.append(d)
                    if code is None or code == styles[0]:
                        ep_sessions.append(sid)
            episodes_out[ep_id] = {
                "id": ep_id, "title": ep.title, "persona": ep.persona, "environment": env_id,
                "memory": ep.memory, "sessions": ep_sessions,
            }
        by_base: dict[str, list[SessionDraft]] = {}
        for d in drafts:
            by_base.setdefault(d.base, []).append(d)
        for d in drafts:
            self.resolve_deps(d, by_base)
        for d in drafts:
            self.session_body(d, episodes_out[d.episode])
        return drafts, episodes_out

    def session_styles(self, s: P.Session, ep: P.Episode, loc: Loc) -> list[str | None]:
        if s.styles is None:
            return [None]
        if s.styles in ("all", "coherent"):
            return list(P.COHERENT_STYLES)
        out: list[str | None] = []
        for i, code in enumerate(s.styles):
            norm = P.normalise_style(code)
            if norm in out:
                self.err("E215", f"style `{code}` is listed twice", loc, ("styles", i))
                continue
            out.append(norm)
        if not out:
            self.err("E215", "`styles` is empty", loc, ("styles",), "list at least one style")
            return [None]
        return out

    def resolve_deps(self, d: SessionDraft, by_base: dict[str, list[SessionDraft]]) -> None:
        loc = (d.src, d.path)
        ep_prefix = f"session.{self.pack.name}.{d.episode}."
        for i, dep in enumerate(d.model.depends_on):
            if dep == d.model.id:
                self.err("E203", f"session `{dep}` depends on itself", loc, ("depends_on", i))
                continue
            targets = by_base.get(ep_prefix + dep)
            if not targets and dep in self.broken:
                continue
            if not targets:
                ep_names = {b.removeprefix(ep_prefix) for b in by_base if b.startswith(ep_prefix)}
                other = [b for b in by_base if b.endswith("." + dep)]
                hint, fix = suggest_fix(dep, sorted(ep_names))
                if other and not hint:
                    hint = "dependencies must be in the same episode"
                self.err("E202", f"unknown session `{dep}` in episode `{d.episode}`", loc,
                         ("depends_on", i), hint, fix=fix)
                continue
            if len(targets) == 1 and targets[0].style_code is None:
                d.deps.append(targets[0].sid)
                continue
            match = [t for t in targets if t.style_code == d.style_code]
            if match:
                d.deps.append(match[0].sid)
            else:
                styles = ", ".join(t.style_code or "NONE" for t in targets)
                self.err("E213", f"`{dep}` is expanded over styles, so `{d.model.id}` must be "
                         "expanded over the same styles to depend on it", loc, ("depends_on", i),
                         f"add `styles: [{styles}]` to `{d.model.id}`")

    def session_body(self, d: SessionDraft, episode: dict[str, Any]) -> None:
        s = d.model
        loc = (d.src, d.path)
        ep_item = self.episodes[d.episode]
        ep: P.Episode = ep_item.obj
        ignore = self.pack_ignore | self.lint_settings(s.lint, loc)
        self.session_ignore = ignore
        try:
            self._session_body(d, episode, ep, loc, ignore)
        finally:
            self.session_ignore = set()

    def _session_body(self, d: SessionDraft, episode: dict[str, Any], ep: P.Episode, loc: Loc,
                      ignore: set[str]) -> None:
        s = d.model
        persona = self.plan_personas.get(ep.persona)
        style = persona.get("style") if persona else None
        if d.style_code is not None:
            style = self.style(P.CommunicationStyle(code=d.style_code), loc, ("styles",))
        ctx = {
            "vars": self.pack.vars,
            "persona": persona or {},
            "episode": {"id": ep.id, "title": ep.title},
            "session": {"id": s.id, "title": s.title},
            "style": style or {"code": "NONE", "length": "terse"},
        }

        def r(text: str | None, *sub: PathPart) -> str | None:
            return None if text is None else self.render(text, ctx, loc, sub)

        meta: dict[str, Any] = {"category": None, "domain": None, "difficulty": None,
                                "language": None, "tags": []}
        for m in (self.pack.metadata, ep.metadata, s.metadata):
            if m is None:
                continue
            for k, v in m.model_dump().items():
                if k == "tags":
                    meta["tags"] = sorted(set(meta["tags"]) | set(v))
                elif v is not None:
                    meta[k] = v
        if meta["language"] is None and persona:
            meta["language"] = persona["profile"].get("language")

        env = self.plan_envs.get(episode["environment"]) or self.plan_envs[DEFAULT_ENV]
        tools = list(env["tools"])
        for i, t in enumerate(s.tools):
            if self.check_ref(t, self.tools, "tool", loc, ("tools", i)) and t not in tools:
                tools.append(t)
                # HTTP tools: the episode's environment runs the services, one per episode
                for svc in http_services_of(self, [t]):
                    if svc not in env["services"]:
                        self.err("E231", f"tool `{t}` calls service `{svc}`, which environment "
                                 f"`{env['id']}` does not run", loc, ("tools", i),
                                 f"add `{svc}` to the environment's `services` (or its tool to "
                                 "the environment's `tools`)")
        files = []
        for i, f in enumerate(s.files):
            pf = self.workspace_file(f, loc, ("files", i), ctx)
            if pf:
                files.append(pf)

        limits = self.session_limits(s, loc)

        trigger = s.trigger.model_dump(mode="json")
        request = r(s.request, "request")
        compiler = protocol_compiler(s.protocol)
        if compiler.opening is not None:
            request = compiler.opening(self, s, loc, r, request)
        if request is None and s.trigger.kind == "user_message" and not s.dialogue:
            self.err("E212", f"session `{s.id}` starts with a user message but has no `request`",
                     loc, ("request",), "add `request: …` (the user's opening message)")
        if request is None and s.trigger.kind != "user_message":
            payload = s.trigger.payload or {}
            request = json.dumps(payload, ensure_ascii=False, sort_keys=True) if payload else None

        self.protocol_material(s, loc)
        # Every protocol's material is compiled (and checked) whatever the session's protocol:
        # a key given to the wrong protocol is an E204 above, and its own mistakes still show.
        material: dict[str, Any] = {}
        for c in session_compilers(s.protocol):
            if c.name not in PROTOCOL_COMPILERS:  # a plug-in: its keys, checked by its model
                if self.plugin_material(s, loc):
                    material["material"] = c.material(self, s, loc, r, tools, env)
                continue
            material.update(c.material(self, s, loc, r, tools, env))
        material["checklist"] = self.checklist(s, loc, r, tools, env)
        carry = s.carry_over if s.carry_over is not None else ep.memory == "carry_over"
        d.data = {
            "id": d.sid, "name": s.id, "episode": d.episode, "index": d.index,
            "title": s.title, "description": s.description, "source_file": self.pack_path(d.src),
            "metadata": meta, "protocol": s.protocol, "persona": ep.persona,
            "environment": env["id"], "style": style, "trigger": trigger, "request": request,
            "depends_on": list(dict.fromkeys(d.deps)), "prior_sessions": [],
            "carry_over": carry, "group": None,
            "variant": {"style": d.style_code, "ablation": None, "base": None},
            "limits": limits, "files": files, "tools": tools,
            # plans are written in insertion order: the historic keys keep their places
            **{k: material.pop(k) for k in SESSION_KEY_ORDER if k in material},
            **material,
            "reference_solution": r(s.reference_solution, "reference_solution"),
            "fingerprint": "",
            "_ignore": sorted(ignore),
        }
        if s.request_discloses:  # left out when empty: older plans stay byte for byte
            d.data["request_discloses"] = list(s.request_discloses)
        knowledge = session_knowledge(self, s.required_documents, env, loc)
        if knowledge is not None:  # likewise only with a knowledge base
            d.data["knowledge"] = knowledge

    def session_limits(self, s: P.Session, loc: Loc) -> dict[str, Any]:
        """The protocol's default limits under the pack's, under the session's; a limit only
        another protocol honours is an E204 on the session and ignored from the pack."""
        compiler = protocol_compiler(s.protocol)
        foreign = {k: c.name for c in PROTOCOL_COMPILERS.values() for k in c.own_limits
                   if k not in compiler.own_limits}
        given: dict[str, Any] = {}
        for lim in (self.pack.defaults.limits, s.limits):
            if lim is not None:
                given.update({k: v for k, v in lim.model_dump().items() if v is not None})
        for key, owner in foreign.items():
            if s.limits is not None and getattr(s.limits, key) is not None:
                self.err("E204", f"`limits.{key}` is honoured by the {owner} protocol only, "
                         f"but this session is {s.protocol}", loc, ("limits", key),
                         "drop it here (the agent's own limits are `max_turns`, "
                         "`max_steps_per_turn` and `turn_timeout_s`)", at_key=True)
            given.pop(key, None)
        limits: dict[str, Any] = {**compiler.default_limits, **given}
        return compiler.limits(limits, given) if compiler.limits is not None else limits

    def plugin_material(self, s: P.Session, loc: Loc) -> bool:
        """A plug-in protocol's session keys checked by its own model, each mistake at its
        place in the file; the session's `material` becomes that model. False: mistakes."""
        from pydantic import ValidationError

        from benchpack.specs.plugins import material_model

        src, path = loc
        model = material_model(s.protocol)
        try:
            s.material = model.model_validate(s.material)
        except ValidationError as exc:
            report_validation_error(exc, model, s.material, src.shown, self.diags, path,
                                    f"{s.protocol} session `{s.id}`")
            return False
        return True

    def protocol_material(self, s: P.Session, loc: Loc) -> None:
        for key, protos in SESSION_FIELD_OWNERS.items():
            value = getattr(s, key)
            if value and s.protocol not in protos:
                names = " or ".join(protos)
                self.err("E204", f"`{key}` belongs to the {names} protocol, but this session is "
                         f"{s.protocol}", loc, (key,),
                         f"remove it or set `protocol: {protos[0]}`", at_key=True)

    def unused(self, drafts: list[SessionDraft]) -> None:
        """W312: things defined but never used (often a typo in the place that should use them)."""
        if any(self.salvaged.dropped.values()) or any(f.data is None for f in self.loaded.files):
            return  # what validation dropped, or a file that did not parse, may well use them
        used_personas = {it.obj.persona for it in self.episodes.values()}
        used_envs = {it.obj.environment for it in self.episodes.values()}
        used_services = {s for e in self.environments.values() for s in e.obj.services}
        used_services |= {it.obj.service for it in self.toolsets.values()}
        used_services |= {s for it in self.toolsets.values() for s in it.obj.services}
        used_streams = {s for e in self.environments.values() for s in e.obj.event_streams}
        used_tools = {t for e in self.environments.values() for t in e.obj.tools}
        used_tools |= {t for d in drafts for t in d.model.tools}
        used_tools |= {t for e in self.environments.values() if e.obj.discoverable  # issue 24
                       for t in e.obj.discoverable.tools}
        used_knowledge = {k for e in self.environments.values() for k in e.obj.knowledge}
        used_corpora = {it.obj.impl.corpus for it in self.tools.values()
                        if isinstance(it.obj.impl, P.CorpusImpl)}
        used_toolsets = {t for e in self.environments.values()
                         for t in [*e.obj.toolsets, *e.obj.user_toolsets]}
        used_toolsets |= {it.obj.module for k, it in self.toolsets.items()
                          if it.obj.module in used_toolsets}
        for name, it in self.toolsets.items():
            if name not in used_toolsets and it.obj.module not in used_toolsets:
                self.lint("W312", f"toolset `{name}` is defined but never used",
                          (it.src, it.path))
        used_services |= {it.obj.impl.service for it in self.tools.values()  # HTTP tools'
                          if isinstance(it.obj.impl, P.HttpImpl) and it.obj.name in used_tools}
        for table, used, what in (
            (self.personas, used_personas, "persona"), (self.environments, used_envs, "environment"),
            (self.services, used_services, "service"), (self.streams, used_streams, "event stream"),
            (self.tools, used_tools, "tool"), (self.corpora, used_corpora, "corpus"),
            (self.knowledge, used_knowledge, "knowledge base"),
        ):
            for name, it in table.items():
                if name not in used:
                    self.lint("W312", f"{what} `{name}` is defined but never used",
                              (it.src, it.path))

    # ------------------------------------------------------------------ phase 4: graph

    def order(self, drafts: list[SessionDraft]) -> tuple[list[str], list[Any]] | None:
        ids = [d.sid for d in drafts]
        rank = {d.sid: i for i, d in enumerate(drafts)}
        edges = [(p, d.sid) for d in drafts for p in d.deps]
        g = build_dag(ids, edges)
        cycles = find_cycles(g)
        if cycles:
            by_id = {d.sid: d for d in drafts}
            for cyc in cycles:
                first = by_id[cyc[0]]
                names = [by_id[c].model.id for c in cyc]
                text = " → ".join([*names, names[0]])
                dep_index = next((i for i, x in enumerate(first.model.depends_on)
                                  if f"{first.base.rsplit('.', 1)[0]}.{x}" in
                                  {by_id[c].base for c in cyc}), 0)
                self.err("E203", f"dependency cycle: {text}", (first.src, first.path),
                         ("depends_on", dep_index) if first.model.depends_on else (),
                         "a session can only depend on sessions that can run before it")
            return None
        order = stable_order(g, rank)
        episode_of = {d.sid: d.episode for d in drafts}
        per_episode: dict[str, list[str]] = {}
        for n in order:
            per_episode.setdefault(episode_of[n], []).append(n)
        groups = []
        for members in per_episode.values():
            if any(g.in_degree(n) for n in members):
                groups.extend(dependency_groups(g.subgraph(members), members))
        return order, groups


def check_prompts(pack: P.Pack, src: SourceFile, builder: Builder) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in pack.prompts.items():
        loc = (src, ("prompts",))
        if isinstance(value, P.PromptFile):
            text = builder.read_text(value.file, loc, (name, "file"))
            if text is None:
                continue
        else:
            text = value
        problem = check_syntax(text)
        if problem:
            builder.err(problem.code, problem.message, loc, (name,))
            continue
        out[name] = text
    return dict(sorted(out.items()))


def check_origin(pack: P.Pack, src: SourceFile, builder: Builder) -> None:
    """`origin.if_vars` names variables the pack declares (`vars:`); a value no build can
    take is allowed (a difference of a configuration the pack does not offer is harmless)."""
    if pack.origin is None:
        return
    for var in pack.origin.if_vars:
        if var not in pack.vars:
            hint, fix = suggest_fix(var, pack.vars, "rename_key",
                                    taken=pack.origin.if_vars)
            builder.err("E202", f"`origin.if_vars` names the variable `{var}`, which the pack's "
                        "`vars:` does not declare", (src, ("origin", "if_vars")), (var,),
                        hint or "declare it under `vars:` with its default value",
                        at_key=True, fix=fix)
