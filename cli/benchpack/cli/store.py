"""Store commands: `bench report`, `ratings import`, `query`, `export`, `views` (DuckDB and
the reports load only inside a command)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .params import PackErrors, db_option, emit, wait_option


@click.command()
@click.argument("names", nargs=-1, metavar="[NAME]...")
@db_option
@click.option("--run", "runs", multiple=True, metavar="RUN_ID",
              help="Runs to cover (ids or globs, repeatable; `all`). Default: the latest run.")
@click.option("--by", help="Group by a session label: domain, category, difficulty, persona, "
                           "style, episode, language, protocol, name.")
@click.option("--format", "fmt", type=click.Choice(["table", "md", "html", "json"]),
              default="table", show_default=True)
@click.option("-o", "--out", type=click.Path(path_type=Path),
              help="Write to this file instead of standard output.")
@click.option("--level", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of intervals.")
@click.option("--resamples", type=click.IntRange(100, 100_000), default=2000,
              show_default=True, help="Bootstrap resamples (the κ intervals of `agreement`).")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--exact-bootstrap", "exact_max", type=click.IntRange(0), metavar="N",
              help="agreement: exact percentile bootstrap of κ up to N units (default 500 "
                   "items) and of α up to N sessions (default 400); the normal approximation "
                   "above, which agrees closely at that many (each table says which it used). "
                   "Headline figures use exact intervals.")
@click.option("--humans", is_flag=True,
              help="agreement: each run's judge against the human consensus of imported "
                   "ratings (default: judge against judge).")
@click.option("--min-raters", type=click.IntRange(1), default=1, show_default=True,
              help="agreement --humans: ratings an item needs.")
@click.option("--consensus", type=click.Choice(["median", "majority"]), default="median",
              show_default=True,
              help="agreement --humans: the human consensus of an item: the lower median, or "
                   "the majority vote (ties: Partial, then Pass, then Fail — ProactBench's "
                   "released analysis).")
@click.option("--alpha-ci", type=click.Choice(["widened", "resampled"]), default="widened",
              show_default=True,
              help="agreement: where too few disagreements leave α's interval untrustworthy "
                   "(marked ‡), widen it to take in the disagreement count's interval, or "
                   "print the resampled interval as ProactBench's released analysis does.")
@click.option("--session", "sessions", multiple=True, metavar="NAME",
              help="explain: only these sessions (name, plan id or glob; repeatable).")
@click.option("--limit", type=click.IntRange(0), metavar="N",
              help="cost --by: each run's N costliest groups (the table says how many rows "
                   "it leaves out); 0: all. [default: 20]")
@click.option("--list", "list_", is_flag=True, help="List the available reports.")
@wait_option
def report(names: tuple[str, ...], db: Path, runs: tuple[str, ...], by: str | None, fmt: str,
           out: Path | None, level: float, resamples: int, seed: int, exact_max: int | None,
           humans: bool, min_raters: int, consensus: str, alpha_ci: str,
           sessions: tuple[str, ...],
           limit: int | None, list_: bool, wait_s: float) -> None:
    """Print reports over a run store (default: `summary`; with --format html, all of them)."""
    from benchpack.reports.access import StoreError
    from benchpack.reports.api import ReportOptions, render_report
    from benchpack.reports.registry import NOT_ON_THE_PAGE, UnknownReport, default_reports

    registry = default_reports()
    if list_:
        for r in registry.items():
            click.echo(f"{r.name:14} {r.description}")
        return
    chosen = names or (tuple(n for n in registry.names() if n not in NOT_ON_THE_PAGE)
                       if fmt == "html" else ("summary",))
    options = ReportOptions(db=db, names=chosen, runs=runs, by=by, level=level,
                            resamples=resamples, seed=seed, wait_s=wait_s, exact_max=exact_max,
                            humans=humans, min_raters=min_raters, consensus=consensus,
                            alpha_ci=alpha_ci, sessions=sessions,
                            **({} if limit is None else {"limit": limit}))
    try:
        text = render_report(options, fmt)
    except (StoreError, UnknownReport, ValueError) as exc:
        raise PackErrors(f"✗ {exc}") from None
    emit(text, out)


@click.group()
def ratings() -> None:
    """Human ratings of judged items, for `bench report agreement --humans`."""


@ratings.command(name="import")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--run", "run_id", metavar="RUN_ID",
              help="The run whose judged items were rated (a rejudge stands for its source); "
                   "with --format proactbench and --items, the run to make of them "
                   "[default: proactbench-human-eval]; with --format proactbench alone, the run "
                   "is made of the rated items (no judge labels).")
@click.option("--format", "fmt", type=click.Choice(["csv", "jsonl", "proactbench"]),
              help="File format [default: from the extension]; proactbench: the released "
                   "human_eval results files as they are (a file or their directory).")
@click.option("--items", type=click.Path(path_type=Path), metavar="SAMPLE_ITEMS_JSON",
              help="proactbench: the released sample_items.json; its items and judge labels "
                   "become the run the ratings attach to (no model runs needed).")
@click.option("--rater-field", metavar="COLUMN", help="The column naming the rater.")
@click.option("--field", "fields", multiple=True, metavar="NAME=COLUMN",
              help="Read field NAME (session, repeat, kind, item, rater, label, rationale, "
                   "confidence) from COLUMN (repeatable).")
@db_option
def ratings_import(file: Path, run_id: str | None, fmt: str | None, items: Path | None,
                   rater_field: str | None, fields: tuple[str, ...], db: Path) -> None:
    """Import human ratings from FILE (CSV or JSONL): every row is checked first and every
    problem reported as file:line: message; a file with problems imports nothing."""
    from benchpack.reports.ratings import RatingsError, import_ratings
    from benchpack.runtime.store import StoreOpenError, connect

    mapping = {}
    for item in fields:
        name, sep, column = item.partition("=")
        if not sep or not name or not column:
            raise click.UsageError(f"--field expects NAME=COLUMN, got `{item}`")
        mapping[name.strip()] = column.strip()
    if rater_field:
        mapping["rater"] = rater_field
    if items is not None:
        if fmt != "proactbench":
            raise click.UsageError("--items goes with --format proactbench")
        from benchpack.runtime.imports.proactbench_items import RUN_ID, ItemsError, import_items
        try:
            made = import_items(items, db, run_id or RUN_ID)
        except ItemsError as exc:
            raise PackErrors(f"✗ {exc}") from None
        run_id = made.run_id
        click.echo(f"✓ {items}: {made.items} items in {made.sessions} sessions "
                   f"{'→ new' if made.created else 'in'} run {run_id}", err=True)
    elif run_id is None and fmt == "proactbench":
        # No sample at hand: the rated items alone make the run; α among the raters needs
        # nothing more, and the user is told which figures need the sample's judge labels.
        from benchpack.runtime.imports.proactbench_items import (
            JUDGE_FIGURES,
            RUN_ID,
            ItemsError,
            import_rated_items,
        )
        try:
            made = import_rated_items(file, db, RUN_ID)
        except ItemsError as exc:
            raise PackErrors(f"✗ {exc}") from None
        run_id = made.run_id
        click.echo(f"✓ {file}: {made.items} rated items in {made.sessions} sessions "
                   f"{'→ new' if made.created else 'in'} run {run_id} (no judge labels: "
                   "without --items sample_items.json)", err=True)
        click.echo("! α among the raters needs only the ratings; these need the judge labels "
                   "and trigger types of --items sample_items.json: " + "; ".join(JUDGE_FIGURES),
                   err=True)
    elif run_id is None:
        raise click.UsageError("Missing option '--run' (or --format proactbench, with or "
                               "without --items)")
    if not db.exists():
        raise PackErrors(f"✗ {db}: no such store")
    try:
        con = connect(db)
    except StoreOpenError as exc:
        raise PackErrors(f"✗ {exc}") from None
    try:
        result = import_ratings(con, file, run_id, fmt=fmt, fields=mapping)
    except RatingsError as exc:
        for problem in exc.problems:
            click.echo(click.style(problem.format(), fg="red"), err=True)
        n = len(exc.problems)
        raise PackErrors(f"✗ {file}: {n} problem{'s' if n != 1 else ''}; nothing "
                         "imported") from None
    except ValueError as exc:
        raise PackErrors(f"✗ {exc}") from None
    finally:
        con.close()
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(result.by_kind.items()))
    click.echo(f"✓ {file}: {result.imported} ratings ({kinds}) by {result.raters} rater(s) "
               f"for run {result.run_id}" + (f", {result.replaced} replaced"
                                             if result.replaced else ""), err=True)
    if result.other_models:
        click.echo(f"! {result.other_models} ratings of other models' answers left out (import "
                   "them into those models' runs)", err=True)


@click.command()
@click.argument("sql")
@db_option
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table",
              show_default=True)
@click.option("--limit", type=click.IntRange(1), help="At most this many rows.")
@wait_option
def query(sql: str, db: Path, fmt: str, limit: int | None, wait_s: float) -> None:
    """Run read-only SQL over the store; the report views (`bench views`) are available."""
    from benchpack.reports.access import StoreError
    from benchpack.reports.api import run_query

    try:
        res = run_query(db, sql, wait_s=wait_s, limit=limit)
    except StoreError as exc:
        raise PackErrors(f"✗ {exc}") from None
    if fmt == "json":
        click.echo(json.dumps([dict(zip(res.columns, r, strict=True)) for r in res.rows],
                              indent=2, ensure_ascii=False, default=str))
    elif fmt == "csv":
        import csv
        import io

        buf = io.StringIO()
        # csv's default \r\n would follow a value into `$(bench query … | tail -1)`
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(res.columns)
        writer.writerows(res.rows)
        click.echo(buf.getvalue(), nl=False)
    else:
        import sys

        from benchpack.reports.plain_table import plain_stream, plain_table
        from benchpack.reports.render import terminal_width

        width = terminal_width()
        numeric = [bool(res.rows) and all(isinstance(r[i], int | float) and
                                          not isinstance(r[i], bool) for r in res.rows
                                          if r[i] is not None) for i in range(len(res.columns))]
        cells = [["NULL" if v is None else str(v) for v in r] for r in res.rows]
        # on a pipe or a file, a simple table is drawn as rich would draw it, without
        # importing rich (~40 ms of a command whose target is ~0.2 s)
        plain = plain_table(list(res.columns), numeric, cells, width) \
            if plain_stream(sys.stdout) else None
        if plain is not None:
            text, dropped = plain
            click.echo(text)
        else:
            from rich.console import Console

            from benchpack.reports.render import fitted_table

            table, dropped = fitted_table(list(res.columns), numeric, cells, width)
            Console(width=width, markup=False, highlight=False).print(table)
        click.echo(f"({len(res.rows)} row{'s' if len(res.rows) != 1 else ''})", err=True)
        if dropped:  # rich drew the table (the plain one never drops a column)
            from rich.console import Console

            Console(width=width, stderr=True, markup=False, highlight=False).print(
                f"not shown at {width} columns: {', '.join(dropped)} (a wider terminal, fewer "
                "columns in the SELECT, or --format csv)")


@click.group(invoke_without_command=True)
@db_option
@click.option("-o", "--out", type=click.Path(path_type=Path), default=Path("export"),
              show_default=True, help="Directory to write the files into.")
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default="parquet",
              show_default=True)
@click.option("--no-views", is_flag=True, help="Tables only.")
@wait_option
@click.pass_context
def export(ctx: click.Context, db: Path, out: Path, fmt: str, no_views: bool,
           wait_s: float) -> None:
    """Export every table (and report view) of the store as Parquet or CSV files; `bench
    export tau2-submission RUN…` writes τ²-bench's leaderboard submission instead."""
    if ctx.invoked_subcommand is not None:
        return
    from benchpack.reports.access import StoreError
    from benchpack.reports.api import export_store

    try:
        written = export_store(db, out, fmt, views=not no_views, wait_s=wait_s)
    except (StoreError, ValueError) as exc:
        raise PackErrors(f"✗ {exc}") from None
    click.echo(f"wrote {len(written)} files to {out}", err=True)


@click.command()
@db_option
@click.option("--install", is_flag=True,
              help="Write the views into the store, for the DuckDB CLI and notebooks.")
def views(db: Path, install: bool) -> None:
    """Describe the SQL views reports are built on (and optionally install them)."""
    from benchpack.reports.access import StoreError
    from benchpack.reports.api import install_views_into
    from benchpack.reports.views import describe

    if install:
        try:
            names = install_views_into(db)
        except StoreError as exc:
            raise PackErrors(f"✗ {exc}") from None
        click.echo(f"installed {len(names)} views into {db}", err=True)
    click.echo(describe())
