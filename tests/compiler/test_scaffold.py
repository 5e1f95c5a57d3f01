"""scaffold: `bench init` writes a commented starter pack that compiles cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchpack.compiler import init_pack, validate_pack
from benchpack.compiler.scaffold import _schema_dir
from conftest import ROOT


def test_starter_pack_files_and_name(tmp_path: Path) -> None:
    written = init_pack(tmp_path / "My Pharmacy!")
    assert [p.relative_to(tmp_path / "My Pharmacy!").as_posix() for p in written] == [
        "pack.yaml", "episodes/monday.yaml", "files/refills.md"]
    text = written[0].read_text()
    assert "name: my-pharmacy\n" in text and text.count("#") > 10  # commented
    result = validate_pack(tmp_path / "My Pharmacy!", strict=True)
    assert result.diagnostics == [] and result.plan is not None
    assert result.plan["groups"][0]["final"] == "session.my-pharmacy.monday.handover"


def test_explicit_name_and_overwrite_protection(tmp_path: Path) -> None:
    init_pack(tmp_path, "clinic")
    with pytest.raises(FileExistsError):
        init_pack(tmp_path, "clinic")
    (tmp_path / "pack.yaml").write_text("broken")
    init_pack(tmp_path, "clinic", force=True)
    assert "name: clinic" in (tmp_path / "pack.yaml").read_text()


def test_schema_modeline(tmp_path: Path) -> None:
    outside = init_pack(tmp_path / "p")[0].read_text().splitlines()[0]
    assert outside == "# yaml-language-server: $schema=https://benchpack.dev/schemas/pack.schema.json"
    # inside the checkout the modeline is relative (computed only: nothing is written there)
    assert _schema_dir(ROOT / "taskpacks" / "new-pack") == "../../schemas"
    assert _schema_dir(ROOT / "taskpacks" / "new-pack" / "episodes") == "../../../schemas"
