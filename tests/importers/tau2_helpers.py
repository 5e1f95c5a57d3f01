"""Shared by the τ² importer tests (telecom, banking_knowledge, mock): a domain imported and
compiled, a run's scores by session name, and the τ² side of the gated reward checks — source
run by τ²'s own Python, which builds a task's trajectory (the gold actions of either side, or
none) and scores it with τ²'s evaluator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from benchpack.compiler import compile_pack
from benchpack.compiler.importers import run_import
from benchpack.runtime.runner import RunOptions, run_plan


def import_domain(tmp: Path, domain: Path) -> Path:
    """`bench import tau2 DOMAIN` into `tmp/pack`, compiled to `tmp/plan`."""
    pack = tmp / "pack"
    run_import("tau2", domain, pack)
    result = compile_pack(pack, tmp / "plan", use_cache=False)
    assert result.ok, [d.format() for d in result.diagnostics]
    return pack


def run_scores(tmp: Path, name: str, agent: str, simulator: str,
               **options: Any) -> dict[str, float]:
    """Session name → score of a run of `tmp/plan` with the rules judge."""
    db = tmp / f"{name}.duckdb"
    run_plan(RunOptions(plan=tmp / "plan", agent=agent, judge="rules", simulator=simulator,
                        db=db, run_id=name, progress=False, cache_dir=tmp / "c",
                        allow_python=True, **options))
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {str(n): float(s) for n, s in
                con.execute("SELECT name, score FROM sessions").fetchall()}
    finally:
        con.close()


TAU2_TRAJECTORY = r'''
import json, sys, uuid
from tau2.evaluator.evaluator import evaluate_simulation, EvaluationType
from tau2.data_model.simulation import SimulationRun, TerminationReason
from tau2.data_model.message import AssistantMessage, UserMessage, ToolCall


def trajectory(task, gold):
    env = get_environment()
    st = task.initial_state
    if st:
        env.set_state(st.initialization_data, st.initialization_actions,
                      st.message_history or [])
    msgs = [UserMessage(role="user", content="hi")]
    for i, a in enumerate(task.evaluation_criteria.actions or [] if gold else []):
        call = ToolCall(id=f"g{i}", name=a.name, arguments=a.arguments, requestor=a.requestor)
        result = env.get_response(call)
        kind = UserMessage if a.requestor == "user" else AssistantMessage
        msgs += [kind(role=kind.__name__[:-7].lower(), tool_calls=[call]), result]
    said = ["Done.", *(task.evaluation_criteria.communicate_info or [] if gold else [])]
    return msgs + [AssistantMessage(role="assistant", content=" ".join(said))]


def simulation(task, messages):
    return SimulationRun(id=str(uuid.uuid4()), task_id=task.id, start_time="", end_time="",
                         duration=0.0, termination_reason=TerminationReason.USER_STOP,
                         messages=messages)
'''
"""τ²-side source: `trajectory(task, gold)` and `simulation(task, messages)`; the including
script imports its domain's `get_environment` first."""
