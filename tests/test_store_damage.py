"""A store cut short or corrupted: every reader and `bench run --resume` ends with
`✗ <db>: the store is damaged (…) (hint: …)` and exit 1 (`bench merge` too) — never exit 3, a traceback, a 30 s wait
for a writer that does not exist, or a silent success over missing rows.

The store is a real one: the pharmacist-week reference pack run with its scripted demo agent.
Cuts include ones DuckDB still opens (a block or a few KB short of the end); corruption hits the
bytes of a table's rows (located with `pragma_storage_info`, so the cases follow the
store's layout)."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.compiler import compile_pack
from benchpack.specs.storefile import is_lock
from conftest import TASKPACKS

PACK = TASKPACKS / "pharmacist-week"
HEADER = 3 * 4096  # DuckDB's main header and its two database headers precede the blocks


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("damage")
    assert compile_pack(PACK, root / "build", use_cache=False).ok
    res = CliRunner().invoke(cli, [
        "run", str(root / "build"), "--agent", f"scripted:{PACK / 'demo' / 'agent.yaml'}",
        "--simulator", "rules", "--judge", "rules", "--db", str(root / "bench.duckdb"),
        "--run-id", "r1", "--quiet", "--cache-dir", str(root / "cache")])
    assert res.exit_code == 0, res.output
    return root


def _block_size(db: Path) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(con.execute("PRAGMA database_size").fetchone()[2])
    finally:
        con.close()


def _data_offset(db: Path, table: str) -> int:
    """Where the first stored column segment of `table` starts in the file (a block begins with
    its 8-byte checksum; bytes past a block's used part are not checked, nor read)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        block_size = int(con.execute("PRAGMA database_size").fetchone()[2])
        row = con.execute(f"SELECT block_id, block_offset FROM pragma_storage_info('{table}') "
                          "WHERE block_id >= 0 ORDER BY block_id, block_offset LIMIT 1"
                          ).fetchone()
    finally:
        con.close()
    assert row, f"{table} has no persistent block"
    return HEADER + int(row[0]) * block_size + 8 + int(row[1])


def _cut(size: int, block: int) -> dict[str, int]:
    return {"in the first block": 4096, "just past the headers": HEADER + 100,
            "half": size // 2, "one block short": size - block, "8 KB short": size - 8192,
            "4 KB short": size - 4096, "one byte short": size - 1}


def _check(args: list[str], db: str) -> str:
    res = CliRunner().invoke(cli, args)
    shown = f"bench {' '.join(args)}\n{res.output}"
    assert res.exception is None or isinstance(res.exception, SystemExit), (
        f"{shown}\nraised {res.exception!r}")
    assert res.exit_code == 1, shown
    assert "Traceback" not in res.output and "internal error" not in res.output, shown
    assert f"✗ {db}: the store is damaged (" in res.output, shown
    assert "(hint: restore it from a copy, or start a new store with --db)" in res.output, shown
    return res.output


def _all_commands(store: Path, db: Path, out: Path, table: str) -> None:
    plan = store / "build"
    agent = f"scripted:{PACK / 'demo' / 'agent.yaml'}"
    cases = {
        "report": ["report", "--db", str(db), "--wait", "5"],
        "query": ["query", f"SELECT * FROM {table}", "--db", str(db), "--wait", "5"],
        "export": ["export", "--db", str(db), "-o", str(out / "export"), "--wait", "5"],
        "resume": ["run", str(plan), "--agent", agent, "--simulator", "rules", "--judge",
                   "rules", "--db", str(db), "--resume", "r1", "--quiet", "--cache-dir",
                   str(out / "cache")],
        # issue 27: a damaged input of `bench merge` exited 3
        "merge": ["merge", str(db), "-o", str(out / "merged.duckdb")],
    }
    before = db.read_bytes()
    for args in cases.values():
        _check(args, str(db))
        # a damaged store is never written to: what is left of it stays for a recovery
        assert db.read_bytes() == before, f"bench {' '.join(args)} wrote to the damaged store"


@pytest.mark.parametrize("where", ["in the first block", "just past the headers", "half",
                                   "one block short", "8 KB short", "4 KB short",
                                   "one byte short"])
def test_a_truncated_store_is_reported_damaged(store: Path, tmp_path: Path, where: str) -> None:
    db = tmp_path / "bench.duckdb"
    shutil.copyfile(store / "bench.duckdb", db)
    size = db.stat().st_size
    cut = _cut(size, _block_size(db))[where]
    with db.open("r+b") as f:
        f.truncate(cut)
    _all_commands(store, db, tmp_path, "sessions")


@pytest.mark.parametrize("table", ["sessions", "messages", "snapshots", "turns"])
def test_a_store_corrupted_in_the_middle_is_reported_damaged(store: Path, tmp_path: Path,
                                                             table: str) -> None:
    db = tmp_path / "bench.duckdb"
    shutil.copyfile(store / "bench.duckdb", db)
    offset = _data_offset(db, table) + 8
    assert offset < db.stat().st_size
    with db.open("r+b") as f:
        f.seek(offset)
        f.write(b"\xa5" * 64)
    _all_commands(store, db, tmp_path, table)


def test_the_intact_store_passes_every_reader(store: Path, tmp_path: Path) -> None:
    """The checks refuse damage, not stores: the same commands succeed on the original."""
    db = tmp_path / "bench.duckdb"
    shutil.copyfile(store / "bench.duckdb", db)
    for args in (["report", "--db", str(db)], ["query", "SELECT * FROM messages", "--db", str(db)],
                 ["export", "--db", str(db), "-o", str(tmp_path / "export")]):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 0, res.output


def test_both_sides_classify_damage_alike() -> None:
    """reports never import the runtime, so each keeps its copy of the classifier."""
    from benchpack.reports import access
    from benchpack.runtime import store

    errors = [duckdb.IOException('IO Error: Corrupt database file: computed checksum 1 does '
                                 'not match stored checksum 2 in block at location 4096'),
              duckdb.IOException('IO Error: Could not read enough bytes from file "x"'),
              duckdb.InternalException("INTERNAL Error: Attempted to access index 9"),
              duckdb.SerializationException("Serialization Error: field id mismatch"),
              duckdb.IOException('IO Error: Could not set lock on file "x": Conflicting lock'),
              duckdb.CatalogException("Catalog Error: Table with name nope does not exist"),
              duckdb.ParserException("Parser Error: syntax error at or near \"SELEC\""),
              ValueError("checksum of the plan")]
    got = [(access.damage_reason(e), store.damage_reason(e)) for e in errors]
    assert [a for a, _ in got] == [b for _, b in got]
    assert [a is not None for a, _ in got] == [True] * 4 + [False] * 4
    assert access.DAMAGED_HINT == store.DAMAGED_HINT
    assert not is_lock("Corrupt database file: checksum in block at location 4096")
    assert is_lock('Could not set lock on file "x": Conflicting lock is held')
    assert not is_lock("in block at location 4096") and is_lock("lock on file")


def test_a_damaged_block_met_by_the_writer_is_a_user_error(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """An index block is read only when a row is written: the writer thread's failure is
    reported as damage, not as `store writer failed` (exit 3)."""
    from benchpack.runtime.store import SessionRows, Store, StoreDamagedError

    store = Store(tmp_path / "bench.duckdb")

    def broken(batch: list[SessionRows]) -> None:
        raise duckdb.IOException("IO Error: Corrupt database file: computed checksum 1 does not "
                                 "match stored checksum 2 in block at location 2162688")

    monkeypatch.setattr(store, "write_batch", broken)
    store.start()
    try:
        store.submit(SessionRows("r", "s", 0, {}))
        with pytest.raises(StoreDamagedError, match=r"the store is damaged \(IO Error: Corrupt"):
            store.flush()
    finally:
        store.close()


def _count_block_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from benchpack.specs import storefile

    reads: list[int] = []
    real = storefile.read_every_block

    def counted(con: object) -> None:
        reads.append(1)
        real(con)

    monkeypatch.setattr(storefile, "read_every_block", counted)
    return reads


def test_blocks_are_read_once_per_state_of_the_file(store: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Every report read every block again (~1 s on 1 M turns): a file not written since a
    clean check is not read whole again, and any write makes the next reader check it all."""
    db = tmp_path / "bench.duckdb"
    shutil.copyfile(store / "bench.duckdb", db)
    reads = _count_block_reads(monkeypatch)
    for _ in range(3):
        res = CliRunner().invoke(cli, ["report", "--db", str(db)])
        assert res.exit_code == 0, res.output
    assert len(reads) == 1
    # a copy is another file: checked whole
    copy = tmp_path / "copy.duckdb"
    shutil.copyfile(db, copy)
    assert CliRunner().invoke(cli, ["report", "--db", str(copy)]).exit_code == 0
    assert len(reads) == 2
    # a write that keeps the content and the modification time still changes the ctime
    st = db.stat()
    db.write_bytes(db.read_bytes())
    import os

    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert CliRunner().invoke(cli, ["report", "--db", str(db)]).exit_code == 0
    assert len(reads) == 3


@pytest.mark.parametrize("table", ["snapshots", "messages"])
def test_damage_after_a_clean_check_is_still_reported(store: Path, tmp_path: Path,
                                                      table: str) -> None:
    """The record of a clean check does not hide later damage: bytes of a table no report
    reads, overwritten with the modification time put back, are still found."""
    import os

    db = tmp_path / "bench.duckdb"
    shutil.copyfile(store / "bench.duckdb", db)
    res = CliRunner().invoke(cli, ["report", "--db", str(db)])
    assert res.exit_code == 0, res.output
    st = db.stat()
    offset = _data_offset(db, table) + 8
    with db.open("r+b") as f:
        f.seek(offset)
        f.write(b"\xa5" * 64)
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns))
    _check(["report", "--db", str(db), "--wait", "5"], str(db))
