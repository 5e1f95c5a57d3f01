"""`bench report simulator` on hand-built runs: a scripted user that stops early, one that
leaks a hidden intent in Chinese, simulator errors and off-script turns."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.reports.api import ReportOptions, build_reports
from benchpack.reports.model import ReportResult
from benchpack.reports.render import render
from benchpack.runtime.store import SessionRows, Store


def _session(store: Store, run: str, sid: str, protocol: str, tables: dict[str, Any] | None = None,
             **cols: Any) -> None:
    session = {"run_id": run, "session_id": sid, "repeat": 0, "fingerprint": "f", "name": sid,
               "protocol": protocol, "agent": "model-a", "status": "finished",
               "judge_errors": 0, **cols}
    rows = {t: [(run, sid, 0, *r) for r in rs] for t, rs in (tables or {}).items()}
    store.write_now(SessionRows(run, sid, 0, session, rows))


def _turn(n: int, user: str) -> tuple[Any, ...]:
    return (n, user, "ok", 1, 0, "end", 0.0, 0.1)


def _intent(iid: str, text: str, status: str | None, turn: int | None) -> tuple[Any, ...]:
    return (iid, text, "session", status, turn, None, None)


HIDDEN = "我还需要把发票寄到公司地址"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "bench.duckdb"
    store = Store(path)
    store.upsert_run({"run_id": "r", "created_at": 1.0, "updated_at": 1.0, "plan_path": "b",
                      "pack_name": "p", "agent": "model-a", "judge": "rules",
                      "simulator": "scripted:u.yaml", "repeats": 1, "config": {},
                      "status": "finished"})
    # intent tracking: i1 leaked in the opening (resolved as "completed" at turn 2);
    # i2 volunteered legitimately in turn 3 after being provided at turn 2; i3 unresolved and
    # never said
    _session(store, "r", "it1", "intent_tracking", {
        "turns": [_turn(1, f"帮我订酒店。另外，{HIDDEN}。"), _turn(2, "好的"),
                  _turn(3, "还有，早餐要含在房价里")],
        "intent_status": [_intent("i1", HIDDEN, "completed", 2),
                          _intent("i2", "早餐要含在房价里", "provided", 2),
                          _intent("i3", "房间要在高楼层并且安静", "unresolved", None)]},
        user_turns=3)
    _session(store, "r", "it2", "intent_tracking", {
        "turns": [_turn(1, "Book me a hotel in Lyon."), _turn(2, "Thanks.")],
        "intent_status": [_intent("i1", "I also need a receipt emailed to my work address",
                                  "inferred", 1)]}, user_turns=2)
    # staged disclosure: the user says done with 2 of 3 stages disclosed (premature); the
    # runtime caught one leaking wording and re-asked twice
    _session(store, "r", "sd1", "staged_disclosure", termination="done", stages=3,
             stages_disclosed=2, user_turns=4,
             extra={"simulator_leaks": 1, "simulator_retries": 2})
    _session(store, "r", "sd2", "staged_disclosure", termination="done", stages=3,
             stages_disclosed=3, user_turns=5,
             extra={"simulator_leaks": 0, "simulator_retries": 0})
    # instructed user: stops with the goal unmet, stops after passing, a simulator error
    _session(store, "r", "iu1", "instructed_user", termination="done", passed=False,
             score=0.0, user_turns=2)
    _session(store, "r", "iu2", "instructed_user", termination="done", passed=True,
             score=1.0, user_turns=3)
    _session(store, "r", "iu3", "instructed_user", status="error", termination="error",
             error_kind="simulator", error="user simulator: malformed", user_turns=1)
    store.close()
    return path


def _rows(res: ReportResult) -> dict[str, dict[str, Any]]:
    (t,) = res.tables
    return {row[1]: {c.key: v for c, v in zip(t.columns, row, strict=True)} for row in t.rows}


def test_simulator_rates_by_hand(db: Path) -> None:
    (res,) = build_reports(ReportOptions(db=db, names=["simulator"], runs=["r"]))
    rows = _rows(res)
    it, sd, iu = rows["intent_tracking"], rows["staged_disclosure"], rows["instructed_user"]
    # intent tracking: 1 of 2 sessions leaked (the Chinese intent in the opening), 1 of 4
    # intents; no premature stop is defined for it
    assert (it["sessions"], it["leak_sessions"], it["leaked"]) == (2, 1, "1 of 4 intents")
    assert it["leak_rate"].value == pytest.approx(0.5)
    assert it["premature"] is None and it["premature_rate"].value is None
    assert it["off_script"] == "–"
    # staged: 1 of 2 stopped early; 1 caught leak; 2 off-script turns
    assert (sd["premature"], sd["premature_rate"].value) == (1, pytest.approx(0.5))
    assert (sd["leak_sessions"], sd["leaked"], sd["off_script"]) == (1, "1 caught", "2")
    # instructed user: 1 premature of 3 (the errored session counts in the denominator), 1
    # simulator error
    assert (iu["sessions"], iu["premature"], iu["sim_errors"]) == (3, 1, 1)
    assert iu["premature_rate"].value == pytest.approx(1 / 3)
    assert iu["sim_error_rate"].value == pytest.approx(1 / 3)
    assert iu["leak_sessions"] is None and iu["leaked"] == "–"


def test_legitimate_disclosure_is_not_a_leak(db: Path) -> None:
    # i2 said in turn 3 after being provided at turn 2; it2's English intent never said
    (res,) = build_reports(ReportOptions(db=db, names=["simulator"], runs=["r"]))
    assert _rows(res)["intent_tracking"]["leaked"] == "1 of 4 intents"


def test_run_summary_carries_the_simulator_line(db: Path) -> None:
    (res,) = build_reports(ReportOptions(db=db, names=["summary"], runs=["r"]))
    (line,) = [n for n in res.notes if n.startswith("⚠ Simulated user")]
    assert "instructed_user: 1 simulator errors, 1 premature stops in 3 sessions" in line
    assert "intent_tracking: 1 sessions with a leak of hidden content in 2 sessions" in line
    for fmt in ("table", "md", "json"):
        assert "Simulated user" in render(res, fmt)


def test_cli_report_simulator(db: Path) -> None:
    res = CliRunner().invoke(cli, ["report", "simulator", "--db", str(db), "--format", "md"])
    assert res.exit_code == 0, res.output
    assert "Simulator validity" in res.output and "premature stops" in res.output


# ------------------------------------------------------- leaks decided once, at run time


def test_leaked_intents_counts_what_the_report_scan_counts() -> None:
    # the rows and turns of session it1 above, as the protocol holds them: i1 leaked in the
    # opening (resolved at turn 2), i2 said in turn 3 after being provided at turn 2 (legit),
    # i3 unresolved and never said; a pooled row is another session's intent and never counts
    from benchpack.runtime.protocols.intent_tracking import leaked_intents
    turns = [_turn(1, f"帮我订酒店。另外，{HIDDEN}。"), _turn(2, "好的"),
             _turn(3, "还有，早餐要含在房价里")]
    rows = [_intent("i1", HIDDEN, "completed", 2), _intent("i2", "早餐要含在房价里", "provided", 2),
            _intent("i3", "房间要在高楼层并且安静", "unresolved", None)]
    assert leaked_intents(rows, turns) == 1
    # i2 said in the turn it was provided would be a leak; unresolved i3 said at any turn too
    assert leaked_intents(rows, [*turns, _turn(4, "房间要在高楼层并且安静")]) == 2
    assert leaked_intents([_intent("i2", "早餐要含在房价里", "provided", 3)], turns) == 1
    pooled = (*_intent("i1", HIDDEN, "completed", 2)[:6], "session.other")
    assert leaked_intents([pooled], turns) == 0
    assert leaked_intents(rows, []) == 0


@pytest.fixture
def stored_db(tmp_path: Path) -> Path:
    """it1 and it2 as the runtime now writes them (`extra.intent_leaks`), with counts the
    messages alone would not give (so the test can tell which was read), and it3 stored
    without it (an older store): only it3 is scanned."""
    path = tmp_path / "stored.duckdb"
    store = Store(path)
    store.upsert_run({"run_id": "r", "created_at": 1.0, "updated_at": 1.0, "plan_path": "b",
                      "pack_name": "p", "agent": "model-a", "judge": "rules",
                      "simulator": "rules", "repeats": 1, "config": {}, "status": "finished"})
    _session(store, "r", "it1", "intent_tracking", {
        "turns": [_turn(1, "Book me a hotel."), _turn(2, "ok")],
        "intent_status": [_intent("i1", "breakfast included in the rate", "provided", 1),
                          _intent("i2", "a quiet room on a high floor", "completed", 2)]},
        user_turns=2, extra={"intent_leaks": 2})
    _session(store, "r", "it2", "intent_tracking", {
        "turns": [_turn(1, "Book me a hotel; breakfast included in the rate.")],
        "intent_status": [_intent("i1", "breakfast included in the rate", "completed", 1)]},
        user_turns=1, extra={"intent_leaks": 0})
    _session(store, "r", "it3", "intent_tracking", {
        "turns": [_turn(1, "I need a receipt emailed to my work address please")],
        "intent_status": [_intent("i1", "a receipt emailed to my work address", "inferred", 1),
                          _intent("i2", "a late checkout at noon", "unresolved", None)]},
        user_turns=1)
    store.close()
    return path


def test_reports_read_the_stored_leaks_and_scan_only_older_sessions(
        stored_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchpack.specs import text  # intent_tracking's scan of old stores uses its matcher
    scanned: list[str] = []

    class Spy(text.LeakMatcher):
        def leaks(self, secret: str, message: str) -> bool:
            scanned.append(secret)
            return super().leaks(secret, message)

    monkeypatch.setattr(text, "LeakMatcher", Spy)
    (res,) = build_reports(ReportOptions(db=stored_db, names=["simulator"], runs=["r"]))
    it = _rows(res)["intent_tracking"]
    # it1: 2 stored (its messages say neither), it2: 0 stored (its message says it1 verbatim),
    # it3 scanned: i1 said in its own turn (a leak), i2 never said
    assert (it["sessions"], it["leak_sessions"], it["leaked"]) == (3, 2, "3 of 5 intents")
    assert set(scanned) == {"a receipt emailed to my work address", "a late checkout at noon"}
    scanned.clear()
    (summary,) = build_reports(ReportOptions(db=stored_db, names=["summary"], runs=["r"]))
    (line,) = [n for n in summary.notes if n.startswith("⚠ Simulated user")]
    assert "intent_tracking: 2 sessions with a leak of hidden content in 3 sessions" in line
    # the file unchanged since: the scan's counts are reused, not redone
    assert scanned == []
    # another file (a copy) is scanned anew: the same counts
    shutil.copyfile(stored_db, stored_db.with_suffix(".copy"))
    (res,) = build_reports(ReportOptions(db=stored_db.with_suffix(".copy"), names=["simulator"],
                                         runs=["r"]))
    assert set(scanned) == {"a receipt emailed to my work address", "a late checkout at noon"}
    it = _rows(res)["intent_tracking"]
    assert (it["sessions"], it["leak_sessions"], it["leaked"]) == (3, 2, "3 of 5 intents")


def test_leak_matcher_decides_as_leaks() -> None:
    """The scan's tokenise-once matcher gives `leaks`'s answer on every pair: English and
    Chinese, verbatim, near-verbatim, too short, empty; texts reused across pairs."""
    from benchpack.specs.text import LeakMatcher, leaks

    secrets = [HIDDEN, "早餐要含在房价里", "房间要在高楼层并且安静", "a receipt emailed to my work address",
               "a late checkout at noon", "yes", "", "the of and", "breakfast included in the rate"]
    messages = [f"帮我订酒店。另外，{HIDDEN}。", "好的", "还有，早餐要含在房价里", "房间 要在 高楼层",
                "I need a receipt emailed to my work address please", "Receipt: emailed to work?",
                "checkout late, at noon", "", "yes", "Breakfast included in the rate, right?",
                "rate the breakfast included"]
    matcher = LeakMatcher()
    got = [[matcher.leaks(s, m) for m in messages] for s in secrets]
    matcher.forget_messages()
    again = [[matcher.leaks(s, m) for m in messages] for s in secrets]
    want = [[leaks(s, m) for m in messages] for s in secrets]
    assert got == want == again
    assert sum(map(sum, want)) >= 5  # the cases hold leaks, not only refusals
