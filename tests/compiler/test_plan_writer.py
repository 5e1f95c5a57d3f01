"""plan: canonical JSON, the deterministic writer, and compiled → authored lint paths."""

from __future__ import annotations

import json
import os
from pathlib import Path

from benchpack.compiler import validate_pack
from benchpack.compiler.plan import canonical, write_plan


def test_canonical_json_is_key_order_independent() -> None:
    assert canonical({"b": 1, "a": [1, {"d": "é", "c": None}]}) == \
        '{"a":[1,{"c":null,"d":"é"}],"b":1}'.encode()
    assert canonical({"a": 1, "b": 2}) == canonical({"b": 2, "a": 1})


def test_writer_layout_and_idempotence(tmp_path: Path) -> None:
    plan = {"$schema": "s", "sessions": {"x": {"id": "x", "n": [1, 2]}, "y": {"id": "y"}},
            "groups": [], "parent_map": {}}
    data = write_plan(plan, tmp_path)
    assert data.decode() == (
        '{\n"$schema": "s",\n"sessions": {\n'
        '  "x": {"id":"x","n":[1,2]},\n  "y": {"id":"y"}\n},\n'
        '"groups": [],\n"parent_map": {}\n}\n')
    assert json.loads(data) == plan
    target = tmp_path / "plan.json"
    os.utime(target, (1, 1))
    assert write_plan(plan, tmp_path) == data
    assert target.stat().st_mtime == 1  # unchanged bytes are not rewritten
    assert not list(tmp_path.glob("*.tmp"))


def test_lint_paths_point_at_what_was_authored(tmp_path: Path) -> None:
    (tmp_path / "pack.yaml").write_text("""\
name: m
personas: [{id: p, profile: {role: r}}]
episodes:
  - id: e
    persona: p
    sessions:
      - id: search
        protocol: staged_disclosure
        stages:
          - {when: {kind: start}, line: I need a quiet hotel near the station.}
          - {when: {kind: asks, about: budget}, line: I need a quiet hotel near the station.}
        graph: {triples: [[a, b, c]]}
      - id: talk
        protocol: trigger_rubric
        request: hi
        scenario: {hidden_goal: g, anchors: [{id: a1, text: x}, {id: a2, text: y}]}
        triggers:
          - {type: recovery, turn: 2, rubric: {pass: p, partial: q, fail: f}}
          - {type: emergent, turn: 1, anchors: [a1], rubric: {pass: p, partial: q, fail: f}}
          - {type: critical, turn: 5, anchors: [a1, a2], rubric: {pass: p, partial: q, fail: f}}
""")
    found = {(d.code, d.json_path) for d in validate_pack(tmp_path).diagnostics}
    # the `start` stage is the request in the plan; triggers are sorted by turn there
    assert found == {("W302", "$.episodes[0].sessions[0].stages[1].line"),
                     ("W306", "$.episodes[0].sessions[1].triggers[0].turn")}
