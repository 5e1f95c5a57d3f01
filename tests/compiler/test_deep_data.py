"""Data files nested deeper than the YAML limit (`loader.MAX_DEPTH`, 100 levels) are refused at
compile time, located at the key that names the file, with the line and column inside it; a
plan that carries a deeper value anyway is refused by `bench run` before anything runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from test_build import HEAD, SERVICE, session

from benchpack.cli import cli
from benchpack.compiler import compile_pack, validate_pack
from benchpack.compiler.loader import MAX_DEPTH

HINT = "flatten the structure"


def _nested(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = [value]
    return value


def _diags(root: Path, name: str, content: str) -> list[str]:
    text = SERVICE.replace("fixture: leads.jsonl", f"fixture: {name}")
    (root / "pack.yaml").write_text(HEAD + text + session(
        "        request: go\n        checklist: [{text: ok}]\n"), encoding="utf-8")
    (root / name).write_text(content, encoding="utf-8")
    return [d.format() for d in validate_pack(root).errors]


def test_a_fixture_row_nested_500_levels_is_a_located_error(tmp_path: Path) -> None:
    row = json.dumps({"lid": "L-2", "note": _nested(500)})
    errors = _diags(tmp_path, "leads.json", f'[\n{{"lid": "L-3"}},\n{row}\n]')
    assert len(errors) == 1, errors
    # at the `fixture:` key of pack.yaml (line 11), naming the place inside the file: level 1
    # is the document's list (line 1), level 2 the row object (line 3, column 1), level 3 its
    # `note` list at column 24 (after `{"lid": "L-2", "note": `): level 101 at column 24 + 98
    assert ("/pack.yaml:11:18: error E013 `leads.json`: line 3 column 122: "
            f"nested more than {MAX_DEPTH} levels deep") in errors[0], errors
    assert HINT in errors[0]


def test_jsonl_fixtures_and_triple_files_too(tmp_path: Path) -> None:
    line = json.dumps({"lid": "L-2", "note": _nested(300)})
    errors = _diags(tmp_path, "leads.jsonl", '{"lid": "L-3"}\n' + line + "\n")
    assert len(errors) == 1 and "`leads.jsonl`: line 2: column 123: " in errors[0], errors
    assert f"nested more than {MAX_DEPTH} levels deep" in errors[0] and HINT in errors[0]
    (tmp_path / "g.json").write_text(json.dumps(
        [{"head": "a", "relation": "b", "tail": "c", "x": _nested(200)}]), encoding="utf-8")
    (tmp_path / "pack.yaml").write_text(HEAD + session(
        "        stages:\n          - {when: {kind: start}, line: Find it.}\n"
        "        graph: {file: g.json}\n", protocol="staged_disclosure", env=None),
        encoding="utf-8")
    errors = [d.format() for d in validate_pack(tmp_path).errors]
    assert any(f"nested more than {MAX_DEPTH} levels deep" in e and HINT in e for e in errors), \
        errors


def test_exactly_the_limit_compiles(tmp_path: Path) -> None:
    """The document's own list and the row object are two of the 100 levels."""
    row = {"lid": "L-2", "note": _nested(MAX_DEPTH - 2)}
    assert _diags(tmp_path, "leads.json", json.dumps([row])) == []
    row = {"lid": "L-2", "note": _nested(MAX_DEPTH - 1)}
    assert len(_diags(tmp_path, "leads.json", json.dumps([row]))) == 1


def test_a_plan_carrying_a_deep_value_is_a_plan_error(tmp_path: Path) -> None:
    """Compiled before this check (or edited by hand): `bench run` says what is wrong with the
    plan, with exit 1, instead of a RecursionError (exit 3) when the service starts."""
    pack = tmp_path / "pack"
    text = SERVICE + session("        request: go\n        checklist: [{text: ok}]\n")
    pack.mkdir()
    (pack / "pack.yaml").write_text(HEAD + text, encoding="utf-8")
    (pack / "leads.jsonl").write_text('{"lid": "L-2"}\n', encoding="utf-8")
    assert compile_pack(pack, tmp_path / "build", use_cache=False).ok
    plan_path = tmp_path / "build" / "plan.json"
    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    plan["services"]["crm"]["tables"]["leads"]["rows"][0]["note"] = _nested(500)
    plan_path.write_text(json.dumps(plan), encoding="utf-8")
    (tmp_path / "agent.yaml").write_text('default:\n  - say: "Done."\n', encoding="utf-8")
    res = CliRunner().invoke(cli, ["run", str(tmp_path / "build"), "--agent",
                                   f"scripted:{tmp_path / 'agent.yaml'}", "--db",
                                   str(tmp_path / "bench.duckdb"), "--quiet", "--cache-dir",
                                   str(tmp_path / "cache")])
    assert res.exit_code == 1, (res.output, res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "plan.json: the plan nests more than" in res.output, res.output
    assert "$.services.crm.tables.leads.rows[0].note" in res.output, res.output
    assert not (tmp_path / "bench.duckdb").exists()
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)


def test_the_plan_depth_check_counts_every_list_and_object_to_the_limit() -> None:
    """`planfile._too_deep` walks a level at a time (start-up, issue 31): the plan itself is
    level 1, so 128 nested containers pass and 129 do not, whichever kind and wherever the
    deep branch hangs among shallow siblings; scalars never count."""
    from benchpack.runtime import planfile
    from benchpack.runtime.planfile import PLAN_MAX_DEPTH

    def objects(levels: int) -> object:
        value: object = "x"
        for _ in range(levels):
            value = {"k": value, "n": 1}
        return value

    assert PLAN_MAX_DEPTH == 128
    for make in (_nested, objects):
        assert not planfile._too_deep({"a": 1, "b": make(127)})  # 1 + 127 containers
        assert planfile._too_deep({"a": [1, {}], "b": make(128)})  # 1 + 128
        assert not planfile._too_deep(make(128))
        assert planfile._too_deep(make(129))
        assert planfile._too_deep([[], 3, make(128)])
    assert not planfile._too_deep({}) and not planfile._too_deep({"a": [[], {}, "s"]})
