"""fibre-help-desk (issue 24's reference pack: a knowledge base, a discoverable tool): the demo
agent reaches reward 1.0 on all four tasks under the default retrieval (`bm25_grep`, its
searches answered from the handbook) and under `golden` (its searches refused as unknown tools,
the documents in the prompt instead); the technician tool is offered only after the unlock; the
final tables hold what the handbook's rules give by hand (the outage credit: fibre-1000's 4.00
a day × 3 days = 12.00); an agent saying only "Done." gets 0 everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from benchpack.compiler import compile_pack
from benchpack.runtime.runner import RunOptions, run_plan
from conftest import TASKPACKS

PACK = TASKPACKS / "fibre-help-desk"
SIM = f"scripted:{PACK / 'demo' / 'simulator.yaml'}"
TASKS = ["outage-credit-zh", "red-light-cable", "red-light-config", "wifi-password"]


def _run(tmp_path: Path, agent: str, retrieval: str) -> duckdb.DuckDBPyConnection:
    res = compile_pack(PACK, tmp_path / "plan", strict=True, use_cache=False,
                       variables={"retrieval": retrieval})
    assert res.ok, [d.format() for d in res.diagnostics]
    summary = run_plan(RunOptions(plan=tmp_path / "plan", agent=agent, judge="rules",
                                  simulator=SIM, db=tmp_path / "b.duckdb", progress=False,
                                  allow_python=True, cache_dir=tmp_path / "cache", run_id="r"))
    assert summary.errors == 0, summary
    return duckdb.connect(str(tmp_path / "b.duckdb"), read_only=True)


@pytest.mark.parametrize("retrieval", ["bm25_grep", "golden"])
def test_demo_agent_reaches_reward_1_on_every_task(tmp_path: Path, retrieval: str) -> None:
    con = _run(tmp_path, f"scripted:{PACK / 'demo' / 'agent.yaml'}", retrieval)
    rows = con.execute("SELECT name, score FROM sessions ORDER BY name").fetchall()
    assert rows == [(t, 1.0) for t in TASKS]
    searches = con.execute("SELECT json_extract_string(call, '$.query'), error, result FROM "
                           "tool_calls WHERE tool_name = 'handbook__search' ORDER BY session_id,"
                           " seq").fetchall()
    snapshot = con.execute("SELECT count(*) FROM snapshots").fetchone()
    con.close()
    assert len(searches) == 5 and snapshot is not None
    if retrieval == "golden":  # not offered: each search is an unknown-tool error
        assert all(e is not None and e.startswith("unknown tool") for _, e, _ in searches)
        return
    found = {q: [d["id"] for d in json.loads(r)] for q, e, r in searches if e is None}
    assert found["line still down after reset technician visit"][0] == "technician-visits"
    assert found["change wifi password"][0] == "wifi-password"
    assert found["停机补偿"] == ["faq-zh"]


def test_the_technician_tool_appears_after_the_unlock_and_the_tables_are_right(
        tmp_path: Path) -> None:
    con = _run(tmp_path, f"scripted:{PACK / 'demo' / 'agent.yaml'}", "bm25_grep")
    extra = dict(con.execute("SELECT name, extra FROM sessions").fetchall())
    calls = con.execute("SELECT tool_name, error, result FROM tool_calls WHERE tool_name IN "
                        "('apply_outage_credit', 'schedule_technician', 'reset_line') "
                        "ORDER BY session_id, seq").fetchall()
    con.close()
    unlocked = json.loads(extra["red-light-cable"])["unlocked"]
    assert [u["tool"] for u in unlocked] == ["schedule_technician"]
    assert all("unlocked" not in json.loads(extra[t] or "{}") for t in TASKS
               if t != "red-light-cable")
    # required documents found by the demo's searches, by hand: red-light-cable needs
    # router-lights, remote-reset, technician-visits (all three returned); outage-credit-zh
    # needs outage-credits and faq-zh (its Chinese query finds only faq-zh): 1/2
    found = {t: json.loads(extra[t])["knowledge"]["required_found"] for t in TASKS}
    assert found == {"red-light-cable": 1.0, "red-light-config": 1.0,
                     "outage-credit-zh": 0.5, "wifi-password": 1.0}
    by_tool = {(t, json.dumps(json.loads(r), sort_keys=True)) for t, e, r in calls
               if e is None}
    assert ("apply_outage_credit", json.dumps({"amount": 12.0, "customer_id": "C-203",
                                               "days": 3, "line_id": "L-1003"},
                                              sort_keys=True)) in by_tool
    assert ("schedule_technician", json.dumps({"day": "2026-06-08", "line_id": "L-1001"},
                                              sort_keys=True)) in by_tool
    # the cable fault stays down after the reset; the configuration fault comes back
    assert ("reset_line", json.dumps({"light": "red-blinking", "line_id": "L-1001",
                                      "status": "down"}, sort_keys=True)) in by_tool
    assert ("reset_line", json.dumps({"light": "green", "line_id": "L-1002",
                                      "status": "up"}, sort_keys=True)) in by_tool


def test_done_agent_scores_0_on_every_task(tmp_path: Path) -> None:
    con = _run(tmp_path, "adversary:done", "bm25_grep")
    rows = con.execute("SELECT name, score FROM sessions ORDER BY name").fetchall()
    con.close()
    assert rows == [(t, 0.0) for t in TASKS]
