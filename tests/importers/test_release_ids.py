"""Both importers of a release name its sessions alike (`specs.release_ids`): every session a
pack import made is the one the run import of the same release's results looks for. τ²
telecom's task ids (`[service_issue]overdue_bill[PERSONA:None]`) are not pack ids; the run
importer once used them raw and so joined none of them."""

from __future__ import annotations

import json
from pathlib import Path

from benchpack.compiler import compile_pack
from benchpack.compiler.importers import run_import
from benchpack.runtime.imports import proactbench as run_proactbench
from benchpack.runtime.imports import tau2 as run_tau2
from benchpack.specs.release_ids import safe_id, tau2_session_id, tau2_session_key

DOMAIN = Path(__file__).resolve().parents[1] / "fixtures" / "tau2_telecom" / "telecom"


def test_every_telecom_session_is_found_by_the_run_importer(tmp_path: Path) -> None:
    run_import("tau2", DOMAIN, tmp_path / "pack")
    result = compile_pack(tmp_path / "pack", tmp_path / "plan", use_cache=False)
    assert result.ok, [d.format() for d in result.diagnostics]
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text(encoding="utf-8"))
    planned = set(plan["sessions"])
    tasks = [t["id"] for t in json.loads((DOMAIN / "tasks_small.json").read_text("utf-8"))]
    pack = plan["pack"]["name"]
    assert any("[" in t for t in tasks)  # ids a pack cannot hold as they are
    found = {run_tau2.session_key(pack, t) for t in tasks}
    assert len(planned) >= 4 and planned <= found  # (a task the import skips has no session)


def test_ids_by_hand() -> None:
    assert tau2_session_id("12") == "12"
    assert tau2_session_id("[service_issue]overdue_bill[PERSONA:None]") == \
        "service_issue-overdue_bill-PERSONA-None"
    long = "[x]" + "a" * 100
    assert len(tau2_session_id(long)) == 75 and tau2_session_id(long) != tau2_session_id(
        long + "b")
    assert tau2_session_key("tau2-retail", "7") == "session.tau2-retail.task-7.7"
    assert safe_id("..") == "x" and safe_id("a b/c") == "a-b-c"
    assert run_proactbench.episode_id("BP_X_01_AB__style13__0123456789abcdef") == \
        "BP_X_01_AB.s13.0123456789ab"
