"""One session's transcript for `bench view`: the HTML report's drill-down (`html.session_html`:
tool calls folded under their call, intent statuses, stage events, trigger verdicts with the
evidence marked in the response, the checklist) with, at each turn, what the page cannot afford
for every session: the turn's latency and steps, and every model call made in it (agent,
simulator, judge) with its tokens, latency, cache hit and error.

A model call's prompt and raw reply (store schema 6, redacted, in `blobs`) are not in the page:
a conversation's prompts repeat it, so a long session's calls would hold its transcript hundreds
of times. Each call links to `/call?…&seq=N`, a fragment the page fetches when the call is
unfolded (`call_html`).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any
from urllib.parse import urlencode

from ..calltexts import CallText
from ..drilldown import SessionTrace
from ..html_common import esc
from ..html_transcript import session_html
from .queries import SessionRows


def _num(v: Any, fmt: str = ",") -> str:
    return "—" if v is None else format(v, fmt)


def _call_link(c: dict[str, Any]) -> str:
    href = "/call?" + urlencode({"run": c.get("run_id"), "session": c.get("session_id"),
                                 "repeat": c.get("repeat"), "seq": c.get("seq")})
    return (f'<details class="calltext" data-src="{esc(href)}"><summary>show</summary>'
            f'<a href="{esc(href)}">prompt and reply</a></details>')


def _turn_meta(t: dict[str, Any], calls: list[dict[str, Any]]) -> str:
    tokens_in = sum(int(c.get("prompt_tokens") or 0) for c in calls)
    tokens_out = sum(int(c.get("completion_tokens") or 0) for c in calls)
    facts = []
    if t:
        if t.get("duration_s") is not None:
            facts.append(f"{float(t['duration_s']):.2f} s")
        if t.get("steps") is not None:
            facts.append(f"{int(t['steps'])} step{'s' * (int(t['steps']) != 1)}")
        if t.get("stop_reason"):
            facts.append(f"stopped: {esc(t['stop_reason'])}")
    if calls:
        facts.append(f"{len(calls)} model call{'s' * (len(calls) != 1)}, "
                     f"{tokens_in:,} tokens in / {tokens_out:,} out")
    if not facts:
        return ""
    out = f'<div class="ann turn-meta"><span class="what">turn</span> {" · ".join(facts)}'
    if calls:
        rows = "".join(
            "<tr>" + "".join(f'<td class="{k}">{v}</td>' for k, v in (
                ("num", esc(c.get("seq"))), ("txt", esc(c.get("role"))),
                ("txt", esc(c.get("purpose"))), ("txt", esc(c.get("model"))),
                ("num", _num(c.get("prompt_tokens"))),
                ("num", _num(c.get("completion_tokens"))),
                ("num", "—" if c.get("latency_s") is None else f"{float(c['latency_s']):.2f} s"),
                ("txt", "cache" if c.get("cache_hit") else ""),
                ("num", esc(c.get("attempts") or "")),
                ("txt", f'<span class="warn">{esc(c["error"])}</span>' if c.get("error")
                 else ""),
                ("txt", f'<code title="prompt hash">{esc(str(c.get("prompt_hash") or "")[:12])}'
                 "</code>"), ("txt", _call_link(c)))) + "</tr>"
            for c in calls)
        out += ('<details class="calls"><summary>model calls</summary><div class="table-wrap">'
                '<table class="calls"><thead><tr><th class="num">#</th><th class="txt">role'
                '</th><th class="txt">purpose</th><th class="txt">model</th><th class="num">in'
                '</th><th class="num">out</th><th class="num">latency</th><th class="txt"></th>'
                '<th class="num">attempts</th><th class="txt">error</th>'
                '<th class="txt">hash</th><th class="txt">prompt and reply</th></tr></thead>'
                '<tbody>' + rows
                + "</tbody></table></div></details>")
    return out + "</div>"


def transcript_html(rows: SessionRows) -> str:
    t = rows.tables
    s = rows.session
    trace = SessionTrace(s, messages=t["messages"], tool_calls=t["tool_calls"],
                         intents=t["intent_status"], triggers=t["triggers"],
                         stages=t["stage_events"], checklist=t["checklist_results"],
                         messages_total=len(t["messages"]),
                         flagged=s.get("status") == "error" or bool(s.get("judge_errors"))
                         or bool(s.get("grader_errors")))
    calls: dict[int | None, list[dict[str, Any]]] = defaultdict(list)
    for c in t["llm_calls"]:
        calls[c.get("turn")].append(c)
    turns = {int(r["turn"]): r for r in t["turns"] if r.get("turn") is not None}
    extra: dict[int, list[str]] = {}
    for n in sorted(set(turns) | {k for k in calls if k is not None}):
        meta = _turn_meta(turns.get(n, {}), calls.get(n, []))
        if meta:
            extra[n] = [meta]
    # each turn an anchor (`#t-N`): the transcript search links to it
    html = _TURN.sub(lambda m: f'{m.group(0)} id="t-{m.group(1)}"',
                     session_html(trace, open_=True, extra=extra))
    loose = calls.get(None, [])
    if loose:  # calls of no turn (the end-of-session judge): after the transcript
        html += ("<h5>Model calls after the last turn</h5>"
                 + _turn_meta({}, loose).replace('<details class="calls">',
                                                 '<details class="calls" open>', 1))
    return html


_TURN = re.compile(r'<li class="turn" data-turn="(-?\d+)"')
TIMELINE_MAX = 2000
"""Events a timeline lists (a page's turns rarely hold more; the rest are counted)."""


def _events(rows: SessionRows) -> list[dict[str, Any]]:
    """Every timed event of the page's turns, and the decisions taken at each turn's end
    (simulator stages, intent statuses, trigger verdicts: stored by turn, not by time)."""
    t = rows.tables
    out: list[dict[str, Any]] = []
    ends: dict[int, float] = {}
    for r in t["turns"]:
        if r.get("started_at") is None:
            continue
        start, dur = float(r["started_at"]), float(r.get("duration_s") or 0.0)
        ends[int(r["turn"])] = start + dur
        out.append({"kind": "turn", "turn": r["turn"], "start": start, "duration": dur,
                    "what": f"turn {r['turn']}" + (f" · {r['steps']} steps"
                                                   if r.get("steps") is not None else "")
                    + (f" · stopped: {r['stop_reason']}" if r.get("stop_reason") else "")})
    for r in t["tool_calls"]:
        if r.get("started_at") is not None:
            out.append({"kind": "tool", "turn": r.get("turn"), "start": float(r["started_at"]),
                        "duration": float(r.get("duration_s") or 0.0),
                        "what": str(r.get("tool_name") or "tool"), "error": r.get("error")})
    for r in t["llm_calls"]:
        if r.get("started_at") is not None:
            out.append({"kind": "model", "turn": r.get("turn"), "start": float(r["started_at"]),
                        "duration": float(r.get("latency_s") or 0.0),
                        "what": " · ".join(str(x) for x in (r.get("role"), r.get("purpose"),
                                                             r.get("model")) if x)
                        + (" · cache" if r.get("cache_hit") else ""),
                        "error": r.get("error")})
    decided = [("stage", e.get("turn"), f"stage {e.get('stage_id')}: {e.get('event')}")
               for e in t["stage_events"]]
    decided += [("intent", i.get("turn"), f"intent {i.get('intent_id')}: {i.get('status')}")
                for i in t["intent_status"] if not i.get("pooled_from")]
    decided += [("trigger", g.get("turn"), f"trigger {g.get('trigger_id')}: "
                 f"{g.get('label') or g.get('judge_error') or '—'}") for g in t["triggers"]]
    for kind, turn, what in decided:
        if turn is not None and int(turn) in ends:
            out.append({"kind": kind, "turn": turn, "start": ends[int(turn)], "duration": 0.0,
                        "what": what})
    order = {"turn": 0, "model": 1, "tool": 2}
    out.sort(key=lambda e: (e["start"], order.get(e["kind"], 3)))
    return out


def timeline_html(rows: SessionRows) -> str:
    """The page's turns as a timeline: each turn, tool call and model call at its offset from
    the first, with its duration as a bar; then what was decided at each turn's end."""
    events = _events(rows)
    if not events:
        return ('<details class="timeline" id="timeline"><summary>Event timeline</summary>'
                '<p class="dim">No timed events stored for these turns.</p></details>')
    t0 = events[0]["start"]
    span = max(max(e["start"] + e["duration"] for e in events) - t0, 1e-9)
    shown = events[:TIMELINE_MAX]
    body = []
    for e in shown:
        left = 100 * (e["start"] - t0) / span
        width = max(100 * e["duration"] / span, 0.4)
        err = f' <span class="warn">{esc(e["error"])}</span>' if e.get("error") else ""
        body.append(f'<tr class="ev-{esc(e["kind"])}"><td class="num">'
                    f'{e["start"] - t0:.3f}</td><td class="num">'
                    + (f'{e["duration"]:.3f}' if e["duration"] else "") + "</td>"
                    f'<td class="num">{esc(e["turn"])}</td><td class="txt">{esc(e["kind"])}</td>'
                    f'<td class="txt">{esc(e["what"])}{err}</td><td class="bar">'
                    f'<span style="left:{left:.2f}%;width:{min(width, 100 - left):.2f}%">'
                    "</span></td></tr>")
    more = (f'<p class="dim">{len(events) - len(shown):,} later events not listed.</p>'
            if len(events) > len(shown) else "")
    return ('<details class="timeline" id="timeline"><summary>Event timeline: '
            f'{len(events):,} events over {span:.1f} s (turns, model and tool calls, simulator '
            'and judge decisions at the end of their turn)</summary>'
            '<div class="table-wrap"><table class="timeline"><thead><tr>'
            '<th class="num">at (s)</th><th class="num">took (s)</th><th class="num">turn</th>'
            '<th class="txt">event</th><th class="txt">what</th><th class="bar"></th></tr>'
            "</thead><tbody>" + "".join(body) + "</tbody></table></div>" + more + "</details>")


NOT_STORED = ("not stored: the store was written before benchpack kept prompts (schema 6), or "
              "the call was recorded without them (an imported run, an agent reporting its own "
              "calls)")


def _content(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)
    return f"<pre>{esc(text)}</pre>"


def _message_html(m: Any) -> str:
    if not isinstance(m, dict):
        return f'<li class="msg">{_content(m)}</li>'
    role = esc(m.get("role") or "?")
    extra = {k: v for k, v in m.items() if k not in ("role", "content") and v is not None}
    return (f'<li class="msg {role}"><span class="who">{role}</span>{_content(m.get("content"))}'
            + (_content(extra) if extra else "") + "</li>")


def call_html(text: CallText) -> str:
    """One call's prompt (every message, the tool specs folded) and raw reply."""
    if not text.stored:
        return f'<p class="dim calltext">{esc(NOT_STORED)}</p>'
    out = '<div class="calltext">'
    if text.messages is not None:
        out += (f"<h6>prompt: {len(text.messages)} message{'s' * (len(text.messages) != 1)}"
                "</h6><ol class=\"prompt\">" + "".join(map(_message_html, text.messages))
                + "</ol>")
        if text.tools:
            out += (f"<details><summary>{len(text.tools)} tool spec"
                    f"{'s' * (len(text.tools) != 1)} offered</summary>{_content(text.tools)}"
                    "</details>")
    out += "<h6>reply</h6>" + (f'<ol class="prompt">{_message_html(text.reply)}</ol>'
                               if text.reply is not None else
                               '<p class="dim">no reply (the call failed: see its error)</p>')
    return out + "</div>"
