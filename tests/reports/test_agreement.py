"""Judge audits and swaps: human ratings import, the agreement report and its views, on
hand-made stores whose figures are computed by hand below.

- Judge vs judge: run `orig` (judge `judge-x`) and its rejudge `swap` (`judge-y`) label 45
  trigger points so that the confusion matrix is DESIGN.md's [[8,2,0],[1,6,3],[3,7,15]]
  (rows orig, FAIL/PARTIAL/PASS): κ 0.45, κ_lin 0.52, κ_quad 0.59, exact 29/45 = 64.4 %,
  within-one 42/45 = 93.3 %. One more trigger has a judge error in `swap` (counted, left
  out) and one was skipped (not an item at all).
- Judge vs humans: five items rated by 1–4 raters (see `RATINGS`); consensus = lower median.
- Rank stability: three agents whose COMP is re-judged: (0.9, 0.6, 0.3) → (0.5, 0.7, 0.2)
  swaps the top two, ρ = 1 − 6·(1 + 1)/(3·8) = 0.5.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.reports import stats
from benchpack.reports.api import ReportOptions, build_reports, run_query
from benchpack.reports.model import Estimate, ReportResult, Table
from benchpack.reports.ratings import RatingsError, import_ratings
from benchpack.runtime.store import SessionRows, Store, connect

LABELS = ("FAIL", "PARTIAL", "PASS")
DESIGN = [[8, 2, 0], [1, 6, 3], [3, 7, 15]]
SID = "session.p.ep.s1"
TYPES = ("emergent", "critical", "recovery")


def _run(store: Store, run_id: str, agent: str, judge: str, created: float,
         rejudge_of: str | None = None) -> None:
    config: dict[str, Any] = {"judge": judge}
    if rejudge_of:
        config.update(rejudge_of=rejudge_of, source_run=rejudge_of)
    store.upsert_run({"run_id": run_id, "created_at": created, "updated_at": created,
                      "plan_path": "build", "pack_name": "p", "agent": agent, "judge": judge,
                      "repeats": 1, "config": config, "status": "finished"})


def _session(store: Store, run_id: str, sid: str, agent: str, tables: dict[str, Any],
             **cols: Any) -> None:
    session = {"run_id": run_id, "session_id": sid, "repeat": 0, "fingerprint": "f",
               "name": sid.rsplit(".", 1)[-1], "protocol": "trigger_rubric", "agent": agent,
               "status": "finished", "judge_errors": 0, **cols}
    prefix = (run_id, sid, 0)
    store.write_now(SessionRows(run_id, sid, 0, session,
                                {t: [(*prefix, *r) for r in rows] for t, rows in tables.items()}))


def _trigger(tid: str, kind: str, label: str | None, error: str | None = None
             ) -> tuple[Any, ...]:
    score = {"PASS": 1.0, "PARTIAL": 0.5, "FAIL": 0.0}.get(label or "")
    return (tid, kind, 1, "offline", "authored", "[]", "p", "pa", "f", "the answer", label,
            score, "r", "", None, error)


def design_pairs() -> list[tuple[str, str]]:
    return [(LABELS[i], LABELS[j]) for i in range(3) for j in range(3)
            for _ in range(DESIGN[i][j])]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """`orig` and its rejudge `swap`: the DESIGN.md matrix over 45 triggers of one session."""
    path = tmp_path / "bench.duckdb"
    store = Store(path)
    _run(store, "orig", "model-a", "judge-x", 1.0)
    _run(store, "swap", "model-a", "judge-y", 2.0, rejudge_of="orig")
    pairs = design_pairs()
    orig = [_trigger(f"t{k}", TYPES[k % 3], a) for k, (a, _) in enumerate(pairs)]
    swap = [_trigger(f"t{k}", TYPES[k % 3], b) for k, (_, b) in enumerate(pairs)]
    orig += [_trigger("t-err", "critical", "PASS"), _trigger("t-skip", "recovery", "SKIPPED")]
    swap += [_trigger("t-err", "critical", None, "malformed output twice"),
             _trigger("t-skip", "recovery", "SKIPPED")]
    _session(store, "orig", SID, "model-a", {"triggers": orig})
    _session(store, "swap", SID, "model-a", {"triggers": swap})
    store.close()
    return path


def report(db: Path, runs: list[str], **kw: Any) -> ReportResult:
    (res,) = build_reports(ReportOptions(db=db, names=["agreement"], runs=runs, **kw))
    return res


def rows_of(table: Table) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for row in table.rows:
        cells = {c.key: v for c, v in zip(table.columns, row, strict=True)}
        out[(cells["kind"], cells["type"])] = cells
    return out


# --------------------------------------------------------------------------- judge vs judge


def test_judge_swap_reproduces_the_design_matrix(db: Path) -> None:
    res = report(db, ["swap"])  # a rejudge alone is compared with the run it re-judged
    (pair, stability) = res.tables
    assert pair.title == "judge-x (orig) vs judge-y (swap) on the dialogues of orig"
    overall = rows_of(pair)[("trigger", "all")]
    assert overall["items"] == 45 and overall["unjudged"] == 1
    assert overall["confusion"] == "8 2 0 / 1 6 3 / 3 7 15"
    assert overall["exact"] == pytest.approx(29 / 45) and round(100 * overall["exact"], 1) == 64.4
    assert round(100 * overall["within_one"], 1) == 93.3
    kappas: list[Estimate] = [overall["kappa"], overall["kappa_linear"],
                              overall["kappa_quadratic"]]
    assert [round(k.value or 0, 2) for k in kappas] == [0.45, 0.52, 0.59]
    for k in kappas:  # all 45 items come from one dialogue: the CI resamples dialogues
        # (sessions), and one says nothing about the variation between them
        assert k.n == 45 and k.low is None and k.high is None
    assert overall["alpha"].value == pytest.approx(stats.krippendorff_alpha(
        [list(p) for p in design_pairs()], "ordinal", categories=list(LABELS)), abs=1e-12)
    assert overall["alpha"].low is None and overall["alpha"].n == 1  # one dialogue, as for κ
    # per type: the items split in three, and the per-type tables add up
    per_type = [rows_of(pair)[("trigger", t)] for t in TYPES]
    assert sum(r["items"] for r in per_type) == 45
    assert rows_of(pair)[("trigger", "critical")]["unjudged"] == 1
    # the same figures whichever way the pair is selected
    both = report(db, ["orig", "swap"]).tables[0]
    assert rows_of(both)[("trigger", "all")]["confusion"] == "8 2 0 / 1 6 3 / 3 7 15"
    assert "Needs the re-judged runs of at least two agents" in " ".join(stability.notes)


def test_judge_pairs_view_reaches_bench_query(db: Path) -> None:
    res = run_query(db, "SELECT label_a, label_b, count(*) FROM judge_pairs WHERE run_a = 'orig' "
                        "AND run_b = 'swap' GROUP BY ALL")
    counts = {(a, b): n for a, b, n in res.rows}
    assert counts[("FAIL", "FAIL")] == 8 and counts[("PASS", "PARTIAL")] == 7
    assert counts[("PASS", None)] == 1 and sum(counts.values()) == 46
    lineage = run_query(db, "SELECT run_id, rejudge_of, source_run FROM run_lineage ORDER BY 1")
    assert lineage.rows == [("orig", None, "orig"), ("swap", "orig", "orig")]


def test_runs_of_different_dialogues_are_not_compared(tmp_path: Path) -> None:
    path = tmp_path / "bench.duckdb"
    store = Store(path)
    for k, run in enumerate(("a", "b")):
        _run(store, run, f"model-{run}", "judge-x", float(k))
        _session(store, run, SID, f"model-{run}", {"triggers": [_trigger("t0", "critical",
                                                                         "PASS")]})
    store.close()
    res = report(path, ["a", "b"])
    assert not [t for t in res.tables if "vs" in t.title]
    assert "None of these runs judged the same dialogues" in res.notes[0]


# --------------------------------------------------------------------------- rank stability


def test_rank_stability_over_three_agents(tmp_path: Path) -> None:
    path = tmp_path / "bench.duckdb"
    store = Store(path)
    before = {"model-a": 0.9, "model-b": 0.6, "model-c": 0.3}
    after = {"model-a": 0.5, "model-b": 0.7, "model-c": 0.2}
    for k, agent in enumerate(before):
        _run(store, f"o{k}", agent, "judge-x", float(k))
        _run(store, f"r{k}", agent, "judge-y", 10.0 + k, rejudge_of=f"o{k}")
        _session(store, f"o{k}", SID, agent, {}, comp=before[agent])
        _session(store, f"r{k}", SID, agent, {}, comp=after[agent])
    store.close()
    res = report(path, ["r0", "r1", "r2"])
    stability = res.tables[-1]
    assert stability.title.startswith("Rank stability")
    (row,) = stability.rows
    cells = {c.key: v for c, v in zip(stability.columns, row, strict=True)}
    assert (cells["judges"], cells["figure"], cells["agents"]) == ("judge-x → judge-y", "COMP",
                                                                     3)
    assert cells["rho"] == pytest.approx(0.5)
    assert cells["before"] == "model-a 90.0 > model-b 60.0 > model-c 30.0"
    assert cells["after"] == "model-b 70.0 > model-a 50.0 > model-c 20.0"
    # the original runs and their rejudges are paired whatever else is selected
    assert report(path, ["all"]).tables[-1].rows[0][3] == pytest.approx(0.5)


# --------------------------------------------------------------------------- human ratings


RATINGS = """session,repeat,item,rater,label,confidence
s1,0,t0,A,Pass,5
s1,0,t0,B,PASS,4
s1,0,t0,C,Partial,
{sid},0,t1,A,fail,
{sid},0,t1,B,1,
s1,,t2,A,0.5,
s1,0,t2,C,partial,
s1,0,t3,A,Fail,
s1,0,t4,A,Pass,
s1,0,t4,B,Fail,
s1,0,t4,C,Partial,
s1,0,t4,D,pass,
"""
"""Consensus (lower median): t0 PASS; t1 FAIL (tie, FAIL/PASS); t2 PARTIAL; t3 FAIL (one
rater); t4 PARTIAL (tie, PARTIAL/PASS)."""
JUDGED = {"t0": "PASS", "t1": "FAIL", "t2": "PASS", "t3": "PASS", "t4": "PARTIAL"}


@pytest.fixture
def rated(tmp_path: Path) -> Path:
    """Run `orig` judging t0–t4 as `JUDGED`, with `RATINGS` imported."""
    path = tmp_path / "bench.duckdb"
    store = Store(path)
    _run(store, "orig", "model-a", "judge-x", 1.0)
    _run(store, "swap", "model-a", "judge-y", 2.0, rejudge_of="orig")
    for run in ("orig", "swap"):
        _session(store, run, SID, "model-a", {"triggers": [
            _trigger(t, "critical", label) for t, label in JUDGED.items()]})
    store.close()
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(RATINGS.format(sid=SID), encoding="utf-8")
    con = connect(path)
    try:
        result = import_ratings(con, ratings, "swap")  # stored under the source run
    finally:
        con.close()
    assert (result.run_id, result.imported, result.replaced, result.raters) == ("orig", 12, 0,
                                                                                4)
    assert result.by_kind == {"trigger": 12}
    return path


def test_consensus_is_the_lower_median_with_ties_flagged(rated: Path) -> None:
    res = run_query(rated, "SELECT item_id, raters, label, tie FROM human_consensus ORDER BY 1")
    assert res.rows == [("t0", 3, "PASS", False), ("t1", 2, "FAIL", True),
                        ("t2", 2, "PARTIAL", False), ("t3", 1, "FAIL", False),
                        ("t4", 4, "PARTIAL", True)]
    pairs = run_query(rated, "SELECT run_id, item_id, human_label, judge_label FROM human_pairs "
                             "WHERE run_id = 'swap' ORDER BY 2")
    assert [r[2:] for r in pairs.rows] == [("PASS", "PASS"), ("FAIL", "FAIL"),
                                           ("PARTIAL", "PASS"), ("FAIL", "PASS"),
                                           ("PARTIAL", "PARTIAL")]


def test_judge_against_human_consensus(rated: Path) -> None:
    res = report(rated, ["orig"], humans=True, min_raters=2)
    table, raters, _ppi = res.tables
    row = rows_of(table)[("trigger", "all")]
    # items t0 t1 t2 t4: humans (rows) PASS FAIL PARTIAL PARTIAL vs judge PASS FAIL PASS PARTIAL
    assert row["confusion"] == "1 0 0 / 0 1 1 / 0 0 1"
    assert (row["items"], row["ratings"], row["ties"]) == (4, 11, 2)
    assert row["exact"] == pytest.approx(3 / 4) and row["within_one"] == pytest.approx(1.0)
    # by hand: p_o = 3/4, p_e = (1·1 + 2·1 + 1·2)/16 → κ = 7/11; linear 5/7; quadratic 0.8
    assert row["kappa"].value == pytest.approx(7 / 11)
    assert row["kappa_linear"].value == pytest.approx(5 / 7)
    assert row["kappa_quadratic"].value == pytest.approx(0.8)
    humans = [["PASS", "PASS", "PARTIAL"], ["FAIL", "PASS"], ["PARTIAL", "PARTIAL"],
              ["PASS", "FAIL", "PARTIAL", "PASS"]]
    judge = ["PASS", "FAIL", "PASS", "PARTIAL"]
    assert row["alpha_humans"].value == pytest.approx(
        stats.krippendorff_alpha(humans, "ordinal", categories=list(LABELS)))
    assert row["alpha_all"].value == pytest.approx(stats.krippendorff_alpha(
        [[*u, j] for u, j in zip(humans, judge, strict=True)], "ordinal",
        categories=list(LABELS)))
    # every item comes from one dialogue: α's CI resamples sessions, and one says nothing
    assert row["alpha_humans"].low is None and row["alpha_all"].high is None
    # every rater, rating by rating against the judge (t3 left out: one rating): A agrees on
    # t0 t1 of t0 t1 t2 t4, B on t0 of t0 t1 t4, C on t4 of t0 t2 t4, D on none of t4
    per = {r[0]: tuple(r[2:4]) for r in raters.rows}
    assert per == {"A": (4, 0.5), "B": (3, pytest.approx(1 / 3)), "C": (3, pytest.approx(1 / 3)),
                   "D": (1, 0.0)}
    # with one rating enough, t3 (human FAIL, judge PASS) joins
    one = rows_of(report(rated, ["orig"], humans=True).tables[0])[("trigger", "all")]
    assert one["items"] == 5 and one["confusion"] == "1 0 1 / 0 1 1 / 0 0 1"
    # a rejudge of the same dialogues is compared with the same ratings
    assert rows_of(report(rated, ["swap"], humans=True, min_raters=2).tables[0])[
        ("trigger", "all")]["items"] == 4


def test_import_reports_every_bad_row_and_imports_nothing(rated: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "session,repeat,item,rater,label,confidence\n"
        "s1,0,t0,E,Pass,4\n"
        "s1,0,t9,E,Pass,\n"
        "s-1,0,t0,E,Pass,\n"
        "s1,3,t0,F,Pass,\n"
        "s1,0,t0,E,Fail,\n"
        "s1,0,t1,E,Maybe,\n"
        "s1,0,t1,,Pass,\n"
        "s1,0,t2,E,Pass,high\n"
        "s1,x,t2,G,Pass,\n"
        "s1,0,t2,G\n", encoding="utf-8")
    con = connect(rated)
    try:
        with pytest.raises(RatingsError) as err:
            import_ratings(con, bad, "orig")
        assert con.execute("SELECT count(*) FROM human_ratings").fetchone() == (12,)
    finally:
        con.close()
    assert [p.format() for p in err.value.problems] == [
        f"{bad}:3: no judged trigger id `t9` in `{SID}` (repeat 0) (known: t0, t1, t2, t3, t4)",
        f"{bad}:4: no finished session `s-1` in run `orig` (hint: did you mean `s1`?)",
        f"{bad}:5: session `s1` has no finished repeat 3 in run `orig` (repeats: 0)",
        f"{bad}:6: trigger `t0` of `{SID}` (repeat 0) is rated twice by `E` (first at line 2)",
        f"{bad}:7: a trigger rating must be Pass, Partial or Fail (or 1, 0.5, 0), got \"Maybe\"",
        f"{bad}:8: `rater` is empty",
        f"{bad}:9: `confidence` must be a number, got \"high\"",
        f"{bad}:10: `repeat` must be a whole number ≥ 0, got \"x\"",
        f"{bad}:11: 4 values for 6 columns"]


def test_import_jsonl_with_renamed_fields_replaces_earlier_ratings(rated: Path,
                                                                   tmp_path: Path) -> None:
    """Rows shaped like ProactBench's human-eval files (annotator_id, score, rationale …)."""
    path = tmp_path / "human.jsonl"
    rows = [{"annotator_id": "A", "session": "s1", "item_id": "t0", "score": "Fail",
             "rationale": "Restates the request.", "confidence": 4, "time_spent_seconds": 90},
            {"annotator_id": "Z", "session": SID, "repeat": 0, "item_id": "t2", "score": 0.5,
             "kind": "trigger"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    con = connect(rated)
    try:
        result = import_ratings(con, path, "orig", fields={"rater": "annotator_id"})
        assert (result.imported, result.replaced, result.raters) == (2, 1, 2)
        got = con.execute("SELECT rater, label, score, rationale, confidence, source FROM "
                          "human_ratings WHERE item_id = 't0' AND rater = 'A'").fetchall()
        assert got == [("A", "FAIL", 0.0, "Restates the request.", 4.0, "human.jsonl:1")]
        broken = tmp_path / "broken.jsonl"
        broken.write_text('{"annotator_id": "A", "session": "s1", "item_id": "t0"}\n'
                          '[1, 2]\n{"annotator_id": \n', encoding="utf-8")
        with pytest.raises(RatingsError) as err:
            import_ratings(con, broken, "orig", fields={"rater": "annotator_id"})
        messages = [p.format() for p in err.value.problems]
        assert messages[0].startswith(f"{broken}:1: no `label` or `score` key for the label")
        assert messages[1:] == [f"{broken}:2: each line must be one JSON object",
                                f"{broken}:3: invalid JSON: Expecting value at column 18"]
        with pytest.raises(ValueError, match="unknown rating field"):
            import_ratings(con, path, "orig", fields={"annotator": "x"})
        with pytest.raises(ValueError, match="no run `nope`"):
            import_ratings(con, path, "nope")
    finally:
        con.close()


def test_cli_ratings_import_then_agreement_report(rated: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    bad = tmp_path / "bad.csv"
    bad.write_text("session,item,who,label\ns1,t0,A,Pass\ns1,t7,B,Pass\n", encoding="utf-8")
    res = runner.invoke(cli, ["ratings", "import", str(bad), "--run", "orig", "--db",
                              str(rated)])
    assert res.exit_code == 1
    assert (f"{bad}:1: no `rater` or `annotator_id` or `annotator` column for the rater (hint: "
            "name the column with `--field rater=COLUMN`)") in res.output
    res = runner.invoke(cli, ["ratings", "import", str(bad), "--run", "orig", "--db",
                              str(rated), "--rater-field", "who"])
    assert res.exit_code == 1
    assert f"{bad}:3: no judged trigger id `t7`" in res.output
    assert "1 problem; nothing imported" in res.output
    good = tmp_path / "good.csv"
    good.write_text("session,item,who,label\ns1,t3,B,Fail\n", encoding="utf-8")
    res = runner.invoke(cli, ["ratings", "import", str(good), "--run", "orig", "--db",
                              str(rated), "--field", "rater=who"])
    assert res.exit_code == 0, res.output
    assert "1 ratings (1 trigger) by 1 rater(s) for run orig" in res.output
    res = runner.invoke(cli, ["report", "agreement", "--humans", "--min-raters", "2", "--run",
                              "swap", "--db", str(rated), "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    overall = next(r for r in data["tables"][0]["rows"] if r["type"] == "all")
    assert overall["items"] == 5  # t3 now has two ratings (FAIL, FAIL)


# --------------------------------------------------------------------------- fast bootstrap


def test_bootstrap_counts_resamples_items_like_bootstrap_ci() -> None:
    """The count-based bootstrap the report uses draws the same distribution as resampling the
    45 items one by one (`bootstrap_ci`): the same κ, intervals within Monte Carlo error."""
    flat = [c for row in DESIGN for c in row]
    cells = [i for i, c in enumerate(flat) for _ in range(c)]

    def kappa(counts: list[int]) -> float | None:
        return stats.cohen_kappa([counts[i * 3:(i + 1) * 3] for i in range(3)], "quadratic")

    seen: list[list[int]] = []

    def record(counts: list[int]) -> float:
        seen.append(counts)
        return 0.0

    fast, _ = stats.bootstrap_counts(flat, [kappa, record], resamples=4000, seed=7)
    slow = stats.bootstrap_ci(cells, lambda s: kappa([s.count(i) for i in range(9)]),
                              resamples=4000, seed=7)
    assert fast.estimate == slow.estimate == pytest.approx(0.59, abs=0.005)
    assert fast.n_units == 45 and fast.low is not None and fast.high is not None
    assert abs(fast.low - (slow.low or 0)) < 0.04 and abs(fast.high - (slow.high or 0)) < 0.04
    resampled = seen[:-1]  # the last call is the estimate on the original counts
    assert len(resampled) == 4000 and all(sum(c) == 45 for c in resampled)
    means = [sum(c[i] for c in resampled) / 4000 for i in range(9)]
    assert means == pytest.approx(flat, abs=0.25)  # each cell's expected count is its own
    assert all(c[2] == 0 for c in resampled)  # an empty cell is never drawn
    again = stats.bootstrap_counts(flat, [kappa], resamples=4000, seed=7)[0]
    assert (again.low, again.high) == (fast.low, fast.high)
    assert stats.bootstrap_counts([0, 0], [kappa])[0].estimate is None
    with pytest.raises(ValueError):
        stats.bootstrap_counts([1, -1], [kappa])
