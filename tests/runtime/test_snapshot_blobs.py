"""Episode snapshots keep large unchanged content once per store (content-addressed `blobs`),
not once per session × repeat; `--resume` restores exactly what was saved; stores written before
the `blobs` table (schema 2) still resume."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.compiler import compile_pack
from benchpack.runtime.store import SCHEMA_VERSION, SessionRows, Store

MARKER = "MARKER-7f3a"  # occurs once in the fixture

PACK = """\
name: blobs
personas: [{id: p, profile: {role: r}}]
services:
  - name: crm
    tables:
      leads:
        key: lid
        fixture: leads.jsonl
    operations:
      - {name: find, kind: list, table: leads}
environments:
  - id: env
    services: [crm]
    files: [{path: notes.txt, source: notes.txt}]
episodes:
  - id: e
    persona: p
    environment: env
    sessions:
      - {id: s1, protocol: verified_outcome, request: one, checklist: [{text: ok}]}
      - {id: s2, protocol: verified_outcome, request: two, checklist: [{text: ok}], depends_on: [s1]}
      - {id: s3, protocol: verified_outcome, request: three, checklist: [{text: ok}], depends_on: [s2]}
"""


def _pack(root: Path, rows: int = 4000) -> Path:
    pack = root / "pack"
    pack.mkdir()
    (pack / "pack.yaml").write_text(PACK, encoding="utf-8")
    lines = [json.dumps({"lid": f"L-{i}", "note": f"row {i} " + "lorem ipsum " * 40
                         + (MARKER if i == rows // 2 else "")}) for i in range(rows)]
    (pack / "leads.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (pack / "notes.txt").write_text("notes " * 20000 + MARKER + "\n", encoding="utf-8")
    assert compile_pack(pack, root / "build", use_cache=False).ok
    (root / "agent.yaml").write_text('default:\n  - say: "Done."\n', encoding="utf-8")
    return root / "build"


def _run(root: Path, db: Path, *extra: str) -> None:
    res = CliRunner().invoke(cli, ["run", str(root / "build"), "--agent",
                                   f"scripted:{root / 'agent.yaml'}", "--db", str(db),
                                   "--quiet", "--cache-dir", str(root / "cache"), *extra])
    assert res.exit_code == 0, (res.output, res.exception)


def _marker_count(db: Path) -> int:
    """How many copies of the fixture's marker row and of the workspace file the store holds."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        n = con.execute("SELECT sum(len(string_split(state::VARCHAR, ?)) - 1) FROM snapshots",
                        [MARKER]).fetchone()[0] or 0
        if "blobs" in tables:
            n += con.execute("SELECT sum(len(string_split(data, ?)) - 1) FROM blobs",
                             [MARKER]).fetchone()[0] or 0
        return int(n)
    finally:
        con.close()


def test_three_sessions_two_repeats_store_the_fixture_once(tmp_path: Path) -> None:
    _pack(tmp_path)
    db = tmp_path / "bench.duckdb"
    _run(tmp_path, db, "--repeats", "2", "--run-id", "r")
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM snapshots").fetchone() == (6,)
    con.close()
    # the marker is in one fixture row and in one workspace file: 2 copies, not 2 × 6
    assert _marker_count(db) == 2
    # a second run into the same store adds no copy of unchanged content
    _run(tmp_path, db, "--repeats", "2", "--run-id", "r2")
    assert _marker_count(db) == 2


def test_snapshots_come_back_exactly(tmp_path: Path) -> None:
    """What `Store.snapshot` returns is what was saved, with large parts restored from blobs
    (a file that looks like a reference stays a file)."""
    db = tmp_path / "bench.duckdb"
    big = "x" * 100_000
    state = {"version": 1, "environment": "env",
             "files": {"a.txt": big, "b.txt": "small", "c.json": '{"$blob": "abc"}',
                       "d.txt": big},
             "services": {"crm": {"leads": [{"lid": "L-1", "note": big}], "empty": []}},
             "counters": {"crm": {"leads": 1}}, "outbox": [{"to": "x", "body": big}],
             "asked": ["q"]}
    store = Store(db)
    try:
        store.write_now(SessionRows("r", "s1", 0, {"run_id": "r", "session_id": "s1",
                                                   "repeat": 0}, snapshot=("e", state)))
        store.write_now(SessionRows("r", "s2", 0, {"run_id": "r", "session_id": "s2",
                                                   "repeat": 0}, snapshot=("e", state)))
        assert store.snapshot("r", "e", 0, "s1") == state
        assert store.snapshot("r", "e", 0, "s2") == state
        # rewriting a session (a rerun) keeps the blobs other snapshots use
        store.write_now(SessionRows("r", "s1", 0, {"run_id": "r", "session_id": "s1",
                                                   "repeat": 0}, snapshot=("e", state)))
        assert store.snapshot("r", "e", 0, "s2") == state
        blobs = store.con.execute("SELECT count(*), sum(length(data)) FROM blobs").fetchone()
        # one file content (a.txt and d.txt are equal), the rows and the outbox: once each
        assert blobs[0] == 3 and blobs[1] < 3 * len(big) + 100
    finally:
        store.close()


def test_a_schema_2_store_resumes(tmp_path: Path) -> None:
    """Snapshots written whole by an older benchpack are read as they are."""
    db = tmp_path / "bench.duckdb"
    state = {"version": 1, "environment": "env", "files": {"a.txt": "y" * 50_000},
             "services": {}, "counters": {}, "outbox": [], "asked": []}
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    con.execute("CREATE TABLE snapshots (run_id VARCHAR, episode VARCHAR, repeat INTEGER, "
                "session_id VARCHAR, state JSON, PRIMARY KEY (run_id, episode, repeat, "
                "session_id))")
    con.execute("INSERT INTO snapshots VALUES ('r', 'e', 0, 's1', ?)", [json.dumps(state)])
    con.close()
    store = Store(db)
    try:
        assert store.snapshot("r", "e", 0, "s1") == state
        version = store.con.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                                    ).fetchone()[0]
        assert version == str(SCHEMA_VERSION)  # migrated through every version since
    finally:
        store.close()


def test_frozen_rows_are_written_byte_for_byte_as_a_plain_list() -> None:
    # issue 31: a service's live rows (FrozenRows) are written from each row's kept JSON; the
    # stored text and blobs are exactly those of the same rows as a plain list
    from benchpack.runtime.snapblobs import FrozenRows, split_state

    rows = [{"id": f"#W{i:07d}", "price": i / 3, "name": "订单 é", "items": [i, None, True]}
            for i in range(300)]
    for shown in (rows, rows[:1], []):
        plain = {"services": {"s": {"t": list(shown)}}, "files": {}}
        frozen = {"services": {"s": {"t": FrozenRows(shown)}}, "files": {}}
        assert split_state(frozen, str.upper) == split_state(plain, str.upper)
    again = FrozenRows([*rows[:5], {**rows[5], "price": 1.5}, *rows[6:]])
    assert split_state({"services": {"s": {"t": again}}}, str) == \
        split_state({"services": {"s": {"t": list(again)}}}, str)
