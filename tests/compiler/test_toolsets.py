"""Python toolsets in the pack language: compiled from the module's text (never imported),
located errors, tool name clashes, the plan's toolsets and fingerprints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchpack.compiler import compile_pack, validate_pack

SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "toolset_shop"


@pytest.fixture
def pack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(SHOP, tmp_path / "pack")
    return tmp_path / "pack"


def _edit(pack: Path, old: str, new: str, file: str = "pack.yaml") -> None:
    p = pack / file
    text = p.read_text(encoding="utf-8")
    assert old in text, old
    p.write_text(text.replace(old, new, 1), encoding="utf-8")


def _errors(pack: Path) -> list[str]:
    result = validate_pack(pack)
    assert result.internal_error is None
    return [d.format() for d in result.diagnostics]


def test_plan_carries_source_hash_and_derived_specs(pack: Path, tmp_path: Path) -> None:
    result = compile_pack(pack, tmp_path / "out", use_cache=False)
    assert result.ok, [d.format() for d in result.diagnostics]
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    source = (pack / "tools" / "shop.py").read_text()
    ts = plan["toolsets"]["tools/shop.py"]
    assert ts["source"] == source and ts["service"] == "shop" and ts["file"] == "tools/shop.py"
    cancel = plan["tools"]["cancel_pending_order"]
    assert cancel["impl"] == {"kind": "python_tool", "toolset": "tools/shop.py",
                              "function": "cancel_pending_order", "state_param": "db",
                              "sha256": ts["sha256"]}
    assert cancel["parameters"]["required"] == ["order_id", "reason"]
    assert cancel["parameters"]["properties"]["reason"]["enum"] == [
        "no longer needed", "ordered by mistake"]
    # effect from the use of `State`: get only → read; put → write
    assert plan["tools"]["get_order_details"]["effect"] == "read"
    assert cancel["effect"] == "write"
    env = plan["environments"]["store"]
    assert env["toolsets"] == ["tools/shop.py"] and env["services"] == ["shop"]
    assert env["tools"] == ["read_file", "shell", "get_order_details", "cancel_pending_order"]


def test_fingerprints_follow_the_module_source(pack: Path, tmp_path: Path) -> None:
    assert compile_pack(pack, tmp_path / "a", use_cache=False).ok
    _edit(pack, "Non-pending order cannot be cancelled", "Only pending orders can be cancelled",
          "tools/shop.py")
    assert compile_pack(pack, tmp_path / "b", use_cache=False).ok
    a, b = (json.loads((tmp_path / d / "plan.json").read_text()) for d in ("a", "b"))
    for sid in a["sessions"]:
        assert a["sessions"][sid]["fingerprint"] != b["sessions"][sid]["fingerprint"]


def test_the_module_is_never_executed(pack: Path, tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    _edit(pack, "from typing import Literal\n",
          f"from typing import Literal\nopen({str(marker)!r}, 'w').write('x')\n"
          "raise SystemExit(7)\n", "tools/shop.py")
    assert compile_pack(pack, tmp_path / "out", use_cache=False).ok
    assert not marker.exists()


def test_prefix_include_and_read_only(pack: Path, tmp_path: Path) -> None:
    _edit(pack, "    service: shop\n", "    service: shop\n    prefix: shop_\n"
          "    include: [cancel_pending_order]\n    read_only: [cancel_pending_order]\n")
    assert compile_pack(pack, tmp_path / "out", use_cache=False).ok
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert [t for t in plan["tools"] if "order" in t] == ["shop_cancel_pending_order"]
    assert plan["tools"]["shop_cancel_pending_order"]["effect"] == "read"


def test_located_reference_errors(pack: Path) -> None:
    _edit(pack, "    service: shop\n", "    service: shopp\n    include: [cancel_pending_ordr]\n")
    _edit(pack, "    toolsets: [tools/shop.py]", "    toolsets: [tools/shp.py]")
    out = _errors(pack)
    assert any(":15:14: error E202 unknown service `shopp`" in d and "`shop`" in d
               for d in out), out
    assert any(":16:15: error E202 `tools/shop.py` has no public function "
               "`cancel_pending_ordr`" in d and "did you mean `cancel_pending_order`" in d
               for d in out), out
    assert any(":20:16: error E202 unknown toolset `tools/shp.py`" in d and "did you mean" in d
               for d in out), out


def test_tool_name_clashes(pack: Path) -> None:
    _edit(pack, "toolsets:\n", "tools:\n  - {name: get_order_details, description: x, "
          "impl: {kind: static}}\ntoolsets:\n")
    out = _errors(pack)
    assert any("error E214 tool name `get_order_details` is already used by the tool in"
               in d for d in out), out


def test_module_problems_are_located_in_the_py_file(pack: Path) -> None:
    _edit(pack, "def get_order_details(db: State, order_id: str) -> dict:",
          "def get_order_details(db: State, order_id: set[str]) -> dict:", "tools/shop.py")
    out = _errors(pack)
    assert out == ["pack/tools/shop.py:8:44: error E217 tool function `get_order_details`, "
                   "parameter `order_id`: the type `set[str]` cannot be given to an agent as "
                   "JSON (hint: use one of str, int, float, bool, list[T], dict[str, T], "
                   "Literal[...], T | None)"], out


def test_unused_toolset_is_w312(pack: Path) -> None:
    _edit(pack, "    toolsets: [tools/shop.py]\n", "")
    out = _errors(pack)
    assert any("warning W312 toolset `tools/shop.py` is defined but never used" in d
               for d in out), out


def test_w319_a_documented_parameter_that_does_not_exist(pack: Path) -> None:
    """The module's warnings are lints located in the .py file (W319); the near miss (the
    documented name matches a parameter) is silent."""
    _edit(pack, "        order_id: The order id, such as '#W1'.",
          "        order_id: The order id, such as '#W1'.\n        orderid: A typo.", "tools/shop.py")
    found = [d for d in validate_pack(pack).diagnostics if d.code == "W319"]
    assert len(found) == 1 and found[0].file.endswith("tools/shop.py")
    assert found[0].line == 8 and "orderid" in found[0].message  # at its function
    _edit(pack, "        orderid: A typo.\n", "", "tools/shop.py")
    assert [d for d in validate_pack(pack).diagnostics if d.code == "W319"] == []
