"""The `instructed_user` protocol (issue 12 part 4) with τ²-style pass/fail rewards (part 5),
over our own pack `tests/fixtures/instructed_user` (an `orders` service, a policy file, three
tasks: cancel W100 — reward state·actions·communicate; change W300's address, then a second
request mid-dialogue — reward state; a Chinese refund request the agent must transfer — reward
state with no gold actions, so nothing may change)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.compiler import compile_pack
from benchpack.runtime.judges.base import ParseError
from benchpack.runtime.protocols.instructed_user import parse_stop
from benchpack.runtime.runner import RunOptions, run_plan
from conftest import bench_run

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "tests" / "fixtures" / "instructed_user"


@pytest.fixture(scope="module")
def plan_dir(compiled: Callable[..., Path]) -> Path:
    return compiled(PACK)


def run(plan_dir: Path, tmp_path: Path, agent: str, simulator: str = "rules",
        **more: Any) -> dict[str, dict[str, Any]]:
    db, summary = bench_run(plan_dir, tmp_path, agent=agent, simulator=simulator, run_id="r",
                            **more)
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT name, status, termination, score, passed, extra, error, "
                       "error_kind, user_turns FROM sessions WHERE run_id = 'r'").fetchall()
    out = {}
    for name, status, term, score, passed, extra, error, kind, user_turns in rows:
        out[name] = {"status": status, "termination": term, "score": score, "passed": passed,
                     "extra": json.loads(extra) if extra else {}, "error": error,
                     "error_kind": kind, "user_turns": user_turns}
    out["_summary"] = {"errors": summary.errors}
    out["_messages"] = {"rows": con.execute(
        "SELECT session_id, turn, role, content FROM messages WHERE run_id = 'r' "
        "ORDER BY session_id, seq").fetchall()}
    return out


def test_gold_agent_scores_one_on_every_task(plan_dir: Path, tmp_path: Path) -> None:
    res = run(plan_dir, tmp_path, f"scripted:{PACK / 'good_agent.yaml'}")
    cancel, address, refund = res["cancel"], res["address"], res["refund"]
    assert cancel["termination"] == "done" and cancel["extra"]["stop_signal"] == "done"
    assert cancel["extra"]["reward"]["components"] == {"state": 1.0, "actions": 1.0,
                                                       "communicate": 1.0}
    assert (cancel["score"], cancel["passed"]) == (1.0, True)
    # the `if: [reason, why]` instruction answered the agent's "Why…?"
    user_says = [c for s, _, role, c in res["_messages"]["rows"]
                 if s.endswith(".cancel") and role == "user"]
    assert user_says[:2] == ["I want to cancel my order W100, I ordered it by mistake.",
                             "I ordered it by mistake."]
    # the second request (after_turn: 2) came although the first was already done
    assert address["termination"] == "done" and (address["score"], address["passed"]) == \
        (1.0, True)
    assert any(c == "Also, is my order W200 delivered?" for s, _, role, c in
               res["_messages"]["rows"] if s.endswith(".address") and role == "user")
    # Chinese: "转接人工客服" is a transfer; nothing changed, as the gold says
    assert refund["termination"] == "transfer" and refund["extra"]["stop_signal"] == "transfer"
    assert (refund["score"], refund["passed"]) == (1.0, True)


def test_agent_saying_only_done_fails_every_task_that_needs_a_change(plan_dir: Path,
                                                                     tmp_path: Path) -> None:
    res = run(plan_dir, tmp_path, f"scripted:{PACK / 'done_agent.yaml'}")
    for name in ("cancel", "address"):
        assert res[name]["status"] == "finished", res[name]
        assert (res[name]["score"], res[name]["passed"]) == (0.0, False), res[name]
        assert res[name]["extra"]["reward"]["components"]["state"] == 0.0
    assert res["cancel"]["extra"]["reward"]["components"] == {
        "state": 0.0, "actions": 0.0, "communicate": 0.0}
    # the refund task requires no change: doing nothing keeps the state (τ² scores it 1 too)
    assert res["refund"]["score"] == 1.0


def test_wrong_argument_fails_the_state_check_with_a_readable_diff(plan_dir: Path,
                                                                   tmp_path: Path) -> None:
    res = run(plan_dir, tmp_path, f"scripted:{PACK / 'wrong_arg_agent.yaml'}")
    cancel = res["cancel"]
    assert (cancel["score"], cancel["passed"]) == (0.0, False)
    reward = cancel["extra"]["reward"]
    # it said the right words: only the state and the action fail
    assert reward["components"] == {"state": 0.0, "actions": 0.0, "communicate": 1.0}
    changes = reward["state"]["diff"]["changes"]
    assert [(c["service"], c["table"], c["key"], c["path"], c["expected"], c["got"])
            for c in changes] == [("orders", "orders", "W100", "status", "cancelled",
                                   "canceled")], changes
    assert reward["state"]["diff_text"] == \
        'orders.orders[W100].status: expected "cancelled", got "canceled"'
    assert "last differs in status" in reward["actions"][0]["detail"]


def test_scripted_user_transfer_is_recorded(plan_dir: Path, tmp_path: Path) -> None:
    res = run(plan_dir, tmp_path, f"scripted:{PACK / 'good_agent.yaml'}",
              simulator=f"scripted:{PACK / 'transfer_user.yaml'}", sessions=["cancel"])
    cancel = res["cancel"]
    assert cancel["termination"] == "transfer" and cancel["extra"]["stop_signal"] == "transfer"
    # transferring does not change the reward: the work was done before
    assert cancel["score"] == 1.0
    last = [c for s, _, role, c in res["_messages"]["rows"] if role == "user"][-1]
    assert last == "Please get me a human."


@pytest.mark.parametrize(("text", "want"), [
    ("Thanks! ###STOP###", ("Thanks!", "done")),
    ("###TRANSFER###", ("", "transfer")),
    ("好的，谢谢。###OUT-OF-SCOPE###", ("好的，谢谢。", "out_of_scope")),
    ("No token here.", ("No token here.", None)),
])
def test_stop_tokens_parse(text: str, want: tuple[str, str | None]) -> None:
    assert parse_stop(text) == want


@pytest.mark.parametrize("text", ["###STOP### but wait", "###DONE###",
                                  "###STOP### ###TRANSFER###"])
def test_malformed_stop_tokens_are_refused(text: str) -> None:
    with pytest.raises(ParseError):
        parse_stop(text)


def _agent(body: dict[str, Any]) -> Any:
    msgs = body["messages"]
    if msgs[-1]["role"] == "user" and not any(m["role"] == "tool" for m in msgs):
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function", "function": {
                "name": "orders__update_order",
                "arguments": json.dumps({"order_id": "W100", "status": "cancelled"})}}]}
    return "Order W100 has been cancelled."


def test_litellm_agent_and_llm_user_against_the_fake_server(fake_openai: FakeOpenAI,
                                                            plan_dir: Path,
                                                            tmp_path: Path) -> None:
    fake_openai.route("agent-model", _agent).route(
        "sim-model", lambda body: "<message>Great, thank you! ###STOP###</message>")
    res = run(plan_dir, tmp_path, "litellm:openai/agent-model",
              simulator="litellm:openai/sim-model", sessions=["cancel"],
              api_base=fake_openai.base_url, max_retries=0)
    cancel = res["cancel"]
    assert cancel["termination"] == "done" and cancel["score"] == 1.0, cancel
    agent_calls = [r for r in fake_openai.requests if r["model"] == "agent-model"]
    system = agent_calls[0]["messages"][0]
    assert system["role"] == "system" and system["content"].startswith(
        "# Lumen Books customer service policy")
    sim_prompt = next(r for r in fake_openai.requests if r["model"] == "sim-model")
    text = sim_prompt["messages"][-1]["content"]
    assert "My zip code is 94110." in text and "My user id." in text and "###STOP###" in text


def test_malformed_llm_user_is_a_simulator_error(fake_openai: FakeOpenAI, plan_dir: Path,
                                                 tmp_path: Path) -> None:
    fake_openai.route("agent-model", _agent).route(
        "sim-model", lambda body: "<message>ok ###FINISHED###</message>")
    res = run(plan_dir, tmp_path, "litellm:openai/agent-model",
              simulator="litellm:openai/sim-model", sessions=["cancel"],
              api_base=fake_openai.base_url, max_retries=0)
    cancel = res["cancel"]
    assert cancel["status"] == "error" and cancel["error_kind"] == "simulator", cancel
    assert "unknown stop token" in (cancel["error"] or "")
    assert cancel["score"] is None and cancel["passed"] is None


def test_gold_mistakes_are_located(tmp_path: Path) -> None:
    pack = tmp_path / "p"
    pack.mkdir()
    text = (PACK / "pack.yaml").read_text(encoding="utf-8")
    text = text.replace("{tool: orders__update_order, args: {order_id: W100, status: cancelled}}",
                        "{tool: orders__update_order, args: {status: cancelled}}")
    text = text.replace("{tool: orders__update_order, args: {order_id: W300, address: 9 Elm St}}",
                        "{tool: orders__update_ordr, args: {order_id: W300}}")
    (pack / "pack.yaml").write_text(text, encoding="utf-8")
    (pack / "policy.md").write_text((PACK / "policy.md").read_text(encoding="utf-8"),
                                    encoding="utf-8")
    res = compile_pack(pack, tmp_path / "out", use_cache=False)
    lines = [d.format() for d in res.diagnostics]
    assert not res.ok
    row = {n: i + 1 for i, line in enumerate(text.splitlines())
           for n in ("{status: cancelled}", "orders__update_ordr") if n in line}
    assert any("E211" in t and "'order_id' is a required property" in t
               and f"pack.yaml:{row['{status: cancelled}']}:" in t for t in lines), lines
    assert any("E202" in t and "orders__update_ordr" in t and "orders__update_order" in t
               and f"pack.yaml:{row['orders__update_ordr']}:" in t for t in lines), lines
    assert yaml.safe_load(text)  # the fixture stays plain YAML


def test_reward_feeds_pass_k_and_the_instructed_results_view(plan_dir: Path,
                                                             tmp_path: Path) -> None:
    from benchpack.reports.views import install_views

    db = tmp_path / "b.duckdb"
    summary = run_plan(RunOptions(
        plan=plan_dir, agent=f"scripted:{PACK / 'wrong_arg_agent.yaml'}", simulator="rules",
        db=db, progress=False, run_id="r", repeats=2, cache_dir=tmp_path / "c"))
    # three tasks, two repeats each: cancel fails (wrong argument), address fails (nothing
    # done), refund passes (nothing to change) → n = 2 and c = 0, 0, 2
    assert sorted(summary.pass_counts) == [(2, 0), (2, 0), (2, 2)]
    con = duckdb.connect(str(db), read_only=True)
    install_views(con)
    assert sorted(con.execute("SELECT task, n, c FROM verified_tasks").fetchall()) == [
        ("session.orders-desk.support.address", 2, 0),
        ("session.orders-desk.support.cancel", 2, 0),
        ("session.orders-desk.support.refund", 2, 2)]
    rows = con.execute("SELECT name, stop_signal, reward, passed, state, actions, communicate, "
                       "assertions, state_diff FROM instructed_results WHERE repeat = 0 "
                       "ORDER BY name").fetchall()
    assert rows[1] == ("cancel", "done", 0.0, False, 0.0, 0.0, 1.0, None,
                       'orders.orders[W100].status: expected "cancelled", got "canceled"')
    assert rows[2][:5] == ("refund", "done", 1.0, True, 1.0)
