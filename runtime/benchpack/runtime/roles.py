"""Who plays the non-agent roles of a run: the user simulator, the planner and the judges.

Each role is chosen by a URI, from the `bench run` flag, else the pack's `defaults.models`, else
`rules`:

- `rules` — deterministic heuristics (tests, CI, demos; no API keys);
- `scripted:<file>` — decisions read from a YAML/JSON file, per session (reproduces published
  trajectories exactly);
- `litellm:<model>` (or a bare litellm model name) — an LLM with our prompt templates.

`Roles` only resolves the choice and hands out what a mode needs (a `JudgeCall` for LLM modes,
the session's part of a script for scripted modes). Each protocol builds its own simulator and
judges from that, in its own module, so adding a protocol never touches this file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from benchpack.specs.plan import PlanSession

from .agents.scripted import load_script
from .errors import UsageError
from .judges.base import JudgeCall, Templates
from .types import LLMCallRecord

T = TypeVar("T")
Role = Literal["simulator", "planner", "judge"]
Mode = Literal["rules", "scripted", "llm"]


class JudgeSite(Protocol):
    """What a role factory needs from the session it works for: the run's roles, the plan
    session, the repeat and where LLM calls are recorded. A `SessionContext` is one; `bench
    rejudge` builds lighter ones for finished sessions."""

    @property
    def roles(self) -> Roles: ...

    @property
    def session(self) -> PlanSession: ...

    @property
    def repeat(self) -> int: ...

    @property
    def recorder(self) -> Callable[[LLMCallRecord], None]: ...


class Script:
    """A scripted-decisions file: `sessions: {<session name or plan id>: {...}}`.

    What goes under a session is each protocol's business (documented with its judges)."""

    def __init__(self, path: Path) -> None:
        data = load_script(path)
        if not isinstance(data, dict) or not isinstance(data.get("sessions"), dict):
            raise UsageError(f"{path}: expected a mapping with `sessions:`")
        self.path = path
        self.sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
        """Of the file's bytes: what `bench compare` compares (a relative and an absolute path
        to one file are one simulator)."""
        self.sessions: dict[str, Any] = data["sessions"]

    def for_session(self, session_id: str, name: str) -> dict[str, Any]:
        """The entry for a plan id, else for the session's pack name, else for its base session
        (a style or ablation variant shares its base's script)."""
        base = session_id.split("@")[0].split("~")[0]
        for key in (session_id, name, base):
            entry = self.sessions.get(key)
            if entry is not None:
                return dict(entry)
        return {}


class Roles:
    """Resolves role URIs for one run; see the module docstring."""

    def __init__(self, choices: dict[Role, str], templates: Templates, llm: Any, seed: int
                 ) -> None:
        self.choices = choices
        self.templates = templates
        self._llm = llm
        self.seed = seed
        self.seeds: list[int] = []
        """Per-repeat seeds (the plan's `defaults.repeat_seeds`), set by the run."""
        self._scripts: dict[str, Script] = {}

    @classmethod
    def resolve(cls, flags: dict[Role, str | None], defaults: dict[Role, str | None],
                templates: Templates, llm: Any, seed: int) -> Roles:
        """Flag, else pack default, else `rules`. The planner follows the simulator unless
        chosen explicitly (it is the same kind of model work)."""
        sim = flags.get("simulator") or defaults.get("simulator") or "rules"
        choices: dict[Role, str] = {
            "simulator": sim,
            "judge": flags.get("judge") or defaults.get("judge") or "rules",
            "planner": flags.get("planner") or defaults.get("planner") or sim,
        }
        roles = cls(choices, templates, llm, seed)
        for role, uri in choices.items():
            mode, _, argument = uri.partition(":")
            if argument and mode not in ("scripted", "litellm") and "/" not in mode:
                raise UsageError(f"--{role} {uri}: unknown kind `{mode}:` (use rules, "
                                 "scripted:<file> or litellm:<model>)")
            if mode in ("scripted", "litellm") and not argument:
                thing = "file" if mode == "scripted" else "model"
                raise UsageError(f"--{role} {uri}: name the {thing} after `{mode}:`")
            if mode == "scripted":  # read now: a broken file stops the run before it starts
                try:
                    roles._scripts[argument] = Script(Path(argument))
                except ValueError as exc:
                    raise UsageError(f"--{role} {uri}: {exc}") from None
        return roles

    def uri(self, role: Role) -> str:
        return self.choices[role]

    def file_digests(self) -> dict[str, str]:
        """Role → sha256 of its scripted file, for the roles that are scripted (recorded in the
        run's config as `role_files`)."""
        out: dict[str, str] = {}
        for role, uri in self.choices.items():
            if uri.startswith("scripted:"):
                script = self._scripts.get(uri.split(":", 1)[1])
                if script is not None:
                    out[role] = script.sha256
        return out

    def mode(self, role: Role) -> Mode:
        uri = self.choices[role]
        if uri == "rules":
            return "rules"
        if uri.startswith("scripted:"):
            return "scripted"
        return "llm"

    def call(self, ctx: JudgeSite, role: Role) -> JudgeCall:
        """Where an LLM-mode role sends its calls; they are recorded with the session."""
        seed = self.seeds[ctx.repeat] if 0 <= ctx.repeat < len(self.seeds) else self.seed
        return JudgeCall(client=self._llm(), model=self.choices[role], recorder=ctx.recorder,
                         seed=seed, repeat=ctx.repeat, role=role)

    def build(self, ctx: JudgeSite, role: Role, *, rules: Callable[[], T],
              scripted: Callable[[dict[str, Any]], T], llm: Callable[[JudgeCall], T]) -> T:
        """The implementation of `role` in its chosen mode: `rules()`, `scripted(the session's
        script entry)` or `llm(where its calls go)`."""
        mode = self.mode(role)
        if mode == "rules":
            return rules()
        if mode == "scripted":
            return scripted(self.script(ctx, role))
        return llm(self.call(ctx, role))

    def script(self, ctx: JudgeSite, role: Role) -> dict[str, Any]:
        """The session's entry in a scripted role's file (empty when it has none)."""
        path = self.choices[role].split(":", 1)[1]
        script = self._scripts.get(path)
        if script is None:
            script = self._scripts[path] = Script(Path(path))
        return script.for_session(ctx.session.id, ctx.session.name)


__all__ = ["JudgeSite", "Mode", "Role", "Roles", "Script"]
