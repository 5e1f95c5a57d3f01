"""Why a session scored what it did (issue 29): every part of its score read back from the
store, with the arithmetic spelled out — the figure the store holds next to the values it was
made from, so a reader checks it without SQL.

One function (`explain`) over one session attempt's rows, shared by `bench view`'s session page,
the HTML report's drill-down (both through `html_explain.panel_html`) and `bench report explain`
(JSON: `explanations`). It reads what the runtime stored and recomputes nothing that decides a
score: where it shows a formula, the result is the stored figure, so a wrong explanation can
never hide a wrong number (tests compare both).

Parts, each `{"kind", "title", "value", "formula", …}`:

- `reward` (instructed users, `sessions.extra.reward`): the τ² components, their product, the
  state diff (expected vs got, per field) and the gold actions matched or not.
- `score` (`score:` blocks, `score_components`): items with rationale, dimension, weight, gate,
  cap; dimensions; built-ins; the formula with its values substituted, gates fired, caps.
- `verify` (the checklist's soft score, `sessions.extra.verify`): outcome and process means,
  their weighting, the caps that fired, the pass threshold.
- `checklist` (COMP): each item with its grader, rule detail or rationale.
- `intents` (PROC), `graph` (P/R/F1: ground-truth triples matched or missed, with the predicted
  triples that support them), `triggers` (trigger score and pass rate).
"""

from __future__ import annotations

import json
import re
from typing import Any

from .sqltext import literal

NO_CREDIT_MARK = "— counted 0, no credit"
"""What `runtime.session.checklist_outcome` appends to an item's detail when the guard gate took
its credit (the stored score is the grader's; COMP and the soft score counted 0)."""

_NAME = re.compile(r"[^\W\d]\w*")


def _js(raw: Any) -> Any:
    if raw is None or not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return None


def fmt(v: Any) -> str:
    """A figure as the formulas show it: up to four decimals, no trailing zeros."""
    if v is None:
        return "unknown"
    if isinstance(v, bool):
        return "1" if v else "0"
    return f"{round(float(v), 4):g}"


def substitute(formula: str, values: dict[str, Any]) -> str:
    """`formula` with each component name replaced by its value (names of functions and
    names without a value stay)."""
    def one(m: re.Match[str]) -> str:
        name = m.group(0)
        return fmt(values[name]) if name in values else name
    return _NAME.sub(one, formula)


def _dicts(cur: Any) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _tables(con: Any) -> set[str]:
    return {str(r[0]) for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE NOT internal").fetchall()}


def load(con: Any, run_id: str, session_id: str, repeat: int, *,
         session: dict[str, Any] | None = None,
         known: dict[str, list[dict[str, Any]]] | None = None,
         tables: set[str] | None = None) -> dict[str, Any] | None:
    """One session attempt's explanation from an open store (None: no such attempt).
    `session`, `known` (table → all of the session's rows in it) and `tables` (the store's
    tables): what the caller has read already (`bench view`'s session page, `load_many`),
    not read again."""
    key = [run_id, session_id, repeat]
    found = [session] if session is not None else _dicts(con.execute(
        "SELECT * FROM sessions WHERE run_id = ? AND session_id = ? AND repeat = ?", key))
    if not found:
        return None
    have = _tables(con) if tables is None else tables
    known = known or {}

    def rows(table: str, order: str) -> list[dict[str, Any]]:
        if table in known:
            return known[table]
        if table not in have:  # an older store (score_components: schema 4)
            return []
        return _dicts(con.execute(f"SELECT * FROM {table} WHERE run_id = ? AND session_id = ? "
                                  f"AND repeat = ? ORDER BY {order}", key))

    return explain(found[0], checklist=rows("checklist_results", "item_id"),
                   components=rows("score_components", "rowid"),
                   intents=rows("intent_status", "turn NULLS LAST, intent_id"),
                   triples=rows("triples", "side, idx"),
                   support=rows("triple_support", "gt_idx, pred_idx"),
                   triggers=rows("triggers", "turn, trigger_id"))


_CHILDREN = (("checklist_results", "item_id"), ("score_components", "t.rowid"),
             ("intent_status", "turn NULLS LAST, intent_id"), ("triples", "side, idx"),
             ("triple_support", "gt_idx, pred_idx"), ("triggers", "turn, trigger_id"))
"""The tables `load` reads a session's rows from, each in its order."""


def load_many(con: Any, keys: list[tuple[str, str, int]]) -> list[dict[str, Any] | None]:
    """`load` of every (run, session, repeat) of `keys`, each table read once for all of
    them (one query a table and session took 52 s for the report's 1,000 sessions on 1 M
    turns): the same rows in the same order for each session."""
    if not keys:
        return []
    # the keys as SQL literals: DuckDB binds a Python list parameter at ~0.2 ms an element
    # (0.5 s of CPU for 1,000 keys), a VALUES list of 1,000 rows parses in ~15 ms
    values = ", ".join(f"({literal(r)}, {literal(s)}, {int(k)})" for r, s, k in keys)
    con.execute("CREATE OR REPLACE TEMP TABLE bp_explain_keys AS SELECT * FROM "
                f"(VALUES {values}) v(run_id, session_id, repeat)")
    try:
        have = _tables(con)
        sessions = {(r["run_id"], r["session_id"], r["repeat"]): r for r in _dicts(con.execute(
            "SELECT t.* FROM sessions t JOIN bp_explain_keys USING (run_id, session_id, "
            "repeat)"))}
        known: dict[tuple[str, str, int], dict[str, list[dict[str, Any]]]] = {
            k: {table: [] for table, _ in _CHILDREN} for k in sessions}
        for table, order in _CHILDREN:
            if table not in have:  # an older store (score_components: schema 4)
                continue
            for r in _dicts(con.execute(
                    f"SELECT t.* FROM {table} t JOIN bp_explain_keys USING (run_id, "
                    f"session_id, repeat) ORDER BY run_id, session_id, repeat, {order}")):
                known[(r["run_id"], r["session_id"], r["repeat"])][table].append(r)
    finally:
        con.execute("DROP TABLE IF EXISTS temp.bp_explain_keys")
    return [load(con, *k, session=sessions[k], known=known[k], tables=have)
            if k in sessions else None for k in keys]


def explain(s: dict[str, Any], *, checklist: list[dict[str, Any]] = (),  # type: ignore[assignment]
            components: list[dict[str, Any]] = (),  # type: ignore[assignment]
            intents: list[dict[str, Any]] = (),  # type: ignore[assignment]
            triples: list[dict[str, Any]] = (),  # type: ignore[assignment]
            support: list[dict[str, Any]] = (),  # type: ignore[assignment]
            triggers: list[dict[str, Any]] = ()  # type: ignore[assignment]
            ) -> dict[str, Any]:
    """The explanation of session row `s` from its child rows (store dicts)."""
    extra = _js(s.get("extra")) or {}
    parts: list[dict[str, Any]] = []
    if isinstance(extra.get("reward"), dict):
        part = _reward(extra["reward"], s)
        tau2: dict[str, Any] = extra["tau2"] if isinstance(extra.get("tau2"), dict) else {}
        if isinstance(tau2.get("reward_info"), dict):
            _imported_checks(part, tau2["reward_info"])
        parts.append(part)
    if components:
        parts.append(_score_block(components, s, extra.get("score") or {}))
    if isinstance(extra.get("verify"), dict):
        parts.append(_verify(extra["verify"], checklist, s))
    if checklist:
        parts.append(_checklist(checklist, s))
    if intents:
        parts.append(_intents(intents, s))
    if triples:
        parts.append(_graph(triples, support, s))
    if triggers:
        parts.append(_triggers(triggers, s))
    out = {"run_id": s.get("run_id"), "session_id": s.get("session_id"),
           "repeat": s.get("repeat"), "name": s.get("name"), "protocol": s.get("protocol"),
           "status": s.get("status"), "termination": s.get("termination"),
           "error_kind": s.get("error_kind"), "error": s.get("error"),
           "score": s.get("score"), "passed": s.get("passed"), "parts": parts}
    if s.get("status") == "error":
        out["note"] = ("the session ended in an error" + (f" ({s['error_kind']})"
                                                           if s.get("error_kind") else "")
                       + ": its figures are the protocol's worst where the agent failed, "
                       "unknown otherwise")
    elif not parts:
        figures = [f"{k} {fmt(s[k])}" for k in ("score", "proc", "comp", "f1", "trigger_score")
                   if s.get(k) is not None]
        out["note"] = (("stored: " + ", ".join(figures)
                        + ("" if s.get("passed") is None else
                           " (passed)" if s["passed"] else " (failed)")
                        + "; the store holds none of the parts they were made of (an imported "
                        "run, or one an older benchpack wrote)") if figures
                       else "no score was recorded for this session")
    return out


# --------------------------------------------------------------------------- reward (τ²)


def _reward(r: dict[str, Any], s: dict[str, Any]) -> dict[str, Any]:
    basis = [str(b) for b in r.get("basis") or []]
    comps = r.get("components") or {}
    score = r.get("score")
    if r.get("unfinished"):
        formula = (f"reward = 0: the dialogue ended by {r['unfinished']}, not by the user's "
                   "stop signal (conversation.unfinished: fail)")
    elif not basis:
        formula = "reward unknown: the session's score lists no reward components"
    else:
        formula = ("reward = " + " × ".join(basis) + " = "
                   + " × ".join(fmt(comps.get(b)) for b in basis) + f" = {fmt(score)}")
    st = r.get("state")
    left_out = [str(t) for t in (st.get("left_out") or [])] if isinstance(st, dict) else []
    if left_out:  # a reader of the figure must know what the state check did not compare
        formula += (f"\nstate compares every table but {', '.join(left_out)} "
                    "(environment `state_ignores`; still recorded)")
    threshold = r.get("pass_threshold")
    part: dict[str, Any] = {
        "kind": "reward", "title": "τ²-style reward", "value": score,
        "passed": r.get("passed"), "formula": formula, "pass_threshold": threshold,
        "verdict": _verdict(score, r.get("passed"), threshold),
        "components": [{"name": n, "value": v, "counts": n in basis}
                       for n, v in comps.items()],
        "stored_score": s.get("score"),
    }
    if isinstance(st, dict):
        diff = st.get("diff") or {}
        part["state"] = {"passed": st.get("passed"), "error": st.get("error"),
                         "expected_hash": st.get("expected_hash"),
                         "got_hash": st.get("got_hash"),
                         "changes": list(diff.get("changes") or []),
                         "more": int(diff.get("more") or 0)}
        if left_out:
            part["state"]["left_out"] = left_out
    if isinstance(r.get("actions"), list):
        part["actions"] = r["actions"]
    if isinstance(r.get("communicate"), list):
        part["communicate"] = r["communicate"]
    if isinstance(r.get("assertions"), list):
        part["assertions"] = r["assertions"]
    if r.get("unfinished"):
        part["unfinished"] = r["unfinished"]
    return part


def _imported_checks(part: dict[str, Any], info: dict[str, Any]) -> None:
    """A run imported from τ²-bench (`bench import-run tau2`): its own checks, from the
    `reward_info` it recorded — the database match (τ² keeps no diff), each gold action
    matched or not, each communicate check and natural-language assertion with the judge's
    justification."""
    def dicts(key: str) -> list[dict[str, Any]]:
        v = info.get(key)
        return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []

    db = info.get("db_check")
    if "state" not in part and isinstance(db, dict):
        part["state"] = {"passed": db.get("db_match"), "error": None, "changes": [], "more": 0,
                         "note": "τ²-bench records whether the final databases match, not how "
                                 "they differ"}
    if "actions" not in part and dicts("action_checks"):
        part["actions"] = []
        for a in dicts("action_checks"):
            act: dict[str, Any] = a["action"] if isinstance(a.get("action"), dict) else {}
            args = act.get("arguments")
            part["actions"].append({
                "id": act.get("action_id"), "tool": act.get("name"),
                "passed": a.get("action_match"),
                "detail": "" if args is None else json.dumps(args, ensure_ascii=False,
                                                             sort_keys=True)})
    if "communicate" not in part and dicts("communicate_checks"):
        part["communicate"] = [{"text": c.get("info"), "passed": c.get("met"),
                                "detail": c.get("justification")}
                               for c in dicts("communicate_checks")]
    if "assertions" not in part and dicts("nl_assertions"):
        part["assertions"] = [{"text": c.get("nl_assertion"),
                               "score": None if c.get("met") is None else float(bool(c["met"])),
                               "detail": c.get("justification"), "error": None}
                              for c in dicts("nl_assertions")]
    part["source"] = "imported from τ²-bench"


def _verdict(value: Any, passed: Any, threshold: Any) -> str:
    if passed is None:
        return "pass unknown" if value is None else "no pass/fail"
    word = "passed" if passed else "failed"
    if threshold is None or value is None:
        return word
    sign = "≥" if passed else "<"
    return f"{fmt(value)} {sign} {fmt(threshold)}: {word}"


# --------------------------------------------------------------------------- score: blocks


def _score_block(rows: list[dict[str, Any]], s: dict[str, Any],
                 card: dict[str, Any]) -> dict[str, Any]:
    items, dims, builtins, final = [], [], [], None
    for r in rows:
        d = _js(r.get("detail")) or {}
        kind = r.get("kind")
        if kind == "item":
            items.append({"id": r["name"], "value": r.get("value"), **d})
        elif kind == "dimension":
            dims.append({"name": r["name"], "value": r.get("value"), **d})
        elif kind == "builtin":
            builtins.append({"name": r["name"], "value": r.get("value"), **d})
        elif kind == "final":
            final = {"value": r.get("value"), **d}
    final = final or {}
    values: dict[str, Any] = {i["id"]: i["value"] for i in items}
    values.update({b["name"]: b["value"] for b in builtins})
    values.update({d["name"]: d["value"] for d in dims})
    formula_text = final.get("formula")
    uncapped = final.get("uncapped")
    lines = []
    if formula_text:
        lines.append(f"{formula_text} = {substitute(formula_text, values)} = {fmt(uncapped)}")
    elif final.get("reward"):
        names = [str(n) for n in final["reward"]]
        lines.append(" × ".join(names) + " = " + " × ".join(fmt(values.get(n)) for n in names)
                     + f" = {fmt(uncapped)}")
    elif items:
        scored = [i for i in items if i["value"] is not None]
        total = sum(float(i.get("weight") or 0) for i in scored)
        lines.append("weighted mean of the items = ("
                     + " + ".join(f"{fmt(i.get('weight'))}·{fmt(i['value'])}" for i in scored)
                     + f") / {fmt(total)} = {fmt(uncapped)}")
    for d in dims:
        ws = d.get("weights") or []
        ids = d.get("items") or []
        parts = [f"{fmt(w)}·{fmt(values.get(i))}" for i, w in zip(ids, ws, strict=False)
                 if values.get(i) is not None]
        known = sum(float(w) for i, w in zip(ids, ws, strict=False) if values.get(i) is not None)
        if parts and known:
            d["formula"] = f"({' + '.join(parts)}) / {fmt(known)} = {fmt(d['value'])}"
    gates = [str(g) for g in final.get("gates") or []]
    caps = [c for c in final.get("caps") or [] if isinstance(c, dict)]
    value = final.get("value")
    if gates:
        lines.append(f"gate{'s' * (len(gates) > 1)} failed ({', '.join(gates)}): score 0")
    elif caps:
        lines.append("capped: min(" + ", ".join([fmt(uncapped)] + [fmt(c.get("cap"))
                                                                   for c in caps])
                     + f") = {fmt(value)} (" + ", ".join(str(c.get("id")) for c in caps) + ")")
    if final.get("reason"):
        lines.append(str(final["reason"]))
    threshold = final.get("pass_threshold")
    return {"kind": "score", "title": "Score block", "value": value,
            "passed": final.get("passed"), "uncapped": uncapped,
            "formula": "\n".join(lines) or f"score = {fmt(value)}",
            "expression": formula_text, "reward": final.get("reward"),
            "pass_threshold": threshold,
            "verdict": _verdict(value, final.get("passed"), threshold),
            "gates": gates, "caps": caps, "reason": final.get("reason") or "",
            "dimensions": dims, "builtins": builtins, "items": items,
            "guards": card.get("guards") if isinstance(card, dict) else None,
            "stored_score": s.get("score")}


# --------------------------------------------------------------------------- verified outcome


def _counted(item: dict[str, Any]) -> float | None:
    score = item.get("score")
    if score is not None and NO_CREDIT_MARK in str(item.get("detail") or ""):
        return 0.0
    return None if score is None else float(score)


def _wmean(items: list[dict[str, Any]]) -> tuple[str, float | None]:
    scored = [(float(i.get("weight") or 0), v) for i in items
              if (v := _counted(i)) is not None]
    total = sum(w for w, _ in scored)
    if not total:
        return "no scored item", None
    value = sum(w * v for w, v in scored) / total
    return ("(" + " + ".join(f"{fmt(w)}·{fmt(v)}" for w, v in scored)
            + f") / {fmt(total)}"), value


def _verify(v: dict[str, Any], checklist: list[dict[str, Any]],
            s: dict[str, Any]) -> dict[str, Any]:
    outcome, process, uncapped = v.get("outcome"), v.get("process"), v.get("uncapped")
    ow = v.get("outcome_weight")
    lines = []
    for aspect, value in (("outcome", outcome), ("process", process)):
        mine = [c for c in checklist if c.get("aspect") == aspect]
        if mine:
            text, _ = _wmean(mine)
            lines.append(f"{aspect} = {text} = {fmt(value)}")
    if outcome is not None and process is not None:
        w = fmt(ow) if ow is not None else "outcome_weight"
        rest = fmt(1 - float(ow)) if ow is not None else "(1 − outcome_weight)"
        lines.append(f"soft score = {w}·outcome + {rest}·process = {w}·{fmt(outcome)} + "
                     f"{rest}·{fmt(process)} = {fmt(uncapped)}")
    elif uncapped is not None:
        lines.append(f"soft score = {'outcome' if outcome is not None else 'process'} "
                     f"(the other aspect has no items) = {fmt(uncapped)}")
    caps = [c for c in v.get("caps") or [] if isinstance(c, dict)]
    if caps:
        lines.append("capped: min(" + ", ".join([fmt(uncapped)] + [fmt(c.get("cap"))
                                                                   for c in caps])
                     + f") = {fmt(s.get('score'))}")
    if v.get("unscored"):
        lines.append(f"{v['unscored']} item(s) unscored (judge or grader error): left out")
    threshold = v.get("pass_threshold")
    return {"kind": "verify", "title": "Verified outcome (soft score)", "value": s.get("score"),
            "passed": s.get("passed"), "outcome": outcome, "process": process,
            "uncapped": uncapped, "outcome_weight": ow, "pass_threshold": threshold,
            "verdict": _verdict(s.get("score"), s.get("passed"), threshold),
            "caps": caps, "unscored": v.get("unscored"),
            "formula": "\n".join(lines) or f"score = {fmt(s.get('score'))}"}


# --------------------------------------------------------------------------- checklist (COMP)


def _checklist(items: list[dict[str, Any]], s: dict[str, Any]) -> dict[str, Any]:
    shown = [{"id": c.get("item_id"), "text": c.get("text"), "grader": c.get("grader"),
              "aspect": c.get("aspect"), "weight": c.get("weight"), "score": c.get("score"),
              "counted": _counted(c), "detail": c.get("detail"), "error": c.get("error")}
             for c in items]
    known = [c["counted"] for c in shown if c["counted"] is not None]
    comp = s.get("comp")
    if known:
        formula = (f"COMP = mean of {len(known)} scored item{'s' * (len(known) != 1)} = ("
                   + " + ".join(fmt(k) for k in known) + f") / {len(known)} = {fmt(comp)}")
    else:
        formula = "COMP unknown: no item was scored"
    left = len(shown) - len(known)
    if left:
        formula += f" ({left} unscored item{'s' * (left != 1)} left out)"
    if any(c["counted"] != c["score"] for c in shown):
        formula += "\nitems marked “counted 0”: the agent achieved no outcome beyond doing nothing"
    return {"kind": "checklist", "title": "Checklist (COMP)", "value": comp,
            "formula": formula, "items": shown}


# --------------------------------------------------------------------------- intents (PROC)


def _intents(rows: list[dict[str, Any]], s: dict[str, Any]) -> dict[str, Any]:
    own = [r for r in rows if not r.get("pooled_from")]
    counts = {k: sum(1 for r in own if r.get("status") == k)
              for k in ("completed", "inferred", "provided", "unresolved")}
    n = len(own)
    proc = s.get("proc")
    formula = (f"PROC = (completed {counts['completed']} + inferred {counts['inferred']}) / "
               f"{n} intent{'s' * (n != 1)} = {fmt(proc)}")
    if counts["provided"]:
        formula += f"; {counts['provided']} provided by the user (not credited)"
    if s.get("proc_group") is not None and s.get("proc_group") != proc:
        formula += (f"\nPROC over the dependency group (intents pooled from earlier "
                    f"sessions) = {fmt(s['proc_group'])}")
    return {"kind": "intents", "title": "Hidden intents (PROC)", "value": proc,
            "formula": formula, "counts": counts,
            "intents": [{"id": r.get("intent_id"), "text": r.get("text"),
                         "status": r.get("status"), "turn": r.get("turn"),
                         "scope": r.get("scope"), "judge_error": r.get("judge_error"),
                         "pooled_from": r.get("pooled_from")} for r in rows]}


# --------------------------------------------------------------------------- graph (F1)


def _graph(rows: list[dict[str, Any]], support: list[dict[str, Any]],
           s: dict[str, Any]) -> dict[str, Any]:
    gt = [r for r in rows if r.get("side") == "ground_truth"]
    pred = [r for r in rows if r.get("side") == "predicted"]
    by_gt: dict[int, list[int]] = {}
    supporting: set[int] = set()
    for x in support:
        by_gt.setdefault(int(x["gt_idx"]), []).append(int(x["pred_idx"]))
        supporting.add(int(x["pred_idx"]))
    pred_text = {int(p["idx"]): _triple(p) for p in pred}
    matched = sum(1 for g in gt if g.get("matched"))
    useful = sum(1 for p in pred if p.get("matched") or int(p["idx"]) in supporting)
    lines = [f"recall = {matched} matched / {len(gt)} ground-truth triples = "
             f"{fmt(s.get('recall'))}"]
    if pred:
        lines.append(f"precision = {useful} supporting / {len(pred)} predicted = "
                     f"{fmt(s.get('precision'))}")
    else:
        lines.append(f"precision: nothing predicted (kg status {s.get('kg_status') or '—'})")
    pr, rc = s.get("precision"), s.get("recall")
    lines.append("F1 = 2·P·R / (P + R) = " + (f"2·{fmt(pr)}·{fmt(rc)} / ({fmt(pr)} + {fmt(rc)}) = "
                                              if pr is not None and rc is not None else "")
                 + fmt(s.get("f1")))
    return {"kind": "graph", "title": "Knowledge graph (P/R/F1)", "value": s.get("f1"),
            "formula": "\n".join(lines), "recall": s.get("recall"),
            "precision": s.get("precision"), "kg_status": s.get("kg_status"),
            "ground_truth": [{"idx": g["idx"], "triple": _triple(g), "dimension":
                              g.get("dimension"), "matched": g.get("matched"),
                              "coverage": g.get("coverage"), "judge_error": g.get("judge_error"),
                              "supported_by": [pred_text.get(k, f"#{k}")
                                               for k in by_gt.get(int(g["idx"]), [])]}
                             for g in gt],
            "predicted": [{"idx": p["idx"], "triple": _triple(p),
                           "supports": bool(p.get("matched") or int(p["idx"]) in supporting)}
                          for p in pred]}


def _triple(r: dict[str, Any]) -> str:
    return f"({r.get('head')}, {r.get('relation')}, {r.get('tail')})"


# --------------------------------------------------------------------------- triggers


def _triggers(rows: list[dict[str, Any]], s: dict[str, Any]) -> dict[str, Any]:
    judged = [r for r in rows if r.get("score") is not None]
    passes = sum(1 for r in judged if r.get("label") == "PASS")
    lines = []
    if judged:
        lines.append("trigger score = (" + " + ".join(fmt(r["score"]) for r in judged)
                     + f") / {len(judged)} = {fmt(s.get('trigger_score'))} "
                     "(Pass 1, Partial 0.5, Fail 0)")
        lines.append(f"pass rate = {passes} / {len(judged)} = "
                     f"{fmt(s.get('trigger_pass_rate'))}")
    left = len(rows) - len(judged)
    if left:
        lines.append(f"{left} trigger{'s' * (left != 1)} without a score (judge error) left out")
    return {"kind": "triggers", "title": "Trigger points", "value": s.get("trigger_score"),
            "formula": "\n".join(lines) or "no trigger was judged",
            "triggers": [{"id": r.get("trigger_id"), "type": r.get("type"),
                          "turn": r.get("turn"), "label": r.get("label"),
                          "score": r.get("score"), "rationale": r.get("rationale"),
                          "evidence": r.get("evidence"), "quote_found": r.get("quote_found"),
                          "judge_error": r.get("judge_error"),
                          "criteria": {k: r.get(f"{k}_criteria")
                                       for k in ("pass", "partial", "fail")}} for r in rows]}


__all__ = ["explain", "fmt", "load", "load_many", "substitute"]


# --------------------------------------------------------------------------- the report

EXPLAIN_MAX = 1000
"""Session attempts `bench report explain` explains at most (a note says how many more)."""


def _selected(ctx: Any, limit: int) -> tuple[list[tuple[str, str, int]], int]:
    """The first `limit` of the selected runs' session attempts (with `--session`: those
    whose name or plan id matches one of the patterns, globs allowed), in run order, then by
    name and repeat; and how many there are."""
    import fnmatch

    pats = list(getattr(ctx, "sessions", None) or [])
    if not ctx.runs:
        return [], 0
    # run order in SQL, so that without patterns only the attempts shown reach Python (all
    # 100,000 of 1 M turns were fetched and sorted there: 0.3 s)
    position = "CASE run_id " + " ".join(
        f"WHEN {literal(r)} THEN {i}" for i, r in enumerate(ctx.runs)) + " END"
    select = ("SELECT run_id, session_id, repeat, name, count(*) OVER () FROM sessions "
              "WHERE run_id IN $runs AND status <> 'skipped' "
              f"ORDER BY {position}, run_id, name, session_id, repeat")
    if not pats:
        rows = ctx.rows(f"{select} LIMIT {int(limit)}")
        total = int(rows[0][4]) if rows else 0
        return [(str(r), str(s), int(k)) for r, s, k, _, _ in rows], total
    out = [(str(r), str(s), int(k)) for r, s, k, n, _ in ctx.rows(select)
           if any(fnmatch.fnmatchcase(str(n), p) or fnmatch.fnmatchcase(str(s), p)
                  for p in pats)]
    return out[:limit], len(out)


def report(ctx: Any) -> Any:
    """`bench report explain`: one row per part of each session's score (the formula with
    its values); `--format json` adds `explanations`, every part with its items."""
    from .model import Column, ReportResult, Table

    shown, total = _selected(ctx, EXPLAIN_MAX)
    found = [x for x in load_many(ctx.con, shown) if x is not None]
    table = Table("Why each session scored what it did", [
        Column("run", "run"), Column("session", "session"), Column("repeat", "repeat", "int"),
        Column("part", "part"), Column("value", "value", "float"),
        Column("verdict", "verdict"), Column("formula", "formula with its values")])
    for x in found:
        for p in x["parts"]:
            table.rows.append([x["run_id"], x["name"], x["repeat"], p["kind"], p.get("value"),
                               p.get("verdict") or "", p.get("formula", "").replace("\n", "; ")])
        if not x["parts"]:
            table.rows.append([x["run_id"], x["name"], x["repeat"], "—", None, "",
                               x.get("note") or ""])
    notes = []
    if total > len(shown):
        notes.append(f"{len(shown)} of {total} session attempts explained; narrow with "
                     "--session NAME (a name, plan id or glob) or --run")
    result = ReportResult("explain", "Why this score", "every part of each session's score "
                          "with its items and arithmetic", list(ctx.runs), [table], notes=notes)
    result.data = {"explanations": found}
    return result
