"""`bench`: thin commands over the library. Exceptions map to exit codes in one place (`main`).

Exit codes: 0 success, 1 the pack (or run) has errors, 2 usage errors, 3 internal errors.
"""

from __future__ import annotations

import json
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


def _summary(result: CompileResult, strict: bool) -> str:
    e, w = len(result.errors), len(result.warnings)
    parts = []
    if e:
        parts.append(f"{e} error{'s' if e != 1 else ''}")
    if w:
        parts.append(f"{w} warning{'s' if w != 1 else ''}" + (" (errors under --strict)"
                                                                 if strict else ""))
    return ", ".join(parts) if parts else "no problems"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
def validate(pack: Path, strict: bool, fmt: str) -> None:
    """Check PACK (a directory with pack.yaml, or the file) and report every problem."""
    result = _validate(pack, strict=strict)
    _print_diagnostics(result.diagnostics, fmt)
    _note_internal_error(result)
    failed = bool(result.errors) or (strict and result.warnings)
    if fmt == "text":
        click.echo(("✗ " if failed else "✓ ") + f"{pack}: {_summary(result, strict)}", err=True)
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
    click.echo(f"✓ {out / 'plan.json'}: {n} sessions, {len(plan.get('groups', []))} dependency "
               f"groups, {_summary(result, strict)}{note}", err=True)


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
@click.option("--simulator", default="rules", show_default=True, metavar="URI",
              help="User simulator: rules | scripted:<file> | litellm:<model>")
@click.option("--judge", default="rules", show_default=True, metavar="URI",
              help="Judges: rules | scripted:<file> | litellm:<model>")
@click.option("--db", type=click.Path(path_type=Path), default=Path("bench.duckdb"),
              show_default=True, help="DuckDB file to store the run in.")
@click.option("--run-id", help="Name the run (default: <pack>-<time>-<hash>).")
@click.option("--resume", "resume_id", metavar="RUN_ID",
              help="Continue RUN_ID: skip finished (session, fingerprint, repeat) triples.")
@click.option("--repeats", type=click.IntRange(1, 100), help="Repeats per session (pass@k).")
@click.option("--max-concurrency", type=click.IntRange(1, 1024), default=4, show_default=True,
              help="Episode chains run at once.")
@click.option("--max-per-model", type=click.IntRange(1, 1024), default=8, show_default=True,
              help="Concurrent requests per model endpoint.")
@click.option("--rpm", multiple=True, metavar="MODEL=N",
              help="Requests-per-minute limit for a model (repeatable).")
@click.option("--api-base", help="Base URL of an OpenAI-compatible server for litellm models.")
@click.option("--api-key-env", metavar="VAR",
              help="Environment variable holding the API key (the key is never stored).")
@click.option("--timeout", type=float, default=120.0, show_default=True,
              help="Per-request timeout for LLM calls, seconds.")
@click.option("--max-retries", type=click.IntRange(0, 20), default=4, show_default=True,
              help="Retries of retryable provider errors (429, 5xx, timeouts).")
@click.option("--session", "sessions", multiple=True, metavar="GLOB",
              help="Only run matching sessions (id or name; repeatable).")
@click.option("--allow-python", is_flag=True, help="Allow python graders and tools from the pack.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the response cache.")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=Path(".bench-cache"),
              show_default=True)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def run(plan: Path, agent: str, simulator: str, judge: str, db: Path, run_id: str | None,
        resume_id: str | None, repeats: int | None, max_concurrency: int, max_per_model: int,
        rpm: tuple[str, ...], api_base: str | None, api_key_env: str | None, timeout: float,
        max_retries: int, sessions: tuple[str, ...], allow_python: bool, no_cache: bool,
        cache_dir: Path, quiet: bool, as_json: bool) -> None:
    """Run a compiled PLAN (directory with plan.json) against an agent."""
    from benchpack.runtime import PlanError
    from benchpack.runtime.runner import RunOptions, run_plan

    limits = {}
    for item in rpm:
        model, _, n = item.rpartition("=")
        try:
            limits[model] = float(n)
        except ValueError:
            raise click.UsageError(f"--rpm expects MODEL=N, got `{item}`") from None
    options = RunOptions(
        plan=plan, agent=agent, simulator=simulator, judge=judge, db=db,
        run_id=resume_id or run_id, resume=resume_id is not None, repeats=repeats,
        max_concurrency=max_concurrency, max_concurrent_per_model=max_per_model,
        requests_per_minute=limits, api_base=api_base, api_key_env=api_key_env,
        timeout_s=timeout, max_retries=max_retries, sessions=list(sessions),
        allow_python=allow_python, use_cache=not no_cache, cache_dir=cache_dir,
        progress=not quiet and not as_json)
    try:
        summary = run_plan(options)
    except (PlanError, ValueError) as exc:
        raise PackErrors(f"✗ {exc}") from None
    if as_json:
        click.echo(json.dumps(summary.as_dict(), indent=2))
    else:
        _print_summary(summary)
    if summary.errors:
        raise PackErrors("")


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _print_summary(s: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"run {s.run_id}", show_header=False, box=None)
    t.add_row("sessions", f"{s.finished} finished, {s.errors} errors, {s.skipped_deps} skipped "
              f"(dependency failed), {s.sessions_skipped_resume} already done")
    t.add_row("PROC / COMP", f"{_pct(s.proc)} / {_pct(s.comp)}"
              + (f"   verified score {_pct(s.score)}" if s.score is not None else ""))
    t.add_row("judge errors", str(s.judge_errors))
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
