"""`bench`: thin commands over the library. Exceptions map to exit codes in one place (`main`).

Exit codes: 0 success, 1 the pack (or run) has errors, 2 usage errors, 3 internal errors.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from benchpack.compiler import CompileResult, Diagnostic, compile_pack, graph_pack, init_pack
from benchpack.compiler import validate_pack as _validate


class PackErrors(click.ClickException):
    exit_code = 1

    def show(self, file: Any = None) -> None:  # diagnostics were already printed
        if self.message:
            click.echo(self.message, err=True)


# options declared once, shared by commands
pack_argument = click.argument("pack", type=click.Path(path_type=Path), default=".")
strict_option = click.option("--strict", is_flag=True,
                             help="Treat lint warnings as errors.")
format_option = click.option("--format", "fmt", type=click.Choice(["text", "json"]),
                             default="text", show_default=True,
                             help="Diagnostics as text lines or JSON.")
graph_grader_option = click.option(
    "--graph-grader", type=click.Choice(["auto", "llm", "match"]), default="auto",
    show_default=True, help="Knowledge-graph grading: LLM coverage judge or normalised matching "
                            "(auto: match with --judge rules).")
quiet_option = click.option("--quiet", is_flag=True, help="No progress bar.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
_LLM_CLIENT_OPTIONS = (
    click.option("--max-per-model", type=click.IntRange(1, 1024), default=8, show_default=True,
                 help="Concurrent requests per model endpoint."),
    click.option("--rpm", multiple=True, metavar="MODEL=N",
                 help="Requests-per-minute limit for a model (repeatable)."),
    click.option("--api-base", help="Base URL of an OpenAI-compatible server for litellm models."),
    click.option("--api-key-env", metavar="VAR",
                 help="Environment variable holding the API key (the key is never stored)."),
    click.option("--timeout", type=click.FloatRange(0, min_open=True), default=120.0,
                 show_default=True,
                 help="Per-request timeout for LLM calls, seconds."),
    click.option("--max-retries", type=click.IntRange(0, 20), default=4, show_default=True,
                 help="Retries of retryable provider errors (429, 5xx, timeouts)."),
    click.option("--no-cache", is_flag=True, help="Do not read or write the response cache."),
    click.option("--cache-dir", type=click.Path(path_type=Path), default=Path(".bench-cache"),
                 show_default=True),
)


def llm_client_options(f: Any) -> Any:
    """The LLM client options every command that calls models shares (`_client_settings`)."""
    for option in reversed(_LLM_CLIENT_OPTIONS):
        f = option(f)
    return f


def _client_settings(max_per_model: int, rpm: tuple[str, ...], api_base: str | None,
                     api_key_env: str | None, timeout: float, max_retries: int, no_cache: bool,
                     cache_dir: Path) -> dict[str, Any]:
    """`llm_client_options` as `runner.ClientOptions` fields."""
    limits = {}
    for item in rpm:
        model, _, n = item.rpartition("=")
        try:
            limits[model] = float(n)
        except ValueError:
            limits[model] = 0.0
        if not model or not limits[model] > 0:  # also rejects nan
            raise click.UsageError(f"--rpm expects MODEL=N with N > 0, got `{item}`")
    if api_key_env and not os.environ.get(api_key_env):  # else every call fails, after retries
        raise click.UsageError(f"--api-key-env {api_key_env}: that environment variable is "
                               "not set (or empty)")
    return {"max_concurrent_per_model": max_per_model, "requests_per_minute": limits,
            "api_base": api_base, "api_key_env": api_key_env, "timeout_s": timeout,
            "max_retries": max_retries, "use_cache": not no_cache, "cache_dir": cache_dir}


def _print_diagnostics(diags: list[Diagnostic], fmt: str) -> None:
    if fmt == "json":
        click.echo(json.dumps([d.as_dict() for d in diags], indent=2, ensure_ascii=False))
        return
    for d in diags:
        colour = "red" if d.severity == "error" else "yellow"
        click.echo(click.style(d.format(), fg=colour), err=True)


def _note_internal_error(result: CompileResult) -> None:
    if result.internal_error:  # the pack's errors were reported; some later checks were not
        click.echo(f"note: some checks were skipped after an internal error "
                   f"({result.internal_error}); please report it", err=True)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _summary(result: CompileResult, strict: bool) -> str:
    e, w = len(result.errors), len(result.warnings)
    parts = []
    if e:
        parts.append(_count(e, "error"))
    if w:
        parts.append(_count(w, "warning") + (" (errors under --strict)" if strict else ""))
    return ", ".join(parts) if parts else "no problems"


class _Bench(click.Group):
    """The `bench` group: a file-system error on a path (an output directory that cannot be
    created, a file where a directory should be) is the user's to fix, in every command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["benchpack.argv"] = list(args)  # as typed: `bench run` repeats it on Ctrl-C
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.filename is None:  # not about a path: a bug (or a broken pipe, see `main`)
                raise
            why = ("exists and is not a directory" if isinstance(exc, FileExistsError)
                   else exc.strerror or str(exc))
            raise PackErrors(f"✗ {exc.filename}: {why} (check the path and its permissions)"
                             ) from None


@click.group(cls=_Bench, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="benchpack", prog_name="bench")
def cli() -> None:
    """benchpack: compile task packs into session plans, run them against agents, report."""


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path), default=".")
@click.option("--name", help="Pack name (default: the directory name).")
@click.option("--force", is_flag=True, help="Overwrite existing files.")
def init(directory: Path, name: str | None, force: bool) -> None:
    """Scaffold a commented starter pack in DIRECTORY."""
    try:
        written = init_pack(directory, name, force=force)
    except FileExistsError as exc:
        raise click.UsageError(f"would overwrite {exc}; pass --force to replace") from None
    for p in written:
        click.echo(f"wrote {p}")
    click.echo(f"next: bench validate {directory}  &&  bench compile {directory} -o build/")


@cli.command()
@pack_argument
@strict_option
@format_option
@click.option("--fix", is_flag=True,
              help="Apply the unambiguous fixes (marked [fixable]) in place, keeping comments "
                   "and formatting; then check again.")
@click.option("--dry-run", is_flag=True, help="With --fix: print the diff, write nothing.")
def validate(pack: Path, strict: bool, fmt: str, fix: bool, dry_run: bool) -> None:
    """Check PACK (a directory with pack.yaml, or the file) and report every problem."""
    if fix or dry_run:
        _validate_fix(pack, strict, fmt, dry_run)
        return
    result = _validate(pack, strict=strict)
    _print_diagnostics(result.diagnostics, fmt)
    _note_internal_error(result)
    failed = bool(result.errors) or (strict and result.warnings)
    if fmt == "text":
        click.echo(("✗ " if failed else "✓ ") + f"{pack}: {_summary(result, strict)}", err=True)
    if failed:
        raise PackErrors("")


def _validate_fix(pack: Path, strict: bool, fmt: str, dry_run: bool) -> None:
    from benchpack.compiler.fix import fix_pack  # ruamel.yaml loads only when fixing

    report = fix_pack(pack, dry_run=dry_run, strict=strict)
    result = report.result
    assert result is not None
    failed = bool(result.errors) or (strict and bool(result.warnings))
    if fmt == "json":
        click.echo(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        for diff in report.diffs.values() if dry_run else ():
            click.echo(diff, nl=False)
        for f in report.fixed:
            click.echo(click.style(f.format(dry_run), fg="green"), err=True)
        for f in report.manual:
            click.echo(click.style(f.format(), fg="magenta"), err=True)
        # in a dry run nothing changed: show only what the fixes would not resolve
        covered = {(f.file, f.path) for f in report.fixed} if dry_run else set()
        _print_diagnostics([d for d in result.diagnostics if (d.file, d.path) not in covered],
                           fmt)
        _note_internal_error(result)
        n, by_hand = len(report.fixed), len(report.manual)
        if dry_run:
            done = f"--fix would fix {n}" + (f", {by_hand} need you" if by_hand else "")
            line = f"{_summary(result, strict)}; {done} (dry run: nothing written)"
        else:
            files = len(report.written)
            line = (f"fixed {n} in {files} file{'s' if files != 1 else ''}"
                    + (f", {by_hand} to fix by hand" if by_hand else "")
                    + f"; {_summary(result, strict)}")
        click.echo(("✗ " if failed else "✓ ") + f"{pack}: {line}", err=True)
    if failed:
        raise PackErrors("")


@cli.command(name="compile")
@pack_argument
@click.option("-o", "--out", type=click.Path(path_type=Path), default=Path("build"),
              show_default=True, help="Output directory for plan.json.")
@click.option("--ablation", is_flag=True,
              help="Also emit each dependency group's final session without its dependencies.")
@click.option("--no-cache", is_flag=True, help="Ignore the compile cache.")
@strict_option
@format_option
def compile_cmd(pack: Path, out: Path, ablation: bool, no_cache: bool, strict: bool,
                fmt: str) -> None:
    """Compile PACK into OUT/plan.json."""
    result = compile_pack(pack, out, ablation=ablation, strict=strict, use_cache=not no_cache)
    _print_diagnostics(result.diagnostics, fmt)
    _note_internal_error(result)
    if not result.ok:
        click.echo(f"✗ {pack}: {_summary(result, strict)}; nothing written", err=True)
        raise PackErrors("")
    plan = result.load_plan() or {}
    n = len(plan.get("sessions", {}))
    note = " (unchanged, from cache)" if result.cached else ""
    click.echo(f"✓ {out / 'plan.json'}: {_count(n, 'session')}, "
               f"{_count(len(plan.get('groups', [])), 'dependency group')}, "
               f"{_summary(result, strict)}{note}", err=True)


@cli.command()
@pack_argument
@click.option("--format", "fmt", type=click.Choice(["text", "mermaid", "dot"]), default="text",
              show_default=True)
@click.option("--ablation", is_flag=True, help="Include without-dependencies variants.")
def graph(pack: Path, fmt: str, ablation: bool) -> None:
    """Show PACK's episodes, sessions and dependencies."""
    text, result = graph_pack(pack, fmt, ablation=ablation)
    if text is None:
        _print_diagnostics(result.diagnostics, "text")
        raise PackErrors("")
    click.echo(text, nl=False)


@cli.command()
@click.option("-o", "--out", type=click.Path(path_type=Path), default=Path("schemas"),
              show_default=True, help="Directory to write the JSON Schemas into.")
@click.option("--check", is_flag=True, help="Exit non-zero if the files differ (for CI).")
def schema(out: Path, check: bool) -> None:
    """Write the JSON Schemas of packs, included files and plans."""
    from benchpack.specs.schema import json_schemas, render_schema

    stale = []
    for name, body in json_schemas().items():
        text = render_schema(body)
        path = out / name
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
            continue
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        click.echo(f"wrote {path}")
    if stale:
        raise PackErrors("out of date: " + ", ".join(stale) + " (run `bench schema`)")


@cli.command()
@click.argument("plan", type=click.Path(path_type=Path), default=Path("build"))
@click.option("--agent", required=True, metavar="URI",
              help="litellm:<model> | cmd:<command> | python:<module>:<callable> | "
                   "scripted:<file> | replay:<file>")
@click.option("--simulator", metavar="URI",
              help="User simulator: rules | scripted:<file> | litellm:<model> "
                   "[default: the pack's defaults.models, else rules]")
@click.option("--judge", metavar="URI",
              help="Judges: rules | scripted:<file> | litellm:<model> "
                   "[default: the pack's defaults.models, else rules]")
@click.option("--planner", metavar="URI",
              help="Trigger-rubric planner (live mode) [default: the pack's, else --simulator]")
@click.option("--trigger-mode", type=click.Choice(["auto", "live", "offline"]), default="auto",
              show_default=True,
              help="Trigger rubrics: live planner+user agent, or offline re-scoring of a fixed "
                   "dialogue (auto: offline when one is available).")
@click.option("--dialogue-from", metavar="RUN_ID",
              help="Offline trigger rubrics: replay the dialogues of this earlier run.")
@graph_grader_option
@click.option("--db", type=click.Path(path_type=Path), default=Path("bench.duckdb"),
              show_default=True, help="DuckDB file to store the run in.")
@click.option("--run-id", help="Name the run (default: <pack>-<time>-<hash>).")
@click.option("--resume", "resume_id", metavar="RUN_ID",
              help="Continue RUN_ID: skip finished (session, fingerprint, repeat) triples.")
@click.option("--repeats", type=click.IntRange(1, 100), help="Repeats per session (pass@k).")
@click.option("--max-concurrency", type=click.IntRange(1, 1024), default=4, show_default=True,
              help="Episode chains run at once.")
@llm_client_options
@click.option("--session", "sessions", multiple=True, metavar="GLOB",
              help="Only run matching sessions (id or name; repeatable), and the sessions "
                   "they depend on.")
@click.option("--alone", is_flag=True,
              help="With --session: run the matching sessions without their dependencies "
                   "(marked `alone` in the store and reported apart).")
@click.option("--allow-python", is_flag=True, help="Allow python graders and tools from the pack.")
@quiet_option
@json_option
def run(plan: Path, agent: str, simulator: str | None, judge: str | None, planner: str | None,
        trigger_mode: str, dialogue_from: str | None, graph_grader: str, db: Path,
        run_id: str | None, resume_id: str | None, repeats: int | None, max_concurrency: int,
        sessions: tuple[str, ...], alone: bool, allow_python: bool, quiet: bool,
        as_json: bool, **client: Any) -> None:
    """Run a compiled PLAN (directory with plan.json) against an agent."""
    from benchpack.runtime import PlanError
    from benchpack.runtime.runner import RunInterrupted, RunOptions, run_plan

    options = RunOptions(
        plan=plan, agent=agent, simulator=simulator, judge=judge, planner=planner,
        trigger_mode=trigger_mode, dialogue_from=dialogue_from, graph_grader=graph_grader, db=db,
        run_id=resume_id or run_id, resume=resume_id is not None, repeats=repeats,
        max_concurrency=max_concurrency, sessions=list(sessions), alone=alone,
        allow_python=allow_python,
        progress=not quiet and not as_json, **_client_settings(**client))
    if alone and not sessions:
        raise PackErrors("✗ --alone: it runs the --session matches without their "
                         "dependencies (name the sessions with --session)")
    try:
        summary = run_plan(options)
    except (PlanError, ValueError) as exc:
        raise PackErrors(f"✗ {exc}") from None
    except RunInterrupted as exc:
        click.echo(f"✗ {exc}; it is marked `interrupted` in {exc.db} (continue it with the "
                   "command below)", err=True)
        click.echo(_resume_command(exc.run_id), err=True)
        sys.exit(130)
    _finish(summary, as_json)


def _resume_command(run_id: str) -> str:
    """The `bench run` command as the user typed it, continuing `run_id` (`--run-id` and
    `--resume` replaced by `--resume run_id`)."""
    args = click.get_current_context().meta.get("benchpack.argv") or ["run"]
    args = args[args.index("run") + 1:] if "run" in args else []
    kept: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in ("--run-id", "--resume"):
            skip = True
        elif not a.startswith(("--run-id=", "--resume=")):
            kept.append(a)
    return shlex.join(["bench", "run", *kept, "--resume", run_id])


db_option = click.option("--db", type=click.Path(path_type=Path), default=Path("bench.duckdb"),
                         show_default=True, help="The run store (DuckDB file).")
wait_option = click.option("--wait", "wait_s", type=float, default=30.0, show_default=True,
                           help="Seconds to wait for a running `bench run` to let go of the "
                                "store.")


@cli.command()
@click.argument("run_id")
@click.option("--judge", required=True, metavar="URI",
              help="The new judge: rules | scripted:<file> | litellm:<model>")
@click.option("--as", "new_run_id", metavar="NEW_RUN_ID",
              help="Id of the new run (default: RUN_ID+rejudge-<judge>); rerunning the same "
                   "rejudge continues it.")
@click.option("--plan", type=click.Path(path_type=Path),
              help="The compiled plan (default: the plan path RUN_ID recorded).")
@db_option
@graph_grader_option
@click.option("--max-concurrency", type=click.IntRange(1, 1024), default=4, show_default=True,
              help="Sessions judged at once.")
@llm_client_options
@quiet_option
@json_option
def rejudge(run_id: str, judge: str, new_run_id: str | None, plan: Path | None, db: Path,
            graph_grader: str, max_concurrency: int, quiet: bool, as_json: bool,
            **client: Any) -> None:
    """Re-judge the finished sessions of RUN_ID with another judge, as a new run (no agent or
    simulator calls; identical judge prompts come from the response cache)."""
    from benchpack.runtime import PlanError
    from benchpack.runtime.rejudge import RejudgeOptions
    from benchpack.runtime.rejudge import rejudge as rejudge_run

    options = RejudgeOptions(run_id=run_id, judge=judge, new_run_id=new_run_id, plan=plan, db=db,
                             graph_grader=graph_grader, max_concurrency=max_concurrency,
                             progress=not quiet and not as_json, **_client_settings(**client))
    try:
        summary = rejudge_run(options)
    except (PlanError, ValueError) as exc:
        raise PackErrors(f"✗ {exc}") from None
    _finish(summary, as_json)


@cli.command()
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
              help="Confidence level of bootstrap intervals.")
@click.option("--resamples", type=click.IntRange(100, 100_000), default=2000,
              show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--exact-bootstrap", "exact_max", type=click.IntRange(0), metavar="N",
              help="Exact percentile bootstrap up to N units per figure (default 50; κ in "
                   "`agreement`: 500 items); the normal approximation above, which agrees "
                   "closely at that many units (each table says which it used).")
@click.option("--humans", is_flag=True,
              help="agreement: each run's judge against the human consensus of imported "
                   "ratings (default: judge against judge).")
@click.option("--min-raters", type=click.IntRange(1), default=1, show_default=True,
              help="agreement --humans: ratings an item needs.")
@click.option("--list", "list_", is_flag=True, help="List the available reports.")
@wait_option
def report(names: tuple[str, ...], db: Path, runs: tuple[str, ...], by: str | None, fmt: str,
           out: Path | None, level: float, resamples: int, seed: int, exact_max: int | None,
           humans: bool, min_raters: int, list_: bool, wait_s: float) -> None:
    """Print reports over a run store (default: `summary`; with --format html, all of them)."""
    from benchpack.reports.access import StoreError
    from benchpack.reports.api import ReportOptions, render_report
    from benchpack.reports.registry import UnknownReport, default_reports

    registry = default_reports()
    if list_:
        for r in registry.items():
            click.echo(f"{r.name:14} {r.description}")
        return
    chosen = names or (tuple(registry.names()) if fmt == "html" else ("summary",))
    options = ReportOptions(db=db, names=chosen, runs=runs, by=by, level=level,
                            resamples=resamples, seed=seed, wait_s=wait_s, exact_max=exact_max,
                            humans=humans, min_raters=min_raters)
    try:
        text = render_report(options, fmt)
    except (StoreError, UnknownReport, ValueError) as exc:
        raise PackErrors(f"✗ {exc}") from None
    if out is not None:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise PackErrors(f"✗ -o {out}: cannot write ({exc.strerror or exc})") from None
        click.echo(f"wrote {out}", err=True)
    else:
        click.echo(text, nl=False)


@cli.group()
def ratings() -> None:
    """Human ratings of judged items, for `bench report agreement --humans`."""


@ratings.command(name="import")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--run", "run_id", required=True, metavar="RUN_ID",
              help="The run whose judged items were rated (a rejudge stands for its source).")
@click.option("--format", "fmt", type=click.Choice(["csv", "jsonl"]),
              help="File format [default: from the extension].")
@click.option("--rater-field", metavar="COLUMN", help="The column naming the rater.")
@click.option("--field", "fields", multiple=True, metavar="NAME=COLUMN",
              help="Read field NAME (session, repeat, kind, item, rater, label, rationale, "
                   "confidence) from COLUMN (repeatable).")
@db_option
def ratings_import(file: Path, run_id: str, fmt: str | None, rater_field: str | None,
                   fields: tuple[str, ...], db: Path) -> None:
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


@cli.command()
@click.argument("sql")
@db_option
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table",
              show_default=True)
@click.option("--limit", type=click.IntRange(1), help="At most this many rows.")
@wait_option
def query(sql: str, db: Path, fmt: str, limit: int | None, wait_s: float) -> None:
    """Run read-only SQL over the store; the report views (`bench views`) are available."""
    import csv
    import io

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
        buf = io.StringIO()
        # csv's default \r\n would follow a value into `$(bench query … | tail -1)`
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(res.columns)
        writer.writerows(res.rows)
        click.echo(buf.getvalue(), nl=False)
    else:
        from rich.console import Console

        from benchpack.reports.render import fitted_table, terminal_width

        width = terminal_width()
        numeric = [bool(res.rows) and all(isinstance(r[i], int | float) and
                                          not isinstance(r[i], bool) for r in res.rows
                                          if r[i] is not None) for i in range(len(res.columns))]
        cells = [["NULL" if v is None else str(v) for v in r] for r in res.rows]
        table, dropped = fitted_table(list(res.columns), numeric, cells, width)
        Console(width=width, markup=False, highlight=False).print(table)
        click.echo(f"({len(res.rows)} row{'s' if len(res.rows) != 1 else ''})", err=True)
        if dropped:
            Console(width=width, stderr=True, markup=False, highlight=False).print(
                f"not shown at {width} columns: {', '.join(dropped)} (a wider terminal, fewer "
                "columns in the SELECT, or --format csv)")


@cli.command()
@db_option
@click.option("-o", "--out", type=click.Path(path_type=Path), default=Path("export"),
              show_default=True, help="Directory to write the files into.")
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default="parquet",
              show_default=True)
@click.option("--no-views", is_flag=True, help="Tables only.")
@wait_option
def export(db: Path, out: Path, fmt: str, no_views: bool, wait_s: float) -> None:
    """Export every table (and report view) of the store as Parquet or CSV files."""
    from benchpack.reports.access import StoreError
    from benchpack.reports.api import export_store

    try:
        written = export_store(db, out, fmt, views=not no_views, wait_s=wait_s)
    except (StoreError, ValueError) as exc:
        raise PackErrors(f"✗ {exc}") from None
    click.echo(f"wrote {len(written)} files to {out}", err=True)


@cli.command()
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


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _finish(summary: Any, as_json: bool) -> None:
    """Print a run's (or rejudge's) summary; exit 1 when sessions errored."""
    if as_json:
        click.echo(json.dumps({**summary.as_dict(), **_pass_rates(summary)}, indent=2))
    else:
        _print_summary(summary)
    if summary.errors:
        first = summary.first_errors
        raise PackErrors(f"✗ {summary.errors} session{'s' if summary.errors != 1 else ''} "
                         "errored" + (f"; first: {first[0]}" if first else "")
                         + f" (all: bench query \"SELECT name, error FROM sessions WHERE "
                         f"run_id = '{summary.run_id}' AND status = 'error'\" --db "
                         f"{summary.db})")


def _pass_rates(s: Any) -> dict[str, Any]:
    """pass@1, pass@k and pass^k (k = the run's repeats) over verified-outcome tasks; pass@k and
    pass^k average over the tasks with at least k graded repeats."""
    from benchpack.reports.stats import pass_at_k_over_tasks, pass_hat_k_over_tasks

    if not s.pass_counts:
        return {}
    k = s.repeats
    full = [(n, c) for n, c in s.pass_counts if n >= k]
    return {"pass_k": k, "pass_at_1": pass_at_k_over_tasks(s.pass_counts, 1),
            "pass_at_k": pass_at_k_over_tasks(full, k) if k > 1 else None,
            "pass_hat_k": pass_hat_k_over_tasks(full, k) if k > 1 else None}


def _print_summary(s: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"run {s.run_id}", show_header=False, box=None)
    t.add_column(no_wrap=True)  # the labels: values wrap, a label never breaks
    t.add_column(overflow="fold")
    t.add_row("sessions", f"{s.finished} finished, {_count(s.errors, 'error')}, {s.skipped_deps} skipped "
              f"(dependency failed), {s.sessions_skipped_resume} already done")
    headline = [(label, value) for label, value in (
        ("PROC", s.proc), ("COMP", s.comp), ("triple F1", s.f1),
        ("trigger score", s.trigger_score), ("verified score", s.score)) if value is not None]
    if headline:
        # the rules judge counts words: its figures must not pass for a judge's verdict
        heuristic = "   (keyword heuristic: rules judge)" if getattr(s, "heuristic_judge", False) \
            else ""
        t.add_row(" / ".join(label for label, _ in headline),
                  " / ".join(_pct(value) for _, value in headline) + heuristic)
    if getattr(s, "alone", 0):
        t.add_row("alone", f"{s.alone} session(s) ran without their dependencies (--alone): "
                  "not in the figures above")
    rates = _pass_rates(s)
    if rates:  # verified-outcome sessions: task-level pass rates
        k = rates["pass_k"]
        label, value = "pass@1", _pct(rates["pass_at_1"])
        if k > 1:
            label += f" / pass@{k} / pass^{k}"
            value += f" / {_pct(rates['pass_at_k'])} / {_pct(rates['pass_hat_k'])}"
        t.add_row(label, f"{value}   ({len(s.pass_counts)} tasks × {k} repeats)")
    for i, error in enumerate(getattr(s, "first_errors", None) or []):
        t.add_row("first errors" if i == 0 else "", error)
    t.add_row("judge errors", str(s.judge_errors))
    if getattr(s, "rejudge_of", None):
        t.add_row("re-judged", f"{s.rejudge_of} with {s.judge}: {s.judge_calls} judge calls "
                  f"({s.judge_cache_hits} from cache)")
    t.add_row("LLM calls", f"{s.llm_calls} ({s.cache_hits} from cache)")
    t.add_row("tokens", f"{s.prompt_tokens:,} in / {s.completion_tokens:,} out")
    t.add_row("cost", f"${s.cost:.4f}")
    t.add_row("wall time", f"{s.wall_s:.1f} s")
    t.add_row("store", f"{s.db}")
    Console(stderr=True).print(t)


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # a bug in benchpack, not in the pack: say so plainly
        click.echo(f"internal error: {type(exc).__name__}: {exc}\n"
                   "this is a benchpack bug; please report it with the pack that triggers it",
                   err=True)
        sys.exit(3)


if __name__ == "__main__":
    main()
