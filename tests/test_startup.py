"""Start-up hygiene: commands that do not need the compiler, the runtime or the statistics do not
import them (what each costs is measured by benchmarks/startup_bench.py, never timed here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("networkx", "pydantic", "jsonschema", "jinja2", "litellm", "ruamel", "yaml",
         "benchpack.compiler", "benchpack.runtime", "benchpack.specs")

_PROBE = """
import atexit, json, sys
atexit.register(lambda: print("MODULES=" + json.dumps(sorted(sys.modules)), file=sys.__stderr__))
sys.argv = ["bench", *json.loads(sys.argv[1])]
from benchpack.cli import main
main()
"""


def _modules(*args: str) -> set[str]:
    res = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(list(args))],
                         capture_output=True, text=True, timeout=120)
    line = next(x for x in res.stderr.splitlines() if x.startswith("MODULES="))
    return set(json.loads(line.removeprefix("MODULES=")))


# every command masks secrets and maps errors to exit codes; readers check the store file
# and its format (the specs package loads its pydantic models only when they are used); all
# stdlib only
LIGHT = {"benchpack.runtime", "benchpack.runtime.redact", "benchpack.runtime.errors",
         "benchpack.specs", "benchpack.specs.storefile", "benchpack.specs.storeformat",
         "benchpack.specs.secrets", "benchpack.specs.limits"}


def _heavy(modules: set[str], extra: tuple[str, ...] = ()) -> list[str]:
    return sorted(m for m in modules - LIGHT
                  if any(m == h or m.startswith(h + ".") for h in (*HEAVY, *extra)))


@pytest.mark.parametrize("args", [("--help",), ("compile", "--help"), ("run", "--help"),
                                  ("report", "--help")])
def test_help_imports_nothing_heavy(args: tuple[str, ...]) -> None:
    assert _heavy(_modules(*args), ("duckdb", "rich")) == []


def test_query_imports_only_duckdb_and_the_store_views(tmp_path: Path) -> None:
    from benchpack.runtime.store import connect

    db = tmp_path / "s.duckdb"
    connect(db).close()
    mods = _modules("query", "SELECT 1", "--db", str(db))
    assert "duckdb" in mods
    assert _heavy(mods, ("benchpack.reports.stats", "benchpack.reports.builtin")) == []


def test_a_rules_scripted_run_does_not_import_litellm(tmp_path: Path) -> None:
    """Importing litellm costs seconds and ~170 MB; a run that makes no LLM call (scripted
    agent, rules judge and simulator) must not pay for it, nor for the openai SDK."""
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "pack.yaml").write_text(
        "benchpack: 1\nname: lean\npersonas:\n  - id: p\n    profile: {role: Analyst}\n"
        "episodes:\n  - id: e1\n    persona: p\n    sessions:\n      - id: s\n"
        "        protocol: intent_tracking\n        request: 总结一下笔记。\n", encoding="utf-8")
    (tmp_path / "agent.yaml").write_text("default:\n  - say: Done.\n", encoding="utf-8")
    plan = tmp_path / "plan"
    from click.testing import CliRunner

    from benchpack.cli import cli

    res = CliRunner().invoke(cli, ["compile", str(pack), "-o", str(plan)])
    assert res.exit_code == 0, res.output
    mods = _modules("run", str(plan), "--agent", f"scripted:{tmp_path / 'agent.yaml'}",
                    "--judge", "rules", "--simulator", "rules", "--quiet",
                    "--db", str(tmp_path / "run.duckdb"), "--cache-dir", str(tmp_path / "c"))
    assert "benchpack.runtime.runner" in mods  # the run did happen in this process
    assert sorted(m for m in mods if m.split(".")[0] in ("litellm", "openai")) == []
