"""τ²-bench's dialogue, termination and scoring rules in an instructed_user pack (issue 23,
WP-D), run end to end over our own pack `tests/fixtures/instructed_user` with the τ² fields
added. Every expectation is counted by hand from τ²'s orchestrator rules (greeting not counted;
user message, agent response, tool-result batch one step each; checked after a step not
addressed to the environment; the error limit wins over the step limit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.compiler import compile_pack
from conftest import bench_run

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "tests" / "fixtures" / "instructed_user"
GREETING = "Hi! How can I help you today?"
CANCEL = {"name": "orders__update_order", "args": {"order_id": "W100", "status": "cancelled"}}


def compile_variant(tmp: Path, defaults: dict[str, Any] | None = None,
                    cancel: dict[str, Any] | None = None, pack: dict[str, Any] | None = None
                    ) -> Path:
    """The base pack with `defaults`, `cancel` (merged into the session `cancel`) and top-level
    `pack` keys added; compiled, the plan directory."""
    data = yaml.safe_load((BASE / "pack.yaml").read_text(encoding="utf-8"))
    data["defaults"] = defaults or {}
    data.update(pack or {})
    session = data["episodes"][0]["sessions"][0]
    assert session["id"] == "cancel"
    session.update(cancel or {})
    src = tmp / "pack"
    src.mkdir(parents=True, exist_ok=True)
    (src / "pack.yaml").write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    (src / "policy.md").write_text((BASE / "policy.md").read_text(encoding="utf-8"),
                                   encoding="utf-8")
    out = tmp / "plan"
    res = compile_pack(src, out, use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    return out


def script(tmp: Path, name: str, data: dict[str, Any]) -> str:
    path = tmp / name
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return str(path)


def run(plan: Path, tmp: Path, agent: str, simulator: str = "rules", **more: Any
        ) -> dict[str, Any]:
    db, _ = bench_run(plan, tmp, agent=agent, simulator=simulator, run_id="r",
                      sessions=["cancel"], **more)
    con = duckdb.connect(str(db), read_only=True)
    row = con.execute("SELECT status, termination, score, passed, extra, error, error_kind, "
                      "judge_errors, turns FROM sessions WHERE run_id = 'r'").fetchone()
    assert row is not None
    keys = ("status", "termination", "score", "passed", "extra", "error", "error_kind",
            "judge_errors", "turns")
    out = dict(zip(keys, row, strict=True))
    out["extra"] = json.loads(out["extra"]) if out["extra"] else {}
    out["messages"] = con.execute("SELECT turn, role, content FROM messages WHERE run_id = 'r' "
                                  "ORDER BY seq").fetchall()
    out["tool_calls"] = con.execute("SELECT tool_name, error FROM tool_calls WHERE run_id = 'r' "
                                    "ORDER BY seq").fetchall()
    con.close()
    return out


TAU2 = {"conversation": {"greeting": GREETING, "stop_tokens": "anywhere",
                         "unfinished": "fail"}}


# --------------------------------------------------------------------------- max_messages


def long_dialogue(tmp: Path, stop_at: int) -> tuple[str, str]:
    """An agent that cancels W100 in its first turn and then asks "Anything else?"; a user whose
    reply number `stop_at` is a stop. Steps: user 1 = 1; agent turn 1 = call 2, batch 3,
    text 4; then user k = 2k + 1 and agent turn k = 2k + 2: user reply j (message j + 1) is
    step 2j + 3, always odd, like every user message of τ² after its greeting."""
    agent = script(tmp, "agent.yaml", {"sessions": {"cancel": [
        {"tool_calls": [CANCEL], "say": "W100 has been cancelled."},
        *({"say": "Anything else?"} for _ in range(stop_at + 5))]}})
    user = script(tmp, "user.yaml", {"sessions": {"cancel": {"turns": [
        *(f"One more question, number {j}." for j in range(1, stop_at)),
        "No, thank you. ###STOP###"]}}})
    return agent, user


@pytest.mark.parametrize(("limit", "unfinished", "want"), [
    # agent turn 99 is step 200: the limit ends the dialogue before the user's stop (step 201)
    (200, "fail", ("max_messages", 0.0, 99, 99)),
    (200, "score", ("max_messages", 1.0, 99, 99)),  # the work was done; scored as usual
    # the user's stop is step 201 itself: the limit wins (τ²'s check after the user step)
    (201, "fail", ("max_messages", 0.0, 99, 100)),
    (202, "fail", ("done", 1.0, 99, 100)),
])
def test_max_messages_counts_as_tau2(tmp_path: Path, limit: int, unfinished: str,
                                     want: tuple[str, float, int, int]) -> None:
    plan = compile_variant(tmp_path, {"limits": {"max_messages": limit}, "conversation": {
        **TAU2["conversation"], "unfinished": unfinished}})
    agent, user = long_dialogue(tmp_path, stop_at=99)
    res = run(plan, tmp_path, f"scripted:{agent}", f"scripted:{user}")
    users = [c for _, role, c in res["messages"] if role == "user"]
    assert (res["termination"], res["score"], res["turns"], len(users)) == want, res["extra"]
    assert res["passed"] is (want[1] == 1.0)
    assert res["messages"][0] == (0, "assistant", GREETING)  # the greeting opens the transcript
    if want[0] == "max_messages":
        assert res["extra"]["stop_signal"] is None
        if unfinished == "fail":
            assert res["extra"]["reward"]["unfinished"] == "max_messages"
    if want[3] == 100:  # the closing message is stored as written, token included
        assert users[-1] == "No, thank you. ###STOP###"


def agent_two_calls(body: dict[str, Any]) -> Any:
    """get_order, then update_order, then the answer: three model responses a turn."""
    results = [m for m in body["messages"] if m["role"] == "tool"]
    if len(results) >= 2 * sum(1 for m in body["messages"] if m["role"] == "user"):
        return "W100 has been cancelled."
    name, args = (("orders__get_order", {"order_id": "W100"}) if len(results) % 2 == 0 else
                  (CANCEL["name"], CANCEL["args"]))
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": f"c{len(results)}", "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)}}]}


@pytest.mark.parametrize(("limit", "want_term", "agent_calls", "executed"), [
    # user 1, call 2, batch 3, call 4 (no check: addressed to the tools), batch 5, text 6,
    # user stop 7
    (4, "max_messages", 2, 2),  # first check at or past 4 is after batch 5
    (5, "max_messages", 2, 2),
    (6, "max_messages", 3, 2),  # the answer reaches it: the user never replies
    (7, "max_messages", 3, 2),  # the user's stop reaches it and loses
    (8, "done", 3, 2),
])
def test_litellm_agent_counts_its_own_messages(fake_openai: FakeOpenAI, tmp_path: Path,
                                               limit: int, want_term: str, agent_calls: int,
                                               executed: int) -> None:
    fake_openai.route("agent-model", agent_two_calls)
    plan = compile_variant(tmp_path, {"limits": {"max_messages": limit}, **TAU2})
    user = script(tmp_path, "user.yaml", {"sessions": {"cancel": {"turns": ["Thanks ###STOP###"]}}})
    res = run(plan, tmp_path, "litellm:openai/agent-model", f"scripted:{user}",
              api_base=fake_openai.base_url, max_retries=0)
    calls = [r for r in fake_openai.requests if r["model"] == "agent-model"]
    assert (res["termination"], len(calls), len(res["tool_calls"])) == \
        (want_term, agent_calls, executed), res
    assert res["score"] == (1.0 if want_term == "done" else 0.0)
    # the greeting is the agent's history: before the user's first message
    assert calls[0]["messages"][1:3] == [
        {"role": "assistant", "content": GREETING},
        {"role": "user", "content": "I want to cancel my order W100, I ordered it by mistake."}]


# --------------------------------------------------------------------------- max_tool_errors


@pytest.mark.parametrize(("limits", "want"), [
    ({"max_tool_errors": 2}, "max_tool_errors"),
    # both reached by the second failed call (messages 1 + 2 + 2 = 5): the error limit, τ²'s
    # later `if`, names the ending
    ({"max_tool_errors": 2, "max_messages": 5}, "max_tool_errors"),
    ({"max_tool_errors": 3, "max_messages": 5}, "max_messages"),
])
def test_tool_error_limit(tmp_path: Path, limits: dict[str, int], want: str) -> None:
    plan = compile_variant(tmp_path, {"limits": limits, **TAU2})
    bad = {"name": "orders__get_order", "args": {"order_id": "W999"}}
    agent = script(tmp_path, "agent.yaml", {"sessions": {"cancel": [
        {"tool_calls": [bad, bad, CANCEL], "say": "W100 has been cancelled."}]}})
    res = run(plan, tmp_path, f"scripted:{agent}")
    assert res["termination"] == want and res["score"] == 0.0
    # the third call came after the limit: refused, so neither run nor recorded
    assert [(t, e is not None) for t, e in res["tool_calls"]] == [
        ("orders__get_order", True), ("orders__get_order", True)]
    assert res["extra"]["reward"]["components"]["state"] == 0.0  # W100 was never cancelled


# --------------------------------------------------------------------------- stop tokens


@pytest.mark.parametrize(("mode", "want"), [("anywhere", "done"), ("end", "error")])
def test_stop_token_in_the_middle_of_a_message(tmp_path: Path, mode: str, want: str) -> None:
    plan = compile_variant(tmp_path, {"conversation": {"stop_tokens": mode}})
    said = "Great, thanks ###STOP### and have a nice day."
    user = script(tmp_path, "user.yaml", {"sessions": {"cancel": {"turns": [said]}}})
    agent = script(tmp_path, "agent.yaml", {"sessions": {"cancel": [
        {"tool_calls": [CANCEL], "say": "W100 has been cancelled."}]}})
    res = run(plan, tmp_path, f"scripted:{agent}", f"scripted:{user}")
    assert res["termination"] == want, res
    if mode == "anywhere":
        assert res["messages"][-1] == (2, "user", said)  # kept as written
        assert res["score"] == 1.0
    else:
        assert res["error_kind"] == "simulator" and "must end the message" in res["error"]


# --------------------------------------------------------------------------- unfinished


@pytest.mark.parametrize(("unfinished", "score"), [("fail", 0.0), ("score", 1.0)])
def test_a_user_that_never_stops(tmp_path: Path, unfinished: str, score: float) -> None:
    """The issue's example: the gold work done, a scripted user that never stops, the turn
    budget reached. τ² scores it 0 (not ended by the user)."""
    plan = compile_variant(tmp_path, {"limits": {"max_turns": 3},
                                      "conversation": {"unfinished": unfinished}})
    agent = script(tmp_path, "agent.yaml", {"sessions": {"cancel": [
        {"tool_calls": [CANCEL], "say": "W100 has been cancelled."},
        {"say": "Anything else?"}, {"say": "Anything else?"}]}})
    user = script(tmp_path, "user.yaml", {"sessions": {"cancel": {"turns": [
        "Hm.", "Hm.", "Hm."]}}})
    res = run(plan, tmp_path, f"scripted:{agent}", f"scripted:{user}")
    assert res["termination"] == "turn_budget"
    assert (res["score"], res["passed"]) == (score, score == 1.0)
    components = res["extra"]["reward"]["components"]
    assert components == {"state": 1.0, "actions": 1.0, "communicate": 1.0}  # for the record


@pytest.mark.parametrize("say", ["Done.", ""])
def test_agents_that_do_nothing_score_zero(tmp_path: Path, say: str) -> None:
    """A "Done." agent and a silent one, under τ²'s rules (rules user: it leaves when the agent
    asks nothing, so the dialogue ends with `done` and is scored): 0, as in τ² (the database
    is unchanged, the gold action missing, nothing communicated but the greeting)."""
    plan = compile_variant(tmp_path, TAU2, cancel={
        "gold": {"actions": [{**{"tool": CANCEL["name"], "args": CANCEL["args"]},
                              "match": "tau2"}]},
        "score": {"reward": ["state", "actions", "communicate"], "communicate_match": "tau2",
                  "communicate": ["W100 has been cancelled"]}})
    agent = script(tmp_path, "agent.yaml", {"default": [{"say": say}] * 3})
    res = run(plan, tmp_path, f"scripted:{agent}")
    assert res["termination"] == "done"
    assert res["extra"]["reward"]["components"] == {"state": 0.0, "actions": 0.0,
                                                    "communicate": 0.0}
    assert (res["score"], res["passed"]) == (0.0, False)


def test_the_greeting_counts_for_communicate(tmp_path: Path) -> None:
    """τ²'s communicate check reads every agent text message, the greeting included."""
    plan = compile_variant(tmp_path, TAU2, cancel={"score": {
        "reward": ["communicate"], "communicate_match": "tau2",
        "communicate": ["how can i help you"]}})
    agent = script(tmp_path, "agent.yaml", {"default": [{"say": "Done."}] * 3})
    res = run(plan, tmp_path, f"scripted:{agent}")
    assert res["extra"]["reward"]["communicate"] == [
        {"text": "how can i help you", "passed": True}]
    assert res["score"] == 1.0


# --------------------------------------------------------------------------- chat simulator


def test_chat_simulator_sees_the_dialogue_with_roles_flipped(fake_openai: FakeOpenAI,
                                                             tmp_path: Path) -> None:
    replies = iter(["Hi, please cancel my order W100.", "Thanks! ###STOP### Bye."])
    fake_openai.route("agent-model", agent_two_calls).route(
        "sim-model", lambda body: next(replies))
    plan = compile_variant(tmp_path, {"conversation": {
        **TAU2["conversation"], "simulator": "chat", "simulator_temperature": 0.25}},
        cancel={"user": {"reason": "Cancel W100.", "text": "You want order W100 cancelled."}})
    res = run(plan, tmp_path, "litellm:openai/agent-model", "litellm:openai/sim-model",
              api_base=fake_openai.base_url, max_retries=0)
    assert res["termination"] == "done" and res["score"] == 1.0, res
    sims = [r for r in fake_openai.requests if r["model"] == "sim-model"]
    assert len(sims) == 2 and all(r["temperature"] == 0.25 for r in sims)
    system = sims[0]["messages"][0]
    assert system["role"] == "system" and "You want order W100 cancelled." in system["content"]
    # the first user message is the simulator's reply to the greeting
    assert sims[0]["messages"][1:] == [{"role": "user", "content": GREETING}]
    # agent text as `user`, the user's own as `assistant`; the four tool messages not shown
    assert sims[1]["messages"][1:] == [
        {"role": "user", "content": GREETING},
        {"role": "assistant", "content": "Hi, please cancel my order W100."},
        {"role": "user", "content": "W100 has been cancelled."}]
    users = [c for _, role, c in res["messages"] if role == "user"]
    assert users == ["Hi, please cancel my order W100.", "Thanks! ###STOP### Bye."]


# --------------------------------------------------------------------------- τ² judge


def _judge_run(fake_openai: FakeOpenAI, tmp: Path, reply: Any) -> dict[str, Any]:
    fake_openai.route("judge-model", reply)
    plan = compile_variant(tmp, TAU2, cancel={"score": {
        "reward": ["state", "assertions"], "assertions_judge": "tau2",
        "assertions": ["The agent cancels W100", "The agent is polite"]}})
    agent = script(tmp, "agent.yaml", {"sessions": {"cancel": [
        {"say": "Why do you want to cancel order W100?"},
        {"tool_calls": [CANCEL], "say": "Order W100 has been cancelled."}]}})
    return run(plan, tmp, f"scripted:{agent}", judge="litellm:openai/judge-model",
               api_base=fake_openai.base_url, max_retries=0)


def test_tau2_judge_one_call_and_the_empty_results_quirk(fake_openai: FakeOpenAI,
                                                         tmp_path: Path) -> None:
    res = _judge_run(fake_openai, tmp_path, lambda body: '{"results": []}')
    calls = [r for r in fake_openai.requests if r["model"] == "judge-model"]
    assert len(calls) == 1  # one call for both assertions
    system, user = calls[0]["messages"]
    assert system["role"] == "system" and "metExpectation" in system["content"]
    text = user["content"]
    # τ²'s trajectory: every message as `role: content`, tool traffic included
    assert f"assistant: {GREETING}\nuser: I want to cancel my order W100" in text
    assert "\nassistant: None\ntool: {" in text  # the call message, then its result
    assert "['The agent cancels W100', 'The agent is polite']" in text  # τ²'s list format
    # an empty `results` list holds (τ²: all([]) is True)
    assert res["extra"]["reward"]["components"] == {"state": 1.0, "actions": 1.0,
                                                    "assertions": 1.0}
    assert res["score"] == 1.0


def test_tau2_judge_reads_metexpectation_as_pydantic(fake_openai: FakeOpenAI,
                                                     tmp_path: Path) -> None:
    answer = {"results": [
        {"expectedOutcome": "The agent cancels W100", "reasoning": "it did",
         "metExpectation": "yes"},
        {"expectedOutcome": "The agent is polite", "reasoning": "curt", "metExpectation": 0}]}
    res = _judge_run(fake_openai, tmp_path, lambda body: json.dumps(answer))
    reward = res["extra"]["reward"]
    assert [(v["text"], v["score"]) for v in reward["assertions"]] == [
        ("The agent cancels W100", 1.0), ("The agent is polite", 0.0)]
    assert (reward["components"]["assertions"], res["score"]) == (0.0, 0.0)


def test_tau2_judge_reply_that_is_not_json_is_a_judge_error(fake_openai: FakeOpenAI,
                                                            tmp_path: Path) -> None:
    res = _judge_run(fake_openai, tmp_path, lambda body: "Both outcomes are met.")
    assert len([r for r in fake_openai.requests if r["model"] == "judge-model"]) == 2  # retried
    assert res["judge_errors"] == 1
    assert res["extra"]["reward"]["components"]["assertions"] is None
    assert (res["score"], res["passed"]) == (None, None)  # unknown, never 0


# --------------------------------------------------------------------------- tool results


@pytest.mark.parametrize(("limit", "want"), [
    (0, "x" * 30_000),
    (10, "x" * 10 + "\n[… truncated: showing 10 of 30000 characters; "),
])
def test_litellm_tool_message_is_the_string_cut_as_set(fake_openai: FakeOpenAI, tmp_path: Path,
                                                       limit: int, want: str) -> None:
    def agent(body: dict[str, Any]) -> Any:
        if any(m["role"] == "tool" for m in body["messages"]):
            return "Here it is."
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": "m1", "type": "function", "function": {"name": "motto", "arguments": "{}"}}]}

    fake_openai.route("agent-model", agent)
    data = yaml.safe_load((BASE / "pack.yaml").read_text(encoding="utf-8"))
    env = data["environments"][0]
    plan = compile_variant(tmp_path, {"limits": {"max_tool_result_chars": limit}}, pack={
        "tools": [{"name": "motto", "description": "The shop's motto.",
                   "impl": {"kind": "static", "result": "x" * 30_000}}],
        "environments": [{**env, "tools": ["motto"]}]})
    user = script(tmp_path, "user.yaml", {"sessions": {"cancel": {"turns": ["ok ###STOP###"]}}})
    run(plan, tmp_path, "litellm:openai/agent-model", f"scripted:{user}",
        api_base=fake_openai.base_url, max_retries=0)
    second = [r for r in fake_openai.requests if r["model"] == "agent-model"][1]
    shown = next(m["content"] for m in second["messages"] if m["role"] == "tool")
    assert shown.startswith(want) and not shown.startswith('"')  # a str is sent as is
    if limit == 0:
        assert shown == want


def test_tagged_llm_user_answers_the_greeting(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    replies = iter(["<message>Hello, I want order W100 cancelled.</message>",
                    "<message>Thank you. ###STOP###</message>"])
    fake_openai.route("agent-model", agent_two_calls).route(
        "sim-model", lambda body: next(replies))
    plan = compile_variant(tmp_path, {"conversation": {"greeting": GREETING}})
    res = run(plan, tmp_path, "litellm:openai/agent-model", "litellm:openai/sim-model",
              api_base=fake_openai.base_url, max_retries=0)
    assert res["termination"] == "done" and res["score"] == 1.0, res
    first = next(r for r in fake_openai.requests if r["model"] == "sim-model")
    assert f"ASSISTANT: {GREETING}" in first["messages"][-1]["content"]
    assert first["temperature"] == 0
    assert [c for _, role, c in res["messages"] if role == "user"] == [
        "Hello, I want order W100 cancelled.", "Thank you."]  # the token cut (`end`)


def test_litellm_limit_mid_turn_leaves_no_extra_message(fake_openai: FakeOpenAI,
                                                        tmp_path: Path) -> None:
    fake_openai.route("agent-model", agent_two_calls)
    plan = compile_variant(tmp_path, {"limits": {"max_messages": 3}, **TAU2})
    res = run(plan, tmp_path, "litellm:openai/agent-model", api_base=fake_openai.base_url,
              max_retries=0)
    # user 1, call 2, batch 3: the transcript ends with the tool result, as τ²'s does
    assert res["termination"] == "max_messages"
    assert [role for _, role, _ in res["messages"]] == ["assistant", "user", "assistant", "tool"]
