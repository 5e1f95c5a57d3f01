"""π-Bench app tasks (issue 28): the apps the tasks name are benchpack's own stateful toolsets
under AppWorld's tool names, and the grader checks GRADERS.md describes are rules. Run against
the released Financier persona (skipped without ../shared/peer-data): a scripted agent following
each app task's described workflow passes the derived rules, a do-nothing agent and agents that
break one check fail exactly that check."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from benchpack.cli.main import cli
from benchpack.compiler.importers import pibench_apps
from benchpack.runtime.sandbox import find_bwrap

AGENT = Path(__file__).resolve().parents[1] / "fixtures" / "pibench_apps" / "financier_workflows.yaml"


def _peer_root() -> Path:
    if os.environ.get("BENCH_PEER_DATA"):
        return Path(os.environ["BENCH_PEER_DATA"])
    found = [p / "shared" / "peer-data" for p in Path(__file__).resolve().parents
             if (p / "shared" / "peer-data").is_dir()]
    return found[0] if found else Path(__file__).parent / "no-peer-data"


FIN = _peer_root() / "pibench" / "data" / "Financier"
needs = pytest.mark.skipif(find_bwrap() is None or not (FIN / "tasks").is_dir(),
                           reason="needs bubblewrap and ../shared/peer-data (π-Bench release)")
APP_TASKS = ["Financier_task_002", "Financier_task_005", "Financier_task_008",
             "Financier_task_011", "Financier_task_015"]
TITLE = "Weekend Camping Departure Memo - Qingyuan Reservoir"


def bench(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("pif")
    r = bench("import", "pibench", FIN, "-o", tmp / "pack")
    assert r.exit_code == 0, r.output
    r = bench("compile", tmp / "pack", "-o", tmp / "build", "--strict")
    assert r.exit_code == 0 and "no problems" in r.output, r.output
    return tmp / "build"


def _run(plan: Path, tmp: Path, agent: Path, sessions: list[str]) -> dict[str, Any]:
    db = tmp / "s.duckdb"
    args = ["run", plan, "--agent", f"scripted:{agent}", "--judge", "rules", "--simulator",
            "rules", "--allow-python", "--db", db, "--alone", "--quiet"]
    for s in sessions:
        args += ["--session", s]
    r = bench(*args)
    assert r.exit_code == 0, r.output
    con = duckdb.connect(str(db), read_only=True)
    try:
        out: dict[str, Any] = {n: {"status": st, "comp": c} for n, st, c in con.execute(
            "SELECT name, status, comp FROM sessions").fetchall()}
        for sid, item, score, detail in con.execute(
                "SELECT s.name, r.item_id, r.score, r.detail FROM checklist_results r JOIN "
                "sessions s USING (run_id, session_id, repeat)").fetchall():
            out[sid][item] = score
            out[sid][f"{item}:detail"] = detail
        out["_state"] = {sid: st for sid, st in con.execute(
            "SELECT session_id, state FROM snapshots").fetchall()}
    finally:
        con.close()
    return out


def _agent(tmp: Path, turns: dict[str, list[dict[str, Any]]]) -> Path:
    more = [{"say": "Is there anything else you need for this?"}] * 11
    path = tmp / "agent.yaml"
    path.write_text(yaml.safe_dump({"sessions": {k: v + more for k, v in turns.items()}}),
                    encoding="utf-8")
    return path


def _grader_items(got: dict[str, Any]) -> dict[str, float]:
    return {k: v for k, v in got.items() if k.startswith("g") and ":" not in k}


def test_documented_graders_and_apps_are_known() -> None:
    assert set(pibench_apps.APPS) == {"simple_note", "gmail", "todoist", "phone", "amazon"}
    assert {k.rsplit("/", 1)[1] for k in pibench_apps.DOCUMENTED} == {
        "Financier_task_002_simple_note.py", "Financier_task_017.py", "Financier_task_020.py"}
    # the operations the Financier app tasks name all exist in our toolsets
    for app, ops in {"simple_note": {"search_notes", "delete_note", "create_note",
                                     "add_content_to_note", "update_note", "show_note"},
                     "gmail": {"create_draft", "update_draft", "send_email_from_draft",
                               "show_outbox_threads", "show_thread"},
                     "phone": {"search_contacts", "search_text_messages",
                               "show_text_message_window", "send_text_message"},
                     "amazon": {"search_products", "add_product_to_cart", "show_cart"}}.items():
        assert ops <= pibench_apps.operations(app), app
    assert pibench_apps.seed_products("add 1 pair of Darn Tough Hiker Micro Crew Cushion Socks "
                                      "to my cart") == [
        {"product_id": "product_1", "name": "Darn Tough Hiker Micro Crew Cushion Socks",
         "price": None, "rating": None, "stock": None}]


@needs
def test_workflow_agent_passes_the_derived_rules_and_do_nothing_fails(plan: Path,
                                                                       tmp_path: Path) -> None:
    got = _run(plan, tmp_path / "wf", AGENT, APP_TASKS)
    assert {n: got[n]["status"] for n in APP_TASKS} == dict.fromkeys(APP_TASKS, "finished")
    # task 002: all nine documented checks of its grader, as rules
    assert _grader_items(got["Financier_task_002"]) == {f"g{i}": 1.0 for i in range(1, 10)}
    # the other app tasks have no described grader: no derived item, their checklist only
    for t in APP_TASKS[1:]:
        assert _grader_items(got[t]) == {}
    done = _agent(tmp_path, {"Financier_task_002": [{"say": "Done."}]})
    nothing = _run(plan, tmp_path / "done", done, ["Financier_task_002"])["Financier_task_002"]
    # the pre-clean check holds for an agent that deletes nothing, but is counted 0 (issue 25:
    # it earns nothing alone); every other check fails: COMP 0
    assert _grader_items(nothing) == {"g1": 1.0, **{f"g{i}": 0.0 for i in range(2, 10)}}
    assert "counted 0, no credit" in nothing["g1:detail"]
    assert nothing["comp"] == 0.0


def _note_calls(order: list[str]) -> list[dict[str, Any]]:
    calls = {
        "create": {"name": "mcp_appworld_simple_note__create_note",
                   "args": {"title": TITLE, "content": "Meet-up and Travel"}},
        "add": {"name": "mcp_appworld_simple_note__add_content_to_note",
                "args": {"note_id": "note_1", "added_content": " Must-Bring Items"}},
        "update": {"name": "mcp_appworld_simple_note__update_note",
                   "args": {"note_id": "note_1", "content": "Meet-up and Travel"}},
    }
    return [calls[k] for k in order]


@needs
def test_each_broken_check_fails_alone(plan: Path, tmp_path: Path) -> None:
    # update before add: the workflow check (create → add → update on one id) fails
    wrong_order = _agent(tmp_path, {"Financier_task_002": [
        {"tool_calls": _note_calls(["create", "update", "add"]), "say": "Written."}]})
    got = _run(plan, tmp_path / "order", wrong_order, ["Financier_task_002"])
    assert got["Financier_task_002"]["g2"] == 0.0
    right = _agent(tmp_path, {"Financier_task_002": [
        {"tool_calls": _note_calls(["create", "add", "update"]), "say": "Written."}]})
    got = _run(plan, tmp_path / "right", right, ["Financier_task_002"])
    assert (got["Financier_task_002"]["g1"], got["Financier_task_002"]["g2"]) == (1.0, 1.0)
    # content: only the headings group holds partly, so g3 (four headings) fails
    assert got["Financier_task_002"]["g3"] == 0.0
    # deleting a note no exact-title search returned breaks the safe pre-clean
    careless = _agent(tmp_path, {"Financier_task_002": [{"tool_calls": [
        {"name": "mcp_appworld_simple_note__create_note",
         "args": {"title": "Grocery list", "content": "eggs"}},
        *_note_calls(["create"])[:0],
        {"name": "mcp_appworld_simple_note__delete_note", "args": {"note_id": "note_1"}},
        *[{**c, "args": {**c["args"], "note_id": "note_2"}} if "note_id" in c["args"] else c
          for c in _note_calls(["create", "add", "update"])]], "say": "Cleaned up and written."}]})
    got = _run(plan, tmp_path / "careless", careless, ["Financier_task_002"])
    assert got["Financier_task_002"]["g1"] == 0.0 and got["Financier_task_002"]["g2"] == 1.0
    # searching the exact title first makes the same deletion of a same-titled note safe
    safe = _agent(tmp_path, {"Financier_task_002": [{"tool_calls": [
        {"name": "mcp_appworld_simple_note__create_note", "args": {"title": TITLE,
                                                                   "content": "old"}},
        {"name": "mcp_appworld_simple_note__search_notes", "args": {"query": TITLE}},
        {"name": "mcp_appworld_simple_note__delete_note", "args": {"note_id": "note_1"}},
        *[{**c, "args": {**c["args"], "note_id": "note_2"}} if "note_id" in c["args"] else c
          for c in _note_calls(["create", "add", "update"])]], "say": "Replaced the memo."}]})
    got = _run(plan, tmp_path / "safe", safe, ["Financier_task_002"])
    assert (got["Financier_task_002"]["g1"], got["Financier_task_002"]["g2"]) == (1.0, 1.0)


@needs
def test_written_scripts_are_checked_statically(plan: Path, tmp_path: Path) -> None:
    good = ("import zipfile\nfrom pyspark.sql import SparkSession\nspark = SparkSession."
            "builder.getOrCreate()\ndf = spark.read.option('header', True).csv('x.csv')\n"
            "vol = std * np.sqrt(252)\n")
    agent = _agent(tmp_path, {"Financier_task_017": [{"tool_calls": [
        {"name": "write_file", "args": {"path": "risk_correlation_pipeline.py",
                                        "content": good}}], "say": "Saved the pipeline."}]})
    got = _run(plan, tmp_path / "w", agent, ["Financier_task_017"])["Financier_task_017"]
    assert _grader_items(got) == {"g1": 1.0, "g2": 1.0, "g3": 1.0}
    bad = _agent(tmp_path, {"Financier_task_017": [{"tool_calls": [
        {"name": "write_file", "args": {"path": "risk_correlation_pipeline.py",
                                        "content": "import pandas\nvol = std * 252\n"}}],
        "say": "Saved."}]})
    got = _run(plan, tmp_path / "b", bad, ["Financier_task_017"])["Financier_task_017"]
    assert _grader_items(got) == {"g1": 0.0, "g2": 0.0, "g3": 0.0}
