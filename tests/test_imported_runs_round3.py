"""Issue 27, what a new user met with imported runs (ProactBench released results):
- a rejudge's summary counted the imported `llm_calls` rows (released token counts, no call
  made by benchpack) as calls made, and their missing price as unknown cost;
- the inventory of an imported run blamed "a run from before benchpack recorded its plan";
- `bench ratings import` of a directory holding only other models' ratings said "no ratings
  in the file";
- `bench rejudge` of a run imported without `--plan` ended in an internal error (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchpack.cli.main import cli

FIX = Path(__file__).parent / "fixtures" / "proactbench"
RESULTS = FIX / "toy__model-1_proactivity_bench_results.jsonl"
RUN = "proactbench-toy-model-1"


def bench(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pb")
    assert bench("import", "proactbench", FIX / "final_dialogues.jsonl", "--selected",
                 FIX / "selected_tasks.jsonl", "-o", root / "pack").exit_code == 0
    assert bench("compile", root / "pack", "-o", root / "build").exit_code == 0
    return root / "build" / "plan.json"


def test_rejudge_summary_counts_no_imported_call_as_made(plan: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    assert bench("import-run", "proactbench", RESULTS, "--db", db, "--plan", plan).exit_code == 0
    r = bench("rejudge", RUN, "--db", db, "--judge", "rules", "--json")
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output[r.output.index("{"):])
    assert summary["llm_calls"] == 0 and summary["unpriced_calls"] == 0
    assert summary["imported_calls"] == 2
    text = bench("rejudge", RUN, "--db", db, "--judge", "rules", "--as", "again").output
    assert "LLM calls 0 (0 from cache; 2 imported" in " ".join(text.split()), text
    assert "unknown" not in text


def test_inventory_of_an_imported_run_says_imported(plan: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    assert bench("import-run", "proactbench", RESULTS, "--db", db, "--plan", plan).exit_code == 0
    r = bench("report", "summary", "--db", db, "--run", RUN)
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    assert "from before benchpack recorded" not in flat, flat
    assert "imported (proactbench" in flat, flat
    inv = bench("report", "inventory", "--db", db, "--run", RUN, "--format", "json")
    row = json.loads(inv.output)["tables"][0]["rows"][0]
    assert row["promised"] == 2 and row["not_run"] == 0 and row["excluded"] == 0


def test_ratings_of_other_models_only_say_so(plan: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    assert bench("import-run", "proactbench", RESULTS, "--db", db, "--plan", plan).exit_code == 0
    other = tmp_path / "human_eval"
    other.mkdir()
    for f in FIX.joinpath("human_eval").iterdir():
        (other / f.name).write_text(f.read_text(encoding="utf-8").replace("Model-1", "Model-9"),
                                    encoding="utf-8")
    r = bench("ratings", "import", other, "--format", "proactbench", "--run", RUN, "--db", db)
    assert r.exit_code == 1
    assert "no ratings in the file" not in r.output, r.output
    assert f"are of other models' answers than run `{RUN}`" in r.output, r.output


def test_rejudge_of_a_run_imported_without_a_plan_is_a_user_error(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    assert bench("import-run", "proactbench", RESULTS, "--db", db).exit_code == 0
    r = bench("rejudge", RUN, "--db", db, "--judge", "rules")
    assert r.exit_code == 1, r.output
    assert "--plan" in r.output and "internal error" not in r.output
