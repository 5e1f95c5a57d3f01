"""Every model call's prompt and raw reply are stored (issue 17): content-addressed in `blobs`,
a growing conversation stored as links to its previous prompt, API keys masked, schema-5 stores
migrated and read as "not stored"; and end to end through litellm, what the fake server received
is what the store gives back."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fake_openai import FakeOpenAI, fake_openai_fixture, list_files_agent  # noqa: F401

from benchpack.compiler import compile_pack
from benchpack.reports.calltexts import call_text, decode_prompt
from benchpack.runtime.cache import canonical_json
from benchpack.runtime.calltexts import CHAIN_MAX, CallText, encode_calls
from benchpack.runtime.redact import Redactor
from benchpack.runtime.runner import RunOptions, run_plan
from benchpack.runtime.store import SCHEMA_VERSION, SessionRows, Store

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-proj-LEAKME0123456789abcdef"


def _msg(role: str, text: str) -> str:
    return canonical_json({"role": role, "content": text})


def _conversation(turns: int) -> list[CallText]:
    """An agent whose history grows by two messages a call, and a judge asked the same thing
    twice."""
    history = [_msg("system", "你是助手 / you are an assistant")]
    calls = []
    for n in range(turns):
        history = [*history, _msg("user", f"turn {n}")]
        calls.append(CallText(len(calls), "agent", None, list(history), '[{"name":"t"}]',
                              _msg("assistant", f"reply {n}")))
        history = [*history, _msg("assistant", f"reply {n}")]
    for _ in range(2):
        calls.append(CallText(len(calls), "judge", "rubric", [_msg("user", "judge this")],
                              None, _msg("assistant", '{"scores": []}')))
    return calls


def test_round_trip_chains_and_dedup() -> None:
    calls = _conversation(40)
    rows, blobs = encode_calls(calls, lambda s: s)
    fetch = blobs.get
    for call, (seq, prompt, reply) in zip(calls, rows, strict=True):
        assert seq == call.seq and prompt is not None and reply is not None
        messages, tools = decode_prompt(prompt, fetch)
        assert messages == [json.loads(m) for m in call.messages or []]
        assert tools == ([{"name": "t"}] if call.role == "agent" else None)
        assert json.loads(blobs[reply]) == json.loads(call.reply or "")
    # the two identical judge calls share their blobs
    assert rows[-1][1:] == rows[-2][1:]
    # growth, by hand: call n sends 2n + 2 messages, so whole prompts would hold
    # Σ(2n + 2) = 1,640 agent messages (+ 2 judge ones). Linked, a chain of CHAIN_MAX + 1 = 17
    # calls stores its last call's messages once: calls 0–16 (34), 17–33 (68: a new chain
    # starts whole), 34–39 (80), and the judge prompt once: 183.
    stored = sum(len(json.loads(t)["messages"]) for t in blobs.values()
                 if t.startswith('{"base"'))
    assert sum(len(c.messages or []) for c in calls) == 1642
    assert CHAIN_MAX == 16 and stored == 34 + 68 + 80 + 1


def test_broken_chain_is_an_error_not_a_shorter_prompt() -> None:
    rows, blobs = encode_calls(_conversation(3), lambda s: s)
    first = rows[0][1]
    assert first is not None
    del blobs[first]
    with pytest.raises(LookupError, match="missing"):
        decode_prompt(str(rows[2][1]), blobs.get)


def _store_with_calls(db: Path, redactor: Redactor | None = None) -> None:
    store = Store(db, redactor=redactor)
    calls = _conversation(3)
    calls[1].messages = [*(calls[1].messages or []), _msg("user", f"my key is {KEY}")]
    calls[1].reply = _msg("assistant", f"noted: {json.dumps(KEY)}")
    store.write_now(SessionRows("r", "s", 0, {"run_id": "r", "session_id": "s", "repeat": 0,
                                              "status": "finished"},
                                call_texts=calls))
    store.close()


def test_keys_never_reach_the_store(tmp_path: Path) -> None:
    db = tmp_path / "bench.duckdb"
    _store_with_calls(db, Redactor([KEY]))
    con = duckdb.connect(str(db), read_only=True)
    everything = "\n".join(str(r[0]) for r in con.execute("SELECT data FROM blobs").fetchall())
    assert KEY not in everything and KEY[3:] not in everything
    text = call_text(con, "r", "s", 0, 1)
    assert text.stored and text.messages is not None
    assert text.messages[-1]["content"] == "my key is ***"
    assert text.reply["content"] == 'noted: "***"'
    con.close()


def test_schema_5_store_migrates_and_says_not_stored(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    Store(db).close()
    con = duckdb.connect(str(db))
    con.execute("DROP TABLE llm_call_texts")
    con.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    con.execute("INSERT INTO llm_calls (run_id, session_id, repeat, seq, role) "
                "VALUES ('r', 's', 0, 0, 'judge')")
    con.close()
    con = duckdb.connect(str(db), read_only=True)
    assert call_text(con, "r", "s", 0, 0).stored is False  # read as it is, without the table
    con.close()
    Store(db).close()  # a writer migrates it
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
        str(SCHEMA_VERSION),)
    assert SCHEMA_VERSION >= 6  # later versions migrate a schema-5 store the same way
    assert call_text(con, "r", "s", 0, 0).stored is False
    con.close()


# --------------------------------------------------------------------------- end to end

IDS = re.compile(r"- id `([^`]+)`")


def _judge(body: dict[str, Any]) -> str:
    text = str(body["messages"][-1]["content"])
    ids = IDS.findall(text)
    if '"scores"' in text:
        return json.dumps({"scores": [{"id": i, "score": "YES", "reason": "ok"} for i in ids]})
    return json.dumps({"decisions": [{"id": i, "decision": "NO"} for i in ids]})


def _simulator(body: dict[str, Any]) -> str:
    return "<message>\nOne more thing you should know before you go on.\n</message>"


def _sent(messages: Any) -> str:
    """As the server sees them: litellm drops `"content": null` on the way."""
    return canonical_json([{k: v for k, v in m.items() if v is not None} for m in messages])


def test_run_stores_what_the_server_received(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.route("agent-model", list_files_agent).route("judge-model", _judge) \
        .route("sim-model", _simulator)
    plan = tmp_path / "plan"
    assert compile_pack(ROOT / "taskpacks" / "pharmacist-week", plan, use_cache=False).ok
    db = tmp_path / "bench.duckdb"
    res = run_plan(RunOptions(
        plan=plan, agent="litellm:openai/agent-model", simulator="litellm:openai/sim-model",
        judge="litellm:openai/judge-model", api_base=fake_openai.base_url, db=db,
        progress=False, cache_dir=tmp_path / "cache", max_retries=0, run_id="first"))
    assert res.errors == 0
    con = duckdb.connect(str(db), read_only=True)
    calls = con.execute("SELECT session_id, repeat, seq, role FROM llm_calls "
                        "ORDER BY started_at, seq").fetchall()
    assert len(calls) == len(fake_openai.requests) > 0
    received = {_sent(b["messages"]) for b in fake_openai.requests}
    by_role: dict[str, int] = {}
    for sid, repeat, seq, role in calls:
        text = call_text(con, "first", sid, repeat, seq)
        assert text.stored, (sid, seq)
        assert _sent(text.messages) in received, (sid, seq, role)
        assert text.reply is not None and "content" in text.reply
        by_role[role] = by_role.get(role, 0) + 1
    assert set(by_role) == {"agent", "simulator", "judge"}
    con.close()
