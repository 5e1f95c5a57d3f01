"""Nothing for nothing (issue 25): on each of the reference packs, the four adversarial
agents (`adversary:nothing`, `done`, `echo`, `every-tool`) score 0 on every headline figure —
PROC, COMP, triple F1, trigger score, verified score and pass rate — with the rules judge and
simulator (bookshop-service: its scripted customers). Before, "Done." had claw-lab-ops 20.4
(COMP 23.9), claw-ops-desk 14.4 and pharmacist-week COMP 9.5, from checks that held because
nothing happened; calling every tool gave claw-lab-ops COMP 36.7."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from benchpack.compiler import compile_pack
from benchpack.runtime.agents.adversary import KINDS
from benchpack.runtime.runner import RunOptions, run_plan
from conftest import TASKPACKS

PACKS = ("bookshop-service", "claw-lab-ops", "claw-ops-desk", "fibre-help-desk",
         "mussel-genome-search",
         "pharmacist-week", "proact-quilt-show")
FIGURES = ("proc", "comp", "f1", "trigger_score", "score")
SUBSET = {"bookshop-service": ["cancel-by-mistake", "refuse-delivered-cancel",
                               "exchange-notebook", "default-address"]}
"""bookshop-service's 12 tasks are 12 episodes of one kind: four of them (a cancellation, a
refusal whose right outcome is no change, an exchange, an account change) keep the test under
15 s; "Done." on all 12 is `test_reference_runs.py`'s."""


@pytest.mark.parametrize("pack", PACKS)
def test_adversaries_score_zero_on_every_headline_figure(pack: str, tmp_path: Path) -> None:
    plan = tmp_path / "plan"
    res = compile_pack(TASKPACKS / pack, plan, use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    script = TASKPACKS / pack / "demo" / "simulator.yaml"
    db = tmp_path / "bench.duckdb"
    for kind in KINDS:
        summary = run_plan(RunOptions(
            plan=plan, agent=f"adversary:{kind}", judge="rules", db=db, progress=False,
            simulator=f"scripted:{script}" if script.exists() else "rules", run_id=kind,
            allow_python=True, cache_dir=tmp_path / "cache", sessions=SUBSET.get(pack, [])))
        assert summary.errors == 0, (kind, summary)
    con = duckdb.connect(str(db), read_only=True)
    try:
        from benchpack.reports.views import install_views

        install_views(con)
        rows = con.execute(f"SELECT run_id, sessions, {', '.join(FIGURES)} FROM headline "
                           "ORDER BY run_id").fetchall()
        passes = con.execute("SELECT run_id, count(*) FILTER (WHERE passed) FROM "
                             "verified_results GROUP BY run_id").fetchall()
    finally:
        con.close()
    assert sorted(r[0] for r in rows) == sorted(KINDS)
    for run, sessions, *figures in rows:
        assert sessions > 0, run
        shown = {f: v for f, v in zip(FIGURES, figures, strict=True) if v is not None}
        assert shown and all(v == 0.0 for v in shown.values()), (pack, run, shown)
    assert all(n == 0 for _, n in passes), passes
