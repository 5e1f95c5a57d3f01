"""`bench rejudge` re-grades `score:` blocks (verified_outcome) as `bench run` grades them.

The pack `tests/fixtures/rejudge_score` has two sessions whose score components read every
part of the trace the rejudge rebuilds from the store (see the pack's header). The agent is
scripted, so its dialogue is the same in every run: a run judged by J1 and then re-judged by J2
must store exactly what a fresh run judged by J2 stores — `sessions.score`/`passed`/
`judge_errors`, every `score_components` row and `sessions.extra.score`.

By hand (handover: completion = (2·created + linked + stored)/4 = 1; robustness = mean(said 1,
clarity (x − 1)/9, tone 0.5); final = safety · (0.5·completion + 0.3·robustness +
0.2·assertions), pass ≥ 0.8. sweep: completion = mean(flagged 1, useful x/4), pass ≥ 0.75):

- J1 (clarity 8, assertion YES, useful 4): handover 0.5 + 0.3·(1 + 7/9 + 0.5)/3 + 0.2
  = 0.92778, pass; sweep 1.0, pass.
- J2 (clarity 3, assertion NO, useful 1): handover 0.5 + 0.3·(1 + 2/9 + 0.5)/3 + 0
  = 0.67222, fail; sweep (1 + 0.25)/2 = 0.625, fail.
- J3 answers nothing but the assertion: `clarity` and `useful` are judge errors, left unscored
  (NULL, never 0), their dimensions and the final score unknown; one judge error per session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.compiler import compile_pack
from benchpack.runtime.rejudge import RejudgeOptions, rejudge
from benchpack.runtime.runner import RunOptions, run_plan
from conftest import bench_run

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "tests" / "fixtures" / "rejudge_score"
HANDOVER = "session.rejudge-score-case.week.handover"
SWEEP = "session.rejudge-score-case.watch.sweep"
JUDGES = {
    "j1": {"handover": {"score": {"clarity": 8, "assertion1": "YES"}},
           "sweep": {"score": {"useful": 4}}},
    "j2": {"handover": {"score": {"clarity": 3, "assertion1": "NO"}},
           "sweep": {"score": {"useful": 1}}},
    "j3": {"handover": {"score": {"assertion1": "YES"}}, "sweep": {"score": {}}},
}
DETERMINISTIC = {HANDOVER: ("created", "linked", "stored", "said", "tone", "no_delete",
                            "communicate"),
                 SWEEP: ("flagged",)}


@pytest.fixture(scope="module")
def plan_dir(compiled: Callable[..., Path]) -> Path:
    return compiled(PACK)


def judge(tmp_path: Path, name: str) -> str:
    if name == "rules":
        return "rules"
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"sessions": JUDGES[name]}, allow_unicode=True),
                    encoding="utf-8")
    return f"scripted:{path}"


def run(plan_dir: Path, tmp_path: Path, db: Path, run_id: str, judge_name: str,
        agent: Path = PACK / "agent.yaml") -> None:
    _, summary = bench_run(plan_dir, tmp_path, agent=f"scripted:{agent}", db=db, run_id=run_id,
                           judge=judge(tmp_path, judge_name))
    assert summary.errors == 0


def outcome(db: Path, run_id: str) -> dict[str, Any]:
    """What the figures read of a run: per session its score columns and `extra.score`, and
    its `score_components` rows."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        sessions = con.execute(
            "SELECT session_id, status, comp, score, passed, judge_errors, extra FROM sessions "
            "WHERE run_id = ? ORDER BY session_id", [run_id]).fetchall()
        parts = con.execute(
            "SELECT session_id, name, kind, value, detail FROM score_components WHERE run_id = ? "
            "ORDER BY ALL", [run_id]).fetchall()
    finally:
        con.close()
    out: dict[str, Any] = {}
    for sid, status, comp, score, passed, errors, extra in sessions:
        out[sid] = {"status": status, "comp": comp, "score": score, "passed": passed,
                    "judge_errors": errors, "extra.score": json.loads(extra).get("score"),
                    "components": {n: (k, v, json.loads(d)) for s, n, k, v, d in parts
                                   if s == sid}}
    return out


@pytest.mark.parametrize(("first", "second"), [("j1", "j2"), ("j2", "j1"), ("j1", "j3"),
                                               ("rules", "j2"), ("j1", "rules")])
def test_rejudged_score_blocks_equal_a_fresh_run_with_the_new_judge(
        plan_dir: Path, tmp_path: Path, first: str, second: str) -> None:
    db = tmp_path / "a.duckdb"
    run(plan_dir, tmp_path, db, "a", first)
    rejudge(RejudgeOptions(run_id="a", judge=judge(tmp_path, second), db=db, new_run_id="r",
                           progress=False, cache_dir=tmp_path / "cache"))
    fresh = tmp_path / "b.duckdb"
    run(plan_dir, tmp_path, fresh, "b", second)
    got, want = outcome(db, "r"), outcome(fresh, "b")
    assert set(got) == {HANDOVER, SWEEP}
    for sid in got:
        assert got[sid] == want[sid], sid
        assert got[sid]["components"]  # none lost
    # deterministic components read the same final state: the new judge does not move them
    original = outcome(db, "a")
    for sid, names in DETERMINISTIC.items():
        for name in names:
            assert got[sid]["components"][name] == original[sid]["components"][name], name


def test_hand_computed_scores_before_and_after(plan_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    run(plan_dir, tmp_path, db, "a", "j1")
    before = outcome(db, "a")
    assert before[HANDOVER]["score"] == pytest.approx(0.5 + 0.3 * (1 + 7 / 9 + 0.5) / 3 + 0.2)
    assert before[HANDOVER]["passed"] is True
    assert (before[SWEEP]["score"], before[SWEEP]["passed"]) == (1.0, True)
    assert before[HANDOVER]["components"]["tone"][1] == 0.5
    rejudge(RejudgeOptions(run_id="a", judge=judge(tmp_path, "j2"), db=db, new_run_id="r",
                           progress=False, cache_dir=tmp_path / "cache"))
    after = outcome(db, "r")
    assert after[HANDOVER]["score"] == pytest.approx(0.5 + 0.3 * (1 + 2 / 9 + 0.5) / 3)
    assert after[HANDOVER]["passed"] is False
    assert after[HANDOVER]["components"]["clarity"][1] == pytest.approx(2 / 9)
    assert after[HANDOVER]["components"]["assertions"][1] == 0.0
    assert after[SWEEP]["score"] == pytest.approx(0.625) and after[SWEEP]["passed"] is False
    assert after[HANDOVER]["extra.score"]["final"] == pytest.approx(after[HANDOVER]["score"])
    # the source run is untouched
    assert outcome(db, "a") == before


def test_a_judge_error_leaves_the_item_unscored_never_zero(plan_dir: Path,
                                                            tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    run(plan_dir, tmp_path, db, "a", "j1")
    rejudge(RejudgeOptions(run_id="a", judge=judge(tmp_path, "j3"), db=db, new_run_id="r",
                           progress=False, cache_dir=tmp_path / "cache"))
    got = outcome(db, "r")
    handover, sweep = got[HANDOVER], got[SWEEP]
    assert handover["components"]["clarity"][1] is None
    assert handover["components"]["clarity"][2]["error"] == "no scripted score for this item"
    assert handover["components"]["robustness"][1] is None
    assert handover["components"]["completion"][1] == 1.0
    assert (handover["score"], handover["passed"], handover["judge_errors"]) == (None, None, 1)
    assert sweep["components"]["useful"][1] is None
    assert sweep["components"]["flagged"][1] == 1.0
    assert (sweep["score"], sweep["passed"], sweep["judge_errors"]) == (None, None, 1)
    # a session with an unknown score is left out of the mean and counted, not averaged as 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        extra = json.loads(con.execute("SELECT extra FROM sessions WHERE run_id = 'r' AND "
                                       "session_id = ?", [HANDOVER]).fetchone()[0])
    finally:
        con.close()
    assert any("clarity" in e for e in extra["judge_errors"])


@pytest.mark.parametrize("say", ["", "Done.", "echo"])
def test_adversarial_agents_stay_failed_under_a_lenient_new_judge(plan_dir: Path, tmp_path: Path,
                                                                  say: str) -> None:
    """An agent that does nothing, says only "Done." or echoes the request, run with the rules
    judge (final 0) and re-judged by J1, which grants clarity 8, the assertion and useful 4: the
    deterministic items stay 0, so handover gets 0.3·(0 + 7/9 + 0)/3 + 0.2 = 0.27778 and sweep
    (0 + 1)/2 = 0.5, both failed — exactly what a fresh J1 run gives."""
    request = "显微镜 LSM-A 的交接说明：写一条笔记，然后把新的时段（周五 12:00）更新进去。"
    text = request if say == "echo" else say
    agent = tmp_path / "adversary.yaml"
    agent.write_text(yaml.safe_dump({"sessions": {
        "handover": [{"say": text}],
        "sweep": [{"say": "Done." if say == "echo" else text}] * 2}}, allow_unicode=True),
        encoding="utf-8")
    db = tmp_path / "a.duckdb"
    run(plan_dir, tmp_path, db, "a", "rules", agent)
    original = outcome(db, "a")
    assert original[HANDOVER]["score"] == 0.0 and original[SWEEP]["score"] == 0.0
    rejudge(RejudgeOptions(run_id="a", judge=judge(tmp_path, "j1"), db=db, new_run_id="r",
                           progress=False, cache_dir=tmp_path / "cache"))
    fresh = tmp_path / "b.duckdb"
    run(plan_dir, tmp_path, fresh, "b", "j1", agent)
    got = outcome(db, "r")
    assert got == outcome(fresh, "b")
    assert got[HANDOVER]["score"] == pytest.approx(0.3 * (7 / 9) / 3 + 0.2)
    assert got[SWEEP]["score"] == pytest.approx(0.5)
    assert got[HANDOVER]["passed"] is False and got[SWEEP]["passed"] is False
    for sid, names in DETERMINISTIC.items():
        for name in names:
            assert got[sid]["components"][name] == original[sid]["components"][name], name
            # (`communicate` is not in the formula; an echo of a request holding "12:00"
            # passes it, as it passed in the original run)
            if name not in ("no_delete", "communicate"):
                assert got[sid]["components"][name][1] == 0.0, name


# --------------------------------------------------------------------------- instructed_user

REWARD_PACK = ROOT / "tests" / "fixtures" / "rejudge_reward"
CANCEL = "session.rejudge-reward-case.support.cancel"
ADDRESS = "session.rejudge-reward-case.support.address"
REWARD_JUDGES = {"r1": {"cancel": {"checklist": {"assert1": 1}}},
                 "r2": {"cancel": {"checklist": {"assert1": 0}}},
                 "r3": {"cancel": {"checklist": {}}}}


@pytest.fixture(scope="module")
def reward_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reward-plan")
    res = compile_pack(REWARD_PACK, out, use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    return out


def reward_judge(tmp_path: Path, name: str) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"sessions": REWARD_JUDGES[name]}), encoding="utf-8")
    return f"scripted:{path}"


def reward_run(plan: Path, tmp_path: Path, db: Path, run_id: str, name: str) -> None:
    summary = run_plan(RunOptions(
        plan=plan, agent=f"scripted:{REWARD_PACK / 'agent.yaml'}", db=db, run_id=run_id,
        judge=reward_judge(tmp_path, name), progress=False, cache_dir=tmp_path / "cache"))
    assert summary.errors == 0


def rewards(db: Path, run_id: str) -> dict[str, tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT session_id, score, passed, judge_errors, extra FROM sessions "
                           "WHERE run_id = ?", [run_id]).fetchall()
    finally:
        con.close()
    return {sid: (score, passed, errors, json.loads(extra)["reward"])
            for sid, score, passed, errors, extra in rows}


@pytest.mark.parametrize(("first", "second"), [("r1", "r2"), ("r2", "r1"), ("r1", "r3")])
def test_rejudged_instructed_user_rewards_equal_a_fresh_run(
        reward_plan: Path, tmp_path: Path, first: str, second: str) -> None:
    """The reward is state · actions · communicate · assertions: the new judge re-decides the
    assertion, the replayed-state and action checks stand (no tool is re-run)."""
    db = tmp_path / "a.duckdb"
    reward_run(reward_plan, tmp_path, db, "a", first)
    rejudge(RejudgeOptions(run_id="a", judge=reward_judge(tmp_path, second), db=db, new_run_id="r",
                           progress=False, cache_dir=tmp_path / "cache"))
    fresh = tmp_path / "b.duckdb"
    reward_run(reward_plan, tmp_path, fresh, "b", second)
    got, want = rewards(db, "r"), rewards(fresh, "b")
    assert got == want
    # by hand: every deterministic component holds, so the assertion decides
    expected = {"r1": (1.0, True, 0), "r2": (0.0, False, 0), "r3": (None, None, 1)}[second]
    assert got[CANCEL][:3] == expected
    assert got[ADDRESS][:3] == (1.0, True, 0)  # nothing judged: as it was
    assert got[CANCEL][3]["components"]["state"] == 1.0


# --------------------------------------------------------------------------- LLM judges

CRITERION = re.compile(r"- id `([^`]+)`(?: \(score from (\S+) to (\S+)\))?")


def llm_judge(high: bool) -> Any:
    """Every criterion of a score or rubric prompt answered: the top of its scale and YES
    (`high`), or one above the bottom and NO."""
    def answer(body: dict[str, Any]) -> str:
        text = str(body["messages"][-1]["content"])
        scores = []
        for cid, lo, hi in CRITERION.findall(text):
            score: Any = ("YES" if high else "NO") if not lo else \
                float(hi) if high else float(lo) + 1
            scores.append({"id": cid, "score": score, "reason": "fake"})
        return json.dumps({"scores": scores})
    return answer


def test_llm_rejudge_asks_bench_runs_prompts(fake_openai: FakeOpenAI, plan_dir: Path,
                                             reward_plan: Path, tmp_path: Path) -> None:
    """The same LLM judge again is served entirely from the response cache (each prompt —
    history, evidence, what the agent produced — is the one `bench run` built), and a fresh run
    with the new judge asks exactly what the rejudge asked (all cache hits) and stores the same
    figures."""
    fake_openai.route("judge-a", llm_judge(True)).route("judge-b", llm_judge(False))
    packs = {"s": (plan_dir, PACK), "u": (reward_plan, REWARD_PACK)}
    common: dict[str, Any] = dict(progress=False, cache_dir=tmp_path / "cache",
                                  api_base=fake_openai.base_url, max_retries=0)
    db, fresh = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    for run_id, (plan, pack) in packs.items():
        assert run_plan(RunOptions(plan=plan, run_id=run_id, db=db,
                                   agent=f"scripted:{pack / 'agent.yaml'}",
                                   judge="litellm:openai/judge-a", **common)).errors == 0
    asked = len(fake_openai.requests)
    assert asked > 0
    for run_id in packs:
        same = rejudge(RejudgeOptions(run_id=run_id, judge="litellm:openai/judge-a", db=db,
                                      new_run_id=f"{run_id}-a", **common))
        assert same.errors == 0 and same.judge_calls > 0
        assert same.judge_cache_hits == same.judge_calls
        assert outcome(db, f"{run_id}-a") == outcome(db, run_id)
    assert rewards(db, "u-a") == rewards(db, "u")
    assert len(fake_openai.requests) == asked
    for run_id, (plan, pack) in packs.items():
        new = rejudge(RejudgeOptions(run_id=run_id, judge="litellm:openai/judge-b", db=db,
                                     new_run_id=f"{run_id}-b", **common))
        assert new.errors == 0 and new.judge_cache_hits == 0
        assert run_plan(RunOptions(plan=plan, run_id=run_id, db=fresh,
                                   agent=f"scripted:{pack / 'agent.yaml'}",
                                   judge="litellm:openai/judge-b", **common)).errors == 0
        hits = duckdb.connect(str(fresh), read_only=True)
        try:
            assert hits.execute("SELECT count(*), count(*) FILTER (WHERE cache_hit) FROM "
                                "llm_calls WHERE run_id = ? AND role = 'judge'",
                                [run_id]).fetchone() == (new.judge_calls, new.judge_calls)
        finally:
            hits.close()
        assert outcome(db, f"{run_id}-b") == outcome(fresh, run_id)
    assert rewards(db, "u-b") == rewards(fresh, "u")
    # by hand, judge-b: clarity 2 on [1, 10] → 1/9, the assertion NO, useful 1 on [0, 4]
    got = outcome(db, "s-b")
    assert got[HANDOVER]["score"] == pytest.approx(0.5 + 0.3 * (1 + 1 / 9 + 0.5) / 3)
    assert got[SWEEP]["score"] == pytest.approx((1 + 0.25) / 2)
    assert rewards(db, "u-b")[CANCEL][:2] == (0.0, False)
