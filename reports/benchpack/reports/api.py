"""The library behind `bench report`, `bench query`, `bench export` and `bench views`."""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchpack.specs.secrets import MASK, Redactor
from benchpack.specs.storefile import damage_reason, duckdb_core
from benchpack.specs.storeformat import EXPORTED_TABLES as TABLES

from .access import (
    LOCKED,
    SharedReader,
    StoreError,
    check_complete,
    damaged,
    existing_store,
    open_store,
    select_runs,
)
from .views import VIEW_NAMES, StoreVersionError, install_views, plugin_views, store_schema

if TYPE_CHECKING:  # the reports and their statistics load only for `bench report`, so that
    # `bench query` starts in little more than DuckDB's own import time
    from .model import ReportResult
    from .registry import ReportRegistry



DEFAULT_LIMIT = 20
"""`bench report --limit`'s default."""


@dataclass
class ReportOptions:
    db: str | Path
    names: Sequence[str] = ("summary",)
    runs: Sequence[str] = ()
    """Run ids or globs; `all`; empty: the latest run."""
    by: str | None = None
    level: float = 0.95
    resamples: int = 2000
    seed: int = 0
    wait_s: float = 30.0
    exact_max: int | None = None
    """Exact bootstrap up to this many units (default `builtin.BOOTSTRAP_EXACT_MAX`), the
    normal approximation above."""
    humans: bool = False
    """`agreement`: judge against human consensus instead of judge against judge."""
    min_raters: int = 1
    consensus: str = "median"
    """`agreement --humans`: `median` or `majority` (ProactBench's released analysis)."""
    alpha_ci: str = "widened"
    """`agreement`: α's interval where `stats.alpha_caution` fires, `widened` or `resampled`
    (`ReportContext.alpha_ci`)."""
    sessions: Sequence[str] = ()
    """`explain`: session names or plan ids (globs); empty: every session of the runs."""
    limit: int = DEFAULT_LIMIT
    """Long tables (`cost --by`): at most this many rows per run, the table saying how many
    it leaves out; 0: all."""


def build_reports(options: ReportOptions, registry: ReportRegistry | None = None
                  ) -> list[ReportResult]:
    with open_store(options.db, wait_s=options.wait_s, verify=True) as con:
        return _build(con, select_runs(con, list(options.runs)), options, registry)


def _build(con: Any, runs: list[str], options: ReportOptions,
           registry: ReportRegistry | None = None) -> list[ReportResult]:
    from .builtin import ReportContext
    from .comparability import mixed_note
    from .inventory import inventory_note
    from .origin import origin_notes
    from .registry import default_reports

    registry = registry or default_reports()
    out = []
    # what every report over these runs carries is read once: the HTML page of 14 reports
    # read the inventory, the origins, the comparability and the run labels 14 times (~0.05 s
    # each on 1 M turns)
    inventory: str | None = None
    previous: ReportContext | None = None  # its run labels, once read, serve the next
    origins = origin_notes(con, runs)
    mixed = mixed_note(con, runs)  # figures side by side that differ not only by agent
    for name in options.names:
        report = registry.get(name)
        ctx = ReportContext(con, runs, options.by, options.level, options.resamples,
                            options.seed, options.humans, options.min_raters)
        if options.exact_max is not None:
            ctx.exact_max = options.exact_max
        ctx.consensus = options.consensus
        ctx.alpha_ci = options.alpha_ci
        ctx.sessions = list(options.sessions)
        ctx.db = options.db
        ctx.limit = options.limit
        if previous is not None:
            ctx.share_labels(previous)
        result = report.build(ctx)
        previous = ctx
        if result.name != "inventory" and runs:  # no report shrinks a denominator silently
            inventory = inventory or inventory_note(ctx)
            result.notes.append(inventory)
        result.store = str(options.db)
        # whether each run is comparable with the published benchmark its pack reproduces
        result.notes[:0] = origins
        if mixed:
            result.notes.insert(0, mixed)
        out.append(result)
    return out


def render_report(options: ReportOptions, fmt: str = "table") -> str:
    """Build the named reports and render them in one document (HTML: one page with the
    sessions' transcripts, `html.render_page`, read on the same connection)."""
    from .render import render

    if fmt == "html":
        from .html import render_page

        with open_store(options.db, wait_s=options.wait_s, verify=True) as con:
            return render_page(_build(con, select_runs(con, list(options.runs)), options),
                               con)
    results = build_reports(options)
    if fmt == "json" and len(results) > 1:
        from .render import dumps_rows

        return dumps_rows([json.loads(render(r, "json")) for r in results]) + "\n"
    return "\n".join(render(r, fmt) for r in results)


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]


class QueryHandle:
    """Stops a running `run_query` from another thread (`bench view`: its time limit, its
    client gone, SIGTERM): `stop(why)` interrupts the query (DuckDB checks between vectors,
    so within milliseconds) and `run_query` raises `StoreError("query stopped: why")`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._con: Any = None
        self.stopped: str | None = None

    def started(self, con: Any) -> None:
        with self._lock:
            self._con = con
            if self.stopped is not None:
                con.interrupt()

    def finished(self) -> None:
        with self._lock:
            self._con = None

    def stop(self, why: str) -> None:
        with self._lock:
            if self.stopped is None:
                self.stopped = why
            if self._con is not None:
                self._con.interrupt()


def run_query(db: str | Path, sql: str, *, wait_s: float = 30.0, limit: int | None = None,
              handle: QueryHandle | None = None, reader: SharedReader | None = None
              ) -> QueryResult:
    """Run one SQL statement on a read-only connection with the report views installed, with
    no access to files, extensions or settings (`access.LOCKED`). `handle` lets another
    thread stop it; `reader`: the process's shared connections to `db` (`bench view`),
    opened with `LOCKED`."""
    duckdb = duckdb_core()

    if not sql.strip():
        raise StoreError("the query is empty; pass one SQL statement, e.g. "
                         "`bench query \"SELECT * FROM runs\"`")
    # creating the views costs more than most queries: only when the query names one
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql.lower()))
    views = bool(words & set(VIEW_NAMES))
    with contextlib.ExitStack() as stack:
        try:
            con = stack.enter_context(
                reader.connection(views=views) if reader is not None else
                open_store(db, wait_s=wait_s, views=views, config=LOCKED))
        except StoreError:
            _one_statement(duckdb, sql)  # a mistake in the SQL is said first, store or not
            raise
        # parsed by the store's connection: DuckDB's module-level parser opens an in-memory
        # database of its own first (~12 ms of `bench query`'s ~130)
        _one_statement(con, sql)
        try:
            if handle is not None:
                handle.started(con)
            try:
                cur = con.execute(sql)
            except duckdb.CatalogException:
                # a plug-in protocol's view, which VIEW_NAMES cannot list: the views are
                # installed only when the query names something missing and the store holds
                # sessions of a plug-in that has views (`views.plugin_views`)
                if views or not plugin_views(con):
                    raise
                install_views(con)
                cur = con.execute(sql)
            if cur.description is None:
                return QueryResult([], [])
            columns = [d[0] for d in cur.description]
            # converting values can fail too (e.g. a TIMESTAMPTZ without pytz installed)
            rows = cur.fetchmany(limit) if limit else cur.fetchall()
        except duckdb.Error as exc:
            if damage_reason(exc):  # `open_store` says so, in its words
                raise
            if handle is not None and handle.stopped is not None:
                raise StoreError(f"query stopped: {handle.stopped}") from None
            text = str(exc)
            hint = (" (`bench query` only reads)" if "read-only mode" in text else
                    " (`bench query` reads only the store: no other files, no extensions, no "
                    "settings; for more, `bench export` and use DuckDB on the export)"
                    if "disabled by configuration" in text or "has been locked" in text
                    else "")
            raise StoreError(f"query failed: {text.splitlines()[0] if hint else text}"
                             f"{hint}") from None
        finally:
            if handle is not None:
                handle.finished()
        return QueryResult(columns, [tuple(r) for r in rows])


def _one_statement(parser: Any, sql: str) -> None:
    """A `StoreError` unless `sql` parses (by `parser`, DuckDB or one of its connections) as
    exactly one statement."""
    try:
        statements = len(parser.extract_statements(sql))
    except duckdb_core().Error as exc:
        raise StoreError(f"query failed: {exc}") from None
    if statements > 1:
        raise StoreError(f"the query has {statements} statements; `bench query` runs one "
                         "(its result is the table shown)")


def export_store(db: str | Path, out: str | Path, fmt: str = "parquet", *,
                 views: bool = True, wait_s: float = 30.0) -> list[Path]:
    """Write every table (and view) of the store to `out/<name>.<fmt>`."""
    import duckdb

    if fmt not in ("parquet", "csv"):
        raise ValueError("format must be parquet or csv")
    target = Path(out)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"-o {target}: cannot create the directory "
                         f"({exc.strerror or exc})") from None
    written = []
    with open_store(db, wait_s=wait_s) as con:
        present = {str(r[0]) for r in con.execute(
            "SELECT table_name FROM duckdb_tables() UNION ALL SELECT view_name FROM "
            "duckdb_views()").fetchall()}
        names = [n for n in (*TABLES, *(VIEW_NAMES if views else ())) if n in present]
        redactor = Redactor.from_environment()
        for name in names:
            path = target / f"{name}.{fmt}"
            options = "(FORMAT parquet)" if fmt == "parquet" else "(FORMAT csv, HEADER true)"
            literal = str(path).replace("'", "''")
            try:
                con.execute(f"COPY ({_masked_select(con, name, redactor)}) TO '{literal}' "
                            f"{options}")
            except duckdb.Error as exc:
                if damage_reason(exc):  # not the output's fault: `open_store` says so
                    raise
                raise ValueError(f"-o {target}: cannot write {path.name} "
                                 f"({str(exc).splitlines()[0]})") from None
            written.append(path)
    return written


def _masked_select(con: Any, name: str, redactor: Redactor) -> str:
    """`SELECT * FROM name`, with every secret of this environment masked in its text columns
    (`specs.secrets`, in SQL: a store written by an older benchpack, or under other variables,
    may hold one). The forms are SQL literals of this statement only, never stored."""
    if not redactor:
        return f"SELECT * FROM {name}"
    picks = []
    for column, sql_type in con.execute(f"SELECT column_name, column_type FROM "
                                        f"(DESCRIBE {name})").fetchall():
        quoted = '"' + str(column).replace('"', '""') + '"'
        if sql_type not in ("VARCHAR", "JSON"):
            picks.append(quoted)
            continue
        expr = f"CAST({quoted} AS VARCHAR)"
        for form in redactor.forms:  # longest first, as the Redactor masks
            expr = f"replace({expr}, '{form.replace(chr(39), chr(39) * 2)}', '{MASK}')"
        picks.append(f"CAST({expr} AS {sql_type}) AS {quoted}")
    return f"SELECT {', '.join(picks)} FROM {name}"


def install_views_into(db: str | Path) -> list[str]:
    """Persist the report views into the store (for the DuckDB CLI and notebooks)."""
    import duckdb

    path = existing_store(db)
    try:
        con = duckdb.connect(str(path))
    except duckdb.Error as exc:
        why = damage_reason(exc)
        if why is not None:
            raise damaged(path, why) from None
        raise StoreError(f"{path}: cannot open: {str(exc).splitlines()[0]}") from None
    try:
        check_complete(con, path)
        store_schema(con)
        return install_views(con, temporary=False)
    except StoreVersionError as exc:
        raise StoreError(f"{path}: {exc}") from None
    except duckdb.Error as exc:
        why = damage_reason(exc)
        if why is None:
            raise
        raise damaged(path, why) from None
    finally:
        con.close()
