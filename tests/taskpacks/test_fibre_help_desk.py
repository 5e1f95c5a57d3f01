"""fibre-help-desk (issue 24's reference pack: a knowledge base, a discoverable tool, a customer
with their own router): the demo agent reaches reward 1.0 on all five tasks under the default
retrieval (`bm25_grep`, its searches answered from the handbook) and under `golden` (its
searches refused as unknown tools, the documents in the prompt instead), with the scripted and
the rules customer; the technician tool is offered only after the unlock; the final tables hold
what the handbook's rules give by hand (the outage credit: fibre-1000's 4.00 a day × 3 days =
12.00); `router-restart` starts from a broken world and is judged on both sides; the
adversaries get 0 everywhere (a scripted customer who sets the Wi-Fi password on its own is
refused: the agent never gave it the router's page), and an agent that does the desk's work but never tells the
customer what to do gets 0 on the two dual-control tasks."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from benchpack.compiler import compile_pack
from benchpack.runtime.runner import RunOptions, run_plan
from conftest import TASKPACKS

PACK = TASKPACKS / "fibre-help-desk"
SIM = f"scripted:{PACK / 'demo' / 'simulator.yaml'}"
DEMO = f"scripted:{PACK / 'demo' / 'agent.yaml'}"
TASKS = ["outage-credit-zh", "red-light-cable", "red-light-config", "router-restart",
         "wifi-password"]
DUAL = ["router-restart", "wifi-password"]


def _run(tmp_path: Path, agent: str, retrieval: str, sim: str = SIM, errors: int = 0
         ) -> duckdb.DuckDBPyConnection:
    res = compile_pack(PACK, tmp_path / "plan", strict=True, use_cache=False,
                       variables={"retrieval": retrieval})
    assert res.ok, [d.format() for d in res.diagnostics]
    summary = run_plan(RunOptions(plan=tmp_path / "plan", agent=agent, judge="rules",
                                  simulator=sim, db=tmp_path / "b.duckdb", progress=False,
                                  allow_python=True, cache_dir=tmp_path / "cache", run_id="r"))
    assert summary.errors == errors, summary
    return duckdb.connect(str(tmp_path / "b.duckdb"), read_only=True)


@pytest.mark.parametrize("retrieval", ["bm25_grep", "golden"])
def test_demo_agent_reaches_reward_1_on_every_task(tmp_path: Path, retrieval: str) -> None:
    con = _run(tmp_path, f"scripted:{PACK / 'demo' / 'agent.yaml'}", retrieval)
    rows = con.execute("SELECT name, score FROM sessions ORDER BY name").fetchall()
    assert rows == [(t, 1.0) for t in TASKS]
    searches = con.execute("SELECT json_extract_string(call, '$.query'), error, result FROM "
                           "tool_calls WHERE tool_name = 'handbook__search' ORDER BY session_id,"
                           " seq").fetchall()
    snapshot = con.execute("SELECT count(*) FROM snapshots").fetchone()
    con.close()
    assert len(searches) == 6 and snapshot is not None
    if retrieval == "golden":  # not offered: each search is an unknown-tool error
        assert all(e is not None and e.startswith("unknown tool") for _, e, _ in searches)
        return
    found = {q: [d["id"] for d in json.loads(r)] for q, e, r in searches if e is None}
    assert found["line still down after reset technician visit"][0] == "technician-visits"
    assert found["change wifi password"][0] == "wifi-password"
    assert found["停机补偿"] == ["faq-zh"]


def test_the_technician_tool_appears_after_the_unlock_and_the_tables_are_right(
        tmp_path: Path) -> None:
    con = _run(tmp_path, f"scripted:{PACK / 'demo' / 'agent.yaml'}", "bm25_grep")
    extra = dict(con.execute("SELECT name, extra FROM sessions").fetchall())
    calls = con.execute("SELECT tool_name, error, result FROM tool_calls WHERE tool_name IN "
                        "('apply_outage_credit', 'schedule_technician', 'reset_line') "
                        "ORDER BY session_id, seq").fetchall()
    con.close()
    unlocked = json.loads(extra["red-light-cable"])["unlocked"]
    assert [u["tool"] for u in unlocked] == ["schedule_technician"]
    assert all("unlocked" not in json.loads(extra[t] or "{}") for t in TASKS
               if t != "red-light-cable")
    # required documents found by the demo's searches, by hand: red-light-cable needs
    # router-lights, remote-reset, technician-visits (all three returned); outage-credit-zh
    # needs outage-credits and faq-zh (its Chinese query finds only faq-zh): 1/2
    found = {t: json.loads(extra[t])["knowledge"]["required_found"] for t in TASKS}
    assert found == {"red-light-cable": 1.0, "red-light-config": 1.0,
                     "outage-credit-zh": 0.5, "wifi-password": 1.0, "router-restart": 1.0}
    by_tool = {(t, json.dumps(json.loads(r), sort_keys=True)) for t, e, r in calls
               if e is None}
    assert ("apply_outage_credit", json.dumps({"amount": 12.0, "customer_id": "C-203",
                                               "days": 3, "line_id": "L-1003"},
                                              sort_keys=True)) in by_tool
    assert ("schedule_technician", json.dumps({"day": "2026-06-08", "line_id": "L-1001"},
                                              sort_keys=True)) in by_tool
    # the cable fault stays down after the reset; the configuration fault comes back
    assert ("reset_line", json.dumps({"light": "red-blinking", "line_id": "L-1001",
                                      "status": "down"}, sort_keys=True)) in by_tool
    assert ("reset_line", json.dumps({"light": "green", "line_id": "L-1002",
                                      "status": "up"}, sort_keys=True)) in by_tool


def _scores(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[float, dict[str, float]]]:
    """Scored sessions: name → (score, reward components)."""
    rows = con.execute("SELECT name, score, extra FROM sessions WHERE status <> 'error'"
                       ).fetchall()
    return {n: (score, json.loads(extra)["reward"]["components"]) for n, score, extra in rows}


def _assertions(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[str, str, object]]:
    extra = con.execute("SELECT extra FROM sessions WHERE name = ?", [name]).fetchone()
    assert extra is not None
    return [(v["function"], v["side"], v["got"])
            for v in json.loads(extra[0])["reward"]["env_assertions"]]


# The rules customer acts on their router only when the agent's words ask for it (`if:`); the
# scripted customer acts on cue whatever the agent said. Both must give the same verdicts here.
@pytest.mark.parametrize("sim", ["rules", SIM])
def test_dual_control_tasks_both_sides_with_either_customer(tmp_path: Path, sim: str) -> None:
    con = _run(tmp_path, DEMO, "bm25_grep", sim)
    scores = _scores(con)
    user_calls = con.execute(
        "SELECT split_part(session_id, '.', 4), tool_name, json(call)::VARCHAR, error "
        "FROM tool_calls WHERE side = 'user' ORDER BY session_id, seq").fetchall()
    router = ("check_router_lights", "restart_router", "set_wifi_password")
    agent_used = con.execute("SELECT count(*) FROM tool_calls WHERE side = 'agent' AND "
                             f"tool_name IN {router}").fetchone()
    verdicts = _assertions(con, "router-restart")
    con.close()
    assert {t: s for t, (s, _) in scores.items()} == {t: 1.0 for t in TASKS}
    assert scores["router-restart"][1] == {"state": 1.0, "actions": 1.0, "env_assertions": 1.0}
    assert scores["wifi-password"][1] == {"state": 1.0, "actions": 1.0, "communicate": 1.0,
                                          "env_assertions": 1.0}
    assert [(s, t, e) for s, t, _, e in user_calls] == [
        ("router-restart", "restart_router", None),
        ("router-restart", "check_router_lights", None),
        ("wifi-password", "set_wifi_password", None)]
    assert json.loads(user_calls[2][2]) == {"new_password": "harbour-lights-42"}
    # the router is the customer's: never offered to (nor called by) the agent
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text(encoding="utf-8"))
    assert all(not set(router) & set(p["tools"]) for p in plan["sessions"].values())
    assert sorted(plan["environments"]["desk"]["user_tools"]) == list(router)
    assert agent_used == (0,)
    # both sides' predicates, each true only after its own side's work
    assert verdicts == [("assert_line_status", "agent", True),
                        ("assert_router_light", "user", True)]


@pytest.mark.parametrize("adversary", ["nothing", "done", "echo", "every-tool"])
@pytest.mark.parametrize("sim", ["rules", SIM])
def test_adversaries_score_0_on_every_task(tmp_path: Path, adversary: str, sim: str) -> None:
    con = _run(tmp_path, f"adversary:{adversary}", "bm25_grep", sim)
    scores = _scores(con)
    verdicts = _assertions(con, "router-restart")
    wifi_calls = con.execute("SELECT error FROM tool_calls WHERE side = 'user' AND tool_name "
                             "= 'set_wifi_password'").fetchall()
    con.close()
    assert {t: s for t, (s, _) in scores.items()} == {t: 0.0 for t in TASKS}
    # the world starts broken (a patch put L-1005 down, a set-up call stalled the router) and
    # nobody fixed the desk's side; the scripted customer restarts the router on cue anyway
    restarted = sim == SIM
    assert verdicts == [("assert_line_status", "agent", False),
                        ("assert_router_light", "user", restarted)]
    assert scores["router-restart"][1] == {"state": 0.0, "actions": 0.0, "env_assertions": 0.0}
    # the scripted customer tries to set the Wi-Fi password by itself, but the router's page is
    # a tool the agent gives (`discoverable.user_tools`) and no agent here gave it: the call is
    # an error result and the password stays as it was
    assert wifi_calls == ([("the tool `set_wifi_password` has not been given to you yet: the "
                            "agent has to give it to you first",)] if restarted else [])
    assert scores["wifi-password"][1] == {"state": 0.0, "actions": 0.0, "communicate": 0.0,
                                          "env_assertions": 0.0}


def test_an_agent_that_never_guides_the_customer_scores_0_on_dual_control(
        tmp_path: Path) -> None:
    # the desk's side done right (identify, reset the line) but no word of restarting the
    # router or of 192.168.1.1: the rules customer never acts on their side
    agent = tmp_path / "silent.yaml"
    agent.write_text("""sessions:
  router-restart:
    - say: What is the e-mail address on your account?
    - tool_calls:
        - {name: find_customer, args: {email: emma.lund@post.example}}
        - {name: reset_line, args: {line_id: L-1005}}
      say: I reset your line remotely; it is up at the exchange now.
  wifi-password:
    - say: What is the e-mail address on your account?
    - tool_calls:
        - {name: find_customer, args: {email: ines.berg@post.example}}
      say: Thanks, Ines. We cannot change your Wi-Fi password from the help desk.
""", encoding="utf-8")
    # (the three tasks it has no script for end as errors, not scores)
    con = _run(tmp_path, f"scripted:{agent}", "bm25_grep", "rules", errors=3)
    scores = _scores(con)
    verdicts = _assertions(con, "router-restart")
    user_calls = con.execute("SELECT count(*) FROM tool_calls WHERE side = 'user'").fetchone()
    con.close()
    assert {t: scores[t][0] for t in DUAL} == {"router-restart": 0.0, "wifi-password": 0.0}
    assert set(scores) == set(DUAL)
    assert user_calls == (0,)
    assert verdicts == [("assert_line_status", "agent", True),
                        ("assert_router_light", "user", False)]
    assert scores["router-restart"][1] == {"state": 0.0, "actions": 0.0, "env_assertions": 0.0}
    assert scores["wifi-password"][1] == {"state": 0.0, "actions": 0.0, "communicate": 0.0,
                                          "env_assertions": 0.0}
