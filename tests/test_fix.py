"""`bench validate --fix`: unambiguous fixes applied in place, the author's YAML kept byte for
byte apart from the fixed token; ambiguous hints, collisions and files ruamel.yaml would
reformat are left to the author; `--dry-run` writes nothing; a hypothesis property: a valid
pack with one key or reference turned into a near miss is restored exactly."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from benchpack.cli import cli
from benchpack.compiler import init_pack, validate_pack
from benchpack.compiler.diagnostics import Diagnostic, Diagnostics, Fix, settle_fixes, suggest_fix
from benchpack.compiler.fix import apply_fixes, fix_pack
from benchpack.compiler.validate import allowed_keys
from benchpack.specs.pack import Fragment, Pack
from conftest import TASKPACKS

PACK = """\
# Pharmacy week: a pack as a pharmacist would write it.
benchpack: 1
name: pharmacy
description: "Refills, handovers and the odd surprise"   # shown in reports
vars: {team: 'Larkfield'}
include:
  - episodes/*.yaml

personas:
  - id: dana
    profile:
      role: Community pharmacist at {{ vars.team }}
      preferences: ['short answers', "urgent things first"]

services:
  - name: todo
    tables:
      tasks: {key: id, rows: [{id: T-1, title: seed task}]}
    operations:
      - {name: create, kind: create, table: tasks, fields: [title]}   # the one tool

environments:
  - id: pharmacy
    services: [todo]
lint:
  ignore: [W312]
"""

WEEK = """\
# Monday at the counter
episodes:
  - id: monday
    persona: dana
    environment: pharmacy
    sessions:
      - id: refill-triage
        title: "Triage the morning refill queue"
        protocol: intent_tracking
        request: 'Can you go through the refill queue?'

        hidden_intents:      # what Dana wants but does not say
          - text: Flag the warfarin refill first.
        checklist:
          - text: A to-do item is created for the warfarin follow-up.
            rule:
              tool: todo__create
              where:
                args.title: {contains: warfarin}

      - id: handover
        protocol: intent_tracking
        depends_on: [refill-triage]     # after the triage
        request: Draft my handover note.
        hidden_intents:
          - text: Keep the note under 120 words.
        checklist:
          - text: The note is under 120 words.
"""


def _pack(root: Path, pack: str = PACK, week: str = WEEK) -> Path:
    (root / "episodes").mkdir(parents=True, exist_ok=True)
    (root / "pack.yaml").write_text(pack, encoding="utf-8")
    (root / "episodes" / "monday.yaml").write_text(week, encoding="utf-8")
    return root


def _swap(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def _fixes(result_diags: list[Diagnostic]) -> list[tuple[str, str, str, str]]:
    return [(d.code, d.fix.kind, d.fix.old, d.fix.new) for d in result_diags if d.fix]


def test_the_base_pack_is_valid(tmp_path: Path) -> None:
    result = validate_pack(_pack(tmp_path))
    assert result.diagnostics == [] and result.ok


# ------------------------------------------------------------------ what is fixable


def test_unambiguous_suggestions_carry_a_fix() -> None:
    assert suggest_fix("hidden_intent", ["hidden_intents", "stages"], "rename_key") == (
        "did you mean `hidden_intents`?", Fix("rename_key", "hidden_intent", "hidden_intents"))
    assert suggest_fix("w304", ["W304", "W314"])[1] == Fix("replace_value", "w304", "W304")
    # the same name but for separators wins over other close candidates
    tools = ["todo__create", "todo__update", "todo__list"]
    assert suggest_fix("todo_create", tools)[1] == Fix("replace_value", "todo_create",
                                                       "todo__create")
    assert suggest_fix("Todo-Create", tools)[1] == Fix("replace_value", "Todo-Create",
                                                       "todo__create")
    assert suggest_fix("todo_create", ["todo__create", "todo-create"])[1] is None
    # two candidates above the cutoff: a hint, no fix
    assert suggest_fix("triag", ["triage", "triage2"]) == ("did you mean `triage`?", None)
    # a prefix guess is a hint only
    assert suggest_fix("hid", ["hidden_intents", "checklist"]) == (
        "did you mean `hidden_intents`?", None)
    # the key exists already
    assert suggest_fix("titel", ["title", "protocol"], "rename_key", {"title": 1})[1] is None
    assert suggest_fix("zzz", ["alpha"]) == (None, None)


def test_contradicting_fixes_are_withdrawn() -> None:
    def diag(path: tuple[str | int, ...], fix: Fix) -> Diagnostic:
        return Diagnostic("E101", "unknown key", "f.yaml", path, fix=fix)

    # two keys of one mapping would both become `hidden_intents`
    a = diag(("s", "hidden_intent"), Fix("rename_key", "hidden_intent", "hidden_intents"))
    b = diag(("s", "hidden_intnts"), Fix("rename_key", "hidden_intnts", "hidden_intents"))
    c = diag(("t", "hidden_intent"), Fix("rename_key", "hidden_intent", "hidden_intents"))
    settle_fixes([a, b, c])
    assert (a.fix, b.fix) == (None, None) and c.fix is not None


def test_diagnostics_mark_fixes_in_text_and_json(tmp_path: Path) -> None:
    _pack(tmp_path, week=_swap(WEEK, "        hidden_intents:      #",
                               "        hidden_intent:      #"))
    result = validate_pack(tmp_path)
    (d,) = result.diagnostics
    assert d.format().endswith(
        "(hint: did you mean `hidden_intents`?) [fixable]")
    assert d.as_dict()["fix"] == {
        "kind": "rename_key", "path": ["episodes", 0, "sessions", 0, "hidden_intent"],
        "old": "hidden_intent", "new": "hidden_intents"}
    diags = Diagnostics()
    diags.error("E202", "unknown session `x`", "f.yaml", ("a",), "did you mean `y`?")
    assert not diags.items[0].format().endswith("[fixable]")


def test_ambiguous_hints_are_not_fixable(tmp_path: Path) -> None:
    week = _swap(WEEK, "depends_on: [refill-triage]", "depends_on: [refill-triag]")
    week = week.replace("      - id: handover", "      - id: refill-triage2\n"
                        "        protocol: intent_tracking\n        request: Again.\n"
                        "        hidden_intents: [{text: x}]\n      - id: handover")
    _pack(tmp_path, week=week)
    result = validate_pack(tmp_path)
    (d,) = result.errors
    assert d.code == "E202" and d.hint == "did you mean `refill-triage`?" and d.fix is None
    report = fix_pack(tmp_path)
    assert report.fixed == [] and report.manual == [] and report.written == []
    assert (tmp_path / "episodes" / "monday.yaml").read_text() == week


def test_a_rename_onto_an_existing_key_is_not_offered(tmp_path: Path) -> None:
    week = _swap(WEEK, '        title: "Triage the morning refill queue"\n',
                 '        title: "Triage the morning refill queue"\n        titel: Triage\n')
    _pack(tmp_path, week=week)
    (d,) = validate_pack(tmp_path).errors
    assert d.code == "E101" and d.hint == "did you mean `title`?" and d.fix is None
    # and two misspellings that would both become `hidden_intents`: neither is applied
    week = _swap(WEEK, "        hidden_intents:      #", "        hidden_intent:      #")
    week = _swap(week, "        checklist:\n          - text: A to-do", "        hidden_intnts: []\n"
                 "        checklist:\n          - text: A to-do")
    _pack(tmp_path, week=week)
    result = validate_pack(tmp_path)
    assert [d.code for d in result.errors] == ["E101", "E101"]
    assert _fixes(result.diagnostics) == []


# ------------------------------------------------------------------ each kind of fix, byte for byte


# name → (file, text, near miss, the diagnostic's code and fix kind, the text after fixing
# when it is not the original: quotes stay as the author wrote them)
CASES: dict[str, tuple[str, str, str, tuple[str, str], str | None]] = {
    # an unknown key, with a comment after it and a blank line before it
    "key": ("episodes/monday.yaml", "        hidden_intents:      #",
            "        hidden_intent:      #", ("E101", "rename_key"), None),
    # a double-quoted key keeps its quotes
    "quoted-key": ("episodes/monday.yaml", '        title: "Triage',
                   '        "titel": "Triage', ("E101", "rename_key"), '        "title": "Triage'),
    # a key inside a flow mapping
    "flow-key": ("pack.yaml", "{key: id, rows:", "{kee: id, rows:", ("E101", "rename_key"), None),
    # an enum value
    "enum": ("episodes/monday.yaml", "      - id: handover\n        protocol: intent_tracking",
             "      - id: handover\n        protocol: intent_trackin", ("E104", "replace_value"),
             None),
    # a reference inside a flow sequence, followed by a comment
    "flow-reference": ("episodes/monday.yaml", "depends_on: [refill-triage]",
                       "depends_on: [refill-triag]", ("E202", "replace_value"), None),
    # a reference in a block mapping
    "reference": ("episodes/monday.yaml", "    persona: dana", "    persona: dane",
                  ("E202", "replace_value"), None),
    # a single-quoted reference keeps its quotes
    "quoted-reference": ("pack.yaml", "    services: [todo]", "    services: ['tod']",
                         ("E202", "replace_value"), "    services: ['todo']"),
    # a reference inside a flow mapping inside a flow sequence
    "flow-mapping-value": ("pack.yaml", "kind: create, table: tasks", "kind: create, table: taks",
                           ("E202", "replace_value"), None),
    # a lint code, lower case
    "lint-code": ("pack.yaml", "ignore: [W312]", "ignore: [w312]", ("E104", "replace_value"),
                  None),
    # a tool name in a checklist rule
    "tool": ("episodes/monday.yaml", "tool: todo__create", "tool: todo_create",
             ("E202", "replace_value"), None),
    # a `where` key (a parameter name written as the key `args.<name>`)
    "where-key": ("episodes/monday.yaml", "args.title:", "args.titel:", ("E202", "rename_key"),
                  None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_fix_changes_only_its_token(tmp_path: Path, case: str) -> None:
    rel, old, new, (code, kind), restored = CASES[case]
    _pack(tmp_path)
    target = tmp_path / rel
    expected = {p: p.read_text() for p in tmp_path.rglob("*.yaml")}
    expected[target] = _swap(expected[target], old, restored or old)
    target.write_text(_swap(target.read_text(), old, new))
    result = validate_pack(tmp_path)
    fixable = [d for d in result.errors if d.fix]
    assert [(d.code, d.fix.kind) for d in fixable if d.fix] == [(code, kind)], \
        [d.format() for d in result.diagnostics]
    report = fix_pack(tmp_path)
    assert [f.code for f in report.fixed] == [code] and report.manual == []
    assert report.result is not None and report.result.diagnostics == []
    assert {p: p.read_text() for p in tmp_path.rglob("*.yaml")} == expected
    assert report.written == [fixable[0].file]


def test_fixes_in_several_files_and_revealed_errors_in_one_run(tmp_path: Path) -> None:
    _pack(tmp_path)
    original = {p: p.read_bytes() for p in tmp_path.rglob("*.yaml")}
    pack = tmp_path / "pack.yaml"
    pack.write_text(_swap(pack.read_text(), "ignore: [W312]", "ignore: [w312]"))
    week = tmp_path / "episodes" / "monday.yaml"
    # the misspelt `args.titel` is only checked once its session is no longer broken
    text = _swap(week.read_text(), "        protocol: intent_tracking\n        request: 'Can",
                 "        protocl: intent_tracking\n        request: 'Can")
    week.write_text(_swap(text, "args.title:", "args.titel:"))
    first = validate_pack(tmp_path)
    assert "args.titel" not in "\n".join(d.format() for d in first.diagnostics)
    report = fix_pack(tmp_path)
    assert [(f.fix.old, f.fix.new) for f in report.fixed] == [
        ("protocl", "protocol"), ("args.titel", "args.title"), ("w312", "W312")]
    assert report.result is not None and report.result.diagnostics == []
    assert {p: p.read_bytes() for p in tmp_path.rglob("*.yaml")} == original


def test_a_misspelt_include_is_fixed(tmp_path: Path) -> None:
    _pack(tmp_path, pack=_swap(PACK, "  - episodes/*.yaml", "  - episodes/monday.yaml"))
    original = (tmp_path / "pack.yaml").read_bytes()
    pack = tmp_path / "pack.yaml"
    pack.write_text(_swap(pack.read_text(), "episodes/monday.yaml", "episodes/mondy.yaml"))
    report = fix_pack(tmp_path)
    assert [f.format() for f in report.fixed] == [
        f"{report.fixed[0].file}:7: replaced `episodes/mondy.yaml` → `episodes/monday.yaml`"]
    assert pack.read_bytes() == original


def test_end_of_line_comments_keep_their_place_after_the_token(tmp_path: Path) -> None:
    _pack(tmp_path, week=_swap(WEEK, "depends_on: [refill-triage]     #",
                               "depends_on: [refill-triag]     #"))
    fix_pack(tmp_path)
    assert "depends_on: [refill-triage]     # after the triage\n" in (
        tmp_path / "episodes" / "monday.yaml").read_text()


# ------------------------------------------------------------------ left to the author


@pytest.mark.parametrize(("name", "transform", "reason"), [
    ("multi-line flow mapping",
     lambda t: t.replace("{name: create, kind: create, table: tasks, fields: [title]}",
                         "{name: create, kind: create,\n         table: tasks, fields: [title]}"),
     "ruamel.yaml would reformat the file (line 20 first"),
    ("CRLF", lambda t: t.replace("\n", "\r\n"), "Windows (CRLF) line endings"),
    ("BOM", lambda t: "\ufeff" + t, "byte-order mark"),
    ("odd spacing", lambda t: t.replace("name: pharmacy", "name:   pharmacy"),
     "ruamel.yaml would reformat the file (line 3 first"),
    ("tab in a scalar", lambda t: t.replace("Refills, handovers", "Refills,\thandovers"),
     "ruamel.yaml would reformat the file (line 4 first"),
])
def test_a_file_ruamel_would_reformat_is_left_alone(tmp_path: Path, name: str, transform: object,
                                                      reason: str) -> None:
    assert callable(transform)
    pack = _swap(PACK, "ignore: [W312]", "ignore: [w312]")
    _pack(tmp_path, pack=transform(pack))
    before = (tmp_path / "pack.yaml").read_bytes()
    assert validate_pack(tmp_path).errors[0].fix is not None  # the compiler reads it fine
    report = fix_pack(tmp_path)
    assert report.fixed == [] and report.written == []
    (manual,) = report.manual
    assert reason in manual.format(), manual.format()
    assert manual.format().startswith(f"{manual.file}:{manual.line}:{manual.col}: "
                                      "replace `w312` → `W312` by hand (")
    assert (tmp_path / "pack.yaml").read_bytes() == before


def test_a_block_scalar_or_anchored_value_is_left_alone(tmp_path: Path) -> None:
    _pack(tmp_path, week=_swap(WEEK, "    persona: dana", "    persona: &who dane"))
    report = fix_pack(tmp_path)
    assert [m.reason for m in report.manual] == ["the value carries an `&anchor`"]
    assert "&who dane" in (tmp_path / "episodes" / "monday.yaml").read_text()


def test_a_file_changed_since_validation_is_not_touched(tmp_path: Path) -> None:
    _pack(tmp_path, week=_swap(WEEK, "    persona: dana", "    persona: dane"))
    result = validate_pack(tmp_path)
    week = tmp_path / "episodes" / "monday.yaml"
    week.write_text(week.read_text() + "# edited meanwhile\n")
    report = apply_fixes(result)
    assert [m.reason for m in report.manual] == [
        "the file changed since it was checked; run the command again"]
    assert "persona: dane" in week.read_text()


def test_never_writes_through_a_symlink_out_of_the_pack(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    _pack(outside, pack=_swap(PACK, "    services: [todo]", "    services: [tod]"))
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "pack.yaml").symlink_to(outside / "pack.yaml")
    before = (outside / "pack.yaml").read_bytes()
    assert any(d.fix for d in validate_pack(pack).diagnostics)
    report = fix_pack(pack)
    assert report.written == [] and report.fixed == []
    assert [m.reason for m in report.manual] == ["the file is outside the pack directory"]
    assert (outside / "pack.yaml").read_bytes() == before
    assert sorted(p.name for p in outside.iterdir()) == ["episodes", "pack.yaml"]


# ------------------------------------------------------------------ CLI


def test_cli_fix_dry_run_and_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _pack(tmp_path / "p", week=_swap(WEEK, "        hidden_intents:      #",
                                     "        hidden_intent:      #"))
    week = tmp_path / "p" / "episodes" / "monday.yaml"
    broken = week.read_bytes()
    runner = CliRunner()

    plain = runner.invoke(cli, ["validate", "p"])
    assert plain.exit_code == 1 and plain.output.splitlines()[0].endswith(
        "(hint: did you mean `hidden_intents`?) [fixable]")

    dry = runner.invoke(cli, ["validate", "p", "--fix", "--dry-run"])
    assert dry.exit_code == 1 and week.read_bytes() == broken
    assert dry.stdout == (
        "--- a/p/episodes/monday.yaml\n+++ b/p/episodes/monday.yaml\n@@ -9,7 +9,7 @@\n"
        "         protocol: intent_tracking\n"
        "         request: 'Can you go through the refill queue?'\n \n"
        "-        hidden_intent:      # what Dana wants but does not say\n"
        "+        hidden_intents:      # what Dana wants but does not say\n"
        "           - text: Flag the warfarin refill first.\n         checklist:\n"
        "           - text: A to-do item is created for the warfarin follow-up.\n")
    assert dry.stderr.splitlines() == [
        "p/episodes/monday.yaml:12: would rename `hidden_intent` → `hidden_intents`",
        "✗ p: 1 error; --fix would fix 1 (dry run: nothing written)"]

    as_json = runner.invoke(cli, ["validate", "p", "--fix", "--dry-run", "--format", "json"])
    data = json.loads(as_json.stdout)
    assert data["fixed"][0]["new"] == "hidden_intents" and data["written"] == []
    assert data["diagnostics"][0]["fix"]["kind"] == "rename_key"

    done = runner.invoke(cli, ["validate", "p", "--fix"])
    assert done.exit_code == 0, done.output
    assert done.output.splitlines() == [
        "p/episodes/monday.yaml:12: renamed `hidden_intent` → `hidden_intents`",
        "✓ p: fixed 1 in 1 file; no problems"]
    assert week.read_text() == WEEK


def test_cli_fix_reports_what_needs_the_author(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    pack = _swap(PACK, "ignore: [W312]", "ignore: [w312]").replace("\n", "\r\n")
    _pack(tmp_path / "p", pack=pack, week=_swap(WEEK, "    persona: dana", "    persona: dan"))
    out = CliRunner().invoke(cli, ["validate", "p", "--fix"])
    assert out.exit_code == 1
    lines = out.output.splitlines()
    assert lines[0] == "p/episodes/monday.yaml:4: replaced `dan` → `dana`"
    assert lines[1] == ("p/pack.yaml:26:12: replace `w312` → `W312` by hand (the file has "
                        "Windows (CRLF) line endings, which ruamel.yaml would rewrite)")
    assert lines[2].startswith("p/pack.yaml:26:12: error E104 `w312` is not a valid value")
    assert lines[-1] == "✗ p: fixed 1 in 1 file, 1 to fix by hand; 1 error"


# ------------------------------------------------------------------ property: near misses


def _sites(text: str, model: type[Pack] | type[Fragment]) -> list[tuple[int, str]]:
    """(offset, token) of every key of the pack language and every reference or enum value
    in a YAML text: the places an author mistypes. Names the author defines (table names,
    `vars`, row columns) are not among them: a slip there breaks its references instead."""
    refs = {"persona", "environment", "depends_on", "services", "tools", "table", "tool",
            "protocol", "kind", "ignore"}
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    data = yaml.safe_load(text)
    out: list[tuple[int, str]] = []

    def add(node: yaml.Node) -> None:
        if isinstance(node, yaml.ScalarNode) and node.style is None and re.fullmatch(
                r"[A-Za-z][A-Za-z0-9_.-]{3,}", node.value):
            out.append((starts[node.start_mark.line] + node.start_mark.column, node.value))

    def walk(node: yaml.Node, path: tuple[str | int, ...], schema: bool) -> None:
        if isinstance(node, yaml.MappingNode):
            allowed = allowed_keys(model, path, data)
            for k, v in node.value:
                if k.value in allowed:
                    add(k)
                walk(v, (*path, k.value), k.value in allowed)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, (*path, i), schema)
        elif schema and path and (path[-1] in refs or (
                isinstance(path[-1], int) and path[-2] in refs)):
            add(node)

    root = yaml.compose(text)
    assert root is not None
    walk(root, (), True)
    return out


def _near_miss(token: str, op: int, at: int, letter: str) -> str:
    i = at % len(token)
    if op == 0:
        return token[:i] + token[i + 1:]  # a dropped letter
    if op == 1:
        return token[:i] + token[i] + token[i:]  # a doubled letter
    if op == 2 and i + 1 < len(token):
        return token[:i] + token[i + 1] + token[i] + token[i + 2:]  # swapped letters
    return token[:i] + letter + token[i + 1:]  # a wrong letter


_BASES: dict[str, dict[str, str]] = {}


def _base(name: str, tmp_path: Path) -> dict[str, str]:
    """The files of a valid pack: ours, or the `bench init` scaffold."""
    if name not in _BASES:
        root = tmp_path / f"base-{name}"
        if name == "ours":
            _pack(root)
        else:
            init_pack(root, "pharmacy")
        _BASES[name] = {str(p.relative_to(root)): p.read_text() for p in root.rglob("*")
                        if p.is_file()}
    return _BASES[name]


@settings(max_examples=int(os.environ.get("BENCHPACK_PROPERTY_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(base=st.sampled_from(["ours", "scaffold"]), pick=st.integers(0, 10_000),
       op=st.integers(0, 3), at=st.integers(0, 100),
       letter=st.sampled_from("abcdefghijklmnopqrstuvwxyz"))
def test_fix_restores_a_near_miss_exactly(tmp_path: Path, base: str, pick: int, op: int, at: int,
                                          letter: str) -> None:
    files = _base(base, tmp_path)
    yaml_files = sorted(f for f in files if f.endswith(".yaml"))
    sites = [(f, off, tok) for f in yaml_files
             for off, tok in _sites(files[f], Pack if f == "pack.yaml" else Fragment)]
    rel, offset, token = sites[pick % len(sites)]
    miss = _near_miss(token, op, at, letter)
    root = tmp_path / "pack"
    shutil.rmtree(root, ignore_errors=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    mutated = files[rel][:offset] + miss + files[rel][offset + len(token):]
    (root / rel).write_text(mutated)

    before = validate_pack(root)
    report = fix_pack(root)
    after = {name: (root / name).read_text() for name in files}
    event("fixable" if any(d.fix for d in before.diagnostics) else
          "no fix offered" if before.errors else "still valid")
    if any(d.fix for d in before.diagnostics):
        # the one fix offered for a near miss is the original token, and nothing else moves
        assert report.manual == [], [m.format() for m in report.manual]
        assert after == files, (token, miss)
        assert report.result is not None and report.result.errors == []
    else:
        assert after == {**files, rel: mutated}  # nothing to fix: nothing written


def test_near_misses_of_every_key_and_reference_are_mostly_fixable(tmp_path: Path) -> None:
    """The property above, exhaustively for one kind of slip (a dropped last letter): not
    vacuous — most slips are fixed, and every fix restores the original."""
    files = _base("ours", tmp_path)
    fixed = broken = 0
    for rel in sorted(f for f in files if f.endswith(".yaml")):
        for offset, token in _sites(files[rel], Pack if rel == "pack.yaml" else Fragment):
            root = tmp_path / f"slip-{rel.replace('/', '-')}-{offset}"
            _pack(root)
            text = files[rel][:offset] + token[:-1] + files[rel][offset + len(token):]
            (root / rel).write_text(text)
            if not validate_pack(root).errors:
                continue
            broken += 1
            report = fix_pack(root)
            if report.fixed:
                fixed += 1
                assert (root / rel).read_text() == files[rel], (token, report.fixed)
    assert broken >= 30 and fixed / broken >= 0.8, (fixed, broken)


def test_a_reference_pack_round_trips_where_it_can(tmp_path: Path) -> None:
    """The pharmacist pack: its episode file takes the fix byte for byte; its pack.yaml spreads
    fixture rows over several lines of flow mappings, which ruamel.yaml would join, so a fix
    there is left to the author with the reason."""
    root = tmp_path / "pharmacist-week"
    shutil.copytree(TASKPACKS / "pharmacist-week", root)
    week, pack = root / "episodes" / "larkfield-week.yaml", root / "pack.yaml"
    originals = {week: week.read_bytes(), pack: pack.read_bytes()}
    week.write_text(_swap(week.read_text(), "depends_on: [brennan-callback, inr-clinic-review]",
                          "depends_on: [brennan-callback, inr-clinic-reveiw]"))
    pack.write_text(_swap(pack.read_text(), "    name: Helena Marsh", "    nam: Helena Marsh"))
    report = fix_pack(root)
    assert [f.fix.new for f in report.fixed] == ["inr-clinic-review"]
    assert week.read_bytes() == originals[week]
    (manual,) = report.manual
    assert manual.fix == Fix("rename_key", "nam", "name") and manual.line == 54
    assert manual.reason is not None and manual.reason.startswith(
        "ruamel.yaml would reformat the file (line 111 first")
    assert pack.read_text() == _swap(originals[pack].decode(), "    name: Helena Marsh",
                                     "    nam: Helena Marsh")


def test_json_schema_fixes_types_and_keywords(tmp_path: Path) -> None:
    # E207: a misspelt type (an error); W314: a misspelt keyword (a warning, fixed as well,
    # once the schema is valid; keyword checks wait for a valid schema)
    schema = ("{type: object, properties: {title: {type: strng, maxLenght: 80, "
              "descripton: Short, desciption: Title}}}")
    _pack(tmp_path, pack=_swap(PACK, "tasks: {key: id,", f"tasks: {{row_schema: {schema}, key: id,"))
    report = fix_pack(tmp_path)
    assert [(f.code, f.fix.describe()) for f in report.fixed] == [
        ("E207", "replaced `strng` → `string`"), ("W314", "renamed `descripton` → `description`")]
    assert ("{title: {type: string, maxLenght: 80, description: Short, desciption: Title}}"
            in (tmp_path / "pack.yaml").read_text())
    assert report.result is not None
    # close to two keywords each: hints, no fixes (and `description` exists by now)
    assert [(d.code, d.hint, d.fix) for d in report.result.diagnostics] == [
        ("W314", "did you mean `maxLength`?", None), ("W314", "did you mean `description`?", None)]
