"""The verified-outcome protocol (Claw-Anything) over the reference pack `claw-lab-ops`.

Scripted agents derived from the pack's demo trajectory (`taskpacks/claw-lab-ops/demo/
agent.yaml`) and scripted rubric verdicts make every score computable by hand from the pack's
weights: lumora-reschedule has outcome weight 24 (rubric items aiko-slot-free 2, ben-slot-free
1, reply-stale-reminder 1) and five process items of weight 1; report-deadline-watch has
outcome weight 14 and three process items; both use outcome_weight 0.7 and pass at 0.7.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import Any, ClassVar

import duckdb
import pytest
import yaml
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.compiler import compile_pack
from benchpack.runtime.agents.scripted import ScriptedAgent
from benchpack.runtime.graders import (
    CapHit,
    Trace,
    evaluate,
    fired_caps,
    soft_score,
)
from benchpack.runtime.judges.outcome_user import NEUTRAL_REPLY
from benchpack.runtime.runner import RunSummary
from benchpack.runtime.store import SCHEMA_VERSION, connect
from benchpack.runtime.types import Message, SessionBrief, ToolRecord
from conftest import bench_run

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "taskpacks" / "claw-lab-ops"
DEMO = PACK / "demo" / "agent.yaml"
LUMORA, WATCH = "lumora-reschedule", "report-deadline-watch"
RUBRIC = {LUMORA: ["aiko-slot-free", "ben-slot-free", "reply-stale-reminder"],
          WATCH: ["prep-block-free", "leave-collision", "export-pointer"]}
# an agent that says nothing at either of the watch session's two beats (a script must spell out
# every turn it plays: running out is an error, not a silent empty reply)
SILENT = [{"say": ""}] * 2
SLOPPY = [{"tool_calls": [{"name": "activity__read", "args": {}}],
           "say": "The Lumora visit seems to have moved to Thursday."}]


@pytest.fixture(scope="module")
def plan_dir(compiled: Callable[..., Path]) -> Path:
    return compiled(PACK)


def good() -> dict[str, list[dict[str, Any]]]:
    return copy.deepcopy(yaml.safe_load(DEMO.read_text(encoding="utf-8"))["sessions"])


def write(path: Path, sessions: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"sessions": sessions}, sort_keys=False), encoding="utf-8")
    return path


def judge_file(tmp_path: Path, yes: bool = True) -> Path:
    """Scripted rubric verdicts: every rubric item YES (or every one NO)."""
    sessions = {s: {"checklist": {i: int(yes) for i in ids}} for s, ids in RUBRIC.items()}
    return write(tmp_path / f"judge-{yes}.yaml", sessions)


def run(plan_dir: Path, tmp_path: Path, agent: str | dict[str, Any], *, judge: str | None = None,
        simulator: str = "rules", **kw: Any) -> tuple[Path, RunSummary]:
    if isinstance(agent, dict):
        agent = "scripted:" + str(write(tmp_path / "agent.yaml", agent))
    db, summary = bench_run(plan_dir, tmp_path, agent=agent,
                            judge=judge or f"scripted:{judge_file(tmp_path)}",
                            simulator=simulator, **kw)
    assert summary.errors == 0
    return db, summary


def query(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [tuple(r) for r in con.execute(sql, list(params)).fetchall()]
    finally:
        con.close()


def session(db: Path, name: str, repeat: int = 0) -> dict[str, Any]:
    con = duckdb.connect(str(db), read_only=True)
    cur = con.execute("SELECT * FROM sessions WHERE name = ? AND repeat = ?", [name, repeat])
    row = cur.fetchone()
    names = [d[0] for d in cur.description]
    con.close()
    assert row is not None
    out = dict(zip(names, row, strict=True))
    out["extra"] = json.loads(out["extra"]) if out["extra"] else {}
    return out


def item(db: Path, name: str, item_id: str) -> tuple[Any, ...]:
    rows = query(db, "SELECT score, detail, error FROM checklist_results WHERE item_id = ? AND "
                     "session_id LIKE ?", item_id, f"%.{name}")
    assert len(rows) == 1
    return rows[0]


# --------------------------------------------------------------------------- the protocol


def test_good_agent_passes_both_tasks_with_scripted_and_rules_judges(plan_dir: Path,
                                                                      tmp_path: Path) -> None:
    db, summary = run(plan_dir, tmp_path, f"scripted:{DEMO}")
    lumora, watch = session(db, LUMORA), session(db, WATCH)
    assert (lumora["score"], lumora["passed"], lumora["termination"]) == (1.0, True, "answered")
    assert (watch["score"], watch["passed"], watch["termination"]) == \
        (1.0, True, "heartbeats_done")
    assert lumora["extra"]["verify"] == {"outcome": 1.0, "process": 1.0, "uncapped": 1.0,
                                         "unscored": 0, "caps": [],
                                         "outcome_weight": 0.7, "pass_threshold": 0.7}
    assert summary.pass_counts == [(1, 1), (1, 1)]
    # the deterministic rules judge agrees on the demo trajectory
    (tmp_path / "rules").mkdir()
    rules_db, _ = run(plan_dir, tmp_path / "rules", f"scripted:{DEMO}", judge="rules")
    assert [session(rules_db, n)["passed"] for n in (LUMORA, WATCH)] == [True, True]


def test_sloppy_agent_fails_with_the_hand_computed_score(plan_dir: Path, tmp_path: Path) -> None:
    db, _ = run(plan_dir, tmp_path, {LUMORA: SLOPPY, WATCH: SILENT},
                judge=f"scripted:{judge_file(tmp_path, yes=False)}")
    s = session(db, LUMORA)
    # outcome: only lightsheet-untouched, morning-untouched, no-mail-petra hold = 3 / 24;
    # process: no-booking-for-aiko and grounded-ids (no ids at all) = 2 / 5. That was
    # 0.7·3/24 + 0.3·2/5 = 0.2075; but the three outcome items that hold are guards (they held
    # before the agent acted) and none other is met: nothing achieved, so every item counts 0
    # (issue 25); the rows keep each item's own verdict
    assert s["score"] == 0.0 and s["comp"] == 0.0
    assert {"lightsheet-untouched", "morning-untouched", "no-mail-petra"} <= \
        set(s["extra"]["guards"])
    held = item(db, LUMORA, "no-mail-petra")
    assert held[0] == 1.0 and "counted 0, no credit" in held[1]
    assert s["passed"] is False
    assert item(db, LUMORA, "hold-aiko")[0] == 0.0
    assert item(db, LUMORA, "log-before-calendar-change")[1] == \
        "sequence stopped before calendar__update (1/2 steps)"


def test_forbidden_tool_caps_the_score_and_records_the_cap(plan_dir: Path,
                                                            tmp_path: Path) -> None:
    agent = good()
    agent[LUMORA][0]["tool_calls"].append({"name": "calendar__delete", "args": {"id": "EVT-316"}})
    db, _ = run(plan_dir, tmp_path, agent)
    s = session(db, LUMORA)
    assert (s["score"], s["passed"]) == (0.0, False)
    assert s["extra"]["verify"]["uncapped"] == 1.0
    assert s["extra"]["verify"]["caps"] == [{
        "id": "cap1", "cap": 0.0, "detail": "1 calls of calendar__delete",
        "reason": "Bookings are never deleted; the billing audit needs every row."}]
    assert session(db, WATCH)["extra"]["verify"]["caps"] == []  # its own trace is clean


def test_invented_entity_fails_grounding_in_every_beat(plan_dir: Path, tmp_path: Path) -> None:
    agent = good()
    agent[LUMORA][0]["say"] += " I also checked EVT-399, which is fine."
    agent[WATCH][0]["say"] += " Harriet's reminder is MSG-2299."  # the second beat is clean
    db, _ = run(plan_dir, tmp_path, agent)
    score, detail, _ = item(db, LUMORA, "grounded-ids")
    assert score == 0.0 and detail == "final reply mentions ids never read: EVT-399"
    # one process item of five lost: 0.7 × 1 + 0.3 × 4/5 (still a pass: grounding is process)
    assert session(db, LUMORA)["score"] == pytest.approx(0.94)
    # a heartbeat session's answer is every beat's reply, not just the last one
    score, detail, _ = item(db, WATCH, "grounded-refs")
    assert score == 0.0 and "MSG-2299" in detail
    assert session(db, WATCH)["score"] == pytest.approx(0.7 + 0.3 * 2 / 3)


class Recorder:
    """`python:` agent: plays a scripted trajectory chosen per (session, repeat) and records
    what it was woken with."""

    scripts: ClassVar[dict[tuple[str, int], Path]] = {}
    seen: ClassVar[list[tuple[str, int, str | None, dict[str, Any] | None]]] = []

    def __init__(self, brief: SessionBrief) -> None:
        self.brief = brief
        self.inner: Any = None

    async def respond(self, message: str | None, event: dict[str, Any] | None) -> str:
        b = self.brief
        Recorder.seen.append((b.name, b.repeat, message, event))
        if self.inner is None:
            path = self.scripts.get((b.name, b.repeat)) or self.scripts[(b.name, -1)]
            self.inner = await ScriptedAgent(path).open(b)
        return str((await self.inner.turn(message, event)).text)


def recorder(brief: SessionBrief) -> Recorder:
    return Recorder(brief)


def test_heartbeats_wake_the_agent_with_events_only(plan_dir: Path, tmp_path: Path) -> None:
    Recorder.scripts = {(WATCH, -1): write(tmp_path / "g.yaml", good()),
                        (LUMORA, -1): write(tmp_path / "g2.yaml", good())}
    Recorder.seen = []
    db, _ = run(plan_dir, tmp_path, "python:test_verified_outcome:recorder")
    beats = [(m, e) for name, _, m, e in Recorder.seen if name == WATCH]
    assert [m for m, _ in beats] == [None, None]
    assert [(e or {}).get("time") for _, e in beats] == ["2026-04-13T08:40:00",
                                                          "2026-04-13T09:40:00"]
    assert [((e or {})["beat"], (e or {})["of"], (e or {})["kind"]) for _, e in beats] == \
        [(1, 2, "heartbeat"), (2, 2, "heartbeat")]
    assert (beats[0][1] or {})["text"].startswith("Scheduled check-in. Nobody has asked")
    s = session(db, WATCH)
    assert (s["heartbeats"], s["turns"], s["user_turns"]) == (2, 2, 0)
    assert s["extra"]["beat_times"] == ["2026-04-13T08:40:00", "2026-04-13T09:40:00"]
    users = query(db, "SELECT name, content FROM messages WHERE role = 'user' AND "
                      "session_id LIKE ? ORDER BY seq", f"%.{WATCH}")
    assert [u[0] for u in users] == ["environment", "environment"]
    # the reactive task starts with Ines's request and nothing else
    assert [m is not None and e is None for name, _, m, e in Recorder.seen if name == LUMORA] \
        == [True]


ASK = {"tool_calls": [{"name": "activity__read", "args": {}},
                      {"name": "ask_user",
                       "args": {"question": "Should I email the affected users myself?"}}],
       "say": "Before I change anything: should I email the affected users myself?"}


@pytest.mark.parametrize("sim, answer", [("rules", NEUTRAL_REPLY),
                                          ("scripted", "Yes, email them directly.")])
def test_a_question_is_answered_by_the_simulator(plan_dir: Path, tmp_path: Path, sim: str,
                                                 answer: str) -> None:
    agent = good()
    agent[LUMORA] = [ASK, *agent[LUMORA]]
    simulator = "rules" if sim == "rules" else "scripted:" + str(write(
        tmp_path / "sim.yaml", {LUMORA: {"replies": [answer]}}))
    db, _ = run(plan_dir, tmp_path, agent, simulator=simulator)
    s = session(db, LUMORA)
    assert (s["termination"], s["turns"], s["user_turns"]) == ("answered", 2, 2)
    assert s["extra"]["questions"] == 1 and s["passed"] is True
    users = query(db, "SELECT turn, content FROM messages WHERE role = 'user' AND name IS NULL "
                      "AND session_id LIKE ? ORDER BY seq", f"%.{LUMORA}")
    assert users[1] == (2, answer)


def test_an_agent_that_keeps_asking_hits_the_turn_budget(plan_dir: Path,
                                                          tmp_path: Path) -> None:
    db, _ = run(plan_dir, tmp_path, {LUMORA: [{"say": "Which bookings do you mean?"}] * 6,
                                     WATCH: SILENT})
    s = session(db, LUMORA)
    assert (s["termination"], s["turns"], s["extra"]["questions"]) == ("turn_budget", 4, 3)


# --------------------------------------------------------------------------- pass@k, pass^k


def brute(outcomes: list[bool], k: int) -> tuple[float, float]:
    """pass@k and pass^k as averages over every k-subset of the runs."""
    subsets = list(combinations(outcomes, k))
    return (sum(any(s) for s in subsets) / len(subsets),
            sum(all(s) for s in subsets) / len(subsets))


def test_estimators_match_brute_force() -> None:
    """The estimators the summary uses (`benchpack.reports.stats`, tested there in depth)
    against enumeration of every k-subset of the repeats."""
    from benchpack.reports.stats import pass_at_k, pass_hat_k

    for n in range(1, 8):
        for c in range(n + 1):
            runs = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                assert (pass_at_k(n, c, k), pass_hat_k(n, c, k)) == \
                    pytest.approx(brute(runs, k))


def test_repeats_3_report_pass_at_k_and_pass_hat_k(plan_dir: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    g, bad = write(tmp_path / "good.yaml", good()), write(tmp_path / "bad.yaml", {LUMORA: SLOPPY})
    Recorder.scripts = {(LUMORA, -1): g, (LUMORA, 1): bad, (WATCH, -1): g}
    db, summary = run(plan_dir, tmp_path, "python:test_verified_outcome:recorder", repeats=3)
    passed = {name: [p for _, p in sorted(query(
        db, "SELECT repeat, passed FROM sessions WHERE name = ?", name))]
              for name in (LUMORA, WATCH)}
    assert passed == {LUMORA: [True, False, True], WATCH: [True, True, True]}
    per_task = [brute(runs, 3) for runs in passed.values()]
    from benchpack.cli.run import pass_rates, print_summary

    assert sorted(summary.pass_counts) == [(3, 2), (3, 3)] and summary.repeats == 3
    rates = pass_rates(summary)
    assert rates["pass_k"] == 3
    assert rates["pass_at_1"] == pytest.approx((2 / 3 + 1) / 2)
    assert rates["pass_at_k"] == pytest.approx(sum(p for p, _ in per_task) / 2) == 1.0
    assert rates["pass_hat_k"] == pytest.approx(sum(h for _, h in per_task) / 2) == 0.5

    print_summary(summary)
    assert "pass@1 / pass@3 / pass^3" in capsys.readouterr().err


def test_bench_run_cli_with_the_demo_agent(plan_dir: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from benchpack.cli import cli

    res = CliRunner().invoke(cli, [
        "run", str(plan_dir), "--agent", f"scripted:{DEMO}", "--judge", "rules",
        "--db", str(tmp_path / "b.duckdb"), "--cache-dir", str(tmp_path / "c"),
        "--repeats", "3", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert (out["pass_at_1"], out["pass_at_k"], out["pass_hat_k"], out["pass_k"]) == \
        (1.0, 1.0, 1.0, 3)


# --------------------------------------------------------------------------- LLM path


def _last_user(body: dict[str, Any]) -> int:
    return max(i for i, m in enumerate(body["messages"]) if m["role"] == "user")


def llm_agent(body: dict[str, Any]) -> Any:
    """Plays the demo trajectory as tool calls; in the reactive task it first asks a
    question (answered by the simulator route)."""
    msgs = body["messages"]
    users = [m for m in msgs if m["role"] == "user"]
    heartbeat = str(users[0]["content"]).startswith("[environment event]")
    turns = good()[WATCH if heartbeat else LUMORA]
    if not heartbeat:
        if len(users) == 1:
            return "Before I change anything: should I email the affected users myself?"
        turn = turns[0]
    else:
        turn = turns[len(users) - 1]
    done = sum(1 for m in msgs[_last_user(body):] if m["role"] == "tool")
    calls = turn.get("tool_calls") or []
    if done < len(calls):
        c = calls[done]
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{len(msgs)}", "type": "function",
            "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}]}
    return str(turn["say"])


def test_llm_agent_simulator_and_judge_through_the_fake_server(
        fake_openai: FakeOpenAI, plan_dir: Path, tmp_path: Path) -> None:
    judged: list[str] = []
    asked: list[str] = []

    def judge(body: dict[str, Any]) -> str:
        text = str(body["messages"][-1]["content"])
        judged.append(text)
        ids = [line.split("`")[1] for line in text.splitlines() if line.startswith("- id `")]
        return json.dumps({"scores": [{"id": i, "score": "YES", "reason": "ok"} for i in ids]})

    def sim(body: dict[str, Any]) -> str:
        asked.append(str(body["messages"][-1]["content"]))
        return "<message>\nYes, email them directly.\n</message>"

    fake_openai.route("agent", llm_agent).route("judge", judge).route("sim", sim)
    db, summary = run(plan_dir, tmp_path, "litellm:openai/agent", judge="litellm:openai/judge",
                      simulator="litellm:openai/sim", api_base=fake_openai.base_url,
                      max_retries=0)
    assert [session(db, n)["passed"] for n in (LUMORA, WATCH)] == [True, True]
    assert summary.judge_errors == 0 and summary.pass_counts == [(1, 1), (1, 1)]
    # one rubric call per evidence selection (two per task), each with the verified-outcome
    # template, the task's reference solution and the selected evidence
    assert len(judged) == 4
    lumora = next(j for j in judged if "aiko-slot-free" in j)
    assert lumora.startswith("You verify the work of an always-on personal assistant")
    assert "<reference>\nRead the activity log and the Lumora messages" in lumora
    assert "## Selected evidence" in lumora and "The user asked: Lumora moved" in lumora
    watch = next(j for j in judged if "leave-collision" in j)
    assert "Started by a scheduled check-in" in watch
    assert len(asked) == 1 and "should I email the affected users myself?" in asked[0]
    assert "Who you are" in asked[0] and "Ines" not in asked[0].split("## Who you are")[0]
    users = query(db, "SELECT turn, content FROM messages WHERE role = 'user' AND name IS NULL "
                      "AND session_id LIKE ? ORDER BY seq", f"%.{LUMORA}")
    assert users[1] == (2, "Yes, email them directly.")
    roles = dict(query(db, "SELECT role, count(*) FROM llm_calls GROUP BY role"))
    assert set(roles) == {"agent", "simulator", "judge"}


def test_judge_errors_leave_rubric_items_out_never_scored_0(
        fake_openai: FakeOpenAI, plan_dir: Path, tmp_path: Path) -> None:
    fake_openai.route("agent", llm_agent).route("judge", lambda body: "Looks good to me!")
    fake_openai.route("sim", lambda body: "<message>Go ahead.</message>")
    db, summary = run(plan_dir, tmp_path, "litellm:openai/agent", judge="litellm:openai/judge",
                      simulator="litellm:openai/sim", api_base=fake_openai.base_url,
                      max_retries=0)
    rows = query(db, "SELECT item_id, score, error FROM checklist_results WHERE grader = "
                     "'rubric' ORDER BY item_id")
    assert [r[0] for r in rows] == sorted(i for ids in RUBRIC.values() for i in ids)
    assert all(score is None and error.startswith("malformed output twice") for _, score, error
               in rows)
    for name in (LUMORA, WATCH):  # every rule item holds: the score rests on them alone
        s = session(db, name)
        assert (s["score"], s["passed"], s["judge_errors"]) == (1.0, True, 3)
        assert s["extra"]["verify"]["unscored"] == 3
    assert summary.judge_errors == 6
    # one batched call per evidence selection (two per task), each asked twice: the retry
    # shows the parse error
    purposes = query(db, "SELECT purpose, count(*) FROM llm_calls WHERE role = 'judge' "
                         "GROUP BY purpose ORDER BY purpose")
    assert purposes == [("rubric", 4), ("rubric:retry", 4)]


# --------------------------------------------------------------------------- the verifier


def rec(tool: str, args: dict[str, Any], result: Any = None, error: str | None = None,
        effect: str = "read") -> ToolRecord:
    return ToolRecord(call_id=tool, tool_name=tool, call=args, result=result, error=error,
                      started_at=0.0, duration=0.0, effect=effect)  # type: ignore[arg-type]


def trace(records: list[ToolRecord], reply: str = "") -> Trace:
    return Trace(tool_records=records, state={}, files={},
                 messages=[Message("assistant", reply, 1)], reply=reply,
                 read_tools={r.tool_name for r in records if r.effect == "read"})


def test_rules_must_call_with_arguments_counts_order_and_forbidden_tools() -> None:
    t = trace([rec("log__read", {}, [{"ref": "EVT-318"}]),
               rec("mail__send", {"to": "aiko@x", "body": "Friday"}, effect="write"),
               rec("cal__update", {"id": "EVT-318"}, error="no such row", effect="write"),
               rec("mail__send", {"to": "aiko@x, ben@x", "body": "Wed"}, effect="write")])
    to_aiko = {"tool": "mail__send", "where": {"args.to": {"contains": "AIKO@"}}}
    assert evaluate({**to_aiko, "count": {"min": 2}}, t).passed  # min_calls: 2
    assert not evaluate({**to_aiko, "count": {"min": 3}}, t).passed
    # every operator of a matcher must hold
    assert not evaluate({"tool": "mail__send",
                         "where": {"args.to": {"contains": "ben", "regex": "^aiko@x$"}}}, t).passed
    assert evaluate({"tool": "mail__send",
                     "where": {"args.to": {"contains": "ben", "regex": "^aiko"}}}, t).passed
    assert evaluate({"sequence": ["log__read", "cal__update", "mail__send"],
                     "successful": "any"}, t).passed
    assert not evaluate({"sequence": ["mail__send", "log__read"]}, t).passed
    # a failed update takes no part in an order of successful calls (the default)
    assert not evaluate({"sequence": ["log__read", "cal__update"], "successful": True},
                        t).passed
    assert not evaluate({"sequence": ["log__read", "cal__update"]}, t).passed
    assert evaluate({"not": {"tool": "cal__delete"}}, t).passed
    assert not evaluate({"tool": "mail__*", "exists": False}, t).passed


def test_a_failed_call_did_not_do_the_thing_unless_the_rule_says_so() -> None:
    # the update of EVT-318 failed: by default it did not happen; `successful: false` asks for
    # the failed calls only, `successful: any` for every call
    t = trace([rec("cal__update", {"id": "EVT-318"}, error="no such row", effect="write"),
               rec("cal__update", {"id": "EVT-320"}, {"ok": True}, effect="write")])
    moved = {"tool": "cal__update", "where": {"args.id": "EVT-318"}}
    assert not evaluate(moved, t).passed
    assert not evaluate({**moved, "successful": True}, t).passed
    assert evaluate({**moved, "successful": False}, t).passed
    assert evaluate({**moved, "successful": "any"}, t).passed
    assert evaluate({"tool": "cal__update", "count": {"equals": 1}}, t).passed
    assert evaluate({"tool": "cal__update", "successful": "any", "count": {"equals": 2}},
                    t).passed
    assert evaluate({"tool": "cal__update", "successful": False, "count": {"equals": 1}},
                    t).passed
    assert not evaluate({"sequence": ["cal__update", "cal__update"]}, t).passed
    assert evaluate({"sequence": ["cal__update", "cal__update"], "successful": "any"}, t).passed


def test_grounding_takes_whole_ids_from_read_results_only() -> None:
    t = trace([rec("log__read", {}, [{"ref": "EVT-318"}, {"ref": "MSG-2212"}]),
               rec("cal__create", {}, {"id": "EVT-901"}, effect="write"),
               rec("log__read", {"q": "x"}, [{"ref": "EVT-777"}], error="boom")],
              reply="EVT-318 and MSG-2212 are fine; EVT-31 and EVT-901 and EVT-777 are not.")
    res = evaluate({"reply": True, "grounded": r"(EVT|MSG)-\d+"}, t)
    assert not res.passed
    # whole matches despite the group; EVT-31 is not EVT-318; write results and failed reads
    # ground nothing
    assert res.detail == "final reply mentions ids never read: EVT-31, EVT-777, EVT-901"
    assert evaluate({"reply": True, "grounded": r"EVT-318|MSG-\d{4}"}, t).passed


def test_soft_score_weights_excludes_unscored_items_and_applies_caps() -> None:
    verify = {"pass_threshold": 0.7, "outcome_weight": 0.8}
    items = [(3.0, "outcome", 1.0), (1.0, "outcome", 0.0), (2.0, "outcome", None),
             (1.0, "process", 0.0)]
    v = soft_score(items, verify)
    # outcome (3·1 + 1·0) / 4 = 0.75 (the unscored item is left out, not a 0); process 0
    assert v.score == pytest.approx(0.6) and (v.passed, v.unscored) == (False, 1)
    assert soft_score([(1.0, "outcome", 1.0), (5.0, "process", 0.0)], verify).score == \
        pytest.approx(0.8)  # outcome outweighs process whatever the item weights
    capped = soft_score([(1.0, "outcome", 1.0)], verify, [CapHit("c", 0.5, "why", "d"),
                                                            CapHit("d", 0.9, "why", "d")])
    assert (capped.score, capped.uncapped, capped.passed) == (0.5, 1.0, False)
    # every outcome item unscored: unknown, not a pass on process alone
    unknown = soft_score([(1.0, "outcome", None), (1.0, "process", 1.0)], verify)
    assert (unknown.score, unknown.passed) == (None, None)
    assert soft_score([(1.0, "outcome", None)], verify, [CapHit("c", 0.0, "", "")]).passed \
        is False
    t = trace([rec("cal__delete", {"id": "EVT-1"}, error="no such row", effect="write")])
    hits = fired_caps([{"id": "c1", "when": {"tool": "cal__delete"}, "cap": 0.0,
                        "reason": "never delete"},
                       {"id": "c2", "when": {"tool": "mail__delete"}, "cap": 0.2,
                        "reason": "x"}], t)
    assert [(h.id, h.detail) for h in hits] == [("c1", "1 calls of cal__delete")]
    # a cap counts attempts (nested checks too) unless it asks for successful calls
    nested = {"id": "c3", "when": {"not": {"not": {"tool": "cal__delete"}}}, "cap": 0.0,
              "reason": "x"}
    done = {"id": "c4", "when": {"tool": "cal__delete", "successful": True}, "cap": 0.0,
            "reason": "x"}
    assert [h.id for h in fired_caps([nested, done], t)] == ["c3"]


# --------------------------------------------------------------------------- groups, webhooks

GROUPS_PACK = """\
benchpack: 1
name: vo-groups
personas: [{id: p, profile: {role: Site manager}}]
services:
  - name: door
    group: phone-gui
    tables: {locks: {key: id, rows: [{id: L-1, state: open}]}}
    operations: [{name: list, kind: list, table: locks}, {name: set, kind: update, table: locks}]
tools:
  - {name: badge_log, description: Badge reader log, group: laptop-cli,
     impl: {kind: static, result: {last: L-1 opened 07:02}}}
environments:
  - {id: site, services: [door], tools: [badge_log]}
episodes:
  - id: e
    persona: p
    environment: site
    sessions:
      - id: alarm
        protocol: verified_outcome
        trigger: {kind: webhook, source: alarm-panel, payload: {zone: L-1, level: high}}
        request: Door alarm raised.
        checklist:
          - {text: L-1 is locked, rule: {state: door.locks, where: {id: L-1, state: locked}}}
      - id: patrol
        protocol: verified_outcome
        trigger: {kind: heartbeat}
        checklist:
          - {text: The locks are listed, aspect: process, rule: {tool: door__list}}
"""


def test_webhook_session_and_tool_groups(write_pack: Any, tmp_path: Path) -> None:
    pack = write_pack({"pack.yaml": GROUPS_PACK})
    res = compile_pack(pack, tmp_path / "plan", use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    agent = {"alarm": [{"tool_calls": [{"name": "badge_log", "args": {}},
                                       {"name": "door__list", "args": {}},
                                       {"name": "door__set", "args": {"id": "L-1",
                                                                      "state": "locked"}}],
                        "say": "L-1 is locked again."}],
             "patrol": [{"tool_calls": [{"name": "door__list", "args": {}}],
                         "say": "All locked."}]}
    db, _ = run(tmp_path / "plan", tmp_path, agent, judge="rules")
    s = session(db, "alarm")
    assert (s["termination"], s["user_turns"], s["passed"]) == ("answered", 0, True)
    assert s["extra"]["trigger"] == "webhook"
    opening = query(db, "SELECT name, content FROM messages WHERE role = 'user'")
    assert opening[0][0] == "environment" and '"payload": {"zone": "L-1"' in opening[0][1]
    assert query(db, "SELECT tool_name, tool_group FROM tool_calls WHERE session_id LIKE "
                     "'%.alarm' ORDER BY seq") == [
        ("badge_log", "laptop-cli"), ("door__list", "phone-gui"), ("door__set", "phone-gui")]
    # no heartbeat schedule and no message: one beat, worded by the `heartbeat.wake` template
    patrol = session(db, "patrol")
    assert (patrol["heartbeats"], patrol["passed"]) == (1, True)
    [(wake,)] = query(db, "SELECT content FROM messages WHERE role = 'user' AND "
                          "session_id LIKE '%.patrol'")
    assert json.loads(wake.removeprefix("[environment event] "))["text"] == (
        "Scheduled check-in (1 of 1). Nobody has asked for anything. Review what has happened, "
        "then act on or flag whatever needs attention.")


def test_store_migrates_tool_calls_to_carry_the_group(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute("CREATE TABLE tool_calls (run_id VARCHAR, session_id VARCHAR, repeat INTEGER, "
                "seq INTEGER, turn INTEGER, step INTEGER, call_id VARCHAR, tool_name VARCHAR, "
                "effect VARCHAR, call JSON, result JSON, error VARCHAR, started_at DOUBLE, "
                "duration_s DOUBLE)")
    con.close()
    con = connect(db)
    cols = [r[0] for r in con.execute("DESCRIBE tool_calls").fetchall()]
    assert cols[-2:] == ["tool_group", "side"]  # side: schema 7 (issue 24)
    assert con.execute("SELECT value FROM meta").fetchone() == (str(SCHEMA_VERSION),)
    con.close()
