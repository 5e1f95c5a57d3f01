"""Issue 31: warm python tool workers lent again between episodes. A borrowed worker must be
indistinguishable from a fresh one: the initial tables (not the last episode's changes), fresh
module globals, an empty `/work` and `/tmp`, the environment variables it started with; and it is
lent only to a service holding the very rows it started from."""

from __future__ import annotations

import asyncio
import textwrap
from typing import Any

from benchpack.runtime.env import ServiceState
from benchpack.runtime.env.pytool_pool import WorkerPool, same_rows
from benchpack.runtime.env.pytools import PyToolWorker, bindings
from benchpack.specs.plan import PlanService
from benchpack.specs.pytools import read_tools

SOURCE = textwrap.dedent('''\
    import os
    from benchpack_tools import State

    CALLS = []

    def touch(db: State, name: str) -> dict:
        """Leaves traces everywhere: a row, a module global, files, an environment variable."""
        CALLS.append(name)
        row = db.get("items", "a")
        row["n"] += 1
        db.put("items", row)
        open(name, "w").write("x")
        try:  # /tmp is not writable in every sandbox (a root runner's other uid)
            open("/tmp/" + name, "w").write("x")
        except OSError:
            pass
        os.environ["TOUCHED"] = name
        return {"calls": list(CALLS), "n": row["n"]}

    def add(db: State) -> dict:
        """A new row with a generated key."""
        return db.put("items", {"n": 7})

    def drop(db: State, key: str) -> str:
        """Deletes a row."""
        db.delete("items", key)
        return key

    def listing(db: State) -> list:
        """Every row, in the replica's order."""
        return db.rows("items")

    def look(db: State) -> dict:
        """What this episode can see of earlier ones."""
        return {"calls": list(CALLS), "n": db.get("items", "a")["n"],
                "work": sorted(os.listdir(".")), "tmp": sorted(os.listdir("/tmp")),
                "touched": os.environ.get("TOUCHED"), "pid": os.getpid()}
''')
SERVICE = PlanService.model_validate({"name": "s", "operations": [], "tables": {
    "items": {"key": "id", "rows": [{"id": "a", "n": 0}, {"id": "b", "n": 5},
                                    {"id": "item-3", "n": 1}]}}})


def _worker(state: ServiceState, pool: WorkerPool) -> PyToolWorker:
    res = read_tools(SOURCE, "tools/t.py")
    assert not res.errors, res.errors
    return PyToolWorker(SOURCE, bindings(res.tools), state, filename="tools/t.py",
                        allow_python=True, pool=pool)


def test_a_borrowed_worker_starts_like_a_fresh_one() -> None:
    async def go() -> list[Any]:
        pool = WorkerPool()
        try:
            first_state = ServiceState(SERVICE)
            first = _worker(first_state, pool)
            touched = await first.call("touch", {"name": "f1"})
            before = await first.call("look", {})
            await first.aclose()  # the episode is over: the worker goes back to the pool
            second_state = ServiceState(SERVICE)  # a new episode from the same plan rows
            second = _worker(second_state, pool)
            seen = await second.call("look", {})
            out = [touched, before, seen, first.starts, second.starts, second.borrowed,
                   pool.lent, first_state.rows("items"), second_state.rows("items")]
            await second.aclose()
            return out
        finally:
            await pool.close()

    touched, before, seen, starts1, starts2, borrowed, lent, rows1, rows2 = asyncio.run(go())
    assert touched == {"calls": ["f1"], "n": 1}
    assert before["work"] == ["f1"] and before["tmp"] in ([], ["f1"])
    assert before["touched"] == "f1"
    # the same process (no start), yet nothing of the first episode is left
    assert (starts1, starts2, borrowed, lent) == (1, 0, 1, 1)
    assert seen["pid"] == before["pid"]
    assert seen == {"calls": [], "n": 0, "work": [], "tmp": [], "touched": None,
                    "pid": before["pid"]}
    assert rows1[0] == {"id": "a", "n": 1} and rows2[0] == {"id": "a", "n": 0}


def test_inserts_updates_and_deletes_are_all_undone_in_order() -> None:
    # the reset undoes the episode's journal (an insert removed, a replaced row put back in
    # its place, the key counter back); after a delete it reloads the tables instead, since a
    # row put back would move to the end: either way the next episode sees the fresh order
    async def go() -> list[Any]:
        pool = WorkerPool()
        out = []
        try:
            for script in ([("touch", {"name": "f"}), ("add", {})],
                           [("drop", {"key": "a"}), ("add", {})],
                           [("add", {}), ("touch", {"name": "g"})]):
                w = _worker(ServiceState(SERVICE), pool)
                fresh = await w.call("listing", {})
                for name, args in script:
                    await w.call(name, args)
                out.append((fresh, await w.call("listing", {}), w.borrowed))
                await w.aclose()
            last = _worker(ServiceState(SERVICE), pool)
            out.append((await last.call("listing", {}), await last.call("add", {}),
                        last.borrowed))
            await last.aclose()
            return out
        finally:
            await pool.close()

    start = [{"id": "a", "n": 0}, {"id": "b", "n": 5}, {"id": "item-3", "n": 1}]
    (f1, e1, b1), (f2, e2, b2), (f3, e3, b3), (f4, added, b4) = asyncio.run(go())
    assert (b1, b2, b3, b4) == (0, 1, 1, 1)
    assert f1 == f2 == f3 == f4 == start
    assert e1 == [{"id": "a", "n": 1}, start[1], start[2], {"n": 7, "id": "item-4"}]
    assert e2 == [start[1], start[2], {"n": 7, "id": "item-4"}]
    assert e3 == [{"id": "a", "n": 1}, start[1], start[2], {"n": 7, "id": "item-4"}]
    assert added == {"n": 7, "id": "item-4"}  # the counter was put back too


def test_a_worker_is_lent_only_to_the_rows_it_started_from() -> None:
    async def go() -> tuple[int, int, int]:
        pool = WorkerPool()
        try:
            first = _worker(ServiceState(SERVICE), pool)
            await first.call("look", {})
            await first.aclose()
            # equal rows, but other objects (a restored snapshot): started afresh
            other = ServiceState(SERVICE)
            other.restore(other.snapshot())
            second = _worker(other, pool)
            await second.call("look", {})
            await second.aclose()
            # a changed state: started afresh too
            changed = ServiceState(SERVICE)
            changed.put_row("items", {"id": "c", "n": 1})
            third = _worker(changed, pool)
            await third.call("look", {})
            await third.aclose()
            return second.starts, third.starts, pool.lent
        finally:
            await pool.close()

    assert asyncio.run(go()) == (1, 1, 0)


def test_a_worker_busy_or_dead_at_the_end_is_not_kept() -> None:
    async def go() -> tuple[int, int]:
        pool = WorkerPool()
        try:
            w = _worker(ServiceState(SERVICE), pool)
            await w.call("look", {})
            assert w._proc is not None
            w._proc.kill()  # died between calls
            await w._proc.wait()
            await w.aclose()
            again = _worker(ServiceState(SERVICE), pool)
            await again.call("look", {})
            await again.aclose()
            return again.starts, pool.lent
        finally:
            await pool.close()

    assert asyncio.run(go()) == (1, 0)


def test_same_rows_is_identity_not_equality() -> None:
    row = {"id": "a"}
    assert same_rows({"t": [row]}, {"t": [row]})
    assert not same_rows({"t": [row]}, {"t": [dict(row)]})
    assert not same_rows({"t": [row]}, {"t": [row, row]})
    assert not same_rows({"t": [row]}, {"u": [row]})


def test_a_run_lends_workers_across_repeats_and_every_repeat_sees_the_same(
        tmp_path: Any, monkeypatch: Any) -> None:
    # three repeats of one episode, one chain at a time: repeats 2 and 3 borrow the worker of
    # the one before, and record exactly what repeat 1 recorded (results, errors, final rows)
    import json
    from pathlib import Path

    import duckdb

    from benchpack.compiler import compile_pack
    from benchpack.runtime.env import pytool_pool
    from benchpack.runtime.runner import RunOptions, run_plan

    shop = Path(__file__).resolve().parents[1] / "fixtures" / "toolset_shop"
    lent: list[int] = []
    real_take = pytool_pool.WorkerPool.take

    async def take(self: WorkerPool, key: Any, state: Any) -> Any:
        got = await real_take(self, key, state)
        lent.append(got is not None)
        return got

    monkeypatch.setattr(pytool_pool.WorkerPool, "take", take)
    res = compile_pack(shop, tmp_path / "plan", use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    db = tmp_path / "bench.duckdb"
    run_plan(RunOptions(plan=tmp_path / "plan", agent=f"scripted:{shop / 'agent.yaml'}",
                        judge="rules", db=db, run_id="r", progress=False, repeats=3,
                        max_concurrency=1, allow_python=True, cache_dir=tmp_path / "cache"))
    con = duckdb.connect(str(db), read_only=True)
    try:
        calls = con.execute("SELECT repeat, session_id, seq, tool_name, result, error "
                            "FROM tool_calls ORDER BY repeat, session_id, seq").fetchall()
        states = con.execute("SELECT repeat, session_id, state FROM snapshots "
                             "ORDER BY repeat, session_id").fetchall()
    finally:
        con.close()
    by_repeat: dict[int, list[Any]] = {}
    for rep, *rest in calls:
        by_repeat.setdefault(int(rep), []).append(rest)
    assert len(by_repeat) == 3 and by_repeat[0] and by_repeat[0] == by_repeat[1] == by_repeat[2]
    finals: dict[int, list[Any]] = {}
    for rep, sid, state in states:
        finals.setdefault(int(rep), []).append((sid, json.loads(state)["services"]))
    assert finals[0] == finals[1] == finals[2]
    assert sum(lent) >= 2, lent  # repeats 2 and 3 borrowed
