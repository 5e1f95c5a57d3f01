"""Errored sessions carry the kind of their error. An error of the agent under test (a crash,
malformed output) is that agent's failure and scores the protocol's worst score; an error
outside it (infrastructure, simulator, judge) is excluded from the figures and counted beside
them. Before error kinds, every errored session was dropped, so crashing on hard tasks raised
an agent's scores."""

from __future__ import annotations

from pathlib import Path

import duckdb

from benchpack.compiler import compile_pack
from benchpack.runtime.runner import RunOptions, run_plan

ROOT = Path(__file__).resolve().parents[2]


def _plan(tmp_path: Path, pack: str) -> Path:
    out = tmp_path / "plan"
    assert compile_pack(ROOT / "taskpacks" / pack, out, use_cache=False).ok
    return out


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_crashing_agent_scores_zero_not_unknown(tmp_path: Path) -> None:
    db = tmp_path / "bench.duckdb"
    summary = run_plan(RunOptions(plan=_plan(tmp_path, "pharmacist-week"), agent="cmd:false",
                                  simulator="rules", judge="rules", db=db, progress=False,
                                  cache_dir=tmp_path / "cache"))
    assert summary.finished == 0 and summary.errors > 0
    kinds = _rows(db, "SELECT error_kind, count(*) FROM sessions WHERE status = 'error' "
                      "GROUP BY ALL")
    assert kinds == [("agent", summary.errors)]
    # the protocol's worst score, not NULL: PROC 0 on every errored intent-tracking session
    assert _rows(db, "SELECT count(*), count(proc), sum(proc) FROM sessions "
                     "WHERE status = 'error' AND intents > 0") == [(summary.errors,
                                                                    summary.errors, 0.0)]
    assert summary.proc == 0.0 and summary.comp == 0.0
    assert summary.excluded == {}


def test_a_crashed_trigger_session_fails_its_triggers(tmp_path: Path) -> None:
    """One session (4 repeats), four authored triggers, the agent crashes at the first: before,
    no trigger row was written and the run had no trigger score; now all four are FAIL."""
    db = tmp_path / "bench.duckdb"
    summary = run_plan(RunOptions(plan=_plan(tmp_path, "proact-quilt-show"), agent="cmd:false",
                                  judge="rules", db=db, progress=False,
                                  cache_dir=tmp_path / "cache"))
    assert _rows(db, "SELECT status, error_kind, triggers, trigger_score, count(*) FROM sessions "
                     "GROUP BY ALL") == [("error", "agent", 4, 0.0, 4)]
    assert _rows(db, "SELECT label, count(*), sum(score) FROM triggers GROUP BY ALL") == \
        [("FAIL", 16, 0.0)]
    assert summary.trigger_score == 0.0


def test_an_infrastructure_error_is_excluded_and_counted(tmp_path: Path) -> None:
    db = tmp_path / "bench.duckdb"
    summary = run_plan(RunOptions(plan=_plan(tmp_path, "proact-quilt-show"),
                                  agent="cmd:false", judge="rules", trigger_mode="bogus",
                                  db=db, progress=False, cache_dir=tmp_path / "cache"))
    assert _rows(db, "SELECT status, error_kind, trigger_score, count(*) FROM sessions "
                     "GROUP BY ALL") == [("error", "infrastructure", None, 4)]
    assert summary.trigger_score is None
    assert summary.excluded == {"infrastructure": 4} and summary.agent_errors == 0


def _schema_2_store(db: Path) -> None:
    """A store as benchpack wrote it before error kinds: one agent crash, one finished
    session, no `error_kind` column."""
    from benchpack.runtime.store import DDL

    con = duckdb.connect(str(db))
    con.execute(DDL.replace("    error_kind VARCHAR,\n", ""))
    con.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    con.execute("INSERT INTO runs (run_id, agent, repeats, pack_name) VALUES ('r', 'm', 1, 'p')")
    con.execute("INSERT INTO sessions (run_id, session_id, repeat, name, protocol, agent, "
                "status, proc, intents) VALUES ('r', 'a', 0, 'a', 'intent_tracking', 'm', "
                "'finished', 0.5, 2), ('r', 'b', 0, 'b', 'intent_tracking', 'm', 'error', "
                "NULL, 2)")
    con.close()


def test_a_schema_2_store_reads_with_unclassified_errors(tmp_path: Path) -> None:
    """Read-only (not migrated): its errors are unclassified, left out and counted."""
    from benchpack.reports.api import ReportOptions, build_reports

    db = tmp_path / "old.duckdb"
    _schema_2_store(db)
    (res,) = build_reports(ReportOptions(db=db, names=["proc-comp"], runs=["all"]))
    cells = dict(zip([c.key for c in res.tables[0].columns], res.tables[0].rows[0],
                     strict=True))
    assert cells["proc"].value == 0.5 and cells["excluded"] == "1 unclassified error"


def test_a_schema_2_store_migrates(tmp_path: Path) -> None:
    from benchpack.runtime.store import SCHEMA_VERSION, connect

    db = tmp_path / "old.duckdb"
    _schema_2_store(db)
    con = connect(db)
    try:
        assert con.execute("SELECT value FROM meta").fetchone() == (str(SCHEMA_VERSION),)
        assert con.execute("SELECT session_id, error_kind FROM sessions ORDER BY 1").fetchall() \
            == [("a", None), ("b", None)]
    finally:
        con.close()
