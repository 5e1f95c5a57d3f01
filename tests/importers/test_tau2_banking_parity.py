"""banking_knowledge in `bench parity tau2` / `tau2-dialogues` and `--tau2` imports (issue 24):
the per-retrieval agent prompt composed as a Jinja policy, τ²'s discoverable-tool descriptions
written over the toolset's, the stand-in calls that unlock or give a discoverable tool before
calling it, τ²'s banking tables keyed as our rows; and (with a τ² checkout: BENCH_TAU2_CHECKOUT,
BENCH_TAU2_PYTHON) the harness against τ²'s own code."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchpack.compiler.importers import ImportError_
from benchpack.compiler.importers import tau2_banking_texts as texts
from benchpack.compiler.render import render
from benchpack.runtime.tau2bench.callgen import Call
from benchpack.runtime.tau2bench.callgen_discoverable import (
    as_templates,
    discoverable_tools,
    expand,
)
from benchpack.runtime.tau2bench.parity import ParityRun, _cut_tables
from conftest import TAU2_CHECKOUT as CHECKOUT
from conftest import TAU2_PYTHON as PYTHON
from conftest import needs_tau2

ROOT = Path(__file__).resolve().parents[2]
NAMES = {"no_knowledge": "none", "full_kb": "full", "golden_retrieval": "golden",
         "bm25": "bm25", "openai_embeddings": None}


def test_the_policy_holds_each_variants_prompt_and_golden_falls_back() -> None:
    extract = {"agent_system_prompts": {"no_knowledge": "NONE {{ not jinja }}",
                                        "full_kb": "FULL ## doc", "bm25": "BM25 {% if x %}"}}
    assert texts.variants(NAMES) == ["no_knowledge", "full_kb", "bm25"]
    template = texts.policy_template(extract, NAMES)
    for ours, want in (("none", "NONE {{ not jinja }}"), ("bm25", "BM25 {% if x %}"),
                       ("full", "FULL ## doc"), ("golden", "NONE {{ not jinja }}"),
                       ("grep", "")):
        assert render(template, {"vars": {"retrieval": ours}}) == want, ours
    with pytest.raises(ImportError_, match="no agent prompt for the retrieval variant `bm25`"):
        texts.policy_template({"agent_system_prompts": {"no_knowledge": "x", "full_kb": "y"}},
                              NAMES)
    with pytest.raises(ImportError_, match="no agent prompt for the retrieval variant `full_kb`"):
        texts.policy_template({"agent_system_prompts": {"no_knowledge": "x", "bm25": "y"}},
                              NAMES)
    with pytest.raises(ImportError_, match="endraw"):
        texts.policy_template({"agent_system_prompts": {"no_knowledge": "{% endraw %}",
                                                        "full_kb": "y", "bm25": "x"}}, NAMES)


def test_taus_descriptions_are_written_over_the_catalog_and_shown_by_an_unlock(
        monkeypatch: pytest.MonkeyPatch) -> None:
    extract = {"discoverable": {
        "tool_a": {"description": "Does A.", "parameters": {
            "x": {"type": "string", "description": "the x", "required": True},
            "y": {"type": "int", "description": "the y", "required": False}}},
        "tool_b": {"description": "Does B.", "parameters": {}}}}
    block = texts.catalog(extract, {"tool_a", "tool_b"})
    assert block == ("CATALOG = {\n    'tool_a': ('Does A.', [('x', 'string', 'the x', True), "
                     "('y', 'int', 'the y', False)]),\n    'tool_b': ('Does B.', []),\n}\n")
    source = "A = 1\nCATALOG = {\n    'old': ('x', []),\n}\n\"\"\"doc\"\"\"\n"
    assert texts.with_catalog(source, block) == "A = 1\n" + block + "\"\"\"doc\"\"\"\n"
    with pytest.raises(ImportError_, match="tool_c"):
        texts.catalog(extract, {"tool_a", "tool_c"})
    with pytest.raises(ImportError_, match="no `CATALOG"):
        texts.with_catalog("A = 1\n", block)
    # the unlock text shows τ²'s required/optional flags (our own catalog has none: required)
    monkeypatch.setitem(sys.modules, "benchpack_tools", SimpleNamespace(State=object))
    from benchpack.compiler.importers.tau2_tools import banking

    catalog = dict(banking.CATALOG)
    try:
        banking.CATALOG["freeze_debit_card_3892"] = ("Freezes.", [
            ("card_id", "string", "the card", True), ("note", "string", "why", False)])
        db = SimpleNamespace(find=lambda *a, **k: [], put=lambda *a, **k: None)
        text = banking.unlock_discoverable_agent_tool(db, "freeze_debit_card_3892")
    finally:
        banking.CATALOG.clear()
        banking.CATALOG.update(catalog)
    assert ("Parameters:\n  - card_id: string (required) - the card\n"
            "  - note: string (optional) - why\n") in text


def test_a_discoverable_tool_is_made_as_a_tool_and_run_as_unlock_then_call() -> None:
    extract = {"discoverable": {
        "freeze_7": {"side": "agent", "mutates_state": True, "parameters": {
            "card_id": {"type": "string", "required": True},
            "days": {"type": "int", "required": False}}},
        "deposit_9": {"side": "user", "mutates_state": None, "parameters": {
            "amount": {"type": "float", "required": True}}}}}
    tools = {t.name: t for t in discoverable_tools(extract)}
    assert tools["discoverable:agent:freeze_7"].parameters == {
        "type": "object", "properties": {"card_id": {"type": "string"},
                                         "days": {"type": "integer"}},
        "required": ["card_id"]}
    assert tools["discoverable:user:deposit_9"].parameters["properties"] == {
        "amount": {"type": "number"}}
    kinds = set()
    for seed in range(60):
        calls = expand(Call("discoverable:agent:freeze_7", {"card_id": "c1"}, "coherent"),
                       random.Random(seed))
        kinds.add(tuple(c.name for c in calls))
        assert calls[-1].arguments["agent_tool_name"] == "freeze_7"
        if calls[-1].arguments["arguments"] != '{"card_id": "c1"}':
            assert calls[-1].arguments["arguments"] == '{"card_id": "c1"'  # broken JSON
    assert kinds == {("unlock_discoverable_agent_tool", "call_discoverable_agent_tool"),
                     ("call_discoverable_agent_tool",)}
    user = expand(Call("discoverable:user:deposit_9", {"amount": 5.0}), random.Random(1))
    assert [(c.name, c.requestor) for c in user][-1] == ("call_discoverable_user_tool", "user")
    assert expand(Call("get_x", {"a": 1}), random.Random(0)) == [Call("get_x", {"a": 1})]
    gold = [Call("call_discoverable_agent_tool", {"agent_tool_name": "freeze_7",
                                                  "arguments": '{"card_id": "c9"}'}),
            Call("call_discoverable_user_tool", {"discoverable_tool_name": "deposit_9",
                                                 "arguments": "not json"}),
            Call("log_verification", {"name": "x"})]
    assert [(c.name, c.arguments) for c in as_templates(gold)] == [
        ("discoverable:agent:freeze_7", {"card_id": "c9"})]


def _driver() -> Any:
    path = ROOT / "runtime" / "benchpack" / "runtime" / "tau2bench" / "driver.py"
    spec = importlib.util.spec_from_file_location("tau2_driver_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_driver_keys_banking_tables_as_our_rows() -> None:
    keyed = _driver()._keyed_db({
        "users": {"data": {"u1": {"name": "A"}, "u2": {"name": "B", "_x": 1}}, "notes": "n"},
        "empty": {"data": {}, "notes": ""},
        "orders": {"o1": {"order_id": "o1"}}})
    assert keyed == {"users": {"u1": {"_id": "u1", "name": "A"},
                               "u2": {"_id": "u2", "name": "B", "_x": 1}},
                     "empty": {}, "orders": {"o1": {"order_id": "o1"}}}


def test_tables_tau2_keeps_in_memory_start_from_the_task_and_are_not_compared() -> None:
    from benchpack.specs.release_ids import tau2_session_id

    table = SimpleNamespace
    plan = SimpleNamespace(
        services={"banking": SimpleNamespace(tables={
            "users": table(key="_id"), "read_log_allowlist": table(key="_id"),
            "unlocked_agent_tools": table(key="_id")})},
        sessions={"s": SimpleNamespace(name=tau2_session_id("task_026"), metadata=None,
                                       initial_state={"data": {"banking": {
                                           "users": {"u1": {"name": "Z"}},
                                           "read_log_allowlist": {"get_x_1": {}}}}})})
    run = ParityRun(plan=plan, domain="banking_knowledge", extract={"db": {"users": {}}},
                    tasks=[], workdir=Path("."), service="banking", environment="bank")
    assert run.environment == "bank"
    assert run.own_tables == {"read_log_allowlist", "unlocked_agent_tools"}
    # τ²'s own start covers `users`; only the in-memory table is ours to add
    assert run.own_start("task_026") == {"read_log_allowlist": {"get_x_1": {"_id": "get_x_1"}}}
    assert run.own_start("task_999") == {} and run.own_start(None) == {}
    ours = {"calls": [{"changes": {"users": {"u1": {}}, "unlocked_agent_tools": {"t": {}}}},
                      {"content": "x"}],
            "changes": {"unlocked_agent_tools": {"t": {}}}}
    _cut_tables(ours, run.own_tables)
    assert ours == {"calls": [{"changes": {"users": {"u1": {}}}}, {"content": "x"}],
                    "changes": {}}


def test_the_user_may_call_tools_as_many_times_in_a_turn_as_the_agent_may_step() -> None:
    # τ²'s banking task_022: the customer makes ten calls in one turn before speaking
    from benchpack.runtime.judges.instructed_user import MAX_USER_TOOL_STEPS, user_tool_rounds

    assert MAX_USER_TOOL_STEPS == 10
    assert [user_tool_rounds(n) for n in (None, 0, 3, 10, 11, 500)] == [10, 10, 10, 10, 11, 500]


# ------------------------------------------------------------------------- with τ² itself


@needs_tau2
def test_banking_tool_parity_with_tau2(tmp_path: Path) -> None:
    """The generated-call harness on banking (a small run: the README's is `--calls 1000`)."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchpack.cli", "parity", "tau2", "--tau2", str(CHECKOUT),
         "--tau2-python", str(PYTHON), "--domain", "banking_knowledge", "--calls", "300",
         "--json"], capture_output=True, text=True, timeout=1800, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["undeclared"] == 0 and report["calls"] >= 300 + 97
    tools = {t["tool"]: t["calls"] for t in report["tools"]}
    # discoverable tools unlocked, given and called; the customer's own tools too
    assert all(tools.get(t, 0) > 10 for t in (
        "unlock_discoverable_agent_tool", "call_discoverable_agent_tool",
        "give_discoverable_user_tool", "call_discoverable_user_tool")), tools
    assert {"apply_for_credit_card", "submit_transaction"} <= set(tools)


@needs_tau2
def test_banking_dialogues_equal_tau2s_own_runner() -> None:
    from click.testing import CliRunner

    from benchpack.cli.main import cli

    result = CliRunner().invoke(cli, [
        "parity", "tau2-dialogues", "--tau2", str(CHECKOUT), "--tau2-python", str(PYTHON),
        "--domain", "banking_knowledge", "--tasks", "task_001,task_004",
        "--kinds", "gold,nothing,errors", "--max-messages", "20", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{"):])
    # the agent's system prompt (τ²'s no_knowledge prompt), tools and messages equal τ²'s,
    # and so do the customer's: each task offers its own `user_tools` (here
    # `apply_for_credit_card` of the 6), nothing declared
    assert report["mismatches"] == [] and report["requests"]["agent"] > 10
    assert report["requests"]["user"] > 0 and report["declared"] == {}


TAU2_PROMPTS = r'''
import json, sys
from tau2.agent.llm_agent import LLMAgent
from tau2.domains.banking_knowledge import retrieval as rv
from tau2.domains.banking_knowledge.environment import get_knowledge_base
kb = get_knowledge_base()
print(json.dumps({v: LLMAgent(tools=[], domain_policy=rv.build_policy(rv.resolve_variant(v), kb,
                                                                       None), llm="x").system_prompt
                  for v in sys.argv[1:]}))
'''


@needs_tau2
def test_each_retrieval_gets_tau2s_own_agent_prompt(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from benchpack.cli.main import cli
    from benchpack.compiler import compile_pack

    domain = Path(str(CHECKOUT)) / "data" / "tau2" / "domains" / "banking_knowledge"
    result = CliRunner().invoke(cli, ["import", "tau2", str(domain), "-o", str(tmp_path / "p"),
                                      "--tau2", str(CHECKOUT), "--tau2-python", str(PYTHON)])
    assert result.exit_code == 0, result.output
    pairs = {"none": "no_knowledge", "bm25": "bm25", "bm25_grep": "bm25_grep",
             "grep": "grep_only", "shell": "terminal_use", "full": "full_kb",
             "golden": "no_knowledge"}
    proc = subprocess.run([str(PYTHON), "-c", TAU2_PROMPTS, *sorted(set(pairs.values()))],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, env={
                              **os.environ, "PYTHONPATH": str(Path(str(CHECKOUT)) / "src"),
                              "TAU2_DATA_DIR": str(Path(str(CHECKOUT)) / "data")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    for ours, variant in pairs.items():
        assert compile_pack(tmp_path / "p", tmp_path / ours, use_cache=False,
                            variables={"retrieval": ours}).ok
        plan = json.loads((tmp_path / ours / "plan.json").read_text())
        env = plan["environments"]["bank"]
        # `golden` appends the task's documents after it (`kb-in-prompt`, declared); `full`'s
        # are inside τ²'s full_kb prompt, nothing appended (`in_policy: [full]`)
        assert env["policy"] == theirs[variant] and env.get("clock") is None, ours
        contexts = {(s.get("knowledge") or {}).get("context") is None
                    for s in plan["sessions"].values()} if isinstance(plan["sessions"], dict) \
            else {(s.get("knowledge") or {}).get("context") is None for s in plan["sessions"]}
        assert contexts == ({False} if ours == "golden" else {True}), ours
