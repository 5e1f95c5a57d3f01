"""`bench import FORMAT SOURCE -o PACK`: a released benchmark as an ordinary pack (importers live
in `benchpack.compiler.importers`, loaded only when the command runs)."""

from __future__ import annotations

from pathlib import Path

import click

from .params import PackErrors


@click.command("import")
@click.argument("fmt", metavar="FORMAT")
@click.argument("source", type=click.Path(path_type=Path))
@click.option("-o", "--out", type=click.Path(path_type=Path), required=True,
              help="Directory to write the pack into (new, empty, or an earlier import).")
def import_cmd(fmt: str, source: Path, out: Path) -> None:
    """Import a released benchmark (FORMAT: tau2) from SOURCE as a pack in --out, with
    IMPORT_REPORT.md saying what became of every source field."""
    from benchpack.compiler.importers import ImportError_, run_import

    try:
        result = run_import(fmt, source, out)
    except ImportError_ as exc:
        raise PackErrors(f"✗ {exc}") from None
    click.echo(f"✓ {result.out}: {result.sessions} sessions, {len(result.files)} files "
               f"({len(result.dropped)} source tasks not imported; see IMPORT_REPORT.md)")
    click.echo(f"  next: bench compile {result.out} -o build/ && bench run build/ "
               f"--agent scripted:{result.out}/demo/gold_agent.yaml --allow-python")
