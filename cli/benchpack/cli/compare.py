"""`bench compare`: paired differences between runs, refused when the runs differ in more
than the agent (the library is `benchpack.reports.compare`)."""

from __future__ import annotations

from pathlib import Path

import click

from .params import PackErrors, db_option, emit, wait_option


@click.command(name="compare")
@click.argument("runs", nargs=-1, required=True, metavar="RUN_A RUN_B [RUN_C]...")
@db_option
@click.option("--by", help="Slice by a session label: domain, category, difficulty, persona, "
                           "style, episode, language, protocol, name.")
@click.option("--metric", "metrics", multiple=True, metavar="METRIC",
              help="Only this metric (repeatable): proc, comp, f1, score, pass, trigger_score, "
                   "trigger_pass. Default: every metric of the protocols present.")
@click.option("--correction", type=click.Choice(["holm", "bh"]), default="holm",
              show_default=True, help="Multiple-comparison adjustment across every row shown.")
@click.option("--format", "fmt", type=click.Choice(["table", "md", "html", "json"]),
              default="table", show_default=True)
@click.option("-o", "--out", type=click.Path(path_type=Path),
              help="Write to this file instead of standard output.")
@click.option("--level", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of the intervals.")
@click.option("--resamples", type=click.IntRange(100, 100_000), default=2000,
              show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--allow-incomparable", is_flag=True,
              help="Compare runs that differ in pack, judge, simulator, planner, prompt "
                   "templates or benchpack version anyway, with a banner saying so.")
@click.option("--vary", type=click.Choice(["simulator"]),
              help="Allow exactly this difference (the runs must differ in it and run one "
                   "agent): Δ is reported as the simulator's sensitivity.")
@click.option("--view-url", default="http://127.0.0.1:8765", show_default=True,
              metavar="URL", help="Address of `bench view` the output links to (the run "
              "pair's page, the differing sessions side by side); '' for no links.")
@wait_option
def compare(runs: tuple[str, ...], db: Path, by: str | None, metrics: tuple[str, ...],
            correction: str, fmt: str, out: Path | None, level: float, resamples: int,
            seed: int, allow_incomparable: bool, vary: str | None, view_url: str,
            wait_s: float) -> None:
    """Is B better than A? Paired differences of every run against the first (the baseline),
    per metric and slice, with clustered CIs, tests, adjusted p-values and the minimum
    detectable effect."""
    from benchpack.reports.access import StoreError
    from benchpack.reports.compare import CompareError, CompareOptions, render_compare

    if len(runs) < 2:
        raise click.UsageError("give at least two runs: the baseline first (RUN_A), then the "
                               "runs to compare with it")
    options = CompareOptions(runs=runs, by=by, metrics=metrics,
                             correction=correction,  # type: ignore[arg-type]
                             level=level, resamples=resamples, seed=seed,
                             allow_incomparable=allow_incomparable,
                             vary=vary,  # type: ignore[arg-type]
                             view_url=view_url.strip() or None)
    try:
        text = render_compare(db, options, fmt, wait_s=wait_s)
    except CompareError as exc:
        raise PackErrors(f"✗ compare: {exc}") from None
    except StoreError as exc:
        raise PackErrors(f"✗ {exc}") from None
    emit(text, out)
