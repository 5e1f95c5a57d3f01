"""`bench parity tau2-retrieval`: the knowledge-base search tools (issue 24) against τ²-bench's
own retrieval on banking_knowledge's documents — the rankings (ids and scores) against its
`RetrievalPipeline`, then (`--texts`, the default) the answer texts and tool definitions of the
pack imported with --tau2 against its environment of each variant. Exit 0 when everything
agrees (the ranking's score-0 fill and the timing line's milliseconds aside), 1 otherwise or
when τ²'s side cannot run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .params import PackErrors

if TYPE_CHECKING:
    from benchpack.runtime.tau2bench.retrieval_text import TextReport


@click.command(name="tau2-retrieval")
@click.option("--tau2", "checkout", required=True, type=click.Path(path_type=Path),
              metavar="CHECKOUT", help="A τ²-bench checkout holding "
                                       "data/tau2/domains/banking_knowledge/documents.")
@click.option("--tau2-python", metavar="PY",
              help="The Python that imports τ² and rank_bm25 [default: $BENCH_TAU2_PYTHON, "
                   "else the checkout's .venv].")
@click.option("--top-k", type=click.IntRange(1, 50), default=10, show_default=True)
@click.option("--texts/--no-texts", default=True, show_default=True,
              help="Also import the pack with --tau2 and compare what the agent reads of each "
                   "search (bm25, grep, bm25_grep) with τ²'s environment's answers.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def parity_tau2_retrieval(checkout: Path, tau2_python: str | None, top_k: int, texts: bool,
                          as_json: bool) -> None:
    """Every document title as a BM25 query and every title's longest word (plus a few
    regular expressions) as a grep pattern, through benchpack's search tools and τ²'s own
    RetrievalPipeline: ranked ids and scores must agree; with --texts, the imported pack's
    answers (compiled with each --var retrieval) and τ²'s environment's, character for
    character."""
    from benchpack.runtime.tau2bench.client import Tau2DriverError, check_checkout, find_python
    from benchpack.runtime.tau2bench.retrieval import check_banking_retrieval

    try:
        root = check_checkout(checkout)
        docs = root / "data" / "tau2" / "domains" / "banking_knowledge" / "documents"
        if not docs.is_dir():
            raise Tau2DriverError(f"{docs}: not found (a full clone has banking_knowledge's "
                                  "documents)")
        python = find_python(root, tau2_python)
        report = check_banking_retrieval(root, python, top_k)
        text_report = _texts(root, python, tau2_python) if texts else None
    except (Tau2DriverError, RuntimeError) as exc:
        raise PackErrors(f"✗ parity tau2-retrieval: {exc}") from None
    if as_json:
        click.echo(json.dumps({"compared": report.compared, "declared": report.declared,
                               "mismatches": report.mismatches, **({"texts": {
                                   "compared": text_report.compared,
                                   "per_variant": text_report.per_variant,
                                   "tools_compared": text_report.tools_compared,
                                   "timed": text_report.timed,
                                   "mismatches": text_report.mismatches}}
                                   if text_report is not None else {})},
                              ensure_ascii=False, indent=1))
    else:
        click.echo("\n".join(report.lines()))
        for m in report.mismatches[:10]:
            click.echo(f"  {m['kind']} {m['query']!r}: benchpack {m['benchpack'][:3]} … "
                       f"τ² {m['tau2'][:3]} …")
        if text_report is not None:
            click.echo("\n".join(text_report.lines()))
            for m in text_report.mismatches[:5]:
                click.echo(f"  {m['variant']} {m['tool']} {m.get('args')}: benchpack "
                           f"{str(m['benchpack'])[:160]!r} … τ² {str(m['tau2'])[:160]!r} …")
    if report.mismatches or (text_report is not None and text_report.mismatches):
        raise PackErrors("")


def _texts(root: Path, python: str, tau2_python: str | None) -> TextReport:
    """Import the domain with --tau2, compile it per variant, and compare its answers with
    τ²'s environment's (`retrieval_text`)."""
    import tempfile

    from benchpack.compiler import compile_pack
    from benchpack.compiler.importers import ImportError_, import_pack
    from benchpack.runtime.tau2bench.client import Tau2Driver
    from benchpack.runtime.tau2bench.retrieval import queries_of
    from benchpack.runtime.tau2bench.retrieval_text import (
        VARIANTS,
        calls_of,
        compare_texts,
        run_tau2_texts,
        search_tools,
    )

    from .imports import extract_variants

    domain = root / "data" / "tau2" / "domains" / "banking_knowledge"
    with Tau2Driver(root, tau2_python) as driver:
        extract = driver.extract(domain.name, variants=extract_variants(domain.name))
    with tempfile.TemporaryDirectory(prefix="bench-parity-retrieval-") as tmp:
        work = Path(tmp)
        try:
            import_pack("tau2", domain, work / "pack", tau2=extract)
        except ImportError_ as exc:
            raise RuntimeError(f"the import failed: {exc}") from None
        plans = {}
        for ours in VARIANTS:
            res = compile_pack(work / "pack", work / ours, use_cache=False,
                               variables={"retrieval": ours})
            if not res.ok:
                first = next((d.format() for d in res.diagnostics if d.severity == "error"), "")
                raise RuntimeError(f"the pack does not compile: {first}")
            plans[ours] = json.loads((work / ours / "plan.json").read_text(encoding="utf-8"))
    docs = plans["bm25"]["knowledge"]["banking"]["documents"]
    queries, patterns = queries_of(docs)
    calls = {VARIANTS[o]: calls_of(search_tools(p, "bank"), queries, patterns)
             for o, p in plans.items()}
    tau2 = run_tau2_texts(root, python, calls)
    return compare_texts(plans, "bank", "banking", tau2, calls)
