"""`bench import-run tau2 RESULTS.json`: a τ²-bench results file (`tau2 run`'s output: `info`,
`tasks`, `simulations`, the shape of τ²'s `data_model/simulation.py`, monolithic or the
directory form with `simulations/*.json`) → a run in the store whose `bench report pass-k`
gives τ²'s own metrics (`metrics/agent_metrics.py`) on the same file.

Per simulation one `instructed_user` session run (session × repeat = task × trial):

- `score` = τ²'s reward, `passed` = τ²'s success rule (reward within 1e-6 of 1);
- `termination` = τ²'s termination reason, except `user_stop`, which becomes the stop signal
  the user's last message carries (`done`, `transfer`, `out_of_scope`, as a live run says);
- infrastructure errors (`infrastructure_error`) are stored as errors outside the agent
  (`error_kind` infrastructure, with τ²'s error text) and so left out of every figure, as τ²
  leaves them out; `agent_error` is the agent's error (scored, with τ²'s reward); every other
  ending — user-simulator errors, max steps, too many errors, timeouts — is a finished session
  scored with τ²'s reward, because τ² counts them (a live benchpack run would exclude a
  simulator error: these figures are τ²'s, not ours);
- a simulation without a reward (`reward_info` null, not an infrastructure error) keeps score
  NULL and `passed` false: τ²'s average reward skips it and its pass^k counts it as a failure;
- `messages` become the transcript (`messages`, `tool_calls`, `turns`); `agent_cost` and
  `user_cost` with the models become `llm_calls` rows (role agent / simulator, purpose
  `imported`); τ²'s reward breakdown becomes `extra.reward.components` (`instructed_results`);
- the run keeps τ²'s `info` (domain, agent and user implementations, models and their
  arguments, trials, max steps and errors, seed, commit) in `runs.config.tau2`, promises every
  listed task × `num_trials` (`config.planned_sessions`, so the inventory counts what is
  missing), and records its origin as τ²-bench at the file's commit with no differences.

Session ids are those `bench import tau2` gives the domain's tasks (`session_key`; a test
keeps the two equal), so with `--plan` the run joins the imported pack.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from benchpack.specs.origin_label import RUN_CONFIG_KEY as ORIGIN_KEY
from benchpack.specs.release_fields import need
from benchpack.specs.release_ids import safe_id, tau2_session_key

from ..store import SessionRows, Store
from .base import ImportRunError
from .tau2_transcript import Transcript, transcript

SUCCESS_TOLERANCE = 1e-6
"""τ²'s `is_successful`: a reward within this of 1 is a success."""

TERMINATIONS = ("user_stop", "agent_stop", "max_steps", "timeout", "too_many_errors",
                "agent_error", "user_error", "infrastructure_error", "context_window_exceeded",
                "unexpected_error")
"""τ²'s `TerminationReason` values."""

# τ²'s reward basis → the instructed_user component it is (env assertions have none)
COMPONENTS = {"DB": "state", "ACTION": "actions", "COMMUNICATE": "communicate",
              "NL_ASSERTION": "assertions"}


def is_success(reward: float) -> bool:
    return 1 - SUCCESS_TOLERANCE <= reward <= 1 + SUCCESS_TOLERANCE


session_key = tau2_session_key  # the ids `bench import tau2` gave the sessions (sanitised
# task ids: telecom's `[…]…|…` ids joined nothing when this used them raw)


@dataclass
class Tau2ImportSummary:
    run_id: str
    domain: str
    sessions: int = 0
    tasks: int = 0
    terminations: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        ends = ", ".join(f"{k} {v}" for k, v in sorted(self.terminations.items()))
        return (f"run {self.run_id}: τ² {self.domain}, {self.tasks} tasks, {self.sessions} "
                f"simulations ({ends})")


def load_results(path: Path) -> dict[str, Any]:
    """The results as one dict: a monolithic results JSON, or τ²'s directory form (a folder
    or its `results.json`, with one file per simulation in `simulations/`)."""
    meta = path / "results.json" if path.is_dir() else path
    sims_dir = meta.parent / "simulations"
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ImportRunError(f"{meta}: not found (give the results JSON `tau2 run` wrote, or "
                             "its directory)") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ImportRunError(f"{meta}: not a JSON file ({exc})") from None
    if not isinstance(data, dict):
        raise ImportRunError(f"{meta}: a τ² results file is a JSON object with `info`, "
                             "`tasks` and `simulations`")
    if not data.get("simulations") and sims_dir.is_dir():
        sims = []
        for f in sorted(sims_dir.glob("*.json")):
            try:
                sims.append(json.loads(f.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                raise ImportRunError(f"{f}: not a JSON file ({exc})") from None
        data["simulations"] = sims
    return data


def _get(obj: Any, key: str, kind: type | tuple[type, ...], where: str,
         optional: bool = False) -> Any:
    return need(obj, key, kind, where, ImportRunError, "a τ² results file", optional=optional,
                json_path=True)


def _epoch(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


@dataclass
class _Info:
    domain: str
    trials: int
    agent: str
    user_model: str | None
    commit: str
    config: dict[str, Any]


def _info(data: dict[str, Any], src: str) -> _Info:
    info = _get(data, "info", dict, src)
    w = f"{src}.info"
    env = _get(info, "environment_info", dict, w)
    domain = _get(env, "domain_name", str, w + ".environment_info")
    agent = _get(info, "agent_info", dict, w)
    user = _get(info, "user_info", dict, w)
    trials = _get(info, "num_trials", int, w)
    if trials < 1:
        raise ImportRunError(f"{w}.num_trials: must be ≥ 1, found {trials}")
    agent_name = agent.get("llm") or agent.get("implementation") or "unknown agent"
    keep = {"domain": domain, "num_trials": trials, "max_steps": info.get("max_steps"),
            "max_errors": info.get("max_errors"), "seed": info.get("seed"),
            "git_commit": info.get("git_commit"), "timestamp": data.get("timestamp"),
            "agent": {k: agent.get(k) for k in ("implementation", "llm", "llm_args")},
            "user": {k: user.get(k) for k in ("implementation", "llm", "llm_args")}}
    return _Info(domain, trials, str(agent_name), user.get("llm"),
                 str(info.get("git_commit") or "unknown"), keep)


def default_run_id(info: _Info) -> str:
    return f"tau2-{safe_id(info.domain)}-{safe_id(info.agent)}"


def _repeats(sims: list[tuple[str, dict[str, Any]]], src: str
             ) -> tuple[dict[int, int], list[str]]:
    """Simulation index → repeat: τ²'s `trial` when every simulation of the task has a
    distinct one, else the order in the file (and a note saying so)."""
    by_task: dict[str, list[int]] = {}
    for i, (task, _) in enumerate(sims):
        by_task.setdefault(task, []).append(i)
    out: dict[int, int] = {}
    notes = []
    for task, idx in by_task.items():
        trials = [sims[i][1].get("trial") for i in idx]
        if all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in trials) \
                and len(set(trials)) == len(trials):
            out.update({i: int(t) for i, t in zip(idx, trials, strict=True)})  # type: ignore[arg-type]
        else:
            out.update({i: r for r, i in enumerate(idx)})
            notes.append(f"task {task}: trials missing or repeated; repeats numbered "
                         "in file order (τ²'s trial kept in extra.tau2.trial)")
    return out, notes


def _simulations(data: dict[str, Any], src: str
                 ) -> tuple[list[str], list[tuple[str, dict[str, Any]]]]:
    """The file's task ids and its simulations with their task id, checked as τ²'s metrics
    need them (a known task, a known termination reason)."""
    task_ids = [str(_get(t, "id", (str, int), f"{src}.tasks[{i}]"))
                for i, t in enumerate(_get(data, "tasks", list, src))]
    sims: list[tuple[str, dict[str, Any]]] = []
    for i, s in enumerate(_get(data, "simulations", list, src)):
        w = f"{src}.simulations[{i}]"
        if not isinstance(s, dict):
            raise ImportRunError(f"{w}: must be an object")
        task = str(_get(s, "task_id", (str, int), w))
        if task not in task_ids:  # τ²'s own metrics cannot place it either
            raise ImportRunError(f"{w}.task_id: {task!r} is not one of the file's tasks")
        term = _get(s, "termination_reason", str, w)
        if term not in TERMINATIONS:
            raise ImportRunError(f"{w}.termination_reason: {term!r} is not one of τ²'s "
                                 f"({', '.join(TERMINATIONS)})")
        sims.append((task, s))
    return task_ids, sims


def import_run(path: Path, db: Path, run_id: str | None = None, plan_path: Path | None = None,
               progress: Callable[[int], None] | None = None) -> Tau2ImportSummary:
    data = load_results(path)
    src = f"{path.name}: $"  # errors are located by JSON path
    info = _info(data, src)
    task_ids, sims = _simulations(data, src)
    plan = None
    pack = f"tau2-{safe_id(info.domain)}"
    if plan_path is not None:
        from ..planfile import load_plan
        plan = load_plan(plan_path)
        pack = plan.pack.name
    rid = run_id or default_run_id(info)
    summary = Tau2ImportSummary(rid, info.domain, tasks=len({t for t, _ in sims}))
    repeats, notes = _repeats(sims, src)
    summary.notes += notes
    batch = []
    missing_plan = set()
    for i, (task, s) in enumerate(sims):
        sid = session_key(pack, task)
        ps = plan.sessions.get(sid) if plan is not None else None
        if plan is not None and ps is None:
            missing_plan.add(task)
        rows = _session(rid, sid, repeats[i], task, s, info, ps, f"{src}.simulations[{i}]")
        term = str(s["termination_reason"])
        summary.terminations[term] = summary.terminations.get(term, 0) + 1
        batch.append(rows)
        if progress is not None:
            progress(i + 1)
    if missing_plan:
        summary.notes.append(f"{len(missing_plan)} task(s) are not in the plan {plan_path} "
                             f"({', '.join(sorted(missing_plan)[:5])}…): stored without its "
                             "fingerprint")
    unrewarded = sum(1 for _, s in sims if s.get("reward_info") is None
                     and s["termination_reason"] != "infrastructure_error")
    if unrewarded:
        summary.notes.append(f"{unrewarded} simulation(s) have no reward: left out of the "
                             "average reward and counted as failures in pass^k, as τ² does")
    now = datetime.now().timestamp()
    config = {"imported": {"format": "tau2", "source": path.name,
                           "plan": str(plan_path) if plan_path else None},
              "tau2": info.config,
              "planned_sessions": sorted(session_key(pack, t) for t in task_ids),
              ORIGIN_KEY: {"benchmark": "tau2-bench", "version": info.commit,
                           "differences": []}}
    store = Store(db)
    try:
        if store.run_exists(rid):
            raise ImportRunError(f"run `{rid}` is already in {db} (pass --run-id NEW_ID, or "
                                 "use another --db)")
        store.upsert_run({
            "run_id": rid, "created_at": _epoch(data.get("timestamp")) or now,
            "updated_at": now, "plan_path": str(plan_path) if plan_path else None,
            "plan_hash": plan.pack.content_hash if plan else None, "pack_name": pack,
            "pack_version": plan.pack.version if plan else None, "benchpack_version": None,
            "agent": info.agent, "simulator": info.user_model, "judge": "imported",
            "repeats": info.trials, "config": config, "status": "finished"})
        store.write_batch(batch)
    finally:
        store.close()
    summary.sessions = len(batch)
    return summary


def _reward(s: dict[str, Any]) -> tuple[float | None, dict[str, Any] | None]:
    ri = s.get("reward_info")
    if not isinstance(ri, dict):
        return None, None
    r = ri.get("reward")
    reward = float(r) if isinstance(r, int | float) and not isinstance(r, bool) else None
    raw = ri.get("reward_breakdown")
    breakdown: dict[str, Any] = raw if isinstance(raw, dict) else {}
    comps = {COMPONENTS[k]: v for k, v in breakdown.items() if k in COMPONENTS}
    basis = [COMPONENTS[b] for b in ri.get("reward_basis") or [] if b in COMPONENTS]
    return reward, {"basis": basis, "components": comps, "score": reward,
                    "passed": reward is not None and is_success(reward)}


def _session(rid: str, sid: str, repeat: int, task: str, s: dict[str, Any], info: _Info,
             ps: Any, where: str) -> SessionRows:
    prefix = (rid, sid, repeat)
    term = str(s["termination_reason"])
    tr: Transcript = transcript(s.get("messages") or [], prefix, where)
    reward, reward_extra = _reward(s)
    infra = term == "infrastructure_error"
    termination = (tr.stop_signal or "done") if term == "user_stop" else term
    raw_info = s.get("info")
    err: dict[str, Any] = raw_info if isinstance(raw_info, dict) else {}
    status, error, kind = "finished", None, None
    if infra:
        status, kind = "error", "infrastructure"
        error = str(err.get("error") or "infrastructure_error (τ²)")
        reward, reward_extra = None, None
    elif term == "agent_error":
        status, kind, error = "error", "agent", "agent_error (τ²)"
    passed = None if infra else (reward is not None and is_success(reward))
    agent_cost, user_cost = s.get("agent_cost"), s.get("user_cost")
    calls = []
    for seq, (role, model, cost, usage) in enumerate((
            ("agent", info.agent, agent_cost, tr.agent_usage),
            ("simulator", info.user_model, user_cost, tr.user_usage))):
        calls.append((*prefix, seq, role, "imported", model, None, usage[0], usage[1],
                      float(cost) if isinstance(cost, int | float) else None, None, None, None,
                      usage[2], None, None))
    known = [c for c in (agent_cost, user_cost) if isinstance(c, int | float)]
    extra: dict[str, Any] = {
        "imported": {"format": "tau2", "simulation_id": s.get("id")},
        "tau2": {"task_id": task, "trial": s.get("trial"), "seed": s.get("seed"),
                 "termination_reason": term, "agent_cost": agent_cost,
                 "user_cost": user_cost, "reward_info": s.get("reward_info"),
                 **({"info": err} if err else {})},
        "stop_signal": tr.stop_signal}
    if reward_extra is not None:
        extra["reward"] = reward_extra
    session = {
        "run_id": rid, "session_id": sid, "repeat": repeat,
        "fingerprint": ps.fingerprint if ps is not None else None,
        "episode": ps.episode if ps is not None else f"task-{task}",
        "name": ps.name if ps is not None else task, "protocol": "instructed_user",
        "persona": ps.persona if ps is not None else None,
        "domain": info.domain, "language": None, "agent": info.agent,
        "status": status, "termination": termination, "error": error, "error_kind": kind,
        "turns": len(tr.turns), "user_turns": tr.user_turns,
        "assistant_turns": tr.assistant_turns, "tool_calls": len(tr.tool_calls),
        "score": reward, "passed": passed, "judge_errors": 0, "grader_errors": 0,
        "prompt_tokens": tr.agent_usage[0] + tr.user_usage[0],
        "completion_tokens": tr.agent_usage[1] + tr.user_usage[1],
        "cost": sum(known) if len(known) == 2 else None,
        "started_at": _epoch(s.get("start_time")), "finished_at": _epoch(s.get("end_time")),
        "duration_s": s.get("duration") if isinstance(s.get("duration"), int | float) else None,
        "extra": extra}
    return SessionRows(rid, sid, repeat, session, {
        "messages": tr.messages, "tool_calls": tr.tool_calls, "turns": tr.turns,
        "llm_calls": calls})


__all__ = ["SUCCESS_TOLERANCE", "TERMINATIONS", "Tau2ImportSummary", "default_run_id",
           "import_run", "is_success", "load_results", "session_key"]
