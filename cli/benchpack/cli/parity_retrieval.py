"""`bench parity tau2-retrieval`: the knowledge-base search tools (issue 24) against τ²-bench's
own retrieval pipeline on banking_knowledge's documents. Exit 0 when every query agrees (τ²'s
score-0 fill aside, a declared difference), 1 otherwise or when τ²'s side cannot run."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .params import PackErrors


@click.command(name="tau2-retrieval")
@click.option("--tau2", "checkout", required=True, type=click.Path(path_type=Path),
              metavar="CHECKOUT", help="A τ²-bench checkout holding "
                                       "data/tau2/domains/banking_knowledge/documents.")
@click.option("--tau2-python", metavar="PY",
              help="The Python that imports τ² and rank_bm25 [default: $BENCH_TAU2_PYTHON, "
                   "else the checkout's .venv].")
@click.option("--top-k", type=click.IntRange(1, 50), default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def parity_tau2_retrieval(checkout: Path, tau2_python: str | None, top_k: int,
                          as_json: bool) -> None:
    """Every document title as a BM25 query and every title's longest word (plus a few
    regular expressions) as a grep pattern, through benchpack's KB_search/KB_grep and τ²'s own
    RetrievalPipeline: ranked ids and scores must agree."""
    from benchpack.runtime.tau2bench.client import Tau2DriverError, check_checkout, find_python
    from benchpack.runtime.tau2bench.retrieval import check_banking_retrieval

    try:
        root = check_checkout(checkout)
        docs = root / "data" / "tau2" / "domains" / "banking_knowledge" / "documents"
        if not docs.is_dir():
            raise Tau2DriverError(f"{docs}: not found (a full clone has banking_knowledge's "
                                  "documents)")
        report = check_banking_retrieval(root, find_python(root, tau2_python), top_k)
    except (Tau2DriverError, RuntimeError) as exc:
        raise PackErrors(f"✗ parity tau2-retrieval: {exc}") from None
    if as_json:
        click.echo(json.dumps({"compared": report.compared, "declared": report.declared,
                               "mismatches": report.mismatches}, ensure_ascii=False, indent=1))
    else:
        click.echo("\n".join(report.lines()))
        for m in report.mismatches[:10]:
            click.echo(f"  {m['kind']} {m['query']!r}: benchpack {m['benchpack'][:3]} … "
                       f"τ² {m['tau2'][:3]} …")
    if report.mismatches:
        raise PackErrors("")
