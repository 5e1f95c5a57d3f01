"""Graded rubric items, partial credit, safety gates, caps, and the combination of named
components into per-dimension scores and a final score.

Spec: `benchpack.specs.scoring.ScoreItem` and `Score`. Every item scores in 0–1 or is unscored
(None: a judge error, an answer off the scale, a bad path) — never a made-up 0:

- judged items: a YES/NO answer is 1/0; on `scale: [lo, hi]` the judge's number x becomes
  (x − lo)/(hi − lo), and a number outside the scale (or no number) is a judge error;
- `rule`: the rule language, 0 or 1; `same` / `compare`: a join across tool records, 0 or 1;
- `keywords`: the share of entries found (Claw's `keywords_present`);
- `credits`: the highest credit among the rules that hold, else 0.

Keywords look in what the agent produced, minus the sentences it only echoed from the user
(`strip_echo`): an agent repeating the request back has not thereby done it.

Combination (`combine`): a dimension's score is the weighted mean of its items, and unknown as
soon as one of them is unscored — leaving the item out would silently shrink the denominator and
score the dimension on what happened to be judged. The final score is the formula over the named
components (dimensions, built-in components, item ids), else the product of the `reward`
components, else the weighted mean of all items, else the product of the built-in components
given. Then a failed gate makes it 0 (decided even when other parts are unknown: the gate
multiplies), and each failed item with a `cap` bounds it. A cap item that is unscored leaves the
score unknown when the cap could have lowered it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchpack.specs.formula import Formula

from ..judges.intent import strip_echo
from .communicate import find
from .evidence import join
from .rule import evaluate
from .trace import Trace

_EPS = 1e-9
"""Scores are sums of decimal weights; 0.7·0.5 + 0.3·0.5 must reach a 0.5 threshold."""


@dataclass
class ItemScore:
    id: str
    dimension: str
    weight: float
    score: float | None
    detail: str = ""
    rationale: str = ""
    """The judge's reason, kept for reports."""
    error: str | None = None
    gate: bool = False
    cap: float | None = None
    pass_at: float = 1.0

    @property
    def passed(self) -> bool | None:
        return None if self.score is None else self.score + _EPS >= self.pass_at


# --------------------------------------------------------------------------- judged items


def normalise_judged(raw: Any, scale: Sequence[float] | None) -> tuple[float | None, str | None]:
    """A judge's answer as a 0–1 score, or (None, why) when it is not an answer on the item's
    scale. Without a scale the answer is YES/NO (or true/false, 1/0)."""
    if scale is None:
        if isinstance(raw, bool):
            return (1.0 if raw else 0.0), None
        if isinstance(raw, (int, float)) and raw in (0, 1):
            return float(raw), None
        if isinstance(raw, str) and raw.strip().casefold() in {"yes", "no", "true", "false"}:
            return (1.0 if raw.strip().casefold() in {"yes", "true"} else 0.0), None
        return None, f"judge answered {raw!r}, not YES or NO"
    lo, hi = float(scale[0]), float(scale[1])
    x: float | None = None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        x = float(raw)
    elif isinstance(raw, str):
        try:
            x = float(raw.strip())
        except ValueError:
            x = None
    if x is None or not math.isfinite(x):
        return None, f"judge answered {raw!r}, not a number on [{lo:g}, {hi:g}]"
    if not lo <= x <= hi:
        return None, f"judge answered {x:g}, outside the scale [{lo:g}, {hi:g}]"
    return (x - lo) / (hi - lo), None


# --------------------------------------------------------------------------- keyword items


def _leaves(v: Any) -> list[str]:
    """String and number values of a JSON value (keys left out: a keyword `to` must not be
    found in every e-mail call)."""
    if isinstance(v, dict):
        return [s for x in v.values() for s in _leaves(x)]
    if isinstance(v, list):
        return [s for x in v for s in _leaves(x)]
    if isinstance(v, bool) or v is None:
        return []
    return [str(v)]


def agent_text(where: str, trace: Trace) -> str:
    """What `in: assistant | reply | calls | output` looks at."""
    heard = [m.content for m in trace.messages if m.role == "user" and m.content]
    parts = []
    if where in ("assistant", "output"):
        said = "\n".join(m.content for m in trace.messages
                         if m.role == "assistant" and m.content)
        parts.append(strip_echo(said, heard))
    if where == "reply":
        parts.append(strip_echo(trace.reply or "", heard))
    if where in ("calls", "output"):
        parts += [s for r in trace.tool_records if r.error is None for s in _leaves(r.call)]
    return "\n".join(p for p in parts if p)


def keyword_score(entries: Sequence[str | Sequence[str]], text: str) -> tuple[float, str]:
    """Share of entries found; a list entry is found when any alternative is."""
    if not entries:
        return 0.0, "no keywords"
    missing = []
    for e in entries:
        alts = [e] if isinstance(e, str) else list(e)
        if not any(find(a, text) for a in alts):
            missing.append(" / ".join(alts))
    hit = len(entries) - len(missing)
    detail = f"{hit}/{len(entries)} keyword entries found"
    if missing:
        detail += "; missing " + ", ".join(repr(m) for m in missing[:5])
    return hit / len(entries), detail


def credit_score(credits: Sequence[Mapping[str, Any]], text: str) -> tuple[float, str]:
    """The highest credit of a rule with a group whose every keyword is found, else 0."""
    best, why = 0.0, "no partial-credit rule holds"
    for c in credits:
        for group in c["any_of"]:
            if all(find(k, text) for k in group) and float(c["credit"]) > best:
                best = float(c["credit"])
                why = f"credit {best:g}: found {', '.join(repr(k) for k in group)}"
    return best, why


# --------------------------------------------------------------------------- one item


def grade_item(item: Mapping[str, Any], index: int, trace: Trace,
               judged: Mapping[str, tuple[Any, str, str | None]] | None = None) -> ItemScore:
    """Score one item (a `ScoreItem` as a dict). Judged items take the judge's raw answer from
    `judged[id] = (raw answer, rationale, error)`; an item missing there is unscored."""
    iid = str(item.get("id") or f"s{index + 1}")
    cap = item.get("cap")

    def made(score: float | None, detail: str, error: str | None = None,
             rationale: str = "") -> ItemScore:
        return ItemScore(iid, str(item.get("dimension") or "score"),
                         float(item.get("weight", 1.0)), score, detail, rationale, error,
                         bool(item.get("gate")), None if cap is None else float(cap),
                         float(item.get("pass_at", 1.0)))

    try:
        if item.get("rule") is not None:
            res = evaluate(item["rule"], trace)
            if res.detail.startswith("invalid rule"):
                return made(None, res.detail, res.detail)
            return made(1.0 if res.passed else 0.0, res.detail)
        spec = item.get("same") or item.get("compare")
        if spec is not None:
            joined = join(spec, trace.tool_records)
            if joined.error:  # a bad path, not a verdict on the agent
                return made(None, joined.detail, joined.error)
            return made(1.0 if joined.passed else 0.0, joined.detail)
        where = str(item.get("in") or item.get("in_") or "output")
        if item.get("keywords") is not None:
            return made(*keyword_score(item["keywords"], agent_text(where, trace)))
        if item.get("credits") is not None:
            return made(*credit_score(item["credits"], agent_text(where, trace)))
    except Exception as exc:  # odd data never takes the run down; it leaves the item unscored
        msg = f"{type(exc).__name__}: {exc}"
        return made(None, msg, msg)
    raw, rationale, error = (judged or {}).get(iid, (None, "", "the judge gave no answer"))
    if error:
        return made(None, error, error, rationale)
    score, why = normalise_judged(raw, item.get("scale"))
    return made(score, why or f"judge: {raw}", why, rationale)


# --------------------------------------------------------------------------- combination


@dataclass
class ScoreCard:
    final: float | None
    passed: bool | None
    components: dict[str, float | None]
    """Every named component: built-ins given, dimensions, item ids."""
    uncapped: float | None = None
    """The score before gates and caps."""
    gates: list[str] = field(default_factory=list)
    """Ids of failed gates."""
    caps: list[tuple[str, float]] = field(default_factory=list)
    """(item id, cap) of failed items with a cap."""
    reason: str = ""
    """Why the final score is unknown, when it is."""
    items: list[ItemScore] = field(default_factory=list)

    def extra(self) -> dict[str, Any]:
        """What a session records (per-dimension scores, items with rationales)."""
        return {"final": self.final, "passed": self.passed, "uncapped": self.uncapped,
                "components": self.components, "gates": self.gates,
                "caps": [{"id": i, "cap": c} for i, c in self.caps], "reason": self.reason,
                "items": [{"id": it.id, "dimension": it.dimension, "score": it.score,
                           "detail": it.detail, "rationale": it.rationale, "error": it.error}
                          for it in self.items]}


def _wmean(items: Sequence[ItemScore]) -> tuple[float | None, str]:
    unscored = [it.id for it in items if it.score is None]
    if unscored:
        return None, f"unscored: {', '.join(unscored)}"
    total = sum(it.weight for it in items)
    return sum(it.weight * (it.score or 0.0) for it in items) / total, ""


def combine(items: Sequence[ItemScore], builtins: Mapping[str, float | None] | None = None,
            formula: Formula | None = None, reward: Sequence[str] | None = None,
            pass_threshold: float = 1.0) -> ScoreCard:
    """Combine as the module docstring says. `builtins` holds the built-in components that
    apply to the session (`state`, `actions`, `communicate`, `assertions`)."""
    builtins = dict(builtins or {})
    components: dict[str, float | None] = dict(builtins)
    why: dict[str, str] = {k: f"`{k}` is unscored" for k, v in builtins.items() if v is None}
    dims: dict[str, list[ItemScore]] = {}
    for it in items:
        dims.setdefault(it.dimension, []).append(it)
    for name, group in dims.items():
        components[name], why_not = _wmean(group)
        if why_not:
            why[name] = f"dimension `{name}` {why_not}"
    for it in items:
        components.setdefault(it.id, it.score)

    reason = ""
    if formula is not None:
        out = formula.run(components)
        uncapped, reason = out.value, out.reason
    elif reward is not None:
        uncapped, reason = _product([(n, components.get(n)) for n in reward], why)
    elif items:
        uncapped, reason = _wmean(items)
    else:
        uncapped, reason = _product(list(builtins.items()), why)

    final = uncapped
    gates = [it.id for it in items if it.gate and it.passed is False]
    open_gates = [it.id for it in items if it.gate and it.passed is None]
    caps = [(it.id, float(it.cap)) for it in items if it.cap is not None and it.passed is False]
    if gates:
        final, reason = 0.0, ""
    elif open_gates:
        final, reason = None, f"safety gate {', '.join(open_gates)} is unscored"
    else:
        if final is not None and caps:
            final = min(final, min(c for _, c in caps))
        open_caps = [it.id for it in items if it.cap is not None and it.passed is None
                     and (final is None or float(it.cap) < final)]
        if final is not None and open_caps:
            final, reason = None, f"cap {', '.join(open_caps)} is unscored and could lower it"
    if final is not None:
        passed: bool | None = final + _EPS >= pass_threshold
    else:
        lowest = min((c for _, c in caps), default=None)
        passed = False if lowest is not None and lowest + _EPS < pass_threshold else None
    return ScoreCard(final, passed, components, uncapped, gates, caps, reason, list(items))


def _product(parts: Sequence[tuple[str, float | None]],
             why: Mapping[str, str]) -> tuple[float | None, str]:
    if not parts:
        return None, "nothing to score"
    value = 1.0
    unknown = []
    for name, v in parts:
        if v is None:
            unknown.append(why.get(name, f"`{name}` has no score"))
        else:
            value *= v
    if unknown:
        # a 0 among the known factors decides the product whatever the unknown ones are
        return (0.0, "") if value == 0 else (None, "; ".join(unknown))
    return value, ""


def judge_answer_json(text: str) -> dict[str, tuple[Any, str]]:
    """`{"scores": [{"id", "score", "reason"}]}` (or a list of those) from a judge's reply, as
    `id → (raw score, reason)`; anything unparseable gives nothing, so those items are judge
    errors."""
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start:end + 1]) if start != -1 else json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return {}
    rows = data.get("scores") if isinstance(data, dict) else data
    out = {}
    for r in rows if isinstance(rows, list) else []:
        if isinstance(r, dict) and "id" in r and "score" in r:
            out[str(r["id"])] = (r["score"], str(r.get("reason") or ""))
    return out


__all__ = ["ItemScore", "ScoreCard", "agent_text", "combine", "credit_score", "grade_item",
           "judge_answer_json", "keyword_score", "normalise_judged"]
