"""τ²-bench's rules as units (issue 23, WP-D): action matching (`compare_args`, the keys of the
call, Python `==`, failed calls, one call for several actions), the communicate test, stop
tokens anywhere, the judge's JSON, the trajectory text, the message budget; and the compiler's
side of the new fields. Expectations are worked out by hand from τ²'s code (`Action.
compare_with_tool_call`, `CommunicateEvaluator`, `UserSimulator.is_stop`,
`NLAssertionsEvaluator`, `Orchestrator._check_termination`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchpack.compiler import compile_pack
from benchpack.runtime.graders.actions import match_actions, tau2_match
from benchpack.runtime.graders.communicate import check, find_tau2
from benchpack.runtime.judges.base import ParseError
from benchpack.runtime.judges.instructed_user import (
    find_stop,
    parse_tau2_results,
    scenario_text,
    trajectory_text,
)
from benchpack.runtime.types import Message, MessageBudget, ToolRecord

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "tests" / "fixtures" / "instructed_user"


def call(tool: str, args: dict[str, Any], error: str | None = None) -> ToolRecord:
    return ToolRecord(call_id="c", tool_name=tool, call=args, result=None, error=error,
                      started_at=0.0, duration=0.0)


def gold(args: dict[str, Any], compare: list[str] | None = None, tool: str = "cancel"
         ) -> dict[str, Any]:
    return {"tool": tool, "args": args, "match": "tau2", "compare": compare}


# --------------------------------------------------------------------------- actions


@pytest.mark.parametrize(("want", "got", "matches"), [
    # compare_args absent: the keys of the CALL are compared
    (gold({"order_id": "W1", "reason": "x"}), {"order_id": "W1"}, True),
    (gold({"order_id": "W1"}), {"order_id": "W1", "reason": "x"}, False),  # reason vs absent
    (gold({"order_id": "W1", "reason": "x"}), {}, True),  # `{}`: nothing compared
    # compare_args
    (gold({"order_id": "W1", "reason": "x"}, ["order_id"]), {"order_id": "W1", "reason": "y"},
     True),
    (gold({"order_id": "W1"}, ["order_id", "reason"]), {"order_id": "W1", "reason": "y"},
     False),
    (gold({"order_id": "W1"}, ["order_id", "note"]), {"order_id": "W1"}, True),  # absent both
    (gold({"order_id": "W1"}, []), {"order_id": "W9"}, True),  # [] compares nothing
    # Python ==
    (gold({"n": 3}), {"n": 3.0}, True),
    (gold({"flag": 1}), {"flag": True}, True),
    (gold({"n": 3}), {"n": "3"}, False),
    (gold({"items": ["a", "b"]}), {"items": ["b", "a"]}, False),
    (gold({"order_id": "W1"}, tool="refund"), {"order_id": "W1"}, False),  # another tool
])
def test_tau2_action_matching(want: dict[str, Any], got: dict[str, Any], matches: bool) -> None:
    assert tau2_match(want, call("cancel", got)) is matches


def test_tau2_actions_count_failed_calls_and_share_them() -> None:
    records = [call("cancel", {"order_id": "W1"}, error="Error: order is not pending"),
               call("lookup", {"id": "u1"})]
    actions = [gold({"order_id": "W1", "reason": "x"}), gold({"order_id": "W1"}, ["order_id"]),
               {"tool": "lookup", "args": {"id": "u1"}, "match": "exact"},
               {"tool": "cancel", "args": {"order_id": "W1"}, "match": "exact"}]
    res = match_actions(actions, records)
    # the failed call does both τ² actions; an exact action needs a successful call
    assert [(r.passed, r.call) for r in res] == [(True, 0), (True, 0), (True, 1),
                                                 (False, None)]
    assert res[3].detail == "never called cancel"  # its only call failed


def test_tau2_action_miss_says_what_was_compared() -> None:
    res = match_actions([gold({"order_id": "W1"}, ["order_id"])],
                        [call("cancel", {"order_id": "W2"})])
    assert not res[0].passed
    assert res[0].detail == "1 call(s) of cancel, none with these arguments (compared: order_id)"


# --------------------------------------------------------------------------- communicate


@pytest.mark.parametrize(("info", "text", "found"), [
    ("W12", "Your order W123 is on its way.", True),  # a substring, not a word
    ("refund of 1200", "A refund of $1,200 was issued.", False),  # the `$` stays
    ("refund of $1200", "A refund of $1,200 was issued.", True),  # commas of the message go
    ("Paris, France", "Shipped to Paris, France.", False),  # the string's comma stays
    ("W100 has been cancelled", "w100 HAS BEEN CANCELLED!", True),
    ("W100 has been cancelled", "W100 has been canceled", False),
    ("ok", "   ", False),  # no text content
])
def test_tau2_communicate(info: str, text: str, found: bool) -> None:
    assert find_tau2(info, text) is found
    msgs = [Message("user", text, 1), Message("assistant", text, 1)]
    assert check([info], msgs, "tau2")[0].passed is found


def test_words_communicate_unchanged() -> None:
    msgs = [Message("assistant", "Your order W123 is on its way.", 1)]
    assert not check(["W12"], msgs)[0].passed


# --------------------------------------------------------------------------- stop tokens


@pytest.mark.parametrize(("text", "signal"), [
    ("Thanks ###STOP### bye", "done"),
    ("###TRANSFER### please ###STOP###", "transfer"),  # the first one found
    ("ok ###OUT-OF-SCOPE###", "out_of_scope"),
    ("### STOP ###", None),  # only the exact tokens
    ("stop", None),
])
def test_stop_tokens_anywhere(text: str, signal: str | None) -> None:
    assert find_stop(text) == (text, signal)


# --------------------------------------------------------------------------- τ² judge


@pytest.mark.parametrize(("text", "met"), [
    ('{"results": []}', []),
    ('{"other": 1}', []),  # `results` missing: τ²'s .get(..., [])
    ('  {"results": [{"expectedOutcome": "a", "reasoning": "r", "metExpectation": true}]}\n',
     [True]),
    ('{"results": [{"expectedOutcome": "a", "reasoning": "r", "metExpectation": "no"}]}',
     [False]),
    ('{"results": [{"expectedOutcome": "a", "reasoning": "r", "metExpectation": 1}]}', [True]),
])
def test_tau2_results_parse(text: str, met: list[bool]) -> None:
    assert [r["met"] for r in parse_tau2_results(text)] == met


@pytest.mark.parametrize("text", [
    "Both are met.",
    '```json\n{"results": []}\n```',  # τ² reads the reply with json.loads, no fences
    '[{"metExpectation": true}]',
    '{"results": {"a": 1}}',
    '{"results": [{"expectedOutcome": "a", "metExpectation": true}]}',  # no reasoning
    '{"results": [{"expectedOutcome": "a", "reasoning": "r", "metExpectation": "maybe"}]}',
    '{"results": [{"expectedOutcome": 1, "reasoning": "r", "metExpectation": true}]}',
])
def test_tau2_results_that_tau2_could_not_read(text: str) -> None:
    with pytest.raises(ParseError):
        parse_tau2_results(text)


def test_trajectory_text_is_role_colon_content() -> None:
    msgs = [Message("assistant", "Hi!", 0), Message("user", "Cancel W1.", 1),
            Message("assistant", "", 1, tool_calls=[{"id": "c", "name": "cancel",
                                                     "arguments": {}}]),
            Message("tool", "Error: no", 1, tool_call_id="c", name="cancel"),
            Message("assistant", "Done.", 1)]
    assert trajectory_text(msgs) == ("assistant: Hi!\nuser: Cancel W1.\nassistant: None\n"
                                     "tool: Error: no\nassistant: Done.")


def test_trajectory_text_shows_the_users_own_tool_calls_where_tau2_does() -> None:
    # τ²'s NL judge reads the user's own calls too (task_102's customer submits a referral):
    # before the user's next message, each a `user: None` tool-call message and its result
    msgs = [Message("assistant", "Hi! How can I help you today?", 0),
            Message("user", "I want to refer a friend.", 1),
            Message("assistant", "", 1, tool_calls=[{"id": "a1", "name": "get_referrals",
                                                     "arguments": {}}]),
            Message("tool", "[]", 1, tool_call_id="a1", name="get_referrals"),
            Message("assistant", "Please submit the referral.", 1),
            Message("user", "Done, I submitted it.", 2),
            Message("assistant", "Thanks!", 2)]

    def rec(name: str, result: Any, turn: int, at: float, side: str,
            error: str | None = None) -> ToolRecord:
        return ToolRecord(call_id=name, tool_name=name, call={}, result=result, error=error,
                          started_at=at, duration=0.0, turn=turn, side=side)  # type: ignore[arg-type]

    records = [rec("get_referrals", [], 1, 1.0, "agent"),
               rec("submit_referral", "Referral REF-1 submitted.", 1, 2.0, "user"),
               rec("submit_referral", None, 1, 3.0, "user", error="already referred"),
               rec("check_status", {"ok": True}, 2, 4.0, "user")]
    assert trajectory_text(msgs, records) == (
        "assistant: Hi! How can I help you today?\n"
        "user: I want to refer a friend.\n"
        "assistant: None\n"
        "tool: []\n"
        "assistant: Please submit the referral.\n"
        "user: None\n"
        "tool: Referral REF-1 submitted.\n"
        "user: None\n"
        "tool: Error: already referred\n"
        "user: Done, I submitted it.\n"
        "assistant: Thanks!\n"
        # a call after the last message (the message limit reached after the batch)
        "user: None\n"
        'tool: {"ok": true}')
    # without the user's records: as before
    assert "user: None" not in trajectory_text(msgs, records[:1])


# --------------------------------------------------------------------------- budget


def test_message_budget_checks_like_tau2() -> None:
    b = MessageBudget(max_messages=5, max_tool_errors=2)
    b.count()  # the user
    b.tool_done(failed=True)  # call + result: 3 messages, 1 error
    assert b.reason is None
    b.tool_done(failed=True)  # 5 messages and 2 errors at once: the later `if` wins
    assert (b.messages, b.tool_errors, b.reason) == (5, 2, "max_tool_errors")
    b.tool_done(failed=False)
    assert b.reason == "max_tool_errors"  # the first ending stands
    own = MessageBudget(max_messages=3)
    own.agent_counts = True  # an adapter that counts its responses itself
    own.tool_done(failed=True)
    assert (own.messages, own.tool_errors, own.reason) == (0, 1, None)


def test_scenario_text_default_and_verbatim() -> None:
    user = {"reason": "Cancel W1.", "known": ["My zip is 94110."], "unknown": ["My id."],
            "instructions": [{"text": "Be brief."},
                             {"text": "It was a mistake.", "if": ["why"], "stop": None},
                             {"text": "Bye.", "after_turn": 2, "stop": "done"}]}
    text = scenario_text(user)
    assert text.startswith("Why you are contacting the agent: Cancel W1.")
    assert "- My zip is 94110." in text and "- My id." in text and "- Be brief." in text
    assert '- If the agent mentions why, say: "It was a mistake."' in text
    assert "Then end the conversation with ###STOP###." in text
    assert scenario_text({**user, "text": "Persona: …\nInstructions: …"}) == \
        "Persona: …\nInstructions: …"


# --------------------------------------------------------------------------- compiler


def _compile(tmp: Path, edit: Any) -> tuple[bool, list[str], dict[str, Any]]:
    data = yaml.safe_load((BASE / "pack.yaml").read_text(encoding="utf-8"))
    edit(data)
    src = tmp / "pack"
    src.mkdir(exist_ok=True)
    (src / "pack.yaml").write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    (src / "policy.md").write_text("Policy.", encoding="utf-8")
    res = compile_pack(src, tmp / "out", use_cache=False)
    plan = json.loads((tmp / "out" / "plan.json").read_text()) if res.ok else {}
    return res.ok, [d.format() for d in res.diagnostics], plan


def _sessions(data: dict[str, Any]) -> list[dict[str, Any]]:
    return list(data["episodes"][0]["sessions"])


def test_conversation_defaults_merge_field_by_field(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["defaults"] = {"conversation": {"greeting": "Hello!", "unfinished": "fail"},
                            "limits": {"max_messages": 200, "max_tool_errors": 10}}
        cancel = _sessions(data)[0]
        cancel["conversation"] = {"unfinished": "score", "simulator": "chat"}
        cancel["user"]["text"] = "Verbatim scenario."
        cancel["gold"]["actions"][0].update(match="tau2", compare=["order_id"])

    ok, diags, plan = _compile(tmp_path, edit)
    assert ok, diags
    s = plan["sessions"]["session.orders-desk.support.cancel"]
    assert s["conversation"] == {"greeting": "Hello!", "simulator": "chat", "stop_tokens": "end",
                                 "unfinished": "score", "simulator_temperature": 0.0}
    # a message limit lifts the turn budget out of its way (a turn takes two messages)
    assert s["limits"] == {"max_turns": 200, "max_steps_per_turn": 30, "turn_timeout_s": 600.0,
                           "max_messages": 200, "max_tool_errors": 10}
    assert s["user"]["text"] == "Verbatim scenario."
    assert s["gold"]["actions"][0]["compare"] == ["order_id"]
    assert plan["defaults"]["limits"]["max_messages"] == 200
    other = plan["sessions"]["session.orders-desk.support.refund"]
    assert other["conversation"]["unfinished"] == "fail"  # the pack's, untouched


def test_plans_without_the_new_fields_have_none_of_their_keys(tmp_path: Path) -> None:
    ok, diags, plan = _compile(tmp_path, lambda data: None)
    assert ok, diags
    assert set(plan["defaults"]["limits"]) == {"max_turns", "max_steps_per_turn",
                                               "turn_timeout_s"}
    s = plan["sessions"]["session.orders-desk.support.cancel"]
    assert "conversation" not in s and "text" not in s["user"]
    assert "compare" not in s["gold"]["actions"][0]
    assert set(s["reward"]) == {"reward", "communicate", "assertions", "pass_threshold"}


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: _sessions(d)[0]["gold"]["actions"][0].update(compare=["order_id"]),
     "`compare` is for `match: tau2`"),
    (lambda d: (_sessions(d)[0]["gold"]["actions"][0].update(match="tau2"),
                _sessions(d)[0]["gold"].update(ordered=True)),
     "matches as τ² does, which has no order"),
    (lambda d: _sessions(d)[0].update(conversation={"stop_tokens": "middle"}),
     "stop_tokens"),
])
def test_mistakes_in_the_new_fields_are_located(tmp_path: Path, edit: Any, message: str) -> None:
    ok, diags, _ = _compile(tmp_path, edit)
    assert not ok and any(message in d and "pack.yaml:" in d for d in diags), diags


def test_message_limits_belong_to_instructed_user(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["defaults"] = {"limits": {"max_messages": 50}}
        data["episodes"][0]["sessions"].append({
            "id": "chat", "protocol": "verified_outcome", "request": "Hello",
            "limits": {"max_tool_errors": 3},
            "conversation": {"greeting": "Hi"}})

    ok, diags, _ = _compile(tmp_path, edit)
    assert not ok
    assert any("E204" in d and "`limits.max_tool_errors` is honoured by the instructed_user"
               in d for d in diags), diags
    assert any("E204" in d and "conversation" in d for d in diags), diags
    # the pack-wide max_messages is no mistake: it reaches instructed_user sessions only
    assert not any("max_messages" in d for d in diags), diags


# --------------------------------------------------------------------------- tool results


def test_every_adapter_renders_a_result_alike() -> None:
    """A string result as is, an error as `Error: …`, anything else as JSON: the litellm
    agent's tool message, the MCP server's text (cmd2 and acp harnesses; cut per
    `max_tool_result_chars`) and the transcripts of scripted, cmd and acp agents."""
    from benchpack.runtime.agents import tool_call_messages
    from benchpack.runtime.mcp.server import _result

    text = ToolRecord("c", "motto", {}, "plain words", None, 0.0, 0.0)
    data = ToolRecord("c", "get", {}, {"id": "W1", "n": 2}, None, 0.0, 0.0)
    failed = ToolRecord("c", "get", {}, None, "Order not found", 0.0, 0.0)
    assert [tool_call_messages(r)[1].content for r in (text, data, failed)] == [
        "plain words", '{"id": "W1", "n": 2}', "Error: Order not found"]
    assert _result(text).content[0].text == "plain words"
    assert _result(text, 5).content[0].text.startswith("plain\n[… truncated: showing 5 of 11")
    assert _result(text, 0).content[0].text == "plain words"
    assert _result(failed).is_error
