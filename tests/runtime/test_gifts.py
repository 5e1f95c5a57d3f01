"""Tools the agent gives to the user (issue 24, item 4; `discoverable.user_tools`), through
real runs of the `dual_control` pack with the phone's airplane-mode switch held back until
the agent gives it: the user may call it only after the give (before, an error result the
state check sees), an LLM user is offered it from its next request after the give, and the
give is recorded (a `tool_calls` row and `sessions.extra.given`). Compile mistakes are
located."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.compiler import compile_pack
from benchpack.runtime.runner import RunOptions, run_plan
from benchpack.runtime.sandbox import find_bwrap
from conftest import store_rows

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "dual_control"
needs_bwrap = pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap is not available")

GIVE = "    discoverable: {user_tools: [toggle_airplane_mode]}\n"
GOLD_GIVE = ("            - {id: give, tool: give_tool, args: {tool_name: "
             "toggle_airplane_mode}}\n")


def _pack(tmp: Path, discoverable: str = GIVE, gold: bool = True) -> Path:
    pack = tmp / "pack"
    shutil.copytree(FIXTURE, pack)
    text = (pack / "pack.yaml").read_text(encoding="utf-8")
    text = text.replace("    user_toolsets: [tools/phone.py]\n",
                        "    user_toolsets: [tools/phone.py]\n" + discoverable)
    if gold:
        text = text.replace("            - {id: resume, tool: resume_line, args: {line_id: L1}}\n",
                            "            - {id: resume, tool: resume_line, args: {line_id: L1}}\n"
                            + GOLD_GIVE)
    (pack / "pack.yaml").write_text(text, encoding="utf-8")
    return pack


def _compile(tmp: Path, **kw: object) -> tuple[object, dict[str, object]]:
    res = compile_pack(_pack(tmp, **kw), tmp / "plan", use_cache=False)  # type: ignore[arg-type]
    plan = json.loads((tmp / "plan" / "plan.json").read_text(encoding="utf-8")) if res.ok \
        else {}
    return res, plan


def _agent(tmp: Path, give: bool) -> Path:
    calls = "[{name: resume_line, args: {line_id: L1}}" + (
        ", {name: give_tool, args: {tool_name: toggle_airplane_mode}}]" if give else "]")
    path = tmp / ("give.yaml" if give else "nogive.yaml")
    path.write_text("sessions:\n  no-internet:\n    - tool_calls: " + calls + "\n"
                    "      say: I resumed line L1. Please switch airplane mode off.\n"
                    "    - say: Great, you are all set.\n", encoding="utf-8")
    return path


def _run(tmp: Path, agent: Path, **kw: object) -> Path:
    db = tmp / f"{agent.stem}.duckdb"
    run_plan(RunOptions(plan=tmp / "plan", agent=f"scripted:{agent}", judge="rules", db=db,
                        run_id="r", progress=False, cache_dir=tmp / "cache",
                        allow_python=True, sessions=["no-internet"], **kw))  # type: ignore[arg-type]
    return db


def test_the_give_tool_is_the_agents_and_the_tool_stays_the_users(tmp_path: Path) -> None:
    res, plan = _compile(tmp_path)
    assert res.ok, [d.format() for d in res.diagnostics]  # type: ignore[attr-defined]
    env = plan["environments"]["desk"]  # type: ignore[index]
    assert env["user_discoverable"] == ["toggle_airplane_mode"]
    assert env["user_tools"] == ["check_status_bar", "toggle_airplane_mode"]
    s = next(iter(plan["sessions"].values()))  # type: ignore[attr-defined]
    assert s["tools"] == ["get_line", "resume_line", "give_tool"]
    give = plan["tools"]["give_tool"]  # type: ignore[index]
    assert give["impl"] == {"kind": "give"}
    # the give tool names nothing: finding the name is the agent's work
    assert "airplane" not in give["description"]
    # without the field, the plan has no trace of it (plans stay byte for byte)
    res2, plan2 = _compile(tmp_path / "b", discoverable="", gold=False)
    assert res2.ok  # type: ignore[attr-defined]
    assert "user_discoverable" not in plan2["environments"]["desk"]  # type: ignore[index]
    assert "give_tool" not in plan2["tools"]  # type: ignore[operator]


@pytest.mark.parametrize(("field", "where", "message", "hint"), [
    ("{user_tools: [toggle_airplane_mod]}", "toggle", "unknown user tool "
     "`toggle_airplane_mod` in `discoverable.user_tools`", "did you mean `toggle_airplane_mode`"),
    ("{user_tools: [resume_line]}", "resume", "`resume_line` is one of the agent's tools, "
     "not the user's, in `discoverable.user_tools`", "list it under `discoverable.tools`"),
    ("{tools: [toggle_airplane_mode]}", "toggle", "`toggle_airplane_mode` is one of the user's "
     "tools, not the agent's, in `discoverable.tools`", "list it under "
     "`discoverable.user_tools`"),
    ("{user_tools: [check_status_bar], give_tool: get_line}", "get_line", "E214 tool name "
     "`get_line` is already used", "rename one of them"),
    ("{user_tools: [check_status_bar], give_tool: opener, unlock_tool: opener, tools: "
     "[get_line]}", "opener", "E214 tool name `opener` is already used by an unlock tool",
     ""),
    ("{}", "discoverable", "E102 `discoverable` locks no tool", "under `user_tools`"),
])
def test_mistakes_are_located(tmp_path: Path, field: str, where: str, message: str,
                              hint: str) -> None:
    """`where`: the text the location points at (its first occurrence)."""
    res, _ = _compile(tmp_path, discoverable=f"    discoverable: {field}\n", gold=False)
    lines = [d.format() for d in res.diagnostics]  # type: ignore[attr-defined]
    assert not res.ok  # type: ignore[attr-defined]
    col = 19 + field.index(where) if where != "discoverable" else 5
    hit = [t for t in lines if message in t]
    assert hit, lines
    assert hit[0].startswith(f"{tmp_path}/pack/pack.yaml:30:{col}: error"), hit
    assert hint in hit[0], hit


def test_a_user_tool_without_user_toolsets_says_how(tmp_path: Path) -> None:
    res, _ = _compile(tmp_path, discoverable="    discoverable: {user_tools: [x]}\n", gold=False)
    assert not res.ok  # type: ignore[attr-defined]
    pack = tmp_path / "pack" / "pack.yaml"
    pack.write_text(pack.read_text(encoding="utf-8").replace(
        "    user_toolsets: [tools/phone.py]\n", ""), encoding="utf-8")
    res = compile_pack(tmp_path / "pack", tmp_path / "p2", use_cache=False)
    lines = [d.format() for d in res.diagnostics]
    assert any("unknown user tool `x`" in t and "give the environment `user_toolsets" in t
               for t in lines), lines


@needs_bwrap
def test_the_user_acts_only_after_the_give(tmp_path: Path) -> None:
    res, _ = _compile(tmp_path)
    assert res.ok  # type: ignore[attr-defined]
    # the agent gives the switch, then asks: the rules user's call works, everything passes
    db = _run(tmp_path, _agent(tmp_path, give=True))
    (score, extra), = store_rows(db, "SELECT score, extra FROM sessions")
    extra = json.loads(str(extra))
    assert score == 1.0, extra["reward"]
    calls = store_rows(db, "SELECT tool_name, side, error, call_id, turn FROM tool_calls "
                      "ORDER BY seq")
    assert [c[:3] for c in calls] == [("resume_line", "agent", None),
                                      ("give_tool", "agent", None),
                                      ("toggle_airplane_mode", "user", None)]
    assert extra["given"] == [{"tool": "toggle_airplane_mode", "turn": 1, "step": 2,
                               "call_id": calls[1][3]}]
    # never given: the same user's call is an error result and the phone stays in airplane
    # mode — the state, the actions and the user-side assertion all fail
    db = _run(tmp_path, _agent(tmp_path, give=False))
    (score, extra), = store_rows(db, "SELECT score, extra FROM sessions")
    extra = json.loads(str(extra))
    assert score == 0.0
    assert extra["reward"]["components"] == {"state": 0.0, "actions": 0.0,
                                             "env_assertions": 0.0}
    assert "given" not in extra
    assert store_rows(db, "SELECT tool_name, side, error FROM tool_calls ORDER BY seq") == [
        ("resume_line", "agent", None),
        ("toggle_airplane_mode", "user", "the tool `toggle_airplane_mode` has not been given "
         "to you yet: the agent has to give it to you first")]


def _sim(body: dict[str, object]) -> object:
    msgs = body["messages"]
    assert isinstance(msgs, list)
    last = msgs[-1]
    if last["role"] == "tool":
        return "OK, I switched airplane mode off."
    if "anything else" in str(last["content"]):
        return "My phone still has no internet."
    if last["role"] == "user" and "airplane" in str(last["content"]):
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "u1", "type": "function",
             "function": {"name": "toggle_airplane_mode", "arguments": "{}"}}]}
    return "Thanks! ###STOP###"


@needs_bwrap
def test_an_llm_user_is_offered_the_tool_from_its_next_request(
        fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    res, _ = _compile(tmp_path)
    assert res.ok  # type: ignore[attr-defined]
    fake_openai.route("sim-model", _sim)
    agent = tmp_path / "late.yaml"  # gives the switch in its second turn
    agent.write_text(
        "sessions:\n  no-internet:\n"
        "    - tool_calls: [{name: resume_line, args: {line_id: L1}}]\n"
        "      say: I resumed line L1. Is there anything else?\n"
        "    - tool_calls: [{name: give_tool, args: {tool_name: toggle_airplane_mode}}]\n"
        "      say: Please switch airplane mode off.\n"
        "    - say: Great, you are all set.\n", encoding="utf-8")
    db = _run(tmp_path, agent, simulator="litellm:openai/sim-model",
              api_base=fake_openai.base_url, max_retries=0)
    assert store_rows(db, "SELECT score FROM sessions") == [(1.0,)]
    sims = [r for r in fake_openai.requests if r["model"] == "sim-model"]
    offered = [sorted(t["function"]["name"] for t in r.get("tools") or []) for r in sims]
    # the reply to turn 1 (before the give), then to turn 2 (after it), the tool's result,
    # the goodbye
    assert offered == [["check_status_bar"]] + [["check_status_bar",
                                                 "toggle_airplane_mode"]] * 3
