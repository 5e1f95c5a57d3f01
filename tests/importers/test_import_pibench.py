"""`bench import pibench` (issue 13): π-Bench persona directories become an intent-tracking pack
that compiles with zero errors (also under --strict), re-imports byte for byte, accounts for every
source field in IMPORT_REPORT.md, keeps each episode's DAG exactly, and whose runs group by
`task_type` and by domain. Fixture of our own in the release's shape
(tests/fixtures/pibench_release/, an English and a Chinese persona); the released sample in
../shared/peer-data is used when it is there (skipped otherwise)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from benchpack.cli.main import cli
from benchpack.compiler.importers.pibench import FIELDS

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "pibench_release" / "data"


def _peer_root() -> Path:
    if os.environ.get("BENCH_PEER_DATA"):
        return Path(os.environ["BENCH_PEER_DATA"])
    here = Path(__file__).resolve()
    found = [p / "shared" / "peer-data" for p in here.parents
             if (p / "shared" / "peer-data").is_dir()]
    return found[0] if found else here.parent / "no-peer-data"


PEER = _peer_root() / "pibench" / "data"
needs_peer = pytest.mark.skipif(not (PEER / "Financier" / "episode.yaml").is_file(),
                                reason="../shared/peer-data (π-Bench sample) is not here")


def bench(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _import(src: Path, out: Path, *extra: str) -> Path:
    r = bench("import", "pibench", src, "-o", out, *extra)
    assert r.exit_code == 0, r.output
    return out


def _compile(pack: Path, out: Path) -> dict[str, Any]:
    r = bench("compile", pack, "-o", out, "--strict")
    assert r.exit_code == 0 and "no problems" in r.output, r.output
    return json.loads((out / "plan.json").read_text(encoding="utf-8"))


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _sessions(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in plan["sessions"].values()}


# --------------------------------------------------------------------------- the fixture


def test_fixture_compiles_strict_and_reimport_is_byte_identical(tmp_path: Path) -> None:
    a = _import(FIX, tmp_path / "a")
    b = _import(FIX, tmp_path / "b")
    assert _files(a) == _files(b)
    plan = _compile(a, tmp_path / "build")
    s = _sessions(plan)
    assert sorted(s) == ["curator_task_001", "curator_task_002", "curator_task_003",
                         "laoshi_task_001", "laoshi_task_002"]
    t1 = s["curator_task_001"]
    assert t1["protocol"] == "intent_tracking"
    assert [i["text"] for i in t1["hidden_intents"]] == [
        "Sort the register by lender, then by object number.",
        "Flag every loan whose insurance value is missing."]
    assert [c["evidence"]["files"] for c in t1["checklist"]] == [["loan_register.md"]] * 2
    assert t1["metadata"]["category"] == "short_term_independent"
    assert t1["metadata"]["domain"] == "curator"
    assert {"task_type:short_term_independent", "benchmark_role:test",
            "preference_threads:tables_for_lists"} <= set(t1["metadata"]["tags"])
    # Chinese text survives verbatim, assets keep their (Chinese) names
    zh = s["laoshi_task_001"]
    assert zh["request"].startswith("请根据 `单元计划.md`")
    assert zh["metadata"]["language"] == "zh"
    assert (a / "files" / "laoshi" / "laoshi_task_001" / "单元计划.md").read_bytes() == (
        FIX / "laoshi" / "tasks" / "laoshi_task_001" / "单元计划.md").read_bytes()
    # nested asset directories are kept
    assert (a / "files" / "curator" / "curator_task_002" / "notes" / "labels.md").is_file()
    # the app task gets our Gmail toolset under AppWorld's tool name; its evidence selection
    # and its (undescribed) grader are kept as comments, its app as a tag
    ep = (a / "episodes" / "curator.yaml").read_text(encoding="utf-8")
    assert ("app tool (benchpack toolset): mcp_appworld_gmail__send_email; grader evidence "
            "call ['email_addresses', 'subject', 'body']") in ep
    assert ("grader script (kept as a comment, not run): "
            "data/curator/scripts/curator_task_002_gmail.py") in ep
    assert (a / "tools" / "pibench" / "gmail.py").is_file()
    assert "app:gmail" in s["curator_task_002"]["metadata"]["tags"]


def test_verbosity_is_a_preference_not_invented_word_bounds(tmp_path: Path) -> None:
    """Issue 28: `verbosity: low/medium/high` stays a profile preference, verbatim; no style
    (whose word bounds π-Bench never states) and so no directive contradicting them (W322)."""
    plan = _compile(_import(FIX, tmp_path / "a"), tmp_path / "build")
    for pid, want in (("curator", "verbosity: low"), ("laoshi", "verbosity: medium")):
        persona = plan["personas"][pid]
        assert persona["style"] is None
        assert want in persona["profile"]["preferences"]


def test_dag_is_kept_exactly(tmp_path: Path) -> None:
    pack = _import(FIX, tmp_path / "p")
    for persona in ("curator", "laoshi"):
        _assert_dag_equals_episode(pack / "episodes" / f"{persona}.yaml",
                                   FIX / persona / "episode.yaml")


def _assert_dag_equals_episode(imported: Path, episode: Path) -> None:
    src = yaml.safe_load(episode.read_text(encoding="utf-8"))
    want = {(t["task_id"], d) for t in src["tasks"] for d in t["depends_on"]}
    got_ep = yaml.safe_load(imported.read_text(encoding="utf-8"))["episodes"][0]
    got = {(s["id"], d) for s in got_ep["sessions"] for d in s.get("depends_on", [])}
    assert got == want
    assert {s["id"] for s in got_ep["sessions"]} == {t["task_id"] for t in src["tasks"]}
    assert got_ep["id"] == src["episode_id"]


def test_import_report_lists_every_source_field(tmp_path: Path) -> None:
    pack = _import(FIX, tmp_path / "p")
    report = (pack / "IMPORT_REPORT.md").read_text(encoding="utf-8")
    for f, fate, _ in FIELDS:
        assert f"| `{f}` | {fate} |" in report
    # every key the fixture uses is named by a FIELDS row (nothing lost silently)
    names = " ".join(f for f, _, _ in FIELDS)
    for path in FIX.rglob("*.yaml"):
        for key in _keys(yaml.safe_load(path.read_text(encoding="utf-8"))):
            assert key in names, f"{path.name}: `{key}` is not in the report"
    fates = [fate for _, fate, _ in FIELDS]
    assert (f"Fields: {fates.count('mapped')} mapped, {fates.count('mapped with loss')} mapped "
            f"with loss, {fates.count('kept as a comment')} kept as a comment (in the pack's "
            f"YAML, not used), {fates.count('dropped')} dropped.") in report
    # issue 28: what survives only as a comment is not called mapped
    assert set(fates) == {"mapped", "mapped with loss", "kept as a comment", "dropped"}
    assert all("comment" not in why.split(";")[0] or fate == "kept as a comment"
               for _, fate, why in FIELDS if why.startswith(("kept in a comment", "in the comment",
                                                             "listed in a comment")))
    assert "Sessions 5, hidden intents 8, checklist items 5, dependencies 3, assets 3." in report


def _keys(obj: Any, parent: str = "") -> set[str]:
    """Keys as the report names them: metadata keys as `metadata.<key>`, AppWorld tool names
    (the keys of `objectives.tools[]`) as `<tool>`."""
    if isinstance(obj, dict):
        out = set()
        for k, v in obj.items():
            key = ("metadata.<key>" if parent == "metadata" and k != "difficulty"
                   else "<tool>" if str(k).startswith("mcp_") else str(k))
            out.add(key)
            out |= _keys(v, str(k))
        return out
    if isinstance(obj, list):
        return set().union(*(_keys(x, parent) for x in obj)) if obj else set()
    return set()


def test_unknown_source_fields_are_reported_not_lost(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(FIX / "curator", src / "curator")
    t = src / "curator" / "tasks" / "curator_task_003" / "task.yaml"
    t.write_text(t.read_text(encoding="utf-8") + "reviewer_note: check later\n", encoding="utf-8")
    r = bench("import", "pibench", src / "curator", "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "not in the π-Bench v2 shape were dropped" in r.output
    assert "`task.yaml.reviewer_note` (1×)" in (tmp_path / "out" / "IMPORT_REPORT.md").read_text(
        encoding="utf-8")


# --------------------------------------------------------------------------- broken sources


def _broken(tmp: Path, edit: str) -> Path:
    src = tmp / "src"
    shutil.copytree(FIX / "curator", src / "curator")
    c = src / "curator"
    if edit == "no profile":
        (c / "profile.yaml").unlink()
    elif edit == "unknown dependency":
        e = c / "episode.yaml"
        e.write_text(e.read_text().replace("[curator_task_001, curator_task_002]",
                                           "[curator_task_001, curator_task_009]"))
    elif edit == "cycle":
        e = c / "episode.yaml"
        e.write_text(e.read_text().replace(
            "  - task_id: curator_task_001\n    depends_on: []",
            "  - task_id: curator_task_001\n    depends_on: [curator_task_003]"))
    elif edit == "bad yaml":
        t = c / "tasks" / "curator_task_002" / "task.yaml"
        t.write_text(t.read_text().replace('title: "Email the designer"',
                                           'title: "Email the designer\n  : ['))
    elif edit == "no hidden intent":
        t = c / "tasks" / "curator_task_003" / "task.yaml"
        text = t.read_text()
        t.write_text(text[:text.index("  hidden_intent:")] + "metadata:\n  difficulty: medium\n")
    return c


@pytest.mark.parametrize(("edit", "expect"), [
    ("no profile", "curator/profile.yaml: no such file"),
    ("unknown dependency", "curator/episode.yaml:11:5: `curator_task_003` depends on unknown "
                           "task `curator_task_009`"),
    ("cycle", "curator/episode.yaml:5:5: dependency cycle curator_task_001 → curator_task_003 → "
              "curator_task_001"),
    ("bad yaml", "curator_task_002/task.yaml:7:15: not valid YAML"),
    ("no hidden intent", "curator_task_003/task.yaml:11:3: `hidden_intent` is empty"),
])
def test_broken_sources_are_located_one_line_errors(tmp_path: Path, edit: str,
                                                    expect: str) -> None:
    r = bench("import", "pibench", _broken(tmp_path, edit), "-o", tmp_path / "out")
    assert r.exit_code == 1, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("✗ "), r.output
    assert expect in lines[0], lines[0]
    assert "Traceback" not in r.output


def test_partial_accepts_a_sampled_persona_and_reports_the_gaps(tmp_path: Path) -> None:
    c = _broken(tmp_path, "no profile")
    (c / "episode.yaml").unlink()
    out = _import(c, tmp_path / "out", "--partial")
    report = (out / "IMPORT_REPORT.md").read_text(encoding="utf-8")
    assert "`curator`: no profile.yaml; the persona is a placeholder" in report
    assert "`curator`: no episode.yaml; tasks in id order, no dependencies known" in report
    _compile(out, tmp_path / "build")


# --------------------------------------------------------------------------- --by on a run


def test_reports_group_by_task_type_and_domain(tmp_path: Path) -> None:
    pack = _import(FIX, tmp_path / "p")
    _compile(pack, tmp_path / "build")
    agent = tmp_path / "agent.yaml"
    agent.write_text("default:\n" + "  - say: Done.\n" * 12, encoding="utf-8")
    db = tmp_path / "s.duckdb"
    r = bench("run", tmp_path / "build", "--agent", f"scripted:{agent}", "--simulator", "rules",
              "--judge", "rules", "--db", db, "--run-id", "r1", "--quiet",
              "--allow-python")  # the app task's Gmail is a python toolset
    assert r.exit_code == 0, r.output
    groups = {}
    for by in ("task_type", "category", "domain", "benchmark_role"):
        r = bench("report", "proc-comp", "--db", db, "--by", by, "--format", "json")
        assert r.exit_code == 0, r.output
        rows = json.loads(r.output)["tables"][0]["rows"]
        groups[by] = {row["group"]: row["sessions"] for row in rows}
    assert groups["task_type"] == {"long_term": 1, "short_term_contextual": 1,
                                   "short_term_independent": 2, "val": 1}
    assert groups["category"] == groups["task_type"]
    assert groups["domain"] == {"curator": 3, "laoshi": 2}
    # a tag only some sessions carry: the others are counted under (none), never dropped
    assert groups["benchmark_role"] == {"test": 1, "(none)": 4}
    # "Done." completes no hidden intent: PROC 0 in every group, never a shrunk denominator
    r = bench("report", "proc-comp", "--db", db, "--by", "task_type", "--format", "json")
    rows = {row["group"]: row for row in json.loads(r.output)["tables"][0]["rows"]}
    for row in rows.values():
        assert row["proc"]["value"] == 0.0 and row["proc"]["n"] == row["sessions"], row
    # nor any checklist item; tasks without a checklist have no COMP (not a 0 that would
    # drag the mean down, not a 1)
    assert rows["short_term_independent"]["comp"]["value"] == 0.0
    assert rows["long_term"]["comp"]["value"] is None
    r = bench("report", "proc-comp", "--db", db, "--by", "colour")
    assert r.exit_code == 1 and "cannot group by `colour`" in r.output


# --------------------------------------------------------------------------- peer data


@needs_peer
def test_peer_data_all_personas_compile_and_financier_dag_equals_episode(tmp_path: Path
                                                                          ) -> None:
    out = _import(PEER, tmp_path / "p", "--partial")
    plan = _compile(out, tmp_path / "build")
    domains = {s["metadata"]["domain"] for s in plan["sessions"].values()}
    assert domains == {"Financier", "law_trainee", "marketer", "pharmacist", "researcher"}
    _assert_dag_equals_episode(out / "episodes" / "Financier.yaml",
                               PEER / "Financier" / "episode.yaml")
    fin = _import(PEER / "Financier", tmp_path / "fin")
    assert len(_sessions(_compile(fin, tmp_path / "fin-build"))) == 20
    again = _import(PEER / "Financier", tmp_path / "fin2")
    assert _files(fin) == _files(again)


@needs_peer
def test_peer_data_each_mapped_field_count_equals_the_source(tmp_path: Path) -> None:
    """Issue 28, per field, counted on the source files and on the compiled plan (not on the
    import report): sessions = task.yaml files, hidden intents and checklist criteria verbatim
    and in order, app tools offered = the `objectives.tools` names of our apps, grader items =
    the documented checks (9 + 3 + 7 for Financier 002, 017, 020), assets byte for byte."""
    out = _import(PEER, tmp_path / "p", "--partial")
    plan = _compile(out, tmp_path / "build")
    sessions = _sessions(plan)
    tasks = sorted(PEER.glob("*/tasks/*/task.yaml"))
    assert len(sessions) == len(tasks)
    intents = criteria = 0
    app_tools: set[str] = set()
    for path in tasks:
        src = yaml.safe_load(path.read_text(encoding="utf-8"))
        got = sessions[src["task_id"]]
        want_i = [h["content"] for h in src["intent"]["hidden_intent"]]
        assert [h["text"] for h in got["hidden_intents"]] == want_i
        obj = src.get("objectives") or {}
        want_c = [c["criterion"] for c in obj.get("checklist") or []]
        assert [c["text"] for c in got["checklist"] if c["id"].startswith("c")] == want_c
        assert got["request"] == src["intent"]["initial_input"]
        intents += len(want_i)
        criteria += len(want_c)
        for spec in obj.get("tools") or []:
            app_tools |= set(spec)
        grader = obj.get("tools_evaluation_path") or ""
        g = [c for c in got["checklist"] if c["id"].startswith("g")]
        assert len(g) == {"Financier_task_002_simple_note.py": 9, "Financier_task_017.py": 3,
                          "Financier_task_020.py": 7}.get(grader.rsplit("/", 1)[-1], 0), grader
    assert (intents, criteria) == (sum(len(s["hidden_intents"]) for s in sessions.values()),
                                   sum(1 for s in sessions.values() for c in s["checklist"]
                                       if c["id"].startswith("c")))
    offered = {t for env in plan["environments"].values() for t in env["tools"]}
    assert app_tools <= offered, sorted(app_tools - offered)
    report = (out / "IMPORT_REPORT.md").read_text(encoding="utf-8")
    assert "Grader checks mapped to rules: 19." in report
    assert "Financier_task_005_gmail.py` dropped: its binary checks are not in the release" \
        in report
