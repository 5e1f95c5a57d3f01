"""The compiler end to end: plans, ids, fingerprints, determinism, cache, ablation, styles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchpack.compiler import compile_pack, init_pack, validate_pack
from benchpack.runtime import load_plan

PACK = """\
benchpack: 1
name: demo
vars: {team: Orion}
personas:
  - id: ana
    name: Ana
    profile: {role: "Analyst on team {{ vars.team }}"}
    style: Q
services:
  - name: todo
    tables:
      tasks: {key: id, rows: [{id: T-1, title: seed}]}
    operations:
      - {name: create, kind: create, table: tasks, fields: [title]}
environments:
  - id: office
    files:
      - {path: notes.md, content: "Team {{ vars.team }} prefers tables."}
    services: [todo]
episodes:
  - id: week
    persona: ana
    environment: office
    sessions:
      - id: a
        title: First
        protocol: intent_tracking
        request: Summarise the notes for {{ persona.name }}.
        hidden_intents: [{text: Use a table with one row per region}]
        checklist: [{text: The summary is a table}]
      - id: b
        protocol: intent_tracking
        depends_on: [a]
        request: Now draft the email.
        hidden_intents:
          - {text: Use a table with one row per region, scope: persistent, evidence: [a]}
        checklist:
          - text: A reminder task is created
            rule: {tool: todo__create, where: {args.title: {contains: reminder}}}
      - id: c
        protocol: intent_tracking
        depends_on: [b]
        request: Send it to the team.
        hidden_intents: [{text: Copy the team lead on the message}]
        checklist: [{text: The team lead is copied}]
      - id: d
        protocol: intent_tracking
        request: Unrelated quick question about the calendar.
        hidden_intents: [{text: Answer in one sentence}]
        checklist: [{text: The answer is one sentence}]
"""


@pytest.fixture
def pack(write_pack) -> Path:
    return write_pack({"pack.yaml": PACK})


def test_plan_shape_ids_and_rendering(pack: Path, tmp_path: Path) -> None:
    res = compile_pack(pack, tmp_path / "out")
    assert res.ok, [d.format() for d in res.diagnostics]
    assert res.diagnostics == []
    plan = load_plan(tmp_path / "out")  # validates against plan.schema.json
    ids = list(plan.sessions)
    assert ids == ["session.demo.week.a", "session.demo.week.b", "session.demo.week.c",
                   "session.demo.week.d"]
    a = plan.sessions["session.demo.week.a"]
    assert a.request == "Summarise the notes for Ana."
    assert plan.personas["ana"].profile.role == "Analyst on team Orion"
    assert plan.environments["office"].files[0].content == "Team Orion prefers tables."
    assert "todo__create" in a.tools and "read_file" in a.tools
    assert a.limits.max_turns == 12  # protocol default filled in
    assert plan.pack.content_hash and len(plan.pack.content_hash) == 64
    assert plan.parent_map["session.demo.week.c"] == ["session.demo.week.b"]
    assert plan.child_map["session.demo.week.a"] == ["session.demo.week.b"]
    (group,) = plan.groups
    assert group.sessions == ["session.demo.week.a", "session.demo.week.b", "session.demo.week.c"]
    assert group.final == "session.demo.week.c"
    assert plan.sessions["session.demo.week.d"].group is None
    assert plan.sessions["session.demo.week.c"].prior_sessions == [
        "session.demo.week.a", "session.demo.week.b"]
    assert plan.sessions["session.demo.week.b"].checklist[0].grader == "rule"
    assert plan.sessions["session.demo.week.a"].checklist[0].grader == "rubric"


def test_recompile_is_byte_identical(pack: Path, tmp_path: Path) -> None:
    first = compile_pack(pack, tmp_path / "one", use_cache=False).plan_bytes
    second = compile_pack(pack, tmp_path / "two", use_cache=False).plan_bytes
    assert first == second
    assert (tmp_path / "one" / "plan.json").read_bytes() == first


def test_cache_hit_and_invalidation(pack: Path, tmp_path: Path) -> None:
    cold = compile_pack(pack, tmp_path / "out")
    assert not cold.cached
    warm = compile_pack(pack, tmp_path / "out")
    assert warm.cached and warm.plan_bytes == cold.plan_bytes
    (pack / "pack.yaml").write_text(PACK.replace("Now draft the email.", "Now draft the memo."))
    changed = compile_pack(pack, tmp_path / "out")
    assert not changed.cached and changed.plan_bytes != cold.plan_bytes


def test_cache_notices_a_new_file_matching_an_include_glob(write_pack, tmp_path: Path) -> None:
    root = write_pack({"pack.yaml": "name: globby\ninclude: [extra/*.yaml]\n",
                       "extra/a.yaml": "personas: [{id: p1, profile: {role: x}}]\n"})
    assert compile_pack(root, tmp_path / "o").ok
    (root / "extra" / "b.yaml").write_text("personas: [{id: p2, profile: {role: y}}]\n")
    res = compile_pack(root, tmp_path / "o")
    assert not res.cached
    assert set(res.load_plan()["personas"]) == {"p1", "p2"}


def test_warnings_are_replayed_from_the_cache(write_pack, tmp_path: Path) -> None:
    root = write_pack({"pack.yaml": PACK.replace(
        "request: Unrelated quick question about the calendar.",
        "request: Unrelated quick question about the calendar. Answer in one sentence please.")})
    cold = compile_pack(root, tmp_path / "o")
    warm = compile_pack(root, tmp_path / "o")
    assert [d.code for d in cold.warnings] == ["W301"]
    assert [(d.code, d.line) for d in warm.warnings] == [(d.code, d.line) for d in cold.warnings]


def test_fingerprints_chain_and_ignore_titles(write_pack, tmp_path: Path) -> None:
    def fingerprints(text: str, name: str) -> dict[str, str]:
        root = write_pack({f"{name}/pack.yaml": text}) / name
        plan = compile_pack(root, None, use_cache=False).load_plan()
        assert plan is not None
        return {k: v["fingerprint"] for k, v in plan["sessions"].items()}

    base = fingerprints(PACK, "base")
    retitled = fingerprints(PACK.replace("title: First", "title: Renamed"), "retitled")
    assert retitled == base
    changed = fingerprints(PACK.replace("Summarise the notes", "Summarize the notes"), "changed")
    a, b, c, d = (f"session.demo.week.{x}" for x in "abcd")
    assert changed[a] != base[a]
    assert changed[b] != base[b] and changed[c] != base[c]  # chained through dependencies
    assert changed[d] != base[d]  # d carries a's transcript as episode memory
    no_memory = PACK.replace("    environment: office\n    sessions:",
                             "    environment: office\n    memory: none\n    sessions:")
    nm_base = fingerprints(no_memory, "nm1")
    nm_changed = fingerprints(no_memory.replace("Summarise the notes", "Summarize the notes"),
                              "nm2")
    assert nm_changed[d] == nm_base[d]  # independent session without memory: unaffected
    assert nm_changed[c] != nm_base[c]


def test_ablation_variant_of_the_group_final(pack: Path) -> None:
    plan = compile_pack(pack, None, ablation=True, use_cache=False).load_plan()
    assert plan is not None
    v = plan["sessions"]["session.demo.week.c~nodeps"]
    assert v["depends_on"] == [] and v["prior_sessions"] == [] and v["carry_over"] is False
    assert v["variant"] == {"style": None, "ablation": "without_dependencies",
                            "base": "session.demo.week.c"}
    assert v["fingerprint"] != plan["sessions"]["session.demo.week.c"]["fingerprint"]
    assert v["hidden_intents"] == plan["sessions"]["session.demo.week.c"]["hidden_intents"]
    without = compile_pack(pack, None, use_cache=False).load_plan()
    assert without is not None and "session.demo.week.c~nodeps" not in without["sessions"]


def test_style_matrix_expansion(write_pack) -> None:
    text = PACK.replace(
        "      - id: d\n        protocol: intent_tracking",
        "      - id: d\n        styles: [E+Q, P, NONE]\n        protocol: intent_tracking")
    plan = compile_pack(write_pack({"pack.yaml": text}), None, use_cache=False).load_plan()
    assert plan is not None
    ids = [s for s in plan["sessions"] if s.startswith("session.demo.week.d")]
    assert ids == ["session.demo.week.d@E+Q", "session.demo.week.d@P", "session.demo.week.d@NONE"]
    chatty = plan["sessions"]["session.demo.week.d@E+Q"]["style"]
    assert chatty["length"] == "chatty" and (chatty["min_words"], chatty["max_words"]) == (40, 100)
    terse = plan["sessions"]["session.demo.week.d@P"]["style"]
    assert terse["length"] == "terse" and terse["traits"]["preciseness"] is True


def test_starter_pack_compiles_cleanly(tmp_path: Path) -> None:
    init_pack(tmp_path / "starter")
    res = validate_pack(tmp_path / "starter", strict=True)
    assert res.diagnostics == [], [d.format() for d in res.diagnostics]
    plan = res.plan
    assert plan is not None and len(plan["sessions"]) == 2


def test_plan_json_is_one_line_per_session(pack: Path, tmp_path: Path) -> None:
    compile_pack(pack, tmp_path / "o")
    text = (tmp_path / "o" / "plan.json").read_text()
    json.loads(text)
    assert sum(1 for line in text.splitlines() if line.startswith('  "session.demo.')) >= 4


def test_collector_is_paused_while_compiling_and_restored_on_every_way_out(
        pack: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from benchpack.compiler import api

    seen: list[bool] = []
    real = api.write_plan

    def spy(plan: object, out: Path) -> bytes:
        seen.append(gc.isenabled())
        return real(plan, out)  # type: ignore[arg-type]

    monkeypatch.setattr(api, "write_plan", spy)
    assert gc.isenabled()
    assert compile_pack(pack, tmp_path / "a", use_cache=False).ok
    assert seen == [False] and gc.isenabled()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "pack.yaml").write_text("benchpack: 1\nname: [\n", encoding="utf-8")
    assert not compile_pack(tmp_path / "bad", tmp_path / "b", use_cache=False).ok
    assert gc.isenabled()
    monkeypatch.setattr(api, "write_plan", lambda plan, out: (_ for _ in ()).throw(OSError("x")))
    with pytest.raises(OSError):
        compile_pack(pack, tmp_path / "c", use_cache=False)
    assert gc.isenabled()
    monkeypatch.setattr(api, "write_plan", real)
    gc.disable()
    try:  # a caller that turned it off keeps it off
        assert compile_pack(pack, tmp_path / "d", use_cache=False).ok
        assert not gc.isenabled()
    finally:
        gc.enable()
