"""Verified-outcome scoring: soft score, safety caps, pass threshold.

The soft score of a session is the weighted mean of its `outcome` checklist items times
`outcome_weight` plus the weighted mean of its `process` items times the rest; the lowest cap
whose condition holds bounds it; the session passes when the (capped) score reaches
`pass_threshold`. Items without a score (a judge or grader error) are left out of their group's
mean, never counted as 0; a group whose every item is unscored makes the whole score unknown
(NULL), because re-weighting the other group would let a session pass on process alone.

pass@k and pass^k over repeats are computed from the stored `passed` column by
`benchpack.reports.stats` (the `pass-k` report and the `bench run` summary).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .rule import evaluate
from .trace import Trace


@dataclass
class CapHit:
    """A safety cap whose condition held: which, how low, why, and what the rule saw."""

    id: str
    cap: float
    reason: str
    detail: str


@dataclass
class Verdict:
    score: float | None
    passed: bool | None
    outcome: float | None = None
    """Weighted mean of the scored outcome items (None: no outcome item was scored)."""
    process: float | None = None
    uncapped: float | None = None
    caps: list[CapHit] = field(default_factory=list)
    unscored: int = 0
    """Items left out because a judge or grader gave no score."""
    outcome_weight: float | None = None
    pass_threshold: float | None = None
    """The weighting and threshold used, so a report can show the arithmetic (issue 29)."""

    def extra(self) -> dict[str, Any]:
        """What `sessions.extra.verify` records (reports read the fired caps from here)."""
        return {"outcome": self.outcome, "process": self.process, "uncapped": self.uncapped,
                "unscored": self.unscored, "outcome_weight": self.outcome_weight,
                "pass_threshold": self.pass_threshold,
                "caps": [{"id": c.id, "cap": c.cap, "reason": c.reason, "detail": c.detail}
                         for c in self.caps]}


def fired_caps(caps: Sequence[dict[str, Any]], trace: Trace) -> list[CapHit]:
    """The caps (plan `verify.caps` entries) whose `when` rule holds on the finished session.
    An attempted call of a forbidden tool counts, even when the call itself failed."""
    out = []
    for cap in caps:
        res = evaluate(_attempts(cap["when"]), trace)
        if res.passed:
            out.append(CapHit(str(cap.get("id") or ""), float(cap["cap"]),
                              str(cap.get("reason") or ""), res.detail))
    return out


def _attempts(rule: Any) -> Any:
    """`rule` with `successful: any` wherever a tool or sequence check does not say: checklist
    rules count only calls that succeeded, but a cap is about what the agent tried."""
    if not isinstance(rule, dict):
        return rule
    out = {k: ([_attempts(r) for r in v] if k in ("all", "any") and isinstance(v, list)
               else _attempts(v) if k == "not" else v) for k, v in rule.items()}
    if "tool" in out or "sequence" in out:
        out.setdefault("successful", "any")
    return out


def soft_score(items: Sequence[tuple[float, str, float | None]], verify: dict[str, Any],
               cap_hits: Sequence[CapHit] = ()) -> Verdict:
    """Score `(weight, aspect, score)` items as the module docstring says. An aspect with no
    items at all gives its weight to the other."""
    threshold = float(verify.get("pass_threshold", 0.75))
    unscored = sum(1 for _, _, s in items if s is None)

    def mean(aspect: str) -> tuple[float | None, bool]:
        mine = [(w, s) for w, a, s in items if a == aspect]
        pairs = [(w, s) for w, s in mine if s is not None]
        total = sum(w for w, _ in pairs)
        value = sum(w * s for w, s in pairs) / total if total else None
        return value, bool(mine) and value is None

    (outcome, o_unknown), (process, p_unknown) = mean("outcome"), mean("process")
    cap = min((c.cap for c in cap_hits), default=None)
    if o_unknown or p_unknown or (outcome is None and process is None):
        # the score is unknown; a cap below the threshold still decides the verdict
        passed = False if cap is not None and cap < threshold else None
        return Verdict(None, passed, outcome, process, None, list(cap_hits), unscored,
                       float(verify.get("outcome_weight", 0.7)), threshold)
    ow = float(verify.get("outcome_weight", 0.7))
    if outcome is None:
        uncapped = process or 0.0
    elif process is None:
        uncapped = outcome
    else:
        uncapped = ow * outcome + (1 - ow) * process
    score = uncapped if cap is None else min(uncapped, cap)
    return Verdict(score, score >= threshold, outcome, process, uncapped, list(cap_hits),
                   unscored, ow, threshold)


# --------------------------------------------------------------------------- score: blocks


ASSERTION_PREFIX = "assertion"
"""Judge ids of `score.assertions` entries: `assertion1`, `assertion2`…"""


def score_questions(score: dict[str, Any]) -> list[tuple[str, str, tuple[float, float] | None,
                                                        list[dict[str, Any]] | None]]:
    """What a judge must answer for a plan `score` block: (id, text, scale, evidence
    selectors) of every judged item and every NL assertion."""
    out: list[tuple[str, str, tuple[float, float] | None, list[dict[str, Any]] | None]] = []
    for i, a in enumerate(score.get("assertions") or [], start=1):
        out.append((f"{ASSERTION_PREFIX}{i}", a, None, None))
    for it in score.get("items") or []:
        if not any(it.get(k) is not None for k in ("rule", "keywords", "credits", "same",
                                                   "compare")):
            scale = it.get("scale")
            out.append((str(it["id"]), str(it.get("text") or ""),
                        (float(scale[0]), float(scale[1])) if scale else None,
                        it.get("evidence")))
    return out


def score_card(score: dict[str, Any], trace: Trace,
               judged: dict[str, tuple[Any, str, str | None]], guards: Sequence[str] = ()
               ) -> tuple[Any, dict[str, Any]]:
    """The `ScoreCard` of a plan `score` block and the detail of each built-in component.
    `judged[id] = (raw answer, rationale, error)` for the ids of `score_questions`. Without
    an achieved outcome (`guards`: the items that held before the agent acted) every item but
    the gates counts 0 and the final score is 0 (`graders.guards.gate_items`)."""
    from benchpack.specs.formula import Formula, parse
    from benchpack.specs.guards import NO_CREDIT

    from .communicate import check
    from .graded import combine, grade_item, normalise_judged
    from .guards import gate_items

    builtins: dict[str, float | None] = {}
    detail: dict[str, Any] = {}
    if score.get("communicate"):
        res = check(score["communicate"], trace.messages)
        builtins["communicate"] = 1.0 if all(r.passed for r in res) else 0.0
        detail["communicate"] = [{"text": r.text, "passed": r.passed, "message": r.message}
                                 for r in res]
    if score.get("assertions"):
        rows = []
        for i, text in enumerate(score["assertions"], start=1):
            raw, why, err = judged.get(f"{ASSERTION_PREFIX}{i}",
                                       (None, "", "the judge gave no answer"))
            value, problem = (None, err) if err else normalise_judged(raw, None)
            rows.append({"id": f"{ASSERTION_PREFIX}{i}", "text": text, "score": value,
                         "rationale": why, "error": problem})
        values = [r["score"] for r in rows]
        # all must hold: a NO decides it, an unjudged one leaves it unknown (never a NO)
        builtins["assertions"] = 0.0 if 0.0 in values else None if None in values else 1.0
        detail["assertions"] = rows
    items = [grade_item(it, i, trace, judged) for i, it in enumerate(score.get("items") or [])]
    nothing = gate_items(items, guards) if items else False
    formula = parse(score["formula"]) if score.get("formula") else None
    card = combine(items, builtins, formula if isinstance(formula, Formula) else None,
                   score.get("reward"), float(score.get("pass_threshold", 1.0)))
    if nothing and card.final:  # a built-in component (`communicate`) is no outcome either
        card.final, card.passed, card.reason = 0.0, False, NO_CREDIT
    if score.get("formula") and not isinstance(formula, Formula):  # the compiler refuses it
        card.final, card.passed, card.reason = None, None, f"formula: {formula}"
    return card, detail


def score_rows(card: Any, detail: dict[str, Any], score: dict[str, Any]) -> list[tuple[Any, ...]]:
    """`score_components` rows (name, kind, value, detail JSON) without the (run_id,
    session_id, repeat) prefix: built-ins, dimensions, items, and `final`."""
    import json

    def js(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False, default=str, sort_keys=True)

    from benchpack.specs.storeformat import row_type

    row = row_type("score_components")
    rows: list[tuple[Any, ...]] = []
    for name in ("communicate", "assertions"):
        if name in card.components:
            rows.append(row(name, "builtin", card.components[name],
                            js({"checks": detail[name]})))
    dims: dict[str, list[Any]] = {}
    for it in card.items:
        dims.setdefault(it.dimension, []).append(it)
    for name, group in dims.items():
        rows.append(row(name, "dimension", card.components.get(name),
                     js({"items": [it.id for it in group],
                         "weights": [it.weight for it in group],
                         "unscored": [it.id for it in group if it.score is None]})))
    texts = {str(it.get("id")): it.get("text") for it in score.get("items") or []}
    for it in card.items:
        rows.append(row(it.id, "item", it.score,
                     js({"text": texts.get(it.id), "dimension": it.dimension, "weight": it.weight, "detail": it.detail,
                         "rationale": it.rationale, "error": it.error, "gate": it.gate,
                         "cap": it.cap, "passed": it.passed})))
    rows.append(row("final", "final", card.final,
                 js({"uncapped": card.uncapped, "passed": card.passed, "gates": card.gates,
                     "caps": [{"id": i, "cap": c} for i, c in card.caps],
                     "reason": card.reason, "formula": score.get("formula"),
                     "reward": score.get("reward"),
                     "pass_threshold": score.get("pass_threshold", 1.0)})))
    return rows
