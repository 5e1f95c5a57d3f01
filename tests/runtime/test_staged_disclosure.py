"""Staged disclosure: the stage machine (property tests), the rules/scripted protocol end to end with every stored row checked, and the
LLM path (agent, simulator and graph judge as routes on the local fake OpenAI server).

The fixture pack `tests/fixtures/staged` has 7 stages (start, mentions, milestone, asks,
mentions, asks, milestone; the compiler folds the start stage into the request, so the plan
holds 6), an offline corpus behind `search`/`visit` and 11 ground-truth triples.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st

from benchpack.runtime.judges.base import ParseError
from benchpack.runtime.judges.staged import (
    Question,
    StageView,
    Verdict,
    leaks,
    parse_user_turn,
    rules_verdict,
)
from benchpack.runtime.protocols.staged_disclosure import StageMachine
from benchpack.runtime.runner import RunOptions, run_plan
from benchpack.specs.plan import PlanStage
from conftest import bench_run

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "staged"
SID = "session.staged-case.month.find-cafe"
PREFIX = ("r", SID, 0)

# --------------------------------------------------------------------------- the stage machine

KINDS = st.lists(st.sampled_from(["mentions", "asks", "milestone"]), max_size=7)


@st.composite
def verdicts(draw: st.DrawFn, n: int) -> Verdict:
    stage = st.one_of(st.none(), st.integers(0, max(0, n - 1))) if n else st.none()
    questions = draw(st.lists(st.builds(Question, st.text(max_size=5), stage), max_size=3))
    return Verdict(met=draw(st.booleans()), questions=tuple(questions), asked=draw(st.booleans()))


@settings(max_examples=200, deadline=None)
@given(data=st.data(), kinds=KINDS, start=st.booleans())
def test_stage_machine_invariants(data: st.DataObject, kinds: list[str], start: bool) -> None:
    kinds = (["start"] if start else []) + kinds
    machine = StageMachine(kinds)
    state = machine.start()
    assert state.disclosed == ((0,) if start else ())
    for verdict in data.draw(st.lists(verdicts(len(kinds)), min_size=1, max_size=20)):
        step = machine.step(state, verdict)
        new = step.state.disclosed[len(state.disclosed):]
        assert step.state.disclosed[:len(state.disclosed)] == state.disclosed
        assert len(new) <= 1  # never two stages in one turn
        assert step.state.disclosed == tuple(range(len(step.state.disclosed)))  # never skips
        if new:
            k = new[0]
            assert step.event == "disclosed" and step.stage == k == state.current
            assert verdict.met
            if kinds[k] == "asks":  # never disclosed unasked
                assert verdict.asked or any(q.stage == k for q in verdict.questions)
        else:
            assert step.event != "disclosed"
        if step.event in ("done", "agent_answer"):
            assert len(step.state.disclosed) == len(kinds)  # never before the last stage
            assert step.state.done
        if step.event == "done":
            assert verdict.met
        assert step.dismissed == tuple(q.text for q in verdict.questions if q.stage is None)
        state = step.state
        if state.done:
            with pytest.raises(ValueError):
                machine.step(state, verdict)
            break


@settings(max_examples=100, deadline=None)
@given(kinds=KINDS, mets=st.lists(st.booleans(), min_size=1, max_size=20))
def test_an_asks_stage_is_never_passed_without_a_question(kinds: list[str],
                                                           mets: list[bool]) -> None:
    machine = StageMachine(kinds)
    state = machine.start()
    for met in mets:
        step = machine.step(state, Verdict(met=met))
        if state.current < len(kinds) and kinds[state.current] == "asks":
            assert step.event == "pushed"
        state = step.state
        if state.done:
            break
    first_asks = kinds.index("asks") if "asks" in kinds else len(kinds)
    assert len(state.disclosed) <= first_asks


def _stage(kind: str, about: str, sid: str = "st2") -> PlanStage:
    return PlanStage(id=sid, kind=kind, about=about, line="Here is my line.")


@settings(max_examples=100, deadline=None)
@given(reply=st.text(alphabet=st.characters(blacklist_characters="?？"), max_size=200))
def test_rules_never_meet_an_asks_stage_without_a_question_mark(reply: str) -> None:
    view = StageView(turn=1, stages=[_stage("asks", "budget for coffee")], current=0,
                     disclosed=(), reply=reply + " budget for coffee")
    assert not rules_verdict(view).met


def test_rules_verdicts_by_kind() -> None:
    def met(kind: str, reply: str, work: str = "", ask_user: list[str] | None = None) -> bool:
        view = StageView(turn=1, stages=[_stage(kind, "wifi speed Mbps")], current=0,
                         disclosed=(), reply=reply, work=work, ask_user=ask_user or [])
        return rules_verdict(view).met

    assert met("mentions", "Wifi is 80 Mbps at Ferncup.")  # 2 of 3 content words
    assert not met("mentions", "Ferncup has wifi.")
    assert not met("mentions", "Ferncup is fine.", work="search -> wifi speed 80 Mbps")
    assert met("milestone", "Ferncup is fine.", work="search -> wifi speed 80 Mbps")
    assert met("asks", "Noted.", ask_user=["Which wifi speed in Mbps do you need?"])
    assert not met("asks", "Wifi speed is 80 Mbps.")


def test_leak_check_counts_only_new_words() -> None:
    line = "I'd like to stay under 4 euros for a coffee."
    assert leaks(line, "Keep it under 4 euros a coffee, please.", set())
    assert not leaks(line, "Tell me more about those early openers.", set())
    # words the conversation already used are no secret
    assert not leaks(line, "Coffee in euros, please.", {"coffee", "euros", "like", "stay"})
    assert leaks("power sockets", "Why not ask me about power sockets?", set(), min_hits=1)
    assert not leaks("power sockets", "Is there enough power?", set(), min_hits=1)  # 1 of 2


def test_simulator_output_is_parsed_strictly() -> None:
    ok = parse_user_turn('{"met": false, "questions": [{"question": "Lake?", "stage": null}, '
                         '{"question": "Budget?", "stage": "st4"}], "message": "Go on."}',
                         ["st2", "st3", "st4"], final=False)
    assert ok.questions == (Question("Lake?", None), Question("Budget?", 2))
    for bad in ('{"met": "yes", "questions": [], "message": "x"}',
                '{"met": true, "questions": [{"question": "x", "stage": "st9"}], "message": "x"}',
                '{"met": false, "questions": [], "message": ""}',
                'Sure: {"met": true, "questions": [], "message": "x"}'):
        with pytest.raises(ParseError):
            parse_user_turn(bad, ["st2"], final=False)
    assert parse_user_turn('{"met": true, "questions": [], "message": ""}', ["st2"],
                           final=True).met


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def plan_dir(compiled: Callable[..., Path]) -> Path:
    return compiled(CASE, clean=True)


def _run(plan: Path, tmp_path: Path, agent: Path = CASE / "agent.yaml", adapter: str = "scripted",
         **kw: Any) -> duckdb.DuckDBPyConnection:
    db, summary = bench_run(plan, tmp_path, agent=f"{adapter}:{agent}", run_id="r", **kw)
    assert summary.errors == 0 and summary.finished == 1
    return duckdb.connect(str(db), read_only=True)


def _session(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    cur = con.execute("SELECT * FROM sessions")
    row = cur.fetchone()
    assert row is not None
    out = dict(zip([d[0] for d in cur.description], row, strict=True))
    out["extra"] = json.loads(out["extra"] or "{}")
    return out


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return con.execute(sql).fetchall()


EVENTS = "SELECT * FROM stage_events ORDER BY rowid"
STAGE = {"st2": ("st2", 0, "mentions"), "st3": ("st3", 1, "milestone"),
         "st4": ("st4", 2, "asks"), "st5": ("st5", 3, "mentions"), "st6": ("st6", 4, "asks"),
         "st7": ("st7", 5, "milestone")}
LINES = {
    "st2": "Those sound promising. Which of them have wifi I can rely on, and how fast is it?",
    "st3": "Good. I start work at 7:30, so which of them are open that early?",
    "st4": "I'd like to stay under 4 euros for a coffee.",
    "st5": "Fine. Which of the cheaper ones is quiet enough for video calls?",
    "st6": "Yes! I need a socket at my table, my laptop battery is old.",
    "st7": "Perfect. Put it all together in a short comparison so I can decide.",
}
Q1 = "Do you prefer working in the morning or in the afternoon?"
DISMISS = "To “{}”: no preference, that doesn't matter to me."
PREDICTED = [  # the agent's graph after parsing: a duplicate merged, an item without tail dropped
    ("Ferncup Café", "located in", "Verrin"), ("ferncup café", "wifi speed", "80 Mbps"),
    ("Ferncup Café", "Wifi_Speed", "80 mbps."), ("Ferncup Café", "opens at", "7:00 on weekdays"),
    ("Harbour Beans", "wifi speed", "25 Mbps"), ("Mill Room", "wifi speed", "150 Mbps"),
    ("Mill Room", "opens at", "8:00"), ("Mill Room", "coffee prices", "4.50 euros"),
    ("Ferncup Café", "has view", "lake")]
GROUND = [
    ("Ferncup Café", "located in", "Verrin", None), ("Ferncup Café", "wifi speed", "80 Mbps", None),
    ("Ferncup Café", "opens at", "7:00", None), ("Ferncup Café", "coffee price", "3.20 euros", None),
    ("Harbour Beans", "wifi speed", "25 Mbps", None), ("Harbour Beans", "opens at", "8:30", None),
    ("Mill Room", "wifi speed", "150 Mbps", None), ("Mill Room", "opens at", "7:30", None),
    ("Mill Room", "coffee price", "4.50 euros", None),
    ("Ferncup Café", "noise level", "quiet", "comfort"),
    ("Ferncup Café", "power sockets", "at every table", "comfort")]


def test_rules_run_stores_every_row(plan_dir: Path, tmp_path: Path) -> None:
    con = _run(plan_dir, tmp_path, simulator="rules", judge="rules")
    s = _session(con)
    assert s["termination"] == "done" and s["status"] == "finished"
    assert (s["stages"], s["stages_disclosed"], s["kg_status"]) == (6, 6, "repaired")
    # 10 dialogue turns; the graph turn (11, one tool call, one compaction) is left out
    assert (s["turns"], s["user_turns"], s["assistant_turns"], s["tool_calls"],
            s["compactions"]) == (10, 10, 13, 3, 1)
    assert s["assistant_turns"] / s["user_turns"] == 1.3  # the interaction ratio
    # match grader: GT 0,1,2,4,6,8 covered (6/11); predicted 6 and 8 support nothing (7/9)
    assert (s["triples_gt"], s["triples_predicted"]) == (11, 9)
    assert s["recall"] == pytest.approx(6 / 11) and s["precision"] == pytest.approx(7 / 9)
    assert s["f1"] == pytest.approx(84 / 131)
    assert s["judge_errors"] == 0
    assert s["extra"]["graph_grader"] == "match" and s["extra"]["kg_duplicates_merged"] == 1
    assert s["extra"]["kg_note"] == ("took the JSON out of surrounding text; dropped 1 item(s) "
                                     "that are not triples")
    assert _rows(con, EVENTS) == [(*PREFIX, *r) for r in [
        (2, *STAGE["st2"], "dismissed", Q1),
        (2, *STAGE["st2"], "pushed", DISMISS.format(Q1) + " Could you name a few actual places "
         "first?"),
        (3, *STAGE["st2"], "disclosed", LINES["st2"]),
        (4, *STAGE["st3"], "disclosed", LINES["st3"]),
        (5, *STAGE["st4"], "pushed", "Tell me more about those early openers."),
        (6, *STAGE["st4"], "disclosed", LINES["st4"]),
        (7, *STAGE["st5"], "dismissed", "Do you need a lake view?"),
        # several questions, all answered; the one on a later stage is not an unlock
        (7, *STAGE["st5"], "disclosed", DISMISS.format("Do you need a lake view?") + " To “Should "
         "I also check the power sockets?”: not yet, one thing at a time. " + LINES["st5"]),
        (8, *STAGE["st6"], "pushed", "Quiet matters a lot to me, tell me more about that place."),
        (9, *STAGE["st6"], "disclosed", LINES["st6"]),
        (10, *STAGE["st7"], "disclosed", LINES["st7"]),
        (11, None, None, None, "done", None)]]
    # the user side of the conversation is exactly what the events say
    users = _rows(con, "SELECT turn, content FROM messages WHERE role='user' ORDER BY seq")
    events = {r[3]: r[-1] for r in _rows(con, EVENTS) if r[-2] in ("disclosed", "pushed")}
    assert [u for t, u in users if 1 < t <= 10] == [events[t] for t in range(2, 11)]
    assert users[0] == (1, "I'm spending next month in Verrin and need somewhere to work from "
                           "during the day. Any ideas?")
    assert users[-1][0] == 11 and "knowledge graph" in users[-1][1]
    assert _rows(con, "SELECT side, idx, head, relation, tail, dimension, matched, coverage, "
                      "judge_error FROM triples ORDER BY side DESC, idx") == [
        *(("predicted", i, *p, None, i not in (6, 8), None, None)
          for i, p in enumerate(PREDICTED)),
        *(("ground_truth", i, *g, i in (0, 1, 2, 4, 6, 8),
           {0: "direct", 1: "direct", 2: "subsumption", 4: "direct", 6: "direct",
            8: "direct"}.get(i), None) for i, g in enumerate(GROUND))]
    assert _rows(con, "SELECT gt_idx, pred_idx FROM triple_support ORDER BY 1, 2") == [
        (0, 0), (1, 1), (1, 2), (2, 3), (4, 4), (6, 5), (8, 7)]
    assert _rows(con, "SELECT turn, tool_name FROM tool_calls ORDER BY seq") == [
        (1, "search"), (2, "visit"), (3, "visit"), (11, "search")]
    assert _rows(con, "SELECT count(*) FROM turns") == [(11,)]
    con.close()


def test_scripted_simulator_and_judge(plan_dir: Path, tmp_path: Path) -> None:
    con = _run(plan_dir, tmp_path, simulator=f"scripted:{CASE / 'sim.yaml'}",
               judge=f"scripted:{CASE / 'judge.yaml'}")
    s = _session(con)
    assert s["termination"] == "agent_answer" and s["stages_disclosed"] == 6
    assert [r[3:] for r in _rows(con, EVENTS)] == [
        (2, *STAGE["st2"], "dismissed", Q1),  # questions found by the rules when not scripted
        (2, *STAGE["st2"], "pushed", "Go on, show me some places."),
        (3, *STAGE["st2"], "disclosed", LINES["st2"]),
        (4, *STAGE["st3"], "disclosed", LINES["st3"]),
        (5, *STAGE["st4"], "pushed", "Tell me more about those early openers."),  # unasked
        (6, *STAGE["st4"], "disclosed", LINES["st4"]),
        (7, *STAGE["st5"], "dismissed", "Do you need a lake view?"),
        (7, *STAGE["st5"], "disclosed", DISMISS.format("Do you need a lake view?") + " To “Should "
         "I also check the power sockets?”: not yet, one thing at a time. " + LINES["st5"]),
        (8, *STAGE["st6"], "pushed", "Quiet matters a lot to me, tell me more about that place."),
        (9, *STAGE["st6"], "disclosed", LINES["st6"]),
        (10, *STAGE["st7"], "disclosed", LINES["st7"])]
    # scripted coverage: 0, 1, 2, 3 (collective), 9 (compositional) of 10 judged; GT 10's
    # verdict is invalid (collective with one triple): a judge error, excluded
    assert s["recall"] == 0.5 and s["precision"] is None and s["f1"] is None
    assert s["judge_errors"] == 1 and s["extra"]["precision_lower_bound"] == pytest.approx(6 / 9)
    gt = _rows(con, "SELECT idx, matched, coverage, judge_error FROM triples "
                    "WHERE side='ground_truth' AND (matched OR judge_error IS NOT NULL)")
    assert gt == [(0, True, "direct", None), (1, True, "direct", None),
                  (2, True, "subsumption", None), (3, True, "collective", None),
                  (9, True, "compositional", None),
                  (10, None, None, "scripted graph verdict 10: collective coverage needs at "
                                   "least 2 supporting triple(s)")]
    assert _rows(con, "SELECT gt_idx, pred_idx FROM triple_support ORDER BY 1, 2") == [
        (0, 0), (1, 1), (1, 2), (2, 3), (3, 7), (3, 8), (9, 3), (9, 8)]
    assert _rows(con, "SELECT idx FROM triples WHERE side='predicted' AND NOT matched") == [
        (4,), (5,), (6,)]
    con.close()


def test_agent_ending_the_dialogue_and_an_empty_graph(plan_dir: Path, tmp_path: Path) -> None:
    # a replayed transcript that ends: the recorded agent said nothing more
    agent = tmp_path / "short.jsonl"
    agent.write_text(json.dumps({"session_id": SID, "repeat": 0, "turn": 1, "role": "assistant",
                                 "content": "Verrin has cafés.", "tool_calls": None}) + "\n",
                     encoding="utf-8")
    con = _run(plan_dir, tmp_path, agent=agent, adapter="replay", simulator="rules",
               judge="rules")
    s = _session(con)
    assert s["termination"] == "agent_answer" and s["kg_status"] == "empty"
    assert (s["recall"], s["precision"], s["f1"], s["triples_predicted"]) == (0.0, 0.0, 0.0, 0)
    assert (s["turns"], s["user_turns"], s["assistant_turns"]) == (2, 2, 1)
    assert [r[3:8] for r in _rows(con, EVENTS)] == [(2, *STAGE["st2"], "disclosed")]
    con.close()


def test_a_script_out_of_turns_errors_instead_of_an_empty_graph(plan_dir: Path,
                                                                tmp_path: Path) -> None:
    # an authored script lacking the turns the dialogue and the graph request need used to
    # end the dialogue and answer the graph request with "": F1 0 scored as the agent's
    agent = tmp_path / "short.yaml"
    agent.write_text("sessions:\n  find-cafe:\n    - say: Verrin has cafés.\n", encoding="utf-8")
    db = tmp_path / "bench.duckdb"
    summary = run_plan(RunOptions(plan=plan_dir, agent=f"scripted:{agent}", db=db, run_id="r",
                                  progress=False, cache_dir=tmp_path / "cache",
                                  simulator="rules", judge="rules"))
    assert (summary.errors, summary.finished) == (1, 0)
    con = duckdb.connect(str(db), read_only=True)
    s = _session(con)
    con.close()
    # the agent's own error: scored as its failure (F1 0), not left out
    assert s["status"] == "error" and s["error_kind"] == "agent" and s["f1"] == 0.0, s
    assert f"{agent}: no turn 2 for session `find-cafe` (the script has 1;" in s["error"]


def test_round_budget_and_malformed_graph(plan_dir: Path, tmp_path: Path) -> None:
    plan = json.loads((plan_dir / "plan.json").read_text(encoding="utf-8"))
    plan["sessions"][SID]["limits"]["max_turns"] = 3
    short = tmp_path / "plan"
    short.mkdir()
    (short / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    con = _run(short, tmp_path, simulator="rules", judge="rules")
    s = _session(con)
    assert s["termination"] == "round_budget" and s["turns"] == 3
    # turn 3 met the milestone, but no user turn was left to disclose it
    assert s["stages_disclosed"] == 1
    assert [r[3:8] for r in _rows(con, EVENTS)] == [
        (2, *STAGE["st2"], "dismissed"), (2, *STAGE["st2"], "pushed"),
        (3, *STAGE["st2"], "disclosed")]
    # the graph request (turn 4) gets the script's next reply: prose, not JSON
    assert s["kg_status"] == "malformed" and (s["recall"], s["precision"], s["f1"]) == (0, 0, 0)
    assert _rows(con, "SELECT count(*) FROM triples WHERE side='predicted'") == [(0,)]
    con.close()


def test_llm_graph_grader_needs_a_judge(plan_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "bench.duckdb"
    summary = run_plan(RunOptions(plan=plan_dir, agent=f"scripted:{CASE / 'agent.yaml'}", db=db,
                                  progress=False, graph_grader="llm", judge="rules"))
    assert summary.errors == 1
    con = duckdb.connect(str(db), read_only=True)
    assert "--graph-grader llm needs a judge" in str(
        con.execute("SELECT error FROM sessions").fetchone())
    con.close()


# --------------------------------------------------------------------------- the LLM path


def _first(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def agent_route(body: dict[str, Any]) -> Any:
    """Searches once per user turn, then reports; answers the graph request with JSON."""
    last = body["messages"][-1]
    if last["role"] == "user" and "knowledge graph" in str(last["content"]):
        return json.dumps([{"head": h, "relation": r, "tail": t} for h, r, t, _ in GROUND[:6]])
    if last["role"] == "user":
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{len(body['messages'])}", "type": "function",
            "function": {"name": "search", "arguments": json.dumps({"query": "Verrin cafés"})}}]}
    return "Here is what I found about cafés in Verrin."


def simulator_route(seen: dict[str, int]) -> Any:
    """Says each stage's line; malformed once (st2); on st4 first claims `met` without the
    question an asks stage needs, then leaks the line again when corrected."""

    def route(body: dict[str, Any]) -> str:
        prompt = _first(body)
        if "Every stage has been disclosed" in prompt:
            return json.dumps({"met": True, "questions": [], "message": ""})
        cur = re.search(r"The current stage is `(st\d+)`", prompt)
        assert cur is not None
        sid = cur.group(1)
        entry = re.search(rf"- `{sid}` \[current\] (.*)\n  your line: (.*)", prompt)
        assert entry is not None
        asks, line = entry.group(1).startswith("unlocks only when"), entry.group(2)
        if sid == "st2" and not seen.get("malformed"):
            seen["malformed"] = 1
            return "met: yes"
        if "Decision already taken" in prompt:
            return json.dumps({"met": False, "questions": [], "message": line})
        if sid == "st4" and not seen.get("st4"):
            seen["st4"] = 1
            return json.dumps({"met": True, "questions": [], "message": line})
        questions = [{"question": "Do you need that?", "stage": sid}] if asks else []
        return json.dumps({"met": True, "questions": questions, "message": line})

    return route


def judge_route(broken: bool) -> Any:
    """Covers ground-truth triple i by predicted triple i; the batch holding triple 0 is
    malformed once; with `broken`, the batch holding triple 8 is malformed every time."""
    seen: dict[str, int] = {}

    def route(body: dict[str, Any]) -> str:
        prompt = _first(body)
        ids = [int(x) for x in re.findall(r"^- gt (\d+):", prompt, re.M)]
        n_pred = len(re.findall(r"^\[\d+\] ", prompt, re.M))
        if 0 in ids and not seen.get("once"):
            seen["once"] = 1
            return "Everything is covered."
        if broken and 8 in ids:
            return json.dumps({"coverage": [{"gt": 8, "covered": True, "kind": "direct",
                                             "support": [99]}]})
        return json.dumps({"coverage": [
            {"gt": i, "covered": i < n_pred, "kind": "direct" if i < n_pred else None,
             "support": [i] if i < n_pred else []} for i in ids]})

    return route


def _llm_run(fake: FakeOpenAI, plan_dir: Path, tmp_path: Path, broken: bool
             ) -> duckdb.DuckDBPyConnection:
    fake.route("agent-model", agent_route).route("sim-model", simulator_route({})) \
        .route("judge-model", judge_route(broken))
    db = tmp_path / "bench.duckdb"
    summary = run_plan(RunOptions(
        plan=plan_dir, agent="litellm:openai/agent-model", simulator="litellm:openai/sim-model",
        judge="litellm:openai/judge-model", api_base=fake.base_url, db=db, run_id="r",
        progress=False, cache_dir=tmp_path / "cache", max_retries=0))
    assert summary.errors == 0
    return duckdb.connect(str(db), read_only=True)


def test_llm_path(fake_openai: FakeOpenAI, plan_dir: Path, tmp_path: Path) -> None:
    con = _llm_run(fake_openai, plan_dir, tmp_path, broken=False)
    s = _session(con)
    assert s["termination"] == "done" and s["stages_disclosed"] == 6
    # 8 dialogue turns of two model steps and one search each; the graph turn left out
    assert (s["turns"], s["user_turns"], s["assistant_turns"], s["tool_calls"]) == (8, 8, 16, 8)
    assert s["kg_status"] == "ok" and s["extra"]["graph_grader"] == "llm"
    # the first six ground-truth triples, verbatim: recall 6/11, precision 6/6
    assert s["recall"] == pytest.approx(6 / 11) and s["precision"] == 1.0
    assert s["f1"] == pytest.approx(12 / 17) and s["judge_errors"] == 0
    events = [r[3:8] for r in _rows(con, EVENTS)]
    assert events == [
        (2, *STAGE["st2"], "disclosed"), (3, *STAGE["st3"], "disclosed"),
        (4, *STAGE["st4"], "pushed"),  # claimed met without a question: overruled
        (5, *STAGE["st4"], "disclosed"), (6, *STAGE["st5"], "disclosed"),
        (7, *STAGE["st6"], "disclosed"), (8, *STAGE["st7"], "disclosed"),
        (9, None, None, None, "done")]
    pushed = _rows(con, "SELECT detail FROM stage_events WHERE event='pushed'")
    # the correction leaked the line again: the authored push was said instead, and recorded
    assert pushed == [("[simulator leaked stage st4 twice; rules wording] Tell me more about "
                       "those early openers.",)]
    assert (s["extra"]["simulator_retries"], s["extra"]["simulator_leaks"]) == (1, 1)
    assert _rows(con, "SELECT content FROM messages WHERE role='user' AND turn=4") == [
        ("Tell me more about those early openers.",)]
    purposes = dict(_rows(con, "SELECT purpose, count(*) FROM llm_calls WHERE role != 'agent' "
                               "GROUP BY purpose"))
    # 8 turn verdicts (one retried after malformed output), 1 correction; 3 graph batches,
    # one retried after malformed output
    assert purposes == {"stage_turn": 8, "stage_turn:retry": 1, "stage_turn:correct": 1,
                        "graph_judge": 3, "graph_judge:retry": 1}
    assert _rows(con, "SELECT gt_idx, pred_idx FROM triple_support ORDER BY 1") == [
        (i, i) for i in range(6)]
    con.close()


def test_llm_judge_malformed_twice_is_a_judge_error(fake_openai: FakeOpenAI, plan_dir: Path,
                                                    tmp_path: Path) -> None:
    con = _llm_run(fake_openai, plan_dir, tmp_path, broken=True)
    s = _session(con)
    # triples 8-10 (the last batch of 4) are judge errors: excluded, never scored uncovered
    assert s["judge_errors"] == 3 and s["recall"] == 0.75
    assert s["precision"] is None and s["f1"] is None
    assert s["extra"]["precision_lower_bound"] == 1.0
    errors = _rows(con, "SELECT idx, matched, judge_error FROM triples WHERE side='ground_truth' "
                        "AND idx >= 8 ORDER BY idx")
    assert [(i, m) for i, m, _ in errors] == [(8, None), (9, None), (10, None)]
    assert all(e.startswith("malformed output twice") for _, _, e in errors)
    assert _rows(con, "SELECT count(*) FROM llm_calls WHERE purpose LIKE 'graph_judge%'") == [(5,)]
    con.close()
