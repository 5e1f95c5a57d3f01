"""Dual control, initial states and environment assertions (issue 24) through real runs of the
`dual_control` pack (a help desk whose customer has tools on their own phone): the user's own
tool calls are made and recorded with their side, the session starts from patched tables,
replayed set-up calls and a prior conversation, the state check and env assertions cover both
sides, and agents that do nothing or only half the work score 0."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.compiler import compile_pack
from benchpack.runtime.runner import RunOptions, run_plan
from benchpack.runtime.sandbox import find_bwrap
from benchpack.runtime.user_side import merge, patch_tables
from conftest import bench_run, store_rows

PACK = Path(__file__).resolve().parents[1] / "fixtures" / "dual_control"
needs_bwrap = pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap is not available")


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dc") / "plan"
    result = compile_pack(PACK, out, use_cache=False)
    assert result.ok, [d.format() for d in result.diagnostics]
    return out


def _run(plan: Path, tmp: Path, agent: Path) -> Path:
    return bench_run(plan, tmp, agent=f"scripted:{agent}", judge="rules", run_id="r",
                     allow_python=True)[0]


def _sessions(db: Path) -> dict[str, tuple[object, dict[str, object], dict[str, object]]]:
    out = {}
    for name, score, extra in store_rows(db, "SELECT name, score, extra FROM sessions"):
        reward = json.loads(str(extra))["reward"]
        out[str(name)] = (score, reward["components"], reward)
    return out


@needs_bwrap
def test_gold_agent_and_user_tools(plan: Path, tmp_path: Path) -> None:
    db = _run(plan, tmp_path, PACK / "good_agent.yaml")
    got = _sessions(db)
    both = {"state": 1.0, "actions": 1.0, "env_assertions": 1.0}
    assert got["no-internet"][:2] == (1.0, both)
    assert got["mid-dialogue"][:2] == (1.0, both)
    # the user's own call is recorded beside the agent's, with its side
    calls = store_rows(db, "SELECT split_part(session_id, '.', 4), seq, tool_name, side, error "
                      "FROM tool_calls ORDER BY session_id, seq")
    assert calls == [("no-internet", 0, "resume_line", "agent", None),
                     ("no-internet", 1, "toggle_airplane_mode", "user", None),
                     ("mid-dialogue", 0, "resume_line", "agent", None)]
    # `sessions.tool_calls` counts the agent's only; set-up calls are no one's
    counts = dict(store_rows(db, "SELECT name, tool_calls FROM sessions"))
    assert counts == {"no-internet": 1, "mid-dialogue": 1}
    verdicts = got["no-internet"][2]["env_assertions"]
    assert [(v["function"], v["side"], v["got"], v["passed"]) for v in verdicts] == [
        ("assert_line_status", "agent", True, True), ("assert_can_browse", "user", True, True)]
    # the prior conversation is the transcript's turn 0, in order, then the dialogue goes on
    msgs = store_rows(db, "SELECT turn, role, content FROM messages WHERE session_id LIKE "
                     "'%mid-dialogue' ORDER BY seq")
    assert msgs[:4] == [(0, "user", "我的网络断了，线路是 L2。"), (0, "assistant", ""),
                        (0, "tool", '{"line_id": "L2", "status": "suspended"}'),
                        (0, "assistant", "您的线路 L2 已暂停。要我恢复吗？")]
    assert msgs[4] == (1, "user", "是的，请恢复。")
    assert msgs[-1] == (2, "user", "谢谢，就这些。")


@needs_bwrap
def test_do_nothing_agent_fails_every_component(plan: Path, tmp_path: Path) -> None:
    db = _run(plan, tmp_path, PACK / "done_agent.yaml")
    got = _sessions(db)
    nothing = {"state": 0.0, "actions": 0.0, "env_assertions": 0.0}
    assert got["no-internet"][:2] == (0.0, nothing)
    assert got["mid-dialogue"][:2] == (0.0, nothing)
    # it starts from the patched and set-up world: L1 suspended (data), airplane on (a user
    # set-up call), L2 suspended (a helper function that is no tool)
    verdicts = got["no-internet"][2]["env_assertions"]
    assert [(v["got"], v["passed"]) for v in verdicts] == [(False, False), (False, False)]
    assert store_rows(db, "SELECT count(*) FROM tool_calls") == [(0,)]


@needs_bwrap
def test_half_the_work_is_no_pass(plan: Path, tmp_path: Path) -> None:
    # the agent fixes the line but never asks the user to act on their phone: the agent's
    # side is right, the user's is not — the state check and one assertion fail
    agent = tmp_path / "half.yaml"
    agent.write_text("sessions:\n  no-internet:\n    - tool_calls: [{name: resume_line, args: "
                     "{line_id: L1}}]\n      say: I resumed line L1.\n  mid-dialogue:\n"
                     "    - say: x\n    - say: 好的。\n", encoding="utf-8")
    got = _sessions(_run(plan, tmp_path, agent))
    score, comps, reward = got["no-internet"]
    assert (score, comps) == (0.0, {"state": 0.0, "actions": 0.0, "env_assertions": 0.0})
    assert [(v["function"], v["passed"]) for v in reward["env_assertions"]] == [
        ("assert_line_status", True), ("assert_can_browse", False)]
    assert [a["id"] for a in reward["actions"] if not a["passed"]] == ["airplane"]


def test_patches_merge_as_tau2_does() -> None:
    row = {"id": "u1", "tasks": ["t1"], "prefs": {"lang": "en", "tz": "UTC"}, "n": 1}
    assert merge(row, {"tasks": ["t1", "t2"], "prefs": {"lang": "zh"}}) == {
        "id": "u1", "tasks": ["t1", "t2"], "prefs": {"lang": "zh", "tz": "UTC"}, "n": 1}
    snap = {"services": {"s": {"t": [{"k": 1, "a": 1}, {"k": 2, "a": 2}]}}}
    out = patch_tables(snap, {"s": {"t": {"2": {"a": 20}, "x": {"a": 3}}}}, {"s": {"t": "k"}})
    assert out["services"]["s"]["t"] == [{"k": 1, "a": 1}, {"k": 2, "a": 20},
                                         {"k": "x", "a": 3}]
    assert snap["services"]["s"]["t"][1] == {"k": 2, "a": 2}  # the input is not changed


def test_a_failing_setup_call_is_a_run_error(plan: Path, tmp_path: Path) -> None:
    if find_bwrap() is None:
        pytest.skip("bubblewrap is not available")
    pack = tmp_path / "pack"
    shutil.copytree(PACK, pack)
    text = (pack / "pack.yaml").read_text(encoding="utf-8")
    # resuming a line that is active fails: the session must not start from a wrong state
    text = text.replace("- {tool: suspend_line, args: {line_id: L2}}",
                        "- {tool: resume_line, args: {line_id: L2}}")
    (pack / "pack.yaml").write_text(text, encoding="utf-8")
    assert compile_pack(pack, tmp_path / "p2", use_cache=False).ok
    db = _run(tmp_path / "p2", tmp_path, PACK / "good_agent.yaml")
    (status, error), = store_rows(db, "SELECT status, error FROM sessions WHERE name = "
                                 "'mid-dialogue'")
    assert status == "error"
    assert "initial_state.actions: resume_line" in str(error) and "not suspended" in str(error)


# --------------------------------------------------------------------------- the LLM user


def _edited_run(tmp_path: Path, fake: FakeOpenAI, edits: dict[str, str], extra: str = "",
                files: dict[str, str] | None = None, **options: object) -> Path:
    """The dual-control pack with `edits` (old text → new) made in pack.yaml, `extra` appended
    and `files` added, compiled and its `no-internet` session run against the fake server
    with the good agent; the store."""
    pack = tmp_path / "pack"
    shutil.copytree(PACK, pack)
    for name, content in (files or {}).items():
        (pack / name).write_text(content, encoding="utf-8")
    text = (pack / "pack.yaml").read_text(encoding="utf-8")
    for old, new in edits.items():
        assert old in text, old
        text = text.replace(old, new, 1)
    (pack / "pack.yaml").write_text(text + extra, encoding="utf-8")
    result = compile_pack(pack, tmp_path / "plan", use_cache=False)
    assert result.ok, [d.format() for d in result.diagnostics]
    return bench_run(tmp_path / "plan", tmp_path, db=tmp_path / "b.duckdb",
                     cache_dir=tmp_path / "c", agent=f"scripted:{PACK / 'good_agent.yaml'}",
                     run_id="r", allow_python=True, sessions=["no-internet"],
                     api_base=fake.base_url, max_retries=0, **options)[0]


def _sim(body: dict[str, object]) -> object:
    """The user's model: asked to switch airplane mode off, it calls its own tool first."""
    msgs = body["messages"]
    assert isinstance(msgs, list)
    last = msgs[-1]
    if last["role"] == "user" and "airplane" in str(last["content"]):
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "u1", "type": "function",
             "function": {"name": "toggle_airplane_mode", "arguments": "{}"}}]}
    if last["role"] == "tool":
        return "OK, I switched airplane mode off."
    return "Thanks! ###STOP###"


@needs_bwrap
def test_llm_user_calls_its_own_tools(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.route("sim-model", _sim)
    db = _edited_run(tmp_path, fake_openai, {
        "      - id: no-internet\n":
        "      - id: no-internet\n        conversation: {simulator: chat}\n"},
        judge="rules", simulator="litellm:openai/sim-model")
    got = _sessions(db)
    assert got["no-internet"][:2] == (1.0, {"state": 1.0, "actions": 1.0,
                                            "env_assertions": 1.0})
    sims = [r for r in fake_openai.requests if r["model"] == "sim-model"]
    assert len(sims) == 3
    # the user is offered its own tools, never the agent's
    assert sorted(t["function"]["name"] for t in sims[0]["tools"]) == [
        "check_status_bar", "toggle_airplane_mode"]
    # its call and the result stay in its own chat, at the point they were made
    assert sims[1]["messages"][-2]["tool_calls"][0]["function"]["name"] == \
        "toggle_airplane_mode"
    assert sims[1]["messages"][-1] == {"role": "tool", "tool_call_id": "u1",
                                       "content": "airplane mode is off"}
    assert [m["role"] for m in sims[2]["messages"][1:]] == [
        "assistant", "user", "assistant", "tool", "assistant", "user"]
    assert store_rows(db, "SELECT tool_name, side, turn FROM tool_calls ORDER BY seq") == [
        ("resume_line", "agent", 1), ("toggle_airplane_mode", "user", 1)]
    # the user's calls are LLM calls of the simulator, recorded like any other
    roles = store_rows(db, "SELECT role, count(*) FROM llm_calls GROUP BY role")
    assert roles == [("simulator", 3)]


@needs_bwrap
@pytest.mark.parametrize(("limit", "ending", "asked"), [(8, "max_messages", 2), (10, "done", 3)])
def test_the_users_tool_calls_count_as_tau2s_steps(fake_openai: FakeOpenAI, tmp_path: Path,
                                                   limit: int, ending: str, asked: int) -> None:
    # without the user's call this dialogue takes 7 of τ²'s steps (a limit of 8 let it end
    # with the user's stop before); the user's message calling a tool and its result are 2
    # more, so a limit of 8 ends it after that batch, before the simulator is asked for its
    # closing words (its 3rd request), and 10 leaves room for them
    fake_openai.route("sim-model", _sim)
    db = _edited_run(tmp_path, fake_openai, {
        "      - id: no-internet\n":
        "      - id: no-internet\n        conversation: {simulator: chat}\n"
        f"        limits: {{max_messages: {limit}}}\n"},
        judge="rules", simulator="litellm:openai/sim-model")
    assert store_rows(db, "SELECT termination FROM sessions") == [(ending,)]
    assert len([r for r in fake_openai.requests if r["model"] == "sim-model"]) == asked


@needs_bwrap
@pytest.mark.parametrize("offered", [["toggle_airplane_mode"], []])
def test_the_llm_user_is_offered_only_its_sessions_tools(fake_openai: FakeOpenAI,
                                                         tmp_path: Path,
                                                         offered: list[str]) -> None:
    # `user.tools` (τ²'s per-task `user_tools`): the simulator is offered those of the
    # environment's user tools only, and none at all for `[]` (the prompt's `user_tools` is
    # empty, where τ²'s prompt leaves out its tool guidelines); the set-up call of
    # `initial_state` still runs whatever the list says, as τ²'s `set_state` does
    fake_openai.route("sim-model", _sim if offered else (lambda body: "Thanks! ###STOP###"))
    db = _edited_run(
        tmp_path, fake_openai, {
            "      - id: no-internet\n":
            "      - id: no-internet\n        conversation: {simulator: chat}\n",
            "          reason: My phone has no internet. My line is L1.\n":
            "          reason: My phone has no internet. My line is L1.\n"
            f"          tools: {offered}\n"},
        extra="prompts:\n  instructed_user.user_system: {file: sim.j2}\n",
        files={"sim.j2": "{% if user_tools %}TOOLS {{ user_tools | join(',') }}"
                         "{% else %}NO TOOLS{% endif %}\n{{ scenario }}"},
        judge="rules", simulator="litellm:openai/sim-model")
    sims = [r for r in fake_openai.requests if r["model"] == "sim-model"]
    assert sims
    system = sims[0]["messages"][0]["content"]
    if offered:
        assert [t["function"]["name"] for t in sims[0]["tools"]] == offered
        assert system.startswith("TOOLS toggle_airplane_mode\n")
    else:
        assert all(not r.get("tools") for r in sims)
        assert system.startswith("NO TOOLS\n")
        assert store_rows(db, "SELECT count(*) FROM tool_calls WHERE side = 'user'") == [(0,)]


@needs_bwrap
def test_tau2_judge_reads_the_users_tool_calls_in_run_and_rejudge(fake_openai: FakeOpenAI,
                                                                   tmp_path: Path) -> None:
    # τ²'s NL judge reads the user's own calls (`user: None`, then the result) before the
    # user's next message; `bench rejudge` builds the same transcript from the stored rows
    from benchpack.runtime.rejudge import RejudgeOptions, rejudge

    fake_openai.route("judge-model", lambda body: '{"results": []}')
    db = _edited_run(tmp_path, fake_openai, {
        "          reward: [state, env_assertions]\n":
        "          reward: [state, assertions]\n          assertions_judge: tau2\n"
        "          assertions: [The user switched airplane mode off]\n"},
        judge="litellm:openai/judge-model", simulator="rules")
    rejudge(RejudgeOptions(run_id="r", judge="litellm:openai/judge-model", db=db,
                           progress=False, cache_dir=tmp_path / "c2", max_retries=0,
                           api_base=fake_openai.base_url))
    prompts = [r["messages"][-1]["content"] for r in fake_openai.requests
               if r["model"] == "judge-model"]
    assert len(prompts) == 2
    assert prompts[0] == prompts[1]
    assert "\nuser: None\ntool: airplane mode is off\nuser: OK, I switched airplane mode " \
        "off." in prompts[0]


# --------------------------------------------------------------------------- solo mode


@needs_bwrap
def test_solo_mode_gives_the_agent_the_users_tools(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    shutil.copytree(PACK, pack)
    text = (pack / "pack.yaml").read_text(encoding="utf-8")
    text = text.replace("      - id: no-internet\n",
                        "      - id: no-internet\n        conversation: {solo: true}\n")
    (pack / "pack.yaml").write_text(text, encoding="utf-8")
    assert compile_pack(pack, tmp_path / "plan", use_cache=False).ok
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text(encoding="utf-8"))
    tools = {s["name"]: s["tools"] for s in plan["sessions"].values()}
    assert tools == {"no-internet": ["get_line", "resume_line", "check_status_bar",
                                     "toggle_airplane_mode"],
                     "mid-dialogue": ["get_line", "resume_line"]}
    solo = tmp_path / "solo.yaml"
    solo.write_text("sessions:\n  no-internet:\n    - tool_calls:\n"
                    "        - {name: resume_line, args: {line_id: L1}}\n"
                    "        - {name: toggle_airplane_mode, args: {}}\n"
                    "      say: Fixed.\n  mid-dialogue:\n    - say: x\n    - say: y\n",
                    encoding="utf-8")
    db = _run(tmp_path / "plan", tmp_path, solo)
    got = _sessions(db)
    assert got["no-internet"][:2] == (1.0, {"state": 1.0, "actions": 1.0,
                                            "env_assertions": 1.0})
    # one agent turn, no user message after it; the agent made both calls
    assert store_rows(db, "SELECT termination, turns, user_turns, tool_calls FROM sessions WHERE "
                     "name = 'no-internet'") == [("done", 1, 1, 2)]
    assert store_rows(db, "SELECT tool_name, side FROM tool_calls WHERE session_id LIKE "
                     "'%no-internet' ORDER BY seq") == [("resume_line", "agent"),
                                                       ("toggle_airplane_mode", "agent")]
    (tmp_path / "n").mkdir()
    nothing = _sessions(_run(tmp_path / "plan", tmp_path / "n", PACK / "done_agent.yaml"))
    assert nothing["no-internet"][0] == 0.0


def test_dialogue_parity_declares_tau2s_raising_assertion_helpers() -> None:
    from benchpack.runtime.tau2bench.dialogues import (
        ASSERTION_RAISES,
        DialogueReport,
        compare_outcomes,
    )

    crashed = {"termination": "crashed", "reward": None, "breakdown": {},
               "error": "ValueError: Task task_2 not found"}
    ours = {"termination": "user_stop", "reward": 0.0, "error": None, "breakdown": {"DB": 0.0}}
    report = DialogueReport()
    compare_outcomes({"t/nothing": crashed}, {"t/nothing": ours}, report)
    assert report.mismatches == [] and report.declared == {ASSERTION_RAISES: 1}
    # any other crash, or a reward that is not 0, stays a mismatch
    report = DialogueReport()
    compare_outcomes({"t/nothing": {**crashed, "error": "KeyError: x"}},
                     {"t/nothing": ours}, report)
    assert [m.what for m in report.mismatches] == ["ending", "reward"]
    report = DialogueReport()
    compare_outcomes({"t/gold": crashed}, {"t/gold": {**ours, "reward": 1.0}}, report)
    assert [m.what for m in report.mismatches] == ["ending", "reward"]


def test_tool_parity_compares_the_users_database() -> None:
    from benchpack.runtime.tau2bench.compare import compare_sequence
    from benchpack.runtime.tau2bench.parity import _user_tables_only

    calls = [{"name": "dismiss_notification", "arguments": {"notification_id": "n1"},
              "requestor": "user"}]
    read = {"notification_id": "n1", "status": "read"}
    theirs = {"calls": [{"content": "ok", "error": False, "changes": {
        "db": {}, "user_db": {"notifications": {"n1": read}}}}],
        "changes": {"db": {}, "user_db": {"notifications": {"n1": read}}}}
    same = {"calls": [{"content": "ok", "error": False, "changes": {},
                       "user_changes": {"notifications": {"n1": read}}}],
            "changes": {}, "user_changes": {"notifications": {"n1": read}}}
    assert compare_sequence("s", calls, theirs, same) == []
    unread = {"notifications": {"n1": {**read, "status": "unread"}}}
    other = {**same, "calls": [{**same["calls"][0], "user_changes": unread}],
             "user_changes": unread}
    found = compare_sequence("s", calls, theirs, other)
    assert [(m.kind, m.index) for m in found] == [("db", 0)]
    # τ²'s user_db aliased to the agent's after initialization_data: its tables are cut
    aliased = {**theirs, "start": {"user_db": {"tasks": {"t1": {}}}}}
    cut, was_cut = _user_tables_only(aliased, {"notifications"})
    assert was_cut and cut["start"] == {"user_db": {}}
    assert _user_tables_only(theirs, {"notifications"})[1] is False


# --------------------------------------------------------------------------- the reference pack


def _customer(body: dict[str, object]) -> object:
    """fibre-help-desk's customer as an LLM: asked to restart the router, it calls its own
    tool first; asked who it is, gives its e-mail."""
    msgs = body["messages"]
    assert isinstance(msgs, list)
    last = msgs[-1]
    if last["role"] == "tool":
        return "I restarted it and the light is green now."
    said = str(last["content"])
    if "restart" in said:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "r1", "type": "function",
             "function": {"name": "restart_router", "arguments": "{}"}}]}
    if "e-mail" in said:
        return "emma.lund@post.example"
    return "Thanks! ###STOP###"


def test_fibre_help_desk_llm_customer_restarts_its_router(fake_openai: FakeOpenAI,
                                                          tmp_path: Path) -> None:
    # the pack's `defaults.conversation: {simulator: chat}` (no W341) offers the LLM customer
    # its router's tools, and only those
    pack = PACK.parents[2] / "taskpacks" / "fibre-help-desk"
    result = compile_pack(pack, tmp_path / "plan", strict=True, use_cache=False)
    assert result.ok, [d.format() for d in result.diagnostics]
    fake_openai.route("customer-model", _customer)
    db = tmp_path / "b.duckdb"
    run_plan(RunOptions(plan=tmp_path / "plan", agent=f"scripted:{pack / 'demo' / 'agent.yaml'}",
                        judge="rules", simulator="litellm:openai/customer-model", db=db,
                        run_id="r", progress=False, cache_dir=tmp_path / "c", allow_python=True,
                        sessions=["router-restart"], api_base=fake_openai.base_url,
                        max_retries=0))
    got = _sessions(db)
    assert got["router-restart"][:2] == (1.0, {"state": 1.0, "actions": 1.0,
                                               "env_assertions": 1.0})
    sims = [r for r in fake_openai.requests if r["model"] == "customer-model"]
    # (`set_wifi_password` waits until the agent gives it: `discoverable.user_tools`)
    assert sorted(t["function"]["name"] for t in sims[0]["tools"]) == [
        "check_router_lights", "restart_router"]
    # e-mail; the restart (a tool call, then the message); the goodbye
    assert len(sims) == 4
    assert store_rows(db, "SELECT tool_name, side FROM tool_calls WHERE side = 'user'") == [
        ("restart_router", "user")]
