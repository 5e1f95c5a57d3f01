"""Issue 13 item 3: ProactBench's human-agreement analysis from the released files as they are
(`bench ratings import --format proactbench --items sample_items.json RESULTS_DIR`, then
`bench report agreement --humans --consensus majority`).

What the release computes (dataset/human_eval/analyze_results.py, read for the method): per
trigger type, Krippendorff's α (ordinal) among all raters over the items with ≥ 2 ratings;
the majority-vote consensus of every rated item (ties: Partial, then Pass, then Fail) against
the judge's label as a 3×3 confusion matrix (rows humans) and Cohen's κ **unweighted** — the
released analysis_stats.json applies no rater exclusion and no ≥ 3-ratings rule (its per-type
n_ratings sum to all 275 ratings, its matrices to all 59 rated items).

Fixture tests/fixtures/proactbench/human_eval_study (ours, in the release's shapes): 12 items,
4 raters, 25 ratings; E7 is unrated. Hand computations:

- EMERGENT, majority consensus vs judge: E1 (Pass, Pass), E2 (Fail, Fail), E3 Pass/Fail/Partial
  → tie → Partial (judge Partial), E4 Fail/Pass/Pass/Partial → Pass (judge Pass), E5 Pass/Fail
  → tie → Pass (judge Fail), E6 one rating Partial (judge Partial). Matrix rows F/Pa/P:
  [[1,0,0],[0,2,0],[1,0,2]]: p_o = 5/6, p_e = (1·2 + 2·2 + 3·2)/36 = 1/3, κ = 0.75.
  The median consensus differs on E4 (→ Partial, a tie) and E5 (→ Fail): [[2,0,0],[0,2,1],[0,0,1]].
  α over E1–E5 (15 pairable values, n_F 5, n_Pa 3, n_P 7): δ²(F,Pa) = 4² = 16,
  δ²(Pa,P) = 5² = 25, δ²(F,P) = (6 + 3)² = 81; coincidences o_FPa 11/6, o_PaP 7/6, o_FP 13/6:
  α = 1 − 14 · 2(11/6·16 + 7/6·25 + 13/6·81) / 2(5·3·16 + 3·7·25 + 5·7·81) = 1 − 6552/7200 = 0.09.
- CRITICAL: C1 Pass/Fail (tie → Pass, judge Pass), C2 Fail×3 (Fail), C3 Pass×2 (Pass): κ = 1
  (the median would say Fail on C1). α over C1 (F, P), C2 (F, F, F), C3 (P, P): n_F 4, n_P 3,
  n = 7, δ²(F,P) = 3.5² = 12.25, o_FP = 1: α = 1 − 6 · 2·12.25 / (2·4·3·12.25) = 0.5.
- RECOVERY: R1 (Partial, Partial), R2 (Pass, Fail): p_o = 1/2, p_e = 1/4, κ = 1/3; no item has
  two ratings, so α is undefined (shown as –, never 0).
"""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchpack.cli.main import cli

FIX = Path(__file__).parent / "fixtures" / "proactbench" / "human_eval_study"
# BENCH_PEER_DATA (as in tests/importers): sample_items.json is not in the shared peer-data, so the
# full reproduction runs only against a copied tree that holds it next to the released results.
PEER = (Path(os.environ.get("BENCH_PEER_DATA", "/work/shared/peer-data")) / "proactbench" / "dataset"
        / "human_eval")
SAMPLE = PEER / "sample_items.json"


def bench(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def imported(tmp: Path, results: Path = FIX / "results", items: Path = FIX / "sample_items.json"
             ) -> Path:
    db = tmp / "s.duckdb"
    r = bench("ratings", "import", results, "--format", "proactbench", "--items", items,
              "--db", db)
    assert r.exit_code == 0, r.output
    return db


def agreement(db: Path, *extra: str) -> dict[str, dict[str, Any]]:
    r = bench("report", "agreement", "--humans", "--db", db, "--run", "proactbench-human-eval",
              "--format", "json", *extra)
    assert r.exit_code == 0, r.output
    return {row["type"]: row for row in json.loads(r.output)["tables"][0]["rows"]}


def est(cell: Any) -> float | None:
    return cell["value"] if isinstance(cell, dict) else cell


def test_items_file_gives_the_judge_labels_and_types_without_any_run(tmp_path: Path) -> None:
    r = bench("ratings", "import", FIX / "results", "--format", "proactbench", "--items",
              FIX / "sample_items.json", "--db", tmp_path / "s.duckdb")
    assert r.exit_code == 0, r.output
    assert "25 ratings (25 trigger) by 4 rater(s) for run proactbench-human-eval" in r.output
    assert "12 items" in r.output  # the items run: every sampled item, rated or not


def test_released_method_majority_consensus_unweighted_kappa(tmp_path: Path) -> None:
    rows = agreement(imported(tmp_path), "--consensus", "majority")
    e, c, rec = rows["emergent"], rows["critical"], rows["recovery"]
    assert e["items"] == 6 and e["confusion"] == "1 0 0 / 0 2 0 / 1 0 2"
    assert est(e["kappa"]) == pytest.approx(0.75)
    assert est(e["alpha_humans"]) == pytest.approx(0.09)
    assert c["items"] == 3 and est(c["kappa"]) == pytest.approx(1.0)
    assert est(c["alpha_humans"]) == pytest.approx(0.5)
    assert rec["items"] == 2 and est(rec["kappa"]) == pytest.approx(1 / 3)
    assert est(rec["alpha_humans"]) is None
    assert e["ratings"] + c["ratings"] + rec["ratings"] == 25


def ci(cell: Any) -> tuple[float | None, float | None]:
    return (cell["low"], cell["high"]) if isinstance(cell, dict) else (None, None)


def test_alpha_has_a_seeded_bootstrap_interval_over_items(tmp_path: Path) -> None:
    """Issue 15 item 4: α among humans and humans + judge carry a percentile CI that contains
    α, is the same for a seed and moves with it; RECOVERY (no item with two ratings) keeps α
    undefined and no interval. The CI resamples dialogues (sessions), as κ's does: the rated
    EMERGENT items E1–E6 come from 4 dialogues (SPORTS × 2 models, CULINARY × 2), E6's single
    rating still makes its dialogue a unit that can be drawn."""
    db = imported(tmp_path)
    rows = agreement(db, "--consensus", "majority")
    for typ in ("emergent", "critical"):
        for col in ("alpha_humans", "alpha_all"):
            low, high = ci(rows[typ][col])
            assert low is not None and high is not None, (typ, col)
            assert low <= est(rows[typ][col]) <= high
    assert rows["emergent"]["alpha_humans"]["n"] == 4
    assert ci(rows["recovery"]["alpha_humans"]) == (None, None)
    again = agreement(db, "--consensus", "majority")
    assert [ci(again[t]["alpha_all"]) for t in again] == [ci(rows[t]["alpha_all"]) for t in rows]
    # 4 dialogues have 35 multisets of resamples: interpolated percentiles can coincide for
    # two seeds, not for all of these
    cells = [ci(rows[t][c]) for t in rows for c in ("alpha_humans", "alpha_all")]
    assert any([ci(other[t][c]) for t in other for c in ("alpha_humans", "alpha_all")] != cells
               for other in (agreement(db, "--consensus", "majority", "--seed", str(seed))
                             for seed in range(1, 4)))
    text = bench("report", "agreement", "--humans", "--db", db, "--run",
                 "proactbench-human-eval", "--format", "md").output
    assert "resamples sessions" in text and "α undefined (no variation) is –" in text


def test_median_consensus_stays_the_default(tmp_path: Path) -> None:
    rows = agreement(imported(tmp_path))
    assert rows["emergent"]["confusion"] == "2 0 0 / 0 2 1 / 0 0 1"
    assert rows["critical"]["confusion"] == "1 0 1 / 0 0 0 / 0 0 1"
    # α does not depend on the consensus rule
    assert est(rows["emergent"]["alpha_humans"]) == pytest.approx(0.09)


def test_min_raters_three_is_the_papers_consensus_rule(tmp_path: Path) -> None:
    """≥ 3 ratings: EMERGENT keeps E1–E4, CRITICAL only C2; α is over those items only."""
    rows = agreement(imported(tmp_path), "--consensus", "majority", "--min-raters", "3")
    assert rows["emergent"]["items"] == 4 and rows["critical"]["items"] == 1
    assert "recovery" not in rows


def test_adversarial_raters_who_agree_with_nobody(tmp_path: Path) -> None:
    """Every rater says Pass on every item (a 'Done.'-style rater): the consensus is Pass
    everywhere, the judge varies, so κ = 0 (chance); α among humans is undefined (no
    disagreement possible and no variation: D_e = 0), never reported as 1."""
    items = json.loads((FIX / "sample_items.json").read_text())
    res = tmp_path / "results"
    res.mkdir()
    for a in ("A01", "A02"):
        with (res / f"{a}.jsonl").open("w") as f:
            for it in items:
                f.write(json.dumps({"annotator_id": a, "item_id": it["item_id"],
                                    "score": "Pass"}) + "\n")
    rows = agreement(imported(tmp_path, res), "--consensus", "majority")
    assert est(rows["emergent"]["kappa"]) == pytest.approx(0.0)
    assert est(rows["emergent"]["alpha_humans"]) is None
    assert ci(rows["emergent"]["alpha_humans"]) == (None, None)  # shown as –


def test_reimport_is_idempotent_and_a_changed_items_file_is_refused(tmp_path: Path) -> None:
    db = imported(tmp_path)
    again = bench("ratings", "import", FIX / "results", "--format", "proactbench", "--items",
                  FIX / "sample_items.json", "--db", db)
    assert again.exit_code == 0 and "25 replaced" in again.output
    changed = tmp_path / "sample_items.json"
    items = json.loads((FIX / "sample_items.json").read_text())
    items[0]["judge_score"] = "Fail"
    changed.write_text(json.dumps(items))
    r = bench("ratings", "import", FIX / "results", "--format", "proactbench", "--items",
              changed, "--db", db)
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "proactbench-human-eval" in r.output and "--run" in r.output


@pytest.mark.parametrize("content, message", [
    ("{not json", "sample_items.json:1:2: not JSON"),
    ('{"item_id": "x"}', "sample_items.json:1:1: expected a JSON list of items"),
    ('[{"item_id": "a__B_01__s1__M__t1", "trigger_type": "SOON", "judge_score": "Pass"}]',
     "item 0 (a__B_01__s1__M__t1): `trigger_type` must be EMERGENT, CRITICAL or RECOVERY"),
    ('[{"item_id": "a__B_01__s1__M__t1", "trigger_type": "CRITICAL", "judge_score": "Good"}]',
     "item 0 (a__B_01__s1__M__t1): `judge_score` must be Pass, Partial or Fail"),
    ('[{"item_id": "nope", "trigger_type": "CRITICAL", "judge_score": "Pass"}]',
     "item 0: item_id `nope` is not {uuid}__{SCENARIO}__s{style}__{Model}__t{turn}"),
])
def test_bad_items_file_is_a_located_one_line_error(tmp_path: Path, content: str,
                                                      message: str) -> None:
    bad = tmp_path / "sample_items.json"
    bad.write_text(content)
    r = bench("ratings", "import", FIX / "results", "--format", "proactbench", "--items", bad,
              "--db", tmp_path / "s.duckdb")
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert message in r.output, r.output


def test_rating_of_an_item_not_in_the_sample_is_a_located_problem(tmp_path: Path) -> None:
    bad = tmp_path / "A09.jsonl"
    bad.write_text(json.dumps({"annotator_id": "A09", "item_id": "0a1b2c3d4e5f60718293a4b5c6d7e"
                               "8f9__SPORTS_01__s13__Toy-Model-3__t1", "score": "Pass"}) + "\n")
    r = bench("ratings", "import", bad, "--format", "proactbench", "--items",
              FIX / "sample_items.json", "--db", tmp_path / "s.duckdb")
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert f"{bad}:1: item" in r.output and "not in" in r.output


def test_alpha_equals_the_krippendorff_package(tmp_path: Path) -> None:
    """Differential check against the reference implementation, when it is installed (it is
    not a dependency of benchpack)."""
    kd = pytest.importorskip("krippendorff")
    np = pytest.importorskip("numpy")
    items = {it["item_id"]: it["trigger_type"]
             for it in json.loads((FIX / "sample_items.json").read_text())}
    ratings = [json.loads(line) for f in sorted((FIX / "results").glob("*.jsonl"))
               for line in f.read_text().splitlines() if line.strip()]
    raters = sorted({r["annotator_id"] for r in ratings})
    rows = agreement(imported(tmp_path), "--consensus", "majority")
    for typ in ("EMERGENT", "CRITICAL"):
        ids = sorted(i for i, t in items.items() if t == typ)
        m = np.full((len(raters), len(ids)), np.nan)
        for r in ratings:
            if r["item_id"] in ids:
                m[raters.index(r["annotator_id"]), ids.index(r["item_id"])] = \
                    {"Fail": 0, "Partial": 1, "Pass": 2}[r["score"]]
        want = kd.alpha(reliability_data=m, level_of_measurement="ordinal")
        assert est(rows[typ.lower()]["alpha_humans"]) == pytest.approx(want, abs=1e-12)


# --------------------------------------------------------------------------- peer-data


def _released() -> dict[str, Any]:
    return json.loads((PEER / "analysis_stats.json").read_text())["per_trigger_type"]


@pytest.mark.skipif(not PEER.is_dir(), reason="../shared/peer-data/proactbench not present")
@pytest.mark.parametrize("typ", ["EMERGENT", "CRITICAL", "RECOVERY"])
def test_released_confusion_matrices_give_the_released_kappa(typ: str) -> None:
    """The released κ is Cohen's κ unweighted of the released matrix (not κ_quad: the
    quadratic one of EMERGENT's matrix is 0.63, not 0.545), and the CSV equals the JSON."""
    from benchpack.reports import stats

    order = ["Fail", "Partial", "Pass"]
    with (PEER / f"confusion_matrix_{typ.lower()}.csv").open() as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["human_consensus", *order]
    matrix = [[int(x) for x in r[1:]] for r in rows[1:]]
    released = _released()[typ]
    assert matrix == [[released["confusion_matrix"][h][j] for j in order] for h in order]
    kappa = stats.cohen_kappa(matrix, None)
    assert kappa == pytest.approx(released["cohen_kappa_consensus_vs_judge"], abs=1e-12)
    assert stats.cohen_kappa(matrix, "quadratic") != pytest.approx(kappa, abs=1e-3)


@pytest.mark.skipif(not SAMPLE.is_file(), reason="sample_items.json is not in peer-data")
def test_released_ratings_and_sample_give_every_released_figure(tmp_path: Path) -> None:
    """Exact reproduction: α per type and κ per type to the released precision (1e-9), the
    confusion matrices cell by cell, the per-type rating and item counts."""
    db = imported(tmp_path, PEER / "results", SAMPLE)
    rows = agreement(db, "--consensus", "majority")
    for typ, want in _released().items():
        got = rows[typ.lower()]
        assert got["ratings"] == want["n_ratings"]
        assert got["items"] == want["n_items"]
        order = ["Fail", "Partial", "Pass"]
        assert got["confusion"] == " / ".join(
            " ".join(str(want["confusion_matrix"][h][j]) for j in order) for h in order)
        assert est(got["kappa"]) == pytest.approx(want["cohen_kappa_consensus_vs_judge"],
                                                  abs=1e-9)
        assert est(got["alpha_humans"]) == pytest.approx(want["krippendorff_alpha"], abs=1e-9)
        assert not math.isnan(est(got["alpha_humans"]))


@pytest.mark.skipif(not (PEER / "results").is_dir(),
                    reason="../shared/peer-data/proactbench not present")
def test_released_ratings_give_the_released_alpha_through_the_whole_path(tmp_path: Path) -> None:
    """Without sample_items.json (not in peer-data): an items file of the released item ids in
    its shape, typed by trigger turn (turns 1–3 EMERGENT, 4–6 CRITICAL, 7+ RECOVERY, which
    gives the released per-type rating counts 83 / 83 / 109, see
    tests/reports/test_stats_published.py) with a placeholder judge label, goes through
    `ratings import --items` and the agreement report: α among humans per type equals the
    released α (all 18 raters, no exclusion) to 1e-12, and the majority-vote consensus gives
    the released matrices' row sums (humans' labels: EMERGENT 4 / 5 / 11, CRITICAL 5 / 1 / 13,
    RECOVERY 8 / 7 / 5), which the median consensus does not. κ needs the real judge labels."""
    ids = sorted({json.loads(line)["item_id"] for f in (PEER / "results").glob("*.jsonl")
                  for line in f.read_text().splitlines() if line.strip()})

    def typed(iid: str) -> str:
        turn = int(iid.rsplit("__t", 1)[1])
        return "EMERGENT" if turn <= 3 else "CRITICAL" if turn <= 6 else "RECOVERY"

    items = tmp_path / "sample_items.json"
    items.write_text(json.dumps([{"item_id": i, "trigger_type": typed(i), "judge_score": "Pass"}
                                 for i in ids]))
    rows = agreement(imported(tmp_path, PEER / "results", items), "--consensus", "majority")
    for typ, want in _released().items():
        got = rows[typ.lower()]
        assert got["ratings"] == want["n_ratings"]
        assert got["items"] == want["n_items"]
        assert est(got["alpha_humans"]) == pytest.approx(want["krippendorff_alpha"], abs=1e-12)
        # every placeholder judge label is Pass: the matrix's last column is the consensus
        rows_released = [sum(want["confusion_matrix"][h].values())
                         for h in ("Fail", "Partial", "Pass")]
        assert [int(r.split()[2]) for r in got["confusion"].split(" / ")] == rows_released
    median = agreement(tmp_path / "s.duckdb")
    assert any(median[t.lower()]["confusion"] != rows[t.lower()]["confusion"]
               for t in _released())


@pytest.mark.skipif(not (PEER / "results").is_dir(),
                    reason="../shared/peer-data/proactbench not present")
def test_released_ratings_give_the_released_alpha_interval(tmp_path: Path) -> None:
    """α's CI through the whole path, with the released resamples (10,000; the seed differs in
    kind: numpy's PCG64 there, Python's Mersenne Twister here, so equality is impossible). Each
    released item is its own dialogue, so resampling sessions is resampling items, as there.
    Tolerance 0.02: with 10,000 resamples the Monte-Carlo SD of a 2.5 % / 97.5 % percentile of
    this α is ≈ 0.004 (seeds 0–9 here spread the endpoints by ≤ 0.012 in all), so two
    independent runs of the same bootstrap differ by ≈ 0.006 SD — 0.02 is over 3 SDs, and an
    item-vs-session or dropped-undefined mistake moves the endpoints by more than that.
    That is the resampled interval, `--alpha-ci resampled`; by default EMERGENT and CRITICAL
    (26-34 values off the most common label, fewer than `stats.ALPHA_MIN_OFF_MODE`) are
    printed widened to take in the disagreement count's interval, marked either way."""
    ids = sorted({json.loads(line)["item_id"] for f in (PEER / "results").glob("*.jsonl")
                  for line in f.read_text().splitlines() if line.strip()})

    def typed(iid: str) -> str:
        turn = int(iid.rsplit("__t", 1)[1])
        return "EMERGENT" if turn <= 3 else "CRITICAL" if turn <= 6 else "RECOVERY"

    items = tmp_path / "sample_items.json"
    items.write_text(json.dumps([{"item_id": i, "trigger_type": typed(i), "judge_score": "Pass"}
                                 for i in ids]))
    db = imported(tmp_path, PEER / "results", items)
    options = ("--consensus", "majority", "--resamples", "10000", "--seed", "2026")
    shown = agreement(db, *options)
    rows = agreement(db, *options, "--alpha-ci", "resampled")
    marked = {typ for typ, row in shown.items() if row["alpha_humans"].get("caution")}
    assert marked == {"emergent", "critical"}
    assert marked == {typ for typ, row in rows.items() if row["alpha_humans"].get("caution")}
    for typ, want in _released().items():
        got, printed = rows[typ.lower()]["alpha_humans"], shown[typ.lower()]["alpha_humans"]
        if typ.lower() in marked:
            assert printed["low"] < got["low"] and printed["high"] >= got["high"]
            assert got["caution"].endswith("not widened")
            assert printed["caution"].endswith("disagreement count")
        else:
            assert printed == got
        assert got["n"] == want["n_items"]
        low, high = want["krippendorff_alpha_ci95"]
        assert got["low"] == pytest.approx(low, abs=0.02), typ
        assert got["high"] == pytest.approx(high, abs=0.02), typ


# ------------------------------------------------------------ ratings without sample_items.json


def _alpha_ordinal(units: list[list[int]]) -> float:
    """Krippendorff's α (ordinal, labels 0 < 1 < 2) written out from its definition, apart from
    the report's SQL: coincidences o_ck = Σ_u Σ_{i≠j} [v_i = c][v_j = k] / (m_u − 1) over units
    of ≥ 2 values; δ²(c, k) = (Σ_{g=c}^{k} n_g − (n_c + n_k) / 2)²; α = 1 − (n − 1) D_o / D_e."""
    o = [[0.0] * 3 for _ in range(3)]
    for vals in units:
        m = len(vals)
        if m < 2:
            continue
        for i, a in enumerate(vals):
            for j, b in enumerate(vals):
                if i != j:
                    o[a][b] += 1 / (m - 1)
    n_c = [sum(row) for row in o]
    n = sum(n_c)

    def d2(c: int, k: int) -> float:
        lo, hi = min(c, k), max(c, k)
        return (sum(n_c[lo:hi + 1]) - (n_c[lo] + n_c[hi]) / 2) ** 2

    d_o = sum(o[c][k] * d2(c, k) for c in range(3) for k in range(3))
    d_e = sum(n_c[c] * n_c[k] * d2(c, k) for c in range(3) for k in range(3))
    return 1 - (n - 1) * d_o / d_e


def _units(results: Path) -> list[list[int]]:
    by: dict[str, list[int]] = {}
    for f in sorted(results.glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                by.setdefault(r["item_id"], []).append(
                    {"Fail": 0, "Partial": 1, "Pass": 2}[r["score"]])
    return list(by.values())


def _rated_only(tmp: Path, results: Path) -> tuple[Any, dict[str, Any]]:
    db = tmp / "r.duckdb"
    r = bench("ratings", "import", results, "--format", "proactbench", "--db", db)
    assert r.exit_code == 0, r.output
    out = bench("report", "agreement", "--humans", "--db", db, "--run", "proactbench-human-eval",
                "--format", "json", "--consensus", "majority")
    assert out.exit_code == 0, out.output
    (table, *rest) = json.loads(out.output)["tables"]
    assert rest == []  # no "each rater vs the judge" table: there is no judge
    return r, table


def test_ratings_without_the_sample_give_alpha_among_raters_and_name_the_rest(
        tmp_path: Path) -> None:
    """Issue 28: no --items, no --run: the rated items make the run. The fixture's 12 rated
    items pooled: α among the 4 raters equals the definition computed here (E1–E5, C1–C3 and
    R1 (Partial, Partial) are the units of ≥ 2 ratings), and every judge figure is named as
    needing sample_items.json instead of being shown as 0 or as judge errors."""
    r, table = _rated_only(tmp_path, FIX / "results")
    assert "rated items in" in r.output and "no judge labels" in r.output
    assert "need the judge labels" in r.output and "κ" in r.output
    (row,) = table["rows"]
    assert (row["kind"], row["type"], row["ratings"]) == ("trigger", "all", 25)
    assert set(row) == {"kind", "type", "items", "ratings", "ties", "alpha_humans"}
    assert est(row["alpha_humans"]) == pytest.approx(_alpha_ordinal(_units(FIX / "results")),
                                                     abs=1e-12)
    notes = " ".join(table["notes"])
    for figure in ("per-type rows", "Cohen's κ", "α humans + judge", "each rater vs the judge"):
        assert figure in notes
    # importing the same ratings again reuses the run and replaces them: nothing counted twice
    r = bench("ratings", "import", FIX / "results", "--format", "proactbench", "--db",
              tmp_path / "r.duckdb")
    assert r.exit_code == 0 and "in run proactbench-human-eval" in r.output
    assert "25 replaced" in r.output
    # the sample into the same run id is refused (another --run keeps both)
    r = bench("ratings", "import", FIX / "results", "--format", "proactbench", "--items",
              FIX / "sample_items.json", "--db", tmp_path / "r.duckdb")
    assert r.exit_code == 1 and "pass --run NEW_ID" in r.output


def test_ratings_without_the_sample_report_bad_lines_all_at_once(tmp_path: Path) -> None:
    bad = tmp_path / "results"
    bad.mkdir()
    (bad / "A01.jsonl").write_text('{"item_id": "nope", "score": "Pass"}\n{oops\n',
                                   encoding="utf-8")
    r = bench("ratings", "import", bad, "--format", "proactbench", "--db", tmp_path / "r.duckdb")
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert f"{bad / 'A01.jsonl'}:1: item_id" in r.output
    assert f"{bad / 'A01.jsonl'}:2:2: invalid JSON" in r.output
    assert not (tmp_path / "r.duckdb").exists() or "nothing imported" in r.output


@pytest.mark.skipif(not (PEER / "results").is_dir(),
                    reason="../shared/peer-data/proactbench not present")
def test_released_ratings_without_the_sample_give_the_pooled_alpha(tmp_path: Path) -> None:
    """The released 275 ratings by 18 raters on 59 items, no sample_items.json: α among all
    raters over all rated items, 0.296 (no exclusion), as the definition gives it."""
    _, table = _rated_only(tmp_path, PEER / "results")
    (row,) = table["rows"]
    assert (row["items"], row["ratings"]) == (59, 275)
    want = _alpha_ordinal(_units(PEER / "results"))
    assert round(want, 3) == 0.296
    assert est(row["alpha_humans"]) == pytest.approx(want, abs=1e-12)
