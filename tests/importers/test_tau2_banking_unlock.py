"""An agent that unlocks a tool the gold never unlocks scores, on every banking_knowledge task,
what τ²'s own evaluator gives the same trajectory: τ² keeps agent unlocks in its toolkit's
memory, outside the database it hashes, and the imported pack leaves their table
(`banking.unlocked_agent_tools`) out of the state check (`environments[].state_ignores`).

The trajectory: the task's initial state, an unlock of `example_agent_tool_0000` (a τ² tool no
task's gold unlocks) in the agent's first turn, then the gold actions of either side in order.
τ²'s side builds it in τ²'s environment (retrieval `no_knowledge`, the task's read-log
allowlist as τ²'s runner derives it) and scores it with `evaluate_simulation` (EvaluationType
ALL; the one task scored by an NL assertion, which needs τ²'s LLM judge, by its database check
alone); ours runs the gold agent with the unlock added and the gold user: the same reward on
96 tasks, the same database verdict on all 97 (our `state` component), 1.0 everywhere.

Needs a τ² checkout (BENCH_TAU2_CHECKOUT) and a Python that imports tau2 (BENCH_TAU2_PYTHON),
and bubblewrap; skipped otherwise. Before the pack left the table out, ours scored 0 on every
task where τ² gives 1."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml
from tau2_helpers import import_domain, run_scores

from conftest import TAU2_CHECKOUT as CHECKOUT
from conftest import TAU2_PYTHON as PYTHON
from conftest import needs_bwrap, needs_tau2, store_rows

pytestmark = [
    needs_tau2,
    needs_bwrap]
EXTRA = "example_agent_tool_0000"

TAU2_SIDE = r'''
import json, sys, uuid
from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
from tau2.data_model.simulation import SimulationRun, TerminationReason
from tau2.domains.banking_knowledge.environment import get_environment, get_tasks
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
from tau2.runner.build import _derive_read_log_allowlist

extra = sys.argv[1]
out = {}
for task in get_tasks():
    kwargs = {"retrieval_variant": "no_knowledge",
              "read_log_allowlist": _derive_read_log_allowlist(task)}
    rewards = {}
    for kind in ("gold", "unlock"):
        env = get_environment(**kwargs)
        st = task.initial_state
        if st:
            env.set_state(st.initialization_data, st.initialization_actions,
                          st.message_history or [])
        calls = [ToolCall(id=f"g{i}", name=a.name, arguments=a.arguments,
                          requestor=a.requestor)
                 for i, a in enumerate(task.evaluation_criteria.actions or [])]
        if kind == "unlock":
            calls.insert(0, ToolCall(id="x", name="unlock_discoverable_agent_tool",
                                     arguments={"agent_tool_name": extra}))
        msgs = [UserMessage(role="user", content="hi")]
        for call in calls:
            result = env.get_response(call)
            who = UserMessage if call.requestor == "user" else AssistantMessage
            msgs += [who(role="user" if who is UserMessage else "assistant",
                         tool_calls=[call]), result]
        said = ["Done.", *(task.evaluation_criteria.communicate_info or [])]
        msgs.append(AssistantMessage(role="assistant", content=" ".join(said)))
        sim = SimulationRun(id=str(uuid.uuid4()), task_id=task.id, start_time="", end_time="",
                            duration=0.0, termination_reason=TerminationReason.USER_STOP,
                            messages=msgs)
        # a task scored by NL assertions needs τ²'s LLM judge: its database check alone
        nl = "NL_ASSERTION" in [str(getattr(b, "value", b)) for b in
                                task.evaluation_criteria.reward_basis]
        info = evaluate_simulation(sim, task, EvaluationType.ENV if nl else EvaluationType.ALL,
                                   False, "banking_knowledge", env_kwargs=kwargs,
                                   strict_replay=False)
        rewards[kind] = {"reward": None if nl else info.reward,
                         "db": info.db_check.db_match if info.db_check else None}
    out[task.id] = rewards
print(json.dumps(out))
'''


def _with_unlock(pack: Path) -> Path:
    """The gold agent with `EXTRA` unlocked first in its first turn."""
    script = yaml.safe_load((pack / "demo" / "gold_agent.yaml").read_text(encoding="utf-8"))
    for turns in script["sessions"].values():
        first = turns[0]
        first["tool_calls"] = [{"name": "unlock_discoverable_agent_tool",
                                "args": {"agent_tool_name": EXTRA}},
                               *(first.get("tool_calls") or [])]
    out = pack / "demo" / "unlock_agent.yaml"
    out.write_text(yaml.safe_dump(script, allow_unicode=True, sort_keys=False),
                   encoding="utf-8")
    return out


def test_an_extra_unlock_scores_as_in_tau2(tmp_path: Path) -> None:
    domain = Path(str(CHECKOUT)) / "data" / "tau2" / "domains" / "banking_knowledge"
    theirs = json.loads(subprocess.run(
        [str(PYTHON), "-c", TAU2_SIDE, EXTRA], capture_output=True, text=True, check=True,
        cwd=str(CHECKOUT), timeout=1200,
        env={**os.environ, "TAU2_DATA_DIR": str(Path(str(CHECKOUT)) / "data")},
    ).stdout.strip().splitlines()[-1])
    pack = import_domain(tmp_path, domain)
    assert "state_ignores: [banking.unlocked_agent_tools]" in (
        pack / "pack.yaml").read_text(encoding="utf-8")
    scores = run_scores(tmp_path, "unlock", f"scripted:{_with_unlock(pack)}",
                        f"scripted:{pack / 'demo' / 'gold_user.yaml'}", max_concurrency=2)
    state = {str(n): bool(s) for n, s in store_rows(
        tmp_path / "unlock.duckdb", "SELECT name, CAST(json_extract(extra, "
        "'$.reward.components.state') AS DOUBLE) = 1 FROM sessions")}
    from benchpack.compiler.importers.tau2 import session_id

    # τ²: the extra unlock changes no reward and no database (its hash never sees it)
    assert all(r["unlock"] == r["gold"] for r in theirs.values()), theirs
    assert len(scores) == len(theirs) == 97
    ours = {tid: {"reward": None if r["unlock"]["reward"] is None else scores[session_id(tid)],
                  "db": state[session_id(tid)]} for tid, r in theirs.items()}
    assert ours == {tid: r["unlock"] for tid, r in theirs.items()}
    assert set(scores.values()) == {1.0}
    # one task is scored by an NL assertion (τ²'s LLM judge): its database check is compared
    assert sum(r["unlock"]["reward"] is None for r in theirs.values()) == 1
