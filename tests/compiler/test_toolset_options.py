"""Toolset options (issue 23, WP-T): a `specs:` file gives exactly the tool definitions the
agent is offered (an imported benchmark's own), its mistakes located in the JSON file; the
run-time options reach the plan only when they change a default, and move fingerprints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchpack.compiler import compile_pack, validate_pack

SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "toolset_shop"
CANCEL = {"description": "Their words, not ours.",
          "parameters": {"type": "object", "title": "parameters",
                         "properties": {"order_id": {"type": "string", "title": "Order Id"},
                                        "reason": {"type": "string"}},
                         "required": ["order_id", "reason"]}}


@pytest.fixture
def pack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(SHOP, tmp_path / "pack")
    return tmp_path / "pack"


def _options(pack: Path, lines: str) -> None:
    p = pack / "pack.yaml"
    p.write_text(p.read_text().replace("    service: shop\n", "    service: shop\n" + lines, 1))


def _specs(pack: Path, text: str) -> None:
    (pack / "tools" / "shop.specs.json").write_text(text, encoding="utf-8")


def _plan(pack: Path, out: Path) -> dict:
    result = compile_pack(pack, out, use_cache=False)
    assert result.ok, [d.format() for d in result.diagnostics]
    return json.loads((out / "plan.json").read_text())


def _errors(pack: Path) -> list[str]:
    result = validate_pack(pack)
    assert result.internal_error is None
    return [d.format() for d in result.diagnostics]


def test_specs_replace_the_derived_definitions_of_the_functions_they_name(
        pack: Path, tmp_path: Path) -> None:
    before = _plan(pack, tmp_path / "a")
    _specs(pack, json.dumps({"cancel_pending_order": CANCEL}, indent=1))
    _options(pack, "    specs: tools/shop.specs.json\n")
    plan = _plan(pack, tmp_path / "b")
    cancel = plan["tools"]["cancel_pending_order"]
    assert (cancel["description"], cancel["parameters"]) == (CANCEL["description"],
                                                            CANCEL["parameters"])
    assert cancel["impl"]["state_param"] == "db" and cancel["effect"] == "write"
    # a function the file does not name keeps what its docstring and hints say
    assert plan["tools"]["get_order_details"] == before["tools"]["get_order_details"]
    # what the agent is offered changed: so did every fingerprint
    for sid, s in plan["sessions"].items():
        assert s["fingerprint"] != before["sessions"][sid]["fingerprint"]


def test_a_function_the_specs_name_needs_no_docstring_or_hints(pack: Path,
                                                               tmp_path: Path) -> None:
    p = pack / "tools" / "shop.py"
    text = p.read_text()
    p.write_text(text.replace('''def get_order_details(db: State, order_id: str) -> dict:
    """Get an order by its id.

    Args:
        order_id: The order id, such as '#W1'.
    """''', "def get_order_details(db: State, order_id):"))
    assert any("E217" in e for e in _errors(pack))
    spec = {"description": "d", "parameters": {"type": "object", "properties": {}}}
    _specs(pack, json.dumps({"get_order_details": spec}))
    _options(pack, "    specs: tools/shop.specs.json\n")
    assert _plan(pack, tmp_path / "o")["tools"]["get_order_details"]["parameters"] == \
        spec["parameters"]


def test_specs_mistakes_are_located_in_the_json_file(pack: Path) -> None:
    _specs(pack, '{\n "cancel_pending_ordr": {"description": "x", "parameters": '
                 '{"type": "object"}},\n "get_order_details": {"description": "x",\n'
                 '   "parameters": {"type": "object",\n     "properties": {"order_id": '
                 '{"type": "strng"}}}}\n}\n')
    _options(pack, "    specs: tools/shop.specs.json\n")
    out = _errors(pack)
    assert any(d.startswith("pack/tools/shop.specs.json:2:2: error E202 `tools/shop.py` has "
                            "no public function `cancel_pending_ordr`")
               and "did you mean `cancel_pending_order`" in d for d in out), out
    assert any(d.startswith("pack/tools/shop.specs.json:5:42: error E207 the parameters of "
                            "`get_order_details` are not a valid JSON Schema") for d in out), out


@pytest.mark.parametrize("text,message", [
    ("[1]", "a tool specs file is an object of functions"),
    ('{"get_order_details": {"description": "x"}}', "must have exactly `description` and "
                                                    "`parameters`"),
    ('{"get_order_details": {"description": "x", "parameters": {"type": "array"}}}',
     "must be a JSON Schema object"),
    ('{"get_order_details": ', "line 1 column 23"),
])
def test_specs_shape_errors(pack: Path, text: str, message: str) -> None:
    _specs(pack, text)
    _options(pack, "    specs: tools/shop.specs.json\n")
    out = _errors(pack)
    assert len(out) == 1 and message in out[0] and "error" in out[0], out


def test_a_missing_specs_file(pack: Path) -> None:
    _options(pack, "    specs: tools/nope.specs.json\n")
    assert any("E006 file `tools/nope.specs.json` not found" in d for d in _errors(pack))


def test_options_reach_the_plan_only_when_changed(pack: Path, tmp_path: Path) -> None:
    before = _plan(pack, tmp_path / "a")
    original = (pack / "pack.yaml").read_text()
    assert set(before["toolsets"]["tools/shop.py"]) == {"name", "file", "service", "source",
                                                         "sha256"}
    _options(pack, "    check_arguments: true\n    atomic: true\n    plain_errors: false\n")
    same = _plan(pack, tmp_path / "b")
    # written-out defaults change only the pack's own hash (its text changed)
    assert {k: v for k, v in same.items() if k != "pack"} == \
        {k: v for k, v in before.items() if k != "pack"}
    (pack / "pack.yaml").write_text(original)
    _options(pack, "    check_arguments: false\n    atomic: false\n    plain_errors: true\n")
    plan = _plan(pack, tmp_path / "c")
    ts = plan["toolsets"]["tools/shop.py"]
    assert (ts["check_arguments"], ts["atomic"], ts["plain_errors"]) == (False, False, True)
    for sid, s in plan["sessions"].items():  # they change what the agent sees
        assert s["fingerprint"] != before["sessions"][sid]["fingerprint"]
