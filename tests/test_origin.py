"""Issue 23 item 4: the pack's `origin:` label — written in the pack, compiled into the plan
(only when set), recorded with the run, and shown by every report: comparable with the
benchmark (no differences) or not, with each difference; `bench compare` lists an origin that
differs between runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from benchpack.cli.main import cli
from benchpack.specs.origin_label import OriginLabel, origin_of_config

PACK = Path(__file__).resolve().parents[1] / "taskpacks" / "claw-lab-ops"
ORIGIN = ("origin: {benchmark: tau2-bench, version: a2c0247, differences: "
          "[\"modify_pending_order_items rounds the payment difference to cents\"]}\n")


def bench(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _pack(tmp: Path, origin: str | None) -> Path:
    out = tmp / "pack"
    shutil.copytree(PACK, out)
    if origin is not None:
        text = (out / "pack.yaml").read_text()
        (out / "pack.yaml").write_text(text.replace("version: 0.1.0\n",
                                                    "version: 0.1.0\n" + origin, 1))
    return out


def _run(tmp: Path, origin: str | None, run_id: str, db: Path) -> dict[str, Any]:
    pack = _pack(tmp / run_id, origin)
    r = bench("compile", pack, "-o", tmp / run_id / "build")
    assert r.exit_code == 0, r.output
    plan: dict[str, Any] = json.loads((tmp / run_id / "build" / "plan.json").read_text())
    r = bench("run", tmp / run_id / "build", "--agent", f"scripted:{pack}/demo/agent.yaml",
              "--judge", "rules", "--db", db, "--run-id", run_id, "--quiet")
    assert r.exit_code == 0, r.output
    return plan


def test_origin_from_pack_to_plan_to_run_to_every_report(tmp_path: Path) -> None:
    db = tmp_path / "b.duckdb"
    plan = _run(tmp_path, ORIGIN, "with", db)
    assert plan["pack"]["origin"] == {
        "benchmark": "tau2-bench", "version": "a2c0247",
        "differences": ["modify_pending_order_items rounds the payment difference to cents"]}
    con = duckdb.connect(str(db), read_only=True)
    row = con.execute("SELECT config FROM runs WHERE run_id = 'with'").fetchone()
    con.close()
    assert row is not None
    assert json.loads(row[0])["origin"] == plan["pack"]["origin"]
    for name in ("summary", "pass-k", "inventory"):
        r = bench("report", name, "--db", db, "--run", "with", "--format", "json")
        notes = json.loads(r.output)["notes"]
        assert notes[0] == ("⚠ Origin (with): not comparable with tau2-bench a2c0247: 1 "
                            "difference — modify_pending_order_items rounds the payment "
                            "difference to cents. These figures are not comparable with the "
                            "benchmark's own (its leaderboard)."), name
    r = bench("report", "--format", "html", "-o", tmp_path / "r.html", "--db", db)
    assert r.exit_code == 0, r.output
    assert "not comparable with tau2-bench a2c0247" in (tmp_path / "r.html").read_text()

    # a second run of the pack without differences: comparable, and bench compare names the
    # origin among what differs between the two runs
    plan2 = _run(tmp_path, ORIGIN.replace('"modify_pending_order_items rounds the payment '
                                          'difference to cents"', ""), "parity", db)
    assert plan2["pack"]["origin"]["differences"] == []
    notes = json.loads(bench("report", "summary", "--db", db, "--run", "parity", "--format",
                             "json").output)["notes"]
    assert notes[0] == ("Origin (parity): comparable with tau2-bench a2c0247 (no "
                        "differences declared).")
    r = bench("compare", "with", "parity", "--db", db)
    assert r.exit_code != 0
    assert "origin: with not comparable with tau2-bench a2c0247" in " ".join(r.output.split())
    assert "parity comparable with tau2-bench a2c0247" in " ".join(r.output.split())


def test_a_pack_without_origin_keeps_its_plan_and_reports_say_nothing(tmp_path: Path) -> None:
    db = tmp_path / "b.duckdb"
    plan = _run(tmp_path, None, "plain", db)
    assert "origin" not in plan["pack"]
    notes = json.loads(bench("report", "summary", "--db", db, "--format", "json").output)["notes"]
    assert not any("Origin" in n for n in notes)


@pytest.mark.parametrize("origin, expect", [
    ("origin: {benchmark: tau2-bench}\n", "`origin` is missing the required key `version`"),
    ("origin: {benchmark: tau2-bench, version: x, diferences: []}\n",
     "unknown key `diferences` in `origin`"),
    ("origin: {benchmark: tau2-bench, version: x, differences: [\"\"]}\n", "differences"),
])
def test_origin_mistakes_are_located(tmp_path: Path, origin: str, expect: str) -> None:
    pack = _pack(tmp_path, origin)
    r = bench("validate", pack)
    assert r.exit_code == 1
    line = next(x for x in r.output.splitlines() if "origin" in x)
    assert line.startswith(f"{pack / 'pack.yaml'}:25:") and expect in r.output, r.output


def test_an_unreadable_recorded_origin_is_never_comparable() -> None:
    assert origin_of_config({}) is None
    assert origin_of_config({"origin": {"benchmark": "b", "version": "1", "differences": []}}
                            ) == OriginLabel("b", "1", ())
    bad = origin_of_config({"origin": {"benchmark": "b", "differences": "x"}})
    assert bad is not None and not bad.comparable and "not readable" in bad.verdict()


def test_a_difference_that_shows_only_in_some_endings_is_listed_only_for_runs_that_had_one(
        tmp_path: Path) -> None:
    db = tmp_path / "b.duckdb"
    ended = ("origin: {benchmark: tau2-bench, version: a2c0247, differences: [], if_ended: "
             "{%s: [\"text-ends: a text answer scores otherwise\"]}}\n")
    _run(tmp_path, ended % "never_ends_so", "quiet", db)
    con = duckdb.connect(str(db), read_only=True)
    term = con.execute("SELECT min(termination) FROM sessions").fetchall()[0][0]
    con.close()
    plan = _run(tmp_path, ended % term, "ended", db)
    assert plan["pack"]["origin"]["if_ended"] == {
        term: ["text-ends: a text answer scores otherwise"]}

    def first_note(run: str) -> str:
        return str(json.loads(bench("report", "summary", "--db", db, "--run", run, "--format",
                                    "json").output)["notes"][0])

    # no session of the first run ended so: comparable, the condition said
    assert first_note("quiet") == ("Origin (quiet): comparable with tau2-bench a2c0247 (no "
                                   "differences declared; 1 more if a session ends "
                                   "`never_ends_so`).")
    # sessions of the second did: the difference is listed as if declared outright
    assert first_note("ended") == ("⚠ Origin (ended): not comparable with tau2-bench a2c0247: "
                                   "1 difference — text-ends: a text answer scores otherwise. "
                                   "These figures are not comparable with the benchmark's own "
                                   "(its leaderboard).")
    label = OriginLabel("b", "1", ("d",), (("agent_error", ("t", "d")), ("x", ("u",))))
    assert label.given(["done"]) == OriginLabel("b", "1", ("d",), label.if_ended)
    assert label.given(["done", "agent_error"]) == OriginLabel("b", "1", ("d", "t"),
                                                               (("x", ("u",)),))
    assert origin_of_config({"origin": label.as_json()}) == label
    # a condition that is not a list of texts is unreadable, never comparable
    bad = origin_of_config({"origin": {"benchmark": "b", "version": "1", "differences": [],
                                       "if_ended": {"agent_error": "t"}}})
    assert bad is not None and not bad.comparable


VARIED = ("origin: {benchmark: tau2-bench, version: a2c0247, differences: [\"always: d0\"], "
          "if_vars: {vendor: {Lumora Optics: [\"lumora: d1\"], Other Optics: [\"other: d2\", "
          "\"always: d0\"]}, %s: {x: [\"never: d3\"]}}}\n")


def test_a_difference_of_one_variable_value_is_compiled_only_for_that_value(
        tmp_path: Path) -> None:
    # the pack's own value (vendor: Lumora Optics): its difference joins `differences`
    pack = _pack(tmp_path, VARIED % "facility")
    r = bench("compile", pack, "-o", tmp_path / "b1")
    assert r.exit_code == 0, r.output
    origin = json.loads((tmp_path / "b1" / "plan.json").read_text())["pack"]["origin"]
    assert origin == {"benchmark": "tau2-bench", "version": "a2c0247",
                      "differences": ["always: d0", "lumora: d1"]}
    # another value given with --var: that value's only, written once
    r = bench("compile", pack, "-o", tmp_path / "b2", "--var", "vendor=Other Optics")
    assert r.exit_code == 0, r.output
    origin = json.loads((tmp_path / "b2" / "plan.json").read_text())["pack"]["origin"]
    assert origin["differences"] == ["always: d0", "other: d2"]
    # a value with no differences of its own: the unconditional ones only
    r = bench("compile", pack, "-o", tmp_path / "b3", "--var", "vendor=Acme")
    assert r.exit_code == 0, r.output
    origin = json.loads((tmp_path / "b3" / "plan.json").read_text())["pack"]["origin"]
    assert origin["differences"] == ["always: d0"]


def test_an_if_vars_variable_the_pack_does_not_declare_is_located(tmp_path: Path) -> None:
    pack = _pack(tmp_path, VARIED % "facilty")
    r = bench("validate", pack)
    assert r.exit_code == 1, r.output
    assert (f"{pack / 'pack.yaml'}:25:") in r.output
    assert ("error E202 `origin.if_vars` names the variable `facilty`, which the pack's `vars:` "
            "does not declare") in r.output and "(hint: did you mean `facility`?)" in r.output
    assert "[fixable]" in r.output  # a rename `bench validate --fix` can make
