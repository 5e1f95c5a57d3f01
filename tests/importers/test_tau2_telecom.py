"""τ²'s telecom domain (issue 24, dual control with a sync after every call) imported and run.

Offline, on benchpack's own small domain folder in τ²'s shapes (`fixtures/tau2_telecom`: TOML
databases, a policy in two files, `tasks_small.json`): the databases load as τ²'s models load
them, τ²'s task ids become valid pack ids, a task needing a tool we lack is left out with the
reason, the gold agent and user score 1.0 on every imported task, and agents that do nothing or
never guide the customer score what they deserve. Gated (BENCH_TAU2_CHECKOUT,
BENCH_TAU2_PYTHON): the real release's 20 tasks score for the gold and the do-nothing agent
exactly what τ²'s own evaluator gives the same trajectories."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import duckdb
import pytest
from tau2_helpers import TAU2_TRAJECTORY, import_domain, run_scores

from benchpack.compiler.importers import run_import
from benchpack.runtime.runner import RunOptions, run_plan
from conftest import TAU2_CHECKOUT as CHECKOUT
from conftest import TAU2_PYTHON as PYTHON
from conftest import needs_bwrap, needs_tau2

DOMAIN = Path(__file__).resolve().parents[1] / "fixtures" / "tau2_telecom" / "telecom"
IDS = {"service_issue-overdue_bill-PERSONA-None", "mobile_data_issue-abroad_roaming-PERSONA-Easy",
       "mms_issue-storage_permission-PERSONA-Hard", "service_issue-locked_sim-PERSONA-None"}


def test_databases_load_as_tau2s_models_do(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    result = run_import("tau2", DOMAIN, pack)
    assert result.sessions == 4
    assert result.dropped == ["task [service_issue]tower_reset[PERSONA:None]: its gold actions "
                              "use tools this domain's toolset does not have: reset_cell_tower"]
    data = {p.stem: json.loads(p.read_text(encoding="utf-8"))
            for p in (pack / "data").glob("*.json")}
    # numbers a float field holds become floats, dates print as τ²'s do, defaults fill in
    assert data["plans"][0]["data_limit_gb"] == 5.0 and \
        isinstance(data["plans"][0]["data_limit_gb"], float)
    assert data["lines"][1] == {
        "line_id": "L2", "phone_number": "555-000-0002", "status": "Active", "plan_id": "P1",
        "device_id": None, "data_used_gb": 0.0, "data_refueling_gb": 0.0,
        "roaming_enabled": False, "contract_end_date": None, "last_plan_change_date": None,
        "last_sim_replacement_date": None, "suspension_start_date": None}
    assert data["devices"][0]["activation_date"] == "2025-01-02 09:15:00"
    assert data["devices"][0]["imei"] is None and data["devices"][0]["activated"] is True
    assert data["customers"][0]["created_at"] == "2025-01-02 09:00:00"
    assert data["customers"][0]["goodwill_credit_used_this_year"] == 0.0
    assert data["bills"][0]["total_due"] == 30.0 and data["bills"][0]["line_items"][0] == {
        "description": "Small Plan - Line 555-000-0001", "amount": 30.0, "date": "2025-02-01",
        "item_type": "Plan Charge"}
    device, = json.loads((pack / "data" / "user" / "device.json").read_text(encoding="utf-8"))
    assert list(device)[:4] == ["id", "sim_card_status", "sim_card_missing", "airplane_mode"]
    assert device["battery_level"] == 64 and device["active_apn_settings"] == {
        "apn_name": "internet", "reset_at_reboot": False, "mms_apn": "mms",
        "mmsc_url": "http://mms.carrier.com/mms/wapenc", "mms_proxy": None, "mms_port": None}
    assert device["app_statuses"]["messaging"]["permissions"]["storage"] is True
    where, = json.loads((pack / "data" / "user" / "surroundings.json").read_text("utf-8"))
    assert where["phone_number"] is None and where["signal_strength"]["5G"] == "excellent"
    # the policy as τ²'s telecom environment composes it
    policy = (pack / "policy.md").read_text(encoding="utf-8")
    assert policy.startswith("<main_policy>\n# Operator policy") and \
        policy.endswith("step by step.\n\n</tech_support_policy>")
    text = (pack / "pack.yaml").read_text(encoding="utf-8")
    assert text.count("after_call: sync_sides") == 2 and "services: [telecom_user]" in text
    tasks = (pack / "tasks.yaml").read_text(encoding="utf-8")
    assert "id: mms_issue-storage_permission-PERSONA-Hard" in tasks
    assert "tau2-id:[mms_issue]storage_permission[PERSONA:Hard]" in tasks


@needs_bwrap
def test_gold_scores_one_and_adversaries_what_they_deserve(tmp_path: Path) -> None:
    pack = import_domain(tmp_path, DOMAIN)
    gold_user = f"scripted:{pack / 'demo' / 'gold_user.yaml'}"
    gold = run_scores(tmp_path, "gold", f"scripted:{pack / 'demo' / 'gold_agent.yaml'}", gold_user)
    assert gold == dict.fromkeys(IDS, 1.0)
    done = tmp_path / "done.yaml"
    done.write_text("default:\n  - say: Done.\n", encoding="utf-8")
    assert run_scores(tmp_path, "nothing", f"scripted:{done}", "rules") == dict.fromkeys(IDS, 0.0)
    # the gold agent that never guides the customer (the user does nothing on the phone):
    # only the task the operator alone can settle (a transfer) passes
    alone = run_scores(tmp_path, "alone", f"scripted:{pack / 'demo' / 'gold_agent.yaml'}", "rules")
    assert alone == {**dict.fromkeys(IDS, 0.0), "service_issue-locked_sim-PERSONA-None": 1.0}


TAU2_SIDE = TAU2_TRAJECTORY + r'''
from tau2.domains.telecom.environment import get_environment, load_tasks

out = {}
for task in load_tasks(sys.argv[1]):
    for gold in (True, False):
        sim = simulation(task, trajectory(task, gold))
        reward = evaluate_simulation(sim, task, EvaluationType.ALL, False, "telecom").reward
        out.setdefault(task.id, {})["gold" if gold else "nothing"] = reward
print(json.dumps(out))
'''


@needs_tau2
@needs_bwrap
def test_release_rewards_equal_tau2s_own(tmp_path: Path) -> None:
    domain = Path(str(CHECKOUT)) / "data" / "tau2" / "domains" / "telecom"
    theirs = json.loads(subprocess.run(
        [str(PYTHON), "-c", TAU2_SIDE, str(domain / "tasks_small.json")], capture_output=True,
        text=True, check=True, cwd=str(CHECKOUT), timeout=300,
        env={**os.environ, "TAU2_DATA_DIR": str(Path(str(CHECKOUT)) / "data")},
    ).stdout.strip().splitlines()[-1])
    pack = import_domain(tmp_path, domain)
    gold = run_scores(tmp_path, "gold", f"scripted:{pack / 'demo' / 'gold_agent.yaml'}",
                      f"scripted:{pack / 'demo' / 'gold_user.yaml'}")
    done = tmp_path / "done.yaml"
    done.write_text("default:\n  - say: Done.\n", encoding="utf-8")
    nothing = run_scores(tmp_path, "nothing", f"scripted:{done}", "rules")
    from benchpack.compiler.importers.tau2 import session_id

    ours = {tid: {"gold": gold[session_id(tid)], "nothing": nothing[session_id(tid)]}
            for tid in theirs}
    assert len(ours) == 20 and ours == theirs
    assert all(v == {"gold": 1.0, "nothing": 0.0} for v in ours.values())


@needs_bwrap
@pytest.mark.parametrize("adversary", ["echo", "every-tool"])
def test_adversaries_score_0_on_every_task(tmp_path: Path, adversary: str) -> None:
    import_domain(tmp_path, DOMAIN)
    db = tmp_path / "adv.duckdb"
    run_plan(RunOptions(plan=tmp_path / "plan", agent=f"adversary:{adversary}", judge="rules",
                        simulator="rules", db=db, run_id="adv", progress=False,
                        cache_dir=tmp_path / "c", allow_python=True))
    con = duckdb.connect(str(db), read_only=True)
    try:
        scores = dict(con.execute("SELECT name, score FROM sessions").fetchall())
    finally:
        con.close()
    # nothing on the phone is ever done, and no call matches a gold one exactly
    assert scores == dict.fromkeys(IDS, 0.0)
