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
from conftest import store_rows

ROOT = Path(__file__).resolve().parents[2]


def _plan(tmp_path: Path, pack: str) -> Path:
    out = tmp_path / "plan"
    assert compile_pack(ROOT / "taskpacks" / pack, out, use_cache=False).ok
    return out


def test_a_crashing_agent_scores_zero_not_unknown(tmp_path: Path) -> None:
    db = tmp_path / "bench.duckdb"
    summary = run_plan(RunOptions(plan=_plan(tmp_path, "pharmacist-week"), agent="cmd:false",
                                  simulator="rules", judge="rules", db=db, progress=False,
                                  cache_dir=tmp_path / "cache"))
    assert summary.finished == 0 and summary.errors > 0
    kinds = store_rows(db, "SELECT error_kind, count(*) FROM sessions WHERE status = 'error' "
                      "GROUP BY ALL")
    assert kinds == [("agent", summary.errors)]
    # the protocol's worst score, not NULL: PROC 0 on every errored intent-tracking session
    assert store_rows(db, "SELECT count(*), count(proc), sum(proc) FROM sessions "
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
    assert store_rows(db, "SELECT status, error_kind, triggers, trigger_score, count(*) FROM sessions "
                     "GROUP BY ALL") == [("error", "agent", 4, 0.0, 4)]
    assert store_rows(db, "SELECT label, count(*), sum(score) FROM triggers GROUP BY ALL") == \
        [("FAIL", 16, 0.0)]
    assert summary.trigger_score == 0.0


def test_an_infrastructure_error_is_excluded_and_counted(tmp_path: Path) -> None:
    db = tmp_path / "bench.duckdb"
    summary = run_plan(RunOptions(plan=_plan(tmp_path, "proact-quilt-show"),
                                  agent="cmd:false", judge="rules", trigger_mode="bogus",
                                  db=db, progress=False, cache_dir=tmp_path / "cache"))
    assert store_rows(db, "SELECT status, error_kind, trigger_score, count(*) FROM sessions "
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


# ------------------------------------------------------------ the agent's model endpoint fails


def test_endpoint_failures_are_the_endpoints_not_the_requests() -> None:
    """`is_endpoint_failure`: unreachable, overloaded, timing out (after every retry) or
    refusing credentials, account or model → the endpoint (infrastructure); refusing what
    was asked (context window, content policy, a malformed request) → the agent's request."""
    from benchpack.runtime.llmerrors import LLMError, is_endpoint_failure, is_retryable

    class Status(Exception):
        def __init__(self, status: int) -> None:
            super().__init__(f"HTTP {status}")
            self.status_code = status

    class AuthenticationError(Exception):
        pass

    class ContextWindowExceededError(Exception):
        pass

    for exc in (Status(503), Status(500), Status(429), TimeoutError("read timed out"),
                ConnectionResetError("reset by peer"), LLMError("unusable response", True)):
        assert is_retryable(exc) and is_endpoint_failure(exc, True), exc
    for exc in (Status(401), Status(403), Status(404), AuthenticationError("bad key"),
                Exception("Missing credentials. Please pass an `api_key`")):
        assert not is_retryable(exc) and is_endpoint_failure(exc, False), exc
    for exc in (Status(400), Status(422), ContextWindowExceededError("too long"),
                LLMError("content policy", False)):
        assert not is_retryable(exc) and not is_endpoint_failure(exc, False), exc


def test_a_provider_outage_is_infrastructure_and_resumes_to_the_same_scores(
        tmp_path: Path) -> None:
    """Issue 25: the agent's model answers HTTP 503 for a stretch of the run (no retries left):
    the sessions it ends are infrastructure errors — excluded, counted — never the agent's
    failures; their dependents are skipped; `--resume` with the endpoint back reruns them, and
    the run's figures equal those of a run that never saw the outage."""
    from fake_openai import FakeOpenAI, FakeReply, list_files_agent

    from benchpack.reports.api import ReportOptions, build_reports

    plan = _plan(tmp_path, "pharmacist-week")
    db = tmp_path / "bench.duckdb"
    outage = {"on": False, "seen": 0}

    def agent(body: dict[str, object]) -> object:
        outage["seen"] += 1
        if outage["on"] and 3 <= outage["seen"] <= 4:  # two calls into the run, for two calls
            return FakeReply(status=503, body={"error": {"message": "overloaded"}})
        return list_files_agent(body)  # type: ignore[arg-type]

    with FakeOpenAI() as server:
        server.route("agent-model", agent)
        opts = dict(plan=plan, agent="litellm:openai/agent-model", simulator="rules",
                    judge="rules", api_base=server.base_url, db=db, progress=False,
                    max_retries=0, cache_dir=tmp_path / "cache", use_cache=False)
        clean = run_plan(RunOptions(**opts, run_id="clean"))  # type: ignore[arg-type]
        assert clean.errors == 0 and clean.finished == 8
        outage.update(on=True, seen=0)
        hit = run_plan(RunOptions(**opts, run_id="hit"))  # type: ignore[arg-type]
        kinds = store_rows(db, "SELECT status, error_kind, count(*) FROM sessions WHERE "
                          "run_id = 'hit' AND status <> 'finished' GROUP BY ALL ORDER BY 1")
        # the sessions the outage ended (their dependents skipped): none the agent's
        ended = sum(n for status, _, n in kinds if status == "error")
        assert ended >= 1 and all(k == "infrastructure" for st, k, _ in kinds if st == "error")
        assert hit.agent_errors == 0 and hit.excluded.get("infrastructure") == ended
        err = store_rows(db, "SELECT error FROM sessions WHERE run_id = 'hit' AND status = 'error'")
        assert "model endpoint failed" in str(err[0][0]) and "503" in str(err[0][0])
        # the finished sessions scored as they did without the outage; none scored 0 for it
        same = store_rows(db, """SELECT count(*) FROM sessions h JOIN sessions c USING (session_id)
            WHERE h.run_id = 'hit' AND c.run_id = 'clean' AND h.status = 'finished'
              AND h.proc IS NOT DISTINCT FROM c.proc AND h.comp IS NOT DISTINCT FROM c.comp""")
        done = store_rows(db, "SELECT count(*) FROM sessions WHERE run_id = 'hit' "
                         "AND status = 'finished'")
        assert same == done and 0 < done[0][0] < 8
        inv = build_reports(ReportOptions(db=db, names=["inventory"], runs=["hit"]))[0]
        cells = dict(zip([c.key for c in inv.tables[0].columns], inv.tables[0].rows[0],
                         strict=True))
        assert cells["agent_errors"] == 0 and cells["excluded"] == 8 - done[0][0]
        # the endpoint is back: --resume reruns what the outage ended or skipped
        outage["on"] = False
        resumed = run_plan(RunOptions(**opts, run_id="hit", resume=True))  # type: ignore[arg-type]
        assert resumed.errors == 0
    figures = store_rows(db, """SELECT run_id, avg(proc), avg(comp), count(*) FROM sessions
        WHERE status = 'finished' GROUP BY run_id ORDER BY run_id""")
    assert figures[0][1:] == figures[1][1:] and figures[0][3] == 8, figures
