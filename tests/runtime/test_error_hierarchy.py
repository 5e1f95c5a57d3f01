"""Issue 27: the runtime's typed errors. A user or environment error (`BenchError`) is
`✗ message` and exit 1; anything else escaping a command is a bug: exit 3, "please report it".
Before, every `ValueError` was taken for the user's mistake, so a bug printed as one (exit 1)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchpack.cli.main import _main
from benchpack.runtime import errors
from benchpack.runtime.merge import MergeError
from benchpack.runtime.planfile import PlanError
from benchpack.runtime.sandbox import SandboxUnavailable
from benchpack.runtime.storecheck import StoreDamagedError, StoreOpenError


def _exit(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["bench", *args])
    with pytest.raises(SystemExit) as done:
        _main()
    return int(done.value.code or 0)


def _plan(tmp_path: Path) -> Path:
    from benchpack.compiler import compile_pack
    from conftest import TASKPACKS

    assert compile_pack(TASKPACKS / "pharmacist-week", tmp_path / "build", use_cache=False).ok
    return tmp_path / "build"


def test_a_bare_value_error_in_the_runtime_is_a_bug(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import benchpack.runtime.runner as runner

    def broken(path: object) -> None:
        raise ValueError("invalid literal for int() with base 10: 'x'")

    monkeypatch.setattr(runner, "load_plan", broken)
    code = _exit(monkeypatch, "run", str(tmp_path), "--agent", "scripted:x.yaml",
                 "--db", str(tmp_path / "b.duckdb"))
    err = capsys.readouterr().err
    assert code == 3, err
    assert "this is a benchpack bug" in err and "✗" not in err


def test_a_user_error_is_one_line_and_exit_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    plan = _plan(tmp_path)
    code = _exit(monkeypatch, "run", str(plan), "--agent", "scripted:x.yaml", "--resume",
                 "nope", "--db", str(tmp_path / "b.duckdb"))
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.startswith("✗ ") and "internal error" not in err


def test_an_uncaught_bench_error_still_maps_to_exit_1(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """One place maps exceptions to exit codes: a command that lets a BenchError through
    still says `✗ …` and exits 1."""
    import benchpack.cli.pack as pack

    def failing(*a: object, **k: object) -> None:
        raise errors.EnvironmentProblem("bwrap: not found (install bubblewrap)")

    monkeypatch.setattr("benchpack.compiler.validate_pack", failing)
    assert pack is not None
    code = _exit(monkeypatch, "validate", ".")
    assert code == 1
    assert capsys.readouterr().err.strip() == "✗ bwrap: not found (install bubblewrap)"


@pytest.mark.parametrize("cls", [PlanError, StoreOpenError, StoreDamagedError, MergeError])
def test_user_errors_are_usage_errors_and_still_value_errors(cls: type[Exception]) -> None:
    assert issubclass(cls, errors.UsageError) and issubclass(cls, ValueError)


def test_environment_problems() -> None:
    from benchpack.runtime.ray_executor import RayUnavailable

    for cls in (SandboxUnavailable, RayUnavailable):
        assert issubclass(cls, errors.EnvironmentProblem)
