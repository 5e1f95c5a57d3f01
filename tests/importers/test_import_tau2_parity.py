"""`bench import tau2 --tau2` (issue 23, WP-T): what τ²'s own code says (the driver's
`extract`, faked here from our fixtures) becomes the fixtures, the tool definitions the agent
is offered, the τ² texts under tau2/, and the toolset options; `--fix` switches are recorded
differences; without --tau2 the pack says it is not comparable. The real extract is covered
by tests/runtime/test_tau2_driver.py and the parity harness when a checkout is given."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from benchpack.cli.main import cli
from benchpack.compiler import compile_pack
from benchpack.compiler.importers import ImportError_, import_pack
from benchpack.compiler.importers.tau2_parity import TOOLS_DIR
from benchpack.specs.pytools import read_tools

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "tau2"


def _extract(domain: str = "retail") -> dict[str, Any]:
    db = json.loads((FIX / domain / "db.json").read_text(encoding="utf-8"))
    for order in db.get("orders", {}).values():  # what τ²'s models add when they load it
        order.setdefault("cancel_reason", None)
    tools = read_tools((TOOLS_DIR / f"{domain}.py").read_text(encoding="utf-8")).tools
    tasks = json.loads((FIX / domain / "tasks.json").read_text(encoding="utf-8"))
    return {
        "domain": domain, "python": "3.12.1", "pydantic": "2.99.1", "policy": "THEIR POLICY",
        "tools": [{"name": t.name, "type": "read", "mutates_state": False, "schema": {
            "type": "function", "function": {"name": t.name, "description": f"theirs: {t.name}",
                                             "parameters": {"type": "object", "title": "p",
                                                            "properties": {}}}}}
                  for t in tools],
        "user_tools": [], "agent_system_prompt": "<policy>THEIR POLICY</policy>",
        "first_agent_message": "Hi!", "user_prompts": [{"prefix": "GUIDE\n<scenario>\n",
                                                        "suffix": "\n</scenario>"}],
        "tasks": [{"id": str(t["id"]), "scenario": f"scenario {t['id']}", "user_prompt": 0,
                   "user_tools": []} for t in tasks],
        "nl_judge": {"messages": [{"role": "system", "content": "judge"}]},
        "defaults": {"DEFAULT_MAX_STEPS": 200}, "db": db, "user_db": None,
        "splits": None}


def test_parity_import_writes_tau2s_definitions_database_and_texts(tmp_path: Path) -> None:
    extract = _extract()
    result = import_pack("tau2", FIX / "retail", tmp_path / "p", tau2=extract)
    pack = tmp_path / "p"
    assert result.differences == [] and result.notes == []
    specs = json.loads((pack / "tools" / "retail.specs.json").read_text())
    assert list(specs) == [t["name"] for t in extract["tools"]]
    assert specs["calculate"] == {"description": "theirs: calculate", "parameters": {
        "type": "object", "title": "p", "properties": {}}}
    orders = json.loads((pack / "data" / "orders.json").read_text())
    assert all(o["cancel_reason"] is None for o in orders)  # τ²'s loaded rows
    assert (pack / "policy.md").read_text() == "THEIR POLICY"
    manifest = yaml.safe_load((pack / "pack.yaml").read_text())
    ts = manifest["toolsets"][0]
    assert ts == {"module": "tools/retail.py", "service": "retail",
                  "specs": "tools/retail.specs.json", "check_arguments": False,
                  "atomic": False, "plain_errors": True}
    assert "NOT comparable" not in manifest["description"]
    module = (pack / "tools" / "retail.py").read_text()
    assert 'PYDANTIC_DOCS = "2.99"' in module and "class Tau2:" in module
    assert "from benchpack.compiler" not in module  # the prelude is inlined
    for rel in ("tau2/agent_system_prompt.md", "tau2/first_agent_message.txt",
                "tau2/user_system_prompt.prefix.md", "tau2/user_system_prompt.suffix.md",
                "tau2/user_scenarios.json", "tau2/nl_judge.json", "tau2/extract.json"):
        assert (pack / rel).is_file(), rel
        assert f"`{rel}`" in (pack / "IMPORT_REPORT.md").read_text()
    assert json.loads((pack / "tau2" / "user_scenarios.json").read_text())["0"] == {
        "scenario": "scenario 0", "user_prompt": 1, "user_tools": []}
    compiled = compile_pack(pack, tmp_path / "plan", use_cache=False)
    assert compiled.ok, [d.format() for d in compiled.diagnostics]
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text())
    assert plan["tools"]["calculate"]["description"] == "theirs: calculate"
    # importing again gives the same bytes
    first = {p: p.read_bytes() for p in sorted(pack.rglob("*")) if p.is_file()}
    import_pack("tau2", FIX / "retail", pack, tau2=extract)
    assert first == {p: p.read_bytes() for p in sorted(pack.rglob("*")) if p.is_file()}


def test_fixes_are_recorded_differences(tmp_path: Path) -> None:
    result = import_pack("tau2", FIX / "retail", tmp_path / "p", tau2=_extract(),
                         fixes=["item-prices", "payment-rounding"])
    assert [d["id"] for d in result.differences] == ["fix:item-prices",
                                                     "fix:payment-rounding"]
    assert all(d["what"] and d["why"] for d in result.differences)
    pack = tmp_path / "p"
    assert 'FIXES = frozenset({"item-prices", "payment-rounding"})' in \
        (pack / "tools" / "retail.py").read_text()
    description = yaml.safe_load((pack / "pack.yaml").read_text())["description"]
    assert "NOT comparable" in description and "fix:item-prices" in description
    report = (pack / "IMPORT_REPORT.md").read_text()
    assert "- `fix:payment-rounding`: " in report and "Why: " in report
    with pytest.raises(ImportError_, match="--fix rounding: not a fix of the τ² domain "
                                           "`retail`"):
        import_pack("tau2", FIX / "retail", tmp_path / "q", fixes=["rounding"])
    with pytest.raises(ImportError_, match="fixes: none for this domain"):
        import_pack("tau2", FIX / "mock", tmp_path / "m", fixes=["item-prices"])


def test_without_tau2_the_pack_says_it_is_not_comparable(tmp_path: Path) -> None:
    result = import_pack("tau2", FIX / "retail", tmp_path / "p")
    assert result.notes and "not comparable" in result.notes[0]
    manifest = yaml.safe_load((tmp_path / "p" / "pack.yaml").read_text())
    assert "NOT comparable" in manifest["description"]
    assert "specs" not in manifest["toolsets"][0]
    assert "**Not comparable with τ²-bench scores.**" in \
        (tmp_path / "p" / "IMPORT_REPORT.md").read_text()
    assert not (tmp_path / "p" / "tau2").exists()


def test_an_extract_of_another_domain_or_task_set_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ImportError_, match="extract of `mock`"):
        import_pack("tau2", FIX / "retail", tmp_path / "a", tau2=_extract("mock"))
    extract = _extract()
    extract["tasks"] = extract["tasks"][:2]
    with pytest.raises(ImportError_, match="not those of the τ² checkout's domain"):
        import_pack("tau2", FIX / "retail", tmp_path / "b", tau2=extract)
    extract = _extract()
    extract["tools"].append(copy.deepcopy(extract["tools"][0]) | {"name": "teleport"})
    with pytest.raises(ImportError_, match="does not implement: teleport"):
        import_pack("tau2", FIX / "retail", tmp_path / "c", tau2=extract)


def test_splits_become_tags(tmp_path: Path) -> None:
    src = tmp_path / "retail"
    src.mkdir()
    for name in ("tasks.json", "db.json", "policy.md"):
        (src / name).write_bytes((FIX / "retail" / name).read_bytes())
    (src / "split_tasks.json").write_text(json.dumps({"train": ["0", "1"], "test": ["2"],
                                                      "base": ["0", "1", "2", "3"]}))
    import_pack("tau2", src, tmp_path / "p")
    sessions = {e["sessions"][0]["id"]: e["sessions"][0] for e in yaml.safe_load(
        (tmp_path / "p" / "tasks.yaml").read_text())["episodes"]}
    assert sessions["0"]["metadata"] == {"tags": ["split:base", "split:train"]}
    assert sessions["2"]["metadata"] == {"tags": ["split:base", "split:test"]}
    assert "metadata" not in sessions["4"]
    assert compile_pack(tmp_path / "p", tmp_path / "plan", use_cache=False).ok


@pytest.mark.parametrize("args,message", [
    (["--tau2", "{fix}/nowhere"], "not a τ²-bench checkout"),
    (["--tau2"], "is not <checkout>/data/tau2/domains/<domain>"),
])
def test_cli_tau2_mistakes_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    args = [a.replace("{fix}", str(tmp_path)) for a in args]
    result = CliRunner().invoke(cli, ["import", "tau2", str(FIX / "retail"), "-o",
                                      str(tmp_path / "o"), *args])
    assert result.exit_code == 1, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("✗ --tau2: ") and message in line


def test_cli_tau2_options_belong_to_tau2(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["import", "pibench", str(tmp_path), "-o", str(tmp_path / "o"),
                                 "--fix", "item-prices"])
    assert r.exit_code == 2 and "--fix is an option of the tau2 format" in r.output
    r = CliRunner().invoke(cli, ["import", "tau2", str(FIX / "retail"), "-o",
                                 str(tmp_path / "o"), "--tau2-python", "py"])
    assert r.exit_code == 2 and "--tau2-python needs --tau2" in r.output
