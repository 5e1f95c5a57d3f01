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

from .imports import extract_variants
from .params import PackErrors


@click.group(name="parity")
def parity() -> None:
    """Compare an imported benchmark with the benchmark's own code, call by call."""


@parity.command(name="tau2")
@click.option("--tau2", "checkout", required=True, type=click.Path(path_type=Path),
              metavar="CHECKOUT", help="A τ²-bench checkout (src/tau2, data/tau2); nothing is "
                                       "installed, τ²'s own code is run from it.")
@click.option("--domain", required=True, metavar="DOMAIN",
              help="retail, mock, airline, telecom or banking_knowledge.")
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
            extract = driver.extract(domain, variants=extract_variants(domain))
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


def _dialogue_declared(domain: str) -> list[Any]:
    """The dialogue differences a domain declares: (why, role, what to drop before comparing
    again). None today: banking_knowledge's `user-tools-per-task` (its customer offered all of
    its tools) went away with the session's `user.tools`; a new one goes here, by domain."""
    declared: dict[str, list[Any]] = {}
    return declared.get(domain, [])


DIALOGUE_VARS = {"banking_knowledge": "retrieval"}
"""The pack variable a dialogue check sets (`--retrieval`): banking's retrieval configuration,
run on τ²'s side as its matching variant."""


def _retrieval_variant(domain: str, retrieval: str) -> str | None:
    """τ²'s retrieval variant for `--retrieval` (None for a domain without one)."""
    if domain not in DIALOGUE_VARS:
        if retrieval != "none":
            raise click.UsageError(f"--retrieval: {domain} has no retrieval configuration")
        return None
    from benchpack.compiler.importers.tau2_banking import RETRIEVAL_NAMES

    theirs = {ours: name for name, ours in RETRIEVAL_NAMES.items() if ours}
    if retrieval not in theirs:
        raise click.UsageError(f"--retrieval: unknown {retrieval} (one of "
                               f"{', '.join(theirs)})")
    return theirs[retrieval]
PACK_PLACES: dict[str, dict[str, Any]] = {"banking_knowledge": {"service": "banking", "environment": "bank"}}
"""Where an imported pack keeps a domain's database, when not under the domain's name."""


def _tasks(domain: str, domain_dir: Path) -> list[dict[str, Any]]:
    """The domain's tasks as τ² loads them (telecom's tasks_small.json when its tasks.json is
    absent; banking's tasks/task_*.json)."""
    if domain == "banking_knowledge":
        from benchpack.compiler.importers.tau2_banking import read_tasks

        return read_tasks(domain_dir)
    from benchpack.compiler.importers.tau2_telecom import tasks_file

    path = tasks_file(domain_dir) if domain == "telecom" else domain_dir / "tasks.json"
    tasks: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return tasks


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

    from benchpack.runtime.tau2bench.compare import BUILTIN, DOMAIN_DECLARED, Declared
    from benchpack.runtime.tau2bench.parity import ParityRun, run_parity

    tasks = _tasks(domain, domain_dir)
    # a mismatch both fixes explain is counted once, for the first of them
    ordered = sorted(differences, key=lambda d: d["id"] != "fix:payment-rounding")
    declared = [*(Declared(d["id"], f"{d['what']} — {d['why']}", **_scope(d["id"]))
                  for d in ordered), *DOMAIN_DECLARED.get(domain, []), *BUILTIN]
    where = PACK_PLACES.get(domain, {})
    run = ParityRun(plan=plan, domain=domain, extract=extract, tasks=tasks, workdir=work,
                    calls=calls, seed=seed, **where)

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


@parity.command(name="tau2-dialogues")
@click.option("--tau2", "checkout", required=True, type=click.Path(path_type=Path),
              metavar="CHECKOUT", help="A τ²-bench checkout (src/tau2, data/tau2).")
@click.option("--domain", required=True, metavar="DOMAIN",
              help="retail, mock, airline, telecom or banking_knowledge.")
@click.option("--tau2-python", metavar="PY",
              help="The Python that can import τ² [default: $BENCH_TAU2_PYTHON, else the "
                   "checkout's .venv].")
@click.option("--tasks", "task_list", metavar="ID[,ID]",
              help="These tasks [default: every task of the domain].")
@click.option("--limit", type=click.IntRange(1), help="Only the first N tasks.")
@click.option("--kinds", metavar="KIND[,KIND]",
              help="Trajectories: gold, nothing, permuted, errors, steps, unfinished "
                   "[default: all].")
@click.option("--max-messages", type=click.IntRange(2), default=40, show_default=True,
              help="τ²'s max_steps for both sides (the limit the steps/unfinished kinds hit; "
                   "smaller than τ²'s 200 so the check stays quick).")
@click.option("--solo", is_flag=True,
              help="τ²'s solo mode (telecom, mock): its solo agent against a `--solo` import; "
                   "kinds gold, nothing, text, short, together, wrong.")
@click.option("--retrieval", default="none", show_default=True, metavar="VARIANT",
              help="banking_knowledge: the pack's `--var retrieval` both sides run with "
                   "(none, full, golden, bm25, grep, bm25_grep, shell; τ²'s matching variant).")
@click.option("--examples", type=click.IntRange(0), default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def parity_tau2_dialogues(checkout: Path, domain: str, tau2_python: str | None,
                          task_list: str | None, limit: int | None, kinds: str | None,
                          max_messages: int, solo: bool, retrieval: str, examples: int,
                          as_json: bool) -> None:
    """Whole dialogues through τ²'s own runner and through benchpack's, both talking to one
    scripted model endpoint on 127.0.0.1 that answers as a function of each request. Compares
    each dialogue's ending, reward and reward components, and every request the agent, the
    user simulator and the judge received (messages, tools, sampling settings). With --solo,
    τ²'s solo agent (no user) against the `--solo` import."""
    from benchpack.runtime.tau2bench.client import Tau2Driver, Tau2DriverError
    from benchpack.runtime.tau2bench.dialogues import KINDS as DIALOGUE_KINDS
    from benchpack.runtime.tau2bench.solo import KINDS as SOLO_KINDS

    known = SOLO_KINDS if solo else DIALOGUE_KINDS
    wanted = [k.strip() for k in (kinds or ",".join(known)).split(",") if k.strip()]
    bad = [k for k in wanted if k not in known]
    if bad:
        raise click.UsageError(f"--kinds: unknown {', '.join(bad)} (kinds: {', '.join(known)})")
    theirs_retrieval = _retrieval_variant(domain, retrieval)
    domain_dir = Path(checkout) / "data" / "tau2" / "domains" / domain
    try:
        with Tau2Driver(checkout, tau2_python) as driver, \
                tempfile.TemporaryDirectory(prefix="bench-parity-") as tmp:
            _say(f"… τ² {driver.info.get('python')} from {driver.checkout}")
            extract = driver.extract(domain, variants=extract_variants(domain), solo=solo)
            tasks = _tasks(domain, domain_dir)
            plan_dir, imported = _dialogue_pack(domain_dir, extract, max_messages, Path(tmp),
                                                solo, retrieval)
            ids = [i for i in ([x.strip() for x in task_list.split(",")] if task_list else
                               [str(t.get("id")) for t in tasks]) if i in imported]
            ids = ids[:limit] if limit else ids
            if not ids:
                raise PackErrors("✗ parity tau2-dialogues: no imported task selected")
            report = (_solo if solo else _dialogues)(driver, domain, extract, tasks, ids,
                                                     wanted, plan_dir, max_messages, imported,
                                                     theirs_retrieval)
    except Tau2DriverError as exc:
        raise PackErrors(f"✗ parity tau2-dialogues: {exc}") from None
    from benchpack.runtime.tau2bench.dialogues import render

    if as_json:
        click.echo(json.dumps(report.as_json(), ensure_ascii=False, indent=1, default=str))
    else:
        click.echo(render(report, examples))
    if report.mismatches:
        raise SystemExit(1)


def _dialogue_pack(domain_dir: Path, extract: dict[str, Any], max_messages: int, work: Path,
                   solo: bool = False, retrieval: str = "none") -> tuple[Path, dict[str, str]]:
    """Import with τ²'s texts (`solo`: in τ²'s solo mode), the message limit set to the
    check's, and compile (`retrieval`: the domain's variable, if it has one); the plan and its
    sessions' names by τ² task id."""
    import re

    from benchpack.compiler import compile_pack
    from benchpack.compiler.importers import ImportError_, import_pack

    pack = work / "pack"
    try:
        result = import_pack("tau2", domain_dir, pack, tau2=extract,
                             **({"solo": True} if solo else {}))
    except ImportError_ as exc:
        raise PackErrors(f"✗ parity tau2-dialogues: {exc}") from None
    text = (pack / "pack.yaml").read_text(encoding="utf-8")
    text, n = re.subn(r"(?m)^(\s+max_messages: )\d+$", rf"\g<1>{max_messages}", text)
    if n != 1:
        raise PackErrors("✗ parity tau2-dialogues: the imported pack.yaml has no "
                         "`max_messages:` default to set (hint: a benchpack bug)")
    (pack / "pack.yaml").write_text(text, encoding="utf-8")
    compiled = compile_pack(pack, work / "plan", use_cache=False,
                            variables={DIALOGUE_VARS[domain_dir.name]: retrieval}
                            if domain_dir.name in DIALOGUE_VARS else None)
    if not compiled.ok:
        first = next((d.format() for d in compiled.diagnostics if d.severity == "error"), "")
        raise PackErrors(f"✗ parity tau2-dialogues: the pack does not compile: {first}")
    sessions = json.loads((work / "plan" / "plan.json").read_text(encoding="utf-8"))["sessions"]
    del result
    return work / "plan", {_tau2_id(s): str(s["name"]) for s in sessions.values()}


def _tau2_id(session: dict[str, Any]) -> str:
    """The τ² task id of an imported session: its name, or its `tau2-id:` tag when τ²'s id is
    no valid pack id (telecom's)."""
    tags = (session.get("metadata") or {}).get("tags") or []
    return next((t[len("tau2-id:"):] for t in tags if t.startswith("tau2-id:")),
                str(session["name"]))


def _probe_calls(driver: Any, domain: str, extract: dict[str, Any]
                 ) -> tuple[tuple[str, dict[str, Any]], tuple[str, dict[str, Any]]]:
    """A call that fails and a read call that succeeds without changing anything, each tried
    in τ² first: the errors and steps kinds repeat them."""
    failing: tuple[str, dict[str, Any]] | None = None
    passing: tuple[str, dict[str, Any]] | None = None
    for tool in extract["tools"]:
        params = tool["schema"]["function"]["parameters"]
        props, required = params.get("properties") or {}, params.get("required") or []
        if failing is None and required and all(
                (props.get(p) or {}).get("type") == "string" for p in required):
            args = {p: "no-such-id" for p in required}
            if driver.apply(domain, [{"name": tool["name"], "arguments": args}])["calls"][0][
                    "error"]:
                failing = (tool["name"], args)
        if passing is None and not tool["mutates_state"] and all(
                (props.get(p) or {}).get("type") == "string" for p in required):
            # no argument, or (telecom's tools all take some) each a key of the database
            for key in [""] if not required else _some_keys(extract)[:8]:
                args = {p: key for p in required}
                answer = driver.apply(domain, [{"name": tool["name"], "arguments": args}])
                if not answer["calls"][0]["error"] and not answer.get("changes"):
                    passing = (tool["name"], args)
                    break
    for tool in extract["tools"] if failing is None else []:
        # banking's tools answer an unknown id with a text, not an error: leave out a required
        # argument instead (Python's TypeError, an error on both sides)
        if (tool["schema"]["function"]["parameters"].get("required") or []) and driver.apply(
                domain, [{"name": tool["name"], "arguments": {}}])["calls"][0]["error"]:
            failing = (tool["name"], {})
            break
    if failing is None or passing is None:
        raise PackErrors(f"✗ parity tau2-dialogues: the `{domain}` tools offer no "
                         f"{'failing' if failing is None else 'side-effect-free'} call to "
                         "repeat (hint: leave out the errors and steps kinds)")
    return failing, passing


def _some_keys(extract: dict[str, Any]) -> list[str]:
    """The first row key of each table of τ²'s database."""
    return [str(next(iter(rows))) for rows in (extract.get("db") or {}).values()
            if isinstance(rows, dict) and rows]


def _dialogues(driver: Any, domain: str, extract: dict[str, Any], tasks: list[Any],
               ids: list[str], kinds: list[str], plan_dir: Path, max_messages: int,
               names: dict[str, str] | None = None, retrieval: str | None = None) -> Any:
    from benchpack.compiler.importers.tau2_dialogue import trial_seeds
    from benchpack.runtime.tau2bench.dialogues import (
        DialogueReport,
        Script,
        compare_outcomes,
        compare_requests,
        run_ours,
        script_tasks,
        text_rounds,
    )
    from benchpack.runtime.tau2bench.scripted_model import ScriptedModel

    failing, passing = _probe_calls(driver, domain, extract)
    scripted = script_tasks(tasks, extract, ids)
    defaults = extract.get("defaults") or {}
    max_errors = int(defaults.get("DEFAULT_MAX_ERRORS") or 10)
    # τ²'s first trial's seed, as its batch runner draws it; benchpack's repeat 1 uses the same
    seed = trial_seeds(int(defaults.get("DEFAULT_SEED") or 300), 1)[0]
    report = DialogueReport()
    declared: list[Any] = _dialogue_declared(domain)
    rounds = text_rounds(scripted, lambda t: t.scenario)
    for n, batch in enumerate(rounds, 1):
        script = Script(batch, failing, passing)
        batch_ids = [t.id for t in batch]
        with ScriptedModel(script) as model:
            _say(f"… round {n}/{len(rounds)}, τ²: {len(kinds)} kind(s) × {len(batch_ids)} "
                 "task(s)")
            theirs = driver.simulate(domain, batch_ids, kinds, model.base_url,
                                     max_steps=max_messages, max_errors=max_errors, seed=seed,
                                     prefix="tau2", retrieval=retrieval)
            ours = run_ours(plan_dir, kinds, batch_ids, model.base_url, prefix="bp", names=names,
                            progress=lambda text: _say(f"… {text}"))
            compare_outcomes(theirs, ours, report)
            compare_requests(model.requests, script, ("tau2", "bp"), report, declared)
            for failure in model.failures[:5]:
                report.notes.append(f"the scripted model could not answer: {failure}")
    report.notes.append(f"{len(ids)} task(s) × {', '.join(kinds)}; max_messages {max_messages}, "
                        f"max_tool_errors {max_errors}; τ² Python {driver.info.get('python')}"
                        + (f"; τ²'s retrieval variant {retrieval}" if retrieval else ""))
    return report


def _solo(driver: Any, domain: str, extract: dict[str, Any], tasks: list[Any], ids: list[str],
          kinds: list[str], plan_dir: Path, max_messages: int,
          names: dict[str, str] | None = None, retrieval: str | None = None) -> Any:
    """`_dialogues` for τ²'s solo mode (`runtime/tau2bench/solo.py`)."""
    from benchpack.compiler.importers.tau2_dialogue import trial_seeds
    from benchpack.runtime.tau2bench import solo
    from benchpack.runtime.tau2bench.dialogues import (
        DialogueReport,
        compare_outcomes,
        compare_requests,
        run_ours,
    )
    from benchpack.runtime.tau2bench.scripted_model import ScriptedModel

    failing, _ = _probe_calls(driver, domain, extract)
    defaults = extract.get("defaults") or {}
    max_errors = int(defaults.get("DEFAULT_MAX_ERRORS") or 10)
    seed = trial_seeds(int(defaults.get("DEFAULT_SEED") or 300), 1)[0]
    report = DialogueReport()
    batches = solo.rounds(solo.solo_tasks(tasks, ids))
    for n, batch in enumerate(batches, 1):
        script = solo.SoloScript(batch, failing)
        batch_ids = [t.id for t in batch]
        with ScriptedModel(script) as model:
            _say(f"… round {n}/{len(batches)}, τ² solo: {len(kinds)} kind(s) × "
                 f"{len(batch_ids)} task(s)")
            theirs = driver.simulate(domain, batch_ids, kinds, model.base_url,
                                     max_steps=max_messages, max_errors=max_errors, seed=seed,
                                     prefix="tau2", solo=True)
            ours = solo.solo_endings(run_ours(plan_dir, kinds, batch_ids, model.base_url,
                                              prefix="bp", names=names,
                                              progress=lambda text: _say(f"… {text}")))
            for note in sorted({str(v["note"]) for v in theirs.values() if v.get("note")}):
                if note not in report.notes:
                    report.notes.append(note)
            solo.declare_text_raises(theirs, ours, report)
            compare_outcomes(theirs, ours, report)
            compare_requests(model.requests, script, ("tau2", "bp"), report)
            for failure in model.failures[:5]:
                report.notes.append(f"the scripted model could not answer: {failure}")
    report.notes.append(f"solo: {len(ids)} task(s) × {', '.join(kinds)}; max_messages "
                        f"{max_messages}, max_tool_errors {max_errors}; τ² Python "
                        f"{driver.info.get('python')}")
    return report




# issue 24: the knowledge-base search tools against τ²'s retrieval (its own module)
from .parity_retrieval import parity_tau2_retrieval  # noqa: E402

parity.add_command(parity_tau2_retrieval)
