"""Issue 13, ProactBench: `bench import proactbench` (corpus → pack) and `bench import-run
proactbench` (a model's results → a run whose `bench report triggers` reproduces the model's
released metrics file). Fixtures in tests/fixtures/proactbench are our own, in the release's
shapes; the tests marked peer-data read ../shared/peer-data when it is there."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchpack.cli.main import cli

FIX = Path(__file__).parent / "fixtures" / "proactbench"
PEER = Path("/work/shared/peer-data/proactbench/dataset")
TYPES = ("EMERGENT", "CRITICAL", "RECOVERY")


def bench(*args: str) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def imported(tmp: Path, name: str = "pack") -> Path:
    out = tmp / name
    r = bench("import", "proactbench", FIX / "final_dialogues.jsonl", "--selected",
              FIX / "selected_tasks.jsonl", "-o", out)
    assert r.exit_code == 0, r.output
    return out


def compiled(tmp: Path) -> Path:
    pack = imported(tmp)
    # issue 28: an imported pack compiles under --strict (lints about the released content
    # itself are silenced in pack.yaml with the reason)
    r = bench("compile", pack, "-o", tmp / "build", "--strict")
    assert r.exit_code == 0 and "no problems" in r.output, r.output
    return tmp / "build" / "plan.json"


def report_rows(db: Path, run: str) -> dict[str, dict[str, Any]]:
    r = bench("report", "triggers", "--db", db, "--run", run, "--format", "json")
    assert r.exit_code == 0, r.output
    return {row["type"]: row for row in json.loads(r.output)["tables"][0]["rows"]}


# --------------------------------------------------------------------------- bench import


def test_import_compiles_with_zero_errors_and_reimport_is_byte_identical(tmp_path: Path) -> None:
    plan = json.loads(compiled(tmp_path).read_text())
    sessions = plan["sessions"]
    assert len(sessions) == 2
    s = sessions["session.proactbench.BP_SPORTS_01_AB.s13.0a1b2c3d4e5f.dialogue@P+Q"]
    assert s["style"]["code"] == "P+Q"  # style_combination_index 13 (Appendix C)
    assert [(t["id"], t["type"], t["turn"]) for t in s["triggers"]] == [
        ("t1", "emergent", 1), ("t3", "critical", 3), ("t5", "recovery", 5)]
    # released braces are text, not Jinja
    assert "{{ like this }}" in s["dialogue"][2]["user"]
    assert s["request"] == s["dialogue"][0]["user"]
    again = imported(tmp_path, "again")
    first = tmp_path / "pack"
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    for f in files:
        assert (first / f).read_bytes() == (again / f).read_bytes(), f


def test_anchors_disclosed_exactly_inferred_or_reported_unknown(tmp_path: Path) -> None:
    plan = json.loads(compiled(tmp_path).read_text())["sessions"]
    en = plan["session.proactbench.BP_SPORTS_01_AB.s13.0a1b2c3d4e5f.dialogue@P+Q"]
    assert en["request_discloses"] == ["a1"]                       # verbatim in the payload
    assert [d["discloses"] for d in en["dialogue"]][:3] == [["a1"], ["a2"], []]  # a2 paraphrased
    assert en["triggers"][1]["anchors"] == ["a1", "a2"]            # disclosed by turn 3
    zh = plan["session.proactbench.BP_CULINARY_02_XY.s1.ffeeddccbbaa.dialogue@NONE"]
    assert zh["dialogue"][0]["discloses"] == ["a1"]                # Chinese, exact
    assert zh["scenario"]["hidden_goal"] == "为社团聚会做好蛋糕。"
    report = (tmp_path / "pack" / "IMPORT_REPORT.md").read_text()
    assert "(exact: 2)" in report and "(inferred: 1)" in report and "(unknown: 1)" in report
    assert "a3 never disclosed" in report and "a2 at turn 2 (inferred)" in report


def test_import_report_names_every_source_field(tmp_path: Path) -> None:
    imported(tmp_path)
    report = (tmp_path / "pack" / "IMPORT_REPORT.md").read_text()
    rows = [json.loads(x) for x in (FIX / "final_dialogues.jsonl").read_text().splitlines()]
    keys = {k for r in rows for k in r}
    keys |= {f"turn_records[].{k}" for r in rows for t in r["turn_records"] for k in t}
    keys |= {f"trigger_points[].{k}" for r in rows for t in r["trigger_points"] for k in t}
    for k in sorted(keys):
        assert f"`{k}" in report, f"{k} not accounted for in IMPORT_REPORT.md"
    for fate in ("| mapped |", "| mapped with loss |", "| dropped |"):
        assert fate in report


@pytest.mark.parametrize("content, expect", [
    ('{"unique_id_eval": "x"\n', "final_dialogues.jsonl:1:"),
    ('{"unique_id_eval": "a__style99__u", "uuid": "u", "blueprint_id": "a", "scenario_id": "S",'
     ' "category_key": "sports_persona", "style_combination_index": 99, "turn_records": [],'
     ' "trigger_points": []}\n', "`style_combination_index` must be 1–24"),
    ('[1, 2]\n', "a row must be a JSON object"),
])
def test_import_mistakes_are_located_one_line_errors(tmp_path: Path, content: str,
                                                     expect: str) -> None:
    src = tmp_path / "final_dialogues.jsonl"
    src.write_text(content)
    r = bench("import", "proactbench", src, "-o", tmp_path / "out")
    assert r.exit_code == 1
    assert expect in r.output and "Traceback" not in r.output
    assert r.output.startswith("✗ ") and len(r.output.strip().splitlines()) == 1


def test_session_ids_agree_between_importer_and_run_importer() -> None:
    from benchpack.compiler.importers import proactbench as c
    from benchpack.runtime.imports import proactbench as r

    for uid, style in [("BP_X_01_AB__style13__0a1b2c3d4e5f60718293", 13), ("odd id!", 24)]:
        assert c.session_key("p", uid, style) == r.session_key("p", uid, style)


def test_cli_format_lists_match_registries() -> None:
    from benchpack.cli import imports
    from benchpack.compiler.importers import IMPORTERS
    from benchpack.runtime.imports import RUN_IMPORTERS

    assert set(imports.PACK_FORMATS) == set(IMPORTERS)
    assert set(imports.RUN_FORMATS) == set(RUN_IMPORTERS)


# --------------------------------------------------------------------------- bench import-run


def test_import_run_reproduces_the_released_metrics(tmp_path: Path) -> None:
    """Hand-computable: emergent PASS + SKIPPED → N 1, pass 1; critical PARTIAL → weighted .5;
    recovery FAIL + PASS → .5; overall 2 PASS 1 PARTIAL 1 FAIL → pass .5, weighted .625."""
    plan = compiled(tmp_path)
    db = tmp_path / "s.duckdb"
    r = bench("import-run", "proactbench", FIX / "toy__model-1_proactivity_bench_results.jsonl",
              "--db", db, "--plan", plan)
    assert r.exit_code == 0, r.output
    metrics = json.loads((FIX / "toy__model-1_proactivity_bench_metrics.json").read_text())
    _check_metrics(report_rows(db, "proactbench-toy-model-1"), metrics)

    import duckdb
    con = duckdb.connect(str(db), read_only=True)
    calls = con.execute("SELECT role, sum(prompt_tokens), sum(completion_tokens), "
                        "count(*) FILTER (WHERE purpose <> 'imported') FROM llm_calls "
                        "GROUP BY role ORDER BY role").fetchall()
    assert calls == [("agent", 300, 30, 0), ("judge", 400, 40, 0)]
    t = con.execute("SELECT label, response, rationale, evidence FROM triggers WHERE turn = 5"
                    ).fetchall()
    assert t == [("FAIL", "Done.", "toy rationale", "toy evidence")]  # says only "Done."
    # the whole fixed dialogue, the regenerated answer at trigger turns
    msgs = con.execute("SELECT turn, role, content FROM messages WHERE session_id LIKE "
                       "'%SPORTS%' ORDER BY seq").fetchall()
    assert len(msgs) == 10 and msgs[3] == (2, "assistant", "There are fountains at km 20 and "
                                                          "km 55.")
    assert msgs[9] == (5, "assistant", "Done.")
    con.close()
    again = bench("import-run", "proactbench",
                  FIX / "toy__model-1_proactivity_bench_results.jsonl", "--db", db)
    assert again.exit_code == 1 and "already in" in again.output


def test_imported_run_can_be_rejudged_with_the_rules_judge(tmp_path: Path) -> None:
    plan = compiled(tmp_path)
    db = tmp_path / "s.duckdb"
    assert bench("import-run", "proactbench", FIX / "toy__model-1_proactivity_bench_results.jsonl",
                 "--db", db, "--plan", plan).exit_code == 0
    r = bench("rejudge", "proactbench-toy-model-1", "--db", db, "--judge", "rules")
    assert r.exit_code == 0, r.output
    rows = report_rows(db, "proactbench-toy-model-1+rejudge-rules")
    assert rows["overall"]["n"] == 4  # the SKIPPED trigger stays out of N
    import duckdb
    con = duckdb.connect(str(db), read_only=True)
    judged = con.execute("SELECT count(*) FROM triggers WHERE run_id LIKE '%rejudge%' AND "
                         "label IN ('PASS', 'PARTIAL', 'FAIL') AND rationale <> 'toy rationale'"
                         ).fetchone()
    con.close()
    assert judged == (4,)


def test_import_run_without_plan_keeps_trigger_turns_and_same_figures(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    r = bench("import-run", "proactbench", FIX / "toy__model-1_proactivity_bench_results.jsonl",
              "--db", db, "--run-id", "toy")
    assert r.exit_code == 0, r.output
    metrics = json.loads((FIX / "toy__model-1_proactivity_bench_metrics.json").read_text())
    _check_metrics(report_rows(db, "toy"), metrics)


def test_import_run_refuses_the_corpus_with_a_hint(tmp_path: Path) -> None:
    src = tmp_path / "r.jsonl"
    row = json.loads((FIX / "final_dialogues.jsonl").read_text().splitlines()[0])
    for tp in row["trigger_points"]:
        del tp["evaluation_result"]
    src.write_text(json.dumps(row) + "\n")
    r = bench("import-run", "proactbench", src, "--db", tmp_path / "s.duckdb")
    assert r.exit_code == 1 and "r.jsonl:1: trigger_points[0]" in r.output
    assert "bench import" in r.output and "Traceback" not in r.output


def _check_metrics(rows: dict[str, dict[str, Any]], released: dict[str, Any]) -> None:
    m = released["metrics"]
    for t in TYPES:
        k = t.lower()
        assert rows[k]["n"] == m[f"eval/proactivity_{k}_total"]
        assert rows[k]["pass_rate"]["value"] == pytest.approx(m[f"eval/proactivity_{k}_pass_rate"],
                                                              abs=1e-12)
        assert rows[k]["partial_rate"] == pytest.approx(m[f"eval/proactivity_{k}_partial_rate"],
                                                        abs=1e-12)
        assert rows[k]["weighted"]["value"] == pytest.approx(
            m[f"eval/proactivity_{k}_weighted_score"], abs=1e-12)
    assert rows["overall"]["pass_rate"]["value"] == pytest.approx(
        m["eval/proactivity_overall_pass_rate"], abs=1e-12)
    assert rows["overall"]["weighted"]["value"] == pytest.approx(
        m["eval/proactivity_overall_weighted_score"], abs=1e-12)


# --------------------------------------------------------------------------- peer data

METRICS = sorted(PEER.glob("eval/*_proactivity_bench_metrics.json")) if PEER.is_dir() else []


@pytest.mark.skipif(not METRICS, reason="../shared/peer-data/proactbench not present")
@pytest.mark.parametrize("path", METRICS, ids=lambda p: p.name.split("_proactivity")[0])
def test_released_metrics_equal_ours_from_the_same_counts(tmp_path: Path, path: Path) -> None:
    """The released results files are too large to keep here; each metrics file's counts are
    laid out as results rows (shuffled over its 198 dialogues) and imported: our report must
    give the released figures."""
    released = json.loads(path.read_text())
    dialogues = int(released["metrics"]["eval/proactivity_total_dialogues"])
    labels = [(t, lab) for t in TYPES for lab in ("PASS", "PARTIAL", "FAIL", "SKIPPED")
              for _ in range(released["aggregate_trigger_stats"][t][lab])]
    random.Random(path.name).shuffle(labels)
    per: list[list[tuple[str, str]]] = [[] for _ in range(dialogues)]
    for i, x in enumerate(labels):
        per[i % dialogues].append(x)
    src = tmp_path / "results.jsonl"
    with src.open("w") as f:
        for d, tps in enumerate(per):
            f.write(json.dumps(_row(d, tps)) + "\n")
    db = tmp_path / "s.duckdb"
    assert bench("import-run", "proactbench", src, "--db", db, "--run-id", "r").exit_code == 0
    _check_metrics(report_rows(db, "r"), released)


def _row(d: int, tps: list[tuple[str, str]]) -> dict[str, Any]:
    rub = {"pass_criteria": "p", "partial_criteria": "q", "fail_criteria": "f"}
    return {"unique_id_eval": f"BP_T_{d:03d}__style1__{d:032x}", "uuid": f"{d:032x}",
            "style_combination_index": 1, "category_key": "arts_persona",
            "evaluated_model": "m", "trigger_points": [
                {"turn": i + 1, "evaluation_rubric": {"type": t, **rub}, "evaluation_result": {
                    "status": "SKIPPED" if lab == "SKIPPED" else "EVALUATED",
                    "score": None if lab == "SKIPPED" else lab, "rationale": "", "evidence": ""}}
                for i, (t, lab) in enumerate(tps)],
            "turn_records": [{"turn": i + 1, "user_message": "u", "assistant_response": "a"}
                             for i in range(len(tps))]}


HEAD = PEER / "eval/meta-llama__llama-4-maverick_proactivity_bench_results.jsonl.head.txt"


@pytest.mark.skipif(not HEAD.exists(), reason="../shared/peer-data/proactbench not present")
def test_released_results_row_imports_with_its_own_counts(tmp_path: Path) -> None:
    """The saved head holds one complete row (the second is cut): its labels must land as its
    `trigger_stats` says, with the judge's rationale and evidence."""
    first = HEAD.read_text(encoding="utf-8").split("\n", 1)[0]
    row = json.loads(first)
    src = tmp_path / "maverick_proactivity_bench_results.jsonl"
    src.write_text(first + "\n", encoding="utf-8")
    db = tmp_path / "s.duckdb"
    r = bench("import-run", "proactbench", src, "--db", db)
    assert r.exit_code == 0, r.output
    import duckdb
    con = duckdb.connect(str(db), read_only=True)
    got = dict(((t.upper(), lab), n) for t, lab, n in con.execute(
        "SELECT type, label, count(*) FROM triggers GROUP BY ALL").fetchall())
    evidence = con.execute("SELECT count(*) FROM triggers WHERE evidence <> '' AND "
                           "rationale <> ''").fetchone()
    con.close()
    for t, counts in row["trigger_stats"].items():
        for lab, n in counts.items():
            assert got.get((t, lab), 0) == n
    assert evidence == (row["num_trigger_points"],)


# --------------------------------------------------------------------------- human ratings


def test_released_rating_files_import_as_they_are(tmp_path: Path) -> None:
    """Item ids `{uuid}__{SCENARIO}__s{style}__{Model}__t{turn}` find the imported session and
    trigger; a row of another model is counted, not imported; the consensus of three raters
    (t3: Partial, Fail, Partial → PARTIAL; culinary t3: Pass, Pass, Partial → PASS) agrees with
    the released judge on all 4 rated items."""
    plan = compiled(tmp_path)
    db = tmp_path / "s.duckdb"
    assert bench("import-run", "proactbench", FIX / "toy__model-1_proactivity_bench_results.jsonl",
                 "--db", db, "--plan", plan).exit_code == 0
    r = bench("ratings", "import", FIX / "human_eval", "--format", "proactbench", "--run",
              "proactbench-toy-model-1", "--db", db)
    assert r.exit_code == 0, r.output
    assert "12 ratings" in r.output and "1 ratings of other models' answers" in r.output
    out = bench("report", "agreement", "--humans", "--db", db, "--run", "proactbench-toy-model-1",
                "--format", "json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)["tables"][0]["rows"]
    total = next(x for x in rows if x["type"] == "all")
    assert total["items"] == 4 and total["exact"] == 1.0


def test_rating_row_of_an_unknown_dialogue_is_a_located_problem(tmp_path: Path) -> None:
    plan = compiled(tmp_path)
    db = tmp_path / "s.duckdb"
    assert bench("import-run", "proactbench", FIX / "toy__model-1_proactivity_bench_results.jsonl",
                 "--db", db, "--plan", plan).exit_code == 0
    bad = tmp_path / "A09.jsonl"
    bad.write_text(json.dumps({"annotator_id": "A09", "item_id": "deadbeef__SPORTS_01__s2__"
                               "Toy-Model-1__t1", "score": "Pass"}) + "\n"
                   + json.dumps({"annotator_id": "A09", "item_id": "garbage", "score": "Pass"})
                   + "\n")
    r = bench("ratings", "import", bad, "--format", "proactbench", "--run",
              "proactbench-toy-model-1", "--db", db)
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert f"{bad}:1: no session of dialogue deadbeef" in r.output
    assert f"{bad}:2: item_id `garbage`" in r.output


HUMAN = PEER / "human_eval" / "results"


@pytest.mark.skipif(not HUMAN.is_dir(), reason="../shared/peer-data/proactbench not present")
def test_released_rating_item_ids_all_parse() -> None:
    """What can be checked without the rated models' results: every released item id parses,
    and ratings per item are distributed as the release says (275 ratings, 59 items,
    {1:9, 2:5, 3:8, 4:5, 5:3, 6:15, 7:9, 8:3, 9:1, 11:1})."""
    from collections import Counter

    from benchpack.reports.ratings import _PB_ITEM

    items: Counter[str] = Counter()
    for f in sorted(HUMAN.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            if line.strip():
                item = json.loads(line)["item_id"]
                assert _PB_ITEM.fullmatch(item), item
                items[item] += 1
    assert sum(items.values()) == 275 and len(items) == 59
    assert dict(Counter(items.values())) == {1: 9, 2: 5, 3: 8, 4: 5, 5: 3, 6: 15, 7: 9, 8: 3,
                                             9: 1, 11: 1}
