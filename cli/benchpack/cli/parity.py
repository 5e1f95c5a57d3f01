"""`bench parity tau2`: an imported τ²-bench domain against τ²'s own code, call by call.

The CLI is where the two halves meet: it imports and compiles the pack (compiler), then runs
the calls through benchpack's tool path and through τ²'s driver (runtime) and prints the table
of mismatches by tool. Exit 0 when every mismatch is a declared difference, 1 otherwise (or
when something could not run: a `✗` line says what)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import click

from .params import PackErrors


@click.group(name="parity")
def parity() -> None:
    """Compare an imported benchmark with the benchmark's own code, call by call."""


@parity.command(name="tau2")
@click.option("--tau2", "checkout", required=True, type=click.Path(path_type=Path),
              metavar="CHECKOUT", help="A τ²-bench checkout (src/tau2, data/tau2); nothing is "
                                       "installed, τ²'s own code is run from it.")
@click.option("--domain", required=True, metavar="DOMAIN", help="retail, mock or airline.")
@click.option("--tau2-python", metavar="PY",
              help="The Python that can import τ² [default: $BENCH_TAU2_PYTHON, else the "
                   "checkout's .venv].")
@click.option("--calls", type=click.IntRange(0), default=1000, show_default=True,
              help="Generated calls, besides every task's gold list (as given and with its "
                   "lists in another order).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--fix", "fixes", multiple=True, metavar="FIX[,FIX]",
              help="Import with these recorded differences from τ² (declared: their "
                   "mismatches are expected and listed with their reason).")
@click.option("--pack", "pack_dir", type=click.Path(path_type=Path),
              help="Compare this already imported pack instead of importing the domain "
                   "(e.g. one imported without --tau2, or by another benchpack).")
@click.option("--keep", type=click.Path(path_type=Path),
              help="Write the imported pack and its plan here instead of a temporary folder.")
@click.option("--examples", type=click.IntRange(0), default=10, show_default=True,
              help="Undeclared mismatches shown in full.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def parity_tau2(checkout: Path, domain: str, tau2_python: str | None, calls: int, seed: int,
                fixes: tuple[str, ...], pack_dir: Path | None, keep: Path | None,
                examples: int, as_json: bool) -> None:
    """Apply the same call sequences to τ²'s own environment and to the imported pack run
    through benchpack's real tool path, each sequence on a fresh database: every task's gold
    list and seeded generated calls (valid and invalid). Compares success vs error, the exact
    text the agent reads, and the database rows each call changed, and prints a table of
    mismatches by tool."""
    from benchpack.runtime.tau2bench.client import Tau2Driver, Tau2DriverError

    fix_list = [f.strip() for x in fixes for f in x.split(",") if f.strip()]
    if pack_dir is not None and fix_list:
        raise click.UsageError("--fix applies when importing; --pack compares a pack as it is")
    domain_dir = Path(checkout) / "data" / "tau2" / "domains" / domain
    try:
        with Tau2Driver(checkout, tau2_python) as driver:
            _say(f"… τ² {driver.info.get('python')} from {driver.checkout}")
            extract = driver.extract(domain)
            with tempfile.TemporaryDirectory(prefix="bench-parity-") as tmp:
                work = Path(keep) if keep is not None else Path(tmp)
                plan, differences = _pack_and_plan(domain_dir, extract, fix_list, pack_dir,
                                                   work)
                report = _run(driver, domain, domain_dir, extract, plan, differences, calls,
                              seed, work)
    except Tau2DriverError as exc:
        raise PackErrors(f"✗ parity tau2: {exc}") from None
    from benchpack.runtime.tau2bench.compare import render

    if as_json:
        click.echo(json.dumps(report.as_json(), ensure_ascii=False, indent=1))
    else:
        click.echo(render(report, examples))
    if report.undeclared:
        raise SystemExit(1)


def _say(text: str) -> None:
    click.echo(text, err=True)  # progress: stderr, so --json stays parseable


def _pack_and_plan(domain_dir: Path, extract: dict[str, Any], fixes: list[str],
                   pack_dir: Path | None, work: Path) -> tuple[Any, list[dict[str, str]]]:
    from benchpack.compiler import compile_pack
    from benchpack.compiler.importers import ImportError_, import_pack
    from benchpack.runtime.planfile import load_plan

    differences: list[dict[str, str]] = []
    if pack_dir is None:
        pack_dir = work / "pack"
        try:
            result = import_pack("tau2", domain_dir, pack_dir, tau2=extract, fixes=fixes)
        except ImportError_ as exc:
            raise PackErrors(f"✗ parity tau2: {exc}") from None
        differences = result.differences
    compiled = compile_pack(pack_dir, work / "plan", use_cache=False)
    if not compiled.ok:
        first = next((d.format() for d in compiled.diagnostics if d.severity == "error"), "")
        raise PackErrors(f"✗ parity tau2: the pack does not compile: {first}")
    return load_plan(work / "plan" / "plan.json"), differences


def _run(driver: Any, domain: str, domain_dir: Path, extract: dict[str, Any], plan: Any,
         differences: list[dict[str, str]], calls: int, seed: int, work: Path) -> Any:
    import asyncio

    from benchpack.runtime.tau2bench.compare import BUILTIN, Declared
    from benchpack.runtime.tau2bench.parity import ParityRun, run_parity

    tasks = json.loads((domain_dir / "tasks.json").read_text(encoding="utf-8"))
    # a mismatch both fixes explain is counted once, for the first of them
    ordered = sorted(differences, key=lambda d: d["id"] != "fix:payment-rounding")
    declared = [*(Declared(d["id"], f"{d['what']} — {d['why']}", **_scope(d["id"]))
                  for d in ordered), *BUILTIN]
    run = ParityRun(plan=plan, domain=domain, extract=extract, tasks=tasks, workdir=work,
                    calls=calls, seed=seed)

    def apply(seq: Any) -> dict[str, Any]:
        result: dict[str, Any] = driver.apply(domain, [c.as_json() for c in seq.calls],
                                              task_id=seq.task_id)
        return result

    report = asyncio.run(run_parity(run, apply, declared,
                                    progress=lambda text: _say(f"… {text}")))
    report.notes.append(f"τ² run by Python {driver.info.get('python')}, pydantic "
                        f"{driver.info.get('pydantic')}, from {driver.checkout}; seed {seed}")
    return report


_FIX_FIELDS = {"fix:payment-rounding": ("amount", "balance"),
               "fix:item-prices": ("price", "options")}
"""The fields a fix changes: a mismatch is its when the diff (or the text around the first
different character) names one of them."""


def _scope(diff_id: str) -> dict[str, Any]:
    """Which mismatches a recorded difference of the importer explains."""
    fields = _FIX_FIELDS.get(diff_id)
    if fields is None:
        return {}
    return {"tools": frozenset({"modify_pending_order_items"}),
            "kinds": frozenset({"content", "db"}),
            "match": lambda m: any(f in line for line in m.detail for f in fields)}
