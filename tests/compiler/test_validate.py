"""validate: pydantic errors → located, friendly diagnostics; salvage of the valid parts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchpack.compiler.diagnostics import Diagnostics
from benchpack.compiler.loader import SourceFile, locate_all, parse_yaml
from benchpack.compiler.validate import Salvage, allowed_keys, validate_file
from benchpack.specs.pack import Pack


def check(text: str, kind: str = "pack") -> tuple[Any, list[str], Salvage]:
    diags = Diagnostics()
    ok, data = parse_yaml(text, "f.yaml", diags)
    assert ok
    src = SourceFile(path=Path("f.yaml"), shown="f.yaml", raw=text.encode(), text=text, data=data,
                     kind=kind)
    salvaged = Salvage()
    model = validate_file(src, diags, salvaged)
    locate_all(diags, [src])
    return model, [d.format().removeprefix("f.yaml:") for d in diags.sorted()], salvaged


def test_unknown_key_inside_a_tagged_union_suggests_from_the_right_branch() -> None:
    _, errors, _ = check("name: p\ntools:\n  - name: t\n    description: d\n"
                         "    impl: {kind: service, servise: s, operation: o}\n")
    assert errors == [
        "5:5: error E102 `impl` is missing the required key `service` [at $.tools[0].impl] "
        "(hint: add `service: …`)",
        "5:27: error E101 unknown key `servise` in `impl` [at $.tools[0].impl.servise] "
        "(hint: did you mean `service`?) [fixable]"]


def test_union_of_types_is_one_message() -> None:
    _, errors, _ = check("name: p\npersonas: [{id: a, profile: {role: r}, style: 5}]\n")
    assert errors == ["2:47: error E103 expected a mapping or a string, found a number "
                      "[at $.personas[0].style]"]


def test_unknown_kind_of_a_tagged_union() -> None:
    _, errors, _ = check("name: p\ntools: [{name: t, description: d, impl: {kind: servce}}]\n")
    assert errors == ["2:48: error E104 unknown kind `servce` for `impl`; expected one of "
                      "'builtin', 'service', 'corpus', 'stream', 'static', 'python', 'http' "
                      "[at $.tools[0].impl.kind] (hint: did you mean `service`?) [fixable]"]
    _, errors, _ = check("name: p\ntools: [{name: t, description: d, impl: {}}]\n")
    assert errors == ["2:35: error E102 `impl` is missing `kind` [at $.tools[0].impl] "
                      "(hint: add `kind: …` to say which kind of impl this is)"]


def test_fragments_cannot_set_pack_fields() -> None:
    _, errors, _ = check("name: p\npersonas: []\n", kind="fragment")
    assert errors[0].startswith("1:1: error E101 unknown key `name` in the top level")


def test_salvage_keeps_everything_valid() -> None:
    model, errors, salvaged = check(
        "name: p\n"
        "vars: {a: 1, 2: b}\n"
        "defaults: {repeats: 0, seed: 7}\n"
        "personas:\n"
        "  - {id: ok, profile: {role: r}}\n"
        "  - {id: bad, profile: {rol: r}}\n"
        "environments:\n"
        "  - id: env\n"
        "    files: [{path: ../x, content: c}, {path: fine.md, content: c}]\n")
    assert len(errors) == 5
    assert isinstance(model, Pack)
    assert model.vars == {"a": 1} and model.defaults.seed == 7 and model.defaults.repeats == 1
    assert [p.id for p in model.personas] == ["ok"]
    assert [f.path for f in model.environments[0].files] == ["fine.md"]
    assert "bad" in salvaged.names
    dropped = salvaged.dropped["f.yaml"]
    assert ("personas", 1) in dropped and ("environments", 0, "files", 0) in dropped
    # paths keep the file's indexes even after earlier items were dropped
    assert salvaged.hides("f.yaml", ("environments", 0, "files", 0, "path"), "error")
    assert salvaged.hides("f.yaml", ("environments", 0), "warning")
    assert not salvaged.hides("f.yaml", ("environments", 0), "error")
    assert not salvaged.hides("f.yaml", ("personas", 0), "warning")


def test_a_file_without_a_usable_top_level_salvages_nothing() -> None:
    model, errors, _ = check("name: p\npersonas: 5\n")
    assert isinstance(model, Pack) and model.personas == []  # the broken key is dropped
    assert len(errors) == 1


@pytest.mark.parametrize(("path", "expected"), [
    ((), "benchpack"),
    (("episodes", 0, "sessions", 0), "hidden_intents"),
    (("tools", 0, "impl"), "corpus"),
    (("episodes", 0, "sessions", 0, "checklist", 0, "rule"), "json_schema"),
])
def test_allowed_keys_follow_the_data(path: tuple[Any, ...], expected: str) -> None:
    data = {"tools": [{"impl": {"kind": "corpus"}}],
            "episodes": [{"sessions": [{"checklist": [{"rule": {}}]}]}]}
    assert expected in allowed_keys(Pack, path, data)


def test_an_unknown_top_level_key_does_not_hide_the_file_s_lints() -> None:
    _, _, salvaged = check("name: p\nbase: &b {x: 1}\n")
    assert salvaged.dropped["f.yaml"] == [("base",)]
    assert not salvaged.hides("f.yaml", ("personas", 0, "style"), "warning")
    assert salvaged.hides("f.yaml", ("base", "x"), "error")
