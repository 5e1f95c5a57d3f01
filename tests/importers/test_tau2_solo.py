"""τ²'s solo mode imported (`bench import tau2 DOMAIN --solo`, issue 24): no user, the agent
gets both sides' tools and then `done`, the ticket is in its system prompt after the solo
policy, and it ends by calling `done` (a text answer is an agent error, reward 0).

Offline, on benchpack's own telecom folder in τ²'s shapes (`fixtures/tau2_telecom`): every
imported session is solo, the gold agent (every gold action, the user's included) scores 1.0,
doing nothing 0.0, and the agent that makes only its own side's gold calls fails every task
that needs the customer's phone. Domains without a solo mode are refused. Gated
(BENCH_TAU2_CHECKOUT, BENCH_TAU2_PYTHON): on the release's telecom (`tasks_small.json`) and
mock domains the gold and do-nothing agents score what τ²'s own evaluator gives the same
trajectories in solo mode."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner
from tau2_helpers import run_scores

from benchpack.compiler import compile_pack
from benchpack.compiler.importers import ImportError_, import_pack
from benchpack.compiler.importers.tau2_solo import skip_reason
from benchpack.reports.origin import run_origins
from conftest import TAU2_CHECKOUT as CHECKOUT
from conftest import TAU2_PYTHON as PYTHON
from conftest import needs_bwrap, needs_tau2

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DOMAIN = FIXTURES / "tau2_telecom" / "telecom"
IDS = {"service_issue-overdue_bill-PERSONA-None", "mobile_data_issue-abroad_roaming-PERSONA-Easy",
       "mms_issue-storage_permission-PERSONA-Hard", "service_issue-locked_sim-PERSONA-None"}


def _import(tmp: Path, domain: Path = DOMAIN) -> Path:
    pack = tmp / "pack"
    import_pack("tau2", domain, pack, solo=True)
    result = compile_pack(pack, tmp / "plan", use_cache=False)
    assert result.ok, [d.format() for d in result.diagnostics]
    return pack


def test_every_session_is_solo_with_the_ticket_and_the_solo_policy(tmp_path: Path) -> None:
    pack = _import(tmp_path)
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text(encoding="utf-8"))
    assert plan["pack"]["name"] == "tau2-telecom-solo"
    sessions = {s["name"]: s for s in plan["sessions"].values()}
    assert set(sessions) == IDS
    assert all(s["conversation"] == {**s["conversation"], "solo": True, "end_tool": "done",
                                     "system_request": "\n\n# Ticket\n\n{request}"}
               for s in sessions.values())
    assert sessions["service_issue-overdue_bill-PERSONA-None"]["request"] == \
        "My phone has no service."
    # the agent is offered the phone's tools beside the operator's, and `done` last
    tools = sessions["mms_issue-storage_permission-PERSONA-Hard"]["tools"]
    assert "grant_app_permission" in tools and "get_customer_by_phone" in tools
    assert tools[-1] == "done" and plan["tools"]["done"]["impl"]["kind"] == "static"
    # without a checkout: benchpack's own instructions, then the solo policy
    policy = (pack / "policy.md").read_text(encoding="utf-8")
    assert policy.startswith("You are working a support ticket on your own") and \
        "\n\n# Policy\n\n<main_policy>\n# Operator policy, working alone" in policy and \
        policy.endswith("</tech_support_policy>")
    # the gold agent makes the user's gold actions too; there is no gold user
    agent = yaml.safe_load((pack / "demo" / "gold_agent.yaml").read_text(encoding="utf-8"))
    calls = agent["sessions"]["service_issue-overdue_bill-PERSONA-None"][0]["tool_calls"]
    assert [c["name"] for c in calls] == ["send_payment_request", "make_payment",
                                          "resume_line", "reboot_device", "done"]
    assert not (pack / "demo" / "gold_user.yaml").exists()
    report = (pack / "IMPORT_REPORT.md").read_text(encoding="utf-8")
    assert "## Solo mode (`--solo`)" in report and "ends by calling `done`" in report
    assert "| `main_policy_solo.md` | mapped |" in report
    pack_yaml = (pack / "pack.yaml").read_text(encoding="utf-8")
    # origin.differences: the own prompt (no checkout); τ²'s raising on a text answer only
    # where a session ends so (`if_ended`)
    assert '"own-solo-prompt: no τ² checkout was read' in pack_yaml
    assert '  if_ended:\n    agent_error: ["solo-text-reply: an answer in text' in pack_yaml
    assert "the ticket is the agent's first message" not in pack_yaml


@needs_bwrap
def test_gold_scores_one_nothing_zero_one_side_fails(tmp_path: Path) -> None:
    pack = _import(tmp_path)
    gold = run_scores(tmp_path, "gold", f"scripted:{pack / 'demo' / 'gold_agent.yaml'}", "rules")
    assert gold == dict.fromkeys(IDS, 1.0)
    done = tmp_path / "done.yaml"
    done.write_text("default:\n  - tool_calls: [{name: done, args: {}}]\n", encoding="utf-8")
    assert run_scores(tmp_path, "nothing", f"scripted:{done}", "rules") == \
        dict.fromkeys(IDS, 0.0)
    # adversarial: "Done." in text instead of the `done` call is τ²'s agent error, reward 0 —
    # even where the state needs nothing done (the transfer task's gold is a call, and its
    # check would pass on an untouched state only if the gold changed nothing)
    said = tmp_path / "said.yaml"
    said.write_text("default:\n  - say: Done.\n", encoding="utf-8")
    assert run_scores(tmp_path, "said", f"scripted:{said}", "rules") == dict.fromkeys(IDS, 0.0)
    con = duckdb.connect(str(tmp_path / "said.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT DISTINCT termination FROM sessions").fetchall() == \
            [("agent_error",)]
        # τ² treats a text answer otherwise: a run that had one lists that difference ...
        said_label = run_origins(con, ["said"])["said"]
    finally:
        con.close()
    assert said_label is not None and said_label.differences[-1].startswith("solo-text-reply")
    # ... and a run without one does not (only the own prompt of an import without a checkout)
    con = duckdb.connect(str(tmp_path / "gold.duckdb"), read_only=True)
    try:
        gold_label = run_origins(con, ["gold"])["gold"]
        # the ticket is in the system prompt: the one turn had no user message (not "null")
        assert con.execute("SELECT DISTINCT user_message FROM turns").fetchall() == [(None,)]
    finally:
        con.close()
    assert gold_label is not None and gold_label.differences == said_label.differences[:-1]
    # the operator's gold calls only, never the phone's: only the task the operator alone
    # settles (a transfer) passes
    agent = yaml.safe_load((pack / "demo" / "gold_agent.yaml").read_text(encoding="utf-8"))
    user_side = {"make_payment", "reboot_device", "toggle_roaming", "grant_app_permission"}
    for turns in agent["sessions"].values():
        turns[-1]["tool_calls"] = [c for c in turns[-1]["tool_calls"]
                                   if c["name"] not in user_side]
    half = tmp_path / "half.yaml"
    half.write_text(yaml.safe_dump(agent), encoding="utf-8")
    assert run_scores(tmp_path, "half", f"scripted:{half}", "rules") == {
        **dict.fromkeys(IDS, 0.0), "service_issue-locked_sim-PERSONA-None": 1.0}


def test_what_solo_mode_refuses(tmp_path: Path) -> None:
    with pytest.raises(ImportError_, match="τ²'s `retail` has no solo mode"):
        import_pack("tau2", FIXTURES / "tau2" / "retail", tmp_path / "r", solo=True)
    with pytest.raises(ImportError_, match="the τ² extract has no solo-mode texts"):
        import_pack("tau2", DOMAIN, tmp_path / "t", solo=True, tau2={})
    # the tasks τ²'s solo agent refuses: no ticket, a prior conversation with messages, no
    # gold actions and no initial state
    assert skip_reason({"ticket": "x", "evaluation_criteria": {"actions": [{}]}}) is None
    assert skip_reason({"evaluation_criteria": {"actions": [{}]}}).startswith("no ticket")
    said = {"ticket": "x", "initial_state": {"message_history": [
        {"role": "assistant", "tool_calls": [{}]}, {"role": "assistant", "content": "Hi"}]}}
    assert "only tool calls" in str(skip_reason(said))
    calls = {"ticket": "x", "initial_state": {"message_history": [
        {"role": "assistant", "tool_calls": [{}]}, {"role": "tool", "content": "ok"}]}}
    assert skip_reason(calls) is None
    assert skip_reason({"ticket": "x", "evaluation_criteria": {"actions": []}}) == \
        "no gold actions: τ²'s solo agent refuses a task without them"
    # a folder without the solo policy says which file is missing
    bare = tmp_path / "telecom"
    bare.mkdir()
    for p in DOMAIN.iterdir():
        if p.name != "main_policy_solo.md":
            (bare / p.name).write_bytes(p.read_bytes())
    with pytest.raises(ImportError_, match=r"main_policy_solo\.md: not found"):
        import_pack("tau2", bare, tmp_path / "b", solo=True)


def test_solo_is_an_option_of_the_tau2_format(tmp_path: Path) -> None:
    from benchpack.cli import cli

    out = CliRunner().invoke(cli, ["import", "pibench", str(tmp_path), "-o",
                                    str(tmp_path / "p"), "--solo"])
    assert out.exit_code == 2 and "--solo is an option of the tau2 format" in out.output


TAU2_SIDE = r'''
import json, sys, uuid
from tau2.evaluator.evaluator import evaluate_simulation, EvaluationType
from tau2.data_model.simulation import SimulationRun, TerminationReason
from tau2.data_model.message import AssistantMessage, ToolCall
from tau2.agent.llm_agent import LLMSoloAgent

domain = sys.argv[1]
if domain == "telecom":
    from tau2.domains.telecom.environment import get_environment, load_tasks
    tasks = load_tasks(sys.argv[2])
else:
    from tau2.domains.mock.environment import get_environment, get_tasks
    tasks = get_tasks()


def trajectory(task, gold):
    # solo: every gold action is the agent's call, on an environment in solo mode
    env = get_environment(solo_mode=True)
    st = task.initial_state
    if st:
        env.set_state(st.initialization_data, st.initialization_actions,
                      st.message_history or [])
    msgs = []
    for i, a in enumerate(task.evaluation_criteria.actions or [] if gold else []):
        call = ToolCall(id=f"g{i}", name=a.name, arguments=a.arguments, requestor="assistant")
        msgs += [AssistantMessage(role="assistant", tool_calls=[call]), env.get_response(call)]
    # τ²'s solo agent ends with its `done` call, which it turns into this message
    return msgs + [AssistantMessage(role="assistant", content=LLMSoloAgent.STOP_TOKEN)]


out = {}
for task in tasks:
    if not task.ticket:  # τ²'s solo agent needs one (and its environment refuses user messages)
        continue
    for gold in (True, False):
        sim = SimulationRun(id=str(uuid.uuid4()), task_id=task.id, start_time="", end_time="",
                            duration=0.0, termination_reason=TerminationReason.AGENT_STOP,
                            messages=trajectory(task, gold))
        try:
            reward = evaluate_simulation(sim, task, EvaluationType.ALL, True, domain).reward
        except Exception as exc:  # τ²'s assertion helpers raise on a missing row
            reward = f"{type(exc).__name__}: {exc}"
        out.setdefault(task.id, {})["gold" if gold else "nothing"] = reward
print(json.dumps(out))
'''


@needs_tau2
@needs_bwrap
@pytest.mark.parametrize("domain", ["telecom", "mock"])
def test_release_rewards_equal_tau2s_own_in_solo_mode(tmp_path: Path, domain: str) -> None:
    folder = Path(str(CHECKOUT)) / "data" / "tau2" / "domains" / domain
    theirs = json.loads(subprocess.run(
        [str(PYTHON), "-c", TAU2_SIDE, domain, str(folder / "tasks_small.json")],
        capture_output=True, text=True, check=True, cwd=str(CHECKOUT), timeout=300,
        env={**os.environ, "TAU2_DATA_DIR": str(Path(str(CHECKOUT)) / "data")},
    ).stdout.strip().splitlines()[-1])
    pack = _import(tmp_path, folder)
    gold = run_scores(tmp_path, "gold", f"scripted:{pack / 'demo' / 'gold_agent.yaml'}", "rules")
    done = tmp_path / "done.yaml"
    done.write_text("default:\n  - tool_calls: [{name: done, args: {}}]\n", encoding="utf-8")
    nothing = run_scores(tmp_path, "nothing", f"scripted:{done}", "rules")
    # adversarial: an agent that answers "Done." in text, never calling `done`, scores 0
    said = tmp_path / "said.yaml"
    said.write_text("default:\n  - say: Done.\n", encoding="utf-8")
    assert set(run_scores(tmp_path, "said", f"scripted:{said}", "rules").values()) == {0.0}
    from benchpack.compiler.importers.tau2 import session_id

    ours = {tid: {"gold": gold[session_id(tid)], "nothing": nothing[session_id(tid)]}
            for tid in theirs if session_id(tid) in gold}
    if domain == "telecom":
        assert len(ours) == 20 and ours == theirs
        assert all(v == {"gold": 1.0, "nothing": 0.0} for v in ours.values())
        return
    # mock: 7 of τ²'s 10 tasks are imported (no ticket: 2; no gold actions: 1)
    assert sorted(ours) == ["create_task_1", "create_task_1_with_env_assertions",
                            "impossible_task_1", "update_task_1",
                            "update_task_with_initialization_actions",
                            "update_task_with_initialization_data",
                            "update_task_with_user_tools"]
    # τ²'s assertion helper raises on the missing row doing nothing leaves; ours does not hold
    raised = theirs["create_task_1_with_env_assertions"]["nothing"]
    assert raised == "ValueError: Task task_2 not found"
    assert ours["create_task_1_with_env_assertions"] == {"gold": 1.0, "nothing": 0.0}
    same = {t: v for t, v in ours.items() if t != "create_task_1_with_env_assertions"}
    assert same == {t: theirs[t] for t in same}
    # τ²'s own 0 on update_task_with_user_tools (its gold leaves the notification unread) and
    # on update_task_with_initialization_data (a solo agent never says its communicate info)
    assert sorted(t for t, v in ours.items() if v["gold"] != 1.0) == [
        "update_task_with_initialization_data", "update_task_with_user_tools"]
    assert all(v["nothing"] == 0.0 for v in ours.values())
