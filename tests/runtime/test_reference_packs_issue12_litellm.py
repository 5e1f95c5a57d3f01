"""The issue-12 reference packs with a litellm agent against the local OpenAI-compatible server:
the model's tool calls run through bookshop-service's sandboxed python tools and claw-ops-desk's
HTTP service, land in `tool_calls`, and are scored like a scripted agent's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.compiler import compile_pack
from benchpack.runtime.runner import RunOptions, run_plan

ROOT = Path(__file__).resolve().parents[2]


def calling(calls: list[tuple[str, dict[str, Any]]], reply: str) -> Any:
    """A model that answers a user message with `calls` (one assistant message, parallel tool
    calls) and the tool results with `reply`."""

    def answer(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["role"] == "user":
            return {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{i}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}}
                for i, (name, args) in enumerate(calls)]}
        return reply
    return answer


def _run(pack: str, session: str, fake: FakeOpenAI, tmp_path: Path) -> duckdb.DuckDBPyConnection:
    out = tmp_path / "plan"
    res = compile_pack(ROOT / "taskpacks" / pack, out, use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    db = tmp_path / "bench.duckdb"
    summary = run_plan(RunOptions(
        plan=out, agent="litellm:openai/agent-model", simulator="rules", judge="rules",
        api_base=fake.base_url, db=db, progress=False, cache_dir=tmp_path / "cache",
        max_retries=0, allow_python=True, sessions=[f"*{session}*"], run_id="r"))
    assert summary.errors == 0 and summary.finished == summary.sessions_total == 1
    return duckdb.connect(str(db), read_only=True)


def test_bookshop_through_litellm_python_tools(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.route("agent-model", calling([
        ("find_user_id_by_email", {"email": "lena.fischer72@mailbox.example"}),
        ("get_order_details", {"order_id": "#B20417"}),
        ("cancel_pending_order", {"order_id": "#B20417", "reason": "ordered by mistake"})],
        "Order #B20417 is cancelled; the 52.00 goes back to your credit card."))
    con = _run("bookshop-service", "cancel-by-mistake", fake_openai, tmp_path)
    try:
        calls = con.execute("SELECT tool_name, error, result FROM tool_calls WHERE run_id = 'r' "
                            "ORDER BY seq").fetchall()
        assert [c[0] for c in calls] == ["find_user_id_by_email", "get_order_details",
                                         "cancel_pending_order"]
        assert all(c[1] is None for c in calls)
        assert json.loads(calls[2][2])["status"] == "cancelled"   # the tool's own answer
        score, passed, extra = con.execute("SELECT score, passed, extra FROM sessions "
                                           "WHERE run_id = 'r'").fetchone()
        reward = json.loads(extra)["reward"]
        assert reward["components"] == {"state": 1.0, "actions": 1.0, "communicate": 1.0}
        assert (score, passed) == (1.0, True)
    finally:
        con.close()


def test_claw_desk_through_litellm_http_tools(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.route("agent-model", calling([
        ("desk__get_ticket", {"ticket_id": "TCK-412"}),
        ("desk__update_event", {"event_id": "EV-501", "status": "cancelled"})],
        "I cancelled EV-501 (acrylic signage) because LC-1 is down."))
    con = _run("claw-ops-desk", "laser-outage", fake_openai, tmp_path)
    try:
        calls = con.execute("SELECT tool_name, error, result FROM tool_calls WHERE run_id = 'r' "
                            "ORDER BY seq").fetchall()
        assert [c[0] for c in calls] == ["desk__get_ticket", "desk__update_event"]
        assert all(c[1] is None for c in calls)
        update = json.loads(calls[1][2])
        assert update["request"]["method"] == "PATCH"
        assert update["request"]["path"] == "/calendar/events/EV-501"
        assert update["response"]["status"] == 200
        items = dict(con.execute("SELECT name, value FROM score_components WHERE run_id = 'r' "
                                 "AND kind = 'item'").fetchall())
        assert (items["cancel-mon"], items["cancel-tue"], items["read-before-write"]) == \
            (1.0, 0.0, 1.0)
    finally:
        con.close()
