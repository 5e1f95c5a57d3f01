"""Pack commands: `bench init`, `validate`, `compile`, `graph`, `schema` (the compiler loads
only inside a command)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .params import PackErrors, format_option, pack_argument, plural, strict_option

if TYPE_CHECKING:  # the compiler (pydantic models, networkx, jsonschema) loads only when used:
    # `bench --help`, `bench query` and `bench report` start in a fraction of the time
    from benchpack.compiler import CompileResult, Diagnostic


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
        parts.append(plural(e, "error"))
    if w:
        parts.append(plural(w, "warning") + (" (errors under --strict)" if strict else ""))
    return ", ".join(parts) if parts else "no problems"


@click.command()
@click.argument("directory", type=click.Path(path_type=Path), default=".")
@click.option("--name", help="Pack name (default: the directory name).")
@click.option("--force", is_flag=True, help="Overwrite existing files.")
def init(directory: Path, name: str | None, force: bool) -> None:
    """Scaffold a commented starter pack in DIRECTORY."""
    try:
        from benchpack.compiler import init_pack

        written = init_pack(directory, name, force=force)
    except FileExistsError as exc:
        raise click.UsageError(f"would overwrite {exc}; pass --force to replace") from None
    for p in written:
        click.echo(f"wrote {p}")
    click.echo(f"next: bench validate {directory}  &&  bench compile {directory} -o build/")


@click.command()
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
    from benchpack.compiler import validate_pack

    result = validate_pack(pack, strict=strict)
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


def _parse_vars(given: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in given:
        name, eq, value = item.partition("=")
        if not eq or not name.strip().isidentifier():
            raise click.BadParameter(f"`{item}`: write NAME=VALUE, e.g. retrieval=grep",
                                     param_hint="--var")
        out[name.strip()] = value
    return out


@click.command(name="compile")
@pack_argument
@click.option("-o", "--out", type=click.Path(path_type=Path), default=Path("build"),
              show_default=True, help="Output directory for plan.json.")
@click.option("--ablation", is_flag=True,
              help="Also emit each dependency group's final session without its dependencies.")
@click.option("--no-cache", is_flag=True, help="Ignore the compile cache.")
@click.option("--var", "variables", multiple=True, metavar="NAME=VALUE",
              help="Set a pack variable (`{{ vars.NAME }}`), e.g. --var retrieval=grep.")
@strict_option
@format_option
def compile_cmd(pack: Path, out: Path, ablation: bool, no_cache: bool, variables: tuple[str, ...],
                strict: bool, fmt: str) -> None:
    """Compile PACK into OUT/plan.json."""
    from benchpack.compiler import compile_pack

    result = compile_pack(pack, out, ablation=ablation, strict=strict, use_cache=not no_cache,
                          variables=_parse_vars(variables))
    _print_diagnostics(result.diagnostics, fmt)
    _note_internal_error(result)
    if not result.ok:
        click.echo(f"✗ {pack}: {_summary(result, strict)}; nothing written", err=True)
        raise PackErrors("")
    plan = result.load_plan() or {}
    n = len(plan.get("sessions", {}))
    note = " (unchanged, from cache)" if result.cached else ""
    click.echo(f"✓ {out / 'plan.json'}: {plural(n, 'session')}, "
               f"{plural(len(plan.get('groups', [])), 'dependency group')}, "
               f"{_summary(result, strict)}{note}", err=True)


@click.command()
@pack_argument
@click.option("--format", "fmt", type=click.Choice(["text", "mermaid", "dot"]), default="text",
              show_default=True)
@click.option("--ablation", is_flag=True, help="Include without-dependencies variants.")
def graph(pack: Path, fmt: str, ablation: bool) -> None:
    """Show PACK's episodes, sessions and dependencies."""
    from benchpack.compiler import graph_pack

    text, result = graph_pack(pack, fmt, ablation=ablation)
    if text is None:
        _print_diagnostics(result.diagnostics, "text")
        raise PackErrors("")
    click.echo(text, nl=False)


@click.command()
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
