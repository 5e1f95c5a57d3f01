"""Toolsets over several services with an after-call hook (issue 24, telecom's dual control):
the `synced_sides` pack's operator tools and customer's phone each hold both services in one
`State`, and `sync` keeps them in step after every call — whichever side made it — and once
before the session (as τ²-bench syncs when it builds an environment). Run for real, and the
mistakes a pack author can make in the new fields are located compile errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchpack.compiler import compile_pack
from benchpack.runtime.sandbox import find_bwrap
from conftest import bench_run, store_rows

PACK = Path(__file__).resolve().parents[1] / "fixtures" / "synced_sides"
needs_bwrap = pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap is not available")


def _pack(tmp_path: Path, edits: list[tuple[str, str]] = ()) -> Path:  # type: ignore[assignment]
    pack = tmp_path / "pack"
    shutil.copytree(PACK, pack)
    text = (pack / "pack.yaml").read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    (pack / "pack.yaml").write_text(text, encoding="utf-8")
    return pack


def _run(tmp_path: Path, agent: str, edits: list[tuple[str, str]] = ()) -> Path:  # type: ignore[assignment]
    result = compile_pack(_pack(tmp_path, edits), tmp_path / "plan", use_cache=False)
    assert result.ok, [d.format() for d in result.diagnostics]
    return bench_run(tmp_path / "plan", tmp_path, agent=f"scripted:{PACK / agent}",
                     judge="rules", run_id="r", allow_python=True)[0]


def _reward(db: Path) -> tuple[object, dict[str, object], list[tuple[object, object]]]:
    (score, extra), = store_rows(db, "SELECT score, extra FROM sessions")
    reward = json.loads(str(extra))["reward"]
    return score, reward["components"], [(v["function"], v["got"])
                                         for v in reward["env_assertions"]]


@needs_bwrap
def test_gold_agent_one_side_sees_the_others_changes(tmp_path: Path) -> None:
    db = _run(tmp_path, "good_agent.yaml")
    assert _reward(db) == (1.0, {"state": 1.0, "actions": 1.0, "env_assertions": 1.0},
                           [("assert_bill_paid", True), ("assert_has_service", True)])
    calls = store_rows(db, "SELECT tool_name, side, result, error FROM tool_calls ORDER BY seq")
    # the user's payment (the phone's toolset) marked the bill paid at the operator through
    # `sync`; the agent's toolset, another worker, reads it paid (its replica was refreshed)
    assert calls == [
        ("pay_bill", "user", '"paid"', None),
        ("get_bill", "agent", '{"bill_id": "B1", "line_id": "L1", "amount": 30.0, '
                              '"status": "paid"}', None),
        ("resume_line", "agent", '{"line_id": "L1", "phone_number": "555-0101", '
                                 '"status": "active"}', None)]


@needs_bwrap
def test_do_nothing_agent_scores_zero_and_the_first_sync_ran(tmp_path: Path) -> None:
    db = _run(tmp_path, "done_agent.yaml")
    # the phone's fixture says `line_active: true`; the sync before the session made it
    # false (the line is suspended): without it the user-side assertion would hold
    assert _reward(db) == (0.0, {"state": 0.0, "actions": 0.0, "env_assertions": 0.0},
                           [("assert_bill_paid", False), ("assert_has_service", False)])
    assert store_rows(db, "SELECT count(*) FROM tool_calls") == [(0,)]


@needs_bwrap
def test_without_the_hook_the_sides_drift_apart(tmp_path: Path) -> None:
    # no `after_call` on either side: the phone never learns of the bill (nothing to pay)
    # and keeps claiming service the suspended line does not give; the bill stays unpaid and
    # the line cannot be resumed — the gold agent fails, as it must when nothing syncs
    db = _run(tmp_path, "good_agent.yaml", [("    after_call: sync\n", "")])
    score, _, verdicts = _reward(db)
    assert score == 0.0 and verdicts == [("assert_bill_paid", False),
                                         ("assert_has_service", True)]
    errors = store_rows(db, "SELECT tool_name, error FROM tool_calls WHERE error IS NOT NULL "
                       "ORDER BY seq")
    assert errors == [("pay_bill", "no bill is due"),
                      ("resume_line", "line L1 has an unpaid bill")]


def _errors(tmp_path: Path, edits: list[tuple[str, str]]) -> tuple[str, list[str]]:
    pack = _pack(tmp_path, edits)
    result = compile_pack(pack, tmp_path / "out", use_cache=False)
    return ((pack / "pack.yaml").read_text(encoding="utf-8"),
            [d.format() for d in result.diagnostics if d.severity == "error"])


def _at(text: str, needle: str, nth: int = 1) -> int:
    lines = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    return lines[nth - 1]


def test_new_fields_mistakes_are_located_all_at_once(tmp_path: Path) -> None:
    text, errors = _errors(tmp_path, [
        ("    services: [handset]\n    after_call: sync\n",
         "    services: [handset, handsets, operator]\n    after_call: synk\n"),
        ("include: [check_status_bar, pay_bill]", "include: [check_status_bar, pay_bill, sync]"),
    ])
    shown = "\n".join(errors)
    assert len(errors) == 4, shown
    want = [
        ("services: [handset, handsets", "unknown service `handsets`", "handset"),
        ("services: [handset, handsets", "service `operator` is named twice", "once"),
        ("after_call: synk", "has no public function `synk`", "sync"),
        ("pay_bill, sync]", "`sync` is the toolset's `after_call`", "leave it out"),
    ]
    for needle, message, hint in want:
        line = _at(text, needle)
        hit = [e for e in errors if f"pack.yaml:{line}:" in e and message in e and hint in e]
        assert hit, (needle, message, shown)


def test_a_table_in_two_services_and_services_without_service(tmp_path: Path) -> None:
    text, errors = _errors(tmp_path, [
        ("      phone: {key: id, fixture: data/phone.json}\n",
         "      phone: {key: id, fixture: data/phone.json}\n"
         "      lines: {key: line_id, fixture: data/lines.json}\n"),
        ("    service: handset\n    services: [operator]\n", "    services: [operator]\n"),
    ])
    shown = "\n".join(errors)
    assert len(errors) == 2, shown
    clash = _at(text, "services: [handset]")
    assert any(f"pack.yaml:{clash}:" in e and "E245" in e and "table `lines` is in both "
               "`operator` and `handset`" in e for e in errors), shown
    alone = _at(text, "services: [operator]")
    assert any(f"pack.yaml:{alone}:" in e and "`services` needs `service`" in e
               for e in errors), shown


def test_an_after_call_that_cannot_take_the_state_is_located(tmp_path: Path) -> None:
    pack = _pack(tmp_path)
    module = pack / "tools" / "phone.py"
    module.write_text(module.read_text(encoding="utf-8").replace(
        "def sync(db: State) -> None:", "def sync(db: State, side: str) -> None:"),
        encoding="utf-8")
    result = compile_pack(pack, tmp_path / "out", use_cache=False)
    errors = [d.format() for d in result.diagnostics if d.severity == "error"]
    text = (pack / "pack.yaml").read_text(encoding="utf-8")
    line = _at(text, "after_call: sync", 2)
    assert len(errors) == 1 and f"pack.yaml:{line}:" in errors[0] and "E245" in errors[0] \
        and "must be called as `fn(state)`" in errors[0], errors
