"""The progress report counts a session only once its transaction has committed."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from benchpack.compiler import compile_pack
from benchpack.runtime import runner
from benchpack.runtime.store import SessionRows, Store

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "pibench_case"


def test_progress_advances_after_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = tmp_path / "plan"
    assert compile_pack(CASE, plan, use_cache=False).ok
    committed: list[str] = []
    reported: list[tuple[str, bool]] = []
    lock = threading.Lock()
    write_batch = Store.write_batch

    def slow_commit(self: Store, batch: list[SessionRows]) -> None:
        threading.Event().wait(0.05)  # sessions finish faster than they commit
        write_batch(self, batch)
        with lock:
            committed.extend(str(r.session["name"]) for r in batch)

    def advance(self: Any, info: str, error: bool = False) -> None:
        with lock:
            reported.append((info, info in committed))

    monkeypatch.setattr(Store, "write_batch", slow_commit)
    monkeypatch.setattr(runner.Progress, "advance", advance)
    summary = runner.run_plan(runner.RunOptions(
        plan=plan, agent=f"scripted:{CASE / 'claude_agent.yaml'}",
        judge=f"scripted:{CASE / 'claude_judge.yaml'}", simulator="rules",
        db=tmp_path / "r.duckdb", progress=False, cache_dir=tmp_path / "cache",
        max_concurrency=4))
    assert summary.errors == 0 and summary.finished > 1
    assert len(reported) == summary.finished
    assert all(was_committed for _, was_committed in reported), reported


class _Stream:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        return None


@pytest.mark.parametrize("tty", [False, True])
def test_a_bar_only_on_a_terminal(tty: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log file or a pipe gets no progress bar: rich redraws one ten times a second on a
    thread of its own, taking the interpreter lock from the sessions, to print it once at the
    end. Counting goes on either way."""
    monkeypatch.setattr("sys.stderr", _Stream(tty))
    progress = runner.Progress(3, enabled=True)
    try:
        assert (progress._bar is not None) is tty
        if tty:  # drawn where it was checked: stdout carries the summary and `--json`
            assert progress._bar.console.stderr
        progress.advance("s1")
        assert progress.done == 1
    finally:
        progress.stop()


def test_run_plan_may_leave_the_last_checkpoint_to_a_thread(tmp_path: Path) -> None:
    """`close_in_background` (the CLI's way): the summary comes back with every row committed
    and a `wait_closed` to call; without it the store is closed before `run_plan` returns. The
    waiter is not part of the summary's JSON."""
    import json

    import duckdb

    plan = tmp_path / "plan"
    assert compile_pack(CASE, plan, use_cache=False).ok
    common = dict(plan=plan, agent=f"scripted:{CASE / 'claude_agent.yaml'}",
                  judge=f"scripted:{CASE / 'claude_judge.yaml'}", simulator="rules",
                  progress=False, cache_dir=tmp_path / "cache")
    plain = runner.run_plan(runner.RunOptions(**common, db=tmp_path / "a.duckdb"))  # type: ignore[arg-type]
    assert plain.wait_closed is None
    duckdb.connect(str(tmp_path / "a.duckdb")).close()  # closed: a writer may open it
    later = runner.run_plan(runner.RunOptions(  # type: ignore[arg-type]
        **common, db=tmp_path / "b.duckdb", close_in_background=True))
    assert later.wait_closed is not None
    assert "wait_closed" not in later.as_dict()
    json.dumps(later.as_dict())
    later.wait_closed()
    for db, summary in ((tmp_path / "a.duckdb", plain), (tmp_path / "b.duckdb", later)):
        con = duckdb.connect(str(db))
        assert con.execute("SELECT count(*) FROM sessions").fetchone() == (summary.finished +
                                                                          summary.errors,)
        con.close()
    assert (plain.finished, plain.errors, plain.proc) == (later.finished, later.errors,
                                                          later.proc)
