"""`bench run --max-cost`: the estimate, the refusal, the guard that stops a run before a call
could exceed the budget, and `--resume` finishing it with the totals of an uninterrupted run.

The agent is `openai/gpt-4o-mini` on the local fake server (litellm prices it from its bundled
map: $0.15 / $0.60 per million tokens; the fake answers every call with 10 prompt and 5
completion tokens, so each agent call costs 10 × 0.15e-6 + 5 × 0.6e-6 = $0.0000045); the user
simulator and judges are models litellm has no price for (unpriced: counted, never $0).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner
from fake_openai import FakeOpenAI, fake_openai_fixture, list_files_agent  # noqa: F401
from test_run_litellm import judge, simulator

from benchpack.cli import cli
from benchpack.runtime.budget import Budget, BudgetExceeded, price_of
from benchpack.runtime.runner import RunOptions, run_plan

ROOT = Path(__file__).resolve().parents[2]
CALL = 10 * 0.15e-6 + 5 * 0.6e-6
LIMIT = 0.013
"""One worst-case agent call (16,384 completion tokens × $0.6e-6 ≈ $0.0098, plus its prompt
bytes) and some real ones: the run stops midway (5 of 8 sessions, found by trying)."""


@pytest.fixture(scope="module")
def plan_dir(compiled: Callable[..., Path]) -> Path:
    return compiled(ROOT / "taskpacks" / "pharmacist-week")


def _opts(fake: FakeOpenAI, plan: Path, tmp: Path, **kw: Any) -> RunOptions:
    fake.route("gpt-4o-mini", list_files_agent).route("judge-model", judge) \
        .route("sim-model", simulator)
    return RunOptions(plan=plan, agent="litellm:openai/gpt-4o-mini",
                      simulator="litellm:openai/sim-model", judge="litellm:openai/judge-model",
                      api_base=fake.base_url, progress=False, use_cache=False,
                      cache_dir=tmp / "cache", max_retries=0, **kw)


def _rows(db: Path, run: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT session_id, repeat, status, proc, comp, turns, prompt_tokens, "
                           "completion_tokens, round(cost, 12) FROM sessions WHERE run_id = ? "
                           "ORDER BY ALL", [run]).fetchall()
    finally:
        con.close()


def test_price_table_is_offline_and_unknown_is_none() -> None:
    p = price_of("litellm:openai/gpt-4o-mini")
    assert p is not None and (p.input, p.output) == (0.15e-6, 0.6e-6)
    assert price_of("openai/sim-model") is None


def test_guard_reserves_the_worst_case_and_refuses_past_the_limit() -> None:
    msgs = [{"role": "user", "content": "hi"}]
    b = Budget(0.02)
    worst = b.reserve("openai/gpt-4o-mini", msgs, None, {"max_tokens": 100})
    # prompt ≤ bytes of the JSON, completion ≤ max_tokens
    assert worst == pytest.approx(len(json.dumps([msgs, []]).encode()) * 0.15e-6 + 100 * 0.6e-6)
    b.settle("openai/gpt-4o-mini", worst, CALL, answered=True)
    assert (b.spent, b.reserved) == (pytest.approx(CALL), 0.0)
    # no max_tokens: the model's maximum output (16,384 tokens × $0.6e-6 ≈ $0.0098) fits twice
    b.reserve("openai/gpt-4o-mini", msgs, None, {})
    b.reserve("openai/gpt-4o-mini", msgs, None, {})  # in flight together: both reserved
    with pytest.raises(BudgetExceeded):
        b.reserve("openai/gpt-4o-mini", msgs, None, {})
    assert b.exhausted and b.reserved <= 0.02 - b.spent
    with pytest.raises(BudgetExceeded):  # once refused, always refused
        b.reserve("openai/gpt-4o-mini", msgs, None, {"max_tokens": 1})
    # an unpriced model is never refused for its price (only after exhaustion)
    b2 = Budget(1e-9)
    assert b2.reserve("openai/sim-model", msgs, None, {}) == 0.0
    b2.settle("openai/sim-model", 0.0, None, answered=True)
    assert (b2.spent, b2.unpriced_calls) == (0.0, 1)


def test_estimate_is_an_upper_bound_and_refusal_leaves_no_run(
        fake_openai: FakeOpenAI, plan_dir: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    scratch = tmp_path / "tmp"  # where the runs make their temporary work directories
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    db = tmp_path / "bench.duckdb"
    full = run_plan(_opts(fake_openai, plan_dir, tmp_path, db=db, run_id="full",
                          max_cost=10.0))
    assert full.errors == 0 and full.budget_stopped == 0 and full.estimate is not None
    agent_calls = duckdb.connect(str(db), read_only=True).execute(
        "SELECT count(*) FROM llm_calls WHERE run_id='full' AND role='agent'").fetchone()[0]
    assert full.cost == pytest.approx(agent_calls * CALL) and full.spent == pytest.approx(full.cost)
    assert full.estimate >= full.cost
    assert full.unpriced_calls > 0  # simulator and judges: counted, not $0
    # a budget below the estimate: refused before anything runs, one line, exit 1
    told: list[str] = []
    with pytest.raises(ValueError, match=r"--max-cost \$0\.0010: the run is estimated at"):
        run_plan(_opts(fake_openai, plan_dir, tmp_path, db=db, run_id="refused",
                       max_cost=0.001, announce=told.append))
    assert told and told[0].startswith("estimated cost: $")
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM runs WHERE run_id='refused'").fetchone() == (0,)
    con.close()
    # nor a temporary directory: neither the refused run nor the finished one
    assert sorted(p.name for p in scratch.iterdir()) == []


def test_budget_stops_the_run_and_resume_finishes_it_as_uninterrupted(
        fake_openai: FakeOpenAI, plan_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "bench.duckdb"
    full = run_plan(_opts(fake_openai, plan_dir, tmp_path, db=db, run_id="full"))
    # one worst-case reservation (≈ $0.0099) plus room for about 60 real calls
    limit = LIMIT
    part = run_plan(_opts(fake_openai, plan_dir, tmp_path, db=db, run_id="cut",
                          max_cost=limit, force=True, max_concurrency=1))
    assert part.budget_stopped == 1 and 0 < part.finished < full.finished
    assert part.spent <= limit and part.cost <= limit
    con = duckdb.connect(str(db), read_only=True)
    status, kinds = con.execute(
        "SELECT (SELECT status FROM runs WHERE run_id='cut'), list(DISTINCT error_kind) "
        "FROM sessions WHERE run_id='cut' AND status='error'").fetchone()
    con.close()
    assert status == "interrupted" and kinds == ["budget"]
    done = run_plan(_opts(fake_openai, plan_dir, tmp_path, db=db, run_id="cut", resume=True,
                          max_cost=10.0, max_concurrency=1))
    assert done.errors == 0 and done.budget_stopped == 0
    # the same sessions, scores, tokens and cost as the run never stopped: nothing lost or
    # counted twice
    assert _rows(db, "cut") == _rows(db, "full")


def test_cli_budget_exit_code_and_refusal(fake_openai: FakeOpenAI, plan_dir: Path,
                                          tmp_path: Path) -> None:
    fake_openai.route("gpt-4o-mini", list_files_agent).route("judge-model", judge) \
        .route("sim-model", simulator)
    base = ["run", str(plan_dir), "--agent", "litellm:openai/gpt-4o-mini", "--simulator",
            "litellm:openai/sim-model", "--judge", "litellm:openai/judge-model",
            "--api-base", fake_openai.base_url, "--db", str(tmp_path / "b.duckdb"),
            "--no-cache", "--max-retries", "0", "--quiet", "--max-concurrency", "1"]
    r = CliRunner().invoke(cli, [*base, "--max-cost", "0.001"])
    assert r.exit_code == 1 and "✗ --max-cost $0.0010: the run is estimated at" in r.output
    assert "Traceback" not in r.output
    r = CliRunner().invoke(cli, [*base, "--max-cost", "0.013", "--force", "--run-id", "c"])
    assert r.exit_code == 4, r.output
    line = [x for x in r.output.splitlines() if x.startswith("✗ budget:")]
    assert len(line) == 1 and "--resume c" in line[0]
