"""`bench merge`: combine stores of runs made separately (issue 16 item 3)."""

from __future__ import annotations

from pathlib import Path

import click

from .params import PackErrors


@click.command("merge")
@click.argument("stores", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--out", required=True, type=click.Path(path_type=Path),
              help="The new store to write (must not exist).")
def merge_cmd(stores: tuple[Path, ...], out: Path) -> None:
    """Combine the runs of several STORES into the new store OUT (refusing duplicate runs,
    sessions in two stores and other schema versions)."""
    from benchpack.runtime.errors import BenchError
    from benchpack.runtime.merge import merge_stores

    try:
        copied = merge_stores(list(stores), out)
    except BenchError as exc:  # MergeError, or a damaged input (StoreDamagedError)
        raise PackErrors(f"✗ {exc}") from None
    runs, sessions = copied.get("runs", 0), copied.get("sessions", 0)
    click.echo(f"✓ merged {len(stores)} stores into {out}: {runs} runs, {sessions} session rows")
