"""`bench merge` (issue 16 item 3): stores of runs made separately combine into one with the
same rows and report figures; duplicates, overlaps and other schema versions are refused with a
one-line error and no output file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.compiler import compile_pack
from benchpack.runtime.runner import RunOptions, run_plan
from benchpack.runtime.store import SCHEMA_VERSION

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "pibench_case"
AGENT = '''
async def agent(brief, message, event):
    if message and "accepted_papers" in message:
        await brief.tools.call("read_file", {"path": "accepted_papers.txt"})
    return "Noted: " + (message or "event")[:40]
'''


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("merge")
    plan = root / "plan"
    assert compile_pack(CASE, plan, use_cache=False).ok
    (root / "merge_agent.py").write_text(AGENT)
    import sys
    sys.path.insert(0, str(root))
    try:
        def run(db: str, run_id: str) -> None:
            run_plan(RunOptions(plan=plan, agent="python:merge_agent:agent", judge="rules",
                                db=root / db, run_id=run_id, repeats=2, progress=False,
                                cache_dir=root / "cache"))
        run("a.duckdb", "ra")
        run("b.duckdb", "rb")
        run("both.duckdb", "ra")
        run("both.duckdb", "rb")
        run("again.duckdb", "ra")  # the same run id as a.duckdb
    finally:
        sys.path.remove(str(root))
    return {p.stem: p for p in root.glob("*.duckdb")}


def _counts(db: Path) -> dict[str, Any]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE table_name <> 'meta' ORDER BY 1"
        ).fetchall()]
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    finally:
        con.close()


def _bench(*args: str) -> Any:
    res = CliRunner().invoke(cli, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


def test_merged_store_equals_one_store_of_both_runs(stores: dict[str, Path],
                                                    tmp_path: Path) -> None:
    out = tmp_path / "m.duckdb"
    res = _bench("merge", str(stores["a"]), str(stores["b"]), "-o", str(out))
    assert res.exit_code == 0, res.output
    assert "2 runs, 12 session rows" in res.output  # 3 sessions × 2 repeats × 2 runs
    assert _counts(out) == _counts(stores["both"])
    assert _counts(out)["sessions"] == 12
    for run_id in ("ra", "rb"):
        merged = _bench("report", "summary", "--db", str(out), "--run", run_id, "--format",
                        "json")
        single = _bench("report", "summary", "--db", str(stores["both"]), "--run", run_id,
                        "--format", "json")
        assert merged.exit_code == 0, merged.output
        assert merged.output == single.output


@pytest.mark.parametrize("case, message", [
    ("duplicate", "run `ra` is also in"),
    ("self", "already exists"),
    ("schema", f"store schema {SCHEMA_VERSION + 1}, this benchpack writes {SCHEMA_VERSION}"),
    ("missing", "no such store"),
])
def test_refusals_are_one_line_and_write_nothing(stores: dict[str, Path], tmp_path: Path,
                                                 case: str, message: str) -> None:
    out = tmp_path / "m.duckdb"
    args = [str(stores["a"]), str(stores["again"])]
    if case == "self":
        out.write_bytes(b"")
        args = [str(stores["a"])]
    elif case == "schema":
        old = tmp_path / "old.duckdb"
        old.write_bytes(stores["b"].read_bytes())
        con = duckdb.connect(str(old))
        con.execute(f"UPDATE meta SET value = '{SCHEMA_VERSION + 1}' "
                    "WHERE key = 'schema_version'")
        con.close()
        args = [str(stores["a"]), str(old)]
    elif case == "missing":
        args = [str(stores["a"]), str(tmp_path / "nope.duckdb")]
    res = _bench("merge", *args, "-o", str(out))
    assert res.exit_code == 1, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("✗ ") and message in lines[0], res.output
    assert (out.exists() and out.read_bytes() == b"") if case == "self" else not out.exists()


def test_an_older_store_is_migrated_in_a_copy_and_left_as_it_was(stores: dict[str, Path],
                                                                  tmp_path: Path) -> None:
    """A store of schema 5 (before `llm_call_texts`) merges: its copy is migrated the way the
    store migrates itself, the input file is not touched, and every run row arrives."""
    old = tmp_path / "v5.duckdb"
    old.write_bytes(stores["b"].read_bytes())
    con = duckdb.connect(str(old))
    con.execute("DROP TABLE llm_call_texts")
    con.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    con.close()
    before = old.read_bytes()
    out = tmp_path / "m.duckdb"
    res = _bench("merge", str(stores["a"]), str(old), "-o", str(out))
    assert res.exit_code == 0, res.output
    assert old.read_bytes() == before
    con = duckdb.connect(str(out), read_only=True)
    try:
        merged = con.execute("SELECT run_id, count(*) FROM sessions GROUP BY ALL "
                             "ORDER BY ALL").fetchall()
        version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    finally:
        con.close()
    con = duckdb.connect(str(stores["b"]), read_only=True)
    try:
        want_b = con.execute("SELECT run_id, count(*) FROM sessions GROUP BY ALL").fetchall()
    finally:
        con.close()
    assert set(want_b) <= set(merged) and len(merged) == 2
    assert version == (str(SCHEMA_VERSION),)
