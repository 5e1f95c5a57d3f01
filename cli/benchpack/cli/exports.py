"""`bench export tau2-submission RUN… -o submission.json`: τ²-bench's leaderboard submission
from runs in the store (`benchpack.reports.tau2_submission`). A subcommand of `bench export`,
whose own form (`bench export --format parquet -o DIR`) is unchanged."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import click

from .params import PackErrors, db_option, wait_option


def _date(_ctx: click.Context, _param: click.Parameter, value: str | None) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"`{value}` is not a date YYYY-MM-DD") from None


@click.command(name="tau2-submission")
@click.argument("runs", nargs=-1, required=True)
@click.option("-o", "--out", type=click.Path(path_type=Path), required=True,
              help="The submission.json to write (nothing is written when it is refused).")
@db_option
@click.option("--model-organization", required=True,
              help="Who developed the model (τ²'s `model_organization`).")
@click.option("--model-name", help="The model as the leaderboard shows it [default: the "
                                   "runs' agent model].")
@click.option("--submitting-organization",
              help="Who ran the evaluation [default: --model-organization].")
@click.option("--email", help="Contact email.")
@click.option("--contact-name", help="Contact name.")
@click.option("--github", help="Contact GitHub user.")
@click.option("--reasoning-effort", help="Reasoning effort used, e.g. high, low, none.")
@click.option("--is-new", is_flag=True, help="Highlight the model as new on the leaderboard.")
@click.option("--submission-date", callback=_date, help="YYYY-MM-DD [default: today].")
@click.option("--evaluation-date", callback=_date,
              help="YYYY-MM-DD [default: the date of the latest run].")
@click.option("--tau2-version", help="τ²-bench version or commit [default: the runs' "
                                     "`origin:` version].")
@click.option("--user-simulator", help="The user simulator model [default: the runs'].")
@click.option("--trials", type=click.IntRange(1, 4), default=4, show_default=True,
              help="Graded trials every task needs (pass^1 … pass^trials).")
@click.option("--domain", help="The τ² domain of sessions that record none (one run only).")
@click.option("--allow-differences", is_flag=True,
              help="Export runs that are not comparable with τ²-bench (a pack with "
                   "differences or no τ² origin, a non-model user simulator) as a `custom` "
                   "submission that lists every difference.")
@click.option("--schema", "schema", type=click.Path(path_type=Path),
              help="The leaderboard's JSON Schema [default: <--tau2>/"
                   "web/leaderboard/public/submissions/schema.json].")
@click.option("--tau2", "checkout", type=click.Path(path_type=Path),
              help="A τ²-bench checkout: its schema, and its task lists to say whether tasks "
                   "were left out.")
@click.option("--no-validate", is_flag=True, help="Write without validating (no schema).")
@wait_option
def tau2_submission(runs: tuple[str, ...], out: Path, db: Path, model_organization: str,
                    model_name: str | None, submitting_organization: str | None,
                    email: str | None, contact_name: str | None, github: str | None,
                    reasoning_effort: str | None, is_new: bool, submission_date: date | None,
                    evaluation_date: date | None, tau2_version: str | None,
                    user_simulator: str | None, trials: int, domain: str | None,
                    allow_differences: bool, schema: Path | None, checkout: Path | None,
                    no_validate: bool, wait_s: float) -> None:
    """Write τ²-bench's leaderboard submission.json from runs (one per domain, or one covering
    several): pass^1 … pass^4 per domain as τ² computes them, the mean agent cost of a
    trajectory, the user simulator, methodology. Refuses runs with errors outside the agent,
    tasks short of trials, or differences from τ² (see --allow-differences), saying why."""
    from benchpack.reports.access import StoreError
    from benchpack.reports.tau2_submission import (
        SCHEMA_IN_CHECKOUT,
        SubmissionInvalid,
        SubmissionOptions,
        SubmissionRefused,
        export_submission,
    )

    if schema is None and checkout is not None:
        schema = checkout / SCHEMA_IN_CHECKOUT
    if schema is None and not no_validate:
        raise click.UsageError("no schema to validate against: give --schema PATH or --tau2 "
                               "CHECKOUT (or --no-validate)")
    if schema is not None and no_validate:
        raise click.UsageError("--no-validate with a schema: drop one of them")
    options = SubmissionOptions(
        list(runs), model_organization, model_name=model_name,
        submitting_organization=submitting_organization, email=email,
        contact_name=contact_name, github=github, reasoning_effort=reasoning_effort,
        is_new=is_new, submission_date=submission_date, evaluation_date=evaluation_date,
        tau2_version=tau2_version, user_simulator=user_simulator, trials=trials,
        allow_differences=allow_differences, domain=domain, tau2_checkout=checkout)
    try:
        sub = export_submission(db, options, out, schema, wait_s=wait_s)
    except SubmissionRefused as exc:
        raise PackErrors("\n".join(f"✗ {r}" for r in exc.reasons)) from None
    except SubmissionInvalid as exc:
        raise PackErrors("\n".join(f"✗ {e}" for e in exc.errors)
                         + f"\n✗ {out}: not written ({len(exc.errors)} schema "
                         "violations)") from None
    except (StoreError, ValueError) as exc:
        raise PackErrors(f"✗ {exc}") from None
    for note in sub.notes:
        click.echo(f"! {note}", err=True)
    for f in sub.domains:
        ks = " | ".join(f"pass^{k} {100 * v:.1f}" for k, v in f.pass_hat.items() if k <= 4)
        cost = f"${f.cost:.4f}" if f.cost is not None else "unknown"
        click.echo(f"  {f.domain}: {ks} | cost {cost} a trajectory ({len(f.tasks)} tasks, "
                   f"{f.trajectories} trajectories)", err=True)
    kind = sub.document.get("submission_type")
    click.echo(f"✓ {out}: {kind} submission, "
               + ("validated against " + str(schema) if schema else "not validated"),
               err=True)
