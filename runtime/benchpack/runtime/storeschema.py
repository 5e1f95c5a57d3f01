"""The store's migrations, and the check that a file is ours before anything is added to it
(`store.connect` runs them). The format itself (tables, version, blob formats) is
`benchpack.specs.storeformat`, which the reports read too.

Schema changes bump `SCHEMA_VERSION` there and add a migration in `migrate`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchpack.specs.storeformat import SCHEMA_VERSION

from .storecheck import StoreOpenError


def check_ours(con: Any, path: Path) -> None:
    """Never add our tables to another program's database: a store has `meta`, or nothing."""
    tables = sorted(str(r[0]) for r in con.execute(
        "SELECT table_name FROM duckdb_tables() UNION SELECT view_name FROM duckdb_views() "
        "WHERE NOT internal").fetchall())
    if tables and "meta" not in tables:
        shown = ", ".join(tables[:5]) + (", …" if len(tables) > 5 else "")
        raise StoreOpenError(f"{path}: a DuckDB database of another program (tables: {shown}), "
                             "not a benchpack store; pass another --db")


def migrate(con: Any, path: Path) -> None:
    row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
        return
    version = int(row[0])
    if version > SCHEMA_VERSION:
        raise StoreOpenError(f"{path}: store schema {version} is newer than this benchpack "
                             f"({SCHEMA_VERSION}); upgrade benchpack")
    if version < 2:  # 2: tool_calls.tool_group, the device/interface group of the tool
        con.execute("ALTER TABLE tool_calls ADD COLUMN IF NOT EXISTS tool_group VARCHAR")
    if version < 3:  # 3: sessions.error_kind; earlier errors stay unclassified (NULL)
        con.execute("ALTER TABLE sessions ADD COLUMN IF NOT EXISTS error_kind VARCHAR")
    # 4: score_components (named components of `score:` blocks); the DDL above creates it,
    # older sessions simply have no rows
    # 5: `blobs` (created by the DDL) holds large snapshot parts once, snapshots refer to them;
    # older snapshots stay whole and are read as they are. The bump keeps an older benchpack
    # from restoring a reference as a file's content.
    # 6: `llm_call_texts` (created by the DDL): each model call's prompt and reply in `blobs`;
    # older calls have no row and read as "not stored"
    if version < 7:  # 7: tool_calls.side (issue 24: the user's own tool calls); older rows
        # are the agent's
        con.execute("ALTER TABLE tool_calls ADD COLUMN IF NOT EXISTS side VARCHAR")
        con.execute("UPDATE tool_calls SET side = 'agent' WHERE side IS NULL")
    if version < SCHEMA_VERSION:
        con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                    [str(SCHEMA_VERSION)])
