"""`runner._run` as named stages over frozen options (issue 30 item 2): each stage checked on
the π-Bench case (one episode `reading`: two sessions and a third depending on both)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from benchpack.runtime.errors import UsageError
from benchpack.runtime.planfile import load_plan
from benchpack.runtime.run_stages import (
    build_chains,
    inherited,
    resolve_run,
    select_sessions,
    to_do,
)
from benchpack.runtime.runner import RunOptions, run_plan
from benchpack.runtime.store import Store
from benchpack.specs.plan import Plan

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "pibench_case"
PREFIX = "session.pibench-case.reading."


@pytest.fixture(scope="module")
def plan_dir(compiled: Callable[..., Path]) -> Path:
    return compiled(CASE)


@pytest.fixture(scope="module")
def plan(plan_dir: Path) -> Plan:
    return load_plan(plan_dir)


def _options(plan_dir: Path, tmp_path: Path, **kw: object) -> RunOptions:
    return RunOptions(plan=plan_dir, agent=f"scripted:{CASE / 'claude_agent.yaml'}",
                      judge=f"scripted:{CASE / 'claude_judge.yaml'}", simulator="rules",
                      db=tmp_path / "s.duckdb", progress=False, cache_dir=tmp_path / "cache",
                      **kw)  # type: ignore[arg-type]


def test_options_are_frozen(plan_dir: Path, tmp_path: Path) -> None:
    options = _options(plan_dir, tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.repeats = 3  # type: ignore[misc]


def test_a_resumed_run_inherits_what_was_not_given_again() -> None:
    options = RunOptions(plan="p", agent="a", judge="rules")
    existing = {"repeats": 3, "config": '{"simulator": "rules", "judge": "scripted:j.yaml", '
                                        '"planner": null}'}
    # the judge was given again: kept; the simulator was not: inherited; planner None stays
    assert inherited(options, existing) == {"repeats": 3, "simulator": "rules"}
    assert inherited(dataclasses.replace(options, repeats=2), {"config": {}}) == {}


def test_resuming_leaves_the_callers_options_as_they_were(plan_dir: Path,
                                                         tmp_path: Path) -> None:
    first = run_plan(_options(plan_dir, tmp_path, repeats=2, run_id="r1"))
    assert first.errors == 0
    resume = _options(plan_dir, tmp_path, run_id="r1", resume=True)
    resume = dataclasses.replace(resume, judge=None, simulator=None)
    store = Store(resume.db)
    try:
        run = resolve_run(resume, load_plan(plan_dir), store)
    finally:
        store.close()
    assert (run.options.repeats, run.options.judge, run.options.simulator) == \
        (2, f"scripted:{CASE / 'claude_judge.yaml'}", "rules")
    assert (resume.repeats, resume.judge, resume.simulator) == (None, None, None)


def test_selection_adds_dependencies_unless_alone(plan: Plan, plan_dir: Path,
                                                  tmp_path: Path) -> None:
    organise = PREFIX + "organise-papers"
    sel = select_sessions(_options(plan_dir, tmp_path, sessions=["organise-papers"]), plan)
    assert sel.sessions == set(plan.sessions) and sel.missing == {}
    alone = select_sessions(_options(plan_dir, tmp_path, sessions=["organise-papers"],
                                     alone=True), plan)
    assert alone.sessions == {organise}
    assert alone.missing == {organise: [PREFIX + "think-with-image",
                                        PREFIX + "tool-use-reading"]}
    with pytest.raises(UsageError, match="matches no session"):
        select_sessions(_options(plan_dir, tmp_path, sessions=["nope"]), plan)


def test_chains_are_one_per_episode_and_repeat_and_count_what_is_left(plan: Plan) -> None:
    chains, finished = build_chains(plan, set(plan.sessions), 2, set())
    assert [(k, r, len(ss)) for k, r, ss in chains] == [("reading", 0, 3), ("reading", 1, 3)]
    first = chains[0][2][0]
    done = {(first.id, first.fingerprint, 1)}
    chains, finished = build_chains(plan, set(plan.sessions), 2, done)
    assert finished == done  # no service to replay: the finished session stays finished
    assert to_do(chains, finished) == 5
