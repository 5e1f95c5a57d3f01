"""build: what the linker makes of services, streams, environments, protocol material."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchpack.compiler import validate_pack

HEAD = """\
name: b
personas: [{id: p, profile: {role: r}}]
"""


def plan_of(root: Path, text: str, files: dict[str, str] | None = None) -> dict[str, Any]:
    (root / "pack.yaml").write_text(HEAD + text, encoding="utf-8")
    for rel, content in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content, encoding="utf-8")
    result = validate_pack(root)
    assert result.plan is not None, [d.format() for d in result.diagnostics]
    return result.plan


def errors_of(root: Path, text: str, files: dict[str, str] | None = None) -> list[str]:
    (root / "pack.yaml").write_text(HEAD + text, encoding="utf-8")
    for rel, content in (files or {}).items():
        (root / rel).write_text(content, encoding="utf-8")
    return [f"{d.code} {d.message}" for d in validate_pack(root).errors]


def session(extra: str, protocol: str = "verified_outcome", env: str | None = "env") -> str:
    where = f"    environment: {env}\n" if env else ""
    return (f"episodes:\n  - id: e\n    persona: p\n{where}    sessions:\n"
            f"      - id: s\n        protocol: {protocol}\n{extra}")


SERVICE = """\
services:
  - name: crm
    tables:
      leads:
        key: lid
        id_prefix: L-
        row_schema: {type: object, properties: {lid: {type: string}, stage: {type: string, enum: [new, won]}, owner: {type: string}}}
        rows: [{lid: L-1, stage: new, owner: ana}]
        fixture: leads.jsonl
    operations:
      - {name: find, kind: list, table: leads, filter_fields: [stage]}
      - {name: add, kind: create, table: leads, fields: [stage, owner], required: [owner]}
      - {name: drop, kind: delete, table: leads}
event_streams:
  - name: log
    events: [{at: "2026-03-02T09:00:00", source: crm, action: edit, ref: X-1}]
  - name: quiet
    tool: false
environments:
  - id: env
    builtin_tools: [read_file]
    services: [crm]
    event_streams: [log, quiet]
    heartbeat: {every: 2h, beats: 3}
"""


def test_services_streams_and_environments_become_tools(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, SERVICE + session("        request: go\n        checklist: [{text: ok}]\n"),
                   {"leads.jsonl": '{"lid": "L-2", "stage": "won", "owner": "bo"}\n'})
    env = plan["environments"]["env"]
    assert env["tools"] == ["read_file", "crm__find", "crm__add", "crm__drop", "log__read"]
    assert env["heartbeat"] == {"every_s": 7200, "start": None, "beats": 3, "message": None}
    tools = plan["tools"]
    assert tools["crm__find"]["parameters"]["properties"]["stage"] == {
        "type": "string", "enum": ["new", "won"]}
    assert tools["crm__find"]["effect"] == "read" and tools["crm__add"]["effect"] == "write"
    assert tools["crm__add"]["parameters"]["required"] == ["owner"]
    assert tools["crm__drop"]["parameters"]["required"] == ["lid"]
    rows = plan["services"]["crm"]["tables"]["leads"]["rows"]
    assert [r["lid"] for r in rows] == ["L-1", "L-2"]  # inline rows, then the fixture
    assert "quiet__read" not in tools and plan["event_streams"]["quiet"]["events"] == []


def test_fixture_formats(tmp_path: Path) -> None:
    for ext, content in (("json", '{"leads": [{"lid": "L-2"}]}'),
                         ("csv", "lid,stage\nL-2,won\n")):
        text = SERVICE.replace("fixture: leads.jsonl", f"fixture: leads.{ext}")
        plan = plan_of(tmp_path, text + session(
            "        request: go\n        checklist: [{text: ok}]\n"), {f"leads.{ext}": content})
        assert plan["services"]["crm"]["tables"]["leads"]["rows"][1]["lid"] == "L-2"


def test_duplicate_row_keys_and_unknown_tables(tmp_path: Path) -> None:
    text = SERVICE.replace("[{lid: L-1, stage: new, owner: ana}]", "[{lid: L-1}, {lid: L-1}]")
    text = text.replace("table: leads, filter_fields", "table: lead, filter_fields")
    errors = errors_of(tmp_path, text + session("        request: go\n"), {"leads.jsonl": ""})
    assert "E201 table `leads` has duplicate `lid` values: L-1" in errors
    assert "E202 service `crm` has no table `lead`" in errors


def test_staged_disclosure_start_stage_and_graph(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, session("""\
        stages:
          - {when: {kind: start}, line: "Find me a {{ 'quiet' }} hotel."}
          - {when: {kind: asks, about: budget}, line: Under 200 a night.}
        graph:
          triples: [[Hotel A, has, quiet rooms], [hotel a, HAS, Quiet Rooms]]
          file: more.tsv
""", protocol="staged_disclosure", env=None), {"more.tsv": "Hotel B\tnear\tstation\tarea\n"})
    s = plan["sessions"]["session.b.e.s"]
    assert s["request"] == "Find me a quiet hotel."  # the start stage is the opening
    assert [st["kind"] for st in s["stages"]] == ["asks"]
    assert s["graph"]["triples"] == [  # duplicates differing in case are merged
        {"head": "Hotel A", "relation": "has", "tail": "quiet rooms", "dimension": None},
        {"head": "Hotel B", "relation": "near", "tail": "station", "dimension": "area"}]


def test_trigger_rubric_defaults_and_order(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, session("""\
        request: hi
        scenario: {hidden_goal: g, anchors: [{id: a1, text: x}, {id: a2, text: y}]}
        triggers:
          - {type: critical, turn: 5, anchors: [a1, a2], rubric: {pass: p, partial: q, fail: f}}
          - {type: emergent, turn: 2, anchors: [a1], rubric: {pass: p, partial: q, fail: f}}
          - {type: recovery, turn: 9, rubric: {pass: p, partial: q, fail: f}}
""", protocol="trigger_rubric", env=None))
    s = plan["sessions"]["session.b.e.s"]
    assert [(t["id"], t["turn"]) for t in s["triggers"]] == [("t2", 2), ("t5", 5), ("t9", 9)]
    assert s["limits"] == {"max_turns": 10, "max_steps_per_turn": 10, "turn_timeout_s": 300.0}


def test_checklist_graders_and_ids(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, SERVICE + session("""\
        request: go
        checklist:
          - text: judged
          - {id: r, text: ruled, rule: {state: crm.leads, count: {min: 2}}}
          - {text: scripted, python: graders/g.py:score}
""", ), {"leads.jsonl": "", "graders/g.py": "def score(history):\n    return 1\n"})
    items = plan["sessions"]["session.b.e.s"]["checklist"]
    assert [(c["id"], c["grader"]) for c in items] == [("c1", "rubric"), ("r", "rule"),
                                                       ("c3", "python")]
    assert items[1]["rule"] == {"state": "crm.leads", "count": {"min": 2}}  # only what was set
    assert items[2]["python_source"].startswith("def score")


def test_where_paths_are_checked_against_tool_parameters(tmp_path: Path) -> None:
    errors = errors_of(tmp_path, SERVICE + session("""\
        request: go
        checklist:
          - {text: a, rule: {tool: crm__add, where: {args.owner: ana}}}
          - {text: b, rule: {tool: crm__add, where: {args.ownr: ana}}}
          - {text: c, rule: {tool: crm__add, where: {owner: ana}}}
          - {text: d, rule: {tool: "crm__*", where: {result.ok: true}}}
          - {text: e, rule: {state: crm.nope}}
"""), {"leads.jsonl": ""})
    assert errors == [
        "E202 `crm__add` has no parameter `ownr`",
        "E211 `where` paths on tool records start with `args.`, `result.`, `error` or `tool`; "
        "found `owner`",
        "E202 service `crm` has no table `nope`"]


def test_evidence_must_come_from_earlier_sessions(tmp_path: Path) -> None:
    text = ("episodes:\n  - id: e\n    persona: p\n    sessions:\n"
            "      - id: first\n        protocol: intent_tracking\n        request: a\n"
            "        hidden_intents: [{text: x, scope: persistent, evidence: [second]}]\n"
            "        checklist: [{text: c}]\n"
            "      - id: second\n        protocol: intent_tracking\n        request: b\n"
            "        hidden_intents: [{text: y, scope: persistent, evidence: [first]}]\n"
            "        checklist: [{text: c}]\n")
    (tmp_path / "pack.yaml").write_text(HEAD + text)
    (d,) = validate_pack(tmp_path).errors
    assert (d.code, d.hint) == ("E202", "evidence must come from a session that runs earlier")
    assert d.json_path == "$.episodes[0].sessions[0].hidden_intents[0].evidence[0]"
