"""`bench rejudge`: re-judging finished runs from the store, with no agent or simulator call.

The four reference packs run with their scripted demo agents and the rules judges into one
store; re-judging with `rules` again must reproduce every stored decision (the reconstruction
of what the judge saw is exact), and scripted judges give hand-computed scores. Through the
fake OpenAI server: the agent and simulator routes get no request during a rejudge, the same
judge as the original is served entirely from the cache (identical prompts), a malformed
answer is retried once and then recorded as a judge error, and repeating a rejudge is free.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from click.testing import CliRunner
from fake_openai import FakeOpenAI, fake_openai_fixture, list_files_agent  # noqa: F401

from benchpack.cli import cli
from benchpack.compiler import compile_pack
from benchpack.runtime.rejudge import RejudgeOptions, RejudgeSummary, default_run_id, rejudge
from benchpack.runtime.runner import RunOptions, run_plan

ROOT = Path(__file__).resolve().parents[2]
PACKS = ROOT / "taskpacks"
DEMOS = {
    "pw": ("pharmacist-week", "demo/agent.yaml", None, 1),
    "mg": ("mussel-genome-search", "demo/agent.yaml", "demo/simulator.yaml", 1),
    "pq": ("proact-quilt-show", "demo/proactive_agent.yaml", None, 1),
    "claw": ("claw-lab-ops", "demo/agent.yaml", None, 2),
}
JUDGE_TABLES = {
    "checklist_results": "item_id, grader, score, weight, aspect, detail, error",
    "triggers": "trigger_id, type, turn, mode, response, label, score, rationale, evidence, "
                "quote_found, judge_error",
    "triples": "side, idx, head, relation, tail, matched, coverage, judge_error",
    "triple_support": "gt_idx, pred_idx",
}
SCORES = ("comp", "score", "passed", "recall", "\"precision\"", "f1", "triggers",
          "trigger_pass_rate", "trigger_score", "judge_errors", "status", "turns", "tool_calls")


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The four reference packs' demo runs (rules judges) in one store; tests copy it."""
    root = tmp_path_factory.mktemp("demo")
    db = root / "bench.duckdb"
    for run_id, (pack, agent, sim, repeats) in DEMOS.items():
        out = root / pack
        res = compile_pack(PACKS / pack, out, use_cache=False)
        assert res.ok, [d.format() for d in res.diagnostics]
        summary = run_plan(RunOptions(
            plan=out, agent=f"scripted:{PACKS / pack / agent}", db=db, run_id=run_id,
            simulator=f"scripted:{PACKS / pack / sim}" if sim else "rules", judge="rules",
            repeats=repeats, progress=False, cache_dir=root / "cache"))
        assert summary.errors == 0
    return db


@pytest.fixture
def store(demo_store: Path, tmp_path: Path) -> Path:
    db = tmp_path / "bench.duckdb"
    db.write_bytes(demo_store.read_bytes())
    return db


def query(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [tuple(r) for r in con.execute(sql, list(params)).fetchall()]
    finally:
        con.close()


def table(db: Path, name: str, run: str) -> list[tuple[Any, ...]]:
    return sorted(query(db, f"SELECT session_id, repeat, {JUDGE_TABLES[name]} FROM {name} "
                            "WHERE run_id = ?", run), key=repr)


def redo(db: Path, run: str, judge: str, tmp_path: Path, **kw: Any) -> RejudgeSummary:
    return rejudge(RejudgeOptions(run_id=run, judge=judge, db=db, progress=False,
                                  cache_dir=tmp_path / "cache", max_retries=0, **kw))


def write_script(path: Path, sessions: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump({"sessions": sessions}, sort_keys=False), encoding="utf-8")
    return f"scripted:{path}"


# --------------------------------------------------------------------------- reconstruction


def test_rules_rejudge_reproduces_every_stored_decision(store: Path, tmp_path: Path) -> None:
    for run in DEMOS:
        summary = redo(store, run, "rules", tmp_path)
        new = f"{run}+rejudge-rules"
        assert summary.run_id == new == default_run_id(run, "rules")
        assert summary.errors == 0 and summary.judge_calls == 0
        for name in JUDGE_TABLES:
            assert table(store, name, new) == table(store, name, run), (run, name)
        cols = ", ".join(SCORES)
        before = query(store, f"SELECT session_id, repeat, {cols} FROM sessions WHERE run_id = "
                              "? ORDER BY ALL", run)
        after = query(store, f"SELECT session_id, repeat, {cols} FROM sessions WHERE run_id = "
                             "? ORDER BY ALL", new)
        assert after == before and before
        # what the agent and the simulated user did is copied as it was
        for t in ("messages", "tool_calls", "turns", "stage_events"):
            n = f"SELECT count(*) FROM {t} WHERE run_id = ?"
            assert query(store, n, new) == query(store, n, run), t
        config = json.loads(query(store, "SELECT config FROM runs WHERE run_id = ?", new)[0][0])
        assert (config["rejudge_of"], config["source_run"], config["judge"]) == (run, run,
                                                                                  "rules")
    # intent statuses are interactive: not re-decided, only audited turn by turn
    assert query(store, "SELECT count(*), count(proc), count(intents) FROM sessions "
                        "WHERE run_id = 'pw+rejudge-rules'") == [(8, 0, 0)]
    assert query(store, "SELECT count(*) FROM intent_status WHERE run_id = 'pw+rejudge-rules'"
                 ) == [(0,)]
    checks = query(store, "SELECT kind, count(*), count(*) FILTER (WHERE original = decision) "
                          "FROM intent_checks WHERE run_id = 'pw+rejudge-rules' GROUP BY kind "
                          "ORDER BY kind")
    assert [k for k, *_ in checks] == ["clarification", "completion"]
    assert all(n > 0 and same == n for _, n, same in checks)
    # each completion check covers the intents still open in the original, from its statuses
    completed = query(store, "SELECT count(*) FROM intent_status WHERE run_id = 'pw' AND "
                             "status = 'completed' AND pooled_from IS NULL")[0][0]
    assert query(store, "SELECT count(*) FROM intent_checks WHERE run_id = 'pw+rejudge-rules' "
                        "AND kind = 'completion' AND original") == [(completed,)]


def test_rejudge_continues_and_guards_its_run_id(store: Path, tmp_path: Path) -> None:
    first = redo(store, "pq", "rules", tmp_path, new_run_id="pq-audit")
    assert (first.sessions_run, first.sessions_skipped_resume) == (4, 0)
    again = redo(store, "pq", "rules", tmp_path, new_run_id="pq-audit")
    assert (again.sessions_run, again.sessions_skipped_resume) == (0, 4)
    assert again.trigger_score == first.trigger_score
    with pytest.raises(ValueError, match="not a re-judging of `pq` by `scripted:"):
        redo(store, "pq", write_script(tmp_path / "j.yaml", {}), tmp_path,
             new_run_id="pq-audit")
    with pytest.raises(ValueError, match="would overwrite"):
        redo(store, "pq", "rules", tmp_path, new_run_id="pq")
    with pytest.raises(ValueError, match="no run `nope`"):
        redo(store, "nope", "rules", tmp_path)
    other = tmp_path / "other"
    assert compile_pack(PACKS / "claw-lab-ops", other, use_cache=False).ok
    with pytest.raises(ValueError, match="is not the one run `pq` ran"):
        redo(store, "pq", "rules", tmp_path, plan=other)
    # a rejudge of a rejudge reads the original's transcripts
    chained = redo(store, "pq-audit", "rules", tmp_path)
    config = json.loads(query(store, "SELECT config FROM runs WHERE run_id = ?",
                              chained.run_id)[0][0])
    assert (config["rejudge_of"], config["source_run"]) == ("pq-audit", "pq")


# --------------------------------------------------------------------------- scripted judges


def test_scripted_judges_give_hand_computed_scores(store: Path, tmp_path: Path) -> None:
    judge = write_script(tmp_path / "judge.yaml", {
        # checklist rubric items all NO (claw-lab-ops): rule items keep their stored results
        "lumora-reschedule": {"checklist": {"aiko-slot-free": 0, "ben-slot-free": 0,
                                            "reply-stale-reminder": 0}},
        "report-deadline-watch": {"checklist": {"prep-block-free": 0, "leave-collision": 0,
                                                "export-pointer": 0}},
        # trigger labels by id; r-sign-off has none: a judge error, never scored
        "artist-statement": {"triggers": {"e-dropoff": "PASS", "c-weight-limit": "PARTIAL",
                                          "r-form-done": "FAIL"}},
        # graph coverage: two GT triples covered, one malformed verdict (a judge error)
        "long-read-provider": {"graph": {0: {"kind": "direct", "support": [0]},
                                         1: {"kind": "collective", "support": [1, 2]},
                                         2: {"kind": "compositional", "support": [5]}},
                               "checklist": {"extraction-by-provider": 1,
                                             "chromosome-scale-data": 1, "within-budget": 0,
                                             "no-closed-provider": 1, "helixa-retention": 0,
                                             "transfer-notice": 0}},
    })
    for run in ("claw", "pq", "mg"):
        assert redo(store, run, judge, tmp_path, new_run_id=f"{run}-s").errors == 0

    # lumora: outcome weights 24, rubric 2+1+1 now 0 → 20/24; process all met
    # watch: outcome 14, rubric 2+2+1 now 0 → 9/14; outcome_weight 0.7, pass at 0.7
    rows = query(store, "SELECT name, repeat, score, passed, judge_errors FROM sessions WHERE "
                        "run_id = 'claw-s' ORDER BY name, repeat")
    want = {"lumora-reschedule": 0.7 * 20 / 24 + 0.3, "report-deadline-watch": 0.7 * 9 / 14 + 0.3}
    assert [(n, r) for n, r, *_ in rows] == [(n, r) for n in sorted(want) for r in (0, 1)]
    for name, _, score, passed, errors in rows:
        assert score == pytest.approx(want[name]) and passed and errors == 0
    assert query(store, "SELECT count(*) FROM checklist_results WHERE run_id = 'claw-s' AND "
                        "grader = 'rubric' AND score <> 0") == [(0,)]
    assert table(store, "checklist_results", "claw-s") != table(store, "checklist_results",
                                                                "claw")
    rules_before = [r for r in table(store, "checklist_results", "claw") if r[3] == "rule"]
    assert [r for r in table(store, "checklist_results", "claw-s") if r[3] == "rule"] \
        == rules_before

    # every quilt variant: PASS, PARTIAL, FAIL judged, r-sign-off a judge error
    rows = query(store, "SELECT trigger_score, trigger_pass_rate, triggers, judge_errors, extra "
                        "FROM sessions WHERE run_id = 'pq-s'")
    assert len(rows) == 4
    for score, pass_rate, n, errors, extra in rows:
        assert (score, pass_rate, n, errors) == (pytest.approx(0.5), pytest.approx(1 / 3), 4, 1)
        assert json.loads(extra)["triggers_judged"] == 3
    assert query(store, "SELECT trigger_id, label, score, judge_error IS NOT NULL FROM triggers "
                        "WHERE run_id = 'pq-s' AND session_id LIKE '%@V' ORDER BY turn") == [
        ("e-dropoff", "PASS", 1.0, False), ("c-weight-limit", "PARTIAL", 0.5, False),
        ("r-form-done", "FAIL", 0.0, False), ("r-sign-off", None, None, True)]

    # long-read-provider: 96 GT triples, 71 predicted; triple 2 failed → judged 95
    row = query(store, "SELECT recall, \"precision\", f1, judge_errors, extra, comp FROM "
                       "sessions WHERE run_id = 'mg-s' AND name = 'long-read-provider'")[0]
    assert row[0] == pytest.approx(2 / 95) and row[1] is None and row[2] is None
    assert row[3] == 1 and json.loads(row[4])["precision_lower_bound"] == pytest.approx(3 / 71)
    assert row[5] == pytest.approx(4 / 7)  # 3 of 6 rubric items, and the rule item pages-read
    assert query(store, "SELECT gt_idx, pred_idx FROM triple_support WHERE run_id = 'mg-s' "
                        "ORDER BY ALL") == [(0, 0), (1, 1), (1, 2)]
    camp = query(store, "SELECT recall, \"precision\", f1 FROM sessions WHERE run_id = 'mg-s' "
                        "AND name = 'august-day-camp'")[0]
    assert camp == (0.0, 0.0, 0.0)


# --------------------------------------------------------------------------- LLM judges


IDS = re.compile(r"- id `([^`]+)`")
RESPONSE = re.compile(r"<response>\n(.*?)\n</response>", re.DOTALL)


def _prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def judge_a(body: dict[str, Any]) -> str:
    """The original judge: every rubric item met, no intent completed, every trigger FAIL;
    it never answers a clarification check in JSON (judge errors: the user provides)."""
    text = _prompt(body)
    if "targeted clarification question" in _prompt({"messages": body["messages"][:1]}):
        return "I am not sure."
    if "<response>" in text:
        return json.dumps({"label": "FAIL", "rationale": "Nothing proactive.", "evidence": ""})
    ids = IDS.findall(text)
    if '"scores"' in text:
        return json.dumps({"scores": [{"id": i, "score": "YES", "reason": "ok"} for i in ids]})
    return json.dumps({"decisions": [{"id": i, "decision": "NO"} for i in ids]})


def judge_b(body: dict[str, Any]) -> str:
    """The new judge: rubric items NO except a prompt holding `MALFORMED_ID`, which it never
    answers in JSON; each first intent completed; triggers PASS quoting the response's first
    words."""
    text = _prompt(body)
    if body["messages"][-1]["role"] == "user" and "could not be used" in text:
        text = _prompt({"messages": body["messages"][:1]})
    found = RESPONSE.search(text)
    if found:
        quote = " ".join(found.group(1).split()[:6])
        return json.dumps({"label": "PASS", "rationale": "Anticipates the need.",
                           "evidence": quote})
    ids = IDS.findall(text)
    if MALFORMED_ID in ids:
        return "Looks fine to me!"
    if '"scores"' in text:
        return json.dumps({"scores": [{"id": i, "score": "NO", "reason": "no"} for i in ids]})
    return json.dumps({"decisions": [{"id": i, "decision": "YES" if k == 0 else "NO"}
                                     for k, i in enumerate(ids)]})


MALFORMED_ID = "brennan-first"


def simulator(body: dict[str, Any]) -> str:
    return "<message>\nOne more thing you should know before you go on.\n</message>"


def test_llm_rejudge_calls_only_the_judge_and_repeats_for_free(fake_openai: FakeOpenAI,
                                                               tmp_path: Path) -> None:
    fake_openai.route("agent-model", list_files_agent).route("judge-a", judge_a).route("judge-b", judge_b)
    fake_openai.route("sim-model", simulator)
    db = tmp_path / "bench.duckdb"
    plans = {}
    for pack in ("pharmacist-week", "proact-quilt-show"):
        plans[pack] = tmp_path / pack
        assert compile_pack(PACKS / pack, plans[pack], use_cache=False).ok
    common: dict[str, Any] = dict(db=db, progress=False, cache_dir=tmp_path / "cache",
                                  api_base=fake_openai.base_url, max_retries=0,
                                  judge="litellm:openai/judge-a")
    assert run_plan(RunOptions(plan=plans["pharmacist-week"], run_id="pw",
                               agent="litellm:openai/agent-model",
                               simulator="litellm:openai/sim-model", **common)).errors == 0
    assert run_plan(RunOptions(plan=plans["proact-quilt-show"], run_id="pq",
                               agent=f"scripted:{PACKS / 'proact-quilt-show' / DEMOS['pq'][1]}",
                               **common)).errors == 0
    live = tmp_path / "live"
    assert compile_pack(ROOT / "tests" / "fixtures" / "trigger_rubric" / "live_pack", live,
                        use_cache=False).ok
    assert run_plan(RunOptions(plan=live, run_id="live", trigger_mode="live",
                               agent="python:trigger_agents:recording_agent",
                               **common)).errors == 0
    assert MALFORMED_ID in {r[0] for r in query(db, "SELECT item_id FROM checklist_results "
                                                    "WHERE grader = 'rubric'")}

    def calls() -> dict[str, int]:
        out: dict[str, int] = {}
        for body in fake_openai.requests:
            out[str(body["model"])] = out.get(str(body["model"]), 0) + 1
        return out

    before = calls()
    kw: dict[str, Any] = dict(api_base=fake_openai.base_url)
    # the original judge again: every prompt is the one it was asked (checklist histories and
    # evidence, intent checks, offline and live trigger histories), so all from the cache
    for run in ("pw", "pq", "live"):
        same = redo(db, run, "litellm:openai/judge-a", tmp_path, **kw)
        assert same.judge_calls > 0 and same.judge_cache_hits == same.judge_calls
        assert same.run_id == f"{run}+rejudge-openai-judge-a"
        assert table(db, "triggers", run) == table(db, "triggers", same.run_id)
        assert table(db, "checklist_results", run) == table(db, "checklist_results",
                                                            same.run_id)
    assert calls() == before

    # a new judge: only its route is asked
    summaries = [redo(db, run, "litellm:openai/judge-b", tmp_path, **kw) for run in ("pw", "pq")]
    after = calls()
    assert {m: n - before.get(m, 0) for m, n in after.items() if n != before.get(m, 0)} \
        == {"judge-b": sum(s.judge_calls for s in summaries)}
    assert after["agent-model"] == before["agent-model"] and after["sim-model"] == \
        before["sim-model"]

    pw_b = "pw+rejudge-openai-judge-b"
    n_clarify, n_complete = (query(db, "SELECT count(*) FROM intent_checks WHERE run_id = ? AND "
                                       "kind = ?", pw_b, k)[0][0]
                             for k in ("clarification", "completion"))
    assert n_clarify > 0 and n_complete > 0
    # the malformed answer: asked, asked again with the parse error, then recorded
    rows = query(db, "SELECT item_id, score, error FROM checklist_results WHERE run_id = ? AND "
                     "grader = 'rubric' AND error IS NOT NULL", pw_b)
    assert rows and all(score is None and error.startswith("malformed output twice")
                        for _, score, error in rows)
    assert MALFORMED_ID in {r[0] for r in rows}
    # one batch (the items sharing brennan-first's evidence) failed: one retry, one error each
    purposes = dict(query(db, "SELECT purpose, count(*) FROM llm_calls WHERE run_id = ? AND "
                              "role = 'judge' GROUP BY purpose", pw_b))
    assert purposes["rubric:retry"] == 1 and purposes["rubric"] > 1
    assert len({r[0] for r in query(db, "SELECT session_id FROM checklist_results WHERE "
                                        "run_id = ? AND error IS NOT NULL", pw_b)}) == 1
    errors = query(db, "SELECT sum(judge_errors) FROM sessions WHERE run_id = ?", pw_b)[0][0]
    assert errors == len(rows)
    # judged rubric items NO: COMP is the rule items' share, never counting the errors as 0;
    # where the rule items met held before the agent acted (guards) and nothing else was
    # achieved, they count 0 and their rows say so (issue 25)
    known = query(db, "SELECT session_id, avg(CASE WHEN detail LIKE '%counted 0, no credit%' "
                      "THEN 0 ELSE score END) FROM checklist_results WHERE run_id = ? "
                      "AND score IS NOT NULL GROUP BY ALL ORDER BY ALL", pw_b)
    assert query(db, "SELECT session_id, comp FROM sessions WHERE run_id = ? AND comp IS NOT "
                     "NULL ORDER BY ALL", pw_b) == known
    # the audit: the new judge completes every turn's first open intent, the original none
    assert query(db, "SELECT count(*) FILTER (WHERE original), count(*) FILTER (WHERE decision) "
                     "> 0 FROM intent_checks WHERE run_id = ? AND kind = 'completion'",
                 pw_b) == [(0, True)]
    # where the original judge failed, the audit has no original decision to compare
    assert query(db, "SELECT kind, count(original), count(decision), count(judge_error) FROM "
                     "intent_checks WHERE run_id = ? GROUP BY kind ORDER BY kind", pw_b) == [
        ("clarification", 0, n_clarify, 0), ("completion", n_complete, n_complete, 0)]
    assert query(db, "SELECT count(decision), count(*) = count(judge_error) FROM intent_checks "
                     "WHERE run_id = 'pw+rejudge-openai-judge-a' AND kind = 'clarification'"
                 ) == [(0, True)]
    # triggers: PASS with a verified quote
    assert query(db, "SELECT DISTINCT label, quote_found FROM triggers WHERE run_id = "
                     "'pq+rejudge-openai-judge-b' AND label <> 'SKIPPED'") == [("PASS", True)]

    # the same rejudge under another id: nothing new is asked
    for run in ("pw", "pq"):
        again = redo(db, run, "litellm:openai/judge-b", tmp_path, new_run_id=f"{run}-again",
                     **kw)
        assert again.judge_cache_hits == again.judge_calls > 0
    assert calls() == after
    assert table(db, "checklist_results", "pw-again") == [
        r for r in table(db, "checklist_results", pw_b)]


# --------------------------------------------------------------------------- CLI


def test_cli_rejudge_then_agreement_report(store: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["rejudge", "pq", "--judge", "rules", "--as", "pq-cli", "--db",
                              str(store), "--quiet", "--json", "--cache-dir",
                              str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert (data["run_id"], data["rejudge_of"], data["finished"]) == ("pq-cli", "pq", 4)
    res = runner.invoke(cli, ["report", "agreement", "--run", "pq-cli", "--db", str(store),
                              "--format", "json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    first = report["tables"][0]
    assert first["title"].startswith("rules (pq) vs rules (pq-cli)")
    overall = next(r for r in first["rows"] if r["type"] == "all")
    assert (overall["items"], overall["exact"]) == (16, 1.0)
    res = runner.invoke(cli, ["rejudge", "nope", "--judge", "rules", "--db", str(store)])
    assert res.exit_code == 1 and "no run `nope`" in res.output
