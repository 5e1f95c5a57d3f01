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
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from benchpack.compiler import compile_pack
from benchpack.runtime.rejudge import RejudgeOptions, rejudge
from benchpack.runtime.runner import RunOptions, run_plan

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
def plan_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plan")
    res = compile_pack(PACK, out, use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    return out


def judge(tmp_path: Path, name: str) -> str:
    if name == "rules":
        return "rules"
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"sessions": JUDGES[name]}, allow_unicode=True),
                    encoding="utf-8")
    return f"scripted:{path}"


def run(plan_dir: Path, tmp_path: Path, db: Path, run_id: str, judge_name: str) -> None:
    summary = run_plan(RunOptions(
        plan=plan_dir, agent=f"scripted:{PACK / 'agent.yaml'}", db=db, run_id=run_id,
        judge=judge(tmp_path, judge_name), progress=False, cache_dir=tmp_path / "cache"))
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
