"""`bench run --max-cost USD`: the estimate before a run and the guard during it.

Prices are litellm's bundled price map (`litellm.model_cost`, read offline:
`LITELLM_LOCAL_MODEL_COST_MAP`). A model litellm has no price for is *unpriced*: its calls are
counted and warned about, never priced at $0 silently, and never stop a run (a local model is
usually free; refusing would make `--max-cost` unusable with one).

**The guard** (`Budget`) is a hard bound: before every call that is not answered from the
cache, the call's worst case is reserved — prompt tokens ≤ the UTF-8 bytes of its messages and
tools (a byte-level BPE token covers at least one byte), completion tokens ≤ the request's
`max_tokens` else the model's `max_output_tokens` — and the call is refused when
spent + reserved + worst case would exceed the budget. The reservation becomes the real cost
when the answer arrives. So what a run spends never exceeds `--max-cost`, at the price of
stopping when the budget left is below one call's worst case. Once one call is refused every
later one is, so the run stops promptly and the same way whatever the concurrency.

**The estimate** (`estimate_plan`) is what `bench run` prints and compares with the budget
before starting: per session still to run (resume: finished ones cost 0) and repeat, the
expected calls of each LLM role from the session's limits, and tokens from the session's
prompt size; see `estimate_session`. It is an estimate, not a bound (how long a dialogue
runs is the agent's doing); the guard is the bound.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, field
from typing import Any

from .llm import LLMError, import_litellm, normalize_model

BUDGET_ERROR = "budget: "
"""How a refused call's `llm_calls.error` starts (and the session's error)."""

DEFAULT_MAX_OUTPUT = 16384
"""Completion tokens assumed for a priced model whose maximum output litellm does not list."""
DEFAULT_TURNS = 10
"""Turns assumed for a session whose limits name none (the protocols' own default)."""
DEFAULT_STEPS = 4
"""Agent model calls per turn assumed for the estimate when the limits name no step budget."""
ESTIMATE_COMPLETION_TOKENS = 800
"""Completion tokens per call in the estimate (the guard uses the worst case instead)."""
HISTORY_TOKENS_PER_TURN = 600
"""Prompt growth per turn in the estimate (the history is resent with every call)."""


@dataclass(frozen=True)
class Price:
    input: float
    """USD per prompt token."""
    output: float
    """USD per completion token."""
    max_output: int


_prices: dict[str, Price | None] = {}
_prices_lock = threading.Lock()


def price_of(model: str) -> Price | None:
    """litellm's price of `model` (`litellm:<model>` or a bare name), None when unknown."""
    name = normalize_model(model)
    with _prices_lock:
        if name in _prices:
            return _prices[name]
    litellm = import_litellm()
    try:
        info = litellm.get_model_info(name)
    except Exception:  # litellm raises for models it does not map
        info = {}
    pin, pout = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    price = (Price(float(pin), float(pout), int(info.get("max_output_tokens")
                                                  or DEFAULT_MAX_OUTPUT))
             if isinstance(pin, int | float) and isinstance(pout, int | float) else None)
    with _prices_lock:
        _prices[name] = price
    return price


def worst_case_cost(model: str, messages: list[dict[str, Any]],
                    tools: list[dict[str, Any]] | None, params: dict[str, Any]) -> float | None:
    """The most one call can cost (see the module docstring); None when unpriced."""
    price = price_of(model)
    if price is None:
        return None
    prompt = len(json.dumps([messages, tools or []], ensure_ascii=False).encode())
    limit = params.get("max_completion_tokens") or params.get("max_tokens")
    completion = int(limit) if isinstance(limit, int) and limit > 0 else price.max_output
    return prompt * price.input + completion * price.output


class BudgetExceeded(LLMError):
    """A call refused because it could exceed `--max-cost`."""

    def __init__(self, message: str) -> None:
        super().__init__(BUDGET_ERROR + message, retryable=False, attempts=0)


@dataclass
class Budget:
    """The run's spending guard, shared by every call of the run's one `LLMClient`."""

    limit: float
    spent: float = 0.0
    reserved: float = 0.0
    exhausted: bool = False
    """A call was refused: every later one is too, and no new session starts."""
    paid_calls: int = 0
    unpriced_calls: int = 0
    unpriced_models: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reserve(self, model: str, messages: list[dict[str, Any]],
                tools: list[dict[str, Any]] | None, params: dict[str, Any]) -> float:
        """The amount reserved for this call (0 when unpriced); raises `BudgetExceeded`."""
        return self.reserve_worst(model, worst_case_cost(model, messages, tools, params))

    async def areserve(self, model: str, messages: list[dict[str, Any]],
                       tools: list[dict[str, Any]] | None, params: dict[str, Any]) -> float:
        """`reserve` as the client calls it: a cluster's ledger (`ray_executor`) answers
        from another process."""
        return self.reserve(model, messages, tools, params)

    def reserve_worst(self, model: str, worst: float | None) -> float:
        """`reserve` of a call whose worst case (None: unpriced) is already known."""
        with self._lock:
            if self.exhausted:
                raise BudgetExceeded(f"--max-cost ${self.limit:.4f} reached earlier in this run")
            if worst is None:
                return 0.0
            if self.spent + self.reserved + worst > self.limit:
                self.exhausted = True
                raise BudgetExceeded(
                    f"this {normalize_model(model)} call could cost up to ${worst:.4f}; spent "
                    f"${self.spent:.4f} (+${self.reserved:.4f} in flight) of --max-cost "
                    f"${self.limit:.4f}")
            self.reserved += worst
            return worst

    def settle(self, model: str, reserved: float, cost: float | None, answered: bool) -> None:
        """The call ended: its reservation becomes its real cost (0 when it failed)."""
        with self._lock:
            self.reserved = max(0.0, self.reserved - reserved)
            if not answered:
                return
            self.paid_calls += 1
            if cost is not None:
                self.spent += cost
            elif reserved == 0.0:  # an unpriced model: counted, warned about
                self.unpriced_models.add(normalize_model(model))
                self.unpriced_calls += 1
            else:  # a priced model whose answer litellm could not price: its worst case
                self.spent += reserved


# --------------------------------------------------------------------------- the estimate


@dataclass
class RoleEstimate:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    unpriced_calls: int = 0
    model: str | None = None


@dataclass
class PlanEstimate:
    sessions: int
    roles: dict[str, RoleEstimate]

    @property
    def cost(self) -> float:
        return sum(r.cost for r in self.roles.values())

    @property
    def unpriced_calls(self) -> int:
        return sum(r.unpriced_calls for r in self.roles.values())

    def describe(self) -> str:
        parts = [f"{role} {r.calls:,} calls ${r.cost:.4f}" if not r.unpriced_calls else
                 f"{role} {r.calls:,} calls (unpriced: {r.model})"
                 for role, r in self.roles.items() if r.calls]
        return (f"${self.cost:.4f} for {self.sessions} session run(s)"
                + (f" ({'; '.join(parts)})" if parts else ""))


def estimate_session(session: Any, roles: dict[str, str | None], live_triggers: bool
                     ) -> dict[str, tuple[int, int]]:
    """Expected (calls, prompt tokens per call) per LLM role for one session × repeat.

    Turns T = the session's `max_turns` (else `DEFAULT_TURNS`), agent steps S = its
    `max_steps_per_turn` (else `DEFAULT_STEPS`): agent T×S calls; user simulator T + 1; judges
    one per turn and hidden intent (intent checks), one per checklist item and trigger, plus
    one (graph extraction, wrap-up); planner one per trigger when triggers are live. Prompt
    tokens: the session's plan JSON (its brief, persona, rubrics) / 4 plus the history of a
    half-finished dialogue."""
    limits = session.limits
    turns = limits.max_turns or DEFAULT_TURNS
    steps = limits.max_steps_per_turn or DEFAULT_STEPS
    base = math.ceil(len(session.model_dump_json().encode()) / 4)
    prompt = base + HISTORY_TOKENS_PER_TURN * turns // 2
    intents = len(session.hidden_intents)
    triggers = len(session.triggers)
    calls = {"agent": turns * steps, "simulator": turns + 1,
             "judge": turns * max(1, intents) + len(session.checklist) + triggers + 1,
             "planner": triggers if live_triggers else 0}
    return {role: (n, prompt) for role, n in calls.items() if roles.get(role) and n}


def estimate_plan(sessions: list[Any], repeats_of: dict[str, int], roles: dict[str, str | None],
                  live_triggers: bool) -> PlanEstimate:
    """The run's estimated cost: `sessions` are those still to run, `repeats_of` how many
    repeats of each are to run; `roles` the litellm model of each LLM role (None: no model
    calls, e.g. `rules` or a scripted agent)."""
    out: dict[str, RoleEstimate] = {r: RoleEstimate(model=m) for r, m in roles.items() if m}
    total = 0
    for s in sessions:
        k = repeats_of.get(s.id, 0)
        total += k
        for role, (n, prompt) in estimate_session(s, roles, live_triggers).items():
            e = out[role]
            calls = n * k
            e.calls += calls
            e.prompt_tokens += calls * prompt
            e.completion_tokens += calls * ESTIMATE_COMPLETION_TOKENS
    for e in out.values():
        price = price_of(e.model or "")
        if price is None:
            e.unpriced_calls = e.calls
        else:
            e.cost = e.prompt_tokens * price.input + e.completion_tokens * price.output
    return PlanEstimate(total, out)


def llm_model(uri: str | None) -> str | None:
    """The litellm model a role URI calls, or None (rules, scripted, replay, python…)."""
    if not uri:
        return None
    if uri.startswith("litellm:"):
        return uri[len("litellm:"):]
    return None


def estimate_run(ctx: Any, chains: list[tuple[str, int, list[Any]]],
                 finished: set[tuple[str, str, int]]) -> PlanEstimate:
    """`bench run`'s estimate over the (session, repeat) pairs still to run."""
    todo: dict[str, Any] = {}
    repeats_of: dict[str, int] = {}
    for _, r, ss in chains:
        for s in ss:
            if (s.id, s.fingerprint, r) not in finished:
                todo[s.id] = s
                repeats_of[s.id] = repeats_of.get(s.id, 0) + 1
    agent = llm_model(ctx.options.agent) or getattr(ctx.agent, "model", None)
    roles = {"agent": agent if isinstance(agent, str) else None,
             **{role: llm_model(ctx.roles.uri(role)) for role in ("simulator", "planner",
                                                                   "judge")}}
    return estimate_plan(list(todo.values()), repeats_of, roles,
                         ctx.options.trigger_mode == "live")


def unpriced_note(estimate: PlanEstimate) -> str:
    if not estimate.unpriced_calls:
        return ""
    models = sorted({r.model for r in estimate.roles.values() if r.unpriced_calls and r.model})
    return (f"; {estimate.unpriced_calls:,} estimated calls to models litellm has no price "
            f"for ({', '.join(models)}) are not in it and never stop the run")
