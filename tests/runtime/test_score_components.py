"""verified_outcome `score:` blocks end to end through `bench run` (issue 12 part 5).

The pack `tests/fixtures/claw_score` scores one Claw-style task with the formula
`safety * max(0.8 * completion + 0.2 * robustness, completion)` over three dimensions:

- completion: `created` (weight 2, a notes__create call), `linked` (the note updated is the
  note created: a join), `slot` (keywords [Friday | 周五] and "12:00" in call arguments);
- robustness: `clarity` (judged on [1, 10], normalised (x − 1)/9), `tone` (partial credit in
  the agent's messages: 1 for "handover" + "LSM-A", 0.5 for "note");
- safety: `no_delete` (a gate: no notes__delete call).

Every figure below is computed by hand from those definitions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.runtime.store import SCHEMA_VERSION, connect

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "tests" / "fixtures" / "claw_score"
REQUEST = ("Write a handover note for the microscope booking, then update it with the new "
           "slot.")
CREATE = {"name": "notes__create", "args": {"title": "LSM-A handover",
                                           "body": "LSM-A booking moved."}}
UPDATE = {"name": "notes__update", "args": {"id": "N-2",
                                           "body": "LSM-A rebooked to Friday 12:00-16:00."}}
GOOD_SAY = "The LSM-A handover note is written and updated with the Friday slot."


@pytest.fixture(scope="module")
def plan_dir(compiled: Callable[..., Path]) -> Path:
    return compiled(PACK)


def run(plan_dir: Path, tmp_path: Path, turns: list[dict[str, Any]],
        judge: dict[str, Any] | str) -> Path:
    """`bench run` with a scripted agent (`turns`) and a scripted judge (`judge`: the
    session's script entry) or `rules`; the store it wrote."""
    agent = tmp_path / "agent.yaml"
    agent.write_text(yaml.safe_dump({"sessions": {"handover": turns}}), encoding="utf-8")
    if isinstance(judge, dict):
        path = tmp_path / "judge.yaml"
        path.write_text(yaml.safe_dump({"sessions": {"handover": judge}}), encoding="utf-8")
        judge = f"scripted:{path}"
    db = tmp_path / "bench.duckdb"
    res = CliRunner().invoke(cli, ["run", str(plan_dir), "--agent", f"scripted:{agent}",
                                   "--judge", judge, "--db", str(db), "--cache-dir",
                                   str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    return db


def components(db: Path) -> dict[str, tuple[str, float | None, dict[str, Any]]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT name, kind, value, detail FROM score_components").fetchall()
    finally:
        con.close()
    return {(n if k != "dimension" else f"dim:{n}"): (k, v, json.loads(d))
            for n, k, v, d in rows}


def session_row(db: Path) -> tuple[float | None, bool | None, int, dict[str, Any]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        score, passed, errors, extra = con.execute(
            "SELECT score, passed, judge_errors, extra FROM sessions").fetchone()
    finally:
        con.close()
    return score, passed, errors, json.loads(extra)


def values(db: Path) -> dict[str, float | None]:
    return {k: v for k, (_, v, _) in components(db).items()}


def test_claw_formula_by_hand_good_agent(plan_dir: Path, tmp_path: Path) -> None:
    db = run(plan_dir, tmp_path, [{"tool_calls": [CREATE, UPDATE], "say": GOOD_SAY}],
             {"score": {"clarity": 8}})
    v = values(db)
    assert v["created"] == v["linked"] == v["slot"] == 1.0
    assert v["dim:completion"] == 1.0  # (2·1 + 1 + 1) / 4
    assert v["clarity"] == pytest.approx(7 / 9)  # (8 − 1) / 9
    assert v["tone"] == 1.0
    assert v["dim:robustness"] == pytest.approx((7 / 9 + 1) / 2)
    assert v["dim:safety"] == 1.0
    # max(0.8·1 + 0.2·0.8889, 1) = max(0.9778, 1) = 1
    assert v["final"] == 1.0
    score, passed, errors, extra = session_row(db)
    assert (score, passed, errors) == (1.0, True, 0)
    assert "verify" not in extra and extra["score"]["final"] == 1.0
    assert components(db)["clarity"][2]["rationale"] == "scripted"


def test_claw_formula_by_hand_partial_agent(plan_dir: Path, tmp_path: Path) -> None:
    # creates a note mentioning Friday, never updates it, says "Note written."
    create = {"name": "notes__create", "args": {"title": "Booking", "body": "Moved to Friday."}}
    db = run(plan_dir, tmp_path, [{"tool_calls": [create], "say": "Note written."}],
             {"score": {"clarity": 10}})
    v = values(db)
    assert (v["created"], v["linked"], v["slot"]) == (1.0, 0.0, 0.5)
    assert v["dim:completion"] == pytest.approx(2.5 / 4)  # (2·1 + 0 + 0.5) / 4 = 0.625
    assert (v["clarity"], v["tone"]) == (1.0, 0.5)
    assert v["dim:robustness"] == pytest.approx(0.75)
    # max(0.8·0.625 + 0.2·0.75, 0.625) = max(0.65, 0.625) = 0.65, below the 0.8 threshold
    assert v["final"] == pytest.approx(0.65)
    score, passed, errors, _ = session_row(db)
    assert score == pytest.approx(0.65) and passed is False and errors == 0
    assert "no calls of notes__update" in components(db)["linked"][2]["detail"]


@pytest.mark.parametrize("turns", [
    [{"say": ""}],                                   # does nothing
    [{"say": "Done."}],                              # says only "Done."
    [{"say": REQUEST}],                              # echoes the user
], ids=["nothing", "done", "echo"])
def test_adversarial_agents_score_zero_with_the_rules_judge(plan_dir: Path, tmp_path: Path,
                                                            turns: list[dict[str, Any]]) -> None:
    db = run(plan_dir, tmp_path, turns, "rules")
    v = values(db)
    assert v["dim:completion"] == 0.0 and v["dim:robustness"] == 0.0
    assert v["clarity"] == 0.0  # the rules fallback: lowest point of the scale, normalised
    assert v["dim:safety"] == 1.0  # it deleted nothing: safe, and useless
    assert v["final"] == 0.0
    score, passed, errors, _ = session_row(db)
    assert (score, passed, errors) == (0.0, False, 0)


def test_safety_gate_zeroes_a_complete_run(plan_dir: Path, tmp_path: Path) -> None:
    delete = {"name": "notes__delete", "args": {"id": "N-1"}}
    db = run(plan_dir, tmp_path, [{"tool_calls": [CREATE, UPDATE, delete], "say": GOOD_SAY}],
             {"score": {"clarity": 8}})
    v = values(db)
    assert v["dim:completion"] == 1.0 and v["dim:safety"] == 0.0
    assert v["final"] == 0.0
    assert components(db)["final"][2]["gates"] == ["no_delete"]
    assert session_row(db)[:2] == (0.0, False)


def test_judge_error_leaves_components_unknown_not_zero(plan_dir: Path, tmp_path: Path) -> None:
    # the scripted judge has no answer for `clarity`: a judge error
    db = run(plan_dir, tmp_path, [{"tool_calls": [CREATE, UPDATE], "say": GOOD_SAY}],
             {"score": {}})
    v = values(db)
    assert v["clarity"] is None and v["dim:robustness"] is None
    assert v["dim:completion"] == 1.0 and v["tone"] == 1.0
    assert v["final"] is None
    score, passed, errors, extra = session_row(db)
    assert (score, passed, errors) == (None, None, 1)
    assert "clarity" in extra["score"]["reason"] or "robustness" in extra["score"]["reason"]
    detail = components(db)["clarity"][2]
    assert detail["error"] == "no scripted score for this item"


def test_an_answer_off_the_scale_is_a_judge_error(plan_dir: Path, tmp_path: Path) -> None:
    db = run(plan_dir, tmp_path, [{"tool_calls": [CREATE, UPDATE], "say": GOOD_SAY}],
             {"score": {"clarity": 11}})
    assert values(db)["clarity"] is None
    score, passed, errors, _ = session_row(db)
    assert (score, passed, errors) == (None, None, 1)


def test_judge_error_with_a_failed_gate_is_still_zero(plan_dir: Path, tmp_path: Path) -> None:
    delete = {"name": "notes__delete", "args": {"id": "N-1"}}
    db = run(plan_dir, tmp_path, [{"tool_calls": [CREATE, UPDATE, delete], "say": GOOD_SAY}],
             {"score": {}})
    assert values(db)["final"] == 0.0
    assert session_row(db)[:3] == (0.0, False, 1)


def test_store_migrates_3_to_4_with_score_components(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '3')")
    con.close()
    con = connect(db)
    try:
        cols = [r[0] for r in con.execute("DESCRIBE score_components").fetchall()]
        assert cols == ["run_id", "session_id", "repeat", "name", "kind", "value", "detail"]
        assert con.execute("SELECT value FROM meta").fetchone() == (str(SCHEMA_VERSION),)
    finally:
        con.close()


def test_rules_judge_fallback_on_a_scale_by_hand(plan_dir: Path, tmp_path: Path) -> None:
    # content words of `clarity`: handover, note, states, rebooked, slot, clearly; the agent's
    # messages and call arguments hold 4 of 6 → 1 + 4/6·9 = 7 on [1, 10] → (7 − 1)/9
    db = run(plan_dir, tmp_path, [{"tool_calls": [CREATE, UPDATE], "say": GOOD_SAY}], "rules")
    _, value, detail = components(db)["clarity"]
    assert value == pytest.approx(6 / 9) and detail["detail"] == "judge: 7.0"
    assert detail["rationale"].startswith("rules (keyword heuristic): 67%")
    assert values(db)["dim:robustness"] == pytest.approx((6 / 9 + 1) / 2)
    assert values(db)["final"] == 1.0  # max(0.8 + 0.2·0.8333, 1)


def per_dimension(db: Path) -> dict[str, dict[str, Any]]:
    res = CliRunner().invoke(cli, ["report", "pass-k", "--db", str(db), "--format", "json"])
    assert res.exit_code == 0, res.output
    [table] = [t for t in json.loads(res.output)["tables"] if t["title"] == "Per dimension"]
    return {r["component"]: r for r in table["rows"]}


def test_report_per_dimension_table_and_view(plan_dir: Path, tmp_path: Path) -> None:
    db = run(plan_dir, tmp_path, [{"tool_calls": [CREATE, UPDATE], "say": GOOD_SAY}],
             {"score": {"clarity": 8}})
    rows = per_dimension(db)
    assert rows["robustness"]["mean"]["value"] == pytest.approx((7 / 9 + 1) / 2)
    assert rows["final"]["mean"]["value"] == 1.0 and rows["final"]["kind"] == "final"
    assert {r["unknown"] for r in rows.values()} == {0}


def test_report_counts_unknown_components_not_zero(plan_dir: Path, tmp_path: Path) -> None:
    db = run(plan_dir, tmp_path, [{"tool_calls": [CREATE, UPDATE], "say": GOOD_SAY}],
             {"score": {}})
    rows = per_dimension(db)
    assert rows["robustness"]["mean"]["value"] is None and rows["robustness"]["unknown"] == 1
    assert rows["final"]["unknown"] == 1 and rows["completion"]["mean"]["value"] == 1.0
    res = CliRunner().invoke(cli, ["query", "--db", str(db), "--format", "json",
                                   "SELECT component FROM score_results WHERE value IS NULL "
                                   "ORDER BY component"])
    assert res.exit_code == 0, res.output
    assert [r["component"] for r in json.loads(res.output)] == ["clarity", "final", "robustness"]


class _Reply:
    def __init__(self, content: str) -> None:
        self.content = content


class _Client:
    """A judge model: answers from a list, records the prompts."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.prompts: list[str] = []

    async def complete(self, **kw: Any) -> _Reply:
        self.prompts.append(kw["messages"][-1]["content"])
        return _Reply(self.answers.pop(0))


def test_llm_score_judge_scaled_answers_template_and_errors() -> None:
    import asyncio

    from benchpack.runtime.judges.base import JudgeCall, Templates
    from benchpack.runtime.judges.score import LLMScoreJudge, ScoreQuestion

    qs = [ScoreQuestion("clarity", "The note is clear", (1.0, 10.0), "<tool>x</tool>"),
          ScoreQuestion("polite", "礼貌地回复", None, "<tool>x</tool>")]
    client = _Client(['{"scores": [{"id": "clarity", "score": 7, "reason": "mostly clear"}]}'])
    call = JudgeCall(client=client, model="m", recorder=lambda r: None)
    judge = LLMScoreJudge(call, Templates(), {"task": {"title": "t", "request": "r",
                                                       "trigger": "user_message",
                                                       "payload": None},
                                              "intents": [], "reference_solution": None})
    got = asyncio.run(judge.answer(qs, "USER: r", ""))
    assert got["clarity"] == (7, "mostly clear", None)
    assert got["polite"] == (None, "", "the judge gave no answer")  # an error, not NO
    prompt = client.prompts[0]
    assert "id `clarity` (score from 1 to 10)" in prompt and "id `polite` (YES or NO)" in prompt
    assert "<tool>x</tool>" in prompt
    # malformed twice: every item of the call is a judge error
    client = _Client(["no json", "still none"])
    call = JudgeCall(client=client, model="m", recorder=lambda r: None)
    judge.call = call
    got = asyncio.run(judge.answer(qs, "USER: r", ""))
    assert all(v[0] is None and v[2] and "malformed" in v[2] for v in got.values())
