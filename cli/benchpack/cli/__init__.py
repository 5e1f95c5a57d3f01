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
