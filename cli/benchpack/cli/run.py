"""Run commands: `bench run` and `bench rejudge`, and the run summary they print."""

from __future__ import annotations

import gc
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from . import process
from .params import (
    PackErrors,
    client_settings,
    db_option,
    graph_grader_option,
    json_option,
    llm_client_options,
    plural,
    quiet_option,
)


@click.command()
@click.argument("plan", type=click.Path(path_type=Path), default=Path("build"))
@click.option("--agent", required=True, metavar="URI",
              help="litellm:<model> | cmd:<command> | cmd2:<command> | python:<module>:<callable> | "
                   "scripted:<file> | replay:<file>")
@click.option("--simulator", metavar="URI",
              help="User simulator: rules | scripted:<file> | litellm:<model> "
                   "[default: the pack's defaults.models, else rules]")
@click.option("--judge", metavar="URI",
              help="Judges: rules | scripted:<file> | litellm:<model> "
                   "[default: the pack's defaults.models, else rules]")
@click.option("--planner", metavar="URI",
              help="Trigger-rubric planner (live mode) [default: the pack's, else --simulator]")
@click.option("--trigger-mode", type=click.Choice(["auto", "live", "offline"]), default="auto",
              show_default=True,
              help="Trigger rubrics: live planner+user agent, or offline re-scoring of a fixed "
                   "dialogue (auto: offline when one is available).")
@click.option("--dialogue-from", metavar="RUN_ID",
              help="Offline trigger rubrics: replay the dialogues of this earlier run.")
@graph_grader_option
@click.option("--db", type=click.Path(path_type=Path), default=Path("bench.duckdb"),
              show_default=True, help="DuckDB file to store the run in.")
@click.option("--run-id", help="Name the run (default: <pack>-<time>-<hash>).")
@click.option("--resume", "resume_id", metavar="RUN_ID",
              help="Continue RUN_ID: skip finished (session, fingerprint, repeat) triples.")
@click.option("--repeats", type=click.IntRange(1, 100), help="Repeats per session (pass@k).")
@click.option("--max-concurrency", type=click.IntRange(1, 1024), default=4, show_default=True,
              help="Episode chains run at once.")
@llm_client_options
@click.option("--session", "sessions", multiple=True, metavar="GLOB",
              help="Only run matching sessions (id or name; repeatable), and the sessions "
                   "they depend on.")
@click.option("--alone", is_flag=True,
              help="With --session: run the matching sessions without their dependencies "
                   "(marked `alone` in the store and reported apart).")
@click.option("--allow-python", is_flag=True, help="Allow python graders and tools from the pack.")
@click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), metavar="USD",
              help="Estimate the run's cost first and refuse to start above USD; stop before "
                   "a call that could exceed USD (exit 4; --resume continues).")
@click.option("--force", is_flag=True,
              help="With --max-cost: start even when the estimate exceeds it.")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local",
              show_default=True,
              help="Where episode chains run: this process, or a Ray cluster (extra `ray`).")
@click.option("--ray-address", metavar="ADDRESS",
              help="With --executor ray: the cluster to join (default: start a local one).")
@click.option("--ray-workers", type=click.IntRange(1, 100_000), metavar="N",
              help="With --executor ray: worker actors, one CPU each (default: the cluster's "
                   "CPUs).")
@quiet_option
@json_option
def run(plan: Path, agent: str, simulator: str | None, judge: str | None, planner: str | None,
        trigger_mode: str, dialogue_from: str | None, graph_grader: str, db: Path,
        run_id: str | None, resume_id: str | None, repeats: int | None, max_concurrency: int,
        sessions: tuple[str, ...], alone: bool, allow_python: bool, max_cost: float | None,
        force: bool, executor: str, ray_address: str | None, ray_workers: int | None,
        quiet: bool, as_json: bool, **client: Any) -> None:
    """Run a compiled PLAN (directory with plan.json) against an agent."""
    if process.OWNED:
        # The imports below make ~72,000 objects that live as long as the process and ran
        # ~100 collections doing it (20-45 ms, issue 31); the collector comes back, frozen
        # over them, before the run (677 objects of import-time garbage stay frozen with them)
        gc.disable()
    from benchpack.runtime.prewarm import prewarm_http_client

    # beside the imports below (issue 31)
    prewarm_http_client(client.get("api_base"), (agent, simulator, judge, planner))
    from benchpack.runtime.errors import BenchError
    from benchpack.runtime.runner import RunInterrupted, RunOptions, run_plan

    options = RunOptions(
        plan=plan, agent=agent, simulator=simulator, judge=judge, planner=planner,
        trigger_mode=trigger_mode, dialogue_from=dialogue_from, graph_grader=graph_grader, db=db,
        run_id=resume_id or run_id, resume=resume_id is not None, repeats=repeats,
        max_concurrency=max_concurrency, sessions=list(sessions), alone=alone,
        allow_python=allow_python, max_cost=max_cost, force=force, executor=executor,
        ray_address=ray_address, ray_workers=ray_workers, close_in_background=True,
        ending=None if as_json else _import_printing,
        announce=None if quiet else (lambda text: click.echo(f"· {text}", err=True)),
        progress=not quiet and not as_json, **client_settings(**client))
    if force and max_cost is None:
        raise PackErrors("✗ --force: it starts a run whose estimate exceeds --max-cost "
                         "(give --max-cost USD)")
    if executor != "ray" and (ray_address or ray_workers):
        raise PackErrors(f"✗ {'--ray-address' if ray_address else '--ray-workers'}: it "
                         "applies to the Ray executor (add --executor ray)")
    if alone and not sessions:
        raise PackErrors("✗ --alone: it runs the --session matches without their "
                         "dependencies (name the sessions with --session)")
    if process.OWNED:
        # A run allocates millions of short-lived objects while what the imports made lives
        # as long as the process: the collector walked the latter 400 times a run of 1,000
        # one-call sessions, 0.37 s of a 1.7 s run. Frozen, with younger generations collected
        # less often: 0.10 s (benchmarks/http_bench.py). Only in the `bench` process itself:
        # a program calling the CLI in-process (tests) keeps its own collector settings.
        gc.freeze()
        gc.set_threshold(20_000, 10, 10)
        gc.enable()
    try:
        summary = run_plan(options)
    except BenchError as exc:
        raise PackErrors(f"✗ {exc}") from None
    except RunInterrupted as exc:
        click.echo(f"✗ {exc}; it is marked `interrupted` in {exc.db} (continue it with the "
                   "command below)", err=True)
        click.echo(_resume_command(exc.run_id), err=True)
        sys.exit(130)
    try:
        _report(summary, as_json)
    finally:  # the store's last checkpoint ran while the summary was printed
        if summary.wait_closed is not None:
            try:
                summary.wait_closed()
            except BenchError as exc:  # damaged: named, with the file
                raise PackErrors(f"✗ {exc}") from None


def _report(summary: Any, as_json: bool) -> None:
    if summary.budget_stopped:  # before `finish_summary`: these errors are the budget's, not failures
        if as_json:
            click.echo(json.dumps({**summary.as_dict(), **pass_rates(summary)}, indent=2))
        else:
            print_summary(summary)
        click.echo(f"✗ budget: run {summary.run_id} stopped before a call that could exceed "
                   f"--max-cost ${summary.max_cost:.4f} (spent ${summary.spent:.4f}; "
                   f"{summary.finished} session runs finished, {summary.budget_stopped} "
                   "stopped, to be rerun) (hint: continue with a larger budget: "
                   f"{_resume_command(summary.run_id)})", err=True)
        sys.exit(BUDGET_EXIT)
    finish_summary(summary, as_json)


BUDGET_EXIT = 4
"""`bench run` stopped by `--max-cost` (resumable): neither success nor a mistake."""


def _resume_command(run_id: str) -> str:
    """The `bench run` command as the user typed it, continuing `run_id` (`--run-id` and
    `--resume` replaced by `--resume run_id`)."""
    args = click.get_current_context().meta.get("benchpack.argv") or ["run"]
    args = args[args.index("run") + 1:] if "run" in args else []
    kept: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in ("--run-id", "--resume"):
            skip = True
        elif not a.startswith(("--run-id=", "--resume=")):
            kept.append(a)
    return shlex.join(["bench", "run", *kept, "--resume", run_id])


@click.command()
@click.argument("run_id")
@click.option("--judge", required=True, metavar="URI",
              help="The new judge: rules | scripted:<file> | litellm:<model>")
@click.option("--as", "new_run_id", metavar="NEW_RUN_ID",
              help="Id of the new run (default: RUN_ID+rejudge-<judge>); rerunning the same "
                   "rejudge continues it.")
@click.option("--plan", type=click.Path(path_type=Path),
              help="The compiled plan (default: the plan path RUN_ID recorded).")
@db_option
@graph_grader_option
@click.option("--max-concurrency", type=click.IntRange(1, 1024), default=4, show_default=True,
              help="Sessions judged at once.")
@llm_client_options
@quiet_option
@json_option
def rejudge(run_id: str, judge: str, new_run_id: str | None, plan: Path | None, db: Path,
            graph_grader: str, max_concurrency: int, quiet: bool, as_json: bool,
            **client: Any) -> None:
    """Re-judge the finished sessions of RUN_ID with another judge, as a new run (no agent or
    simulator calls; identical judge prompts come from the response cache)."""
    from benchpack.runtime.errors import BenchError
    from benchpack.runtime.rejudge import RejudgeOptions
    from benchpack.runtime.rejudge import rejudge as rejudge_run

    options = RejudgeOptions(run_id=run_id, judge=judge, new_run_id=new_run_id, plan=plan, db=db,
                             graph_grader=graph_grader, max_concurrency=max_concurrency,
                             progress=not quiet and not as_json, **client_settings(**client))
    try:
        summary = rejudge_run(options)
    except BenchError as exc:
        raise PackErrors(f"✗ {exc}") from None
    finish_summary(summary, as_json)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def finish_summary(summary: Any, as_json: bool) -> None:
    """Print a run's (or rejudge's) summary; exit 1 when sessions errored."""
    if as_json:
        click.echo(json.dumps({**summary.as_dict(), **pass_rates(summary)}, indent=2))
    else:
        print_summary(summary)
    refused = getattr(summary, "python_refused", 0)
    if refused:  # the figures above are over fewer items than the pack has: never silently
        click.echo(click.style(
            f"! {plural(refused, 'python grader')} refused (pack Python runs only with "
            "--allow-python): counted as grader errors, neither passed nor failed; COMP and "
            "scores leave those items out", fg="yellow"), err=True)
    if summary.errors:
        first = summary.first_errors
        raise PackErrors(f"✗ {summary.errors} session{'s' if summary.errors != 1 else ''} "
                         "errored" + (f"; first: {first[0]}" if first else "")
                         + f" (all: bench query \"SELECT name, error FROM sessions WHERE "
                         f"run_id = '{summary.run_id}' AND status = 'error'\" --db "
                         f"{summary.db})")


def pass_rates(s: Any) -> dict[str, Any]:
    """pass@1, pass@k and pass^k over verified-outcome tasks, defined once
    (`stats.PASS_K_DEFINITION`, as `bench report pass-k`): k = the run's repeats; pass@k and
    pass^k over the tasks with at least k graded repeats, which `tasks_k` counts."""
    if not s.pass_counts:  # before the import: the statistics package costs ~6 ms to load
        return {}
    from benchpack.reports.stats import PASS_K_DEFINITION, pass_k_summary

    r = pass_k_summary(s.pass_counts, s.repeats)
    return {"pass_k": r.k, "pass_at_1": r.pass_at_1,
            "pass_at_k": r.pass_at_k if r.k > 1 else None,
            "pass_hat_k": r.pass_hat_k if r.k > 1 else None, "tasks": r.tasks,
            "tasks_k": r.tasks_k, "pass_k_definition": PASS_K_DEFINITION}


def _import_printing() -> None:
    """rich's console and table, which `print_summary` needs, imported on a thread while the
    run's last sessions wait for their models (`RunOptions.ending`): imported after the run,
    they were ~30 ms of CPU between the last answer and the printed summary (issue 31)."""
    import contextlib
    import threading

    def load() -> None:
        with contextlib.suppress(Exception):  # then `print_summary` imports them and says why
            import rich.console
            import rich.table  # noqa: F401

    threading.Thread(target=load, name="benchpack-summary-import", daemon=True).start()


def print_summary(s: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"run {s.run_id}", show_header=False, box=None)
    t.add_column(no_wrap=True)  # the labels: values wrap, a label never breaks
    t.add_column(overflow="fold")
    variants = getattr(s, "ablation_variants", 0)
    finished = (f"{s.finished} finished ({s.finished - variants} sessions + "
                f"{plural(variants, 'ablation variant')}, left out of the figures)"
                if variants else f"{s.finished} finished")
    t.add_row("sessions", f"{finished}, {plural(s.errors, 'error')}, {s.skipped_deps} skipped "
              f"(dependency failed), {s.sessions_skipped_resume} already done")
    if s.errors:  # whose errors: the agent's count as its failures, the rest are left out
        excluded = ", ".join(plural(n, f"{kind} error") for kind, n in s.excluded.items())
        t.add_row("errors", f"{s.agent_errors} of the agent (scored as failures)"
                  + (f"; excluded from the figures: {excluded}" if excluded else ""))
    headline = [(label, value) for label, value in (
        ("PROC", s.proc), ("COMP", s.comp), ("triple F1", s.f1),
        ("trigger score", s.trigger_score), ("verified score", s.score)) if value is not None]
    if headline:
        # the rules judge counts words: its figures must not pass for a judge's verdict
        heuristic = "   (keyword heuristic: rules judge)" if getattr(s, "heuristic_judge", False) \
            else ""
        t.add_row(" / ".join(label for label, _ in headline),
                  " / ".join(_pct(value) for _, value in headline) + heuristic)
    if getattr(s, "alone", 0):
        t.add_row("alone", f"{s.alone} session(s) ran without their dependencies (--alone): "
                  "not in the figures above")
    rates = pass_rates(s)
    if rates:  # verified-outcome sessions: task-level pass rates
        k = rates["pass_k"]
        label, value = "pass@1", _pct(rates["pass_at_1"])
        over = f"pass@1 over {plural(rates['tasks'], 'task')}"
        if k > 1:
            label += f" / pass@{k} / pass^{k}"
            value += f" / {_pct(rates['pass_at_k'])} / {_pct(rates['pass_hat_k'])}"
            over += (f", pass@{k} and pass^{k} over the {rates['tasks_k']} with ≥ {k} graded "
                     f"repeats (k = repeats; unbiased estimator)")
        t.add_row(label, f"{value}   ({over})")
    if getattr(s, "state_left_out", None):
        t.add_row("state check", "left out of the comparison (still recorded): "
                  + ", ".join(s.state_left_out) + " (environments' `state_ignores`)")
    for i, error in enumerate(getattr(s, "first_errors", None) or []):
        t.add_row("first errors" if i == 0 else "", error)
    t.add_row("judge errors", str(s.judge_errors))
    if getattr(s, "grader_errors", 0):
        refused = getattr(s, "python_refused", 0)
        t.add_row("grader errors", str(s.grader_errors) + (
            f" ({refused} python graders refused: pass --allow-python)" if refused else ""))
    if getattr(s, "rejudge_of", None):
        t.add_row("re-judged", f"{s.rejudge_of} with {s.judge}: {s.judge_calls} judge calls "
                  f"({s.judge_cache_hits} from cache)")
    imported = getattr(s, "imported_calls", 0)
    t.add_row("LLM calls", f"{s.llm_calls} ({s.cache_hits} from cache" + (
        f"; {imported} imported, not made here: their tokens are counted below)" if imported
        else ")"))
    t.add_row("tokens", f"{s.prompt_tokens:,} in / {s.completion_tokens:,} out")
    unpriced = getattr(s, "unpriced_calls", 0)
    # a call with no price is unknown, not free: the figure is then only a lower bound
    t.add_row("cost", f"${s.cost:.4f}" + (
        f" + unknown ({plural(unpriced, 'call')} to models litellm has no price for)"
        if unpriced else "") + (
        f"   (--max-cost ${s.max_cost:.4f}: spent ${s.spent:.4f}, estimated "
        f"${s.estimate:.4f})" if getattr(s, "max_cost", None) is not None and
        s.estimate is not None else ""))
    t.add_row("wall time", f"{s.wall_s:.1f} s")
    t.add_row("store", f"{s.db}")
    Console(stderr=True).print(t)
