"""`pip install .` and `pip install -e .` both give one clean `benchpack` namespace."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

STAGES = ("specs", "compiler", "runtime", "reports", "cli")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("hatchling")
    out = tmp_path_factory.mktemp("wheel")
    # no build isolation: the build backend comes from this environment, so no network is needed
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out), str(ROOT)], check=True, capture_output=True)
    (found,) = out.glob("benchpack-*.whl")
    return found


def test_wheel_holds_only_the_benchpack_namespace(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"benchpack", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}
    assert "benchpack/__init__.py" not in names  # a namespace package spanning the roots
    for stage in STAGES:
        assert f"benchpack/{stage}/__init__.py" in names
    assert not any(n.startswith(("compiler/", "runtime/", "specs/", "reports/")) for n in names)


def test_regular_install_imports_from_the_installed_copy(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(target), str(wheel)], check=True, capture_output=True)
    assert not any((target / s).exists() for s in ("compiler", "runtime", "specs", "reports"))
    deps = sysconfig.get_paths()["purelib"]
    # -S: no site processing, so the editable .pth of the dev environment is not on the path
    code = ("import benchpack.compiler, benchpack.runtime, benchpack.specs, benchpack.cli;"
            "print(benchpack.compiler.__file__);"
            "import importlib.util as u; print(u.find_spec('compiler'))")
    out = subprocess.run([sys.executable, "-S", "-c", code], check=True, capture_output=True,
                         text=True, cwd=tmp_path, env={"PYTHONPATH": f"{target}:{deps}"}).stdout.split()
    assert out[0].startswith(str(target))
    assert out[1] == "None"


def test_editable_install_points_at_the_source_roots() -> None:
    import benchpack.compiler
    import benchpack.specs

    files = [Path(benchpack.compiler.__file__), Path(benchpack.specs.__file__)]
    if not all(ROOT in f.parents for f in files):
        pytest.skip("benchpack is not installed in editable mode here")
    assert files[0].parent == ROOT / "compiler" / "benchpack" / "compiler"
    site = Path(sysconfig.get_paths()["purelib"])
    assert not any((site / s).exists() for s in ("compiler", "runtime", "specs", "reports"))
    pth = list(site.glob("*benchpack*.pth"))
    assert pth, "hatch editable installs add the source roots with a .pth file"
    text = "\n".join(p.read_text() for p in pth)
    for stage in STAGES:
        assert str(ROOT / stage) in text
