"""loader: YAML 1.2 scalars, duplicate and merge keys, positions, includes, limits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchpack.compiler.diagnostics import Diagnostics
from benchpack.compiler.files import offset_position
from benchpack.compiler.loader import (
    SourceFile,
    load_pack,
    pack_relative,
    parse_yaml,
    path_problem,
    read_text,
)
from benchpack.compiler.yamlparse import nesting_too_deep


def parse(text: str) -> tuple[object, list[str]]:
    diags = Diagnostics()
    ok, data = parse_yaml(text, "f.yaml", diags)
    return (data if ok else None), [d.format() for d in diags.items]


def source(text: str) -> SourceFile:
    return SourceFile(path=Path("f.yaml"), shown="f.yaml", raw=text.encode(), text=text)


@pytest.mark.parametrize(("text", "value"), [
    ("no", "no"), ("on", "on"), ("yes", "yes"), ("2026-03-02", "2026-03-02"),
    ("12:30", "12:30"), ("true", True), ("False", False), ("~", None), ("null", None),
    ("010", 10), ("0o17", 15), ("0x1F", 31), ("1_000", "1_000"), ("-3", -3), ("1.5", 1.5),
    ("1e3", 1000.0), (".inf", float("inf")), ("'1'", "1"),
])
def test_yaml_1_2_core_scalars(text: str, value: object) -> None:
    data, errors = parse(f"v: {text}\n")
    assert errors == [] and data == {"v": value}
    assert type(data["v"]) is type(value)  # type: ignore[index]


def test_duplicate_keys_are_located_but_merge_overrides_are_not_duplicates() -> None:
    data, errors = parse("a: 1\nb:\n  c: 1\n  c: 2\n")
    assert data is None
    assert errors == ["f.yaml:4:3: error E002 key `c` appears more than once in this mapping "
                      "(hint: the second value would silently replace the first; keep one)"]
    data, errors = parse("base: &b {x: 1, y: 2}\nitem:\n  <<: *b\n  x: 3\n")
    assert errors == [] and data == {"base": {"x": 1, "y": 2}, "item": {"x": 3, "y": 2}}


def test_one_and_true_are_different_keys() -> None:
    _, errors = parse("{1: a, true: b}\n")
    assert errors == []  # equal as Python dict keys, but not a duplicate in YAML


def test_alias_bomb_and_depth_are_refused() -> None:
    # located at the first node past the limit (0-based line, column)
    assert nesting_too_deep("a: " + "[" * 1001 + "]" * 1001) == (0, 3 + 99)
    assert nesting_too_deep("a: " + "[1], " * 5000) is None  # many brackets, shallow: parsed
    assert nesting_too_deep("a:\n" + "".join(f"  k{i}: [x]\n" for i in range(3000))) is None
    assert nesting_too_deep("a:\n  " + "- " * 1100 + "x\n") == (1, 2 + 99 * 2)
    assert nesting_too_deep("a:\n  " + "- " * 99 + "x\n") is None  # exactly 100 levels is allowed
    assert nesting_too_deep("a: '[[[['\nb: " + "[" * 2001 + "]" * 2001) == (1, 3 + 99)


def test_a_parsers_own_depth_limit_still_gives_our_located_message(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """PyYAML 6.0.4 added a nesting limit whose message had no hint and a column far from the
    node; whatever limit a release adds, below or above ours, the diagnostic is ours."""
    import yaml

    from benchpack.compiler import yamlparse

    real_parse = yaml.parse

    def limited_parse(text: str, Loader: Any = None) -> Any:  # a parser that stops at 5 levels
        depth = 0
        for event in real_parse(text, Loader=Loader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > 5:
                    raise yaml.scanner.ScannerError(
                        "while increasing flow level", None, "exceeded maximum nesting depth",
                        event.start_mark)
            yield event

    monkeypatch.setattr(yaml, "parse", limited_parse)
    monkeypatch.setattr(yamlparse, "MAX_DEPTH", 100)
    text = "a: " + "[" * 150 + "]" * 150 + "\n"
    assert nesting_too_deep(text) == (0, 3 + 99)


def test_locate_keys_values_items_and_missing_paths() -> None:
    src = source("a:\n  b: 1\n  c: [x, {d: 2}]\n  e:\n    - f: 3\n")
    assert src.locate(("a", "b")) == (2, 6)             # a scalar: its value
    assert src.locate(("a", "b"), at_key=True) == (2, 3)  # an unknown key: the key itself
    assert src.locate(("a", "c")) == (3, 3)             # a container: its key
    assert src.locate(("a", "c", 1, "d")) == (3, 14)
    assert src.locate(("a", "e", 0)) == (5, 7)          # a list item: where it starts
    assert src.locate(("a", "nope", 3)) == (1, 1)       # missing: deepest existing ancestor
    assert src.locate(("a", "c", 7)) == (3, 3)


def test_locate_through_merges_and_non_string_keys() -> None:
    src = source("base: &b {x: 1}\nitem:\n  <<: *b\n  y: 2\nvars: {7: seven, null: n}\n")
    assert src.locate(("item", "x")) == (1, 14)  # inherited: where the anchor defines it
    assert src.locate(("vars", "7"), at_key=True) == (5, 8)
    assert src.locate(("vars", "None"), at_key=True) == (5, 18)


def test_positions_count_characters_and_ignore_the_bom() -> None:
    raw = "\ufeffname: café\nx: é\xff".encode("utf-8")
    assert offset_position(raw, raw.index(b"\xc3\xa9", 15)) == (2, 4)
    assert offset_position(b"\xef\xbb\xbfab\xff", 5) == (1, 3)


def test_read_text_strips_the_bom(tmp_path: Path) -> None:
    (tmp_path / "f.yaml").write_bytes(b"\xef\xbb\xbfname: x\n")
    raw_text = read_text(tmp_path / "f.yaml", "f.yaml", Diagnostics(), yaml_file=True)
    assert raw_text is not None and raw_text[1] == "name: x\n"


def test_includes_order_globs_and_self_matches(tmp_path: Path) -> None:
    (tmp_path / "pack.yaml").write_text("name: p\ninclude: ['*.yaml', sub/b.yaml]\n")
    (tmp_path / "z.yaml").write_text("personas: []\n")
    (tmp_path / "a.yaml").write_text("include: [sub/*.yaml]\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yaml").write_text("tools: []\n")
    diags = Diagnostics()
    loaded = load_pack(tmp_path, diags)
    assert loaded is not None and diags.items == []
    names = [pack_relative(f.path, loaded.root) for f in loaded.files]
    # pack first; a glob matching the including file skips it; each file once
    assert names == ["pack.yaml", "a.yaml", "sub/b.yaml", "z.yaml"]
    assert [f.kind for f in loaded.files] == ["pack", "fragment", "fragment", "fragment"]


def test_glob_outside_the_pack_is_refused_without_walking(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import glob

    def no_walk(*_: object, **__: object) -> list[str]:
        raise AssertionError("must not walk outside the pack")

    monkeypatch.setattr(glob, "glob", no_walk)
    (tmp_path / "pack.yaml").write_text("name: p\ninclude: ['/**/*.yaml', '../**']\n")
    diags = Diagnostics()
    load_pack(tmp_path, diags)
    assert [d.code for d in diags.items] == ["E010", "E010"]


def test_path_problems() -> None:
    assert path_problem("data/x.json") is None
    assert path_problem("a\x00b") == "a file path cannot contain a NUL character"
    assert path_problem("x" * 2000) == "a file path cannot be longer than 1024 characters"
