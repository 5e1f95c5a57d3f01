"""What the store does once a run rather than once a session, and the run's end (issue 31),
counted rather than timed: a run of one-call sessions at 64 in flight has ~0.8 ms of the event
loop's time a session, and the store writer's thread competes with it for the interpreter lock.

- Every session of a run offers the same tool list (several kilobytes of JSON): the writer
  redacts and hashes it once a run, not once a session.
- The run's end: the final run row is written and DuckDB's checkpoint started (on a thread of
  its own) before the summary's queries (DuckDB 1.5 read while it ran; 2.0 makes the first
  query wait for it); closing the store then has nothing left to checkpoint. Closing used to
  checkpoint after the summary (~40-90 ms for a 1,000-session run on DuckDB 1.5)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from benchpack.runtime.calltexts import CallText
from benchpack.runtime.store import SessionRows, Store

TOOLS = json.dumps([{"type": "function", "function": {"name": f"tool_{i}", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}}}} for i in range(8)],
    separators=(",", ":"))


class CountingRedactor:
    """Redacts nothing and remembers every text it was given."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __bool__(self) -> bool:
        return True

    def __call__(self, text: str) -> str:
        self.seen.append(text)
        return text


def _session(i: int) -> SessionRows:
    return SessionRows("run", f"s{i}", 0, {"run_id": "run", "session_id": f"s{i}", "repeat": 0,
                                           "status": "finished"},
                       call_texts=[CallText(0, "agent", None,
                                            [json.dumps({"role": "user", "content": f"n{i}"})],
                                            TOOLS, '{"content":"ok","role":"assistant"}')])


def test_a_run_redacts_and_hashes_its_tool_list_once(tmp_path: Path) -> None:
    redact = CountingRedactor()
    store = Store(tmp_path / "db.duckdb", redactor=redact)  # type: ignore[arg-type]
    try:
        store.write_batch([_session(i) for i in range(3)])
        store.write_batch([_session(i) for i in range(3, 6)])
        blobs = dict(store.con.execute("SELECT hash, data FROM blobs").fetchall())
        prompts = [r[0] for r in store.con.execute(
            "SELECT prompt FROM llm_call_texts ORDER BY session_id").fetchall()]
    finally:
        store.close()
    # once a run (six times before: once a session, and hashed each time)
    assert redact.seen.count(TOOLS) == 1
    digest = hashlib.sha256(TOOLS.encode()).hexdigest()
    assert blobs[digest] == TOOLS
    assert len(prompts) == 6 and all(json.loads(blobs[p])["tools"] == digest for p in prompts)


def test_a_tool_list_is_redacted_in_every_run_that_stores_it(tmp_path: Path) -> None:
    """Adversarial: the memo belongs to a store (its redactor); another store, with a redactor
    that masks part of the tool list, stores its own masked text."""
    class Masking(CountingRedactor):
        def __call__(self, text: str) -> str:
            super().__call__(text)
            return text.replace("tool_3", "***")

    first = Store(tmp_path / "a.duckdb", redactor=CountingRedactor())  # type: ignore[arg-type]
    second = Store(tmp_path / "b.duckdb", redactor=Masking())  # type: ignore[arg-type]
    try:
        first.write_batch([_session(0)])
        second.write_batch([_session(0), _session(1)])
        stored = [d for (d,) in second.con.execute("SELECT data FROM blobs").fetchall()]
    finally:
        first.close()
        second.close()
    assert TOOLS.replace("tool_3", "***") in stored and TOOLS not in stored


def _run_row(status: str) -> dict[str, Any]:
    return {"run_id": "run", "created_at": 1.0, "updated_at": 2.0, "config": {"a": 1},
            "status": status}


def test_finish_run_checkpoints_before_close_and_reads_go_on(tmp_path: Path) -> None:
    db = tmp_path / "db.duckdb"
    store = Store(db)
    store.upsert_run(_run_row("running"))
    store.start()
    for i in range(3):
        store.submit(_session(i))
    store.flush()
    store.finish_run(_run_row("finished"))
    with store.reading() as con:  # the summary's reads, while the checkpoint may still run
        assert con.execute("SELECT count(*) FROM sessions").fetchone() == (3,)
        assert con.execute("SELECT status FROM runs").fetchone() == ("finished",)
        # the last checkpoint on one DuckDB thread (storeend's docstring); the run's writes
        # had DuckDB's default
        assert con.execute("SELECT current_setting('threads')").fetchone() == (1,)
    store.close()
    assert not Path(f"{db}.wal").exists()
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT status, config FROM runs").fetchall() == [
            ("finished", '{"a": 1}')]
    finally:
        con.close()


def test_finish_run_commits_what_was_submitted_but_not_flushed(tmp_path: Path) -> None:
    """Adversarial: a session still in the writer's group window when the run ends is
    committed before the checkpoint (the writer stops, committing at once)."""
    db = tmp_path / "db.duckdb"
    store = Store(db, group_commit_s=30.0)
    store.upsert_run(_run_row("running"))
    store.start()
    store.submit(_session(7))
    store.finish_run(_run_row("finished"))
    store.close()
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT session_id FROM sessions").fetchall() == [("s7",)]
    finally:
        con.close()


def test_a_run_starts_the_checkpoint_before_its_summary(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from benchpack.runtime import run_stages
    from benchpack.runtime.runner import RunOptions, run_plan

    order: list[str] = []
    real_finish, real_summarise = Store.finish_run, run_stages.summarise

    def finish_run(self: Store, row: dict[str, Any]) -> None:
        order.append("checkpoint started")
        real_finish(self, row)

    def summarise(*a: Any, **kw: Any) -> Any:
        order.append("summary")
        return real_summarise(*a, **kw)

    monkeypatch.setattr(Store, "finish_run", finish_run)
    monkeypatch.setattr(run_stages, "summarise", summarise)
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "pack.yaml").write_text(
        "benchpack: 1\nname: runend\npersonas:\n  - id: p\n    profile: {role: Analyst}\n"
        "episodes:\n  - id: ep\n    persona: p\n    sessions:\n      - id: s\n"
        "        protocol: intent_tracking\n        request: Summarise the note.\n",
        encoding="utf-8")
    (pack / "agent.yaml").write_text("default:\n  - say: Here is the summary.\n",
                                     encoding="utf-8")
    from benchpack.compiler import compile_pack

    assert compile_pack(pack, tmp_path / "plan", use_cache=False).ok
    db = tmp_path / "run.duckdb"
    summary = run_plan(RunOptions(plan=tmp_path / "plan", agent=f"scripted:{pack / 'agent.yaml'}",
                                  judge="rules", simulator="rules", db=db, progress=False,
                                  cache_dir=tmp_path / "cache"))
    assert summary.finished == 1
    assert order == ["checkpoint started", "summary"]
    assert not Path(f"{db}.wal").exists()


def test_the_run_row_goes_in_the_last_sessions_transaction(tmp_path: Path) -> None:
    """One commit at the run's end, not two: the sessions still waiting and the final row."""
    store = Store(tmp_path / "db.duckdb", group_commit_s=30.0)
    store.upsert_run(_run_row("running"))
    calls: list[str] = []
    write_batch, upsert_run = store.write_batch, store.upsert_run

    def counting(batch: list[SessionRows]) -> None:
        calls.append(f"{len(batch)} sessions")
        write_batch(batch)

    def upsert(row: dict[str, Any]) -> None:
        calls.append("run row alone")
        upsert_run(row)

    store.write_batch = counting  # type: ignore[method-assign]
    store.upsert_run = upsert  # type: ignore[method-assign]
    store.start()
    store.submit(_session(1))
    store.submit(_session(2))
    store.finish_run(_run_row("finished"))
    with store.reading() as con:
        assert con.execute("SELECT status FROM runs").fetchone() == ("finished",)
        assert con.execute("SELECT count(*) FROM sessions").fetchone() == (2,)
    store.close()
    assert calls == ["2 sessions"]  # before: ["2 sessions", "run row alone"]


def test_a_failed_writer_fails_the_runs_end(tmp_path: Path) -> None:
    """Adversarial: the writer failed on the last sessions: `finish_run` raises it (as `flush`
    does) and the run row keeps what it said."""
    store = Store(tmp_path / "db.duckdb", group_commit_s=30.0)
    store.upsert_run(_run_row("running"))

    def broken(batch: list[SessionRows]) -> None:
        raise RuntimeError("disk on fire")

    store.write_batch = broken  # type: ignore[method-assign]
    store.start()
    store.submit(_session(1))
    with pytest.raises(RuntimeError, match="disk on fire"):
        store.finish_run(_run_row("finished"))
    with store.reading() as con:
        assert con.execute("SELECT status FROM runs").fetchone() == ("running",)
    store.close()


def test_the_runs_last_transaction_holds_only_what_finished_after_the_last_chain_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer's window may hold up to 256 sessions: without a word from the run, all of
    them waited for the run's end and its last transaction (~45 ms for 256 one-call sessions
    against ~20 for a few). When the last chain starts, what waits is committed at once."""
    from benchpack.compiler import compile_pack
    from benchpack.runtime.runner import RunOptions, run_plan

    real_init = Store.__init__

    def init(self: Store, *a: Any, **kw: Any) -> None:
        real_init(self, *a, **{**kw, "group_commit_s": 60.0})  # only the run's words commit
    monkeypatch.setattr(Store, "__init__", init)
    batches: list[int] = []
    real = Store.write_batch

    def write_batch(self: Store, batch: list[SessionRows]) -> None:
        batches.append(len(batch))
        real(self, batch)

    monkeypatch.setattr(Store, "write_batch", write_batch)
    pack = tmp_path / "pack"
    pack.mkdir()
    episodes = "".join(f"  - id: ep{i}\n    persona: p\n    sessions:\n      - id: s\n"
                       "        protocol: intent_tracking\n        request: Summarise.\n"
                       for i in range(12))
    (pack / "pack.yaml").write_text(
        "benchpack: 1\nname: runend\npersonas:\n  - id: p\n    profile: {role: Analyst}\n"
        "episodes:\n" + episodes, encoding="utf-8")
    (pack / "agent.yaml").write_text("default:\n  - say: Here is the summary.\n",
                                     encoding="utf-8")
    assert compile_pack(pack, tmp_path / "plan", use_cache=False).ok
    # and the caller hears of it (`ending`: the CLI imports its summary's printing then)
    ending: list[int] = []
    summary = run_plan(RunOptions(plan=tmp_path / "plan", agent=f"scripted:{pack / 'agent.yaml'}",
                                  judge="rules", simulator="rules", db=tmp_path / "run.duckdb",
                                  progress=False, cache_dir=tmp_path / "cache",
                                  max_concurrency=3, ending=lambda: ending.append(sum(batches))))
    assert summary.finished == 12 and sum(batches) == 12
    assert len(ending) == 1 and ending[0] < 12, ending
    # the last transaction: at most the three chains running when the last one started
    assert len(batches) >= 2 and batches[-1] <= 3, batches
