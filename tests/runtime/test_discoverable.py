"""Discoverable tools (issue 24, item 4): locked tools are not offered until the agent calls
the unlock tool with their name; then the next model request offers them, calls to them run,
and the unlock is recorded (a `tool_calls` row and `sessions.extra.unlocked`). Compile
mistakes are located."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.compiler import compile_pack
from benchpack.runtime.runner import RunOptions, run_plan

PACK = """\
benchpack: 1
name: disc-case
personas: [{id: ana, profile: {role: customer}}]
tools:
  - name: schedule_technician
    description: Book a technician visit.
    parameters: {type: object, properties: {day: {type: string}}, required: [day]}
    impl: {kind: static, result: {booked: true}}
  - name: line_status
    description: The line's status.
    impl: {kind: static, result: {status: down}}
services:
  - name: crm
    tables: {tickets: {rows: [{id: T1}]}}
    operations: [{name: get_ticket, kind: get, table: tickets}]
environments:
  - id: desk
    builtin_tools: []
    tools: [line_status]
    discoverable:
      tools: [schedule_technician]
episodes:
  - id: e
    persona: ana
    environment: desk
    sessions:
      - id: s
        protocol: verified_outcome
        request: My internet is down, send someone.
"""


def _compile(tmp_path: Path, text: str = PACK) -> tuple[Any, dict[str, Any]]:
    pack = tmp_path / "pack"
    pack.mkdir(parents=True, exist_ok=True)
    (pack / "pack.yaml").write_text(text, encoding="utf-8")
    res = compile_pack(pack, tmp_path / "plan", use_cache=False)
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text(encoding="utf-8")) \
        if res.ok else {}
    return res, plan


def test_locked_tools_are_in_the_plan_but_not_offered(tmp_path: Path) -> None:
    res, plan = _compile(tmp_path)
    assert res.ok, [d.format() for d in res.diagnostics]
    assert not any("`schedule_technician`" in d.message for d in res.diagnostics)  # used
    s = next(iter(plan["sessions"].values()))
    assert s["tools"] == ["line_status", "unlock_tool"]
    assert plan["environments"]["desk"]["discoverable"] == ["schedule_technician"]
    assert plan["tools"]["schedule_technician"]["impl"]["kind"] == "static"
    assert plan["tools"]["unlock_tool"]["impl"] == {"kind": "unlock"}
    # the unlock tool names nothing: finding the name is the agent's work
    assert "schedule_technician" not in plan["tools"]["unlock_tool"]["description"]
    _, plan2 = _compile(tmp_path / "b", PACK.replace(
        "Book a technician visit.", "Book a technician visit (any day)."))
    assert next(iter(plan2["sessions"].values()))["fingerprint"] != s["fingerprint"]


def test_mistakes_are_located(tmp_path: Path) -> None:
    text = PACK.replace("tools: [schedule_technician]",
                        "tools: [schedule_technican, crm__get_ticket]")
    res, _ = _compile(tmp_path, text)
    lines = [d.format() for d in res.diagnostics]
    assert not res.ok
    assert any("pack.yaml:21:15: error E202 unknown tool `schedule_technican` in `discoverable`"
               in t and "did you mean `schedule_technician`" in t for t in lines), lines
    assert any("pack.yaml:21:35: error E241 discoverable tool `crm__get_ticket`" in t
               for t in lines), lines
    res, _ = _compile(tmp_path / "c", PACK.replace(
        "      tools: [schedule_technician]",
        "      tools: [schedule_technician]\n      unlock_tool: line_status"))
    assert any("error E214 tool name `line_status` is already used" in d.format()
               for d in res.diagnostics), [d.format() for d in res.diagnostics]


def test_the_agent_unlocks_a_tool_and_then_uses_it(fake_openai: FakeOpenAI,
                                                   tmp_path: Path) -> None:
    res, _ = _compile(tmp_path)
    assert res.ok
    steps = iter([
        ("schedule_technician", {"day": "monday"}),  # not unlocked yet: an unknown tool
        ("unlock_tool", {"tool_name": "reboot_modem"}),  # nothing of that name
        ("unlock_tool", {"tool_name": "schedule_technician"}),
        ("schedule_technician", {"day": "monday"}),
    ])

    def agent(body: dict[str, Any]) -> Any:
        step = next(steps, None)
        if step is None:
            return "A technician comes on Monday."
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"c{len(body['messages'])}", "type": "function",
            "function": {"name": step[0], "arguments": json.dumps(step[1])}}]}

    fake_openai.route("agent-model", agent)
    summary = run_plan(RunOptions(
        plan=tmp_path / "plan", agent="litellm:openai/agent-model",
        api_base=fake_openai.base_url, db=tmp_path / "b.duckdb", progress=False,
        cache_dir=tmp_path / "cache", max_retries=0, run_id="r"))
    assert summary.errors == 0
    offered = [[t["function"]["name"] for t in r.get("tools", [])] for r in fake_openai.requests]
    assert offered == [["line_status", "unlock_tool"]] * 3 + \
        [["line_status", "unlock_tool", "schedule_technician"]] * 2
    con = duckdb.connect(str(tmp_path / "b.duckdb"), read_only=True)
    rows = con.execute("SELECT tool_name, error, result, call_id FROM tool_calls ORDER BY seq"
                       ).fetchall()
    extra = json.loads(con.execute("SELECT extra FROM sessions").fetchone()[0])
    con.close()
    assert [r[0] for r in rows] == ["schedule_technician", "unlock_tool", "unlock_tool",
                                    "schedule_technician"]
    assert rows[0][1].startswith("unknown tool `schedule_technician`; available tools: "
                                 "line_status, unlock_tool")
    assert rows[1][1] == ("there is no tool `reboot_modem` to unlock; check the exact name in "
                          "the documentation")
    assert rows[2][1] is None and json.loads(rows[2][2])["status"] == "unlocked"
    assert rows[3][1] is None and json.loads(rows[3][2]) == {"booked": True}
    assert extra["unlocked"] == [{"tool": "schedule_technician", "turn": 1, "step": 3,
                                  "call_id": rows[2][3]}]


def test_nothing_unlocked_leaves_no_trace(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    _compile(tmp_path)
    fake_openai.route("agent-model", lambda body: "Done.")
    run_plan(RunOptions(
        plan=tmp_path / "plan", agent="litellm:openai/agent-model",
        api_base=fake_openai.base_url, db=tmp_path / "b.duckdb", progress=False,
        cache_dir=tmp_path / "cache", max_retries=0, run_id="r"))
    con = duckdb.connect(str(tmp_path / "b.duckdb"), read_only=True)
    extra = con.execute("SELECT extra FROM sessions").fetchone()[0]
    con.close()
    assert "unlocked" not in json.loads(extra or "{}")


def test_a_built_in_tool_can_be_discoverable(tmp_path: Path) -> None:
    res, plan = _compile(tmp_path, PACK.replace("    builtin_tools: []\n",
                                                "    builtin_tools: [read_file, glob]\n")
                         .replace("tools: [schedule_technician]",
                                  "tools: [schedule_technician, read_file]"))
    assert res.ok, [d.format() for d in res.diagnostics]
    s = next(iter(plan["sessions"].values()))
    assert s["tools"] == ["glob", "line_status", "unlock_tool"]
    assert plan["environments"]["desk"]["discoverable"] == ["schedule_technician", "read_file"]
