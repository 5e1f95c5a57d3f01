"""`environments[].state_ignores`: tables the `state` reward component leaves out of its
comparison (τ² keeps banking's agent unlocks outside its DB hash), still recorded in the store.

A tiny pack of our own, one declarative service `desk` with two tables, `tickets` (compared)
and `notes` (left out). `quiet` (gold: nothing) — an agent that only writes a note keeps the
state equal (1.0), one that closes a ticket does not (0). `close` (gold: close T1 and write a
note) — the do-nothing agent fails (tickets differ), an agent closing T1 without the gold's
note passes (the note is on the gold's side only: left out there too). Without the field the
same note-only agent fails `quiet`: the field, not something else, makes the difference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchpack.compiler import compile_pack
from benchpack.runtime.sandbox import find_bwrap
from conftest import bench_run, store_rows

PACK = """\
benchpack: 1
name: state-ignores
personas:
  - id: ana
    profile: {role: customer}
services:
  - name: desk
    tables:
      tickets:
        key: id
        rows:
          - {id: T1, status: open}
          - {id: T2, status: open}
      notes:
        key: id
        rows: []
    operations:
      - {name: close_ticket, kind: update, table: tickets, fields: [status]}
      - {name: write_note, kind: create, table: notes, fields: [id, text]}
environments:
  - id: office
    builtin_tools: []
    services: [desk]
    state_ignores: [desk.notes]
episodes:
  - id: e1
    persona: ana
    environment: office
    memory: none
    sessions:
      - id: quiet
        protocol: instructed_user
        user: {reason: Just checking in; nothing needs to change.}
        gold: {actions: []}
        score: {reward: [state]}
      - id: close
        protocol: instructed_user
        user: {reason: Please close ticket T1.}
        gold:
          actions:
            - {tool: desk__close_ticket, args: {id: T1, status: closed}}
            - {tool: desk__write_note, args: {id: N1, text: closed on request}}
        score: {reward: [state]}
"""

CLOSE_T1 = {"name": "desk__close_ticket", "args": {"id": "T1", "status": "closed"}}
CLOSE_T2 = {"name": "desk__close_ticket", "args": {"id": "T2", "status": "closed"}}
NOTE = {"name": "desk__write_note", "args": {"id": "N9", "text": "called"}}


def _pack(tmp_path: Path, text: str = PACK) -> Path:
    pack = tmp_path / "pack"
    pack.mkdir(parents=True)
    (pack / "pack.yaml").write_text(text, encoding="utf-8")
    return pack


def _run(tmp_path: Path, turns: dict[str, list[dict[str, Any]]], text: str = PACK
         ) -> tuple[dict[str, dict[str, Any]], Path, Any]:
    """Each session's `extra.reward` and score, after a scripted agent making `turns`' calls
    (one turn a session, then "Done.")."""
    pack = _pack(tmp_path, text)
    out = tmp_path / "build"
    result = compile_pack(pack, out, use_cache=False)
    assert not result.errors, [d.format() for d in result.diagnostics]
    script = {"sessions": {name: [{"tool_calls": calls, "say": "Done."} if calls else
                                  {"say": "Done."}] for name, calls in turns.items()}}
    agent = tmp_path / "agent.json"
    agent.write_text(json.dumps(script), encoding="utf-8")
    db, summary = bench_run(out, tmp_path, agent=f"scripted:{agent}", simulator="rules",
                            judge="rules", run_id="r")
    rows = store_rows(db, "SELECT name, score, extra FROM sessions WHERE run_id = 'r'")
    got = {name: {"score": score, **json.loads(extra)["reward"]} for name, score, extra in rows}
    return got, db, summary


def _view(db: Path) -> list[tuple[Any, ...]]:
    """`instructed_results`' state columns, as `bench query` reads them."""
    from benchpack.reports.access import open_store

    with open_store(db) as con:
        return con.execute("SELECT name, state, state_left_out FROM instructed_results "
                           "WHERE run_id = 'r' ORDER BY name").fetchall()


def test_a_change_to_a_left_out_table_keeps_the_state_equal(tmp_path: Path) -> None:
    got, db, summary = _run(tmp_path, {"quiet": [NOTE], "close": [CLOSE_T1]})
    quiet, close = got["quiet"], got["close"]
    assert quiet["components"]["state"] == 1.0 and quiet["score"] == 1.0, quiet
    assert quiet["state"]["left_out"] == ["desk.notes"]
    # the gold's note is left out on its side too: closing T1 alone is the gold's state
    assert close["components"]["state"] == 1.0 and close["score"] == 1.0, close
    # left out of the comparison only: the note is still in the episode's final snapshot
    snap = store_rows(db, "SELECT state FROM snapshots WHERE run_id = 'r'")
    assert any('"N9"' in str(s) for (s,) in snap), snap
    assert summary.state_left_out == ["desk.notes"]
    assert _view(db) == [
        ("close", 1.0, ["desk.notes"]), ("quiet", 1.0, ["desk.notes"])]


def test_a_change_to_a_compared_table_still_fails(tmp_path: Path) -> None:
    got, _, _ = _run(tmp_path, {"quiet": [CLOSE_T2, NOTE], "close": []})
    quiet, close = got["quiet"], got["close"]
    assert quiet["components"]["state"] == 0.0 and quiet["score"] == 0.0, quiet
    # the diff names the compared table, never the left-out one
    tables = {(c["service"], c["table"]) for c in quiet["state"]["diff"]["changes"]}
    assert tables == {("desk", "tickets")}, quiet["state"]["diff"]
    # doing nothing where the gold closes T1 fails
    assert close["components"]["state"] == 0.0 and close["score"] == 0.0, close
    changes = close["state"]["diff"]["changes"]
    assert [(c["table"], c["key"], c["path"], c["expected"], c["got"]) for c in changes] == [
        ("tickets", "T1", "status", "closed", "open")]


def test_without_the_field_the_left_out_table_counts(tmp_path: Path) -> None:
    got, db, summary = _run(tmp_path, {"quiet": [NOTE], "close": [CLOSE_T1]},
                            PACK.replace("    state_ignores: [desk.notes]\n", ""))
    assert got["quiet"]["components"]["state"] == 0.0, got["quiet"]
    assert got["close"]["components"]["state"] == 0.0, got["close"]
    assert "left_out" not in got["quiet"]["state"]
    assert summary.state_left_out == []
    assert _view(db) == [
        ("close", 0.0, None), ("quiet", 0.0, None)]


def test_explain_names_the_left_out_tables(tmp_path: Path) -> None:
    from benchpack.reports import explain as X
    from benchpack.reports.html_explain import panel_html

    _, db, _ = _run(tmp_path, {"quiet": [NOTE], "close": [CLOSE_T1]})
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        sid = con.execute("SELECT session_id FROM sessions WHERE name = 'quiet'").fetchone()[0]
        x = X.load(con, "r", sid, 0)
    finally:
        con.close()
    assert x is not None
    part = next(p for p in x["parts"] if p["kind"] == "reward")
    assert part["state"]["left_out"] == ["desk.notes"]
    assert part["formula"] == ("reward = state = 1 = 1\nstate compares every table but "
                               "desk.notes (environment `state_ignores`; still recorded)")
    assert "not compared (still recorded): <code>desk.notes</code>" in panel_html(x)


def test_unknown_table_is_a_located_error(tmp_path: Path) -> None:
    text = PACK.replace("state_ignores: [desk.notes]",
                        "state_ignores: [desk.note, desks.notes, notes]")
    result = compile_pack(_pack(tmp_path, text), tmp_path / "build", use_cache=False)
    errors = [d.format().split("/pack/")[-1] for d in result.diagnostics
              if d.severity == "error"]
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "state_ignores" in t)
    assert len(errors) == 3, errors
    assert errors[0].startswith(f"pack.yaml:{line}:21: error E202 service `desk` of "
                                "environment `office` has no table `note` to leave out of the "
                                "state check"), errors
    assert "did you mean `desk.notes`?" in errors[0]
    assert errors[1].startswith(f"pack.yaml:{line}:32: error E202 environment `office` has no "
                                "table `desks.notes`"), errors
    assert "did you mean `desk.notes`?" in errors[1]
    assert errors[2].startswith(f"pack.yaml:{line}:45: error E202 environment `office` has no "
                                "table `notes`"), errors
    assert "did you mean `desk.notes`?" in errors[2]


# --------------------------------------------------------------------------- the user's side


DUAL = Path(__file__).resolve().parents[1] / "fixtures" / "dual_control"


@pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap is not available")
@pytest.mark.parametrize("ignores", [None, "phone.device"])
def test_a_user_side_table_can_be_left_out(tmp_path: Path, ignores: str | None) -> None:
    """The dual-control pack: the gold resumes L1 and the customer switches airplane mode off
    on their phone (the user's service `phone`). An agent that resumes L1 but never mentions
    airplane mode leaves the phone as it started: the state check fails, unless the phone's
    table is left out — then only the line is compared, and it matches."""
    import shutil

    pack = tmp_path / "pack"
    shutil.copytree(DUAL, pack)
    text = (pack / "pack.yaml").read_text(encoding="utf-8")
    if ignores:
        text = text.replace("    user_toolsets: [tools/phone.py]\n",
                            f"    user_toolsets: [tools/phone.py]\n    state_ignores: [{ignores}]\n")
    (pack / "pack.yaml").write_text(text, encoding="utf-8")
    assert compile_pack(pack, tmp_path / "build", use_cache=False).ok
    agent = tmp_path / "agent.yaml"
    agent.write_text("sessions:\n  no-internet:\n    - tool_calls: [{name: resume_line, args: "
                     "{line_id: L1}}]\n      say: I resumed line L1.\n", encoding="utf-8")
    db, _ = bench_run(tmp_path / "build", tmp_path, agent=f"scripted:{agent}", judge="rules",
                      run_id="r", allow_python=True, sessions=["no-internet"])
    (extra,) = [e for (e,) in store_rows(db, "SELECT extra FROM sessions")]
    reward = json.loads(str(extra))["reward"]
    if ignores:
        assert reward["components"]["state"] == 1.0, reward["state"]
        assert reward["state"]["left_out"] == ["phone.device"]
    else:
        assert reward["components"]["state"] == 0.0
        assert {c["service"] for c in reward["state"]["diff"]["changes"]} == {"phone"}
    # the phone still fails the user-side assertion, which reads the state itself
    assert reward["components"]["env_assertions"] == 0.0 and reward["score"] == 0.0


def _w321(tmp_path: Path, text: str) -> list[str]:
    """The sessions W321 names (a reward an agent doing nothing earns)."""
    result = compile_pack(_pack(tmp_path, text), tmp_path / "build", use_cache=False)
    assert not result.errors, [d.format() for d in result.diagnostics]
    return sorted(d.format().split("sessions[")[1][:1] for d in result.diagnostics
                  if d.code == "W321")


def test_w321_counts_a_gold_that_writes_only_a_left_out_table_as_changing_nothing(
        tmp_path: Path) -> None:
    # a third session whose gold only writes a note: the state check cannot tell that gold
    # from doing nothing, so the do-nothing agent earns the reward — W321 says so
    note_only = PACK + """\
      - id: note
        protocol: instructed_user
        user: {reason: Please note that I called.}
        gold:
          actions:
            - {tool: desk__write_note, args: {id: N1, text: called}}
        score: {reward: [state]}
"""
    # `quiet` (sessions[0], no gold action) and `note` (sessions[2]); never `close`
    assert _w321(tmp_path / "a", note_only) == ["0", "2"]
    # with the notes compared, the note-only gold is work the agent must do
    assert _w321(tmp_path / "b", note_only.replace("    state_ignores: [desk.notes]\n", "")
                 ) == ["0"]
