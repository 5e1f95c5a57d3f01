"""The house rules that a reader cannot see break (issue 30): no editor or merge leftovers in
the repository, no module borrowing another module's private names, and messages that say
what they mean (the Ray note named a literal `{run_id}`)."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchpack.compiler import compile_pack
from benchpack.runtime.runner import RunOptions, run_plan
from conftest import ROOT

STAGES = ["specs", "compiler", "runtime", "reports", "cli"]
LEFTOVER = re.compile(r"\.(orig|rej|swp|swo|bak)$|~$|(^|/)\.#")
CASE = ROOT / "tests" / "fixtures" / "pibench_case"


def _tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                             check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [p for p in out.stdout.decode().split("\0") if p]


def test_no_editor_or_merge_leftovers_are_tracked() -> None:
    leftovers = [p for p in _tracked() if LEFTOVER.search(p)]
    assert leftovers == []


@pytest.mark.parametrize("name", ["cli/benchpack/cli/run.py.orig", "a/b.rej", "x.py~",
                                  "pkg/.mod.py.swp", "docs/.#notes.md"])
def test_the_leftover_pattern_catches_each_kind(name: str) -> None:
    assert LEFTOVER.search(name)


def private_imports(source: str) -> list[tuple[int, str]]:
    """(line, name) of every `from m import _name` (dunders are public protocol names)."""
    return [(node.lineno, a.name) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom)
            for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]


def test_the_private_import_finder_sees_both_forms() -> None:
    assert private_imports("from .x import _a, b\ndef f():\n    from ..y import _c as c\n"
                           "from z import __version__\n") == [(1, "_a"), (3, "_c")]


def test_no_module_imports_a_private_name_of_another() -> None:
    """A helper two modules need is public in a module of its own (inspect_ai's rule): a
    private name borrowed across modules is a contract nobody knows they signed."""
    found = [f"{path.relative_to(ROOT)}:{line}: {name}"
             for stage in STAGES for path in sorted((ROOT / stage / "benchpack").rglob("*.py"))
             for line, name in private_imports(path.read_text(encoding="utf-8"))]
    assert found == []


def test_lost_ray_sessions_name_the_real_run_id(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions a Ray worker lost at every attempt are reported with the `--resume` that runs
    them, naming the run (it printed `--resume {run_id}` literally)."""
    from benchpack.runtime import ray_executor

    async def lose_everything(ctx: Any, chains: list[Any], finished: Any, progress: Any,
                              stats: dict[str, int]) -> None:
        stats["lost"] = sum(len(c[2]) for c in chains)

    monkeypatch.setattr(ray_executor, "check_options", lambda options: None)
    monkeypatch.setattr(ray_executor, "run_chains", lose_everything)
    plan = tmp_path / "plan"
    assert compile_pack(CASE, plan, use_cache=False).ok
    summary = run_plan(RunOptions(
        plan=plan, agent=f"scripted:{CASE / 'claude_agent.yaml'}",
        judge=f"scripted:{CASE / 'claude_judge.yaml'}", simulator="rules",
        db=tmp_path / "s.duckdb", progress=False, cache_dir=tmp_path / "cache",
        executor="ray", run_id="lost-run"))
    assert summary.first_errors[0] == ("3 session runs not run: their Ray worker died at every "
                                       "attempt; --resume lost-run runs them")
