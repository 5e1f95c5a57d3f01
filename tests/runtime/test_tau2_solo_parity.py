"""A solo session ending by a named tool (issue 24: `conversation.end_tool`,
`conversation.system_request`) and `bench parity tau2-dialogues --solo`: the scripted solo
agent, the declared text-answer difference, benchpack's half run end to end against the
scripted model on our own telecom fixture (no τ² needed), and the compile errors of a bad
ending. With BENCH_TAU2_CHECKOUT and BENCH_TAU2_PYTHON set, the whole command runs against τ²'s
own solo orchestrator on mock and telecom."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchpack.cli.main import cli
from benchpack.compiler import compile_pack
from benchpack.compiler.importers import import_pack
from benchpack.compiler.importers.tau2 import session_id
from benchpack.compiler.importers.tau2_solo import pack_text, policy
from benchpack.runtime.tau2bench.dialogues import (
    DialogueReport,
    compare_outcomes,
    compare_requests,
    run_ours,
)
from benchpack.runtime.tau2bench.scripted_model import ScriptedModel
from benchpack.runtime.tau2bench.solo import (
    TEXT_RAISES,
    SoloScript,
    SoloTask,
    declare_text_raises,
    solo_endings,
    solo_tasks,
)
from conftest import TAU2_CHECKOUT as CHECKOUT
from conftest import TAU2_PYTHON as PYTHON
from conftest import needs_bwrap, needs_tau2

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TELECOM = FIXTURES / "tau2_telecom" / "telecom"
TASK = SoloTask("t1", "Fix my phone.", [{"name": "a", "arguments": {"x": 1}},
                                        {"name": "b", "arguments": {}}])
SCRIPT = SoloScript([TASK, SoloTask("t2", "Fix my phone. And my bill.", [])],
                    ("get_line", {"line_id": "nope"}))


def _body(sent: int, ticket: str = "Fix my phone.") -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": f"rules\n<t>\n{ticket}\n</t>"}]
    for i in range(sent):
        msgs += [{"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "a", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": f"c{i}", "content": "ok"}]
    return {"model": "x-agent-gold", "messages": msgs}


def _names(answer: dict[str, Any]) -> list[str]:
    return [c["function"]["name"] for c in answer.get("tool_calls") or []]


def test_the_solo_script_answers_as_a_function_of_the_request() -> None:
    # gold: the calls in order, one per response, then `done`
    assert [_names(SCRIPT("agent", "gold", _body(n))) for n in range(3)] == \
        [["a"], ["b"], ["done"]]
    assert json.loads(SCRIPT("agent", "gold", _body(0))["tool_calls"][0]["function"][
        "arguments"]) == {"x": 1}
    assert _names(SCRIPT("agent", "nothing", _body(0))) == ["done"]
    assert [_names(SCRIPT("agent", "short", _body(n))) for n in range(2)] == [["a"], ["done"]]
    assert [_names(SCRIPT("agent", "together", _body(n))) for n in range(2)] == \
        [["a"], ["b", "done"]]
    assert [_names(SCRIPT("agent", "wrong", _body(n))) for n in range(2)] == \
        [["get_line"], ["done"]]
    assert SCRIPT("agent", "text", _body(2)) == {"role": "assistant", "content": "Done."}
    # the task is the longest ticket in the system prompt (one ticket may hold another)
    assert SCRIPT.task_of("agent", _body(0, "Fix my phone. And my bill.")).id == "t2"
    with pytest.raises(LookupError):
        SCRIPT.task_of("agent", _body(0, "something else"))


def test_only_tau2s_raise_on_a_text_answer_is_declared() -> None:
    raised = {"termination": "crashed", "reward": None, "breakdown": {},
              "error": "ValueError: LLMSoloAgent only supports tool calls."}
    ours = {"termination": "agent_error", "reward": 0.0, "error": None, "breakdown": {}}
    report = DialogueReport()
    theirs, mine = {"t/text": dict(raised)}, {"t/text": dict(ours)}
    declare_text_raises(theirs, mine, report)
    compare_outcomes(theirs, mine, report)
    assert report.mismatches == [] and report.declared == {TEXT_RAISES: 1}
    # another crash, a reward that is not 0, or another kind stays a mismatch
    for a, b, key in ((dict(raised, error="ValueError: other"), ours, "t/text"),
                      (raised, dict(ours, reward=1.0), "t/text"),
                      (raised, ours, "t/gold")):
        report = DialogueReport()
        theirs, mine = {key: dict(a)}, {key: dict(b)}
        declare_text_raises(theirs, mine, report)
        compare_outcomes(theirs, mine, report)
        assert report.declared == {} and report.mismatches
    # our `done` (the dialogue check's user stop) is τ²'s agent stop in solo mode
    assert solo_endings({"k": {"termination": "user_stop"}}) == \
        {"k": {"termination": "agent_stop"}}


SOLO_EXTRACT = {"solo": {"prefix": "<i>\nWORK ALONE\n</i>\n<p>\nPOLICY\n</p>\n<ticket>\n",
                         "suffix": "\n</ticket>", "end_tool": "done", "tools": [
                             {"type": "function", "function": {
                                 "name": "done", "description": "Call when done.",
                                 "parameters": {"properties": {}, "title": "parameters",
                                                "type": "object"}}}]}}


def test_a_checkouts_solo_prompt_and_done_tool_are_used_verbatim() -> None:
    # the file holds the prompt up to the ticket (its trailing newline goes to system_request)
    assert policy(TELECOM, "telecom", SOLO_EXTRACT) == \
        "<i>\nWORK ALONE\n</i>\n<p>\nPOLICY\n</p>\n<ticket>"
    text = pack_text("\nname: tau2-telecom\nenvironments:\n  - id: t\n"
                     "    policy: {file: policy.md}\n", "telecom", SOLO_EXTRACT)
    assert "\nname: tau2-telecom-solo\n" in text and "    tools: [done]\n" in text
    tool = json.loads(re.search(r"(?m)^  - (\{.*\})$", text).group(1))  # type: ignore[union-attr]
    assert tool == {"name": "done", "description": "Call when done.",
                    "parameters": {"properties": {}, "title": "parameters", "type": "object"},
                    "impl": {"kind": "static", "result": None}}


def _solo_pack(tmp: Path) -> Path:
    import_pack("tau2", TELECOM, tmp / "pack", solo=True)
    result = compile_pack(tmp / "pack", tmp / "plan", use_cache=False)
    assert result.ok, [d.format() for d in result.diagnostics]
    return tmp / "pack"


@needs_bwrap
def test_benchpacks_solo_half_against_the_scripted_model(tmp_path: Path) -> None:
    """Each kind run by benchpack's runner, its `litellm:` agent the scripted model: what
    the agent's model is shown and how each kind ends, computed by hand from τ²'s rules."""
    pack = _solo_pack(tmp_path)
    tasks = json.loads((TELECOM / "tasks_small.json").read_text(encoding="utf-8"))
    ids = ["[service_issue]overdue_bill[PERSONA:None]", "[mms_issue]storage_permission"
           "[PERSONA:Hard]"]
    script = SoloScript(solo_tasks(tasks, ids), ("get_line", {"line_id": "nope"}))
    kinds = ["gold", "nothing", "text", "short", "together", "wrong"]
    with ScriptedModel(script) as model:
        ours = solo_endings(run_ours(tmp_path / "plan", kinds, ids, model.base_url,
                                     prefix="bp", names={i: session_id(i) for i in ids}))
        assert model.failures == []
        requests = list(model.requests)
    bill, mms = ids
    # gold: 4 calls (2 of them the phone's), then `done`: 5 requests, reward 1
    assert ours[f"{bill}/gold"]["termination"] == "agent_stop"
    assert ours[f"{bill}/gold"]["reward"] == ours[f"{mms}/gold"]["reward"] == 1.0
    for kind in ("nothing", "wrong"):
        assert (ours[f"{bill}/{kind}"]["termination"], ours[f"{bill}/{kind}"]["reward"]) == \
            ("agent_stop", 0.0), kind
    # bill's assertions (no overdue bill, service connected) hold before its last gold call,
    # the reboot: `short` and `together` leave only that one out
    assert ours[f"{bill}/short"]["reward"] == ours[f"{bill}/together"]["reward"] == 1.0
    # mms's one gold call: `short` makes none; `together` sends it in the response that calls
    # `done`, where it is not made (τ²) — so 0, where making it would score 1
    assert ours[f"{mms}/short"]["reward"] == ours[f"{mms}/together"]["reward"] == 0.0
    assert ours[f"{mms}/together"]["termination"] == "agent_stop"
    # "Done." in text after the gold calls: τ²'s agent error, reward 0 although the
    # assertions hold
    text = ours[f"{bill}/text"]
    assert (text["termination"], text["reward"], text["breakdown"]) == \
        ("agent_error", 0.0, {"ENV_ASSERTION": 1.0})
    gold = [r for r in requests if r["model"].endswith("bp-agent-gold")
            and "My phone has no service." in r["messages"][0]["content"]]
    assert len(gold) == 5
    first = gold[0]
    # the ticket at the end of the system prompt, no user message, `done` offered last, and a
    # tool call required of every answer
    system = (pack / "policy.md").read_text(encoding="utf-8").rstrip() + \
        "\n\n# Ticket\n\nMy phone has no service."
    assert first["messages"] == [{"role": "system", "content": system}]
    assert first["tools"][-1]["function"]["name"] == "done"
    assert first["tool_choice"] == "required"
    assert [m["role"] for m in gold[-1]["messages"]] == ["system", *["assistant", "tool"] * 4]
    # one request per response: the same request sequence compared with itself has no mismatch
    report = DialogueReport()
    twin = [{**r, "model": r["model"].replace("bp-", "tau2-")} for r in requests]
    compare_requests([*twin, *requests], script, ("tau2", "bp"), report)
    assert report.mismatches == [] and report.requests["agent"] == len(requests)


@needs_bwrap
def test_a_done_call_with_malformed_arguments_still_ends_the_session(tmp_path: Path) -> None:
    # τ² looks at the name alone; a `litellm:` agent whose model sends `done` with arguments
    # that are no JSON ends the session all the same (not an error, not another request)
    _solo_pack(tmp_path)
    tasks = json.loads((TELECOM / "tasks_small.json").read_text(encoding="utf-8"))
    mms = "[mms_issue]storage_permission[PERSONA:Hard]"
    script = SoloScript(solo_tasks(tasks, [mms]), ("get_line", {"line_id": "nope"}))

    def answer(role: str, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        out = script(role, "gold", body)
        for call in out.get("tool_calls") or []:
            if call["function"]["name"] == "done":
                call["function"]["arguments"] = "{not json"
        return out

    with ScriptedModel(answer) as model:
        ours = solo_endings(run_ours(tmp_path / "plan", ["gold"], [mms], model.base_url,
                                     prefix="bp", names={mms: session_id(mms)}))
        assert model.failures == [] and len(model.requests) == 2
    assert (ours[f"{mms}/gold"]["termination"], ours[f"{mms}/gold"]["reward"]) == \
        ("agent_stop", 1.0)


def _compile_with(tmp: Path, old: str, new: str) -> list[str]:
    pack = _solo_pack(tmp)
    tasks = pack / "tasks.yaml"
    text = tasks.read_text(encoding="utf-8")
    assert old in text
    tasks.write_text(text.replace(old, new, 1), encoding="utf-8")
    result = compile_pack(pack, tmp / "plan2", use_cache=False)
    return [d.format() for d in result.diagnostics if d.severity == "error"]


def test_a_bad_ending_is_a_located_compile_error(tmp_path: Path) -> None:
    errors = _compile_with(tmp_path / "a", "end_tool: done", "end_tool: dnoe")
    assert len(errors) == 1
    assert re.match(r".*tasks\.yaml:\d+:\d+: error E216 session `service_issue-overdue_bill"
                    r"-PERSONA-None`'s ending tool `dnoe` is not a tool it offers the agent "
                    r".*did you mean `done`\?", errors[0]), errors[0]
    errors = _compile_with(tmp_path / "b", "solo: true", "solo: false")
    assert len(errors) == 2 and all("without solo mode" in e for e in errors), errors
    assert "conversation.end_tool" in errors[0] and "conversation.system_request" in errors[1]
    errors = _compile_with(tmp_path / "c", "{request}", "{ticket}")
    assert len(errors) == 1 and "has no `{request}`" in errors[0], errors
    assert "\n" not in errors[0] and 'e.g. "\\n\\nTask: {request}"' in errors[0]




@needs_tau2
@needs_bwrap
@pytest.mark.parametrize(("domain", "limit"), [("mock", None), ("telecom", 3)])
def test_solo_runs_equal_tau2s_own_solo_orchestrator(domain: str, limit: int | None) -> None:
    result = CliRunner().invoke(cli, [
        "parity", "tau2-dialogues", "--tau2", str(CHECKOUT), "--tau2-python", str(PYTHON),
        "--domain", domain, "--solo", "--json", *(["--limit", str(limit)] if limit else [])])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{"):])
    assert report["mismatches"] == []
    # a task of g gold calls asks the model g + 1 times in gold and text, once in nothing, g in
    # short and together, twice in wrong: 4g + 5 requests a side, every one compared
    folder = Path(str(CHECKOUT)) / "data" / "tau2" / "domains" / domain
    tasks = json.loads((folder / ("tasks_small.json" if domain == "telecom" else "tasks.json")
                        ).read_text(encoding="utf-8"))
    imported = {k.rsplit("/", 1)[0] for k in report["outcomes"]}
    gold = [len(t["evaluation_criteria"]["actions"]) for t in tasks if t["id"] in imported]
    assert len(gold) == (limit or 7)
    assert report["requests"] == {"agent": sum(4 * g + 5 for g in gold)}
    kinds = {k.rsplit("/", 1)[1] for k in report["outcomes"]}
    assert kinds == {"gold", "nothing", "text", "short", "together", "wrong"}
    # τ²'s raise on a text answer is declared once a task (mock: its raising assertion helper too)
    assert report["declared"][TEXT_RAISES] == len(gold)
    assert all(v["benchpack"]["reward"] == v["tau2"]["reward"] for v in
               report["outcomes"].values() if v["tau2"]["reward"] is not None)
    rewards = {k: v["tau2"]["reward"] for k, v in report["outcomes"].items()}
    if domain == "telecom":
        assert {v for k, v in rewards.items() if k.endswith("/gold")} == {1.0}
    else:  # τ²'s own solo gold fails where a solo agent cannot do it (see test_tau2_solo.py)
        assert sorted(k for k, v in rewards.items() if k.endswith("/gold") and v != 1.0) == [
            "update_task_with_initialization_data/gold", "update_task_with_user_tools/gold"]
