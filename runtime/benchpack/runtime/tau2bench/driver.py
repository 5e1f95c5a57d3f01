"""benchpack's driver of a τ²-bench checkout: run with τ²'s own Python, never imported.

    PYTHON driver.py --checkout CHECKOUT

It puts `CHECKOUT/src` first on `sys.path` and `TAU2_DATA_DIR=CHECKOUT/data`, silences τ²'s
logs (loguru) and anything τ² prints (its stdout goes to stderr), and then speaks JSON lines:
first `{"ready": {...versions...}}` (or `{"fatal": "..."}`), then one answer per request
`{"id", "cmd", ...}` → `{"id", "result"}` or `{"id", "error": "one line"}`.

Commands (what τ²'s own code does; nothing here re-implements τ²):
- `hello`: versions of Python, pydantic and the checkout.
- `extract {domain}`: the agent's tool definitions (`Tool.openai_schema`, in τ²'s order), each
  tool's type and `mutates_state`, the policy, the agent system prompt of `LLMAgent`, the first
  agent message, the user simulator's system prompt split around each task's scenario, the
  NL-assertion judge's prompt (its `generate` answered here with markers), the database and
  user database (`model_dump()`), the task splits.
- `apply {domain, calls, task_id?, track?}`: a fresh environment (set up as τ²'s evaluator sets
  up a task's initial state when `task_id` is given), each call through
  `Environment.get_response` (what the agent reads: content and error flag), the rows each
  state-changing call changed, and the rows changed in all.
- `evaluate {domain, task_id, messages, termination_reason, nl_verdicts?}`: τ²'s
  `evaluate_simulation` (EvaluationType.ALL) on the given messages; the NL-assertion judge is
  answered from `nl_verdicts`, and no model is ever called (every `generate` is replaced).
- `simulate {domain, task_ids, kinds, api_base, max_steps, max_errors, seed?, prefix?, solo?}`:
  τ²'s own runner end to end, every model it calls (agent, user simulator, NL judge) being the
  scripted endpoint benchpack serves on 127.0.0.1 at `api_base` (the dialogue parity check);
  with `solo`, τ²'s solo agent (`llm_agent_solo`) and its dummy user (`driver_solo.py`).
- `extract {…, solo: true}` adds `solo`: τ²'s solo agent's system prompt split around the
  ticket, its tools and its ending tool (`driver_solo.py`); banking_knowledge's adds
  `deposit_scans`, what τ²'s tool shows of each ATM deposit a task starts with (`driver_banking.py`).

It imports nothing of benchpack: it is our code run by someone else's interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from typing import Any

MODEL_GUARD = "benchpack's τ² driver never calls a model"
MARK_USER = "@@BENCHPACK_USER_MESSAGE@@"
MARK_AGENT = "@@BENCHPACK_AGENT_MESSAGE@@"
MARK_ASSERTIONS = ["@@BENCHPACK_ASSERTION_1@@", "@@BENCHPACK_ASSERTION_2@@"]
BANKING = "banking_knowledge"


class Driver:
    def __init__(self, checkout: str) -> None:
        self.checkout = checkout
        self.envs: dict[str, Any] = {}
        """Per domain: (database class, pristine dump, user database class, its dump)."""
        self.pristine: dict[str, Any] = {}
        """Per domain: `_dumps` of a fresh environment."""
        self.tasks: dict[str, dict[str, Any]] = {}
        self.class_models: dict[Any, dict[str, Any]] = {}
        """Per toolkit class, the models it held as a class attribute at first load."""

    # ------------------------------------------------------------------ τ² objects

    def registry(self) -> Any:
        from tau2.registry import registry
        return registry

    def new_env(self, domain: str, task: Any = None, retrieval: str | None = None) -> Any:
        """A fresh environment whose databases equal the released ones (built from a cached
        dump: loading db.json again for every sequence costs more). banking_knowledge's is
        built as τ²'s runner builds it (`_build_env_kwargs`): a retrieval variant (default
        `no_knowledge`, the one needing no model) and, for a task, its read-log allowlist."""
        import inspect
        constructor = self.registry().get_env_constructor(domain)
        extra: dict[str, Any] = {}
        if domain == BANKING:
            extra["retrieval_variant"] = retrieval or "no_knowledge"
            if task is not None:  # the runner's rule (its helper is private): gold reads
                gold = (task.evaluation_criteria.actions or []) if task.evaluation_criteria \
                    else []
                extra.update(task=task, read_log_allowlist={
                    (a.arguments or {}).get("agent_tool_name") for a in gold
                    if a.name == "call_discoverable_agent_tool"} - {None, ""})
        if domain not in self.envs:
            env = constructor(**extra)
            self._reset_class_models(env)
            tools, user = env.tools, env.user_tools
            self.envs[domain] = (
                type(tools.db) if tools is not None and tools.db is not None else None,
                json.dumps(tools.db.model_dump(), default=str) if tools and tools.db else None,
                type(user.db) if user is not None and user.db is not None else None,
                json.dumps(user.db.model_dump(), default=str) if user and user.db else None)
            return env
        db_cls, dump, user_cls, user_dump = self.envs[domain]
        kwargs: dict[str, Any] = dict(extra)
        takes = inspect.signature(constructor).parameters
        if db_cls is not None:
            kwargs["db"] = db_cls.model_validate_json(dump)
        if user_cls is not None and ("user_db" in takes or any(  # banking's user shares db
                p.kind is p.VAR_KEYWORD for p in takes.values())):
            kwargs["user_db"] = user_cls.model_validate_json(user_dump)
        try:
            env = constructor(**kwargs)
        except TypeError:  # a domain whose constructor takes no databases
            env = constructor(**extra)
        self._reset_class_models(env)
        return env

    def _reset_class_models(self, env: Any) -> None:
        """Models a toolkit class holds (not its instances: telecom's default VPN details,
        which a task's set-up degrades in place) back as they were when the domain was first
        loaded, so every sequence starts as in a fresh process."""
        import copy

        from pydantic import BaseModel
        for kit in (env.tools, env.user_tools):
            if kit is None:
                continue
            cls = type(kit)
            saved = self.class_models.setdefault(cls, {
                k: copy.deepcopy(v) for k, v in vars(cls).items() if isinstance(v, BaseModel)})
            for k, v in saved.items():
                setattr(cls, k, copy.deepcopy(v))

    def domain_tasks(self, domain: str) -> dict[str, Any]:
        if domain not in self.tasks:
            loader = self.registry().get_tasks_loader(domain)
            try:
                tasks = loader(None)  # every task, whatever the splits
            except TypeError:
                tasks = loader()
            except FileNotFoundError:  # telecom's tasks.json is left out of some copies
                tasks = self._small_tasks(domain)
            self.tasks[domain] = {str(t.id): t for t in tasks}
        return self.tasks[domain]

    def _small_tasks(self, domain: str) -> list[Any]:
        """The domain's tasks_small.json, loaded by the domain's own `load_tasks`."""
        import importlib
        from pathlib import Path

        from tau2.utils.utils import DATA_DIR
        module = importlib.import_module(f"tau2.domains.{domain}.environment")
        path = Path(DATA_DIR) / "tau2" / "domains" / domain / "tasks_small.json"
        return list(module.load_tasks(str(path)))

    # ------------------------------------------------------------------ commands

    def hello(self, _req: dict[str, Any]) -> dict[str, Any]:
        import pydantic
        return {"python": sys.version.split()[0], "pydantic": pydantic.VERSION,
                "checkout": self.checkout}

    def extract(self, req: dict[str, Any]) -> dict[str, Any]:
        domain = req["domain"]
        env = self.new_env(domain, retrieval=req.get("retrieval"))
        registry = self.registry()
        tools = env.get_tools()
        out: dict[str, Any] = {"domain": domain, **self.hello(req)}
        out["tools"] = [_tool(env.tools, t) for t in tools]
        out["user_tools"] = [_tool(env.user_tools, t) for t in env.get_user_tools()] \
            if env.user_tools is not None else []
        out["policy"] = env.get_policy()
        from tau2.agent.llm_agent import LLMAgent
        out["agent_system_prompt"] = LLMAgent(tools=tools, domain_policy=env.get_policy(),
                                              llm="benchpack-extract").system_prompt
        from tau2.orchestrator.orchestrator import DEFAULT_FIRST_AGENT_MESSAGE
        out["first_agent_message"] = DEFAULT_FIRST_AGENT_MESSAGE.content
        out.update(self._user_prompts(domain, env))
        out["nl_judge"] = _nl_judge_prompt()
        from tau2 import config
        out["defaults"] = {k: getattr(config, k) for k in dir(config)
                           if k.startswith("DEFAULT_") and _jsonable(getattr(config, k))}
        out["db"] = _keyed_db(env.tools.db.model_dump()) if env.tools is not None and \
            env.tools.db is not None else None
        out["user_db"] = _keyed_db(env.user_tools.db.model_dump()) if env.user_tools is not \
            None and env.user_tools.db is not None else None
        splits = registry.get_task_splits_loader(domain)
        out["splits"] = splits() if splits is not None else None
        if domain == BANKING:
            out.update(_banking_texts(env, req.get("variants") or []))
            # which ATM deposits τ²'s tool would show scans of (driver_banking.py)
            out["deposit_scans"] = _sibling("driver_banking").deposit_scans(self)
        if req.get("solo"):  # τ²'s solo agent's system prompt and tools (driver_solo.py)
            out["solo"] = _sibling("driver_solo").texts(self, domain)
        return out

    def _user_prompts(self, domain: str, env: Any) -> dict[str, Any]:
        """The user simulator's system prompt as `build_user` makes it: one variant per
        distinct text around the scenario (the guidelines differ when the user has tools)."""
        from tau2.user.user_simulator import UserSimulator
        variants: list[dict[str, str]] = []
        tasks = []
        for task in self.domain_tasks(domain).values():
            try:
                user_tools = env.get_user_tools(include=task.user_tools) or None
            except Exception:  # as build_user: a domain without user tools
                user_tools = None
            scenario = str(task.user_scenario)
            prompt = UserSimulator(llm="benchpack-extract", instructions=scenario,
                                   tools=user_tools).system_prompt
            at = prompt.rindex(scenario)
            variant = {"prefix": prompt[:at], "suffix": prompt[at + len(scenario):]}
            if variant not in variants:
                variants.append(variant)
            tasks.append({"id": str(task.id), "scenario": scenario,
                          "user_prompt": variants.index(variant),
                          "user_tools": [t.name for t in user_tools or []]})
        return {"user_prompts": variants, "tasks": tasks}

    def apply(self, req: dict[str, Any]) -> dict[str, Any]:
        from tau2.data_model.message import ToolCall
        domain = req["domain"]
        task = self.domain_tasks(domain)[str(req["task_id"])] \
            if req.get("task_id") is not None else None
        env = self.new_env(domain, task, req.get("retrieval"))
        if domain not in self.pristine:
            self.pristine[domain] = _dumps(env)
        start = pristine = self.pristine[domain]
        state = task.initial_state if task is not None else None
        if state is not None:
            env.set_state(initialization_data=state.initialization_data,
                          initialization_actions=state.initialization_actions,
                          message_history=state.message_history or [])
            start = _dumps(env)
        track = req.get("track", "writes")
        before = _rows(env)
        results = []
        for i, call in enumerate(req["calls"]):
            requestor = call.get("requestor") or "assistant"
            msg = env.get_response(ToolCall(id=f"call_{i}", name=call["name"],
                                            arguments=call["arguments"], requestor=requestor))
            item: dict[str, Any] = {"content": msg.content, "error": bool(msg.error)}
            if track == "all" or (track == "writes" and _mutates(env, call["name"], requestor)):
                after = _rows(env)
                item["changes"] = _quick_diff(before, after)
                before = after
            results.append(item)
        final = _dumps(env)
        return {"start": _diff(pristine, start), "calls": results,
                "changes": _diff(start, final)}

    def evaluate(self, req: dict[str, Any]) -> dict[str, Any]:
        from tau2.data_model.message import AssistantMessage
        from tau2.data_model.simulation import SimulationRun, TerminationReason
        from tau2.evaluator import evaluator_nl_assertions
        from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
        domain = req["domain"]
        task = self.domain_tasks(domain)[str(req["task_id"])]
        verdicts = req.get("nl_verdicts")
        _guard_models()

        def judge(*_args: Any, **_kwargs: Any) -> Any:
            wanted = list(task.evaluation_criteria.nl_assertions or [])
            if verdicts is None:
                raise RuntimeError(f"task {task.id} needs NL-assertion verdicts "
                                   f"(nl_verdicts) for {len(wanted)} assertion(s)")
            given = [verdicts.get(a) for a in wanted] if isinstance(verdicts, dict) \
                else list(verdicts)
            if len(given) != len(wanted) or any(not isinstance(v, bool) for v in given):
                raise RuntimeError(f"nl_verdicts must give true/false for each of the "
                                   f"{len(wanted)} assertion(s) of task {task.id}")
            results = [{"expectedOutcome": a, "reasoning": "verdict given to benchpack's "
                        "τ² driver", "metExpectation": v} for a, v in zip(wanted, given, strict=True)]
            return AssistantMessage(role="assistant", content=json.dumps({"results": results}))

        evaluator_nl_assertions.generate = judge
        now = "2000-01-01T00:00:00"
        sim = SimulationRun(id="benchpack", task_id=str(task.id), timestamp=now, start_time=now,
                            end_time=now, duration=0.0,
                            termination_reason=TerminationReason(req["termination_reason"]),
                            messages=req.get("messages") or [])
        reward = evaluate_simulation(simulation=sim, task=task,
                                     evaluation_type=EvaluationType.ALL, solo_mode=False,
                                     domain=domain)
        return dict(reward.model_dump(mode="json"))


    def simulate(self, req: dict[str, Any]) -> dict[str, Any]:
        """τ²'s own runner (`run_single_task`, half-duplex, `EvaluationType.ALL`) on each task
        × kind, its agent, user simulator and NL-assertion judge all pointed at `api_base` (a
        scripted endpoint benchpack serves on 127.0.0.1) as models `<prefix>-agent-<kind>`,
        `-user-`, `-judge-`. Returns each run's ending, reward and reward breakdown."""
        from tau2.data_model.simulation import TextRunConfig
        from tau2.evaluator import evaluator_nl_assertions as nl
        from tau2.evaluator.evaluator import EvaluationType
        from tau2.runner import run_single_task
        _unguard_models()
        if req.get("solo"):  # τ²'s solo agent and its dummy user (driver_solo.py)
            return dict(_sibling("driver_solo").simulate(self, req))
        domain, prefix = req["domain"], str(req.get("prefix") or "tau2")
        args = {"api_base": req["api_base"], "api_key": "benchpack-scripted",
                "temperature": float(req.get("temperature", 0.0))}
        tasks = self.domain_tasks(domain)
        out: dict[str, Any] = {}
        for kind in req["kinds"]:
            # τ²'s judge model is a module constant, not a run option: pointed here for the run
            nl.DEFAULT_LLM_NL_ASSERTIONS = f"openai/{prefix}-judge-{kind}"
            nl.DEFAULT_LLM_NL_ASSERTIONS_ARGS = dict(args)
            for task_id in req["task_ids"]:
                config = TextRunConfig(
                    domain=domain, agent="llm_agent", user="user_simulator",
                    llm_agent=f"openai/{prefix}-agent-{kind}", llm_args_agent=dict(args),
                    llm_user=f"openai/{prefix}-user-{kind}", llm_args_user=dict(args),
                    max_steps=int(req["max_steps"]), max_errors=int(req["max_errors"]),
                    **({"retrieval_config": req.get("retrieval") or "no_knowledge"}
                       if domain == BANKING else {}))
                try:
                    sim = run_single_task(config, tasks[str(task_id)], seed=req.get("seed"),
                                          evaluation_type=EvaluationType.ALL)
                except Exception as exc:  # τ²'s runner or evaluator raised: that run's result
                    out[f"{task_id}/{kind}"] = {
                        "termination": "crashed", "reward": None, "breakdown": {},
                        "error": " ".join(f"{type(exc).__name__}: {exc}".split())[:500]}
                    continue
                info = sim.reward_info
                out[f"{task_id}/{kind}"] = {
                    "termination": getattr(sim.termination_reason, "value",
                                           str(sim.termination_reason)),
                    "reward": info.reward if info is not None else None,
                    "breakdown": {getattr(k, "value", str(k)): v for k, v in
                                  (info.reward_breakdown or {}).items()} if info else {}}
        return out


def _banking_texts(env: Any, variants: list[str]) -> dict[str, Any]:
    """banking_knowledge: what an unlock or a hand-over shows of each discoverable tool (τ²'s
    `parse_discoverable_tool_docstring`), and the agent's system prompt for each retrieval
    variant asked for (`build_policy` in `LLMAgent`'s prompt; `golden_retrieval`'s per task,
    with the task's required documents)."""
    from tau2.agent.llm_agent import LLMAgent
    from tau2.domains.banking_knowledge import retrieval as rv
    from tau2.domains.banking_knowledge.environment import get_knowledge_base
    from tau2.domains.banking_knowledge.tools import parse_discoverable_tool_docstring

    discoverable = {}
    for side, kit in (("agent", env.tools), ("user", env.user_tools)):
        for name, method in kit.get_discoverable_tools().items():
            discoverable[name] = {**parse_discoverable_tool_docstring(method), "side": side,
                                  "mutates_state": bool(kit.tool_mutates_state(name))
                                  if kit.has_tool(name) else None}
    kb = get_knowledge_base() if variants else None
    prompts: dict[str, Any] = {}
    for name in variants:
        variant = rv.resolve_variant(name)

        def prompt(task: Any = None, variant: Any = variant) -> str:
            return str(LLMAgent(tools=[], domain_policy=rv.build_policy(variant, kb, task),
                                llm="benchpack-extract").system_prompt)
        if name == "golden_retrieval":
            from tau2.registry import registry
            prompts[name] = {str(t.id): prompt(t) for t in
                             registry.get_tasks_loader(BANKING)(None)}
        else:
            prompts[name] = prompt()
    return {"discoverable": discoverable, "agent_system_prompts": prompts,
            "knowledge_tools": _knowledge_tools(env) if variants else {},
            # τ²'s documents in the order it loads them (its directory listing, unsorted):
            # what its search breaks ties by, the score-0 fill above all
            "knowledge_order": kb.get_document_ids() if kb is not None else []}


def _knowledge_tools(env: Any) -> dict[str, Any]:
    """banking_knowledge's search tools as its BM25+grep variant offers them, by our operation
    (`search`, `grep`): `{name, description, parameters}` of τ²'s `openai_schema`, and `position`,
    the tool's place in τ²'s list of that variant's tools."""
    from tau2.domains.banking_knowledge.retrieval_toolkits import (
        KnowledgeToolsWithKBSearchAndGrep,
    )

    # the schemas only: no pipeline is built (indexing 698 documents is not needed for them)
    kit = KnowledgeToolsWithKBSearchAndGrep(env.tools.db, None, None)
    tools = kit.get_tools()
    names = list(tools)
    out: dict[str, Any] = {}
    for op, name in (("search", "KB_search"), ("grep", "grep")):
        fn = tools[name].openai_schema["function"]
        out[op] = {"name": fn["name"], "description": fn["description"],
                   "parameters": fn["parameters"], "position": names.index(name)}
    return out


def _sibling(name: str) -> Any:
    """A module beside this file (its folder is kept off `sys.path`, see `main`)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        f"benchpack_tau2_{name}", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                               f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tool(kit: Any, tool: Any) -> dict[str, Any]:
    return {"name": tool.name, "schema": tool.openai_schema,
            "type": getattr(kit.tool_type(tool.name), "value", str(kit.tool_type(tool.name))),
            "mutates_state": bool(kit.tool_mutates_state(tool.name))}


def _nl_judge_prompt() -> dict[str, Any]:
    """The judge's messages for a two-message conversation and two assertions, all markers."""
    from tau2.config import DEFAULT_LLM_NL_ASSERTIONS, DEFAULT_LLM_NL_ASSERTIONS_ARGS
    from tau2.data_model.message import AssistantMessage, UserMessage
    from tau2.evaluator import evaluator_nl_assertions as nl
    seen: dict[str, Any] = {}

    def capture(**kwargs: Any) -> Any:
        seen.update(kwargs)
        return AssistantMessage(role="assistant", content='{"results": []}')

    real = nl.generate
    nl.generate = capture
    try:
        nl.NLAssertionsEvaluator.evaluate_nl_assertions(
            [UserMessage(role="user", content=MARK_USER),
             AssistantMessage(role="assistant", content=MARK_AGENT)], list(MARK_ASSERTIONS))
    finally:
        nl.generate = real
    messages = [{"role": m.role, "content": m.content} for m in seen.get("messages", [])]
    return {"messages": messages, "model": DEFAULT_LLM_NL_ASSERTIONS,
            "args": DEFAULT_LLM_NL_ASSERTIONS_ARGS,
            "markers": {"conversation": f"user: {MARK_USER}\nassistant: {MARK_AGENT}",
                        "assertions": repr(list(MARK_ASSERTIONS)),
                        "user_message": MARK_USER, "agent_message": MARK_AGENT,
                        "assertion_items": list(MARK_ASSERTIONS)}}


_REAL_GENERATE: dict[str, Any] = {}
"""`generate` of each τ² module before `_guard_models` replaced it (`simulate` puts them back:
there the models are benchpack's scripted endpoint on 127.0.0.1)."""


def _guard_models() -> None:
    """Every `generate` τ²'s modules hold raises: the driver must never reach a model."""
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError(MODEL_GUARD)

    for name, module in list(sys.modules.items()):
        if name.startswith("tau2.") and callable(getattr(module, "generate", None)):
            _REAL_GENERATE.setdefault(name, module.generate)
            module.generate = refuse  # type: ignore[attr-defined]


def _unguard_models() -> None:
    for name, real in _REAL_GENERATE.items():
        module = sys.modules.get(name)
        if module is not None:
            module.generate = real  # type: ignore[attr-defined]


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


def _mutates(env: Any, name: str, requestor: str) -> bool:
    kit = env.user_tools if requestor == "user" else env.tools
    try:
        return bool(kit.tool_mutates_state(name))
    except Exception:  # an unknown tool: look anyway
        return True


def _rows(env: Any) -> dict[str, dict[str, Any]]:
    """Per database (`db`, `user_db`) and table, row key → row (model order)."""
    out: dict[str, dict[str, Any]] = {}
    for which, kit in (("db", env.tools), ("user_db", env.user_tools)):
        if kit is None or kit.db is None:
            continue
        for table, rows in _keyed_db(kit.db.model_dump()).items():
            out[f"{which}\0{table}"] = {str(k): r for k, r in rows.items()}
    return out


def _keyed_db(dump: dict[str, Any]) -> dict[str, Any]:
    """A database dump as benchpack's tables, `{table: {key: row}}`: an object of rows as it
    is; a list of rows keyed by each row's first field (telecom's `lines`, `bills`, …); an
    object that is one model (telecom's phone: `device`, `surroundings`) one row keyed `id`,
    its table's name, as benchpack's importer stores it; banking's `{data: {id: record},
    notes}` its records keyed by id, each with the id as `_id` (benchpack's banking importer's
    rows)."""
    out: dict[str, Any] = {}
    for table, value in dump.items():
        if isinstance(value, dict) and isinstance(value.get("data"), dict) and \
                set(value) <= {"data", "notes"}:  # the notes are never changed by a tool
            out[table] = {str(k): {"_id": k, **r} for k, r in value["data"].items()}
        elif isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()):
            out[table] = value
        elif isinstance(value, list) and all(isinstance(r, dict) and r for r in value):
            out[table] = {str(next(iter(r.values()))): r for r in value}
        elif isinstance(value, dict):
            out[table] = {table: {"id": table, **value}}
        else:
            out[table] = {"": value}
    return out


def _quick_diff(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]
                ) -> dict[str, dict[str, dict[str, Any]]]:
    """`_diff` for one call, by Python equality (fast; `0 == 0.0`, so a change of a number's
    type alone shows only in the sequence's exact `changes`)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for where in sorted(set(old) | set(new)):
        a, b = old.get(where, {}), new.get(where, {})
        which, table = where.split("\0", 1)
        for key in [*a, *(k for k in b if k not in a)]:
            if key not in a or key not in b or a[key] != b[key]:
                out.setdefault(which, {}).setdefault(table, {})[key] = b.get(key)
    return out


def _dumps(env: Any) -> dict[str, dict[str, tuple[str, Any]]]:
    """Per database (`db`, `user_db`) and table, row key → (the row's canonical JSON, the row
    in model order). The canonical form is exact: `0` and `0.0` differ, as in τ²'s hash."""
    out: dict[str, dict[str, tuple[str, Any]]] = {}
    for which, kit in (("db", env.tools), ("user_db", env.user_tools)):
        if kit is None or kit.db is None:
            continue
        for table, rows in _keyed_db(kit.db.model_dump()).items():
            for key, row in rows.items():
                out.setdefault(f"{which}\0{table}", {})[str(key)] = (
                    json.dumps(row, sort_keys=True, default=str), row)
    return out


def _diff(old: dict[str, dict[str, tuple[str, Any]]], new: dict[str, dict[str, tuple[str, Any]]]
          ) -> dict[str, dict[str, dict[str, Any]]]:
    """{db: {table: {key: row, or null when deleted}}} for rows that differ."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for where in sorted(set(old) | set(new)):
        a, b = old.get(where, {}), new.get(where, {})
        which, table = where.split("\0", 1)
        for key in [*a, *(k for k in b if k not in a)]:
            if (a[key][0] if key in a else None) != (b[key][0] if key in b else None):
                out.setdefault(which, {}).setdefault(table, {})[key] = \
                    b[key][1] if key in b else None
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkout", required=True)
    args = parser.parse_args()
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever τ² prints goes to stderr, never into the protocol

    def send(obj: dict[str, Any]) -> None:
        proto.write(json.dumps(obj, default=str) + "\n")
        proto.flush()

    checkout = os.path.abspath(args.checkout)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path.insert(0, os.path.join(checkout, "src"))
    os.environ["TAU2_DATA_DIR"] = os.path.join(checkout, "data")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch at import
    try:
        from loguru import logger
        logger.remove()
        import tau2
        import tau2.registry  # the slow import (litellm), done once before `ready`
        where = os.path.dirname(os.path.abspath(tau2.__file__))
        if not where.startswith(os.path.join(checkout, "src")):
            send({"fatal": f"tau2 was imported from {where}, not from the checkout's src/"})
            return 0
    except BaseException as exc:  # reported, whatever it is
        send({"fatal": f"{type(exc).__name__}: {exc}"})
        return 0
    driver = Driver(checkout)
    send({"ready": driver.hello({})})
    commands = {"hello": driver.hello, "extract": driver.extract, "apply": driver.apply,
                "evaluate": driver.evaluate, "simulate": driver.simulate}
    for line in sys.stdin:
        if not line.strip():
            continue
        req: dict[str, Any] = {}
        try:
            req = json.loads(line)
            cmd = commands.get(str(req.get("cmd")))
            if cmd is None:
                raise ValueError(f"unknown command {req.get('cmd')!r}")
            send({"id": req.get("id"), "result": cmd(req)})
        except Exception as exc:  # one line back, the traceback to stderr
            traceback.print_exc(file=sys.stderr)
            text = " ".join(f"{type(exc).__name__}: {exc}".split())
            send({"id": req.get("id"), "error": text[:2000]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
