"""The "why this score" panel (issue 29): an `explain.explain` dict as HTML, the same in
`bench view`'s session page and the HTML report's drill-down. Everything stored is escaped
(`esc`): rationales and state values are arbitrary text."""

from __future__ import annotations

import json
from typing import Any

from .explain import fmt
from .html_common import esc

TEXT_CLIP = 600
"""Characters of a rationale or rule detail shown (the rest is in `bench report explain`)."""


def _clip(text: Any, limit: int = TEXT_CLIP) -> str:
    s = "" if text is None else str(text)
    if len(s) <= limit:
        return esc(s)
    return f'<span title="{esc(s[:4000])}">{esc(s[:limit])}…</span>'


def _ok(v: Any, yes: str = "yes", no: str = "no") -> str:
    if v is None:
        return '<span class="badge xp-unknown">unknown</span>'
    good = bool(v) if not isinstance(v, (int, float)) or isinstance(v, bool) else v >= 1
    if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1:
        return f'<span class="badge xp-partial">{esc(fmt(v))}</span>'
    return (f'<span class="badge xp-{"yes" if good else "no"}">'
            f'{esc(yes if good else no)}</span>')


def _value(v: Any) -> str:
    return esc(fmt(v))


def _table(cls: str, head: list[tuple[str, str]], rows: list[list[str]]) -> str:
    if not rows:
        return ""
    return (f'<div class="table-wrap"><table class="xp {cls}"><thead><tr>'
            + "".join(f'<th class="{c}">{esc(t)}</th>' for t, c in head)
            + "</tr></thead><tbody>"
            + "".join("<tr>" + "".join(f'<td class="{c}">{cell}</td>'
                                       for (_, c), cell in zip(head, r, strict=True)) + "</tr>"
                      for r in rows)
            + "</tbody></table></div>")


def _json(v: Any) -> str:
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    return json.dumps(v, ensure_ascii=False, default=str, sort_keys=True)


def _reward(p: dict[str, Any]) -> str:
    out = _table("components", [("component", "txt"), ("value", "num"),
                                ("in the reward", "txt")],
                 [[f"<code>{esc(c['name'])}</code>", _ok(c["value"], "1", "0"),
                   "yes" if c["counts"] else '<span class="dim">no</span>']
                  for c in p.get("components") or []])
    st = p.get("state")
    if st is not None:
        if st.get("error"):
            out += (f'<p class="xp-state"><b>state</b>: unknown, the gold actions could not be '
                    f'replayed: <span class="warn">{esc(st["error"])}</span></p>')
        elif st.get("note"):
            match = _ok(st.get("passed"), "match", "differ")
            out += (f'<p class="xp-state"><b>state</b>: {match} '
                    f'<span class="dim">{esc(st["note"])}</span></p>')
        elif st.get("passed"):
            out += ('<p class="xp-state"><b>state</b>: the final state equals the gold '
                    "replay's (same hash)</p>")
        else:
            rows = [[f"<code>{esc(c.get('service'))}.{esc(c.get('table'))}</code>",
                     esc(c.get("key")), esc(c.get("kind")), f"<code>{esc(c.get('path'))}</code>",
                     f'<span class="xp-want">{_clip(_json(c.get("expected")), 300)}</span>',
                     f'<span class="xp-got">{_clip(_json(c.get("got")), 300)}</span>']
                    for c in st.get("changes") or []]
            out += ('<h6>state: expected (gold replay) vs actual</h6>'
                    + _table("state-diff", [("table", "txt"), ("row", "txt"), ("change", "txt"),
                                            ("field", "txt"), ("expected", "txt"),
                                            ("got", "txt")], rows))
            if st.get("more"):
                out += f'<p class="dim">… and {int(st["more"])} more differences</p>'
        if st.get("left_out"):
            out += ('<p class="xp-state dim">state: not compared (still recorded): '
                    + ", ".join(f"<code>{esc(t)}</code>" for t in st["left_out"])
                    + " (environment <code>state_ignores</code>)</p>")
    if p.get("actions") is not None:
        out += "<h6>gold actions</h6>" + _table(
            "actions", [("action", "txt"), ("tool", "txt"), ("matched", "txt"),
                        ("detail", "txt")],
            [[f"<code>{esc(a.get('id'))}</code>", f"<code>{esc(a.get('tool'))}</code>",
              _ok(a.get("passed"), "matched", "unmatched"), _clip(a.get("detail"))]
             for a in p["actions"]])
    if p.get("communicate") is not None:
        out += "<h6>communicate</h6>" + _table(
            "communicate", [("must be said", "txt"), ("said", "txt")],
            [[esc(c.get("text")), _ok(c.get("passed"))] for c in p["communicate"]])
    if p.get("assertions") is not None:
        out += "<h6>assertions</h6>" + _table(
            "assertions", [("assertion", "txt"), ("holds", "txt"), ("judge", "txt")],
            [[esc(a.get("text")), _ok(a.get("score")),
              _clip(a.get("error") or a.get("detail") or a.get("rationale"))]
             for a in p["assertions"]])
    return out


def _score(p: dict[str, Any]) -> str:
    out = ""
    if p.get("dimensions"):
        out += "<h6>dimensions</h6>" + _table(
            "dimensions", [("dimension", "txt"), ("value", "num"), ("items", "txt"),
                           ("weighted mean", "txt")],
            [[f"<code>{esc(d['name'])}</code>", _value(d.get("value")),
              esc(", ".join(map(str, d.get("items") or []))), esc(d.get("formula") or "")]
             for d in p["dimensions"]])
    if p.get("builtins"):
        out += "<h6>built-in components</h6>" + _table(
            "builtins", [("component", "txt"), ("value", "num"), ("checks", "txt")],
            [[f"<code>{esc(b['name'])}</code>", _value(b.get("value")),
              "<br>".join(f"{_ok(c.get('passed') if 'passed' in c else c.get('score'))} "
                          f"{esc(c.get('text'))}"
                          + (f' <span class="dim">{_clip(c.get("rationale"), 200)}</span>'
                             if c.get("rationale") else "")
                          for c in b.get("checks") or [] if isinstance(c, dict))]
             for b in p["builtins"]])
    if p.get("items"):
        rows = []
        for it in p["items"]:
            flags = []
            if it.get("gate"):
                flags.append('<span class="badge xp-gate">gate</span>')
            if it.get("cap") is not None:
                flags.append(f'<span class="badge xp-cap">cap {esc(fmt(it["cap"]))}</span>')
            why = it.get("error") or it.get("rationale") or ""
            rows.append([f"<code>{esc(it['id'])}</code>" + (f'<br><span class="dim">'
                                                          f'{_clip(it.get("text"), 200)}</span>'
                                                          if it.get("text") else ""),
                         esc(it.get("dimension") or ""), _value(it.get("weight")),
                         _ok(it.get("value"), "1", "0") + " " + " ".join(flags),
                         (f'<span class="warn">{esc(why)}</span>' if it.get("error")
                          else _clip(why)),
                         _clip(_json(it["detail"]) if not isinstance(it.get("detail"), str)
                               and it.get("detail") is not None else it.get("detail"))])
        out += "<h6>items</h6>" + _table(
            "items", [("item", "txt"), ("dimension", "txt"), ("weight", "num"),
                      ("score", "txt"), ("judge rationale", "txt"), ("rule detail", "txt")],
            rows)
    return out


def _verify(p: dict[str, Any]) -> str:
    caps = p.get("caps") or []
    if not caps:
        return ""
    return "<h6>safety caps that fired</h6>" + _table(
        "caps", [("cap", "txt"), ("at most", "num"), ("why", "txt"), ("rule saw", "txt")],
        [[f"<code>{esc(c.get('id'))}</code>", _value(c.get("cap")), esc(c.get("reason")),
          _clip(c.get("detail"))] for c in caps])


def _checklist(p: dict[str, Any]) -> str:
    rows = []
    for c in p.get("items") or []:
        score = c.get("score")
        verdict = ('<span class="badge xp-no">error</span>' if c.get("error")
                   else _ok(score))
        if c.get("counted") != score and c.get("counted") is not None:
            verdict += ' <span class="dim">counted 0</span>'
        rows.append([f"<code>{esc(c.get('id'))}</code>", esc(c.get("text")),
                     esc(c.get("grader")) + (f' <span class="dim">{esc(c.get("aspect"))}</span>'
                                             if c.get("aspect") else ""),
                     _value(c.get("weight")), verdict,
                     (f'<span class="warn">{esc(c["error"])}</span>' if c.get("error")
                      else _clip(c.get("detail")))])
    return _table("checklist-xp", [("item", "txt"), ("criterion", "txt"), ("grader", "txt"),
                                   ("weight", "num"), ("passed", "txt"), ("why", "txt")], rows)


def _intents(p: dict[str, Any]) -> str:
    return _table("intents", [("intent", "txt"), ("text", "txt"), ("status", "txt"),
                              ("turn", "num")],
                  [[f"<code>{esc(i.get('id'))}</code>", _clip(i.get("text"), 300),
                    f'<span class="badge st-{esc(i.get("status"))}">{esc(i.get("status"))}'
                    "</span>" + (f' <span class="warn">{esc(i["judge_error"])}</span>'
                                 if i.get("judge_error") else "")
                    + (f' <span class="dim">from {esc(i["pooled_from"])}</span>'
                       if i.get("pooled_from") else ""),
                    esc(i.get("turn") if i.get("turn") is not None else "—")]
                   for i in p.get("intents") or []])


def _graph(p: dict[str, Any]) -> str:
    gt = p.get("ground_truth") or []
    out = "<h6>ground-truth triples</h6>" + _table(
        "triples-gt", [("#", "num"), ("triple", "txt"), ("dimension", "txt"),
                       ("covered", "txt"), ("supported by (predicted)", "txt")],
        [[esc(g["idx"]), esc(g["triple"]), esc(g.get("dimension") or ""),
          _ok(g.get("matched"), "matched", "missed")
          + (f' <span class="dim">{esc(g["coverage"])}</span>' if g.get("coverage") else "")
          + (f' <span class="warn">{esc(g["judge_error"])}</span>' if g.get("judge_error")
             else ""),
          "<br>".join(esc(t) for t in g.get("supported_by") or [])]
         for g in gt])
    pred = p.get("predicted") or []
    unused = [x for x in pred if not x.get("supports")]
    if unused:
        out += (f"<h6>predicted triples supporting nothing ({len(unused)} of {len(pred)})</h6>"
                + _table("triples-pred", [("#", "num"), ("triple", "txt")],
                         [[esc(x["idx"]), esc(x["triple"])] for x in unused]))
    return out


def _criteria(c: dict[str, Any]) -> str:
    """The rubric the planner committed before the reply existed, folded."""
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{_clip(v, 400)}</dd>" for k, v in c.items() if v)
    return (f'<details class="xp-criteria"><summary>criteria</summary><dl class="rubric">{rows}'
            "</dl></details>") if rows else ""


def _triggers(p: dict[str, Any]) -> str:
    return _table("triggers-xp", [("trigger", "txt"), ("type", "txt"), ("turn", "num"),
                                  ("label", "txt"), ("rationale", "txt"), ("evidence", "txt")],
                  [[f"<code>{esc(t.get('id'))}</code>", esc(t.get("type")), esc(t.get("turn")),
                    (f'<span class="badge tr-{esc(str(t.get("label") or "").lower())}">'
                     f'{esc(t.get("label") or "—")}</span>'
                     + (f' <span class="warn">{esc(t["judge_error"])}</span>'
                        if t.get("judge_error") else "")),
                    _clip(t.get("rationale")) + _criteria(t.get("criteria") or {}),
                    (_clip(t.get("evidence"), 300) + ("" if t.get("quote_found") or
                                                      not t.get("evidence") else
                                                      ' <span class="warn">not found in the '
                                                      "reply</span>"))]
                   for t in p.get("triggers") or []])


_BODY = {"reward": _reward, "score": _score, "verify": _verify, "checklist": _checklist,
         "intents": _intents, "graph": _graph, "triggers": _triggers}


def panel_html(x: dict[str, Any], *, open_: bool = True, anchor: str | None = "explain") -> str:
    """The panel: a heading with the verdict, then one section per part (formula with the
    values substituted, then its items). `anchor`: its id (None in the HTML report, which
    holds many sessions)."""
    parts = []
    for p in x.get("parts") or []:
        verdict = p.get("verdict")
        head = (f'<h5>{esc(p.get("title"))}: <span class="xp-value">{_value(p.get("value"))}'
                "</span>" + (f' <span class="xp-verdict">{esc(verdict)}</span>' if verdict
                             else "") + "</h5>")
        formula = p.get("formula") or ""
        parts.append(f'<section class="xp-part" data-part="{esc(p.get("kind"))}">{head}'
                     + (f'<pre class="xp-formula">{esc(formula)}</pre>' if formula else "")
                     + _BODY.get(str(p.get("kind")), lambda _p: "")(p) + "</section>")
    note = (f'<p class="xp-note dim">{esc(x["note"])}</p>' if x.get("note") else "")
    err = (f'<p class="error">error: {_clip(x["error"])}</p>' if x.get("error") else "")
    ident = f' id="{esc(anchor)}"' if anchor else ""
    return (f'<details class="explain"{ident}{" open" * open_}><summary>Why this score'
            "</summary>" + err + note + "".join(parts) + "</details>")


__all__ = ["panel_html"]
