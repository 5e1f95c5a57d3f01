"""Diagnostics report causes, not their consequences, and say why where a mistake is common."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchpack.compiler import validate_pack

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_diagnostics import BASE

RULE = "rule: {tool: todo__create, where: {args.title: {contains: INR}}}"


def _diags(root: Path, text: str, extra: dict[str, str] | None = None) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pack.yaml").write_text(text, encoding="utf-8")
    for rel, content in (extra or {}).items():
        (root / rel).write_text(content, encoding="utf-8")
    return [f"{d.code} {d.message} (hint: {d.hint})" for d in validate_pack(root).diagnostics]


def test_a_broken_included_file_reports_only_its_syntax_error(tmp_path: Path) -> None:
    # the episodes moved to a file with a YAML error: the persona, service and environment
    # left in pack.yaml look unused, but that is a consequence, not a mistake
    head, episodes = BASE.split("episodes:\n", 1)
    text = head.replace("name: demo\n", "name: demo\ninclude: [episodes.yaml]\n")
    broken = "episodes:\n" + episodes.replace("request: Go through the queue.",
                                              "request: Go through: the queue.")
    found = _diags(tmp_path, text, {"episodes.yaml": broken})
    assert [f.split()[0] for f in found] == ["E001"], found


def test_an_invalid_operation_kind_is_reported_without_its_missing_tool(tmp_path: Path) -> None:
    text = BASE.replace("kind: create, table: tasks", "kind: send, table: tasks")
    found = _diags(tmp_path, text)
    assert [f.split()[0] for f in found] == ["E104"], found


def test_an_unquoted_comma_in_a_flow_mapping_says_to_quote(tmp_path: Path) -> None:
    text = BASE.replace("          - text: The note is short",
                        "          - {text: The note is short, thanks.}")
    (found,) = _diags(tmp_path, text)
    assert found.startswith("E101 unknown key `thanks.`"), found
    assert "quote" in found and "`, `" in found, found


def test_a_number_where_a_mapping_is_expected_shows_the_mapping(tmp_path: Path) -> None:
    (found,) = _diags(tmp_path, BASE.replace(RULE, "rule: {tool: todo__create, count: 1}"))
    assert found.startswith("E103 `count` must be a mapping"), found
    assert "count: {equals: 1}" in found or "{min: 1}" in found, found


def test_an_unescaped_bracket_in_a_regex_says_to_escape_it(tmp_path: Path) -> None:
    (found,) = _diags(tmp_path, BASE.replace(RULE, "rule: {reply: true, regex: 'INR [check'}"))
    assert found.startswith("E205 invalid regular expression"), found
    assert r"\[" in found, found


@pytest.mark.parametrize("filt", ["shout", "uppper"])
def test_an_unknown_jinja_filter_gets_a_filter_hint(tmp_path: Path, filt: str) -> None:
    text = BASE.replace("request: Go through the queue.",
                        f"request: Go through {{{{ vars.team | {filt} }}}}.")
    (found,) = _diags(tmp_path, text)
    assert f"no filter named `{filt}`" in found.lower().replace("'", "`"), found
    assert "close every" not in found, found  # the braces are fine
    if filt == "uppper":
        assert "did you mean `upper`?" in found, found
