"""The dependency ablation compares like with like, and every count says what it counts.

Store `run-p` (agent `model-p`, 1 repeat), by hand:
  g1, g2  earlier sessions of a dependency group: PROC 0.5, 0.5 (2 intents each)
  fin     the group's final session: its own 2 intents, none resolved (PROC 0.0); the group's
          pooled PROC over 6 intents (g1, g2, fin) = 2/6 = 0.333333
  fin~nodeps  the variant without prior sessions: PROC 0.0 over the same 2 intents
  → Δ PROC = 0.0 − 0.0 = 0 (before: 0.333 − 0.0, the pooled group against the session)
  headline: 3 sessions + 1 ablation variant; PROC = (0.5 + 0.5 + 0.333333) / 3 = 0.444444
  (the final session counts its pooled figure, π-Bench), what `headline_sessions` gives
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchpack.reports.api import ReportOptions, build_reports, run_query
from benchpack.runtime.store import SessionRows, Store


def _s(sid: str, proc: float, **cols: Any) -> SessionRows:
    return SessionRows("run-p", sid, 0, {
        "run_id": "run-p", "session_id": sid, "repeat": 0, "name": sid,
        "protocol": "intent_tracking", "agent": "model-p", "status": "finished",
        "intents": 2, "proc": proc, "comp": 1.0, "turns": 4, "started_at": 0.0, **cols})


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("abl") / "bench.duckdb"
    store = Store(path)
    try:
        store.upsert_run({"run_id": "run-p", "agent": "model-p", "repeats": 1,
                          "pack_name": "fx", "config": {}, "status": "finished"})
        store.write_batch([
            _s("g1", 0.5, group_id="g"), _s("g2", 0.5, group_id="g"),
            _s("fin", 0.0, group_id="g", proc_group=2 / 6),
            _s("fin~nodeps", 0.0, ablation="without_dependencies", base_session="fin",
               turns=10)])
    finally:
        store.close()
    return path


def _row(db: Path, name: str, i: int = 0) -> dict[str, Any]:
    (res,) = build_reports(ReportOptions(db=db, names=[name], runs=["all"]))
    t = res.tables[i]
    return dict(zip([c.key for c in t.columns], t.rows[0], strict=True))


def test_ablation_delta_compares_the_final_sessions_own_intents(db: Path) -> None:
    (row,) = run_query(db, "SELECT proc_with, proc_without, proc_delta, proc_group_with "
                           "FROM dependency_ablation").rows
    assert row == pytest.approx((0.0, 0.0, 0.0, 2 / 6))
    cells = _row(db, "ablation")
    assert cells["proc_delta"].value == 0.0
    assert cells["proc_group_with"].value == pytest.approx(2 / 6)


def test_counts_say_what_they_count_and_views_reproduce_the_headline(db: Path) -> None:
    (res,) = build_reports(ReportOptions(db=db, names=["summary"], runs=["all"]))
    runs = dict(zip([c.key for c in res.tables[0].columns], res.tables[0].rows[0], strict=True))
    assert (runs["finished"], runs["variants"]) == (4, 1)
    head = dict(zip([c.key for c in res.tables[1].columns], res.tables[1].rows[0], strict=True))
    assert head["sessions"] == 3 and head["proc"].value == pytest.approx(4 / 9)
    (view,) = run_query(db, "SELECT sessions, ablation_variants, excluded, proc, comp "
                            "FROM headline").rows
    assert view == pytest.approx((3, 1, 0, 4 / 9, 1.0))
    # turns per session over the sessions PROC averages (before: 5.5, the variant's 10 in)
    (res,) = build_reports(ReportOptions(db=db, names=["proc-comp"], runs=["all"]))
    turns = dict(zip([c.key for c in res.tables[1].columns], res.tables[1].rows[0],
                     strict=True))
    assert turns["mean"] == 4.0


def test_the_run_summary_counts_ablation_variants_apart(db: Path) -> None:
    from benchpack.runtime.runner import summarise

    store = Store(db)
    try:
        s = summarise(store, "run-p", 4, {"run": 4}, 0, 1.0)
    finally:
        store.close()
    assert (s.finished, s.ablation_variants) == (4, 1)
    assert s.proc == pytest.approx(4 / 9)


def test_the_headline_view_reproduces_the_summary_report(tmp_path: Path) -> None:
    """On the shared fixture (two runs, repeats, groups, variants, triggers with a judge
    error): every headline figure of `bench report summary` is the `headline` view's."""
    from store_fixture import build_store

    db = build_store(tmp_path / "bench.duckdb")
    (res,) = build_reports(ReportOptions(db=db, names=["summary"], runs=["all"]))
    t = res.tables[1]
    keys = [c.key for c in t.columns]
    shown = {r[0]: dict(zip(keys, r, strict=True)) for r in t.rows}
    view = run_query(db, "SELECT agent, sessions, proc, comp, f1, trigger_score, score "
                         "FROM headline").rows
    assert len(view) == len(shown) == 2
    for agent, sessions, *figures in view:
        row = shown[agent]
        assert row["sessions"] == sessions
        got = [row[k].value for k in ("proc", "comp", "f1", "trigger", "verified")]
        assert got == pytest.approx(figures)
