"""The driver's solo-mode part (issue 24): what τ²'s solo agent is shown, read from τ²'s own
objects. Loaded by `driver.py` from its own folder and run by τ²'s Python; it imports nothing
of benchpack.

`texts(driver, domain)` builds the agent τ²'s runner builds for `llm_agent_solo`: a solo-mode
environment, the agent's tools then the user's (`build_agent`), an `LLMSoloAgent` for a task
whose ticket is a marker. Its system prompt is returned split around the marker, so an import
can put any task's ticket where τ² puts it; the tools are those the agent offers its model, its
ending tool (`done`) last.
"""

from __future__ import annotations

import contextlib
from typing import Any

MARK_TICKET = "@@BENCHPACK_TICKET@@"


def texts(driver: Any, domain: str) -> dict[str, Any]:
    from tau2.agent.llm_agent import LLMSoloAgent

    env = driver.registry().get_env_constructor(domain)(solo_mode=True)
    tools = list(env.get_tools())
    # as τ²'s build_agent: a domain without user tools offers the agent's alone
    with contextlib.suppress(Exception):
        tools += list(env.get_user_tools() or [])
    task = next((t for t in driver.domain_tasks(domain).values()
                 if t.ticket and LLMSoloAgent.check_valid_task(t)), None)
    if task is None:
        raise ValueError(f"no task of `{domain}` that τ²'s solo agent accepts")
    agent = LLMSoloAgent(tools=tools, domain_policy=env.get_policy(),
                         task=task.model_copy(update={"ticket": MARK_TICKET}),
                         llm="benchpack-extract")
    prompt = str(agent.system_prompt)
    if prompt.count(MARK_TICKET) != 1:
        raise ValueError("τ²'s solo system prompt does not hold the ticket exactly once")
    at = prompt.index(MARK_TICKET)
    return {"prefix": prompt[:at], "suffix": prompt[at + len(MARK_TICKET):],
            "policy": env.get_policy(), "end_tool": agent.STOP_FUNCTION_NAME,
            "tools": [t.openai_schema for t in agent.tools]}


DUMMY_USER_NOTE = (
    "τ²'s runner cannot build a solo run at this checkout (its `build_user` hands `DummyUser` "
    "keyword arguments its constructor refuses): the check builds the orchestrator as "
    "`build_text_orchestrator` does, with `DummyUser()` made directly")


def simulate(driver: Any, req: dict[str, Any]) -> dict[str, Any]:
    """The driver's `simulate` in solo mode: for each task × kind, τ²'s orchestrator with its
    solo agent (`llm_agent_solo`, model `<prefix>-agent-<kind>` at `api_base`) and its dummy
    user, run and evaluated by `run_simulation` (EvaluationType.ALL)."""
    from tau2.data_model.simulation import TextRunConfig
    from tau2.evaluator import evaluator_nl_assertions as nl
    from tau2.evaluator.evaluator import EvaluationType
    from tau2.orchestrator.orchestrator import Orchestrator
    from tau2.runner.build import build_agent, build_environment, build_text_orchestrator
    from tau2.runner.simulation import run_simulation
    from tau2.user.user_simulator import DummyUser

    domain, prefix = req["domain"], str(req.get("prefix") or "tau2")
    args = {"api_base": req["api_base"], "api_key": "benchpack-scripted",
            "temperature": float(req.get("temperature", 0.0))}
    tasks = driver.domain_tasks(domain)
    out: dict[str, Any] = {}
    for kind in req["kinds"]:
        nl.DEFAULT_LLM_NL_ASSERTIONS = f"openai/{prefix}-judge-{kind}"
        nl.DEFAULT_LLM_NL_ASSERTIONS_ARGS = dict(args)
        for task_id in req["task_ids"]:
            task = tasks[str(task_id)]
            config = TextRunConfig(domain=domain, agent="llm_agent_solo", user="dummy_user",
                                   llm_agent=f"openai/{prefix}-agent-{kind}",
                                   llm_args_agent=dict(args), max_steps=int(req["max_steps"]),
                                   max_errors=int(req["max_errors"]))
            note = None
            try:
                try:
                    orchestrator = build_text_orchestrator(config, task, seed=req.get("seed"))
                except TypeError as exc:
                    if "DummyUser" not in str(exc):
                        raise
                    note = DUMMY_USER_NOTE
                    env = build_environment(domain, solo_mode=True)
                    agent = build_agent(config.effective_agent, env, llm=config.llm_agent,
                                        llm_args=config.llm_args_agent, task=task,
                                        solo_mode=True)
                    orchestrator = Orchestrator(
                        domain=domain, agent=agent, user=DummyUser(), environment=env,
                        task=task, max_steps=config.effective_max_steps,
                        max_errors=config.max_errors, seed=req.get("seed"), solo_mode=True,
                        validate_communication=config.enforce_communication_protocol,
                        timeout=config.timeout)
                sim = run_simulation(orchestrator, evaluation_type=EvaluationType.ALL)
            except Exception as exc:  # τ²'s agent or evaluator raised: that run's result
                out[f"{task_id}/{kind}"] = {
                    "termination": "crashed", "reward": None, "breakdown": {}, "note": note,
                    "error": " ".join(f"{type(exc).__name__}: {exc}".split())[:500]}
                continue
            info = sim.reward_info
            out[f"{task_id}/{kind}"] = {
                "termination": getattr(sim.termination_reason, "value",
                                       str(sim.termination_reason)),
                "reward": info.reward if info is not None else None, "note": note,
                "breakdown": {getattr(k, "value", str(k)): v for k, v in
                              (info.reward_breakdown or {}).items()} if info else {}}
    return out
