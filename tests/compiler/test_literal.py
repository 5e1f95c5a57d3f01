"""Literal text: `{{`, `{%` and `{#` taken verbatim where the author says so (a `!literal` tag on
a value, list or mapping, or `# benchpack: literal` heading a file), and the Jinja errors'
hints say how."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchpack.compiler import compile_pack, validate_pack

PACK = """\
benchpack: 1
name: lit
vars: {team: Orion}
personas:
  - id: ana
    profile: {role: "Analyst on team {{ vars.team }}"}
episodes:
  - id: week
    persona: ana
    sessions:
      - id: triage
        protocol: intent_tracking
        request: REQUEST
        hidden_intents:
          - text: INTENT
        checklist:
          - text: The reply quotes the template
"""
SNIPPET = "Fix my template: {{ user.name }} {% if x %}hi{% endif %} {# note #}"


def _pack(root: Path, request: str, intent: str = "Keep it short",
          extra: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pack.yaml").write_text(PACK.replace("REQUEST", request).replace("INTENT", intent),
                                    encoding="utf-8")
    for rel, text in (extra or {}).items():
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _session(root: Path, tmp: Path) -> dict[str, object]:
    res = compile_pack(root, tmp / "out", use_cache=False)
    assert res.ok and not res.diagnostics, [d.format() for d in res.diagnostics]
    plan = json.loads((tmp / "out" / "plan.json").read_text(encoding="utf-8"))
    (session,) = plan["sessions"].values()
    return dict(session)


@pytest.mark.parametrize(("text", "code"), [
    ("'Fix: {{ user.name }}'", "E209"),
    ("'Fix: {% if x %}hi'", "E208"),
    ("'Braces {{ in data }} files'", "E208"),
])
def test_the_jinja_errors_say_how_to_keep_braces_verbatim(tmp_path: Path, text: str,
                                                          code: str) -> None:
    (d,) = validate_pack(_pack(tmp_path, text)).errors
    assert d.code == code and d.hint is not None
    assert "`!literal`" in d.hint and "# benchpack: literal" in d.hint, d.hint


def test_a_literal_tag_keeps_one_value_verbatim(tmp_path: Path) -> None:
    root = _pack(tmp_path / "p", f"!literal '{SNIPPET}'", intent="Team {{ vars.team }} first")
    s = _session(root, tmp_path)
    assert s["request"] == SNIPPET
    assert s["hidden_intents"][0]["text"] == "Team Orion first"  # the rest still renders


def test_a_literal_tag_on_a_block_scalar_a_list_and_a_mapping(tmp_path: Path) -> None:
    text = PACK.replace("request: REQUEST", "request: !literal |\n          {{ raw }}\n")
    text = text.replace("        hidden_intents:\n          - text: INTENT\n",
                        "        hidden_intents: !literal\n          - text: '{{ a }}'\n"
                        "          - {text: '{% b %}', reveal: '{# c #}'}\n")
    text = text.replace("          - text: The reply quotes the template\n",
                        "          - !literal {text: 'Quotes {{ user.name }}'}\n"
                        "          - text: 'Team {{ vars.team }}'\n")
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "pack.yaml").write_text(text, encoding="utf-8")
    s = _session(tmp_path / "p", tmp_path)
    assert s["request"] == "{{ raw }}\n"
    assert [(i["text"], i["reveal"]) for i in s["hidden_intents"]] == [
        ("{{ a }}", None), ("{% b %}", "{# c #}")]
    assert [c["text"] for c in s["checklist"]] == ["Quotes {{ user.name }}", "Team Orion"]


def test_an_alias_of_a_literal_value_stays_literal(tmp_path: Path) -> None:
    root = _pack(tmp_path / "p", f"!literal &snip '{SNIPPET}'")
    text = (root / "pack.yaml").read_text(encoding="utf-8")
    (root / "pack.yaml").write_text(text.replace("- text: The reply quotes the template",
                                                 "- text: *snip"), encoding="utf-8")
    s = _session(root, tmp_path)
    assert s["request"] == s["checklist"][0]["text"] == SNIPPET


def test_a_file_marked_literal_is_never_rendered(tmp_path: Path) -> None:
    fragment = ("# benchpack: literal\n# imported from the dataset as is\n"
                "personas:\n  - id: bo\n    profile: {role: 'Writes {{ jinja }} all day'}\n")
    root = _pack(tmp_path / "p", "'Hi {{ vars.team }}'", extra={"people.yaml": fragment})
    text = (root / "pack.yaml").read_text(encoding="utf-8")
    ana = 'personas:\n  - id: ana\n    profile: {role: "Analyst on team {{ vars.team }}"}\n'
    (root / "pack.yaml").write_text(text.replace("name: lit\n", "name: lit\ninclude: [people.yaml]\n")
                                    .replace(ana, "").replace("persona: ana", "persona: bo"),
                                    encoding="utf-8")
    s = _session(root, tmp_path)
    assert s["request"] == "Hi Orion"  # the root file is not literal
    res = compile_pack(root, tmp_path / "out2", use_cache=False)
    plan = json.loads((tmp_path / "out2" / "plan.json").read_text(encoding="utf-8"))
    assert res.ok and plan["personas"]["bo"]["profile"]["role"] == "Writes {{ jinja }} all day"


def test_the_marker_must_head_the_file(tmp_path: Path) -> None:
    fragment = ("personas:\n  - id: bo\n    profile: {role: 'Writes {{ jinja }} all day'}\n"
                "# benchpack: literal\n")
    root = _pack(tmp_path / "p", "Hi", extra={"people.yaml": fragment})
    text = (root / "pack.yaml").read_text(encoding="utf-8")
    (root / "pack.yaml").write_text(text.replace("name: lit\n", "name: lit\ninclude: [people.yaml]\n"),
                                    encoding="utf-8")
    assert [d.code for d in validate_pack(root).errors] == ["E209"]
