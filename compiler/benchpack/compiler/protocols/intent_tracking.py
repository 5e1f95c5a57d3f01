"""intent_tracking: hidden intents (ids, rendering) and, once the order is known, the
evidence of persistent intents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchpack.specs import pack as P

from .base import LintReport, ProtocolCompiler, lacks

if TYPE_CHECKING:
    from ..build import Builder
    from ..core import Loc, SessionDraft


def hidden_intents(b: Builder, s: P.Session, loc: Loc, r: Any) -> list[dict[str, Any]]:
    out = []
    seen: set[str] = set()
    for i, x in enumerate(s.hidden_intents):
        iid = x.id or f"i{i + 1}"
        if iid in seen:
            b.err("E201", f"intent id `{iid}` is used twice", loc, ("hidden_intents", i, "id"))
        seen.add(iid)
        out.append({"id": iid, "text": r(x.text, "hidden_intents", i, "text"),
                    "scope": x.scope, "reveal": r(x.reveal, "hidden_intents", i, "reveal"),
                    "evidence": list(x.evidence)})
    return out


def check_evidence(b: Builder, d: SessionDraft, s: dict[str, Any],
                   sessions: dict[str, dict[str, Any]], by_id: dict[str, SessionDraft],
                   episode_order: list[str], position: dict[str, int]) -> None:
    if not any(it["evidence"] for it in s["hidden_intents"]):
        return
    earlier_names = {by_id[o].model.id for o in episode_order[: position[d.sid]]}
    files = {f["path"] for f in b.plan_envs[s["environment"]]["files"]} | {
        f["path"] for o in episode_order[: position[d.sid] + 1] for f in sessions[o]["files"]}
    for i, it in enumerate(s["hidden_intents"]):
        for j, ev in enumerate(it["evidence"]):
            if ev in earlier_names or ev in files:
                continue
            later = {by_id[o].model.id for o in episode_order}
            hint = ("evidence must come from a session that runs earlier" if ev in later
                    else "name an earlier session id or a workspace file path")
            b.err("E202", f"evidence `{ev}` is neither an earlier session nor a workspace file",
                  (d.src, d.path), ("hidden_intents", i, "evidence", j), hint)


def material(b: Builder, s: P.Session, loc: Loc, r: Any, tools: list[str],
             env: dict[str, Any]) -> dict[str, Any]:
    return {"hidden_intents": hidden_intents(b, s, loc, r)}


def lint(s: dict[str, Any], report: LintReport) -> None:
    for key, what in (("hidden_intents", "hidden intents"), ("checklist", "a checklist")):
        if not s.get(key):
            lacks(s, report, key, what)


COMPILER = ProtocolCompiler(
    name="intent_tracking",
    default_limits={"max_turns": 12, "max_steps_per_turn": 30, "turn_timeout_s": 600.0},
    material=material,
    plan_check=check_evidence,
    lint=lint,
)
