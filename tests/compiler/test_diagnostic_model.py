"""diagnostics: formatting, JSON form, ordering, suggestions."""

from __future__ import annotations

from pathlib import Path

from benchpack.compiler.diagnostics import (
    CODES,
    Diagnostic,
    Diagnostics,
    did_you_mean,
    display_path,
    suggest,
)


def test_codes_are_stable_and_grouped() -> None:
    for code, (severity, name) in CODES.items():
        assert code[0] == ("E" if severity == "error" else "W") and len(code) == 4
        assert name == name.lower() and " " not in name
    assert CODES["E101"] == ("error", "unknown-key") and CODES["W312"][0] == "warning"


def test_format_and_dict() -> None:
    d = Diagnostic("E202", "unknown session `x`", "p/pack.yaml", ("episodes", 0, "depends_on", 1),
                   "did you mean `y`?", line=7, col=20)
    assert d.format() == ("p/pack.yaml:7:20: error E202 unknown session `x` "
                          "[at $.episodes[0].depends_on[1]] (hint: did you mean `y`?)")
    assert d.as_dict() == {"code": "E202", "name": "unknown-reference", "severity": "error",
                           "file": "p/pack.yaml", "line": 7, "col": 20,
                           "json_path": "$.episodes[0].depends_on[1]",
                           "message": "unknown session `x`", "hint": "did you mean `y`?",
                           "fix": None}
    bare = Diagnostic("W312", "unused", "f.yaml")
    assert bare.format() == "f.yaml: warning W312 unused" and bare.json_path == "$"


def test_collection_dedups_and_sorts_by_position() -> None:
    diags = Diagnostics()
    diags.error("E202", "b", "z.yaml", line=1, col=1)
    diags.error("E101", "a", "a.yaml", line=9, col=1)
    diags.error("E101", "a", "a.yaml", line=9, col=1)  # the same problem twice
    diags.warn("W312", "c", "a.yaml", line=2, col=5)
    assert len(diags) == 3 and diags.has_errors()
    assert [(d.file, d.line) for d in diags.sorted()] == [("a.yaml", 2), ("a.yaml", 9),
                                                           ("z.yaml", 1)]
    assert [d.code for d in diags.warnings] == ["W312"]


def test_suggestions() -> None:
    assert suggest("hidden_intent", ["hidden_intents", "stages"]) == "hidden_intents"
    assert suggest("Persona", ["persona", "episodes"]) == "persona"
    assert suggest("intent", ["hidden_intents", "checklist"]) == "hidden_intents"
    assert suggest("zzz", ["alpha", "beta"]) is None
    assert did_you_mean("triag", ["triage"]) == "did you mean `triage`?"
    assert did_you_mean("x", []) is None


def test_display_path(tmp_path: Path) -> None:
    assert display_path(tmp_path / "a" / "b.yaml", tmp_path) == "a/b.yaml"
    assert display_path(Path("/elsewhere/x.yaml"), tmp_path) == "/elsewhere/x.yaml"
