"""CLI smoke tests: the wiring of init / validate / compile / graph / schema (click's runner)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchpack.cli import cli
from conftest import ROOT


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.chdir(tmp_path)
    return CliRunner()


def test_init_then_validate_compile_graph(runner: CliRunner, tmp_path: Path) -> None:
    init = runner.invoke(cli, ["init", "mypack"])
    assert init.exit_code == 0
    assert init.output.splitlines() == [
        "wrote mypack/pack.yaml", "wrote mypack/episodes/monday.yaml",
        "wrote mypack/files/refills.md",
        "next: bench validate mypack  &&  bench compile mypack -o build/"]
    again = runner.invoke(cli, ["init", "mypack"])
    assert again.exit_code == 2 and "pass --force" in again.output
    assert runner.invoke(cli, ["init", "mypack", "--force"]).exit_code == 0

    ok = runner.invoke(cli, ["validate", "mypack", "--strict"])
    assert ok.exit_code == 0 and ok.output == "✓ mypack: no problems\n"
    as_json = runner.invoke(cli, ["validate", "mypack", "--format", "json"])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout) == []

    first = runner.invoke(cli, ["compile", "mypack", "-o", "build", "--strict"])
    assert first.exit_code == 0
    assert first.output == ("✓ build/plan.json: 2 sessions, 1 dependency group, no problems\n")
    plan = json.loads((tmp_path / "build" / "plan.json").read_text())
    second = runner.invoke(cli, ["compile", "mypack", "-o", "build", "--strict"])
    assert "(unchanged, from cache)" in second.output
    assert json.loads((tmp_path / "build" / "plan.json").read_text()) == plan
    uncached = runner.invoke(cli, ["compile", "mypack", "-o", "build", "--no-cache"])
    assert uncached.exit_code == 0 and "from cache" not in uncached.output
    ablation = runner.invoke(cli, ["compile", "mypack", "-o", "abl", "--ablation"])
    assert "3 sessions" in ablation.output
    assert "session.mypack.monday.handover~nodeps" in json.loads(
        (tmp_path / "abl" / "plan.json").read_text())["sessions"]

    for fmt, start in (("text", "episode monday\n"), ("mermaid", "flowchart LR\n"),
                       ("dot", "digraph benchpack {\n")):
        out = runner.invoke(cli, ["graph", "mypack", "--format", fmt])
        assert out.exit_code == 0 and out.stdout.startswith(start), fmt
    assert "(without dependencies)" in runner.invoke(cli, ["graph", "mypack", "--ablation"]).stdout


def test_errors_warnings_and_json(runner: CliRunner, tmp_path: Path) -> None:
    runner.invoke(cli, ["init", "p"])
    pack = tmp_path / "p" / "pack.yaml"
    pack.write_text(pack.read_text().replace("style: P ", "style: P+E "))  # W311
    relaxed = runner.invoke(cli, ["validate", "p"])
    assert relaxed.exit_code == 0 and "warning W311" in relaxed.output
    assert relaxed.output.endswith("✓ p: 1 warning\n")
    strict = runner.invoke(cli, ["validate", "p", "--strict"])
    assert strict.exit_code == 1
    assert strict.output.endswith("✗ p: 1 warning (errors under --strict)\n")
    pack.write_text(pack.read_text().replace("    name: Dana Okafor", "    nme: Dana Okafor"))
    broken = runner.invoke(cli, ["compile", "p", "--format", "json", "-o", "out"])
    assert broken.exit_code == 1 and not (tmp_path / "out").exists()
    rows = json.loads(broken.stdout)
    assert [(r["code"], r["severity"]) for r in rows] == [("E101", "error")]
    line = pack.read_text().splitlines().index("    nme: Dana Okafor") + 1
    assert (rows[0]["hint"], rows[0]["line"], rows[0]["col"]) == ("did you mean `name`?", line, 5)
    graph = runner.invoke(cli, ["graph", "p"])
    assert graph.exit_code == 1 and "E101" in graph.output


def test_schema_writes_and_checks(runner: CliRunner, tmp_path: Path) -> None:
    stale = runner.invoke(cli, ["schema", "-o", "schemas", "--check"])
    assert stale.exit_code == 1 and "run `bench schema`" in stale.output
    wrote = runner.invoke(cli, ["schema", "-o", "schemas"])
    assert wrote.exit_code == 0 and wrote.output.count("wrote ") == 3
    assert runner.invoke(cli, ["schema", "-o", "schemas", "--check"]).exit_code == 0
    for name in ("pack", "fragment", "plan"):
        assert (tmp_path / "schemas" / f"{name}.schema.json").read_text() == \
            (ROOT / "schemas" / f"{name}.schema.json").read_text()


def test_usage_errors_exit_2(runner: CliRunner) -> None:
    assert runner.invoke(cli, ["graph", ".", "--format", "svg"]).exit_code == 2
    assert runner.invoke(cli, ["compile", "--nope"]).exit_code == 2
    assert runner.invoke(cli, ["--version"]).output.startswith("bench, version ")


def test_an_internal_failure_on_a_broken_pack_is_noted(runner: CliRunner,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from benchpack.compiler.build import Builder

    def boom(self: Builder) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(Builder, "world", boom)
    runner.invoke(cli, ["init", "p"])
    pack = Path("p/pack.yaml")
    pack.write_text(pack.read_text().replace("- id: dana", "- id: dana\n    idd: 1"))
    out = runner.invoke(cli, ["validate", "p"])
    assert out.exit_code == 1 and "error E101" in out.output
    assert "note: some checks were skipped after an internal error (RuntimeError: boom" in out.output


def test_every_command_is_reachable_by_its_name() -> None:
    """The group loads a command's module when it is looked up (`main.COMMANDS`): a command
    defined in the package but named nowhere would be missing from `bench`, silently."""
    import importlib
    import pkgutil

    import click

    import benchpack.cli as package
    from benchpack.cli.main import COMMANDS

    ctx = click.Context(cli)
    reachable: set[int] = set()

    def walk(cmd: click.Command) -> None:
        reachable.add(id(cmd))
        if isinstance(cmd, click.Group):
            for sub in cmd.commands.values():
                walk(sub)

    for name in cli.list_commands(ctx):
        cmd = cli.get_command(ctx, name)
        assert cmd is not None and cmd.name == name, name
        walk(cmd)
    assert set(cli.list_commands(ctx)) == set(COMMANDS)
    defined = {f"{info.name}.{attr}": obj
               for info in pkgutil.iter_modules(package.__path__, "benchpack.cli.")
               if not info.name.endswith("__main__")  # importing it runs `bench`
               for attr, obj in vars(importlib.import_module(info.name)).items()
               if isinstance(obj, click.Command) and obj is not cli}
    assert len(defined) >= 20
    assert sorted(k for k, obj in defined.items() if id(obj) not in reachable) == []
