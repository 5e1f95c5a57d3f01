"""Issue 27: `NO_COLOR` (https://no-color.org) turns colour off in every command, also on a
terminal; `bench validate` coloured its diagnostics regardless."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from benchpack.cli import cli


def _broken_pack(tmp_path: Path) -> Path:
    (tmp_path / "pack.yaml").write_text("name: x\nversion: 1\nbogus_field: 1\n", encoding="utf-8")
    return tmp_path


def test_validate_on_a_terminal_is_coloured(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["validate", str(_broken_pack(tmp_path))], color=True)
    assert res.exit_code == 1 and "\x1b[" in res.output


def test_no_color_turns_it_off(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["validate", str(_broken_pack(tmp_path))], color=True,
                             env={"NO_COLOR": "1"})
    assert res.exit_code == 1 and "bogus_field" in res.output
    assert "\x1b[" not in res.output


def test_an_empty_no_color_is_not_set(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["validate", str(_broken_pack(tmp_path))], color=True,
                             env={"NO_COLOR": ""})
    assert "\x1b[" in res.output
