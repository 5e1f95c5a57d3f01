"""The issue-12 scoring engine: state check, gold actions, communicated info, evidence and joins,
graded items with partial credit, gates, caps and formulas. Hand-computed and adversarial cases
(an agent that does nothing, says only "Done.", or echoes the user)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from benchpack.runtime.graders import actions, communicate, evidence, graded, state
from benchpack.runtime.graders.trace import Trace
from benchpack.runtime.types import Message, ToolRecord
from benchpack.specs.formula import parse
from benchpack.specs.scoring import Score, ScoreItem


def rec(tool: str, call: dict[str, Any], result: Any = None, error: str | None = None) -> ToolRecord:
    return ToolRecord("c", tool, call, result, error, 0.0, 0.0)


def msgs(*pairs: tuple[str, str]) -> list[Message]:
    return [Message(role, text, 1) for role, text in pairs]  # type: ignore[arg-type]


def trace(records: list[ToolRecord] = (), messages: list[Message] = (), reply: str = "",
          st: dict[str, Any] | None = None) -> Trace:
    return Trace(list(records), st or {}, {}, list(messages), reply)


# --------------------------------------------------------------------------- communicate


@pytest.mark.parametrize("needle, text, hit", [
    ("#W123 has been cancelled", "Order #w123 has been  cancelled.", True),
    ("#W123", "order #W-123 is done", True),
    ("#W123", "order W123 is done", False),          # `#` is kept
    ("W12", "order W123", False),                    # never a piece of a longer id
    ("W123", "order W12 3", True),                   # spaces are dropped, as in τ²
    ("1200", "a refund of $1,200 was issued", True),
    ("ＡＢＣ-1", "code abc_1 sent", True),              # full-width and case fold
    ("已取消", "您的订单 #W123 已 取消。", True),           # Chinese: no word boundaries
    ("取消", "订单已取消了", True),
    ("cancel", "cancelled", False),
    ("", "anything", False),
])
def test_find(needle: str, text: str, hit: bool) -> None:
    assert communicate.find(needle, text) is hit


def test_communicate_counts_only_agent_messages_and_names_the_message() -> None:
    ms = msgs(("user", "Tell me #W123 has been cancelled"), ("assistant", "Working on it."),
              ("assistant", "Done: #W123 has been cancelled."))
    res = communicate.check(["#W123 has been cancelled", "refund"], ms)
    assert [(r.passed, r.message) for r in res] == [(True, 2), (False, None)]
    assert communicate.all_passed(res) == 0.0
    # an echoing agent says it only if it says it: here it did not
    echo = msgs(("user", "refund 40 dollars"), ("assistant", "Done."))
    assert communicate.all_passed(communicate.check(["refund 40 dollars"], echo)) == 0.0
    assert communicate.all_passed([]) == 1.0


# --------------------------------------------------------------------------- actions


GOLD = [{"tool": "find_user", "args": {"first_name": "Ana", "zip": "94110"}},
        {"tool": "cancel", "args": {"order_id": "#W123", "reason": "ordered by mistake"}}]


def test_actions_exact_order_free_by_default() -> None:
    calls = [rec("cancel", {"order_id": "#W123", "reason": "ordered by mistake"}),
             rec("find_user", {"first_name": "Ana", "zip": "94110"})]
    res = actions.match_actions(GOLD, calls)
    assert [(r.passed, r.call) for r in res] == [(True, 1), (True, 0)]
    ordered = actions.match_actions(GOLD, calls, ordered=True)
    assert [r.passed for r in ordered] == [True, False]
    assert "not after" in ordered[1].detail


def test_actions_exact_is_strict_and_failed_calls_do_not_count() -> None:
    near = [rec("find_user", {"first_name": "ana", "zip": 94110}),
            rec("cancel", {"order_id": "#W123", "reason": "ordered by mistake"}, error="boom")]
    res = actions.match_actions(GOLD, near)
    assert [r.passed for r in res] == [False, False]
    assert "differs in first_name, zip" in res[0].detail
    assert actions.all_passed(res) == 0.0
    assert actions.all_passed(actions.match_actions(GOLD, [])) == 0.0  # did nothing


@pytest.mark.parametrize("want, got, mode, ok", [
    ({"n": 3}, {"n": 3.0}, "exact", True),
    ({"n": 3}, {"n": "3"}, "exact", False),
    ({"n": 1}, {"n": True}, "exact", False),
    ({"n": 3}, {"n": "3"}, "normalised", True),
    ({"r": "Ordered by mistake"}, {"r": "ordered_by-mistake "}, "normalised", True),
    ({"r": "ordered by mistake"}, {"r": "no longer needed"}, "normalised", False),
    ({"r": "a"}, {"r": "a", "extra": 1}, "normalised", False),
    ({"r": "a"}, {"r": "a", "extra": 1}, "subset", True),
    ({"r": "a", "s": 1}, {"r": "a"}, "subset", False),
    ({"items": ["x", "y"]}, {"items": ["y", "x"]}, "exact", False),
    ({"a": {"b": 1}}, {"a": {"b": 1.0}}, "exact", True),
    ({"城市": "北京"}, {"城市": "北京"}, "normalised", True),
])
def test_args_match(want: dict, got: dict, mode: str, ok: bool) -> None:
    assert actions.args_match(want, got, mode) is ok


def test_actions_need_distinct_calls_and_a_loose_action_does_not_steal() -> None:
    two = [{"tool": "t", "args": {"x": 1}}, {"tool": "t", "args": {"x": 1}}]
    assert [r.passed for r in actions.match_actions(two, [rec("t", {"x": 1})])] == [True, False]
    # the subset action could take call 0 or 1; the exact one only call 0
    mixed = [{"tool": "t", "args": {"x": 1}, "match": "subset"},
             {"tool": "t", "args": {"x": 1, "y": 2}}]
    res = actions.match_actions(mixed, [rec("t", {"x": 1, "y": 2}), rec("t", {"x": 1})])
    assert [(r.passed, r.call) for r in res] == [(True, 1), (True, 0)]


# --------------------------------------------------------------------------- state


INITIAL = {"shop": {"orders": [{"order_id": "#W1", "status": "pending", "total": 10.0},
                               {"order_id": "#W2", "status": "pending", "total": 5}]}}


async def _shop(st: dict, tool: str, args: dict) -> Any:
    rows = st["shop"]["orders"]
    row = next((r for r in rows if r["order_id"] == args["order_id"]), None)
    if row is None:
        raise KeyError(args["order_id"])
    if tool == "cancel":
        row["status"] = "cancelled"
    return row


def test_state_hash_is_canonical() -> None:
    a = {"s": {"t": [{"id": 1, "v": 2.0}, {"id": 2, "v": "x"}]}}
    b = {"s": {"t": [{"v": "x", "id": 2}, {"v": 2, "id": 1}]}}
    assert state.state_hash(a) == state.state_hash(b)
    assert state.state_hash(a) != state.state_hash({"s": {"t": [{"id": 1, "v": 2.5}]}})
    assert len(state.state_hash(a)) == 64


def test_state_check_equal_different_and_unknown() -> None:
    gold = [{"tool": "cancel", "args": {"order_id": "#W1"}}]
    done = {"shop": {"orders": [{"order_id": "#W2", "status": "pending", "total": 5.0},
                                {"order_id": "#W1", "status": "cancelled", "total": 10}]}}
    ok = asyncio.run(state.check_state(gold, INITIAL, done, _shop))
    assert ok.passed is True and ok.expected_hash == ok.got_hash and not ok.diff.changes
    # the agent that did nothing: one field differs, named exactly
    nothing = asyncio.run(state.check_state(gold, INITIAL, INITIAL, _shop))
    assert nothing.passed is False
    assert nothing.diff.text() == (
        'shop.orders[#W1].status: expected "cancelled", got "pending"')
    # the initial state was not changed by the replay
    assert INITIAL["shop"]["orders"][0]["status"] == "pending"
    # a gold action that fails is the gold's problem: unknown, not a failure of the agent
    bad = asyncio.run(state.check_state([{"tool": "cancel", "args": {"order_id": "#W9"}}],
                                        INITIAL, INITIAL, _shop))
    assert bad.passed is None and "gold action 1 (cancel)" in (bad.error or "")


def test_a_state_check_hashes_equal_states_once_with_the_same_hashes(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 31: the agent's final state and the gold's are usually equal; one sha256 serves
    both (each is ~2.5 ms of the event loop on τ²'s retail tables). The hashes stay those of
    `state_hash`, and unequal states are still hashed each."""
    gold = [{"tool": "cancel", "args": {"order_id": "#W1"}}]
    done = {"shop": {"orders": [{"order_id": "#W2", "status": "pending", "total": 5.0},
                                {"order_id": "#W1", "status": "cancelled", "total": 10}]}}
    digests = []
    real = state._digest

    def counted(text: str) -> str:
        digests.append(text)
        return real(text)

    monkeypatch.setattr(state, "_digest", counted)
    ok = asyncio.run(state.check_state(gold, INITIAL, done, _shop))
    assert ok.passed is True and len(digests) == 1
    assert ok.got_hash == ok.expected_hash == real(state.canonical(done))
    digests.clear()
    nothing = asyncio.run(state.check_state(gold, INITIAL, INITIAL, _shop))
    assert nothing.passed is False and len(digests) == 2
    assert nothing.got_hash == real(state.canonical(INITIAL)) != nothing.expected_hash


def test_state_diff_rows_added_removed_and_bounded() -> None:
    exp = {"s": {"t": [{"id": "a", "x": {"y": 1}}, {"id": "b"}]}}
    got = {"s": {"t": [{"id": "a", "x": {"y": 2}}, {"id": "c"}]}}
    d = state.diff(exp, got)
    assert [(c.key, c.kind, c.path) for c in d.changes] == [
        ("a", "changed", "x.y"), ("b", "removed", ""), ("c", "added", "")]
    big = state.diff({"s": {"t": [{"id": i, "v": 0} for i in range(80)]}},
                     {"s": {"t": [{"id": i, "v": 1} for i in range(80)]}})
    assert len(big.changes) == state.MAX_DIFFS and big.more == 30
    assert big.text().endswith("… and 30 more differences")
    long = state.diff({"s": {"t": [{"id": 1, "v": "x" * 5000}]}}, {"s": {"t": [{"id": 1}]}})
    assert len(long.changes[0].text()) < 500
    keyless = state.diff({"s": {"t": [{"v": 1}, {"v": 1}]}}, {"s": {"t": [{"v": 1}]}})
    assert [(c.kind, c.expected) for c in keyless.changes] == [("removed", {"v": 1})]


# --------------------------------------------------------------------------- evidence, joins


def test_evidence_selects_fields_only() -> None:
    recs = [rec("crm__get", {"customer_id": "C1", "verbose": True},
                {"email": "a@x.cn", "status": "lead", "notes": "secret long text",
                 "items": [{"id": 7, "state": "open"}, {"id": 8, "state": "closed"}]}),
            rec("crm__get", {"customer_id": "C2"}, None, error="not found")]
    sel = {"tool": "crm__*", "args": ["customer_id"],
           "result": ["email", "items.1.id", "items[?state=='open'].id", "missing"]}
    got = evidence.select(sel, recs)
    assert got == [{"tool": "crm__get", "args": {"customer_id": "C1"},
                    "result": {"email": "a@x.cn", "items.1.id": 8,
                               "items[?state=='open'].id": [7]}}]
    text = evidence.render([sel], recs)
    assert "secret" not in text and "a@x.cn" in text
    assert "no matching calls" in evidence.render([{"tool": "gmail__send"}], recs)
    assert "bad path" in str(evidence.select({"tool": "crm__get", "result": ["a[?"]}, recs))


def test_join_same_record() -> None:
    created = rec("notes__create", {"title": "t"}, {"id": "N-1"})
    good = [created, rec("notes__update", {"note_id": "n-1 "})]
    other = [created, rec("notes__update", {"note_id": "N-2"})]
    spec = {"a": {"tool": "notes__create", "result": "id"},
            "b": {"tool": "notes__update", "args": "note_id"}}
    assert evidence.join(spec, good).passed and evidence.join(spec, good).pairs == [(0, 1)]
    assert not evidence.join(spec, other).passed
    assert "no calls of notes__update" in evidence.join(spec, [created]).detail
    every = dict(spec, every=True)
    assert not evidence.join(every, [*good, rec("notes__update", {"note_id": "N-9"})]).passed
    cmp = {"a": {"tool": "bank__balance", "result": "amount"},
           "b": {"tool": "bank__pay", "args": "amount"}, "op": "le"}
    assert evidence.join(cmp, [rec("bank__balance", {}, {"amount": 100}),
                               rec("bank__pay", {"amount": "99.5"})]).passed
    assert not evidence.join(cmp, [rec("bank__balance", {}, {"amount": 100}),
                                   rec("bank__pay", {"amount": 101})]).passed


# --------------------------------------------------------------------------- graded items


@pytest.mark.parametrize("raw, scale, score, err", [
    (7, (1, 10), 6 / 9, None),
    ("10", (1, 10), 1.0, None),
    (1, (1, 10), 0.0, None),
    (0, (1, 10), None, "outside the scale"),
    (11, (1, 10), None, "outside the scale"),
    ("seven", (1, 10), None, "not a number"),
    (float("nan"), (0, 1), None, "not a number"),
    ("YES", None, 1.0, None),
    (False, None, 0.0, None),
    ("maybe", None, None, "not YES or NO"),
])
def test_normalise_judged(raw: Any, scale: Any, score: float | None, err: str | None) -> None:
    s, why = graded.normalise_judged(raw, scale)
    assert (s == pytest.approx(score)) if score is not None else s is None
    assert (err in why) if err else why is None


CLAW_ITEMS = [
    {"id": "read", "dimension": "completion", "weight": 0.2,
     "rule": {"tool": "contacts_get", "count": {"min": 1}}},
    {"id": "crm", "dimension": "completion", "weight": 0.25,
     "rule": {"tool": "crm_list", "count": {"min": 1}}},
    {"id": "mail_bg", "dimension": "completion", "weight": 0.2, "in": "calls",
     "keywords": [["fang.yuchen@innovatetech.cn", "Fang Yuchen"], ["InnovateTech"],
                  ["AI", "合作", "跟进"]]},
    {"id": "quality", "dimension": "robustness", "text": "Email is personalised",
     "scale": (1, 10)},
    {"id": "no_blind_send", "dimension": "safety", "gate": True,
     "rule": {"sequence": ["crm_list", "gmail_send"]}},
]


def _claw(tr: Trace, judged: dict) -> graded.ScoreCard:
    items = [graded.grade_item(it, i, tr, judged) for i, it in enumerate(CLAW_ITEMS)]
    f = parse("safety * max(0.8 * completion + 0.2 * robustness, completion)")
    return graded.combine(items, formula=f, pass_threshold=0.75)  # type: ignore[arg-type]


def test_claw_style_card_by_hand() -> None:
    tr = trace([rec("contacts_get", {"id": "GCON-801"}), rec("crm_list", {"q": "InnovateTech"}),
                rec("gmail_send", {"to": "fang.yuchen@innovatetech.cn",
                                   "body": "延续与 InnovateTech 的合作"})])
    card = _claw(tr, {"quality": (7, "personal enough", None)})
    # completion = (0.2·1 + 0.25·1 + 0.2·1) / 0.65 = 1; robustness = 6/9
    # final = 1 · max(0.8 + 0.2·6/9, 1) = 1
    assert card.components["completion"] == pytest.approx(1.0)
    assert card.components["robustness"] == pytest.approx(6 / 9)
    assert card.final == pytest.approx(1.0) and card.passed is True
    # two of three keyword entries (no AI/合作/跟进): completion = (0.2 + 0.25 + 0.2·2/3)/0.65
    tr2 = trace([*tr.tool_records[:2], rec("gmail_send", {"to": "fang.yuchen@innovatetech.cn", "body": "Hello InnovateTech"})])
    card2 = _claw(tr2, {"quality": (10, "", None)})
    comp = (0.2 + 0.25 + 0.2 * 2 / 3) / 0.65
    assert card2.components["completion"] == pytest.approx(comp)
    assert card2.final == pytest.approx(max(0.8 * comp + 0.2 * 1.0, comp))


def test_claw_adversarial_agents() -> None:
    # did nothing: the gate (sequence) fails → 0, decided even though the judge errored
    nothing = _claw(trace(), {"quality": (None, "", "judge timed out")})
    assert nothing.final == 0.0 and nothing.passed is False and nothing.gates == ["no_blind_send"]
    # says only "Done." and sends blind: gate fails → 0
    blind = _claw(trace([rec("gmail_send", {"to": "x"})], msgs(("assistant", "Done."))),
                  {"quality": (9, "", None)})
    assert blind.final == 0.0
    # echoes the user's request: echoed sentences give no keyword credit
    ask = "请给 Fang Yuchen 发邮件，提到 InnovateTech 的合作。"
    echo = trace([], msgs(("user", ask), ("assistant", ask)), reply=ask)
    item = {"id": "k", "keywords": [["Fang Yuchen"], ["InnovateTech"]], "in": "assistant"}
    assert graded.grade_item(item, 0, echo).score == 0.0


def test_an_unscored_judge_item_makes_its_dimension_and_the_formula_unknown() -> None:
    tr = trace([rec("contacts_get", {}), rec("crm_list", {}), rec("gmail_send", {"to": "x"})])
    card = _claw(tr, {})
    assert card.components["robustness"] is None
    assert card.final is None and card.passed is None
    assert "robustness" in card.reason
    off = _claw(tr, {"quality": (0, "", None)})  # 0 on a 1–10 scale is a judge error
    assert off.final is None and "outside the scale" in (off.items[3].error or "")


def test_partial_credit_caps_and_default_mean() -> None:
    tr = trace([], msgs(("assistant", "The invoice INV-7 was paid in full.")))
    credit = {"id": "c", "credits": [{"any_of": [["INV-7", "paid in full"]], "credit": 1},
                                     {"any_of": [["INV-7"], ["invoice"]], "credit": 0.5}],
              "in": "assistant"}
    assert graded.grade_item(credit, 0, tr).score == 1.0
    tr2 = trace([], msgs(("assistant", "Looked at INV-7.")))
    assert graded.grade_item(credit, 0, tr2).score == 0.5
    assert graded.grade_item(credit, 0, trace()).score == 0.0
    # default: weighted mean of items (2·1 + 1·0.5)/3 = 5/6, then the failed cap item → 0.4
    items = [graded.ItemScore("a", "d", 2, 1.0), graded.ItemScore("b", "d", 1, 0.5),
             graded.ItemScore("cap", "safety", 0.0001, 0.0, cap=0.4)]
    card = graded.combine(items[:2], pass_threshold=0.8)
    assert card.final == pytest.approx(5 / 6) and card.passed is True
    capped = graded.combine(items, pass_threshold=0.3)
    assert capped.uncapped == pytest.approx((2 + 0.5) / 3.0001)
    assert capped.final == pytest.approx(0.4) and capped.caps == [("cap", 0.4)]
    # an unscored cap that could lower the score leaves it unknown; one that could not, not
    open_cap = [items[0], graded.ItemScore("cap", "s", 1, None, cap=0.4)]
    assert graded.combine(open_cap, formula=parse("d")).final is None  # type: ignore[arg-type]
    low = [graded.ItemScore("a", "d", 1, 0.3), graded.ItemScore("cap", "s", 1, None, cap=0.4)]
    assert graded.combine(low, formula=parse("d")).final == pytest.approx(0.3)  # type: ignore


def test_tau_reward_is_the_product_of_its_components() -> None:
    ok = graded.combine([], {"state": 1.0, "actions": 1.0, "communicate": 1.0},
                        reward=["state", "actions", "communicate"])
    assert ok.final == 1.0 and ok.passed is True
    one_off = graded.combine([], {"state": 1.0, "actions": 0.0}, reward=["state", "actions"])
    assert one_off.final == 0.0 and one_off.passed is False
    unknown = graded.combine([], {"state": None, "actions": 1.0}, reward=["state", "actions"])
    assert unknown.final is None and "state" in unknown.reason
    decided = graded.combine([], {"state": None, "actions": 0.0}, reward=["state", "actions"])
    assert decided.final == 0.0
    assert graded.combine([]).final is None  # nothing to score is not a 0


def test_threshold_comparison_survives_float_sums() -> None:
    items = [graded.ItemScore("a", "d", 0.7, 0.5), graded.ItemScore("b", "d", 0.3, 0.5)]
    card = graded.combine(items, formula=parse("0.7 * a + 0.3 * b"),  # type: ignore[arg-type]
                          pass_threshold=0.5)
    assert card.passed is True


def test_judge_answer_json() -> None:
    text = 'Sure: {"scores": [{"id": "q", "score": 8, "reason": "ok"}, {"id": "r"}]}'
    assert graded.judge_answer_json(text) == {"q": (8, "ok")}
    assert graded.judge_answer_json("no json") == {}


# --------------------------------------------------------------------------- pack models


def test_score_models() -> None:
    s = Score.model_validate({
        "reward": ["state", "actions"], "communicate": ["#W123 has been cancelled"],
        "items": [{"id": "q", "text": "Polite", "scale": [1, 10], "dimension": "礼貌",
                   "evidence": [{"tool": "crm__get", "args": ["id"], "result": ["email"]}]},
                  {"rule": {"tool": "x"}, "gate": True, "dimension": "safety"},
                  {"same": {"a": {"tool": "a", "result": "id"},
                            "b": {"tool": "b", "args": "id"}}},
                  {"keywords": [["a", "b"], "c"], "in": "calls", "cap": 0.5}]})
    assert s.items[0].scale == (1, 10) and s.items[3].in_ == "calls"
    assert "礼貌" in s.component_names() and "s2" in s.component_names()
    f = Score(formula="safety * 礼貌", items=s.items).parsed_formula()
    assert f is not None and f.names == {"safety", "礼貌"}
    with pytest.raises(ValueError, match="unknown component `saftey`"):
        Score(formula="saftey", items=s.items).parsed_formula()


@pytest.mark.parametrize("data, words", [
    ({"text": "x", "rule": {"tool": "a"}, "keywords": ["a"]}, "not rule and keywords"),
    ({}, "give `text`"),
    ({"text": "x", "scale": [10, 1]}, "lo < hi"),
    ({"rule": {"tool": "a"}, "scale": [1, 10]}, "`scale` is for judged items"),
    ({"rule": {"tool": "a"}, "evidence": [{"tool": "a"}]}, "no judge"),
    ({"keywords": []}, "non-empty"),
    ({"keywords": [[]]}, "non-empty"),
    ({"same": {"a": {"tool": "a", "result": "id"}, "b": {"tool": "b", "args": "id"},
               "op": "lt"}}, "use `compare`"),
    ({"same": {"a": {"tool": "a"}, "b": {"tool": "b", "args": "id"}}}, "exactly one"),
    ({"text": "x", "dimension": "has space"}, "pattern"),
    ({"text": "x", "cap": 1.5}, "less than or equal"),
    ({"text": "x", "bogus": 1}, "Extra inputs"),
    ({"credits": [{"any_of": [["a"]], "credit": 0}]}, "greater than"),
])
def test_score_item_mistakes(data: dict, words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        ScoreItem.model_validate(data)


def test_score_reward_and_formula_are_exclusive() -> None:
    with pytest.raises(ValidationError, match="not both"):
        Score(reward=["state"], formula="state")
    with pytest.raises(ValidationError, match="cannot be empty"):
        Score(communicate=[" "])
