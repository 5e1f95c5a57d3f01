"""Trigger figures as ProactBench defines them: SKIPPED triggers (beyond the end of the
dialogue) are not in N; the trigger score is pooled over triggers, not averaged over sessions.

Store `run-t` (agent `model-t`), by hand:
  d1: emergent PASS, recovery PASS, recovery SKIPPED   → session weighted 1.0
  d2: critical PASS, critical FAIL, emergent PARTIAL,
      emergent FAIL                                    → session weighted 1.5 / 4 = 0.375
  overall N = 6 judged: weighted (3 + 0.5) / 6 = 0.583333; pass 3/6 = 0.5
  recovery N = 1: pass 1.0 (before: 0.5, the SKIPPED one counted as a fail)
  mean over sessions (what `bench run` called the trigger score): (1 + 0.375) / 2 = 0.6875
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchpack.reports import stats
from benchpack.reports.api import ReportOptions, build_reports, run_query
from benchpack.runtime.runner import summarise
from benchpack.runtime.store import SessionRows, Store

SCORE = {"PASS": 1.0, "PARTIAL": 0.5, "FAIL": 0.0}
DIALOGUES = {"d1": [("emergent", "PASS"), ("recovery", "PASS"), ("recovery", "SKIPPED")],
             "d2": [("critical", "PASS"), ("critical", "FAIL"), ("emergent", "PARTIAL"),
                    ("emergent", "FAIL")]}


def _rows(sid: str, labels: list[tuple[str, str]]) -> list[tuple[Any, ...]]:
    return [("run-t", sid, 0, f"t{k}", typ, k + 1, "offline", "authored", "[]", "p", "pa", "f",
             "reply", lab, SCORE.get(lab), "why", None, None, None)
            for k, (typ, lab) in enumerate(labels)]


def build(path: Path) -> Path:
    store = Store(path)
    try:
        store.upsert_run({"run_id": "run-t", "agent": "model-t", "repeats": 1,
                          "pack_name": "fx", "config": {}, "status": "finished"})
        batch = []
        for sid, labels in DIALOGUES.items():
            judged = [SCORE[lab] for _, lab in labels if lab in SCORE]
            batch.append(SessionRows("run-t", sid, 0, {
                "run_id": "run-t", "session_id": sid, "repeat": 0, "name": sid,
                "protocol": "trigger_rubric", "agent": "model-t", "status": "finished",
                "triggers": len(labels), "trigger_score": sum(judged) / len(judged),
                "judge_errors": 0, "started_at": 0.0}, {"triggers": _rows(sid, labels)}))
        store.write_batch(batch)
    finally:
        store.close()
    return path


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("trig") / "bench.duckdb")


def _table(db: Path, name: str, i: int = 0) -> dict[Any, dict[str, Any]]:
    (res,) = build_reports(ReportOptions(db=db, names=[name], runs=["all"]))
    t = res.tables[i]
    keys = [c.key for c in t.columns]
    return {row[1]: dict(zip(keys, row, strict=True)) for row in t.rows}


def test_skipped_triggers_are_not_in_n(db: Path) -> None:
    rows = _table(db, "triggers")
    assert rows["recovery"]["n"] == 1 and rows["recovery"]["pass_rate"].value == 1.0
    assert rows["recovery"]["weighted"].value == 1.0
    assert rows["overall"]["n"] == 6
    assert rows["overall"]["weighted"].value == pytest.approx(3.5 / 6)
    view = dict((r[0], r[1:]) for r in run_query(
        db, "SELECT type, n, pass_rate, weighted_score FROM trigger_by_type").rows)
    assert view["recovery"] == (1, 1.0, 1.0)


def test_the_trigger_score_is_pooled_over_triggers_everywhere(db: Path) -> None:
    store = Store(db)
    try:
        s = summarise(store, "run-t", 2, {"run": 2}, 0, 1.0)
    finally:
        store.close()
    assert s.trigger_score == pytest.approx(3.5 / 6)  # before: 0.6875, the mean over sessions
    (res,) = build_reports(ReportOptions(db=db, names=["summary"], runs=["all"]))
    t = res.tables[1]
    cells = dict(zip([c.key for c in t.columns], t.rows[0], strict=True))
    assert cells["trigger"].value == pytest.approx(3.5 / 6)
    assert [c.title for c in t.columns if c.key == "trigger"] == ["trigger score"]


def _cluster_store(path: Path) -> Path:
    """Run `once`: 12 dialogues with 3 triggers each; run `thrice`: the same labels as three
    identical repeats of each dialogue. The repeats add no information about other dialogues,
    so the interval must not narrow."""
    store = Store(path)
    labels = ["PASS", "PARTIAL", "FAIL"]
    try:
        batch = []
        for run, repeats in (("once", 1), ("thrice", 3)):
            store.upsert_run({"run_id": run, "agent": run, "repeats": repeats,
                              "pack_name": "fx", "config": {}, "status": "finished"})
            for d in range(12):
                dialogue = [("emergent", labels[(d * 7 + k * (d % 3 + 1)) % 3]) for k in range(3)]
                for rep in range(repeats):
                    rows = [(run, f"d{d:02}", rep, *r[3:]) for r in _rows(f"d{d:02}", dialogue)]
                    batch.append(SessionRows(run, f"d{d:02}", rep, {
                        "run_id": run, "session_id": f"d{d:02}", "repeat": rep, "name": f"d{d}",
                        "protocol": "trigger_rubric", "agent": run, "status": "finished",
                        "started_at": 0.0}, {"triggers": rows}))
        store.write_batch(batch)
    finally:
        store.close()
    return path


def test_repeating_every_dialogue_does_not_narrow_the_trigger_ci(tmp_path: Path) -> None:
    db = _cluster_store(tmp_path / "bench.duckdb")
    (res,) = build_reports(ReportOptions(db=db, names=["triggers"], runs=["all"]))
    keys = [c.key for c in res.tables[0].columns]
    rows = {r[0]: dict(zip(keys, r, strict=True)) for r in res.tables[0].rows
            if r[1] == "overall"}
    once, thrice = rows["once"], rows["thrice"]
    assert (once["n"], thrice["n"]) == (36, 108)
    for figure in ("pass_rate", "weighted"):
        assert thrice[figure].value == pytest.approx(once[figure].value)
        assert thrice[figure].se == pytest.approx(once[figure].se)
        assert thrice[figure].clusters == once[figure].clusters
    # the weighted score's t interval rests on sessions only: identical
    assert (thrice["weighted"].low, thrice["weighted"].high) == \
        pytest.approx((once["weighted"].low, once["weighted"].high))
    # the pass rate's Clopper–Pearson runs over n / design effect (CR1: × G/(G − 1), 12
    # episodes): tripling every dialogue triples both, so the interval is that of the single
    # copy's own design effect (here below 1, which the report floors at 1 for the single
    # copy: wider, never narrower)
    p, se, n = once["pass_rate"].value, once["pass_rate"].se, 36
    n_eff = n / (se * se * 12 / 11 / (p * (1 - p) / n))
    low, high = stats.clopper_pearson(p * n_eff, n_eff)
    assert (thrice["pass_rate"].low, thrice["pass_rate"].high) == pytest.approx((low, high))
    assert thrice["pass_rate"].high - thrice["pass_rate"].low <= \
        once["pass_rate"].high - once["pass_rate"].low
    # treating the 108 triggers as independent items would be narrower still
    iid = stats.clopper_pearson(p * 108, 108)
    assert iid[1] - iid[0] < thrice["pass_rate"].high - thrice["pass_rate"].low


def _rejudged_store(path: Path, repeats: int) -> Path:
    """Run `src` and its re-judging `rj` over 20 dialogues of 3 triggers each, every dialogue
    judged the same way in each of `repeats` identical repeats."""
    store = Store(path)
    labels = ["FAIL", "PARTIAL", "PASS"]
    try:
        store.upsert_run({"run_id": "src", "agent": "m", "judge": "A", "repeats": repeats,
                          "pack_name": "fx", "config": {}, "status": "finished"})
        store.upsert_run({"run_id": "rj", "agent": "m", "judge": "B", "repeats": repeats,
                          "pack_name": "fx", "config": {"rejudge_of": "src",
                                                        "source_run": "src"},
                          "status": "finished"})
        batch = []
        for d in range(20):
            a = [labels[(d + k) % 3] for k in range(3)]
            b = [lab if (d * 3 + k) % 4 else labels[(d + k + 1) % 3] for k, lab in enumerate(a)]
            for run, labs in (("src", a), ("rj", b)):
                for rep in range(repeats):
                    rows = [(run, f"d{d:02}", rep, *r[3:])
                            for r in _rows(f"d{d:02}", [("critical", x) for x in labs])]
                    batch.append(SessionRows(run, f"d{d:02}", rep, {
                        "run_id": run, "session_id": f"d{d:02}", "repeat": rep, "name": f"d{d}",
                        "protocol": "trigger_rubric", "agent": "m", "status": "finished",
                        "started_at": 0.0}, {"triggers": rows}))
        store.write_batch(batch)
    finally:
        store.close()
    return path


def test_repeating_every_dialogue_does_not_narrow_the_kappa_ci(tmp_path: Path) -> None:
    def kappa(repeats: int) -> Any:
        db = _rejudged_store(tmp_path / f"r{repeats}.duckdb", repeats)
        (res,) = build_reports(ReportOptions(db=db, names=["agreement"], runs=["rj"]))
        t = res.tables[0]
        keys = [c.key for c in t.columns]
        row = next(dict(zip(keys, r, strict=True)) for r in t.rows if r[1] == "all")
        return row["items"], row["kappa_quadratic"]

    (n1, once), (n3, thrice) = kappa(1), kappa(3)
    assert (n1, n3) == (60, 180)
    assert thrice.value == pytest.approx(once.value)
    assert (thrice.low, thrice.high) == pytest.approx((once.low, once.high))


def test_cluster_kappa_normal_approximation_matches_its_bootstrap() -> None:
    """Above `exact_max` sessions κ's CI is the linearised normal approximation of the cluster
    bootstrap: it agrees with it to a fraction of the half-width, and duplicating every
    session's items leaves it exactly unchanged."""
    import random

    from benchpack.reports import stats

    rng = random.Random(7)
    clusters = []
    for _ in range(200):
        cells = [0] * 9
        bias = rng.random()
        for _ in range(rng.randint(1, 6)):
            a = rng.choices(range(3), [0.3, 0.3, 0.4])[0]
            b = a if rng.random() < 0.5 + 0.4 * bias else rng.randrange(3)
            cells[a * 3 + b] += 1
        clusters.append(cells)
    exact = stats.cluster_kappa_cis(clusters, 3, ("quadratic",), seed=1)[0]
    approx = stats.cluster_kappa_cis(clusters, 3, ("quadratic",), exact_max=50)[0]
    assert approx.method == "normal" and approx.estimate == pytest.approx(exact.estimate)
    half = (exact.high - exact.low) / 2
    assert abs(approx.low - exact.low) < 0.2 * half and abs(approx.high - exact.high) < 0.2 * half
    tripled = stats.cluster_kappa_cis([[3 * x for x in c] for c in clusters], 3,
                                      ("quadratic",), exact_max=50)[0]
    assert (tripled.low, tripled.high) == pytest.approx((approx.low, approx.high))
    # resampling the items one by one instead is narrower on these clustered data
    flat = [sum(c[i] for c in clusters) for i in range(9)]
    items = stats.kappa_cis([flat[0:3], flat[3:6], flat[6:9]], ("quadratic",), seed=1)[0]
    assert items.high - items.low < exact.high - exact.low


def test_headline_trigger_cell_is_the_triggers_reports_overall(tmp_path: Path, db: Path
                                                               ) -> None:
    """The headline (summary, `bench view`'s runs page) takes the trigger score from the
    triggers report's pooled overall figure: every field equal, whatever the headline computes
    it with (it skips the per-type figures it does not show)."""
    from benchpack.reports.access import open_store
    from benchpack.reports.builtin import ReportContext, headline_table

    for store in (db, _cluster_store(tmp_path / "c.duckdb")):
        (res,) = build_reports(ReportOptions(db=store, names=["triggers"], runs=["all"]))
        keys = [c.key for c in res.tables[0].columns]
        overall = {r[0]: dict(zip(keys, r, strict=True))["weighted"]
                   for r in res.tables[0].rows if r[1] == "overall"}
        with open_store(store) as con:
            runs = [r[0] for r in con.execute("SELECT run_id FROM runs ORDER BY run_id"
                                              ).fetchall()]
            t = headline_table(ReportContext(con, runs))
        col = [c.key for c in t.columns].index("trigger")
        assert {r[0]: r[col] for r in t.rows} == overall
        assert len(overall) == len(runs)


def test_cluster_kappa_from_a_numpy_array_is_from_lists() -> None:
    """κ's clusters handed over as the numpy array the judge pairs are read into (one
    session a row) give every figure the list of lists gives, to the bit: the bootstrap
    below `exact_max` clusters, the normal interval above, one cluster, none, a wrong width."""
    import random

    import numpy as np

    from benchpack.reports import stats

    rng = random.Random(3)
    for n in (0, 1, 2, 30, 300):
        clusters = [[rng.randint(0, 4) * (rng.random() < 0.6) for _ in range(9)]
                    for _ in range(n)]
        array = np.array(clusters, dtype=np.int64).reshape(n, 9)
        for exact_max in (None, 10, 1000):
            want = stats.cluster_kappa_cis(clusters, 3, resamples=200, seed=5,
                                           exact_max=exact_max)
            got = stats.cluster_kappa_cis(array, 3, resamples=200, seed=5,
                                          exact_max=exact_max)
            assert got == want, (n, exact_max)
    with pytest.raises(ValueError, match="flattened 3×3"):
        stats.cluster_kappa_cis(np.zeros((4, 4), dtype=np.int64), 3)
