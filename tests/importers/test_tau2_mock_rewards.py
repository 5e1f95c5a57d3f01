"""Issue 24: every mock task benchpack imports scores, for the gold and the do-nothing agent,
what τ²'s own evaluator gives the same trajectories (its `evaluate_simulation`, EvaluationType
ALL, on the task's initial state and message history, then the gold actions — the user's own
with `requestor: user` — and a final message with the communicate strings).

Needs a τ² checkout (BENCH_TAU2_CHECKOUT, its mock domain with user_db.json) and a Python that
imports tau2 (BENCH_TAU2_PYTHON); skipped otherwise. Measured on τ²'s current mock domain:
gold 1.0 on 7 of the 9 imported tasks, 0.0 on `update_task_with_history_and_env_assertions`
(no gold actions: nothing to replay reaches its assertion) and `update_task_with_user_tools`
(its gold leaves the notification unread, its assertion wants it read: no trajectory scores 1
in τ² either); the do-nothing agent 0.0 on all 9."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import duckdb
from tau2_helpers import TAU2_TRAJECTORY

from benchpack.compiler import compile_pack
from benchpack.compiler.importers import import_pack, run_import
from benchpack.runtime.runner import RunOptions, run_plan
from conftest import TAU2_CHECKOUT as CHECKOUT
from conftest import TAU2_PYTHON as PYTHON
from conftest import needs_bwrap, needs_tau2

pytestmark = [
    needs_tau2,
    needs_bwrap]

TAU2_SIDE = TAU2_TRAJECTORY + r'''
from tau2.domains.mock.environment import get_environment, get_tasks

out = {}
for task in get_tasks():
    for gold in (True, False):
        history = list((task.initial_state.message_history if task.initial_state else None)
                       or [])
        sim = simulation(task, history + trajectory(task, gold))
        try:
            reward = evaluate_simulation(sim, task, EvaluationType.ALL, False, "mock").reward
        except Exception as exc:  # τ²'s assertion helpers raise for a missing row
            reward = f"error: {type(exc).__name__}"
        out.setdefault(task.id, {})["gold" if gold else "nothing"] = reward
print(json.dumps(out))
'''


def _ours(tmp: Path) -> dict[str, dict[str, object]]:
    pack = tmp / "pack"
    run_import("tau2", Path(str(CHECKOUT)) / "data" / "tau2" / "domains" / "mock", pack)
    assert compile_pack(pack, tmp / "plan", use_cache=False).ok
    done = tmp / "done.yaml"
    done.write_text("default:\n" + "  - say: Done.\n" * 3, encoding="utf-8")
    user = pack / "demo" / "gold_user.yaml"
    out: dict[str, dict[str, object]] = {}
    for kind, agent in (("gold", pack / "demo" / "gold_agent.yaml"), ("nothing", done)):
        db = tmp / f"{kind}.duckdb"
        run_plan(RunOptions(plan=tmp / "plan", agent=f"scripted:{agent}", judge="rules",
                            simulator=f"scripted:{user}" if user.is_file() else "rules",
                            db=db, run_id="r", progress=False, cache_dir=tmp / "c",
                            allow_python=True))
        con = duckdb.connect(str(db), read_only=True)
        for name, score in con.execute("SELECT name, score FROM sessions").fetchall():
            out.setdefault(str(name), {})[kind] = score
        con.close()
    return out


def test_mock_rewards_equal_tau2s_own(tmp_path: Path) -> None:
    theirs = json.loads(subprocess.run(
        [str(PYTHON), "-c", TAU2_SIDE], capture_output=True, text=True, check=True,
        cwd=str(CHECKOUT), timeout=300).stdout.strip().splitlines()[-1])
    ours = _ours(tmp_path)
    # not imported: τ² scores it 1 whatever happens (no gold actions, DB and COMMUNICATE
    # with nothing to communicate)
    assert set(theirs) - set(ours) == {"create_task_1_nl_eval"}
    assert theirs["create_task_1_nl_eval"] == {"gold": 1.0, "nothing": 1.0}
    # τ²'s helper raises for the task the agent never created (its evaluation fails); ours
    # says the assertion does not hold
    assert theirs["create_task_1_with_env_assertions"]["nothing"] == "error: ValueError"
    theirs["create_task_1_with_env_assertions"]["nothing"] = 0.0
    assert ours == {k: v for k, v in theirs.items() if k in ours}
    assert sorted(k for k, v in ours.items() if v["gold"] != 1.0) == [
        "update_task_with_history_and_env_assertions", "update_task_with_user_tools"]
    assert all(v["nothing"] == 0.0 for v in ours.values())


# --------------------------------------------------------------------------- the user's tools


USER_CALLS = [
    {"name": "check_notifications", "arguments": {}},
    {"name": "dismiss_notification", "arguments": {"notification_id": "notif_1"}},
    {"name": "check_notifications", "arguments": {}},
    {"name": "dismiss_notification", "arguments": {"notification_id": "notif_9"}},
    {"name": "dismiss_notification", "arguments": {"notification_id": 7}},
    {"name": "dismiss_notification", "arguments": {}},
]


def test_mock_user_tools_answer_as_tau2s(tmp_path: Path) -> None:
    """Our `mock_user.py` against τ²'s `MockUserTools`, call by call, through benchpack's real
    tool path (the user's toolbox of an imported --tau2 pack): the same text, the same error
    flag, the same final inbox."""
    import asyncio

    from benchpack.runtime.env.environment import EpisodeEnvironment
    from benchpack.runtime.env.toolbox import ToolBox, render_result
    from benchpack.runtime.planfile import load_plan
    from benchpack.runtime.tau2bench.client import Tau2Driver

    domain = Path(str(CHECKOUT)) / "data" / "tau2" / "domains" / "mock"
    with Tau2Driver(Path(str(CHECKOUT)), PYTHON) as driver:
        extract = driver.extract("mock")
        theirs = driver.apply("mock", [{**c, "requestor": "user"} for c in USER_CALLS],
                              track="none")
    import_pack("tau2", domain, tmp_path / "pack", tau2=extract)
    assert compile_pack(tmp_path / "pack", tmp_path / "plan", use_cache=False).ok
    plan = load_plan(tmp_path / "plan")
    session = next(iter(plan.sessions.values()))
    specs = json.loads((tmp_path / "pack" / "tools" / "mock_user.specs.json").read_text())
    assert sorted(specs) == sorted(t["name"] for t in extract["user_tools"])

    async def ours() -> tuple[list[tuple[str, bool]], list[dict[str, object]]]:
        env = EpisodeEnvironment.create(plan, session.environment, tmp_path / "ws")
        box = ToolBox(plan, session, env, allow_python=True,
                      tools=list(plan.environments[session.environment].user_tools),
                      side="user")
        out = []
        try:
            for c in USER_CALLS:
                record = await box.call(c["name"], dict(c["arguments"]))
                out.append((render_result(record), record.error is not None))
        finally:
            await env.aclose()
        return out, env.services["mock_user"].rows("notifications")

    got, inbox = asyncio.run(ours())
    assert got == [(c["content"], c["error"]) for c in theirs["calls"]]
    assert [n["status"] for n in inbox] == ["read"]


def test_mock_dialogues_equal_tau2s_own_runner() -> None:
    """τ²'s runner and benchpack's on mock tasks with a prior conversation, user tools and env
    assertions: the same endings, rewards and requests (the user simulator offered its tools
    as τ²'s is); the one declared difference is τ²'s assertion helper raising."""
    from click.testing import CliRunner

    from benchpack.cli.main import cli
    from benchpack.runtime.tau2bench.dialogues import ASSERTION_RAISES

    tasks = ("update_task_with_message_history,update_task_with_user_tools,"
             "create_task_1_with_env_assertions")
    result = CliRunner().invoke(cli, [
        "parity", "tau2-dialogues", "--tau2", str(CHECKOUT), "--tau2-python", str(PYTHON),
        "--domain", "mock", "--tasks", tasks, "--kinds", "gold,nothing", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{"):])
    assert report["mismatches"] == []
    assert report["declared"] == {ASSERTION_RAISES: 1}
    assert len(report["outcomes"]) == 6 and report["requests"]["user"] >= 6
