"""Trigger rubrics (ProactBench): offline replay, live planner/user loop and judges (the
judge's quotes are checked in `test_trigger_quotes.py`).

The reference pack `taskpacks/proact-quilt-show` authors four triggers (turns 2, 5, 8, 10) and
a ten-turn dialogue over four styles; `tests/fixtures/trigger_rubric/live_pack` has a scenario
with three anchors and nothing authored, so its triggers come from the planner.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest
import trigger_agents
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401
from test_trigger_quotes import Answers

from benchpack.compiler import compile_pack
from benchpack.runtime.judges.base import JudgeCall, Templates
from benchpack.runtime.judges.trigger import (
    Decision,
    LLMPlanner,
    LLMUserAgent,
    Order,
    PlannerState,
    Scenario,
    TriggerSpec,
    fit,
    length_problem,
    trait_directives,
)
from benchpack.runtime.planfile import load_plan
from benchpack.runtime.runner import RunSummary
from benchpack.specs.plan import Plan, PlanStyle
from conftest import bench_run

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "trigger_rubric"
QUILT_SCRIPT = FIXTURES / "quilt_script.yaml"
PROACTIVE = ROOT / "taskpacks" / "proact-quilt-show" / "demo" / "proactive_agent.yaml"
RECORDING = "python:trigger_agents:recording_agent"
P_Q = "session.proact-quilt-show.first-juried-show.artist-statement@P+Q"
KIT_EQ = "session.trigger-live.season.kit-order@E+Q"
KIT_P = "session.trigger-live.season.kit-order@P"


@pytest.fixture(scope="module")
def quilt_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("quilt")
    res = compile_pack(ROOT / "taskpacks" / "proact-quilt-show", out, use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    return out


@pytest.fixture(scope="module")
def live_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("live")
    res = compile_pack(FIXTURES / "live_pack", out, use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    return out


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    trigger_agents.CALLS.clear()


def _run(plan: Path, tmp_path: Path, **kw: Any) -> RunSummary:
    return bench_run(plan, tmp_path, **{"agent": RECORDING, **kw})[1]


def _query(tmp_path: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(tmp_path / "bench.duckdb"), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def _extra(tmp_path: Path, run_id: str, session_id: str) -> dict[str, Any]:
    rows = _query(tmp_path, "SELECT extra FROM sessions WHERE run_id=? AND session_id=?",
                  run_id, session_id)
    return dict(json.loads(rows[0][0]))


# --------------------------------------------------------------------------- offline


def test_offline_sends_only_trigger_turns_to_the_agent(quilt_plan: Path, tmp_path: Path) -> None:
    summary = _run(quilt_plan, tmp_path, run_id="off")
    assert (summary.finished, summary.errors) == (4, 0)
    plan = load_plan(quilt_plan)
    assert len(trigger_agents.CALLS) == 16  # 4 trigger turns x 4 styles, nothing else
    for sid, s in plan.sessions.items():
        calls = [c for c in trigger_agents.CALLS if c["session"] == sid]
        assert [c["turn"] for c in calls] == [2, 5, 8, 10]
        for c in calls:
            t = c["turn"]
            # a fresh conversation on the fixed turns 1..t-1, then the fixed user message t
            assert c["history"] == [x for d in s.dialogue[:t - 1]
                                    for x in (("user", d.user), ("assistant", d.assistant))]
            assert c["message"] == s.dialogue[t - 1].user
        extra = _extra(tmp_path, "off", sid)
        assert extra["dialogue_source"] == "authored"
        assert extra["reference_responses"] == {str(t): s.dialogue[t - 1].assistant
                                                for t in (2, 5, 8, 10)}
    sessions = _query(tmp_path, "SELECT DISTINCT trigger_mode, triggers, turns, termination "
                                "FROM sessions WHERE run_id='off'")
    assert sessions == [("offline", 4, 4, "completed")]
    # the stored transcript still reads as the whole dialogue: 6 fixed turns + 4 regenerated
    names = _query(tmp_path, "SELECT name, role, count(*) FROM messages WHERE run_id='off' AND "
                             "session_id=? GROUP BY ALL ORDER BY ALL", P_Q)
    assert names == [("fixed", "assistant", 6), ("fixed", "user", 6), (None, "assistant", 4),
                     (None, "user", 4)]
    rows = _query(tmp_path, "SELECT trigger_id, type, turn, mode, origin, anchors, "
                            "pass_criteria, response FROM triggers WHERE run_id='off' AND "
                            "session_id=? ORDER BY turn", P_Q)
    authored = plan.sessions[P_Q].triggers
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in rows] == [
        (t.id, t.type, t.turn, "offline", "authored") for t in authored]
    assert [json.loads(r[5]) for r in rows] == [t.anchors for t in authored]
    assert [r[6] for r in rows] == [t.rubric.pass_ for t in authored]
    assert all(r[7].startswith(f"Answer to turn {r[2]}.") for r in rows)


def _judge_route(paraphrase_turns: set[int]) -> Any:
    def judge(body: dict[str, Any]) -> str:
        prompt = body["messages"][0]["content"]
        found = re.search(r"<response>\n(.*?)\n</response>", prompt, re.S)
        turn = re.search(r"\(turn (\d+)\)", prompt)
        assert found and turn
        words = found.group(1).split()
        evidence = (" ".join(words[:7]) if int(turn.group(1)) not in paraphrase_turns
                    else "The assistant suggested a concrete next step.")
        return json.dumps({"label": "PASS", "rationale": "a concrete next step",
                           "evidence": evidence})
    return judge


def test_offline_llm_judge_sees_history_and_rubric_never_persona_or_style(
        fake_openai: FakeOpenAI, quilt_plan: Path, tmp_path: Path) -> None:
    fake_openai.route("judge-model", _judge_route(paraphrase_turns={8}))
    summary = _run(quilt_plan, tmp_path, run_id="llm", judge="litellm:openai/judge-model",
                   api_base=fake_openai.base_url, sessions=["*@P+Q"], max_retries=0)
    assert (summary.finished, summary.errors, summary.judge_errors) == (1, 0, 1)
    plan = load_plan(quilt_plan)
    s = plan.sessions[P_Q]
    persona = plan.personas[s.persona]
    assert s.style is not None and s.scenario is not None
    prompts = [str(r["messages"][0]["content"]) for r in fake_openai.requests]
    assert len(prompts) == 5  # 4 triggers + 1 retry of the paraphrased quote
    for p in prompts:
        assert "Odette" not in p and persona.profile.role[:40] not in p
        assert all(c[:40] not in p for c in persona.profile.constraints)
        assert s.style.code not in p and "terse" not in p and "chatty" not in p
        assert all(d not in p for d in trait_directives(s.style))
        assert s.scenario.hidden_goal[:40] not in p
    p5 = next(p for p in prompts if "(turn 5)" in p)
    d = s.dialogue
    assert all(d[k].user in p5 and str(d[k].assistant) in p5 for k in range(4))
    assert d[4].user in p5 and d[5].user not in p5 and str(d[4].assistant) not in p5
    assert s.triggers[1].rubric.pass_ in p5 and "Answer to turn 5." in p5
    retry = next(r for r in fake_openai.requests if len(r["messages"]) > 1)
    assert "does not occur in the response" in retry["messages"][-1]["content"]
    rows = _query(tmp_path, "SELECT turn, label, score, quote_found, judge_error IS NULL "
                            "FROM triggers WHERE run_id='llm' ORDER BY turn")
    assert rows == [(2, "PASS", 1.0, True, True), (5, "PASS", 1.0, True, True),
                    (8, None, None, False, False), (10, "PASS", 1.0, True, True)]
    assert _query(tmp_path, "SELECT triggers, trigger_pass_rate, trigger_score, judge_errors "
                            "FROM sessions WHERE run_id='llm'") == [(4, 1.0, 1.0, 1)]


# --------------------------------------------------------------------------- live


def _words(tmp_path: Path, run_id: str, session_id: str) -> dict[int, int]:
    rows = _query(tmp_path, "SELECT turn, content FROM messages WHERE run_id=? AND "
                            "session_id=? AND role='user' ORDER BY seq", run_id, session_id)
    return {int(t): len(str(c).split()) for t, c in rows}


def test_live_rules_planner_declares_triggers_in_their_windows(live_plan: Path,
                                                              tmp_path: Path) -> None:
    summary = _run(live_plan, tmp_path, run_id="live", trigger_mode="live")
    assert (summary.finished, summary.errors) == (2, 0)
    for sid, lo, hi in ((KIT_EQ, 40, 100), (KIT_P, 5, 25)):
        rows = _query(tmp_path, "SELECT trigger_id, type, turn, mode, origin, anchors FROM "
                                "triggers WHERE run_id='live' AND session_id=? ORDER BY turn",
                      sid)
        assert [(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows] == [
            ("t2", "emergent", 2, "live", "planner", ["shifts"]),
            ("t4", "critical", 4, "live", "planner", ["supplier", "sizes"]),
            ("t8", "recovery", 8, "live", "planner", ["shifts", "supplier", "sizes"]),
            ("t10", "recovery", 10, "live", "planner", ["shifts", "supplier", "sizes"])]
        extra = _extra(tmp_path, "live", sid)
        assert [t["disclose"] for t in extra["planner_turns"]] == [
            [], ["shifts"], ["supplier"], ["sizes"], [], [], [], [], [], []]
        assert "planner_violations" not in extra and "style_violations" not in extra
        words = _words(tmp_path, "live", sid)
        assert all(lo <= n <= hi for t, n in words.items() if t > 1), words
        calls = [c for c in trigger_agents.CALLS if c["session"] == sid]
        assert [c["turn"] for c in calls] == list(range(1, 11))
        assert all(c["history"] == [] for c in calls)  # one conversation, nothing replayed
    assert _query(tmp_path, "SELECT DISTINCT trigger_mode, triggers FROM sessions") == \
        [("live", 4)]


def test_live_with_authored_triggers_discloses_their_anchors_in_time(quilt_plan: Path,
                                                                    tmp_path: Path) -> None:
    summary = _run(quilt_plan, tmp_path, run_id="live", trigger_mode="live",
                   sessions=["*@V"], agent=f"scripted:{PROACTIVE}")
    assert summary.errors == 0
    sid = P_Q.replace("@P+Q", "@V")
    rows = _query(tmp_path, "SELECT trigger_id, turn, origin, label FROM triggers ORDER BY turn")
    assert rows == [("e-dropoff", 2, "authored", "PASS"), ("c-weight-limit", 5, "authored",
                                                           "PASS"),
                    ("r-form-done", 8, "authored", "PASS"), ("r-sign-off", 10, "authored",
                                                             "PASS")]
    turns = _extra(tmp_path, "live", sid)["planner_turns"]
    assert {t["turn"]: t["disclose"] for t in turns if t["disclose"]} == {
        2: ["drop-off"], 4: ["shoulder"], 5: ["quilt-weight"]}
    first = _query(tmp_path, "SELECT content FROM messages WHERE role='user' AND turn=1")
    assert first == [(load_plan(quilt_plan).sessions[sid].request,)]


def test_scripted_planner_user_and_judge_over_the_reference_pack(quilt_plan: Path,
                                                                tmp_path: Path) -> None:
    script = f"scripted:{QUILT_SCRIPT}"
    summary = _run(quilt_plan, tmp_path, run_id="s", trigger_mode="live", sessions=["*@P+Q"],
                   agent=f"scripted:{PROACTIVE}", planner=script, simulator=script,
                   judge=script)
    assert (summary.errors, summary.judge_errors) == (0, 1)
    said = dict(_query(tmp_path, "SELECT turn, content FROM messages WHERE role='user' "
                                 "AND turn > 1"))
    assert said[8] == "Put $2,000. Form's done and submitted. That's everything."
    rows = _query(tmp_path, "SELECT trigger_id, label, score, quote_found, judge_error "
                            "FROM triggers ORDER BY turn")
    assert [r[:4] for r in rows] == [("e-dropoff", "PASS", 1.0, True),
                                     ("c-weight-limit", "PARTIAL", 0.5, True),
                                     ("r-form-done", "PASS", 1.0, True),
                                     ("r-sign-off", None, None, False)]
    assert "does not occur in the response" in rows[3][4]
    # PASS + PARTIAL + PASS over the three judged triggers; the judge error is excluded
    (rate, score, errors), = _query(tmp_path, "SELECT trigger_pass_rate, trigger_score, "
                                              "judge_errors FROM sessions")
    assert (round(rate, 4), round(score, 4), errors) == (0.6667, 0.8333, 1)
    extra = _extra(tmp_path, "s", P_Q)
    assert extra["trigger_labels"] == {"emergent": {"PASS": 1}, "critical": {"PARTIAL": 1},
                                       "recovery": {"PASS": 1, "ERROR": 1}}
    assert "style_violations" not in extra and "planner_violations" not in extra


def test_authored_trigger_whose_anchors_were_never_disclosed_is_kept_and_recorded(
        quilt_plan: Path, tmp_path: Path) -> None:
    silent = tmp_path / "silent.yaml"
    silent.write_text("sessions: {artist-statement: {turns: {}}}\n")
    summary = _run(quilt_plan, tmp_path, run_id="s", trigger_mode="live", sessions=["*@V"],
                   planner=f"scripted:{silent}")
    assert summary.errors == 0
    extra = _extra(tmp_path, "s", P_Q.replace("@P+Q", "@V"))
    assert [(v["turn"], v["kept_trigger"]) for v in extra["planner_violations"]] == [
        (2, True), (5, True), (8, True), (10, True)]
    assert "`e-dropoff` relies on anchors not disclosed yet: ['drop-off']" in \
        extra["planner_violations"][0]["problems"][0]
    assert _query(tmp_path, "SELECT count(*) FROM triggers") == [(4,)]


def _planner_route(body: dict[str, Any]) -> str:
    prompt = str(body["messages"][0]["content"])
    found = re.search(r"## Now: turn (\d+) of (\d+)", prompt)
    assert found
    turn, retry = int(found.group(1)), len(body["messages"]) > 1
    assert "E+Q" not in prompt and "chatty" not in prompt and "40–100" not in prompt
    disclose = {2: ["shifts"], 3: ["supplier"]}.get(turn, [])
    trigger: dict[str, Any] | None = None
    rubric = {"pass": f"pass criterion for turn {turn}", "partial": "partial criterion",
              "fail": "fail criterion"}
    if turn == 2:
        trigger = {"type": "emergent", "anchors": ["shifts"], **rubric}
    elif turn == 4:  # first an emergent trigger outside its window, fixed on the retry
        trigger = {"type": "critical" if retry else "emergent",
                   "anchors": ["shifts", "supplier"], **rubric}
    elif turn == 6:  # a recovery trigger in the critical window, twice: dropped and recorded
        trigger = {"type": "recovery", "anchors": [], **rubric}
    elif turn in (8, 10):
        trigger = {"type": "recovery", "anchors": ["shifts"], **rubric}
    return json.dumps({"trigger": trigger, "order": {
        "intent": f"order {turn}", "content": ["say something"], "disclose": disclose}})


def _user_route(body: dict[str, Any]) -> str:
    prompt = str(body["messages"][0]["content"])
    assert "Get the kits ordered" not in prompt  # never the hidden goal
    assert "40–100 words" in prompt and "probe: ask why" in prompt  # style E+Q
    retry = len(body["messages"]) > 1
    n = 12 if "order 3" in prompt or ("order 5" in prompt and not retry) else 50
    return "<message>\n" + " ".join(["word"] * n) + "\n</message>"


def _agent_route(body: dict[str, Any]) -> str:
    turn = sum(1 for m in body["messages"] if m["role"] == "user")
    return f"Reply number {turn}: here is a concrete step you did not ask for, planned ahead."


def test_live_llm_roles_on_the_fake_server(fake_openai: FakeOpenAI, live_plan: Path,
                                           tmp_path: Path) -> None:
    fake_openai.route("planner-model", _planner_route).route("user-model", _user_route) \
        .route("agent-model", _agent_route).route("judge-model", _judge_route({10}))
    summary = _run(live_plan, tmp_path, run_id="llm", trigger_mode="live", sessions=["*@E+Q"],
                   agent="litellm:openai/agent-model", planner="litellm:openai/planner-model",
                   simulator="litellm:openai/user-model", judge="litellm:openai/judge-model",
                   api_base=fake_openai.base_url, max_retries=0)
    assert (summary.finished, summary.errors, summary.judge_errors) == (1, 0, 1)
    rows = _query(tmp_path, "SELECT trigger_id, type, turn, origin, pass_criteria, label "
                            "FROM triggers ORDER BY turn")
    assert rows == [("t2", "emergent", 2, "planner", "pass criterion for turn 2", "PASS"),
                    ("t4", "critical", 4, "planner", "pass criterion for turn 4", "PASS"),
                    ("t8", "recovery", 8, "planner", "pass criterion for turn 8", "PASS"),
                    ("t10", "recovery", 10, "planner", "pass criterion for turn 10", None)]
    extra = _extra(tmp_path, "llm", KIT_EQ)
    assert [(v["turn"], v["kept_trigger"]) for v in extra["planner_violations"]] == [(6, False)]
    assert "turns 8–10; this is turn 6" in extra["planner_violations"][0]["problems"][0]
    # turn 3 stays too short after its retry (kept, recorded); turn 5 is fixed by the retry
    assert [v["turn"] for v in extra["style_violations"]] == [3]
    assert _words(tmp_path, "llm", KIT_EQ)[3] == 12
    calls = dict(_query(tmp_path, "SELECT purpose, count(*) FROM llm_calls GROUP BY ALL"))
    assert calls == {"planner": 10, "planner:retry": 2, "user": 9, "user:retry": 2,
                     "agent_step": 10, "trigger_judge": 4, "trigger_judge:retry": 1}
    agent_text = json.dumps([r for r in fake_openai.requests if r["model"] == "agent-model"])
    for hidden in ("Get the kits ordered", "pass criterion", "Night-shift nurse", "Ravi"):
        assert hidden not in agent_text
    assert _query(tmp_path, "SELECT trigger_pass_rate, trigger_score FROM sessions") == \
        [(1.0, 1.0)]


# --------------------------------------------------------------------------- re-scoring


def test_dialogue_from_rescores_a_live_run_and_a_rescore(live_plan: Path,
                                                        tmp_path: Path) -> None:
    assert _run(live_plan, tmp_path, run_id="live", trigger_mode="live").errors == 0
    live = _query(tmp_path, "SELECT turn, role, content FROM messages WHERE run_id='live' AND "
                            "session_id=? AND role IN ('user', 'assistant') ORDER BY seq", KIT_P)
    trigger_agents.CALLS.clear()
    for run_id, source in (("off1", "live"), ("off2", "off1")):
        trigger_agents.CALLS.clear()
        summary = _run(live_plan, tmp_path, run_id=run_id, dialogue_from=source)
        assert (summary.finished, summary.errors) == (2, 0)
        calls = [c for c in trigger_agents.CALLS if c["session"] == KIT_P]
        assert [c["turn"] for c in calls] == [2, 4, 8, 10]  # the live planner's triggers
        for c in calls:  # always the live dialogue, never an earlier re-score's answers
            assert c["history"] == [(r, x) for t, r, x in live if t < c["turn"]]
            assert c["message"] == next(x for t, r, x in live if t == c["turn"] and r == "user")
        same = _query(tmp_path, "SELECT count(*) FROM triggers a JOIN triggers b USING "
                                "(session_id, trigger_id, type, turn, origin, pass_criteria, "
                                "partial_criteria, fail_criteria) WHERE a.run_id='live' AND "
                                "b.run_id=? AND b.mode='offline'", run_id)
        assert same == [(8,)]
        assert _extra(tmp_path, run_id, KIT_P)["dialogue_source"] == f"run:{source}"


def test_sessions_that_cannot_run_fail_clearly(live_plan: Path, tmp_path: Path) -> None:
    summary = _run(live_plan, tmp_path, sessions=["*@P"], trigger_mode="offline")
    assert summary.errors == 1
    (status, error), = _query(tmp_path, "SELECT status, error FROM sessions")
    assert status == "error" and "offline mode needs a fixed dialogue" in error
    assert trigger_agents.CALLS == []


@pytest.mark.parametrize(("options", "message"), [
    ({"dialogue_from": "nope"}, "no run `nope`"),
    ({"dialogue_from": "x", "trigger_mode": "live"}, "use --trigger-mode offline or auto"),
])
def test_bad_dialogue_options_stop_the_run_before_it_starts(
        live_plan: Path, tmp_path: Path, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _run(live_plan, tmp_path, sessions=["*@P"], **options)
    assert not (tmp_path / "bench.duckdb").exists()  # nothing ran, no store was left
    assert trigger_agents.CALLS == []


def test_dialogue_from_a_run_without_this_session_fails_clearly(live_plan: Path,
                                                               tmp_path: Path) -> None:
    assert _run(live_plan, tmp_path, run_id="one", trigger_mode="live",
                sessions=["*@E+Q"]).errors == 0
    summary = _run(live_plan, tmp_path, run_id="two", dialogue_from="one", sessions=["*@P"])
    assert summary.errors == 1
    error = _query(tmp_path, "SELECT error FROM sessions WHERE run_id='two'")[0][0]
    assert f"run `one` has no transcript of `{KIT_P}`" in error


# --------------------------------------------------------------------------- rules of play


def _state(turn: int, disclosed: list[str], committed: list[TriggerSpec]) -> PlannerState:
    return PlannerState(turn, 10, [], disclosed, committed, None)


def _spec(kind: str, turn: int, anchors: list[str]) -> TriggerSpec:
    return TriggerSpec(f"t{turn}", kind, turn, anchors, "p", "pa", "f", "planner")


@pytest.fixture(scope="module")
def scenario(live_plan: Path) -> Scenario:
    return Scenario(load_plan(live_plan).sessions[KIT_P].scenario)


def test_planner_decisions_are_checked_against_the_protocol(scenario: Scenario) -> None:
    def problems(d: Decision, state: PlannerState) -> str:
        return " | ".join(scenario.problems(d, state))

    say = Order("x", disclose=["shifts"])
    assert problems(Decision(say, _spec("emergent", 2, ["shifts"])), _state(2, [], [])) == ""
    assert "turns 1–3; this is turn 4" in problems(
        Decision(Order("x"), _spec("emergent", 4, ["shifts"])), _state(4, ["shifts"], []))
    two = [_spec("emergent", 1, ["shifts"]), _spec("emergent", 2, ["shifts"])]
    assert "2 emergent triggers are already declared" in problems(
        Decision(Order("x"), _spec("emergent", 3, ["shifts"])), _state(3, ["shifts"], two))
    assert "not disclosed by this turn: ['sizes']" in problems(
        Decision(Order("x"), _spec("critical", 5, ["shifts", "sizes"])), _state(5, ["shifts"],
                                                                                 []))
    assert "at least 2 disclosed anchor(s)" in problems(
        Decision(Order("x"), _spec("critical", 5, ["shifts"])), _state(5, ["shifts"], []))
    assert "2 new primary anchors" in problems(
        Decision(Order("x", disclose=["shifts", "sizes"])), _state(2, [], []))
    assert "unknown anchors ['nope']" in problems(
        Decision(Order("x", disclose=["nope"])), _state(2, [], []))
    assert "last critical turn (4–7)" in problems(Decision(Order("x")),
                                                 _state(7, ["shifts", "sizes"], two))
    bad = Decision(Order("x", disclose=["supplier", "sizes"]),
                   _spec("critical", 5, ["shifts", "sizes"]))
    fixed = scenario.sanitise(bad, _state(5, ["shifts"], []))
    assert fixed.order.disclose == ["supplier"] and fixed.trigger is None


def test_prompts_keep_each_role_to_what_it_may_see(live_plan: Path) -> None:
    plan: Plan = load_plan(live_plan)
    s = plan.sessions[KIT_EQ]
    assert s.style is not None
    persona = {"name": "Ravi Menon", "profile": plan.personas["ravi"].profile.model_dump()}
    call = JudgeCall(Answers(), "m", lambda r: None)
    scenario = Scenario(s.scenario)
    planner = LLMPlanner(call, Templates(), persona, scenario).prompt(
        _state(4, ["shifts"], [_spec("emergent", 2, ["shifts"])]))
    assert "Night-shift nurse" in planner and "Get the kits ordered" in planner
    assert "`supplier` (primary)" in planner and "[already disclosed]" in planner
    assert "E+Q" not in planner and "chatty" not in planner and "40–100" not in planner
    assert all(d not in planner for d in trait_directives(s.style))
    user = LLMUserAgent(call, Templates(), persona, s.style, scenario).prompt(
        Order("mention the supplier", ["ask about the deadline"], ["supplier"]), [], 3)
    assert "40–100 words" in user and all(d in user for d in trait_directives(s.style))
    assert scenario.anchors["supplier"].text in user and "Get the kits ordered" not in user
    assert "shifts" not in user  # only the anchor it is told to disclose


def test_style_length_rule() -> None:
    terse = PlanStyle(code="NONE", traits={}, length="terse", min_words=5, max_words=25,
                      directives=[])
    chatty = PlanStyle(code="E", traits={"expressiveness": True}, length="chatty",
                       min_words=40, max_words=100, directives=["mention the dog"])
    assert length_problem("one two three four five", terse) is None
    assert length_problem("too short", terse) == \
        "the message has 2 words; this user writes 5–25 words a message"
    assert length_problem(" ".join(["w"] * 101), chatty) is not None
    assert len(fit(" ".join(["w"] * 60), terse).split()) == 25
    assert 40 <= len(fit("Short ask.", chatty).split()) <= 100
    assert trait_directives(terse) == ["a neutral, cooperative register with no strong traits"]
    assert trait_directives(chatty)[-1] == "mention the dog" and len(trait_directives(chatty)) == 3


# --------------------------------------------------------------------------- request_discloses

OPENING = ("request: Help me write a short email asking parents to order team kits by Friday.",
           "request: I work nights four days a week this month. Help me write a short email "
           "asking parents to order team kits by Friday.\n        request_discloses: [shifts]")


def _opening_pack(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    text = (FIXTURES / "live_pack" / "pack.yaml").read_text(encoding="utf-8")
    for old, new in (OPENING, *edits):
        assert old in text, old
        text = text.replace(old, new, 1)
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "pack.yaml").write_text(text, encoding="utf-8")
    res = compile_pack(tmp_path / "pack", tmp_path / "plan", use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    return tmp_path / "plan"


def test_an_anchor_in_the_opening_request_is_no_planner_violation(tmp_path: Path) -> None:
    subtask = "            - Move supplier calls away from his sleeping hours.\n"
    triggers = ("        triggers:\n"
                "          - type: emergent\n            turn: 1\n            anchors: [shifts]\n"
                "            rubric: {pass: Plans around his night shifts, partial: Mentions "
                "sleep, fail: Ignores the shifts}\n")
    plan = _opening_pack(tmp_path, (subtask, subtask + triggers))
    assert load_plan(plan).sessions[KIT_P].request_discloses == ["shifts"]
    summary = _run(plan, tmp_path, run_id="o", trigger_mode="live", sessions=["*@P"])
    assert summary.errors == 0
    extra = _extra(tmp_path, "o", KIT_P)
    assert "planner_violations" not in extra, extra["planner_violations"]
    # the rules planner does not disclose the anchor a second time
    assert all("shifts" not in t["disclose"] for t in extra["planner_turns"])


def test_the_rules_planner_counts_the_opening_s_anchors(tmp_path: Path) -> None:
    summary = _run(_opening_pack(tmp_path), tmp_path, run_id="o", trigger_mode="live",
                   sessions=["*@P"])
    assert summary.errors == 0
    extra = _extra(tmp_path, "o", KIT_P)
    assert "planner_violations" not in extra
    # shifts came with the request: the next anchors follow one turn earlier than without it
    assert [t["disclose"] for t in extra["planner_turns"]][:4] == [
        [], ["supplier"], ["sizes"], []]
    rows = _query(tmp_path, "SELECT turn, type, anchors FROM triggers WHERE run_id='o' "
                            "ORDER BY turn")
    assert rows[0] == (1, "emergent", '["shifts"]')


@pytest.mark.parametrize(("edit", "code"), [
    (("request_discloses: [shifts]", "request_discloses: [shift]"), "E202"),
    (("protocol: trigger_rubric", "protocol: intent_tracking"), "E204"),
    (("request: I work nights", "title: I work nights"), "E212"),
])
def test_request_discloses_is_checked(tmp_path: Path, edit: tuple[str, str], code: str) -> None:
    text = (FIXTURES / "live_pack" / "pack.yaml").read_text(encoding="utf-8")
    text = text.replace(*OPENING).replace(*edit)
    (tmp_path / "pack.yaml").write_text(text, encoding="utf-8")
    res = compile_pack(tmp_path, tmp_path / "plan", use_cache=False)
    found = [(d.code, d.json_path) for d in res.diagnostics if d.severity == "error"]
    assert (code, "$.episodes[0].sessions[0].request_discloses" + ("[0]" if code == "E202"
                                                                   else "")) in found, found
