"""The package layout: one `benchpack` namespace, and the import direction between stages."""

from __future__ import annotations

import ast

from conftest import ROOT

STAGES = ["specs", "compiler", "runtime", "reports", "cli"]


def _imports(stage: str) -> set[str]:
    found: set[str] = set()
    for path in (ROOT / stage / "benchpack").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
    return found


def test_no_benchpack_init_anywhere() -> None:
    # a benchpack/__init__.py in one root would shadow the others
    for stage in STAGES:
        assert not (ROOT / stage / "benchpack" / "__init__.py").exists()


def test_runtime_never_imports_the_compiler() -> None:
    assert not any(m.startswith("benchpack.compiler") for m in _imports("runtime"))


def test_specs_import_nothing_else_of_benchpack() -> None:
    assert all(not m.startswith("benchpack.") or m.startswith("benchpack.specs")
               for m in _imports("specs"))


def test_reports_never_import_compiler_or_runtime() -> None:
    assert not any(m.startswith(("benchpack.compiler", "benchpack.runtime"))
                   for m in _imports("reports"))


def test_every_protocol_is_a_module_in_every_stage() -> None:
    """A protocol is a row through the stages: the same module name in specs, compiler,
    runtime and reports, each registered (adding one in a stage only would fail here)."""
    from benchpack.compiler.protocols import PROTOCOL_COMPILERS
    from benchpack.reports.protocols import PROTOCOL_REPORTS
    from benchpack.runtime.protocols.base import default_protocols
    from benchpack.specs.protocols import PROTOCOLS, SESSION_FIELDS

    names = set(PROTOCOLS)
    assert set(PROTOCOL_COMPILERS) == names
    assert set(default_protocols().names()) == names
    assert set(PROTOCOL_REPORTS) == names
    for name in names:
        for stage in ("specs", "compiler", "runtime", "reports"):
            assert (ROOT / stage / "benchpack" / stage / "protocols" / f"{name}.py").is_file()
        assert PROTOCOL_REPORTS[name].name == name
    # a key may serve several protocols (`score:`), but each is a real Session field
    from benchpack.specs.pack import Session

    owned = {k for keys in SESSION_FIELDS.values() for k in keys}
    assert owned <= set(Session.model_fields), owned - set(Session.model_fields)
