"""Import commands: `bench import FORMAT SOURCE -o PACK` (a released benchmark → a pack) and
`bench import-run FORMAT SOURCE --db DB` (released results → a run). The importers load only
inside a command."""

from __future__ import annotations

from pathlib import Path

import click

from .params import PackErrors, db_option

# formats are listed here (not imported from the registries) so `bench --help` stays light;
# tests/test_imports_cli.py checks the lists equal the registries
PACK_FORMATS = ("claw", "pibench", "proactbench", "tau2", "vibesearch")
RUN_FORMATS = ("proactbench", "tau2")


@click.command(name="import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(PACK_FORMATS))
@click.argument("source", type=click.Path(path_type=Path))
@click.option("-o", "--out", type=click.Path(path_type=Path), required=True,
              help="The pack directory to write (created; files of the same names replaced).")
@click.option("--selected", type=click.Path(path_type=Path),
              help="proactbench: selected_tasks.jsonl, for each dialogue's scenario (hidden "
                   "goal, anchors, proactive subtasks).")
@click.option("--name", help="proactbench: the pack name (session ids start with it) "
                             "[default: proactbench].")
@click.option("--graphs-from-extractions", is_flag=True,
              help="vibesearch: use data/final_extractions files (a released model's answer "
                   "graphs, not the ground truth) as the sessions' graphs.")
@click.option("--partial", is_flag=True,
              help="pibench: accept a sampled release (a persona without profile.yaml or "
                   "episode.yaml, tasks missing from the episode), reporting each gap.")
@click.option("--tau2", "tau2_checkout", is_flag=False, flag_value="", default=None,
              metavar="[CHECKOUT]",
              help="tau2: read τ²'s own tool definitions, loaded database and prompts with "
                   "τ²'s code from this τ²-bench checkout (alone: the checkout holding "
                   "SOURCE, <checkout>/data/tau2/domains/<domain>), so scores are comparable "
                   "with τ²'s. Without it the tool descriptions are benchpack's own.")
@click.option("--tau2-python", metavar="PY",
              help="tau2: the Python that can import τ² [default: $BENCH_TAU2_PYTHON, else "
                   "the checkout's .venv].")
@click.option("--fix", "fixes", multiple=True, metavar="FIX[,FIX]",
              help="tau2: switch on a recorded difference from τ² (retail: payment-rounding, "
                   "item-prices); the pack is then labelled not comparable.")
@click.option("--solo", is_flag=True,
              help="tau2: τ²'s solo mode (telecom, mock): no user, the agent gets the user's "
                   "tools and works each task's ticket alone, under τ²'s solo policy, and "
                   "ends by calling `done` (with --tau2: τ²'s solo prompt and `done` tool).")
def import_cmd(fmt: str, source: Path, out: Path, selected: Path | None,
               name: str | None, graphs_from_extractions: bool, partial: bool,
               tau2_checkout: str | None, tau2_python: str | None,
               fixes: tuple[str, ...], solo: bool) -> None:
    """Write a pack from a released benchmark (FORMAT: claw — a Claw-Anything task folder or a
    folder of them; pibench — a persona directory or the data/ directory holding several;
    proactbench — final_dialogues.jsonl; tau2 — a domain folder with tasks.json, db.json and
    policy.md (telecom: tasks_small.json, db.toml, user_db.toml and its two policy files);
    vibesearch — task files or a folder of them), with IMPORT_REPORT.md saying
    what became of every source field."""
    from benchpack.compiler.importers import ImportError_, import_pack

    options: dict[str, object] = {}
    if fmt == "proactbench":
        options = {"selected": selected, "name": name or "proactbench"}
    elif fmt == "pibench":
        options = {"partial": partial}
    elif fmt == "vibesearch":
        options = {"graphs_from_extractions": graphs_from_extractions}
    for flag, value, owner in (("--selected", selected is not None, "proactbench"),
                               ("--name", name is not None, "proactbench"),
                               ("--partial", partial, "pibench"),
                               ("--graphs-from-extractions", graphs_from_extractions,
                                "vibesearch"),
                               ("--tau2", tau2_checkout is not None, "tau2"),
                               ("--tau2-python", tau2_python is not None, "tau2"),
                               ("--fix", bool(fixes), "tau2"),
                               ("--solo", solo, "tau2")):
        if value and fmt != owner:
            raise click.UsageError(f"{flag} is an option of the {owner} format, not of {fmt}")
    if tau2_python is not None and tau2_checkout is None:
        raise click.UsageError("--tau2-python needs --tau2 (the checkout it imports τ² from)")
    if fmt == "tau2":
        options = {"fixes": [f.strip() for x in fixes for f in x.split(",") if f.strip()]}
        if solo:
            options["solo"] = True
        if tau2_checkout is not None:
            options["tau2"] = tau2_extract(source, tau2_checkout, tau2_python, solo)
    try:
        result = import_pack(fmt, source, out, **options)
    except ImportError_ as exc:
        raise PackErrors(f"✗ {exc}") from None
    for note in result.notes:
        click.echo(f"! {note}", err=True)
    dropped = (f"; {len(result.dropped)} source tasks not imported"
               if result.dropped else "")
    click.echo(f"✓ {out}: {result.sessions} sessions in {len(result.files)} files{dropped} "
               f"(see {out / 'IMPORT_REPORT.md'})", err=True)
    if fmt == "claw":
        click.echo(f"  next: bench compile {out} -o build/ && bench run build/ --agent … "
                   "--allow-python", err=True)
    if fmt == "pibench" and any(str(f).startswith("tools/") for f in result.files):
        click.echo(f"  next: bench compile {out} -o build/ && bench run build/ --agent … "
                   "--allow-python  (the app tasks' toolsets run code, in the sandbox)", err=True)
    if fmt == "tau2" and result.sessions:  # a domain with tasks to run
        # a gold user makes the tasks' user-side gold actions (dual control, issue 24)
        user = (f" --simulator scripted:{out}/demo/gold_user.yaml"
                if "demo/gold_user.yaml" in result.files else "")
        click.echo(f"  next: bench compile {out} -o build/ && bench run build/ "
                   f"--agent scripted:{out}/demo/gold_agent.yaml{user} --allow-python", err=True)


def checkout_of(domain_dir: Path, given: str) -> Path:
    """The τ² checkout: the one given, or the one holding `domain_dir`
    (`<checkout>/data/tau2/domains/<domain>`)."""
    if given:
        return Path(given)
    d = domain_dir.resolve()
    if d.parent.name == "domains" and d.parents[1].name == "tau2" and d.parents[2].name == "data":
        return d.parents[3]
    raise PackErrors(f"✗ --tau2: {domain_dir} is not <checkout>/data/tau2/domains/<domain> "
                     "(give the checkout: --tau2 PATH)")


def extract_variants(domain: str) -> list[str]:
    """banking_knowledge: the retrieval variants whose agent prompts the import composes."""
    if domain != "banking_knowledge":
        return []
    from benchpack.compiler.importers.tau2_banking import tau2_variants

    return tau2_variants()


def tau2_extract(domain_dir: Path, checkout: str, python: str | None, solo: bool = False
                 ) -> dict[str, object]:
    """What τ²'s own code says about the domain (the driver's `extract`; `solo`: its solo
    agent's texts too), or a one-line ✗."""
    from benchpack.runtime.tau2bench.client import Tau2Driver, Tau2DriverError

    root = checkout_of(domain_dir, checkout)
    click.echo(f"… reading τ²'s `{domain_dir.name}` with τ²'s own code from {root}", err=True)
    try:
        with Tau2Driver(root, python) as driver:
            return driver.extract(domain_dir.name, variants=extract_variants(domain_dir.name),
                                  solo=solo)
    except Tau2DriverError as exc:
        raise PackErrors(f"✗ --tau2: {exc}") from None


@click.command(name="import-run")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(RUN_FORMATS))
@click.argument("source", type=click.Path(path_type=Path))
@db_option
@click.option("--run-id", help="Id of the new run [default: proactbench-<model>, "
                               "tau2-<domain>-<agent model>].")
@click.option("--plan", "plan_path", type=click.Path(path_type=Path),
              help="The plan compiled from the imported benchmark: proactbench stores the "
                   "whole dialogue of each session (needed by `bench rejudge`); tau2 joins the "
                   "run to the pack's sessions (fingerprints, episodes).")
def import_run_cmd(fmt: str, source: Path, db: Path, run_id: str | None,
                   plan_path: Path | None) -> None:
    """Store released results as a run (FORMAT: proactbench — a model's
    *_proactivity_bench_results.jsonl: messages, trigger labels with rationale and evidence,
    token usage; tau2 — a τ²-bench results file: one session run per task × trial with τ²'s
    reward, termination, transcript, costs and models, so that `bench report pass-k` gives
    τ²'s own metrics)."""
    from benchpack.runtime import PlanError
    from benchpack.runtime.imports.base import ImportRunError
    from benchpack.runtime.store import StoreOpenError

    try:
        if fmt == "tau2":
            from benchpack.runtime.imports.tau2 import import_run as import_tau2

            t = import_tau2(source, db, run_id=run_id, plan_path=plan_path)
            for note in t.notes:
                click.echo(f"! {note}", err=True)
            click.echo(f"✓ {t.line()} in {db}", err=True)
            click.echo(f"  next: bench report pass-k --db {db} --run {t.run_id}", err=True)
            return
        from benchpack.runtime.imports.proactbench import import_run

        s = import_run(source, db, run_id=run_id, plan_path=plan_path)
    except (ImportRunError, StoreOpenError) as exc:
        raise PackErrors(f"✗ {exc}") from None
    except (FileNotFoundError, PlanError) as exc:  # a plan that cannot be read (a bare
        # ValueError is a bug, issue 27: exit 3)
        raise PackErrors(f"✗ {plan_path}: {exc} (give the plan.json `bench compile` wrote)"
                         ) from None
    for note in s.notes:
        click.echo(f"! {note}", err=True)
    counts = "; ".join(f"{t} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
                       for t, c in s.counts.items())
    click.echo(f"✓ run {s.run_id}: {s.sessions} sessions, {s.triggers} triggers ({counts}) in "
               f"{db}", err=True)
