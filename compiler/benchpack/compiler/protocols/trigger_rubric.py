"""trigger_rubric: the hidden scenario and its anchors, trigger points with their rubrics,
the authored dialogue, and the anchors the opening request discloses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchpack.specs import pack as P

from .base import LintReport, ProtocolCompiler

if TYPE_CHECKING:
    from ..build import Builder
    from ..core import Loc


def scenario(b: Builder, s: P.Session, r: Any) -> tuple[dict[str, Any] | None, dict[str, bool]]:
    if s.scenario is None:
        return None, {}
    sc = s.scenario
    anchors = []
    for i, a in enumerate(sc.anchors):
        anchors.append({"id": a.id, "text": r(a.text, "scenario", "anchors", i, "text"),
                        "primary": a.primary})
    return ({"hidden_goal": r(sc.hidden_goal, "scenario", "hidden_goal"),
             "anchors": anchors,
             "proactive_subtasks": [r(t, "scenario", "proactive_subtasks", i)
                                    for i, t in enumerate(sc.proactive_subtasks)]},
            {a.id: a.primary for a in sc.anchors})


def triggers(b: Builder, s: P.Session, loc: Loc, r: Any, anchors: dict[str, bool]) -> list[dict[str, Any]]:
    out = []
    seen: set[str] = set()
    for i, t in enumerate(s.triggers):
        sub = ("triggers", i)
        tid = t.id or f"t{t.turn}"
        if tid in seen:
            b.err("E201", f"two trigger points share id `{tid}`", loc, (*sub, "turn"),
                  "one trigger per turn, or give explicit ids")
        seen.add(tid)
        for j, a in enumerate(t.anchors):
            b.check_ref(a, anchors, "anchor", loc, (*sub, "anchors", j))
        out.append({"id": tid, "type": t.type, "turn": t.turn, "anchors": list(t.anchors),
                    "rubric": {"pass": r(t.rubric.pass_, *sub, "rubric", "pass"),
                               "partial": r(t.rubric.partial, *sub, "rubric", "partial"),
                               "fail": r(t.rubric.fail, *sub, "rubric", "fail")}})
    return sorted(out, key=lambda t: t["turn"])


def dialogue(b: Builder, s: P.Session, loc: Loc, r: Any, anchors: dict[str, bool]) -> list[dict[str, Any]]:
    out = []
    for i, t in enumerate(s.dialogue):
        sub = ("dialogue", i)
        if t.turn != i + 1:
            b.err("E216", f"dialogue turns must be numbered 1, 2, 3…; found {t.turn} at "
                  f"position {i + 1}", loc, (*sub, "turn"))
        for j, a in enumerate(t.discloses):
            b.check_ref(a, anchors, "anchor", loc, (*sub, "discloses", j))
        out.append({"turn": t.turn, "user": r(t.user, *sub, "user"),
                    "assistant": r(t.assistant, *sub, "assistant"),
                    "discloses": list(t.discloses)})
    if out:
        for i, tp in enumerate(s.triggers):
            if tp.turn > len(out):
                b.err("E216", f"trigger at turn {tp.turn} but the authored dialogue has "
                      f"{len(out)} turns", loc, ("triggers", i, "turn"))
    return out


def material(b: Builder, s: P.Session, loc: Loc, r: Any, tools: list[str],
             env: dict[str, Any]) -> dict[str, Any]:
    scenario_, anchors = scenario(b, s, r)
    triggers_ = triggers(b, s, loc, r, anchors)
    dialogue_ = dialogue(b, s, loc, r, anchors)
    for j, a in enumerate(s.request_discloses if s.protocol == "trigger_rubric" else []):
        b.check_ref(a, anchors, "anchor", loc, ("request_discloses", j))
    if s.request_discloses and s.request is None:
        b.err("E212", "`request_discloses` names anchors of the opening request, but the "
              "session has no `request`", loc, ("request_discloses",),
              "add `request: …` or remove `request_discloses`", at_key=True)
    return {"scenario": scenario_, "triggers": triggers_, "dialogue": dialogue_}


def lint(s: dict[str, Any], report: LintReport) -> None:
    if not s["triggers"] and not (s["scenario"] and s["scenario"]["anchors"]):
        report("W308", "trigger_rubric session has neither trigger points nor scenario anchors",
               (), "add `scenario:` with anchors, or authored `triggers:`")


COMPILER = ProtocolCompiler(
    name="trigger_rubric",
    default_limits={"max_turns": 10, "max_steps_per_turn": 10, "turn_timeout_s": 300.0},
    material=material,
    lint=lint,
)
