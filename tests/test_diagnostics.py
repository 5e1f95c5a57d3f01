"""Diagnostics: the exact text of every error the compiler emits, and robustness.

Each case is a small pack with one kind of mistake. Its diagnostics, formatted as
`file:line:col: severity code message [at path] (hint: …)`, are compared with a snapshot in
`tests/snapshots/diagnostics/<case>.txt`; regenerate them with
`BENCHPACK_UPDATE_SNAPSHOTS=1 pytest tests/test_diagnostics.py` and review the diff. Every
case also goes through the CLI: exit code 1, never 3, never a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchpack.cli import cli, main
from benchpack.compiler import CODES, validate_pack
from benchpack.compiler import loader as loader_module
from benchpack.compiler.loader import MAX_FILE_BYTES

SNAPSHOTS = Path(__file__).parent / "snapshots" / "diagnostics"
UPDATE = os.environ.get("BENCHPACK_UPDATE_SNAPSHOTS") == "1"

# A clean pack (strict: no warnings) that the cases break one way each.
BASE = """\
benchpack: 1
name: demo
vars: {team: Orion}
personas:
  - id: ana
    profile: {role: "Analyst on team {{ vars.team }}"}
services:
  - name: todo
    tables:
      tasks: {key: id, rows: [{id: T-1, title: seed}]}
    operations:
      - {name: create, kind: create, table: tasks, fields: [title]}
environments:
  - id: office
    services: [todo]
episodes:
  - id: week
    persona: ana
    environment: office
    sessions:
      - id: triage
        protocol: intent_tracking
        request: Go through the queue.
        hidden_intents:
          - text: Put the overdue INR check first
        checklist:
          - text: A follow-up task is created
            rule: {tool: todo__create, where: {args.title: {contains: INR}}}
      - id: handover
        protocol: intent_tracking
        depends_on: [triage]
        request: Draft the handover note.
        hidden_intents:
          - text: Keep it under one hundred words
        checklist:
          - text: The note is short
"""

TRIGGER_SESSION = """\
      - id: show
        protocol: trigger_rubric
        scenario:
          hidden_goal: Enter the quilt in the juried show
          anchors:
            - {id: deadline, text: The entry deadline is Friday}
            - {id: photo, text: Entries need a photo}
        triggers:
          - type: emergent
            turn: 1
            anchors: [deadline]
            rubric: {pass: Mentions the deadline, partial: Vague, fail: Ignores it}
"""

SCORE_SESSION = """\
      - id: close
        protocol: verified_outcome
        request: Close the INR follow-up.
        score:
          items:
            - {id: done, dimension: completion, rule: {tool: todo__create, exists: true}}
            - {id: tone, dimension: robustness, text: The summary is clear, scale: [1, 10]}
            - {id: safe, dimension: safety, gate: true, rule: {not: {tool: todo__create, count: {min: 3}}}}
          formula: safety * max(0.8 * completion + 0.2 * robustness, completion)
"""


def _base(old: str, new: str) -> dict[str, str | bytes]:
    assert old in BASE, old
    return {"pack.yaml": BASE.replace(old, new, 1)}


def _session(extra: str) -> dict[str, str | bytes]:
    return {"pack.yaml": BASE + extra}


_SHOP = ("from benchpack_tools import State\n\n\ndef find(db: State) -> list:\n"
         "    \"\"\"Every task.\"\"\"\n    return db.rows('tasks')\n")
_SERVICES_PACK = BASE.replace("services:\n  - name: todo\n", (
    "services:\n  - name: todo2\n    tables: {tasks: {key: id, rows: []}}\n"
    "  - name: todo\n"), 1).replace("    services: [todo]\n", (
        "    services: [todo]\n    toolsets: [tools/shop.py]\ntoolsets:\n"
        "  - {module: tools/shop.py, service: todo, services: [todo2, todo], include: [find]}\n"
        "  - {name: other, module: tools/shop.py, services: [todo2], include: []}\n"), 1)
_TOOLSET_ENV = ("    services: [todo]\n    toolsets: [tools/shop.py]\n"
                "toolsets:\n  - {module: tools/shop.py, service: todo, include: [find, lookup]}\n")
_BAD_TYPES = '''\
from benchpack_tools import State


def find(db: State, when: object, *rest: str) -> list:
    """Find tasks.

    Args:
        since: Not a parameter.
    """
    return db.rows("tasks")


def shout(text) -> str:
    return text.upper()
'''

BOMB = "name: demo\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10) if i else '1, 1, 1, 1, 1, 1, 1, 1, 1, 1'}]\n"
    for i in range(9)
)

# name -> (files, the code the case is about)
CASES: dict[str, tuple[dict[str, str | bytes], str]] = {
    # E0xx: files and YAML
    "E001-syntax": ({"pack.yaml": "name: demo\npersonas:\n  - id: ana\n    profile: {role: [x}\n"}, "E001"),
    "E001-colon": ({"pack.yaml": "name: demo\ndescription: Note: this breaks\n"}, "E001"),
    "E001-tab": ({"pack.yaml": "name: demo\npersonas:\n\t- id: ana\n"}, "E001"),
    "E001-indent": ({"pack.yaml": "name: demo\npersonas:\n  - id: ana\n   profile: {role: x}\n"}, "E001"),
    "E001-two-documents": ({"pack.yaml": "name: demo\n---\nname: other\n"}, "E001"),
    "E001-python-tag": ({"pack.yaml": "name: !!python/object/apply:os.system [ls]\n"}, "E001"),
    "E001-deep": ({"pack.yaml": "name: demo\nvars: {x: " + "[" * 5000 + "]" * 5000 + "}\n"}, "E001"),
    "E001-long-number": ({"pack.yaml": "name: demo\ndefaults: {seed: " + "9" * 5000 + "}\n"}, "E001"),
    "E002-duplicate-key": (_base("    profile: {role:", "    id: ana2\n    profile: {role:"), "E002"),
    "E003-latin1": ({"pack.yaml": "name: demo\ndescription: caf\xe9 menu\n".encode("latin-1")}, "E003"),
    "E003-nul": ({"pack.yaml": b"name: demo\ndescription: a\x00b\n"}, "E003"),
    "E003-binary": ({"pack.yaml": bytes(range(256)) * 4}, "E003"),
    "E004-empty": ({"pack.yaml": ""}, "E004"),
    "E004-comments-only": ({"pack.yaml": "name: demo\ninclude: [more.yaml]\n",
                            "more.yaml": "# nothing yet\n"}, "E004"),
    "E006-missing-include": ({"pack.yaml": "name: demo\ninclude: [episodes/mondy.yaml]\n",
                              "episodes/monday.yaml": "episodes: []\n"}, "E006"),
    "E006-missing-fixture": (_base("rows: [{id: T-1, title: seed}]", "fixture: data/taks.json"), "E006"),
    "E007-include-loop": ({"pack.yaml": "name: demo\ninclude: [a.yaml]\n",
                           "a.yaml": "include: [b.yaml]\n", "b.yaml": "include: [a.yaml]\n"}, "E007"),
    "E008-glob-nothing": ({"pack.yaml": "name: demo\ninclude: [episodes/*.yml]\n",
                           "episodes/week.yaml": "episodes: []\n"}, "E008"),
    "E009-not-mapping": ({"pack.yaml": "- name: demo\n"}, "E009"),
    "E010-outside": ({"pack.yaml": "name: demo\ninclude: [../shared.yaml, /etc/**/*.yaml]\n"}, "E010"),
    "E011-alias-bomb": ({"pack.yaml": BOMB}, "E011"),
    "E012-include-directory": ({"pack.yaml": "name: demo\ninclude: [episodes]\n",
                                "episodes/week.yaml": "episodes: []\n"}, "E012"),
    "E013-bad-fixture": ({**_base("rows: [{id: T-1, title: seed}]", "fixture: tasks.csv"),
                          "tasks.csv": "id,title\nT-1,seed,extra\n"}, "E013"),
    # E1xx: schema
    "E101-unknown-key": (_base("        hidden_intents:\n          - text: Put",
                               "        hidden_intent:\n          - text: Put"), "E101"),
    "E101-unknown-top-level": (_base("personas:", "persona:"), "E101"),
    "E102-missing-key": (_base("    profile: {role: \"Analyst on team {{ vars.team }}\"}\n", ""), "E102"),
    "E102-missing-protocol": (_base("        protocol: intent_tracking\n        depends_on", "        depends_on"), "E102"),
    "E103-wrong-type": (_base("depends_on: [triage]", "depends_on: triage"), "E103"),
    "E103-number-for-text": (_base("request: Draft the handover note.", "request: 42"), "E103"),
    "E103-key-type": (_base("vars: {team: Orion}", "vars: {team: Orion, 7: seven}"), "E103"),
    # the rule's only source is invalid: one E103, no "needs a source" E211 on top of it
    "E103-rule-source": (_base("rule: {tool: todo__create, where: {args.title: {contains: INR}}}",
                               "rule: {reply: {regex: INR}}"), "E103"),
    "E104-literal": (_base("protocol: intent_tracking\n        depends_on", "protocol: intent-tracking\n        depends_on"), "E104"),
    "E104-pattern": (_base("- id: ana", "- id: Ana Lopez"), "E104"),
    "E104-range": ({"pack.yaml": BASE.replace("vars:", "defaults: {repeats: 0}\nvars:")}, "E104"),
    "E104-workspace-path": (_base("    services: [todo]\n", "    services: [todo]\n    files: [{path: ../etc/passwd, content: x}]\n"), "E104"),
    # E2xx: semantics
    "E201-duplicate-id": (_base("      - id: handover", "      - id: triage"), "E201"),
    "E201-duplicate-across-files": ({"pack.yaml": BASE + "include: [more.yaml]\n",
                                     "more.yaml": "personas: [{id: ana, profile: {role: x}}]\n"}, "E201"),
    "E202-unknown-session": (_base("depends_on: [triage]", "depends_on: [triag]"), "E202"),
    "E202-unknown-persona": (_base("    persona: ana", "    persona: anna"), "E202"),
    "E202-unknown-tool": (_base("rule: {tool: todo__create,", "rule: {tool: todo_create,"), "E202"),
    "E202-unknown-parameter": (_base("args.title:", "args.titel:"), "E202"),
    "E203-cycle": (_base("      - id: triage\n        protocol: intent_tracking\n",
                         "      - id: triage\n        protocol: intent_tracking\n        depends_on: [handover]\n"), "E203"),
    "E203-self": (_base("depends_on: [triage]", "depends_on: [handover]"), "E203"),
    "E204-protocol-mismatch": (_base("        checklist:\n          - text: The note is short",
                                     "        stages: [{when: {kind: start}, line: Hi}]\n        checklist:\n          - text: The note is short"), "E204"),
    "E205-regex": (_base("{contains: INR}", "{regex: 'INR(('}"), "E205"),
    "E206-jmespath": (_base("rule: {tool: todo__create, where: {args.title: {contains: INR}}}",
                            "rule: {state: todo.tasks, query: 'rows[?title ==', exists: true}"), "E206"),
    "E207-json-schema": (_base("tables:\n      tasks: {key: id,", "tables:\n      tasks: {row_schema: {type: objekt}, key: id,"), "E207"),
    "E208-template-syntax": (_base("request: Go through the queue.", "request: Go through {{ vars.team queue."), "E208"),
    "E209-template-undefined": (_base("request: Go through the queue.", "request: Go through {{ vars.tema }}'s queue."), "E209"),
    "E209-template-unknown-name": (_base("request: Go through the queue.", "request: Hi {{ user }}"), "E209"),
    "E210-template-class": (_base("request: Go through the queue.", "request: \"{{ ''.__class__.__mro__ }}\""), "E210"),
    "E210-template-globals": (_base("request: Go through the queue.", "request: \"{{ cycler.__init__.__globals__ }}\""), "E210"),
    "E210-template-range": (_base("request: Go through the queue.", "request: \"{% for i in range(10**9) %}x{% endfor %}\""), "E210"),
    "E210-template-loops": (_base("request: Go through the queue.", "request: \"{% for i in range(9999) %}{% for j in range(9999) %}{% endfor %}{% endfor %}\""), "E210"),
    "E210-template-size": (_base("request: Go through the queue.", "request: \"{{ 'x' * 9999 * 9999 }}\""), "E210"),
    "E211-two-sources": (_base("rule: {tool: todo__create,", "rule: {reply: true, tool: todo__create,"), "E211"),
    "E212-missing-request": (_base("        request: Draft the handover note.\n", ""), "E212"),
    "E213-style-dependency": (_base("      - id: triage\n        protocol: intent_tracking\n",
                                    "      - id: triage\n        styles: [P, E]\n        protocol: intent_tracking\n"), "E213"),
    "E214-tool-clash": (_base("environments:", "tools:\n  - {name: read_file, description: x, impl: {kind: static}}\nenvironments:"), "E214"),
    "E215-style": (_base("    profile: {role:", "    style: P+P\n    profile: {role:"), "E215"),
    "E216-dialogue": (_session(TRIGGER_SESSION + """\
        dialogue:
          - {turn: 1, user: Hello, discloses: [deadline]}
          - {turn: 3, user: Also a photo}
"""), "E216"),
    "E217-tool-module-syntax": ({**_base("    services: [todo]\n", _TOOLSET_ENV),
                                 "tools/shop.py": "def find(db, x: str:\n    pass\n"}, "E217"),
    "E217-tool-module-types": ({**_base("    services: [todo]\n", _TOOLSET_ENV),
                                "tools/shop.py": _BAD_TYPES}, "E217"),
    "E225-formula-unknown": (_session(SCORE_SESSION.replace("0.2 * robustness", "0.2 * robustnes")), "E225"),
    "E225-formula-block": (_session(SCORE_SESSION.replace(
        "formula: safety * max(0.8 * completion + 0.2 * robustness, completion)",
        "formula: |\n            safety *\n              max(0.8 * completion ** 2, completion)")), "E225"),
    "E225-formula-quoted": (_session(SCORE_SESSION.replace(
        "formula: safety * max(0.8 * completion + 0.2 * robustness, completion)",
        "formula: \"safety * (state + completion)\"")), "E225"),
    "E226-reward-needs-gold": (_session(SCORE_SESSION.replace(
        "formula: safety * max(0.8 * completion + 0.2 * robustness, completion)",
        "reward: [actions, communicate]")), "E226"),
    "E226-verify-and-score": (_session(SCORE_SESSION.replace(
        "        score:\n", "        verify: {pass_threshold: 0.5}\n        score:\n")), "E226"),
    # HTTP services and tools (issue 12, section 2)
    "E230-process-service": ({"pack.yaml": BASE.replace(
        "services:\n", "services:\n  - name: crm\n    process: {command: [python, crm.py], "
        "cwd: ..}\n", 1) + "include: [more.yaml]\n",
        "more.yaml": "services:\n  - name: both\n    process: {command: [python, svc/x.py], port: 80, env: {PORT: '80'}}\n"
                     "    tables: {t: {rows: []}}\n  - {name: bare}\n"}, "E230"),
    "E231-http-tool": (_base("environments:", """tools:
  - name: todo__fetch
    description: Fetch a task.
    parameters: {type: object, properties: {id: {type: string}}}
    impl: {kind: http, service: todo, path: "/tasks/{task_id}", query: {q: "{text}"}}
environments:"""), "E231"),
    # knowledge bases and discoverable tools (issue 24)
    "E240-knowledge": (_base("environments:", """knowledge:
  - {name: handbook, documents: [{id: a, text: x}, {id: a, text: y}], files: [kb/*.md],
     retrieval: bm25grep}
environments:"""), "E240"),
    "E241-discoverable": (_base("    services: [todo]\n", "    services: []\n"
                                "    discoverable: {tools: [todo__create]}\n"), "E241"),
    # a tool given to the user that is the agent's (issue 24, `discoverable.user_tools`)
    "E202-give-agent-tool": (_base("    services: [todo]\n", "    services: [todo]\n"
                                   "    discoverable: {user_tools: [todo__create]}\n"), "E202"),
    # a toolset over several services (issue 24, telecom): a table in two of them, a
    # service named twice, `services` without `service`
    "E245-toolset-services": ({"pack.yaml": _SERVICES_PACK, "tools/shop.py": _SHOP}, "E245"),
}


def _write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work in tmp_path so diagnostics show short paths like `pack/pack.yaml`."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def assert_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.txt"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"no snapshot {path.name}; create it with "
                    f"BENCHPACK_UPDATE_SNAPSHOTS=1 pytest {Path(__file__).name}")
    assert text == path.read_text(encoding="utf-8"), f"{name}: diagnostics changed"


def test_the_base_pack_is_clean(in_tmp: Path) -> None:
    result = validate_pack(_write(in_tmp / "pack", {"pack.yaml": BASE}), strict=True)
    assert result.diagnostics == [] and result.plan is not None


def test_every_error_code_has_a_case() -> None:
    errors = {c for c, (sev, _) in CODES.items() if sev == "error"}
    # E005 (file too large) has its own test: a 20 MB file per CLI case would be slow
    assert errors == {code for _, code in CASES.values()} | {"E005"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_diagnostic_text(in_tmp: Path, name: str) -> None:
    files, code = CASES[name]
    result = validate_pack(_write(in_tmp / "pack", files))
    assert result.plan is None and result.internal_error is None
    assert code in {d.code for d in result.errors}, [d.format() for d in result.diagnostics]
    for d in result.diagnostics:
        assert d.line is not None and d.line >= 1 and d.col is not None and d.col >= 1, d.format()
        assert d.file.startswith("pack/")
    assert_snapshot(name, "".join(d.format() + "\n" for d in result.diagnostics))


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_reports_and_exits_1(in_tmp: Path, name: str) -> None:
    files, code = CASES[name]
    _write(in_tmp / "pack", files)
    runner = CliRunner()
    text = runner.invoke(cli, ["validate", "pack"])
    assert text.exit_code == 1, text.output
    assert "Traceback" not in text.output and "internal error" not in text.output
    assert f"error {code}" in text.output
    as_json = runner.invoke(cli, ["validate", "pack", "--format", "json"])
    assert as_json.exit_code == 1
    rows = json.loads(as_json.stdout)
    assert code in {r["code"] for r in rows}
    assert all(r["line"] >= 1 and r["col"] >= 1 and r["json_path"].startswith("$") for r in rows)
    compiled = runner.invoke(cli, ["compile", "pack", "-o", "out"])
    assert compiled.exit_code == 1 and not (in_tmp / "out" / "plan.json").exists()


def test_main_exit_codes(in_tmp: Path, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    def run(*args: str) -> int:
        monkeypatch.setattr(sys, "argv", ["bench", *args])
        try:
            main()
        except SystemExit as exc:
            return int(exc.code or 0)
        return 0

    _write(in_tmp / "bad", CASES["E101-unknown-key"][0])
    _write(in_tmp / "good", {"pack.yaml": BASE})
    assert run("validate", "bad") == 1
    assert "E101" in capsys.readouterr().err
    assert run("validate", "good") == 0
    assert run("validate", "good", "--bogus-option") == 2
    assert run("validate", "nowhere") == 1
    assert "E006" in capsys.readouterr().err


def test_main_maps_a_compiler_bug_to_exit_3(in_tmp: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    import benchpack.compiler as compiler_module

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(compiler_module, "validate_pack", broken)
    monkeypatch.setattr(sys, "argv", ["bench", "validate", "."])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 3
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: boom" in err and "Traceback" not in err


# --------------------------------------------------------------------------- robustness


def test_huge_file_is_refused_before_parsing(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pack = in_tmp / "pack"
    pack.mkdir()
    with (pack / "pack.yaml").open("wb") as fh:
        fh.write(b"name: demo\n")
        fh.write(b"# padding padding padding padding padding padding padding padding\n" * 310_000)
    size = (pack / "pack.yaml").stat().st_size
    assert size > 20_000_000 > MAX_FILE_BYTES

    def no_parse(*_: object) -> None:
        raise AssertionError("a file over the limit must not be parsed")

    monkeypatch.setattr(loader_module, "parse_yaml", no_parse)
    start = time.perf_counter()
    result = validate_pack(pack)
    assert time.perf_counter() - start < 5  # generous: the check is a stat() call
    (d,) = result.diagnostics
    assert (d.code, d.line, d.col) == ("E005", 1, 1)
    assert d.format() == (f"pack/pack.yaml:1:1: error E005 file is {size / 2**20:.1f} MiB; the "
                          "limit is 10 MiB (hint: split it with `include:` or move bulk data to "
                          "a fixture file)")
    assert CliRunner().invoke(cli, ["validate", "pack"]).exit_code == 1


def test_bom_and_crlf_keep_positions(in_tmp: Path) -> None:
    text = BASE.replace("depends_on: [triage]", "depends_on: [triag]")
    line = text.splitlines().index("        depends_on: [triag]") + 1
    for variant, data in {
        "bom": b"\xef\xbb\xbf" + text.encode(),
        "crlf": text.replace("\n", "\r\n").encode(),
        "both": b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode(),
    }.items():
        (d,) = validate_pack(_write(in_tmp / variant, {"pack.yaml": data})).diagnostics
        assert (d.code, d.line, d.col) == ("E202", line, 22), variant
    clean = validate_pack(_write(in_tmp / "clean", {"pack.yaml": b"\xef\xbb\xbf"
                                                   + BASE.replace("\n", "\r\n").encode()}))
    assert clean.plan is not None and not clean.diagnostics


def test_utf8_error_position_counts_characters(in_tmp: Path) -> None:
    data = "name: demo\ndescription: naïve café ".encode() + b"\xff\n"
    (d,) = validate_pack(_write(in_tmp / "pack", {"pack.yaml": data})).diagnostics
    assert (d.code, d.line, d.col) == ("E003", 2, 25)


def test_a_directory_instead_of_a_pack_file(in_tmp: Path) -> None:
    (in_tmp / "pack" / "pack.yaml").mkdir(parents=True)
    (d,) = validate_pack(in_tmp / "pack").diagnostics
    assert d.format() == "pack/pack.yaml:1:1: error E012 expected a file but found a directory"
    (d,) = validate_pack(in_tmp / "empty-dir-does-not-exist").diagnostics
    assert d.code == "E006" and d.hint == "give a pack directory or its pack.yaml"
    (in_tmp / "nothing").mkdir()
    (d,) = validate_pack(in_tmp / "nothing").diagnostics
    assert (d.code, d.message) == ("E006", "no pack.yaml in this directory")
    assert "bench init" in (d.hint or "")


def test_all_problems_are_reported_together(in_tmp: Path) -> None:
    text = (BASE.replace("hidden_intents:\n          - text: Put", "hidden_intent:\n          - text: Put")
            .replace("depends_on: [triage]", "depends_on: [triag]")
            .replace("    persona: ana", "    persona: anna"))
    result = validate_pack(_write(in_tmp / "pack", {"pack.yaml": text}))
    assert sorted(d.code for d in result.errors) == ["E101", "E202", "E202"]
    lines = [d.line for d in result.diagnostics]
    assert lines == sorted(lines)


def test_yaml_merge_keys_override_without_duplicates(in_tmp: Path) -> None:
    text = BASE.replace("vars: {team: Orion}", "base: &b {team: Orion, size: 3}\nvars:\n  <<: *b\n  team: Vega")
    result = validate_pack(_write(in_tmp / "pack", {"pack.yaml": text}))
    # only the unknown `base` key: no E002 for the overridden `team`, and `vars` survives for
    # the templates (no E209 cascading from the broken top level)
    (d,) = result.diagnostics
    assert (d.code, d.line) == ("E101", 3)


def test_yaml_1_2_scalars(in_tmp: Path) -> None:
    text = BASE.replace("vars: {team: Orion}", "vars: {team: no, when: 2026-03-02, octal: 010}")
    result = validate_pack(_write(in_tmp / "pack", {"pack.yaml": text}))
    assert result.plan is not None
    assert result.plan["personas"]["ana"]["profile"]["role"] == "Analyst on team no"


DUAL_CONTROL = Path(__file__).parent / "fixtures" / "dual_control"


def test_w341_user_tools_under_a_tagged_llm_user(in_tmp: Path) -> None:
    """A session whose user has tools, under the `tagged` LLM simulator (which is offered
    none): W341 at the session's `user` (or at its `conversation.simulator` when it names
    `tagged`); silent with `chat`, in solo mode (no user) and when the user has no tools."""
    pack = in_tmp / "pack"
    shutil.copytree(DUAL_CONTROL, pack)
    text = (pack / "pack.yaml").read_text(encoding="utf-8")
    chat = "defaults:\n  conversation: {simulator: chat}\n"
    assert chat in text
    tagged = text.replace(chat, "").replace(
        "      - id: mid-dialogue\n        protocol: instructed_user\n",
        "      - id: mid-dialogue\n        protocol: instructed_user\n"
        "        conversation: {simulator: tagged}\n")
    (pack / "pack.yaml").write_text(tagged, encoding="utf-8")
    result = validate_pack(pack)
    assert result.plan is not None and {d.code for d in result.diagnostics} == {"W341"}
    assert_snapshot("W341-tagged-user-tools",
                    "".join(d.format() + "\n" for d in result.diagnostics))
    assert validate_pack(pack, strict=True).plan is None
    for near_miss in (text,  # the fixture as it is: chat
                      text.replace(chat, "defaults:\n  conversation: {solo: true}\n"),
                      text.replace("    user_toolsets: [tools/phone.py]\n", "")):
        (pack / "pack.yaml").write_text(near_miss, encoding="utf-8")
        assert "W341" not in {d.code for d in validate_pack(pack).diagnostics}
