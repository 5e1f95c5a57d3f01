"""Issue 27: two runs whose scripted simulator is the same file, named once by a relative and
once by an absolute path, are comparable (`bench compare` compares the files' contents); two
different files are not. Before, the URIs differed, so `bench compare` refused the pair."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.compiler import compile_pack
from conftest import TASKPACKS

PACK = TASKPACKS / "mussel-genome-search"


def _run(build: Path, db: Path, run_id: str, simulator: str, cache: Path) -> None:
    res = CliRunner().invoke(cli, [
        "run", str(build), "--agent", f"scripted:{PACK / 'demo' / 'agent.yaml'}",
        "--simulator", simulator, "--judge", "rules", "--db", str(db), "--run-id", run_id,
        "--quiet", "--cache-dir", str(cache)])
    assert res.exit_code == 0, res.output


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("scripts")
    assert compile_pack(PACK, root / "build", use_cache=False).ok
    sim = root / "sim.yaml"
    shutil.copyfile(PACK / "demo" / "simulator.yaml", sim)
    other = root / "other.yaml"
    other.write_text(sim.read_text(encoding="utf-8") + "\n# another file\n", encoding="utf-8")
    db = root / "bench.duckdb"
    cwd = Path.cwd()
    try:
        import os
        os.chdir(root)
        _run(root / "build", db, "relative", "scripted:sim.yaml", root / "cache")
    finally:
        os.chdir(cwd)
    _run(root / "build", db, "absolute", f"scripted:{sim}", root / "cache")
    _run(root / "build", db, "different", f"scripted:{other}", root / "cache")
    return db


def test_same_file_by_two_paths_is_comparable(store: Path) -> None:
    res = CliRunner().invoke(cli, ["compare", "relative", "absolute", "--db", str(store)])
    assert res.exit_code == 0, res.output
    assert "NOT COMPARABLE" not in res.output


def test_another_file_is_not(store: Path) -> None:
    res = CliRunner().invoke(cli, ["compare", "relative", "different", "--db", str(store)])
    assert res.exit_code != 0 and "simulator" in res.output, res.output
