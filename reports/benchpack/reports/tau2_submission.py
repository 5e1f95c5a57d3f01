"""`bench export tau2-submission RUN… -o submission.json`: τ²-bench's leaderboard
`submission.json` from runs in the store (one run per domain, or one run covering several),
with pass^1 … pass^4 and the cost per domain computed as τ²'s `prepare_submission` does, and
validated against the leaderboard's JSON Schema.

How τ² fills a submission (scripts/leaderboard/prepare_submission.py, read at a2c0247):
`pass_k` = its metrics' pass^k × 100 for k = 1 … 4, unrounded, absent when k is above the
fewest trials any task has; `cost` = the mean agent cost of a trajectory (τ²'s avg_agent_cost:
over the simulations, those without a cost left out); `methodology.user_simulator` = the user
simulator's model; the file is the model dumped without null fields. The same pass^k code as
`bench report pass-k` (`protocols.verified_outcome.pass_hat_ks`) computes the figures, so the
submission equals that report's "pass^k for k = 1 … K" table × 100.

What is refused, each with its reason, all at once:
- a session run that errored outside the agent (τ² would drop it, so pass^k would rest on
  fewer trials than the submission says) and a task with fewer graded trials than `--trials`
  (4: the leaderboard's pass^1 … pass^4), counting planned trials that never ran;
- a run whose pack has no tau2-bench `origin:`, or lists differences, or whose user simulator
  is not a model (`rules`, `scripted:`): not comparable with τ²'s leaderboard. With
  `--allow-differences` such runs are exported as `submission_type: custom`, with
  `verification.modified_prompts: true` and every difference in `verification.details` and
  `methodology.notes` (benchpack cannot tell which differences touch prompts, so it never
  claims they do not);
- two runs of one domain, runs of different agents or user simulators (τ² validates the same).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from benchpack.specs.origin_label import OriginLabel
from benchpack.specs.storeformat import EXACT_COST

from .cost import UNPRICED
from .origin import run_origins

DOMAIN_ORDER = ("retail", "airline", "telecom", "banking_knowledge")
"""τ²'s `Results` fields, in its order (other domains follow; the schema refuses them)."""
PASS_KS = (1, 2, 3, 4)
SCHEMA_IN_CHECKOUT = Path("web/leaderboard/public/submissions/schema.json")
BENCHMARK = "tau2-bench"


class SubmissionRefused(ValueError):
    """Runs that cannot become a submission: every reason, one per line."""

    def __init__(self, reasons: Sequence[str]) -> None:
        self.reasons = list(reasons)
        super().__init__("\n".join(self.reasons))


@dataclass
class SubmissionOptions:
    runs: Sequence[str]
    model_organization: str
    model_name: str | None = None
    submitting_organization: str | None = None
    email: str | None = None
    contact_name: str | None = None
    github: str | None = None
    reasoning_effort: str | None = None
    is_new: bool = False
    submission_date: date | None = None
    evaluation_date: date | None = None
    tau2_version: str | None = None
    user_simulator: str | None = None
    trials: int = 4
    """Every task needs this many graded trials (pass^1 … pass^trials)."""
    allow_differences: bool = False
    domain: str | None = None
    """The domain of sessions that record none (one run only)."""
    tau2_checkout: Path | None = None
    """A τ² checkout: its task lists say whether tasks were left out."""


@dataclass
class DomainFigures:
    domain: str
    runs: list[str]
    k_max: int
    pass_hat: dict[int, float]
    """k → pass^k (a fraction), for k = 1 … K."""
    cost: float | None
    tasks: list[str]
    """τ² task ids of the domain's tasks."""
    cost_known: int = 0
    trajectories: int = 0


@dataclass
class Submission:
    document: dict[str, Any]
    domains: list[DomainFigures]
    notes: list[str] = field(default_factory=list)


def _model(uri: str | None) -> str | None:
    """`litellm:openai/gpt-4.1` → `openai/gpt-4.1` (the model as τ² names it in its info)."""
    if uri is None:
        return None
    return uri.split(":", 1)[1] if uri.startswith("litellm:") else uri


def _is_model(uri: str | None, imported: bool) -> bool:
    return imported or (uri or "").startswith("litellm:")


def _run_rows(con: Any, runs: Sequence[str]) -> dict[str, dict[str, Any]]:
    marks = ", ".join("?" for _ in runs)
    out = {}
    for run, agent, simulator, repeats, created, config in con.execute(
            f"""SELECT run_id, agent, simulator, repeats, created_at, config FROM runs
            WHERE run_id IN ({marks})""", list(runs)).fetchall():
        cfg = json.loads(config) if isinstance(config, str) else (config or {})
        out[str(run)] = {"agent": agent, "simulator": simulator, "repeats": int(repeats or 1),
                         "created": created, "config": cfg,
                         "imported": (cfg.get("imported") or {}).get("format") == "tau2"}
    return out


def _sessions(con: Any, run: str) -> list[tuple[Any, ...]]:
    """(domain, task, τ² task id, session id, repeat, scored, passed, agent cost known?, agent
    cost, error kind) of the run's instructed-user session runs (ablation variants aside)."""
    return list(con.execute(f"""
        WITH agent_cost AS (
            SELECT session_id, repeat, sum({EXACT_COST})::DOUBLE AS cost,
                   count(*) FILTER (WHERE {UNPRICED}) AS unpriced
            FROM llm_calls WHERE run_id = ? AND role = 'agent' GROUP BY ALL)
        SELECT s.domain, coalesce(s.base_session, s.session_id),
               coalesce(json_extract_string(s.extra, '$.tau2.task_id'), s.name),
               s.session_id, s.repeat, s.scored, s.passed,
               c.session_id IS NOT NULL AND c.unpriced = 0, c.cost, s.error_kind
        FROM session_results s LEFT JOIN agent_cost c USING (session_id, repeat)
        WHERE s.run_id = ? AND s.protocol = 'instructed_user' AND s.ablation IS NULL
        ORDER BY 2, s.repeat""", [run, run]).fetchall())


def domain_figures(con: Any, options: SubmissionOptions) -> tuple[list[DomainFigures],
                                                                  list[str], list[str]]:
    """Per domain, τ²'s figures; and the reasons to refuse, and notes."""
    from .builtin import excluded_text

    reasons: list[str] = []
    notes: list[str] = []
    runs = _run_rows(con, options.runs)
    by_domain: dict[str, list[str]] = defaultdict(list)
    tasks: dict[str, dict[str, list[tuple[Any, ...]]]] = defaultdict(lambda: defaultdict(list))
    for run in options.runs:
        rows = _sessions(con, run)
        if not rows:
            reasons.append(f"run {run}: no instructed-user sessions (τ²'s tasks are "
                           "instructed_user sessions: import the domain with `bench import "
                           "tau2`)")
            continue
        unlabelled = [r for r in rows if r[0] is None]
        if unlabelled and (options.domain is None or len(options.runs) > 1):
            reasons.append(f"run {run}: {len(unlabelled)} session runs record no domain "
                           "(give the pack `metadata: {domain: retail}`, or --domain with "
                           "one run)")
            continue
        excluded: dict[str, int] = defaultdict(int)
        never = sorted(set(runs[run]["config"].get("planned_sessions") or [])
                       - {str(r[3]) for r in rows})
        if never:  # promised by the run and never run: tasks with fewer trials than planned
            reasons.append(f"run {run}: {len(never)} planned session(s) never ran — "
                           f"{', '.join(never[:5])}{' …' if len(never) > 5 else ''}; every "
                           "task needs its trials (`bench run … --run-id` resumes)")
        for r in rows:
            domain = str(r[0] or options.domain)
            if not r[5]:
                excluded[str(r[9] or "unclassified")] += 1
                continue
            tasks[domain][r[1]].append((run, *r))
            if run not in by_domain[domain]:
                by_domain[domain].append(run)
        if excluded:
            reasons.append(f"run {run}: {sum(excluded.values())} session runs errored outside "
                           f"the agent ({excluded_text(excluded)}); τ² would leave them out "
                           "and pass^k would rest on fewer trials than the submission says — "
                           + ("rerun them in τ² and import the results again"
                              if runs[run]["imported"] else
                              f"rerun them (`bench run … --run-id {run}` resumes) first"))
    for domain, members in by_domain.items():
        if len(members) > 1:
            reasons.append(f"domain {domain}: in runs {', '.join(members)}; a submission has "
                           "one run per domain")
    figures = [_figures(domain, per_task, by_domain[domain],
                        min(runs[r]["repeats"] for r in by_domain[domain]), options.trials,
                        reasons, notes)
               for domain, per_task in by_domain_order(tasks)]
    return figures, reasons, notes


def _figures(domain: str, per_task: dict[str, list[tuple[Any, ...]]], run_ids: list[str],
             repeats: int, trials: int, reasons: list[str], notes: list[str]
             ) -> DomainFigures:
    """One domain's figures from its graded session runs, `(run, domain, task, τ² task id,
    session, repeat, scored, passed, agent cost known?, agent cost, error kind)` per task; a
    task short of `trials` adds a reason to refuse."""
    from .protocols.verified_outcome import pass_hat_ks

    counts, short = [], []
    for _task, rows in sorted(per_task.items()):
        n, c = len(rows), sum(1 for r in rows if r[7])
        counts.append((n, c))
        if n < trials:
            short.append(f"{rows[0][3]} ({n})")
    if short:
        reasons.append(f"domain {domain}: {len(short)} task(s) with fewer than {trials} graded "
                       f"trials — {', '.join(short[:8])}{' …' if len(short) > 8 else ''}; "
                       f"pass^1 … pass^{trials} need {trials} of every task (`bench run --repeats "
                       f"{trials}` or τ²'s `--num-trials {trials}`, or a lower --trials)")
    k_max, values = pass_hat_ks(counts, repeats)
    pass_hat = {k: math.fsum(v) / len(v) for k, v in values.items()}
    costs = [float(r[9]) for rows in per_task.values() for r in rows
             if r[8] and r[9] is not None]
    n_traj = sum(len(rows) for rows in per_task.values())
    if costs and len(costs) < n_traj:
        notes.append(f"{domain}: cost averages the {len(costs)} of {n_traj} trajectories whose "
                     "agent calls all have a price (τ² leaves out those without a cost too)")
    return DomainFigures(domain, run_ids, k_max, pass_hat,
                         math.fsum(costs) / len(costs) if costs else None,
                         sorted({str(rows[0][3]) for rows in per_task.values()}), len(costs),
                         n_traj)


def by_domain_order(tasks: dict[str, Any]) -> list[tuple[str, Any]]:
    """Domains in τ²'s order, others after them by name."""
    rank = {d: i for i, d in enumerate(DOMAIN_ORDER)}
    return sorted(tasks.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0]))


def _origins(con: Any, runs: dict[str, dict[str, Any]], options: SubmissionOptions
             ) -> tuple[list[str], list[str], str | None]:
    """The differences from τ² (per run, with those its sessions' endings call up), the
    refusals, and the τ² version."""
    differences, reasons = [], []
    versions = set()
    labels = run_origins(con, list(runs))
    for run, row in runs.items():
        origin: OriginLabel | None = labels[run]
        found = []
        if origin is None:
            found.append("its pack has no `origin:` (not an imported τ² pack)")
        elif origin.benchmark != BENCHMARK:
            found.append(f"its pack reproduces {origin.label()}, not {BENCHMARK}")
        else:
            versions.add(origin.version)
            found += list(origin.differences)
        if not _is_model(row["simulator"], row["imported"]):
            found.append(f"its user simulator `{row['simulator']}` is not a language model "
                         "(τ²'s user simulator is)")
        if found and not options.allow_differences:
            reasons.append(f"run {run} is not comparable with τ²-bench: " + "; ".join(found)
                           + " (--allow-differences exports it as a custom submission that "
                           "lists them)")
        differences += [f"{run}: {d}" for d in found]
    version = options.tau2_version or (", ".join(sorted(versions)) if versions else None)
    return differences, reasons, version


def _coverage(figures: list[DomainFigures], checkout: Path | None) -> tuple[bool | None, str]:
    """Did the runs leave τ² tasks out? Known only with a checkout (its `split_tasks.json`
    base split, else every task of `tasks.json`)."""
    if checkout is None:
        return None, "task coverage not checked against τ²'s task lists (no --tau2 checkout)"
    parts, omitted = [], False
    for f in figures:
        folder = checkout / "data" / "tau2" / "domains" / f.domain
        try:
            split = folder / "split_tasks.json"
            if split.is_file():
                ids = {str(t) for t in json.loads(split.read_text(encoding="utf-8"))["base"]}
            else:
                ids = {str(t["id"]) for t in json.loads((folder / "tasks.json").read_text(
                    encoding="utf-8"))}
        except (OSError, ValueError, KeyError, TypeError):
            parts.append(f"{f.domain}: τ²'s task list not readable in {folder}")
            omitted = True
            continue
        missing = ids - set(f.tasks)
        omitted = omitted or bool(missing)
        parts.append(f"{f.domain}: {len(set(f.tasks) & ids)} of τ²'s {len(ids)} tasks"
                     + (f", {len(missing)} left out" if missing else ""))
    return omitted, "; ".join(parts)


def build_submission(con: Any, options: SubmissionOptions,
                     benchpack_version: str | None = None) -> Submission:
    runs = _run_rows(con, options.runs)
    figures, reasons, notes = domain_figures(con, options)
    differences, refused, version = _origins(con, runs, options)
    reasons += refused
    agents = {_model(r["agent"]) for r in runs.values()}
    sims = {_model(r["simulator"]) for r in runs.values()}
    if len(agents) > 1 or len(sims) > 1:
        reasons.append("the runs differ in agent or user simulator (agents: "
                       f"{', '.join(map(str, sorted(agents, key=str)))}; simulators: "
                       f"{', '.join(map(str, sorted(sims, key=str)))}): τ² requires one of "
                       "each for a submission")
    if reasons:
        raise SubmissionRefused(reasons)
    omitted, coverage = _coverage(figures, options.tau2_checkout)
    created = max(float(r["created"] or 0) for r in runs.values())
    results: dict[str, Any] = {}
    for f in figures:
        entry: dict[str, Any] = {f"pass_{k}": f.pass_hat[k] * 100 for k in PASS_KS
                                 if k in f.pass_hat}
        if f.cost is not None:
            entry["cost"] = f.cost
        results[f.domain] = entry
    how = (f"pass^k as τ²-bench computes it, from at least {min(f.k_max for f in figures)} "
           f"trials of every task; exported by benchpack {benchpack_version or ''}".rstrip()
           + f" from run{'s' if len(runs) > 1 else ''} {', '.join(options.runs)}")
    details = [coverage]
    if differences:
        details.insert(0, "Not comparable with τ²-bench: " + "; ".join(differences)
                       + " (benchpack cannot tell which of these touch prompts)")
    methodology: dict[str, Any] = {
        "evaluation_date": (options.evaluation_date or date.fromtimestamp(created)).isoformat(),
        "tau2_bench_version": version,
        "user_simulator": options.user_simulator or next(iter(sims)),
        "notes": how + (". Differences from τ²-bench: " + "; ".join(differences)
                        if differences else ""),
        "verification": {"modified_prompts": bool(differences), "omitted_questions": omitted,
                         "details": ". ".join(details)}}
    doc: dict[str, Any] = {
        "model_name": options.model_name or next(iter(agents)),
        "model_organization": options.model_organization,
        "submitting_organization": options.submitting_organization
        or options.model_organization,
        "submission_date": (options.submission_date or date.today()).isoformat(),
        "submission_type": "custom" if differences else "standard",
        "modality": "text",
        "contact_info": {"email": options.email, "name": options.contact_name,
                         "github": options.github},
        "results": results, "is_new": options.is_new, "trajectories_available": False,
        "methodology": methodology, "reasoning_effort": options.reasoning_effort}
    return Submission(_without_none(doc), figures, notes)


def _without_none(value: Any) -> Any:
    """τ² writes its submission with `exclude_none`."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    return value


def validation_errors(document: dict[str, Any], schema: dict[str, Any], where: str
                      ) -> list[str]:
    """Every violation of `schema`, each located by its JSON path (`where: $.results.mock:
    …`), in document order."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    out = []
    for err in sorted(validator.iter_errors(document), key=lambda e: [str(p) for p in e.path]):
        path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.path)
        out.append(f"{where}: {path}: {err.message}")
    return out


def load_schema(path: Path) -> dict[str, Any]:
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path}: not found (the leaderboard's schema is "
                         f"<τ² checkout>/{SCHEMA_IN_CHECKOUT})") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{path}: not a JSON Schema ({exc})") from None
    if not isinstance(schema, dict):
        raise ValueError(f"{path}: not a JSON Schema (a JSON object)")
    return schema


def dumps(document: dict[str, Any]) -> str:
    """As τ² writes it: indented by 2, non-ASCII kept, a final newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"



class SubmissionInvalid(ValueError):
    """The submission does not validate against the schema: every violation, located."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(self.errors))


def export_submission(db: str | Path, options: SubmissionOptions, out: Path,
                      schema: Path | None, *, wait_s: float = 30.0) -> Submission:
    """Build the submission from the store, validate it against `schema` (every violation at
    once, `SubmissionInvalid`) and write it to `out`; nothing is written when it fails."""
    from importlib.metadata import PackageNotFoundError, version

    from .access import open_store, select_runs

    try:
        bp_version: str | None = version("benchpack")
    except PackageNotFoundError:
        bp_version = None
    loaded = load_schema(schema) if schema is not None else None  # its mistakes first
    with open_store(db, wait_s=wait_s, verify=True) as con:
        options.runs = select_runs(con, list(options.runs))
        sub = build_submission(con, options, bp_version)
    if loaded is not None:
        errors = validation_errors(sub.document, loaded, str(out))
        if errors:
            raise SubmissionInvalid(errors)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dumps(sub.document), encoding="utf-8")
    return sub


__all__ = ["BENCHMARK", "DOMAIN_ORDER", "SCHEMA_IN_CHECKOUT", "DomainFigures", "Submission",
           "SubmissionInvalid", "SubmissionOptions", "SubmissionRefused", "build_submission",
           "domain_figures", "dumps", "export_submission", "load_schema", "validation_errors"]
