"""`bench parity tau2-dialogues` (issue 23): the scripted model both sides talk to, what a request
"shows", the comparison, and benchpack's half run end to end on our own fixture pack (no τ²
needed). With BENCH_TAU2_CHECKOUT and BENCH_TAU2_PYTHON set, the whole command runs against τ²'s
own runner on a few retail tasks."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchpack.cli.main import cli
from benchpack.compiler import compile_pack
from benchpack.compiler.importers import import_pack
from benchpack.runtime.tau2bench.dialogues import (
    DialogueReport,
    Script,
    ScriptTask,
    compare_outcomes,
    compare_requests,
    first_difference,
    opening,
    render,
    run_ours,
    shown,
    without_tools,
)
from benchpack.runtime.tau2bench.scripted_model import ScriptedModel

sys.path.insert(0, str(Path(__file__).parents[1] / "importers"))
from test_import_tau2_parity import FIX, _extract

from conftest import TAU2_CHECKOUT as CHECKOUT
from conftest import TAU2_PYTHON as PYTHON
from conftest import needs_tau2

TASK = ScriptTask("7", "SCENARIO SEVEN", [{"name": "get_order_details",
                                          "arguments": {"order_id": "#W1"}},
                                         {"name": "modify", "arguments": {"ids": ["a", "b"]}}],
                  communicate=["10.5"], assertions=["it was polite"])
SCRIPT = Script([TASK], ("get_order_details", {"order_id": "nope"}), ("list_all", {}))


def _user_body(*own: str) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "guide\nSCENARIO SEVEN\n"},
                                  {"role": "user", "content": "Hi! How can I help?"}]
    for text in own:
        msgs += [{"role": "assistant", "content": text}, {"role": "user", "content": "ok"}]
    return {"model": "x-user-gold", "messages": msgs}


def _agent_body(calls: int) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "policy"},
                                  {"role": "assistant", "content": "Hi!"},
                                  {"role": "user", "content": opening("7", "gold")}]
    for i in range(calls):
        msgs += [{"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": f"c{i}", "content": "r"}]
    return {"model": "x-agent-gold", "messages": msgs}


def test_the_script_answers_as_a_function_of_the_request() -> None:
    # the user opens with the marker, then stops (or, unfinished, never does)
    assert SCRIPT("user", "gold", _user_body())["content"] == opening("7", "gold")
    assert SCRIPT("user", "gold", _user_body("x"))["content"].endswith("###STOP###")
    assert "###" not in SCRIPT("user", "unfinished", _user_body("x"))["content"]
    # the agent makes the gold calls in order, one per response, then says it is done
    first = SCRIPT("agent", "gold", _agent_body(0))["tool_calls"][0]["function"]
    assert (first["name"], json.loads(first["arguments"])) == ("get_order_details",
                                                               {"order_id": "#W1"})
    second = SCRIPT("agent", "permuted", _agent_body(1))["tool_calls"][0]["function"]
    assert json.loads(second["arguments"]) == {"ids": ["b", "a"]}  # lists reversed
    assert SCRIPT("agent", "gold", _agent_body(2))["content"] == "Done. 10.5"
    assert SCRIPT("agent", "nothing", _agent_body(0))["content"] == "Done."
    for n in (0, 5):  # the limits' kinds repeat their call whatever happened before
        assert SCRIPT("agent", "errors", _agent_body(n))["tool_calls"][0]["function"][
            "name"] == "get_order_details"
    judged = json.loads(SCRIPT("judge", "gold", {"messages": [
        {"role": "user", "content": "user: " + opening("7", "gold")}]})["content"])
    assert judged == {"results": [{"expectedOutcome": "it was polite", "reasoning": "scripted",
                                   "metExpectation": True}]}
    with pytest.raises(LookupError):
        SCRIPT("agent", "gold", {"messages": [{"role": "user", "content": "no marker"}]})


def test_shown_drops_ids_and_names_only() -> None:
    a = {"model": "tau2-agent-gold", "seed": 1, "temperature": 0.0, "tool_choice": "auto",
         "messages": [{"role": "assistant", "content": None, "tool_calls": [
             {"id": "1", "name": "t", "type": "function",
              "function": {"name": "t", "arguments": '{"a": 1, "b": 2}'}}]}],
         "tools": [{"type": "function", "function": {"name": "t", "description": "d",
                                                      "parameters": {}}}]}
    b = {"model": "bp-agent-gold", "seed": 1, "temperature": 0,
         "messages": [{"role": "assistant", "content": "", "tool_calls": [
             {"id": "zz", "type": "function",
              "function": {"name": "t", "arguments": '{"b": 2, "a": 1}'}}]}],
         "tools": [{"type": "function", "function": {"name": "t", "description": "d",
                                                      "parameters": {}}}]}
    assert shown(a) == shown(b)  # ids, model names, None vs "", key order, "auto" default
    b["seed"] = 2
    assert first_difference(shown(a), shown(b)) == "seed: τ² 1, benchpack 2"
    b["seed"], b["tools"][0]["function"]["description"] = 1, "D"
    assert first_difference(shown(a), shown(b)).startswith("tools[0].description: differ at "
                                                           "character 0")


def test_outcomes_and_requests_are_compared() -> None:
    report = DialogueReport()
    ok = {"termination": "user_stop", "reward": 1.0, "breakdown": {"DB": 1.0}}
    compare_outcomes({"7/gold": ok, "7/nothing": ok},
                     {"7/gold": {**ok, "error": None},
                      "7/nothing": {"termination": "max_steps", "reward": 0.0, "error": None,
                                    "breakdown": {"DB": 0.0}}}, report)
    assert [(m.key, m.what) for m in report.mismatches] == [
        ("7/nothing", "ending"), ("7/nothing", "reward"), ("7/nothing", "component")]
    report = DialogueReport()
    t2, bp = _agent_body(0), _agent_body(0)
    t2["model"], bp["model"] = "tau2-agent-gold", "bp-agent-gold"
    extra = dict(bp, model="bp-agent-gold")
    compare_requests([t2, bp, extra], SCRIPT, ("tau2", "bp"), report)
    assert report.requests == {"agent": 1}
    assert [(m.key, m.detail) for m in report.mismatches] == [
        ("7/gold/agent", "τ² made 1, benchpack 2")]
    # a declared difference explains a request only when dropping it leaves them equal
    report = DialogueReport()
    u2, ub = _user_body(), _user_body()
    u2["model"], ub["model"] = "tau2-user-gold", "bp-user-gold"
    u2["tools"] = [{"type": "function", "function": {"name": "check", "parameters": {}}}]
    why = ("user tools", "user", without_tools)
    compare_requests([u2, ub], SCRIPT, ("tau2", "bp"), report, [why])
    assert report.mismatches == [] and report.declared == {"user tools": 1}
    ub["messages"][0]["content"] += "!"
    report = DialogueReport()
    compare_requests([u2, ub], SCRIPT, ("tau2", "bp"), report, [why])
    assert [m.what for m in report.mismatches] == ["shown"] and report.declared == {}
    # the printout counts a declared request difference in requests, an ending one in runs
    report = DialogueReport(declared={"user tools": 3})
    report.declare_ending("raises")
    report.declare_ending("raises")
    text = render(report)
    assert "declared: user tools (3 requests)" in text and "declared: raises (2 runs)" in text


def test_benchpacks_half_runs_every_kind_against_the_scripted_model(tmp_path: Path) -> None:
    """Our fixture pack imported as a parity import (a fake extract), then each kind run by
    benchpack's real runner against the scripted endpoint: the ending and reward each kind
    must have, computed by hand from τ²'s rules."""
    extract = _extract()
    import_pack("tau2", FIX / "retail", tmp_path / "pack", tau2=extract)
    text = (tmp_path / "pack" / "pack.yaml").read_text(encoding="utf-8")
    (tmp_path / "pack" / "pack.yaml").write_text(
        text.replace("max_messages: 200", "max_messages: 30"), encoding="utf-8")
    assert compile_pack(tmp_path / "pack", tmp_path / "plan", use_cache=False).ok
    tasks = json.loads((FIX / "retail" / "tasks.json").read_text(encoding="utf-8"))
    from benchpack.runtime.tau2bench.dialogues import script_tasks

    script = Script(script_tasks(tasks, extract, ["0", "1"]),
                    ("get_order_details", {"order_id": "#NOPE"}), ("list_all_product_types", {}))
    # 30 messages: ten failed calls (21 messages with the opening) end the errors kind first
    kinds = ["gold", "nothing", "errors", "steps", "unfinished"]
    with ScriptedModel(script) as model:
        ours = run_ours(tmp_path / "plan", kinds, ["0", "1"], model.base_url, prefix="bp")
        assert model.failures == []
        users = [r for r in model.requests if r["model"].endswith("bp-user-gold")]
    # τ²'s simulator prompt (the fake extract's) around the task's scenario, then the greeting
    first = sorted(users, key=lambda r: r["messages"][0]["content"])[0]["messages"]
    assert first[:2] == [{"role": "system", "content": "GUIDE\n<scenario>\nscenario 0\n"
                                                         "</scenario>"},
                         {"role": "user", "content": "Hi!"}]
    for task in ("0", "1"):
        assert ours[f"{task}/gold"]["termination"] == "user_stop"
        assert ours[f"{task}/gold"]["reward"] == 1.0
        assert ours[f"{task}/nothing"]["reward"] == 0.0  # the gold changes the database
        assert ours[f"{task}/errors"] == {"termination": "too_many_errors", "reward": 0.0,
                                         "error": None, "breakdown": ours[f"{task}/errors"][
                                             "breakdown"]}
        assert ours[f"{task}/steps"]["termination"] == "max_steps"
        assert ours[f"{task}/unfinished"]["termination"] == "max_steps"
        assert ours[f"{task}/steps"]["reward"] == ours[f"{task}/unfinished"]["reward"] == 0.0




@needs_tau2
def test_dialogues_equal_tau2s_own_runner() -> None:
    result = CliRunner().invoke(cli, [
        "parity", "tau2-dialogues", "--tau2", str(CHECKOUT), "--tau2-python", str(PYTHON),
        "--domain", "retail", "--tasks", "0,3", "--kinds", "gold,nothing,errors",
        "--max-messages", "20", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{"):])
    assert report["mismatches"] == []
    assert report["requests"]["agent"] > 10 and report["requests"]["user"] >= 6


def test_a_task_id_with_brackets_is_found_by_its_marker() -> None:
    # telecom's ids hold brackets and colons: the marker still names the whole id
    from benchpack.runtime.tau2bench.dialogues import _REF

    tid = "[mms_issue]bad_wifi_calling[PERSONA:Easy]"
    hit = _REF.search("Hi. " + opening(tid, "gold") + " more [x]/y]")
    assert hit is not None and (hit["task"], hit["kind"]) == (tid, "gold")


@needs_tau2
def test_telecom_dialogues_equal_tau2s_own_runner() -> None:
    # issue 24: the phone's tools in the user simulator's turns, the sync after every call,
    # τ²'s bracketed task ids mapped to the pack's
    result = CliRunner().invoke(cli, [
        "parity", "tau2-dialogues", "--tau2", str(CHECKOUT), "--tau2-python", str(PYTHON),
        "--domain", "telecom", "--limit", "2", "--kinds", "gold,nothing,errors",
        "--max-messages", "20", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{"):])
    assert report["mismatches"] == [] and len(report["outcomes"]) == 6
    # the user's own gold calls (its phone's tools) settle the task in both runners
    gold = [v for k, v in report["outcomes"].items() if k.endswith("/gold")]
    assert [(g["tau2"]["reward"], g["benchpack"]["reward"]) for g in gold] == [(1.0, 1.0)] * 2


@needs_tau2
def test_banking_dialogues_under_a_search_variant_equal_tau2s_and_golden_differs() -> None:
    # the bm25 build: τ²'s policy for bm25 and its search tools offered first, as τ²'s
    # runner offers them, request for request; golden's prompt layout is a declared
    # difference (`kb-in-prompt`, origin.if_vars), and the check shows it
    def run(variant: str) -> dict[str, Any]:
        result = CliRunner().invoke(cli, [
            "parity", "tau2-dialogues", "--tau2", str(CHECKOUT), "--tau2-python", str(PYTHON),
            "--domain", "banking_knowledge", "--retrieval", variant, "--limit", "2",
            "--kinds", "gold,errors", "--max-messages", "20", "--json"])
        assert result.exit_code in (0, 1), result.output
        report: dict[str, Any] = json.loads(result.output[result.output.index("{"):])
        return report

    bm25 = run("bm25")
    assert bm25["mismatches"] == [] and len(bm25["outcomes"]) == 4
    assert bm25["requests"]["agent"] >= 4
    golden = run("golden")
    assert golden["mismatches"] and all("messages[0].content" in str(m)
                                        for m in golden["mismatches"])
    bad = CliRunner().invoke(cli, ["parity", "tau2-dialogues", "--tau2", str(CHECKOUT),
                                   "--domain", "retail", "--retrieval", "bm25"])
    assert bad.exit_code == 2 and "retail has no retrieval configuration" in bad.output
