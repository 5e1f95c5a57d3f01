"""The committed lock (requirements/lock.txt) installs what pyproject.toml asks for: every
requirement of the runtime and of each extra is in the lock, at a version its range allows, with
hashes. A dependency added to pyproject.toml without `make upgrade` fails here, not on CI's fresh
machine."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from conftest import ROOT

LOCK = ROOT / "requirements" / "lock.txt"


def _locked() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)", line)
        if m:
            pins[canonicalize_name(m.group(1))] = m.group(2)
    return pins


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra if not r.startswith("benchpack")]
    return reqs


def test_every_requirement_is_locked_within_its_range() -> None:
    pins = _locked()
    problems = []
    for req in _requirements():
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        version = pins.get(canonicalize_name(req.name))
        if version is None:
            problems.append(f"{req.name}: not in the lock (run `make upgrade`)")
        elif not req.specifier.contains(version, prereleases=True):
            problems.append(f"{req.name}=={version} is outside {req.specifier}")
    assert problems == []


def test_every_pin_has_hashes_and_test_tools_are_not_runtime_dependencies() -> None:
    text = LOCK.read_text(encoding="utf-8")
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text)
    assert all("--hash=sha256:" in b for b in blocks if "==" in b.split("\n")[0])
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = {canonicalize_name(Requirement(r).name) for r in project["dependencies"]}
    assert not runtime & {"pytest", "hypothesis", "mypy", "ruff", "playwright"}
