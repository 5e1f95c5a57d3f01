"""Our τ² rules against τ²'s own code, case by case: action matching (`Action.
compare_with_tool_call`), the communicate test (`CommunicateEvaluator`), stop tokens
(`UserSimulator.is_stop`) and the NL-assertions reply (`NLAssertionsEvaluator`, its `generate`
answered with the reply under test). Runs only with a τ² checkout and a Python that imports it:
`BENCH_TAU2_CHECKOUT=/path/to/tau2-bench BENCH_TAU2_PYTHON=/path/to/python pytest …`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from benchpack.runtime.graders.actions import tau2_match
from benchpack.runtime.graders.communicate import find_tau2
from benchpack.runtime.judges.base import ParseError
from benchpack.runtime.judges.instructed_user import find_stop, parse_tau2_results
from benchpack.runtime.types import ToolRecord
from conftest import TAU2_CHECKOUT as CHECKOUT
from conftest import TAU2_PYTHON as PYTHON
from conftest import needs_tau2

pytestmark = needs_tau2

# run by τ²'s Python: reads cases on stdin, prints τ²'s answers
_PROBE = r'''
import json, sys
from loguru import logger
logger.remove()
from tau2.data_model.tasks import Action
from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
from tau2.evaluator.evaluator_communicate import CommunicateEvaluator
from tau2.user.user_simulator import UserSimulator
import tau2.evaluator.evaluator_nl_assertions as nl

cases = json.load(sys.stdin)
out = {"actions": [], "communicate": [], "stop": [], "nl": []}
for want, got in cases["actions"]:
    a = Action(action_id="a", name="t", arguments=want["args"], compare_args=want["compare"])
    out["actions"].append(a.compare_with_tool_call(ToolCall(id="c", name="t", arguments=got)))
for info, text in cases["communicate"]:
    checks = CommunicateEvaluator.evaluate_communicate_info(
        [AssistantMessage(role="assistant", content=text)], [info])
    out["communicate"].append(checks[0].met)
for text in cases["stop"]:
    out["stop"].append(UserSimulator.is_stop(UserMessage(role="user", content=text)))
for reply in cases["nl"]:
    nl.generate = lambda **kw: AssistantMessage(role="assistant", content=reply)
    try:
        checks = nl.NLAssertionsEvaluator.evaluate_nl_assertions([], ["x"])
        out["nl"].append(all(c.met for c in checks))
    except Exception:
        out["nl"].append(None)
print(json.dumps(out))
'''

ACTIONS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"args": {"order_id": "W1", "reason": "x"}, "compare": None}, {"order_id": "W1"}),
    ({"args": {"order_id": "W1"}, "compare": None}, {"order_id": "W1", "reason": "x"}),
    ({"args": {"order_id": "W1", "reason": "x"}, "compare": None}, {}),
    ({"args": {"order_id": "W1", "reason": "x"}, "compare": ["order_id"]},
     {"order_id": "W1", "reason": "y"}),
    ({"args": {"order_id": "W1"}, "compare": ["order_id", "reason"]},
     {"order_id": "W1", "reason": "y"}),
    ({"args": {"order_id": "W1"}, "compare": ["order_id", "note"]}, {"order_id": "W1"}),
    ({"args": {"order_id": "W1"}, "compare": []}, {"order_id": "W9"}),
    ({"args": {"n": 3}, "compare": None}, {"n": 3.0}),
    ({"args": {"flag": 1}, "compare": None}, {"flag": True}),
    ({"args": {"n": 3}, "compare": None}, {"n": "3"}),
    ({"args": {"items": ["a", "b"]}, "compare": None}, {"items": ["b", "a"]}),
    ({"args": {"a": {"x": 1, "y": 2}}, "compare": None}, {"a": {"y": 2, "x": 1.0}}),
]
COMMUNICATE = [
    ("W12", "Your order W123 is on its way."),
    ("refund of 1200", "A refund of $1,200 was issued."),
    ("refund of $1200", "A refund of $1,200 was issued."),
    ("Paris, France", "Shipped to Paris, France."),
    ("W100 has been cancelled", "w100 HAS BEEN CANCELLED!"),
    ("ok", "   "),
    ("İstanbul", "Your parcel is in istanbul."),  # lower() of a dotted capital I
    ("ß", "STRASSE"),
]
STOPS = ["Thanks ###STOP### bye", "###TRANSFER### please", "ok ###OUT-OF-SCOPE###",
         "### STOP ###", "stop", "###stop###"]
REPLIES = ['{"results": []}', '{"other": 1}', "Both are met.", '```json\n{"results": []}\n```',
           '{"results": [{"expectedOutcome": "a", "reasoning": "r", "metExpectation": "no"}]}',
           '{"results": [{"expectedOutcome": "a", "reasoning": "r", "metExpectation": 1}]}',
           '{"results": [{"expectedOutcome": "a", "metExpectation": true}]}',
           '{"results": [{"expectedOutcome": "a", "reasoning": "r", "metExpectation": "maybe"}]}',
           '[{"metExpectation": true}]']


def _tau2() -> dict[str, Any]:
    assert CHECKOUT and PYTHON
    env = {**os.environ, "PYTHONPATH": str(Path(CHECKOUT) / "src"),
           "TAU2_DATA_DIR": str(Path(CHECKOUT) / "data")}
    cases = {"actions": ACTIONS, "communicate": COMMUNICATE, "stop": STOPS, "nl": REPLIES}
    done = subprocess.run([PYTHON, "-c", _PROBE], input=json.dumps(cases), env=env,
                          capture_output=True, text=True, timeout=300, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _ours_nl(reply: str) -> bool | None:
    try:
        return all(r["met"] for r in parse_tau2_results(reply))
    except ParseError:
        return None


def test_our_rules_answer_as_tau2s_code() -> None:
    tau2 = _tau2()
    ours = {
        "actions": [tau2_match({"tool": "t", "match": "tau2", **want},
                               ToolRecord("c", "t", got, None, None, 0.0, 0.0))
                    for want, got in ACTIONS],
        "communicate": [find_tau2(info, text) for info, text in COMMUNICATE],
        "stop": [find_stop(text)[1] is not None for text in STOPS],
        "nl": [_ours_nl(r) for r in REPLIES],
    }
    assert ours == tau2


# --------------------------------------------------------------------------- termination

# τ²'s half-duplex Orchestrator with a scripted agent and user on its mock domain: an agent
# turn is a list of responses — "ok" (one valid call), "err" (one failing call), then its text
_ORCHESTRATE = r'''
import json, sys
from loguru import logger
logger.remove()
from tau2.agent.base_agent import HalfDuplexAgent
from tau2.user.user_simulator_base import HalfDuplexUser
from tau2.data_model.message import AssistantMessage, UserMessage, ToolCall, ToolMessage
from tau2.domains.mock.environment import get_environment, get_tasks
from tau2.orchestrator.orchestrator import Orchestrator

class Agent(HalfDuplexAgent):
    def __init__(self, steps):
        super().__init__(tools=[], domain_policy="")
        self.steps, self.i = steps, 0
    def get_init_state(self, message_history=None):
        return None
    def generate_next_message(self, message, state):
        step = self.steps[self.i] if self.i < len(self.steps) else "Anything else?"
        self.i += 1
        if step in ("ok", "err"):
            name = "get_users" if step == "ok" else "no_such_tool"
            return AssistantMessage(role="assistant", content=None, tool_calls=[
                ToolCall(id=f"c{self.i}", name=name, arguments={})]), state
        return AssistantMessage(role="assistant", content=step), state
    def set_seed(self, seed):
        pass

class User(HalfDuplexUser):
    def __init__(self, said):
        super().__init__()
        self.said, self.i = said, 0
    def get_init_state(self, message_history=None):
        return None
    def generate_next_message(self, message, state):
        text = self.said[self.i] if self.i < len(self.said) else "Hm."
        self.i += 1
        return UserMessage(role="user", content=text), state
    def set_seed(self, seed):
        pass

task = get_tasks()[0]
out = []
for case in json.load(sys.stdin):
    steps = [s for turn in case["agent"] for s in turn]
    o = Orchestrator("mock", Agent(steps), User(case["user"]), get_environment(), task,
                     max_steps=case["max_steps"], max_errors=case["max_errors"])
    sim = o.run()
    msgs = sim.messages[1:]  # the greeting
    out.append([sim.termination_reason.value if hasattr(sim.termination_reason, "value")
                else str(sim.termination_reason),
                sum(isinstance(m, UserMessage) for m in msgs),
                sum(isinstance(m, AssistantMessage) and not m.is_tool_call() for m in msgs),
                sum(isinstance(m, ToolMessage) for m in msgs)])
print(json.dumps(out))
'''

AGENT = [["ok", "err", "Your order is cancelled."], ["Anything else?"], ["err", "err", "Hm?"],
         ["err", "ok", "err", "Sorry."]] + [["Anything else?"]] * 20
USER = ["Cancel my order.", "Why?", "Fine.", "And?", "Ok.", "Thanks ###STOP### bye"]
GRID = [(s, e) for s in (3, 4, 5, 7, 8, 9, 12, 13, 14, 15, 16, 20, 21, 22, 24, 25, 26, 30)
        for e in (2, 3, 4, 10)]
"""Step and error limits. Without them the user's stop is step 25: at 25 it loses to the step
limit, at 26 it ends the dialogue."""
_TERM = {"user_stop": "done", "max_steps": "max_messages", "too_many_errors": "max_tool_errors"}


def test_termination_counts_as_tau2s_orchestrator(tmp_path: Path) -> None:
    """Every limit pair of the grid ends our session with τ²'s reason (mapped to our names) and
    the same numbers of user, agent text and tool messages."""
    import duckdb
    import yaml
    from test_instructed_user_tau2 import compile_variant, script

    from benchpack.runtime.runner import RunOptions, run_plan

    assert CHECKOUT and PYTHON
    env = {**os.environ, "PYTHONPATH": str(Path(CHECKOUT) / "src"),
           "TAU2_DATA_DIR": str(Path(CHECKOUT) / "data")}
    cases = [{"agent": AGENT, "user": USER, "max_steps": s, "max_errors": e} for s, e in GRID]
    done = subprocess.run([PYTHON, "-c", _ORCHESTRATE], input=json.dumps(cases), env=env,
                          capture_output=True, text=True, timeout=600, check=True)
    tau2 = json.loads(done.stdout.strip().splitlines()[-1])
    ok = {"name": "orders__get_order", "args": {"order_id": "W100"}}
    bad = {"name": "orders__get_order", "args": {"order_id": "W999"}}
    agent = script(tmp_path, "agent.yaml", {"sessions": {"cancel": [
        {"tool_calls": [ok if s == "ok" else bad for s in turn[:-1]], "say": turn[-1]}
        for turn in AGENT]}})
    user = script(tmp_path, "user.yaml", {"sessions": {"cancel": {
        "opening": USER[0], "turns": USER[1:] + ["Hm."] * 30}}})
    ours = []
    for n, (s, e) in enumerate(GRID):
        tmp = tmp_path / f"g{n}"
        plan = compile_variant(tmp, {"limits": {"max_messages": s, "max_tool_errors": e},
                                     "conversation": {"greeting": "Hi!",
                                                      "stop_tokens": "anywhere",
                                                      "unfinished": "fail"}})
        db = tmp / "b.duckdb"
        run_plan(RunOptions(plan=plan, agent=f"scripted:{agent}", simulator=f"scripted:{user}",
                            db=db, progress=False, run_id="r", cache_dir=tmp / "c",
                            sessions=["cancel"]))
        con = duckdb.connect(str(db), read_only=True)
        term = con.execute("SELECT termination FROM sessions").fetchone()
        rows = con.execute("SELECT role, content, tool_calls FROM messages WHERE turn > 0"
                           ).fetchall()
        con.close()
        assert term is not None
        ours.append([term[0], sum(r == "user" for r, _, _ in rows),
                     sum(r == "assistant" and tc is None for r, _, tc in rows),
                     sum(r == "tool" for r, _, _ in rows)])
    want = [[_TERM[t[0]], *t[1:]] for t in tau2]
    assert yaml.safe_dump(list(zip(GRID, ours, strict=True))) == \
        yaml.safe_dump(list(zip(GRID, want, strict=True)))
