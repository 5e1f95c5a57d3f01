"""Issue 23 item 4: `bench export tau2-submission` — τ²-bench's leaderboard submission.json from
runs, with pass^1 … pass^4 per domain as τ² computes them (pass^k × 100, unrounded; absent
above the fewest trials), the mean agent cost of a trajectory and the user simulator; validated
against a schema (ours always; the released one from ../shared/peer-data when it is there),
every violation reported at once; refusals say why.

The runs are imported from our results fixture (tests/fixtures/tau2/results), made clean: the
infrastructure error of task 1 becomes a success. By hand (n, c per task: 4,3 · 4,3 · 4,2):
pass^1 = (3/4 + 3/4 + 2/4)/3 = 2/3, pass^2 = (3/6 + 3/6 + 1/6)/3 = 7/18,
pass^3 = (1/4 + 1/4 + 0)/3 = 1/6, pass^4 = 0; agent cost: the 11 trajectories with a cost sum
to 0.072, so 0.072/11 a trajectory."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from benchpack.cli.main import cli
from conftest import TAU2_CHECKOUT, needs_tau2
from conftest import TAU2_PYTHON as TAU2_PY

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "tau2" / "results"


def _peer_root() -> Path:
    if os.environ.get("BENCH_PEER_DATA"):
        return Path(os.environ["BENCH_PEER_DATA"])
    here = Path(__file__).resolve()  # ../shared/peer-data beside the checkout (or worktrees)
    found = [p / "shared" / "peer-data" for p in here.parents
             if (p / "shared" / "peer-data").is_dir()]
    return found[0] if found else here.parent / "no-peer-data"


PEER_SCHEMA = (_peer_root() / "tau2-bench" / "web" / "leaderboard" / "public" / "submissions"
               / "schema.json")

PASS = {"pass_1": 200 / 3, "pass_2": 700 / 18, "pass_3": 100 / 6, "pass_4": 0.0}
COST = 0.072 / 11

# our own small schema in the released one's shape (what a submission must hold)
DOMAIN = {"type": "object", "additionalProperties": False, "properties": {
    **{f"pass_{k}": {"type": "number", "minimum": 0, "maximum": 100} for k in range(1, 5)},
    "cost": {"type": "number", "minimum": 0}}}
SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
    "required": ["model_name", "model_organization", "submitting_organization",
                 "submission_date", "contact_info", "results"],
    "properties": {
        "model_name": {"type": "string"}, "model_organization": {"type": "string"},
        "submitting_organization": {"type": "string"},
        "submission_date": {"type": "string", "format": "date"},
        "submission_type": {"enum": ["standard", "custom"]},
        "contact_info": {"type": "object"},
        "results": {"type": "object", "additionalProperties": False,
                    "properties": {d: DOMAIN for d in ("retail", "airline", "telecom")}},
        "methodology": {"type": "object", "properties": {
            "user_simulator": {"type": "string"},
            "verification": {"type": "object", "properties": {
                "modified_prompts": {"type": "boolean"}}}}}}}


def bench(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def results_file(tmp: Path, domain: str = "retail", clean: bool = True,
                 agent: str = "gpt-4.1-mini") -> Path:
    data = json.loads((FIX / "retail_results.json").read_text())
    if clean:  # the infrastructure error of task 1, trial 3 becomes a success
        fine = copy.deepcopy(data["simulations"][4])
        fine.update(id="sim-1-3", trial=3)
        data["simulations"][7] = fine
    data["info"]["environment_info"]["domain_name"] = domain
    data["info"]["agent_info"]["llm"] = agent
    out = tmp / f"{domain}-{agent}-{'clean' if clean else 'raw'}.json"
    out.write_text(json.dumps(data))
    return out


def imported(tmp: Path, db: Path, *files: Path) -> list[str]:
    runs = []
    for i, f in enumerate(files):
        run = f"run{i}"
        r = bench("import-run", "tau2", f, "--db", db, "--run-id", run)
        assert r.exit_code == 0, r.output
        runs.append(run)
    return runs


def schema_file(tmp: Path, schema: dict[str, Any] = SCHEMA) -> Path:
    path = tmp / "schema.json"
    path.write_text(json.dumps(schema))
    return path


def export(db: Path, runs: list[str], out: Path, *extra: Any) -> Any:
    return bench("export", "tau2-submission", *runs, "--db", db, "-o", out,
                 "--model-organization", "OpenAI", "--email", "me@example.org", *extra)


def test_submission_equals_tau2s_figures_and_validates(tmp_path: Path) -> None:
    db = tmp_path / "b.duckdb"
    runs = imported(tmp_path, db, results_file(tmp_path))
    out = tmp_path / "submission.json"
    r = export(db, runs, out, "--schema", schema_file(tmp_path), "--submission-date",
               "2026-09-01")
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert list(doc) == ["model_name", "model_organization", "submitting_organization",
                         "submission_date", "submission_type", "modality", "contact_info",
                         "results", "is_new", "trajectories_available", "methodology"]
    assert doc["model_name"] == "gpt-4.1-mini" and doc["submission_date"] == "2026-09-01"
    assert doc["submitting_organization"] == "OpenAI"
    assert doc["submission_type"] == "standard" and doc["modality"] == "text"
    assert doc["contact_info"] == {"email": "me@example.org"}
    retail = doc["results"]["retail"]
    assert list(retail) == ["pass_1", "pass_2", "pass_3", "pass_4", "cost"]
    for k, v in PASS.items():
        assert retail[k] == pytest.approx(v, abs=1e-12), k
    assert retail["cost"] == pytest.approx(COST, abs=1e-15)
    m = doc["methodology"]
    assert m["user_simulator"] == "gpt-4.1-2025-04-14" and m["tau2_bench_version"] == "0123abc"
    assert m["evaluation_date"] == "2026-08-20"
    assert m["verification"]["modified_prompts"] is False
    assert "omitted_questions" not in m["verification"]  # unknown without a τ² checkout
    assert "not checked" in m["verification"]["details"]
    assert "pass^1 66.7 | pass^2 38.9 | pass^3 16.7 | pass^4 0.0" in r.output
    # the same figures as the pass-k report's τ² table, × 100
    rep = json.loads(bench("report", "pass-k", "--db", db, "--format", "json").output)
    row = next(t for t in rep["tables"] if t["title"].startswith("pass^k for"))["rows"][0]
    for k in range(1, 5):
        assert retail[f"pass_{k}"] == row[f"pass_hat_{k}"]["value"] * 100


def test_every_schema_violation_at_once_and_nothing_written(tmp_path: Path) -> None:
    db = tmp_path / "b.duckdb"
    runs = imported(tmp_path, db, results_file(tmp_path, "mock"))
    strict = copy.deepcopy(SCHEMA)
    strict["required"].append("reasoning_effort")
    strict["properties"]["methodology"]["properties"]["user_simulator"]["pattern"] = "^gpt-5"
    out = tmp_path / "submission.json"
    r = export(db, runs, out, "--schema", schema_file(tmp_path, strict))
    assert r.exit_code == 1
    lines = r.output.strip().splitlines()
    assert lines == [
        f"✗ {out}: $: 'reasoning_effort' is a required property",
        f"✗ {out}: $.methodology.user_simulator: 'gpt-4.1-2025-04-14' does not match '^gpt-5'",
        f"✗ {out}: $.results: Additional properties are not allowed ('mock' was unexpected)",
        f"✗ {out}: not written (3 schema violations)"]
    assert not out.exists()


@pytest.mark.skipif(not PEER_SCHEMA.is_file(), reason="../shared/peer-data (τ² leaderboard "
                    "schema) is not here")
def test_two_domains_validate_against_the_released_schema(tmp_path: Path) -> None:
    db = tmp_path / "b.duckdb"
    runs = imported(tmp_path, db, results_file(tmp_path, "airline"), results_file(tmp_path))
    out = tmp_path / "submission.json"
    r = export(db, runs, out, "--schema", PEER_SCHEMA, "--model-name", "GPT-4.1 mini",
               "--reasoning-effort", "none", "--is-new")
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert list(doc["results"]) == ["retail", "airline"]  # τ²'s order
    assert doc["results"]["airline"] == doc["results"]["retail"]
    assert doc["is_new"] is True and doc["reasoning_effort"] == "none"


def test_refusals_say_why(tmp_path: Path) -> None:
    db = tmp_path / "b.duckdb"
    runs = imported(tmp_path, db, results_file(tmp_path, clean=False), results_file(tmp_path),
                    results_file(tmp_path, "airline", agent="other-model"))
    schema = schema_file(tmp_path)
    out = tmp_path / "s.json"
    r = export(db, [runs[0]], out, "--schema", schema)
    assert r.exit_code == 1
    assert "run run0: 1 session runs errored outside the agent (1 infrastructure error)" \
        in r.output and "rerun them in τ² and import the results again" in r.output
    assert "domain retail: 1 task(s) with fewer than 4 graded trials — 1 (3)" in r.output
    r = export(db, runs[:2], out, "--schema", schema)
    assert "domain retail: in runs run0, run1; a submission has one run per domain" in r.output
    r = export(db, runs[1:], out, "--schema", schema)
    assert "the runs differ in agent or user simulator" in r.output
    assert not out.exists()
    # fewer trials needed: the infrastructure error still refuses
    r = export(db, [runs[0]], out, "--schema", schema, "--trials", "3")
    assert "errored outside the agent" in r.output and "fewer than" not in r.output


def test_differences_refused_then_exported_as_custom(tmp_path: Path) -> None:
    db = tmp_path / "b.duckdb"
    (run,) = imported(tmp_path, db, results_file(tmp_path))
    con = duckdb.connect(str(db))
    cfg = json.loads(con.execute("SELECT config FROM runs").fetchone()[0])  # type: ignore[index]
    cfg["origin"]["differences"] = ["payment differences rounded to cents"]
    cfg.pop("imported")  # as a run of our own pack: its simulator must be a model
    con.execute("UPDATE runs SET config = ?, simulator = 'rules'", [json.dumps(cfg)])
    con.close()
    schema = schema_file(tmp_path)
    out = tmp_path / "s.json"
    r = export(db, [run], out, "--schema", schema)
    assert r.exit_code == 1 and not out.exists()
    assert ("run run0 is not comparable with τ²-bench: payment differences rounded to cents; "
            "its user simulator `rules` is not a language model") in r.output
    assert "--allow-differences" in r.output
    r = export(db, [run], out, "--schema", schema, "--allow-differences")
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["submission_type"] == "custom"
    v = doc["methodology"]["verification"]
    assert v["modified_prompts"] is True
    assert "run0: payment differences rounded to cents" in v["details"]
    assert "Differences from τ²-bench: run0: payment differences" in doc["methodology"]["notes"]


def test_checkout_gives_schema_and_task_coverage(tmp_path: Path) -> None:
    db = tmp_path / "b.duckdb"
    (run,) = imported(tmp_path, db, results_file(tmp_path))
    checkout = tmp_path / "tau2-bench"
    tasks = checkout / "data" / "tau2" / "domains" / "retail"
    tasks.mkdir(parents=True)
    (tasks / "tasks.json").write_text(json.dumps([{"id": str(i)} for i in range(5)]))
    web = checkout / "web" / "leaderboard" / "public" / "submissions"
    web.mkdir(parents=True)
    (web / "schema.json").write_text(json.dumps(SCHEMA))
    out = tmp_path / "s.json"
    r = export(db, [run], out, "--tau2", checkout)
    assert r.exit_code == 0, r.output
    v = json.loads(out.read_text())["methodology"]["verification"]
    assert v["omitted_questions"] is True
    assert v["details"] == "retail: 3 of τ²'s 5 tasks, 2 left out"
    (tasks / "split_tasks.json").write_text(json.dumps({"base": ["0", "1", "2"]}))
    r = export(db, [run], out, "--tau2", checkout)
    v = json.loads(out.read_text())["methodology"]["verification"]
    assert v["omitted_questions"] is False and v["details"] == "retail: 3 of τ²'s 3 tasks"


def test_cli_mistakes(tmp_path: Path) -> None:
    r = bench("export", "tau2-submission", "x", "-o", tmp_path / "s.json",
              "--model-organization", "O", "--db", tmp_path / "b.duckdb")
    assert r.exit_code == 2 and "give --schema PATH or --tau2 CHECKOUT" in r.output
    r = bench("export", "tau2-submission", "x", "-o", tmp_path / "s.json",
              "--model-organization", "O", "--schema", tmp_path / "none.json")
    assert r.exit_code == 1 and "none.json: not found" in r.output


_TAU2_SUBMISSION = r"""
import json, sys
from pathlib import Path
from loguru import logger
logger.remove()
from tau2.data_model.simulation import Results
from tau2.scripts.leaderboard.prepare_submission import get_metrics
from tau2.scripts.leaderboard.submission import Submission
sub = Submission.model_validate_json(Path(sys.argv[1]).read_text())
_, domains, model, user = get_metrics([Results.load(Path(p)) for p in sys.argv[2:]])
print(json.dumps({"valid": sub.model_name, "model": model, "user": user,
                  "results": {d: r.model_dump(exclude_none=True) for d, r in domains.items()}}))
"""


@needs_tau2
def test_tau2s_own_submission_code_agrees(tmp_path: Path) -> None:
    db = tmp_path / "b.duckdb"
    files = [results_file(tmp_path), results_file(tmp_path, "airline")]
    runs = imported(tmp_path, db, *files)
    out = tmp_path / "submission.json"
    r = export(db, runs, out, "--schema", schema_file(tmp_path))
    assert r.exit_code == 0, r.output
    assert TAU2_PY and TAU2_CHECKOUT
    env = {**os.environ, "TAU2_DATA_DIR": str(Path(TAU2_CHECKOUT) / "data")}
    res = subprocess.run([TAU2_PY, "-c", _TAU2_SUBMISSION, str(out), *map(str, files)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    theirs = json.loads(res.stdout.strip().splitlines()[-1])
    doc = json.loads(out.read_text())
    assert theirs["model"] == doc["model_name"]
    assert theirs["user"] == doc["methodology"]["user_simulator"]
    assert theirs["results"].keys() == doc["results"].keys()
    for domain, fig in theirs["results"].items():
        assert fig.keys() == doc["results"][domain].keys()
        for key, value in fig.items():
            assert doc["results"][domain][key] == pytest.approx(value, abs=1e-9), key
