"""One session attempt as HTML (`session_html`): its transcript by turn, with under each turn
the intent statuses, trigger-point scores (rationale, evidence quote marked in the reply) and
stage events decided there, then the checklist.

Separate from the page (`html.py`) because `bench view` renders the same transcripts one session
at a time (`view/transcript.py`), without the reports around them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from .drilldown import SessionTrace
from .html_common import esc
from .render import DASH, format_number

FOLD_AT = 1200
"""Characters of a message shown at once; the rest (up to TEXT_LIMIT) behind "show more"."""
TEXT_LIMIT = 6000
"""Characters of one message in the file at all; the rest is cut with a marker saying so."""
ARGS_LIMIT = 400
RESULT_LIMIT = 1500


def _clip(text: str, limit: int) -> tuple[str, int]:
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def _more(hidden: int) -> str:
    return f'<span class="cut">… {hidden:,} more characters not shown</span>' if hidden else ""


def _highlight(text: str, quotes: Sequence[str]) -> str:
    """`text` escaped, with every occurrence of the (verbatim) quotes marked."""
    spans: list[tuple[int, int]] = []
    for q in quotes:
        start = text.find(q) if q else -1
        while start >= 0:
            spans.append((start, start + len(q)))
            start = text.find(q, start + len(q))
    out, pos = [], 0
    for a, b in sorted(spans):
        if a < pos:
            continue
        out += [esc(text[pos:a]), "<mark>", esc(text[a:b]), "</mark>"]
        pos = b
    out.append(esc(text[pos:]))
    return "".join(out)


def _text_block(text: str, quotes: Sequence[str]) -> str:
    """A message's text, escaped, quotes marked, long text folded and very long text cut."""
    text, hidden = _clip(text, TEXT_LIMIT)
    cut = FOLD_AT
    for q in quotes:  # never fold inside a marked quote
        start = text.find(q) if q else -1
        while start >= 0:
            if start < cut < start + len(q):
                cut = start + len(q)
            start = text.find(q, start + len(q))
    if len(text) <= cut + 200:  # folding a short tail is more noise than it saves
        return _highlight(text, quotes) + _more(hidden)
    return (_highlight(text[:cut], quotes) + f'<details class="more"><summary>show '
            f"{len(text) - cut + hidden:,} more characters</summary>"
            + _highlight(text[cut:], quotes) + _more(hidden) + "</details>")


def _json_text(raw: Any) -> str:
    if raw is None:
        return ""
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return raw
        return json.dumps(value, ensure_ascii=False, default=str)
    return json.dumps(raw, ensure_ascii=False, default=str)


def _tool_html(name: str, args: Any, result: Any, error: str | None) -> str:
    shown, hidden = _clip(_json_text(args), ARGS_LIMIT)
    out = (f'<div class="tool"><span class="tool-name">{esc(name)}</span>'
           f'<code class="args">{esc(shown)}</code>{_more(hidden)}')
    if error:
        out += f'<div class="tool-error">error: {esc(error)}</div>'
    elif result is not None:
        text = _json_text(result)
        shown, hidden = _clip(text, RESULT_LIMIT)
        out += (f"<details><summary>result · {len(text):,} characters</summary>"
                f"<pre>{esc(shown)}</pre>{_more(hidden)}</details>")
    return out + "</div>"


def _badge(kind: str, text: Any) -> str:
    cls = re.sub(r"[^a-z0-9]+", "-", str(text).lower())
    return f'<span class="badge {kind}-{cls}">{esc(text)}</span>'


def _intent_html(i: dict[str, Any]) -> str:
    warn = (f' <span class="warn">judge error: {esc(i["judge_error"])}</span>'
            if i.get("judge_error") else "")
    then = _THEN.get(str(i.get("status")), "")
    return (f'<div class="ann intent">{_badge("st", i.get("status"))} '
            f'<span class="what">intent</span> <code>{esc(i.get("intent_id"))}</code> '
            f'<span class="dim">({esc(i.get("scope"))})</span> {esc(i.get("text"))}'
            + (f' <span class="dim">{then}</span>' if then else "") + f"{warn}</div>")


_THEN = {"inferred": "— the agent asked about it; the user answers in the next message",
         "provided": "— the agent missed it; the user volunteers it in the next message"}


def _trigger_html(t: dict[str, Any], response_shown: bool) -> str:
    label = t.get("label")
    head = (f'{_badge("tr", label or "judge error")} <span class="what">trigger</span> '
            f'<code>{esc(t.get("trigger_id"))}</code> <span class="dim">{esc(t.get("type"))} · '
            f'{esc(t.get("mode"))}'
            + (f" · score {float(t['score']):g}" if t.get("score") is not None else "")
            + "</span>")
    body = ""
    if t.get("rationale"):
        body += f'<div class="rationale">{esc(t["rationale"])}</div>'
    evidence = t.get("evidence")
    if evidence:
        found = t.get("quote_found")
        body += (f'<blockquote class="evidence"><mark>{esc(evidence)}</mark></blockquote>'
                 + ("" if found else '<div class="warn">this quote does not occur in the '
                    "response</div>"))
    if t.get("judge_error"):
        body += f'<div class="warn">judge error: {esc(t["judge_error"])}</div>'
    if not response_shown and t.get("response"):
        quotes = [evidence] if evidence and t.get("quote_found") else []
        body += ('<details open><summary>response judged (regenerated for this trigger)'
                 f'</summary><div class="text">{_text_block(str(t["response"]), quotes)}'
                 "</div></details>")
    rubric = "".join(f"<dt>{name}</dt><dd>{esc(t.get(key))}</dd>"
                     for name, key in (("pass", "pass_criteria"), ("partial", "partial_criteria"),
                                       ("fail", "fail_criteria")) if t.get(key))
    if rubric:
        body += f'<details><summary>rubric</summary><dl class="rubric">{rubric}</dl></details>'
    return f'<div class="ann trigger">{head}{body}</div>'


def _stage_html(e: dict[str, Any]) -> str:
    idx = e.get("stage_index")
    return (f'<div class="ann stage">{_badge("sg", e.get("event") or "stage")} '
            f'<span class="what">stage{"" if idx is None else f" {int(idx) + 1}"}</span> '
            f'<code>{esc(e.get("stage_id"))}</code> <span class="dim">{esc(e.get("kind"))}</span>'
            + (f" {esc(e.get('detail'))}" if e.get("detail") else "") + "</div>")


def _checklist_html(items: list[dict[str, Any]]) -> str:
    rows = []
    for c in items:
        score = c.get("score")
        if c.get("error"):
            verdict = _badge("ck", "error")
        elif score is None:
            verdict = DASH
        else:
            verdict = _badge("ck", "yes" if score >= 1 else "no" if score <= 0 else f"{score:g}")
        detail = c.get("error") or c.get("detail") or ""
        shown, hidden = _clip(str(detail), 600)
        rows.append(f'<tr><td class="txt"><code>{esc(c.get("item_id"))}</code></td>'
                    f'<td class="txt">{esc(c.get("text"))}</td>'
                    f'<td class="txt">{esc(c.get("grader"))}'
                    + (f' <span class="dim">{esc(c.get("aspect"))}</span>'
                       if c.get("aspect") else "")
                    + f'</td><td class="num">{verdict}</td>'
                    f'<td class="num">{esc(_fmt_weight(c.get("weight")))}</td>'
                    f'<td class="txt detail">{esc(shown)}{_more(hidden)}</td></tr>')
    return ('<div class="table-wrap"><table class="checklist"><thead><tr><th class="txt">item</th>'
            '<th class="txt">criterion</th><th class="txt">grader</th><th class="num">passed</th>'
            '<th class="num">weight</th><th class="txt">detail</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table></div>")


def _fmt_weight(w: Any) -> str:
    return DASH if w is None else f"{float(w):g}"


def _message_html(m: dict[str, Any], quotes: Sequence[str],
                  calls: dict[tuple[int, str], dict[str, Any]],
                  shown_calls: set[tuple[int, str]]) -> str:
    role = str(m.get("role"))
    content = str(m.get("content") or "")
    turn = int(m.get("turn") or 0)
    if role == "tool" and (turn, str(m.get("tool_call_id"))) in shown_calls:
        return ""  # its result is shown under the call
    if role == "tool":
        return _tool_html(str(m.get("name") or "tool"), None, content, None)
    who, cls = role, role
    if role == "user" and m.get("name") == "environment":
        who, cls = "environment event", "env"
        content = _pretty(content)
    tool_calls = _json_list(m.get("tool_calls"))
    if content or not tool_calls:
        text = _text_block(content, quotes) if content else '<span class="dim">(no text)</span>'
        out = (f'<div class="msg {esc(cls)}"><div class="who">{esc(who)}</div>'
               f'<div class="text">{text}</div>')
    else:  # an agent step that only calls tools: no speech bubble
        out = '<div class="steps">'
    for call in tool_calls:
        cid = (turn, str(call.get("id") or ""))
        rec = calls.get(cid)
        shown_calls.add(cid)
        name = str(call.get("name") or (call.get("function") or {}).get("name") or "tool")
        args = call.get("arguments", (call.get("function") or {}).get("arguments"))
        if rec is not None:
            out += _tool_html(rec["tool_name"] or name, rec["call"] or args, rec["result"],
                              rec["error"])
        else:
            out += _tool_html(name, args, None, None)
    return out + "</div>"


def _pretty(text: str) -> str:
    try:
        return json.dumps(json.loads(text), ensure_ascii=False, indent=1)
    except ValueError:
        return text


def _json_list(raw: Any) -> list[dict[str, Any]]:
    if not raw:
        return []
    value = json.loads(raw) if isinstance(raw, str) else raw
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def metric_chips(s: dict[str, Any]) -> str:
    chips = []
    proc = s.get("proc_group") if s.get("proc_group") is not None else s.get("proc")
    for name, value in (("PROC", proc), ("COMP", s.get("comp")), ("score", s.get("score")),
                        ("F1", s.get("f1")), ("trigger score", s.get("trigger_score"))):
        if value is not None:
            chips.append(f"{name} {format_number(float(value), 'pct')}")
    if s.get("passed") is not None:
        chips.append("passed" if s["passed"] else "failed")
    if s.get("turns") is not None:
        chips.append(f"{int(s['turns'])} turn{'s' * (int(s['turns']) != 1)}")
    errors = int(s.get("judge_errors") or 0) + int(s.get("grader_errors") or 0)
    if errors:
        chips.append(f'<span class="warn">{errors} judge/grader error{"s" * (errors != 1)}'
                     "</span>")
    return " · ".join(c if c.startswith("<") else esc(c) for c in chips)


def session_anchor(key: tuple[str, str, int]) -> str:
    return "s-" + hashlib.sha1(json.dumps(key).encode()).hexdigest()[:12]


def session_html(trace: SessionTrace, *, transcript: bool = True, open_: bool = False,
                 extra: dict[int, list[str]] | None = None, panel: str = "") -> str:
    """One session attempt: summary line, transcript by turn with the statuses, trigger scores
    and stage events of each turn, then the checklist (only the summary with
    `transcript=False`). `extra`: more HTML per turn (`bench view` adds tokens, latency and
    the judge and simulator calls); `open_`: unfolded; `panel`: "why this score" HTML
    (`html_explain.panel_html`) shown before the transcript, and without one."""
    s = trace.session
    if not transcript:
        return (f'<details class="session{" flagged" if trace.flagged else ""}" '
                f'id="{session_anchor(trace.key)}"><summary>{_summary(s)}</summary>'
                f'<div class="session-body">{panel}<p class="empty">Transcript left out: this run\'s '
                "share of the page's size budget is used up. <code>bench query</code> reads "
                "it.</p></div></details>")
    calls = {(int(r.get("turn") or 0), str(r["call_id"])): r for r in trace.tool_calls
             if r.get("call_id")}
    shown_calls: set[tuple[int, str]] = set()
    at_turn: dict[int | None, list[str]] = {}
    own_intents = [i for i in trace.intents if not i.get("pooled_from")]
    for turn_no, parts in (extra or {}).items():
        at_turn.setdefault(turn_no, []).extend(parts)
    for e in trace.stages:
        at_turn.setdefault(e.get("turn"), []).append(_stage_html(e))
    for i in own_intents:
        at_turn.setdefault(i.get("turn"), []).append(_intent_html(i))
    turns: dict[int, list[dict[str, Any]]] = {}
    for m in trace.messages:
        turns.setdefault(int(m.get("turn") or 0), []).append(m)
    quotes: dict[int | None, list[str]] = {}
    for t in trace.triggers:
        if t.get("evidence") and t.get("quote_found"):
            quotes.setdefault(t.get("turn"), []).append(str(t["evidence"]))
    for t in trace.triggers:
        said = [str(m.get("content") or "") for m in turns.get(int(t.get("turn") or 0), [])
                if m.get("role") == "assistant"]
        shown = bool(t.get("response")) and any(str(t["response"]).strip() == x.strip()
                                                for x in said)
        at_turn.setdefault(t.get("turn"), []).append(_trigger_html(t, shown))
    records_by_turn: dict[int, list[dict[str, Any]]] = {}
    for r in trace.tool_calls:
        records_by_turn.setdefault(int(r.get("turn") or 0), []).append(r)

    out = []
    for turn in sorted(set(turns) | {t for t in at_turn if t is not None}):
        msgs = [_message_html(m, quotes.get(turn, []), calls, shown_calls)
                for m in turns.get(turn, [])]
        # tool calls no message mentions (agents that report tools only through the toolbox)
        loose = [_tool_html(r["tool_name"], r["call"], r["result"], r["error"])
                 for r in records_by_turn.get(turn, [])
                 if (turn, str(r.get("call_id"))) not in shown_calls]
        if loose:
            last = max((k for k, m in enumerate(turns.get(turn, []))
                        if m.get("role") == "assistant"), default=len(msgs))
            msgs.insert(last, '<div class="loose-tools">' + "".join(loose) + "</div>")
        notes = at_turn.get(turn, [])
        out.append(f'<li class="turn" data-turn="{turn}"><div class="turn-no">turn {turn}</div>'
                   + "".join(msgs)
                   + (f'<div class="at-turn">{"".join(notes)}</div>' if notes else "")
                   + "</li>")
    end = []
    if at_turn.get(None):
        end.append('<h5>Without a turn</h5><div class="at-turn">' + "".join(at_turn[None])
                   + "</div>")
    pooled = [i for i in trace.intents if i.get("pooled_from")]
    if pooled:
        end.append("<h5>Pooled from earlier sessions of the group</h5>"
                   '<div class="at-turn">' + "".join(
                       _intent_html(i).replace("</div>", f' <span class="dim">from '
                                               f'{esc(i["pooled_from"])}</span></div>', 1)
                       for i in pooled) + "</div>")
    if trace.checklist:
        end.append("<h5>Checklist (graded at the end of the session)</h5>"
                   + _checklist_html(trace.checklist))
    cut = trace.messages_total - len(trace.messages)
    meta = [f"<code>{esc(s['session_id'])}</code>", f"episode {esc(s.get('episode'))}",
            f"repeat {esc(s.get('repeat'))}", esc(s.get("protocol"))]
    if s.get("style"):
        meta.append(f"style {esc(s['style'])}")
    if s.get("ablation"):
        meta.append(f"variant {esc(s['ablation'])}")
    if s.get("termination"):
        meta.append(f"ended: {esc(s['termination'])}")
    err = f'<p class="error">error: {esc(s["error"])}</p>' if s.get("error") else ""
    flag = " flagged" if trace.flagged else ""
    return (f'<details class="session{flag}" id="{session_anchor(trace.key)}"{" open" * open_}>'
            f'<summary>{_summary(s)}</summary><div class="session-body">'
            f'<p class="meta">{" · ".join(meta)}</p>{err}{panel}'
            + (f'<ol class="transcript">{"".join(out)}</ol>' if out
               else '<p class="empty">No messages recorded.</p>')
            + (f'<p class="cut">{cut:,} later messages not shown.</p>' if cut > 0 else "")
            + "".join(end) + "</div></details>")


def _summary(s: dict[str, Any]) -> str:
    return (f"{_badge('ss', s.get('status'))} <b>{esc(s.get('name'))}</b>"
            f' <span class="dim">r{esc(s.get("repeat"))}</span>'
            f' <span class="chips">{metric_chips(s)}</span>')
