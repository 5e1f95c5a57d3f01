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
