"""`bench view` (issue 17): a model call's prompt and reply shown on demand (and "not stored"
for a store that kept none), and a 500-turn transcript paginated by the server. Each case
builds its own small store; the routes over the reference packs' store are in
`test_view.py`."""

from __future__ import annotations

import html as htmllib
import re
from pathlib import Path

import duckdb
from store_fixture import HOSTILE
from view_client import local_client

from benchpack.reports.view.app import create_app

# --------------------------------------------------------------------------- model calls

KEY = "sk-proj-VIEWLEAK0123456789"


def calls_store(db: Path) -> Path:
    """One session with a simulator, an agent and a judge call (prompts stored), and one call
    recorded without them (an agent reporting its own: "not stored")."""
    from benchpack.runtime.cache import canonical_json
    from benchpack.runtime.calltexts import CallText
    from benchpack.runtime.redact import Redactor
    from benchpack.runtime.store import SessionRows, Store

    def m(role: str, text: str) -> str:
        return canonical_json({"role": role, "content": text})

    sess = {"run_id": "r", "session_id": "s", "repeat": 0, "name": "s", "status": "finished",
            "protocol": "trigger_rubric", "turns": 1}
    calls = [("simulator", "user_turn"), ("agent", None), ("judge", "trigger"),
             ("agent", None)]
    rows = [("r", "s", 0, k, role, purpose, "m", f"h{k}", 10, 2, None, 0.1, False, None, 1,
             1, 0.0) for k, (role, purpose) in enumerate(calls)]
    texts = [
        CallText(0, "simulator", "user_turn", [m("system", "你是用户 <b>x</b>")], None,
                 m("assistant", "帮我订票")),
        CallText(1, "agent", None, [m("system", "sys"), m("user", f"帮我订票 {KEY}")],
                 '[{"name":"book"}]', m("assistant", HOSTILE)),
        CallText(2, "judge", "trigger", [m("user", "Grade: " + HOSTILE)], None, None),
    ]
    store = Store(db, redactor=Redactor([KEY]))
    store.write_now(SessionRows("r", "s", 0, sess, {
        "llm_calls": rows,
        "messages": [("r", "s", 0, 0, 1, "user", "帮我订票", None, None, None),
                     ("r", "s", 0, 1, 1, "assistant", "好的", None, None, None)],
        "turns": [("r", "s", 0, 1, "帮我订票", "好的", 1, 0, "answer", 0.0, 0.5)],
    }, call_texts=texts))
    store.close()
    return db


def test_model_call_prompt_and_reply_on_demand(tmp_path: Path) -> None:
    client = local_client(create_app(calls_store(tmp_path / "c.duckdb")))
    page = client.get("/session?run=r&session=s&repeat=0").text
    links = re.findall(r'data-src="(/call\?[^"]+)"', page)
    assert len(links) == 4
    # not in the page itself: fetched when unfolded
    assert "你是用户" not in page and "Grade:" not in page
    frag = client.get(htmllib.unescape(links[1]), headers={"X-Fragment": "1"})
    assert frag.status_code == 200 and "<html" not in frag.text
    assert "帮我订票 ***" in frag.text and KEY not in frag.text
    assert "1 tool spec offered" in frag.text and "prompt: 2 messages" in frag.text
    assert HOSTILE not in frag.text and "&lt;script&gt;" in frag.text
    sim = client.get(htmllib.unescape(links[0]), headers={"X-Fragment": "1"}).text
    assert "你是用户 &lt;b&gt;x&lt;/b&gt;" in sim and "帮我订票" in sim
    judge = client.get(htmllib.unescape(links[2]), headers={"X-Fragment": "1"}).text
    assert "no reply (the call failed" in judge
    assert "not stored" in client.get(htmllib.unescape(links[3]),
                                      headers={"X-Fragment": "1"}).text
    whole = client.get(htmllib.unescape(links[1]))  # the link without JS: a page
    assert "<html" in whole.text and "Model call 1" in whole.text
    assert client.get("/call?run=r&session=s&repeat=0&seq=x").status_code == 400


def test_model_calls_of_a_schema_5_store_say_not_stored(tmp_path: Path) -> None:
    db = calls_store(tmp_path / "old.duckdb")
    con = duckdb.connect(str(db))
    con.execute("DROP TABLE llm_call_texts")
    con.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    con.close()
    client = local_client(create_app(db))
    assert client.get("/session?run=r&session=s&repeat=0").status_code == 200
    frag = client.get("/call?run=r&session=s&repeat=0&seq=1", headers={"X-Fragment": "1"})
    assert frag.status_code == 200 and "not stored" in frag.text


# --------------------------------------------------------------------------- 500 turns

LONG_TURNS = 500


def long_store(db: Path) -> Path:
    """One 500-turn session: a question and an answer a turn, intents decided at turns 3 and 250
    and one never (turn NULL), a one-item checklist."""
    from benchpack.runtime.store import SessionRows, Store

    key = ("r", "long", 0)
    messages, turns = [], []
    for t in range(1, LONG_TURNS + 1):
        messages.append((*key, 2 * t, t, "user", f"question {t} 第{t}轮", None, None, None))
        messages.append((*key, 2 * t + 1, t, "assistant", f"answer {t} " + "word " * 40,
                         None, None, None))
        turns.append((*key, t, f"question {t}", f"answer {t}", 1, 0, "answer", 0.0, 0.2))
    intents = [(*key, "i-early", "early intent", "session", "completed", 3, None, None),
               (*key, "i-mid", "mid intent", "session", "inferred", 250, None, None),
               (*key, "i-never", "never intent", "session", "unresolved", None, None, None)]
    store = Store(db)
    store.write_now(SessionRows(*key, {
        "run_id": "r", "session_id": "long", "repeat": 0, "name": "long",
        "protocol": "intent_tracking", "status": "finished", "turns": LONG_TURNS}, {
        "messages": messages, "turns": turns, "intent_status": intents,
        "checklist_results": [(*key, "c1", "checklist item one", "rubric", 1.0, 1.0, None,
                               None, None)]}))
    store.close()
    return db


def test_500_turn_transcript_is_paginated_server_side(tmp_path: Path) -> None:
    client = local_client(create_app(long_store(tmp_path / "long.duckdb")))
    first = client.get("/session?run=r&session=long&repeat=0")
    assert first.status_code == 200
    # the transcript, after the "why this score" panel (which lists every intent)
    html = first.text[first.text.index('class="dim tools"'):]
    assert 'data-part="intents"' in first.text
    assert "question 1 第1轮" in html and "question 100 第100轮" in html
    assert "question 101 " not in html and "question 500 " not in html
    assert "Turns 1–100 of 500" in html
    assert "early intent" in html and "mid intent" not in html
    assert "never intent" in html and "checklist item one" in html  # of no turn: every page
    assert len(first.content) < 250_000, len(first.content)
    third = client.get("/session?run=r&session=long&repeat=0&turns=2").text
    assert "Turns 201–300 of 500" in third and "mid intent" in third
    assert "question 201 " in third and "question 300 " in third
    assert "question 200 " not in third and "question 301 " not in third
    last = client.get("/session?run=r&session=long&repeat=0&turns=4").text
    assert "question 500 第500轮" in last and "checklist item one" in last
    pages = re.findall(r'href="/session\?[^"]*turns=(\d)"', html)
    assert sorted(set(pages)) == ["1", "2", "3", "4"]
    # every turn is on exactly one page
    seen = [n for k in range(5) for n in re.findall(
        r"question (\d+) 第", client.get(f"/session?run=r&session=long&repeat=0&turns={k}").text)]
    assert sorted(map(int, seen)) == list(range(1, LONG_TURNS + 1))
