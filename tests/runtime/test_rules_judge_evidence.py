"""The rules judges credit only what the agent said, did or wrote (issue 10).

A scripted agent that only says "Done." scored COMP 75 % on a π-Bench task because the rules
rubric judge read the whole transcript, user turns included. An agent that echoes the user or
only reads a file holding the words must not be credited either; one that does the work is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from benchpack.runtime.judges.intent import Intent, RulesIntentJudge, TurnEvidence, strip_echo
from benchpack.runtime.judges.rubric import RubricItem, RulesRubricJudge
from benchpack.runtime.judges.trigger import RulesTriggerJudge
from conftest import bench_run

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "rules_judge"


@pytest.fixture(scope="module")
def plan_dir(compiled: Callable[..., Path]) -> Path:
    return compiled(CASE)


def _run(plan_dir: Path, tmp_path: Path, who: str) -> dict[str, object]:
    db, summary = bench_run(plan_dir, tmp_path, db=tmp_path / f"{who}.duckdb",
                            agent=f"scripted:{CASE / f'{who}_agent.yaml'}", judge="rules",
                            simulator="rules")
    assert summary.errors == 0
    con = duckdb.connect(str(db), read_only=True)
    cur = con.execute("SELECT comp, completed, provided FROM sessions WHERE run_id = ?",
                      [summary.run_id])
    row = dict(zip([d[0] for d in cur.description], cur.fetchone() or (), strict=True))
    row["items"] = dict(con.execute(
        "SELECT item_id, score FROM checklist_results WHERE run_id = ?",
        [summary.run_id]).fetchall())
    con.close()
    return row


def test_an_agent_saying_done_gets_no_credit_for_the_users_words(plan_dir: Path,
                                                                  tmp_path: Path) -> None:
    got = _run(plan_dir, tmp_path, "done")
    assert got["items"] == {"C1": 0.0, "C2": 0.0, "C3": 0.0, "C4": 0.0}  # was 1, 1, 1, 1
    assert got["comp"] == 0.0
    assert got["completed"] == 0


def test_an_echoing_agent_that_reads_the_notes_gets_no_credit(plan_dir: Path,
                                                              tmp_path: Path) -> None:
    got = _run(plan_dir, tmp_path, "echo")
    assert got["comp"] == 0.0
    # the intent's words are all in notes.md, which the agent only read
    assert (got["completed"], got["provided"]) == (0, 1)


def test_an_agent_that_does_the_work_is_credited(plan_dir: Path, tmp_path: Path) -> None:
    got = _run(plan_dir, tmp_path, "good")
    assert got["items"] == {"C1": 1.0, "C2": 1.0, "C3": 1.0, "C4": 1.0}
    assert got["comp"] == 1.0


async def _rubric_rules_judge_reads_only_the_agents_output() -> None:
    item = RubricItem("C1", "The budget table is included", "budget table included")
    history = "USER: include the budget table\nASSISTANT: Done."
    got = await RulesRubricJudge().grade([item], history, [], own="Done.")
    assert got["C1"].score == 0.0
    got = await RulesRubricJudge().grade([item], history, [], own="Budget table included.")
    assert got["C1"].score == 1.0
    assert "keyword heuristic" in got["C1"].detail


async def _intent_rules_judge_ignores_echoes_and_files_only_read() -> None:
    intents = [Intent("I1", "Give the OpenReview link for each paper"),
               Intent("I2", "推荐五篇论文")]
    judge = RulesIntentJudge()
    heard = ["Please give the OpenReview link for each paper.", "推荐五篇论文。"]
    echo = TurnEvidence(1, "Please give the OpenReview link for each paper. 推荐五篇论文。",
                        heard=heard)
    assert await judge.completed(echo, intents) == set()
    assert await judge.targeted(TurnEvidence(1, "推荐五篇论文？", heard=["推荐五篇论文？"]),
                                intents) == set()
    read = TurnEvidence(1, "Done.", files={"p.md": "OpenReview link for each paper"},
                        written=set())
    assert await judge.completed(read, intents) == set()
    wrote = TurnEvidence(1, "Done.", files={"p.md": "OpenReview link for each paper"},
                         written={"p.md"}, heard=heard)
    assert await judge.completed(wrote, intents) == {"I1"}


async def _trigger_rules_judge_ignores_an_echo_of_the_user() -> None:
    from benchpack.runtime.judges.trigger import TriggerSpec

    spec = TriggerSpec(id="t", type="emergent", turn=2, anchors=[], origin="authored",
                       pass_="Warns that the dropoff time conflicts with the dentist",
                       partial="Mentions the dentist", fail="Ignores it")
    user = "Can you move the dropoff time? I have the dentist and it conflicts."
    history = [{"role": "user", "content": user}]
    got = await RulesTriggerJudge().judge(spec, history, user)
    assert got.label == "FAIL"
    got = await RulesTriggerJudge().judge(
        spec, history, "Careful: the dropoff conflicts with your dentist appointment.")
    assert got.label == "PASS" and got.quote_found


def test_strip_echo_keeps_what_the_agent_added() -> None:
    assert strip_echo("You said: Book a table. I booked it for 8 pm.", ["Book a table."]
                      ).split() == ["You", "said:", ".", "I", "booked", "it", "for", "8", "pm."]


def test_rubric_rules_judge_reads_only_the_agents_output() -> None:
    asyncio.run(_rubric_rules_judge_reads_only_the_agents_output())


def test_intent_rules_judge_ignores_echoes_and_files_only_read() -> None:
    asyncio.run(_intent_rules_judge_ignores_echoes_and_files_only_read())


def test_trigger_rules_judge_ignores_an_echo_of_the_user() -> None:
    asyncio.run(_trigger_rules_judge_ignores_an_echo_of_the_user())


def test_rules_judge_scores_are_labelled_as_a_keyword_heuristic(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from benchpack.cli import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    runner = CliRunner()
    assert runner.invoke(cli, ["compile", str(CASE), "-o", "build"]).exit_code == 0
    out = runner.invoke(cli, ["run", "build", "--agent", f"scripted:{CASE / 'done_agent.yaml'}",
                              "--judge", "rules", "--db", "r.duckdb"])
    assert out.exit_code == 0, out.output
    assert "(keyword heuristic: rules judge)" in out.output
    for fmt in ("md", "html"):
        rep = runner.invoke(cli, ["report", "summary", "proc-comp", "--db", "r.duckdb",
                                  "--format", fmt])
        assert rep.exit_code == 0, rep.output
        # labelled once, in each table's title, when every run was rules-judged
        assert "(keyword heuristic: rules judge)" in rep.output
