"""`bench query --format csv` ends lines with `\n` on POSIX (issue 10): with `\r\n`,
`$(bench query … | tail -1)` carried an invisible `\r` into the next command."""

from __future__ import annotations

from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.runtime.store import Store


def test_query_csv_lines_end_with_a_plain_newline(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "s.duckdb"
    Store(db).close()
    out = CliRunner().invoke(cli, ["query", "SELECT 'a,b' AS x, 2 AS y UNION ALL "
                                   "SELECT 'c', 3 ORDER BY y", "--db", str(db), "--format",
                                   "csv"])
    assert out.exit_code == 0, out.output
    # bytes: `Result.output` turns \r\n into \n and would hide the defect
    assert out.stdout_bytes == b'x,y\n"a,b",2\nc,3\n'
