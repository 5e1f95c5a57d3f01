"""Issue 12 §2 in the compiler: a process service's plan entry and the fingerprints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from benchpack.compiler import compile_pack

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "http_service"


def _plan(pack: Path, out: Path) -> dict:
    res = compile_pack(pack, out, use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    return json.loads((out / "plan.json").read_text(encoding="utf-8"))


def test_process_service_in_the_plan(tmp_path: Path) -> None:
    plan = _plan(FIXTURE, tmp_path / "plan")
    proc = plan["services"]["crm"]["process"]
    # the service's files travel in the plan; where the pack lay is not in it
    assert proc["cwd"] == "." and "pack_dir" not in proc
    assert "services/crm.py" in proc["files"] and str(FIXTURE) not in json.dumps(plan)
    assert proc["env"] == {"DATA_DIR": "fixtures"}  # `{{ vars.data }}` rendered
    assert plan["environments"]["office"]["services"] == ["crm"]  # brought by its HTTP tools
    assert plan["tools"]["crm__add_note"]["impl"]["kind"] == "http"


def test_fingerprints_follow_the_service_code_not_the_pack_location(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "elsewhere" / "b"
    shutil.copytree(FIXTURE, a)
    shutil.copytree(FIXTURE, b)
    fa = {k: s["fingerprint"] for k, s in _plan(a, tmp_path / "pa")["sessions"].items()}
    fb = {k: s["fingerprint"] for k, s in _plan(b, tmp_path / "pb")["sessions"].items()}
    assert fa == fb  # where the pack lies is not an outcome
    pa, pb = _plan(a, tmp_path / "qa"), _plan(b, tmp_path / "qb")
    assert pa["services"] == pb["services"]  # nor part of the plan
    crm = b / "services" / "crm.py"
    crm.write_text(crm.read_text(encoding="utf-8").replace("N-", "NOTE-"), encoding="utf-8")
    fc = {k: s["fingerprint"] for k, s in _plan(b, tmp_path / "pc")["sessions"].items()}
    assert all(fc[k] != fa[k] for k in fa)  # the service changed: every session's outcome may
