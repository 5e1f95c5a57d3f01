"""A sixth protocol as a true plug-in (issue 30, "done when"): `echo_check`, a package outside
the source tree (tests/fixtures/plugin_protocol) installed by a `*.dist-info/entry_points.txt`
on PYTHONPATH, compiles, runs, reports and rejudges with no file of benchpack touched. Every
`bench` runs in a subprocess, so the rest of the suite never sees the plug-in.
Besides the four stages, `bench compare` pairs its figure and `bench report` finds its own
report.

Hand-computed figures: `echo_share` is the share of `expected_words` the agent's last reply
contains. s1 expects alpha, beta, gamma, delta and the agent says "Alpha and BETA." → 2/4 =
0.5; s2 expects one, two and the agent says "one, two" → 2/2 = 1.0; the summary's macro mean
over the two sessions is 0.75."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from conftest import ROOT

PLUGIN = ROOT / "tests" / "fixtures" / "plugin_protocol" / "echo_check"

PACK = """\
benchpack: 1
name: echo
personas:
  - id: p
    profile: {role: Analyst}
episodes:
  - id: e1
    persona: p
    sessions:
      - id: s1
        protocol: echo_check
        request: Say alpha, beta, gamma and delta.
        expected_words: [alpha, beta, gamma, delta]
        pass_share: 0.5
      - id: s2
        protocol: echo_check
        request: Say one and two.
        expected_words: [one, two]
"""

BAD = """\
benchpack: 1
name: echo
personas:
  - id: p
    profile: {role: Analyst}
episodes:
  - id: e1
    persona: p
    sessions:
      - id: s1
        protocol: echo_check
        request: Say alpha.
        expected_word: [alpha]
        pass_share: 2
      - id: s2
        protocol: echo_chek
        request: Say one.
"""

AGENT = 'sessions:\n  s1: [{say: "Alpha and BETA."}]\n  s2: [{say: "one, two"}]\n'
CRASHING = 'sessions:\n  s1: [{say: "Alpha and BETA."}]\n'  # s2 not covered: an agent error


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the plug-in and its distribution metadata, as `pip install` would
    leave them (the entry point is all benchpack reads)."""
    root = tmp_path_factory.mktemp("site")
    shutil.copytree(PLUGIN, root / "echo_check",
                    ignore=shutil.ignore_patterns("__pycache__"))
    info = root / "echo_check-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-check\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[benchpack.protocols]\necho_check = echo_check:PLUGIN\n")
    return root


def bench(cwd: Path, *args: str, plugin: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "BENCHPACK_CACHE_DIR": str(cwd / "compile-cache")}
    env.pop("PYTHONPATH", None)
    if plugin is not None:
        env["PYTHONPATH"] = str(plugin)
    return subprocess.run([sys.executable, "-c", "import sys; sys.argv[0] = 'bench'; "
                           "from benchpack.cli import main; main()", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def git_status() -> str | None:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--ignored",
                               "--untracked-files=all", "--", "specs", "compiler", "runtime",
                               "reports", "cli", "schemas"],
                              capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def sessions(db: Path, run: str) -> dict[str, dict[str, Any]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT name, status, error_kind, extra FROM sessions "
                           "WHERE run_id = ? ORDER BY name", [run]).fetchall()
    finally:
        con.close()
    return {r[0]: {"status": r[1], "error_kind": r[2], **json.loads(r[3] or "{}")}
            for r in rows}


def plugin_table(cwd: Path, run: str, site: Path) -> dict[str, Any]:
    res = bench(cwd, "report", "summary", "--db", "s.duckdb", "--run", run, "--format", "json",
                plugin=site)
    assert res.returncode == 0, res.stderr
    tables = [t for t in json.loads(res.stdout)["tables"] if t["title"].startswith("echo_check")]
    assert len(tables) == 1
    return tables[0]


def test_a_plugin_protocol_compiles_runs_reports_and_rejudges(tmp_path: Path, site: Path) -> None:
    before = git_status()
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "pack.yaml").write_text(PACK)
    (tmp_path / "agent.yaml").write_text(AGENT)

    res = bench(tmp_path, "compile", "pack", "-o", "plan", plugin=site)
    assert res.returncode == 0, res.stdout + res.stderr
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text())
    s1 = plan["sessions"]["session.echo.e1.s1"]
    assert (s1["protocol"], s1["material"], s1["limits"]["max_turns"]) == (
        "echo_check", {"expected_words": ["alpha", "beta", "gamma", "delta"],
                       "pass_share": 0.5}, 1)

    res = bench(tmp_path, "run", "plan", "--agent", "scripted:agent.yaml", "--judge", "rules",
                "--simulator", "rules", "--db", "s.duckdb", "--run-id", "e1", "--quiet",
                "--cache-dir", "cache", plugin=site)
    assert res.returncode == 0, res.stdout + res.stderr
    rows = sessions(tmp_path / "s.duckdb", "e1")
    assert {k: (r["status"], r["echo_share"], r["echo_passed"]) for k, r in rows.items()} == {
        "s1": ("finished", 0.5, True), "s2": ("finished", 1.0, True)}

    table = plugin_table(tmp_path, "e1", site)
    # an exact word count: the rules judge of the run decided nothing here, so it is not named
    assert table["title"] == "echo_check (plug-in protocol; macro over sessions)"
    (row,) = table["rows"]
    assert (row["sessions"], row["echo_share"]["value"], row["echo_share"]["n"]) == (2, 0.75, 2)

    # compare pairs the plug-in's figure session by session: s1 0.5 → 1.0, s2 1.0 → 1.0, so
    # Δ = (0.5 + 0) / 2 = 0.25; and its own report is found by name
    (tmp_path / "agent2.yaml").write_text(AGENT.replace("Alpha and BETA.",
                                                        "alpha beta gamma delta"))
    res = bench(tmp_path, "run", "plan", "--agent", "scripted:agent2.yaml", "--judge", "rules",
                "--simulator", "rules", "--db", "s.duckdb", "--run-id", "e2", "--quiet",
                "--cache-dir", "cache", plugin=site)
    assert res.returncode == 0, res.stdout + res.stderr
    res = bench(tmp_path, "compare", "e1", "e2", "--db", "s.duckdb", "--format", "json",
                plugin=site)
    assert res.returncode == 0, res.stderr
    (row,) = [r for r in json.loads(res.stdout)["tables"][0]["rows"]
              if r["metric"] == "echo share"]
    assert (row["a"]["value"], row["b"]["value"], row["delta"]["value"], row["paired"]) == (
        0.75, 1.0, 0.25, 2)
    res = bench(tmp_path, "report", "echo-words", "--db", "s.duckdb", "--run", "e1",
                "--format", "json", plugin=site)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["tables"][0]["rows"] == [
        {"run": "e1", "session": "s1", "share": 0.5}, {"run": "e1", "session": "s2", "share": 1.0}]
    res = bench(tmp_path, "query", "SELECT run_id, name, echo_share FROM echo_results "
                "ORDER BY ALL", "--db", "s.duckdb", "--format", "csv", plugin=site)
    assert (res.returncode, res.stdout.split()) == (0, [
        "run_id,name,echo_share", "e1,s1,0.5", "e1,s2,1.0", "e2,s1,1.0", "e2,s2,1.0"]), res.stderr

    # the rejudge scores the transcripts again: a source row spoiled by hand does not survive
    con = duckdb.connect(str(tmp_path / "s.duckdb"))
    con.execute("""UPDATE sessions SET extra = json_object('echo_share', 0.0,
                   'echo_passed', false) WHERE run_id = 'e1'""")
    con.close()
    res = bench(tmp_path, "rejudge", "e1", "--judge", "rules", "--db", "s.duckdb", "--as", "rj",
                "--quiet", "--cache-dir", "cache", plugin=site)
    assert res.returncode == 0, res.stdout + res.stderr
    again = sessions(tmp_path / "s.duckdb", "rj")
    assert {k: (r["echo_share"], r["echo_rejudged_from"], r["rejudge"]["of"])
            for k, r in again.items()} == {"s1": (0.5, 0.0, "e1"), "s2": (1.0, 0.0, "e1")}
    (row,) = plugin_table(tmp_path, "rj", site)["rows"]
    assert row["echo_share"]["value"] == 0.75

    if before is not None:
        assert git_status() == before  # nothing of benchpack's source was written


def test_an_agent_crash_scores_the_plugins_worst(tmp_path: Path, site: Path) -> None:
    """s2's agent fails (the script does not cover it): the plug-in's worst score, 0, goes to
    `extra` with the session counted as a failure, so the mean is (0.5 + 0) / 2 = 0.25, not
    0.5 (the crash dropped from the average)."""
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "pack.yaml").write_text(PACK)
    (tmp_path / "agent.yaml").write_text(CRASHING)
    assert bench(tmp_path, "compile", "pack", "-o", "plan", plugin=site).returncode == 0
    res = bench(tmp_path, "run", "plan", "--agent", "scripted:agent.yaml", "--judge", "rules",
                "--simulator", "rules", "--db", "s.duckdb", "--run-id", "c1", "--quiet",
                "--cache-dir", "cache", plugin=site)
    assert res.returncode == 1, res.stdout + res.stderr
    rows = sessions(tmp_path / "s.duckdb", "c1")
    assert (rows["s2"]["status"], rows["s2"]["error_kind"], rows["s2"]["echo_share"],
            rows["s2"]["echo_passed"]) == ("error", "agent", 0.0, False)
    (row,) = plugin_table(tmp_path, "c1", site)["rows"]
    assert (row["sessions"], row["echo_share"]["value"]) == (2, 0.25)
    # the simulator report reads the plug-in's own check (a session without an answer):
    # s2, 1 of 2; leaks it does not define stay unknown
    res = bench(tmp_path, "report", "simulator", "--db", "s.duckdb", "--run", "c1",
                "--format", "json", plugin=site)
    assert res.returncode == 0, res.stderr
    (row,) = json.loads(res.stdout)["tables"][0]["rows"]
    assert (row["protocol"], row["sessions"], row["premature"], row["premature_rate"]["value"],
            row["leak_sessions"]) == ("echo_check", 2, 1, 0.5, None)


def test_mistakes_in_plugin_material_are_located(tmp_path: Path, site: Path) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "pack.yaml").write_text(BAD)
    res = bench(tmp_path, "compile", "bad", "-o", "plan", plugin=site)
    assert res.returncode == 1
    lines = [x.split(" [at ")[0] + (" (hint" + x.split(" (hint", 1)[1] if " (hint" in x else "")
             for x in (res.stdout + res.stderr).splitlines() if ": error " in x]
    assert lines == [
        "bad/pack.yaml:10:9: error E102 echo_check session `s1` is missing the required key "
        "`expected_words` (hint: add `expected_words: …`)",
        "bad/pack.yaml:13:9: error E101 unknown key `expected_word` in echo_check session `s1` "
        "(hint: did you mean `expected_words`?) [fixable]",
        "bad/pack.yaml:14:21: error E104 `pass_share` must be at most 1.0, found 2",
        "bad/pack.yaml:16:19: error E104 `protocol` cannot be `echo_chek`; expected "
        "'intent_tracking', 'staged_disclosure', 'trigger_rubric', 'verified_outcome' or "
        "'instructed_user' or an installed plug-in (echo_check) "
        "(hint: did you mean `echo_check`?) [fixable]"]
    assert "Traceback" not in res.stdout + res.stderr


def test_without_the_plugin_its_protocol_is_unknown_even_after_a_cached_compile(
        tmp_path: Path, site: Path) -> None:
    """The compile cache records the plug-ins a pack used: uninstalling one is a miss."""
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "pack.yaml").write_text(PACK)
    (tmp_path / "agent.yaml").write_text(AGENT)
    assert bench(tmp_path, "compile", "pack", "-o", "plan", plugin=site).returncode == 0
    res = bench(tmp_path, "compile", "pack", "-o", "plan2")
    assert res.returncode == 1
    assert "pack/pack.yaml:11:19: error E104 `protocol` cannot be `echo_check`" in res.stderr
    # the plan compiled with it does not run without it, and says why in one line
    res = bench(tmp_path, "run", "plan", "--agent", "scripted:agent.yaml", "--judge", "rules",
                "--simulator", "rules", "--db", "s.duckdb", "--quiet")
    assert res.returncode == 1
    assert ("session session.echo.e1.s1 is of protocol `echo_check`, neither built in nor an "
            "installed plug-in (hint: install the package that provides it; 2 sessions "
            "affected)") in res.stderr
    assert "Traceback" not in res.stderr


def test_the_plugin_changes_no_schema_and_builtin_packs_read_no_entry_point(
        tmp_path: Path, site: Path) -> None:
    res = bench(tmp_path, "schema", "-o", "schemas", plugin=site)
    assert res.returncode == 0, res.stderr
    for f in sorted((ROOT / "schemas").glob("*.json")):
        assert (tmp_path / "schemas" / f.name).read_bytes() == f.read_bytes(), f.name
    probe = ("import sys; from pathlib import Path; from benchpack.compiler import compile_pack;"
             "from benchpack.specs import plugins;"
             "r = compile_pack(Path(sys.argv[1]), Path(sys.argv[2]), use_cache=False);"
             "print(r.ok, plugins.consulted())")
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", probe, str(ROOT / "tests" / "fixtures" /
                                                           "pibench_case"), str(tmp_path / "p")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.stdout.split() == ["True", "False"], out.stderr


@pytest.mark.parametrize(("declares", "refusal"), [
    ({"metric_columns": ("echo_share",)}, "declares `sessions` columns (echo_share)"),
    ({"score_columns": frozenset({"echo_share"})}, "declares `sessions` columns"),
    ({"pass_k": True}, "declares `pass_k`")])
def test_a_plugin_interpreter_claiming_what_the_store_cannot_hold_is_refused(
        monkeypatch: pytest.MonkeyPatch, declares: dict[str, Any], refusal: str) -> None:
    """A column the DDL lacks would fail every insert; a pass@k the summary counts but the
    `verified_tasks` view does not would make two different numbers: refused at load."""
    from types import SimpleNamespace

    from benchpack.runtime.protocols import base
    from benchpack.specs.plugins import PluginError

    interpreter = SimpleNamespace(name="toy", metric_columns=(), score_columns=frozenset(),
                                  pass_k=False)
    for key, value in declares.items():
        setattr(interpreter, key, value)
    monkeypatch.setattr(base, "plugin", lambda name: SimpleNamespace(
        interpreter=lambda: interpreter))
    with pytest.raises(PluginError, match=refusal.replace("(", r"\(").replace(")", r"\)")):
        base.plugin_interpreter("toy")
    interpreter.metric_columns, interpreter.score_columns, interpreter.pass_k = (), frozenset(), False
    assert base.plugin_interpreter("toy") is interpreter


def test_a_plugin_that_fails_to_load_is_one_line_not_a_benchpack_bug(tmp_path: Path) -> None:
    broken = tmp_path / "site"
    info = broken / "broken-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[benchpack.protocols]\necho_check = no_such_module:PLUGIN\n")
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "pack.yaml").write_text(PACK)
    res = bench(tmp_path, "compile", "pack", "-o", "plan", plugin=broken)
    assert (res.returncode, res.stderr.strip()) == (1, (
        "✗ protocol plug-in `echo_check` (no_such_module:PLUGIN) failed to load: "
        "ModuleNotFoundError: No module named 'no_such_module' (hint: fix or reinstall the "
        "package that provides it)"))


def test_plugin_names_are_plain_and_built_ins_win(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reports quote a protocol's name into SQL: a name with a quote, a space or a dot is
    not a protocol; one a built-in has stays the built-in."""
    import importlib.metadata
    from importlib.metadata import EntryPoint

    from benchpack.specs import plugins

    installed = [EntryPoint(name, "pkg:PLUGIN", plugins.GROUP) for name in
                 ("echo_ok", "it's", "two words", "a.b", "intent_tracking", "Upper")]
    plugins.plugin_entry_points.cache_clear()
    real = importlib.metadata.entry_points  # pydantic reads its own group meanwhile
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: (
        installed if group == plugins.GROUP else real(group=group)))
    try:
        assert plugins.plugin_names() == ("echo_ok",)
        assert (plugins.is_plugin("echo_ok"), plugins.is_plugin("intent_tracking")) == (
            True, False)
    finally:
        plugins.plugin_entry_points.cache_clear()
