"""`bench rejudge`: re-decide what the judge decided in a finished run, from the store alone.

No agent, user simulator or planner is ever called: the dialogue is fixed. For every finished
session of the source run the new judge re-decides, with the material the original judge had:

- checklist rubric items: the trajectory from `messages` and `tool_calls`, final workspace
  files and service rows from `snapshots`, the item's evidence selection from the plan; rule
  and python items keep their stored results (they read the same final state);
- trigger points: the stored response and rubric, and the history up to the trigger's user
  message (live dialogues: the stored messages; offline replays: the fixed dialogue, each
  regenerated answer replaced by the reference answer it stood in for); the quote check
  applies as in `bench run`;
- `score:` blocks (verified_outcome): graded by `score_block.grade_score_block`, the code `bench
  run` grades them with, over the trace rebuilt from the store (in-task tool records, final
  files and service rows from `snapshots`, in-task messages, the reply from `turns`): judged
  items and assertions are re-decided, deterministic items recomputed (they come out as stored);
  `score_components` and `extra.score` are rewritten, and the block's score and pass replace
  the checklist's, as in `bench run`;
- instructed_user rewards (that protocol's `score:`): the assertions are re-judged (the
  history, messages, tool records and final files as `bench run` gave them) and the product
  recombined (`instructed_user.combine_reward`); the state, action and communicate checks keep
  their stored results in `extra.reward` (they replayed the gold on the final state, no judge);
- knowledge-graph coverage: the stored predicted triples against the plan's ground truth
  (`graph_grader` as in `bench run`: `auto` matches when the judge is `rules`);
- the derived scores: COMP, verified-outcome soft score and pass (with the caps that fired, as
  stored in `sessions.extra.verify`), trigger pass rate and weighted score, triple P/R/F1.

Intent statuses are not re-decided. They are interactive: after each judge decision the
simulated user answered, volunteered or moved on, so a different judge would have produced a
different dialogue. The new run leaves PROC, `proc_group` and the status counts NULL and stores
no `intent_status` rows. Instead the new judge answers, for every turn of the fixed transcript,
the completion check and the clarification check over the intents the *original* run still had
open then, and `intent_checks` keeps each decision next to the original one: an audit of the
original decisions (how often the new judge would have decided otherwise), not a new PROC. The
evidence of a turn is rebuilt from the stored turn: its reply, tool calls and `ask_user`
questions; the files it read or wrote as the tool calls show them (`write_file` content,
`read_file` results; an edited file as it was at the end of the session).

The result is a new run in the same store (default id `<run>+rejudge-<judge>`): `runs.config`
records `rejudge_of` (the run given), `source_run` (whose transcripts these are; rejudging a
rejudge goes back to the original) and `judge`. The agent-side rows (`turns`, `messages`,
`tool_calls`, `stage_events`, `snapshots`, the agent/simulator/planner `llm_calls`) are copied,
so every report works on it unchanged; sessions that did not finish in the source run are copied
as they are. Running the same rejudge again continues it: sessions already re-judged are kept
(a different judge or source under the same id is refused). Judge calls go through the same
`LLMClient` as `bench run` (response cache, retries, per-model limits): identical prompts are
served from the cache, so repeating a rejudge costs nothing. Judge errors are recorded (NULL
scores, `judge_errors`), never scored.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchpack.specs.plan import Plan

from .env.workspace import snapshot_files
from .errors import UsageError
from .graders import CapHit
from .graders.guards import GUARDS_KEY
from .judges.base import Templates
from .judges.rubric import agent_output, rubric_judge
from .planfile import load_plan
from .protocols.base import ProtocolRegistry, default_protocols
from .rejudge_types import RejudgeInput, RejudgeSite
from .roles import Roles
from .runner import (
    ClientOptions,
    Progress,
    RunSummary,
    make_llm_client,
    redactor_for,
    summarise,
)
from .score_block import ScoreOutcome, grade_score_block
from .session import (
    ChecklistOutcome,
    ItemResult,
    checklist_outcome,
    grading_trace,
    initial_files,
    judge_rubric_items,
    judged_by_rubric,
    render_transcript,
    rubric_item,
)
from .session_rows import call_texts, llm_call_row
from .store import SESSION_TABLES, SessionRows, Store
from .types import LLMCallRecord, Message, ToolRecord

AGENT_SIDE = ("turns", "messages", "tool_calls", "stage_events")
"""Per-session tables copied unchanged: what the agent and the simulated user did."""
JUDGE_EXTRA = ("judge_errors", "trigger_labels", "triggers_judged", "verify", "score",
               "graph_grader", "covered", "valid_predicted", "graph_judge_errors",
               "precision_lower_bound")
"""`sessions.extra` keys the original judge wrote; the rejudge writes its own."""


@dataclass(kw_only=True, frozen=True)
class RejudgeOptions(ClientOptions):
    run_id: str
    """The finished run whose sessions are re-judged."""
    judge: str
    """The new judge: `rules`, `scripted:<file>` or `litellm:<model>`."""
    new_run_id: str | None = None
    """The new run's id (`--as`); default `<run_id>+rejudge-<judge>`."""
    plan: str | Path | None = None
    """The compiled plan; default: the `plan_path` the run recorded."""
    db: str | Path = "bench.duckdb"
    graph_grader: str = "auto"
    max_concurrency: int = 4
    """Sessions judged at once (requests per model are limited by the client)."""
    progress: bool = True


@dataclass
class RejudgeSummary(RunSummary):
    rejudge_of: str = ""
    source_run: str = ""
    judge: str = ""
    judge_calls: int = 0
    """Judge calls recorded in the new run (cache hits included)."""
    judge_cache_hits: int = 0


@dataclass
class _Rejudge:
    options: RejudgeOptions
    plan: Plan
    store: Store
    roles: Roles
    source: str
    """The run whose transcripts are read (the original, even when rejudging a rejudge)."""
    new_id: str
    protocols: ProtocolRegistry = field(default_factory=default_protocols)
    """Each session's interpreter re-judges its protocol's own parts."""


def default_run_id(run_id: str, judge: str) -> str:
    scheme, _, rest = judge.partition(":")
    name = Path(rest).stem if scheme == "scripted" else (rest or scheme)
    return f"{run_id}+rejudge-" + (re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "judge")


def rejudge(options: RejudgeOptions) -> RejudgeSummary:
    """Synchronous entry point (the CLI's)."""
    return asyncio.run(rejudge_async(options))


async def rejudge_async(options: RejudgeOptions) -> RejudgeSummary:
    if not Path(options.db).exists():
        raise UsageError(f"{options.db}: no such store")
    started = time.time()
    store = Store(options.db, redactor_for(options))  # a StoreOpenError says why it cannot be opened for writing
    try:
        return await _rejudge(options, store, started)
    finally:
        store.close()


def _config(row: dict[str, Any]) -> dict[str, Any]:
    config = row.get("config") or {}
    return dict(json.loads(config) if isinstance(config, str) else config)


async def _rejudge(options: RejudgeOptions, store: Store, started: float) -> RejudgeSummary:
    given = store.run_exists(options.run_id)
    if given is None:
        raise UsageError(f"no run `{options.run_id}` in {options.db}")
    source = str(_config(given).get("source_run") or options.run_id)
    if store.run_exists(source) is None:
        raise UsageError(f"run `{options.run_id}` re-judges `{source}`, which is no longer in "
                         f"{options.db}")
    new_id = options.new_run_id or default_run_id(options.run_id, options.judge)
    if new_id in (options.run_id, source):
        raise UsageError(f"--as `{new_id}` would overwrite the run being re-judged")
    existing = store.run_exists(new_id)
    if existing is not None:
        cfg = _config(existing)
        if cfg.get("rejudge_of") != options.run_id or existing.get("judge") != options.judge:
            raise UsageError(f"run `{new_id}` already exists and is not a re-judging of "
                             f"`{options.run_id}` by `{options.judge}`; choose another --as")
    plan_path = options.plan or given["plan_path"]
    if not plan_path:  # `bench import-run` without --plan records none
        raise UsageError(f"run `{options.run_id}` recorded no plan (it was imported without "
                         "--plan); pass --plan with the plan compiled from its corpus")
    plan = load_plan(plan_path)
    rows = store.session_rows(source)
    for r in rows:
        extra = r.get("extra")
        r["extra"] = json.loads(extra) if isinstance(extra, str) else extra
    changed = [f"{r['session_id']}" for r in rows if r["status"] == "finished" and (
        r["session_id"] not in plan.sessions
        or plan.sessions[r["session_id"]].fingerprint != r["fingerprint"])]
    if changed:
        raise UsageError(f"the plan {plan_path} is not the one run `{source}` ran: "
                         f"{len(changed)} session(s) are missing or changed, e.g. "
                         f"{', '.join(sorted(set(changed))[:3])}; pass --plan with its plan")
    if options.graph_grader not in ("auto", "llm", "match"):
        raise UsageError(f"unknown graph grader `{options.graph_grader}` (auto, llm or match)")
    clients: list[Any] = []

    def llm() -> Any:
        if not clients:
            clients.append(make_llm_client(options))
        return clients[0]

    roles = Roles.resolve({"judge": options.judge}, {}, Templates(plan.prompts), llm,
                          plan.defaults.seed)
    roles.seeds = list(plan.defaults.repeat_seeds or [])
    if options.graph_grader == "llm" and roles.mode("judge") == "rules":
        raise UsageError("--graph-grader llm needs a judge: pass --judge litellm:<model> or "
                         "--judge scripted:<file>")
    role_files = {k: v for k, v in (_config(given).get("role_files") or {}).items()
                  if k != "judge"}  # the source's judge is not this run's
    config = {**_config(given), "run_id": new_id, "judge": options.judge,
              "role_files": {**role_files, **roles.file_digests()},
              "rejudge_of": options.run_id, "source_run": source,
              "rejudge": {"plan": str(plan_path), "graph_grader": options.graph_grader,
                          "max_concurrency": options.max_concurrency,
                          "cache_dir": str(options.cache_dir) if options.cache_dir else None,
                          "use_cache": options.use_cache, "api_base": options.api_base,
                          "api_key_env": options.api_key_env}}
    run_row = {**given, "run_id": new_id, "created_at": started, "updated_at": started,
               "plan_path": str(plan_path), "judge": options.judge, "config": config,
               "status": "running"}
    if existing is not None:
        run_row["created_at"] = existing["created_at"]
    store.upsert_run(run_row)

    ctx = _Rejudge(options, plan, store, roles, source, new_id)
    finished = store.finished(new_id)
    todo = [r for r in rows
            if (r["session_id"], r["fingerprint"], int(r["repeat"])) not in finished]
    progress = Progress(len(todo), options.progress, "bench rejudge")
    stats = {"run": 0, "finished": 0, "errors": 0, "skipped": 0}
    sem = asyncio.Semaphore(max(1, options.max_concurrency))
    store.start()

    async def one(row: dict[str, Any]) -> None:
        async with sem:
            out = await _session(ctx, row)
        stats["run"] += 1
        status = out.session["status"]
        key = {"finished": "finished", "skipped": "skipped"}.get(status, "errors")
        stats[key] += 1
        store.submit(out)
        progress.advance(str(row["name"]), error=status != "finished")

    try:
        await asyncio.gather(*(one(r) for r in todo))
        if clients and clients[0].cache is not None:
            clients[0].cache.finish_soon()
        store.flush()
    finally:
        progress.stop()
    done = store.session_rows(new_id)
    ok = all(r["status"] == "finished" for r in done)
    run_row["updated_at"] = time.time()
    run_row["status"] = "finished" if ok and given["status"] == "finished" else "partial"
    store.upsert_run(run_row)
    summary = summarise(store, new_id, len(rows), stats, len(rows) - len(todo),
                        time.time() - started, int(given.get("repeats") or 1))
    with store.reading() as con:
        calls = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE cache_hit) FROM llm_calls WHERE run_id = ? "
            "AND role = 'judge'", [new_id]).fetchone()
    return RejudgeSummary(**summary.__dict__, rejudge_of=options.run_id, source_run=source,
                          judge=options.judge, judge_calls=int(calls[0]),
                          judge_cache_hits=int(calls[1]))


# --------------------------------------------------------------------------- one session


async def _session(ctx: _Rejudge, row: dict[str, Any]) -> SessionRows:
    sid, repeat = str(row["session_id"]), int(row["repeat"])
    if row["status"] != "finished":
        return _copy(ctx, row)
    try:
        return await _judge_session(ctx, row)
    except Exception as exc:  # a bug or a broken judge script: this session errors, others go on
        sess = {**row, "run_id": ctx.new_id, "status": "error",
                # not the agent's: its dialogue finished; left out of the figures, counted
                "error_kind": "infrastructure",
                "error": f"rejudge failed: {type(exc).__name__}: {exc}"}
        return SessionRows(ctx.new_id, sid, repeat, sess)


def _copy(ctx: _Rejudge, row: dict[str, Any]) -> SessionRows:
    """A session that did not finish in the source run, as it is."""
    sid, repeat = str(row["session_id"]), int(row["repeat"])
    prefix = (ctx.new_id, sid, repeat)
    tables = {t: [(*prefix, *r) for r in ctx.store.session_table(t, ctx.source, sid, repeat)]
              for t in SESSION_TABLES}
    return SessionRows(ctx.new_id, sid, repeat, {**row, "run_id": ctx.new_id}, tables)


async def _judge_session(ctx: _Rejudge, row: dict[str, Any]) -> SessionRows:
    store, source = ctx.store, ctx.source
    sid, repeat = str(row["session_id"]), int(row["repeat"])
    s = ctx.plan.sessions[sid]
    calls: list[LLMCallRecord] = []
    site = RejudgeSite(ctx.roles, s, repeat, calls.append)
    stored = {t: store.session_table(t, source, sid, repeat) for t in SESSION_TABLES}
    extra = dict(row.get("extra") or {})
    messages = [Message(role, content or "", int(turn), tool_call_id=call_id, name=name)
                for turn, role, content, _, call_id, name in store.transcript(source, sid, repeat)]
    records = [_tool_record(r) for r in stored["tool_calls"]]
    snap = store.snapshot(source, str(row["episode"]), repeat, sid) or {}
    files = snapshot_files(dict(snap.get("files") or {}))
    state: dict[str, dict[str, list[dict[str, Any]]]] = dict(snap.get("services") or {})
    end = _dialogue_end(ctx, row, extra, stored["turns"])
    in_task = [r for r in records if end is None or r.turn <= end]
    replies = [str(t[2] or "") for t in stored["turns"] if end is None or int(t[0]) <= end]

    metrics: dict[str, Any] = {}
    tables: dict[str, list[tuple[Any, ...]]] = {}
    errors: list[str] = []
    own = RejudgeInput(site, ctx.plan, ctx.store, source, ctx.options.graph_grader, row, stored,
                       dict(extra), messages, records, files)
    outcome, part, graded = await asyncio.gather(
        _checklist(site, stored["checklist_results"], messages, records, in_task, files, state,
                   extra, end, initial_files(ctx.plan, s)),
        ctx.protocols.get(s.protocol).rejudge(own),
        _score(ctx, site, messages, records, in_task, files, state, replies, end,
               extra.get(GUARDS_KEY) or ()))
    for key in JUDGE_EXTRA:
        extra.pop(key, None)
    tables["checklist_results"] = outcome.rows
    metrics.update(comp=outcome.comp, score=outcome.score, passed=outcome.passed)
    errors += [f"checklist item {r[0]}: {r[7]}" for r in outcome.rows
               if r[7] and r[2] == "rubric"]
    if graded is not None:  # the `score:` block decides, as in `bench run`
        metrics.update(score=graded.final, passed=graded.passed)
        extra["score"] = graded.extra
        tables["score_components"] = graded.rows
        errors += [f"score item {e}" for e in graded.errors]
    elif outcome.verify is not None:
        extra["verify"] = outcome.verify
    # the protocol's own parts last, as `bench run` merges its result (a reward replaces the
    # checklist's score)
    extra.update(part.extra)
    metrics.update(part.metrics)
    tables.update(part.tables)
    errors += part.errors
    judge_errors = (outcome.judge_errors + part.judge_errors
                    + (graded.judge_errors if graded is not None else 0))

    prefix = (ctx.new_id, sid, repeat)
    kept = [r for r in stored["llm_calls"] if r[1] != "judge"]
    start = max((int(r[0]) for r in stored["llm_calls"]), default=-1) + 1
    out = {t: [(*prefix, *r) for r in stored[t]] for t in AGENT_SIDE}
    out["llm_calls"] = ([(*prefix, *r) for r in kept]
                        + [(*prefix, *llm_call_row(start + k, c)) for k, c in enumerate(calls)])
    kept_seqs = {int(r[0]) for r in kept}  # the old judge's prompts go with its calls
    out["llm_call_texts"] = [(*prefix, *r) for r in stored["llm_call_texts"]
                             if int(r[0]) in kept_seqs]
    out.update({t: [(*prefix, *r) for r in rows] for t, rows in tables.items()})
    extra["rejudge"] = {"of": ctx.options.run_id, "source_run": source,
                        "judge": ctx.options.judge}
    if errors:
        extra["judge_errors"] = errors
    metric_columns = ctx.protocols.metric_columns()
    extra.update({k: v for k, v in metrics.items() if k not in metric_columns
                  and k not in ("comp", "score", "passed")})
    sess = {**row, **{k: v for k, v in metrics.items() if k in metric_columns
                      or k in ("comp", "score", "passed")},
            "run_id": ctx.new_id, "judge_errors": judge_errors,
            "prompt_tokens": sum(int(r[5] or 0) for r in kept)
            + sum(c.prompt_tokens for c in calls),
            "completion_tokens": sum(int(r[6] or 0) for r in kept)
            + sum(c.completion_tokens for c in calls),
            "cost": sum(float(r[7] or 0.0) for r in kept) + sum(c.cost or 0.0 for c in calls),
            "extra": extra}
    return SessionRows(ctx.new_id, sid, repeat, sess, out,
                       snapshot=(str(row["episode"]), snap) if snap else None,
                       call_texts=call_texts(calls, start))


def _tool_record(r: Sequence[Any]) -> ToolRecord:
    """A stored `tool_calls` row (without its prefix) as the graders' `ToolRecord`."""
    _seq, turn, step, call_id, name, effect, call, result, error, started, duration = r[:11]
    return ToolRecord(call_id=call_id or "", tool_name=name,
                      call=json.loads(call) if isinstance(call, str) else (call or {}),
                      result=json.loads(result) if isinstance(result, str) else result,
                      error=error, started_at=float(started or 0.0),
                      duration=float(duration or 0.0), turn=int(turn), step=int(step or 0),
                      effect="write" if effect == "write" else "read",
                      side="user" if len(r) > 12 and r[12] == "user" else "agent")


def _dialogue_end(ctx: _Rejudge, row: dict[str, Any], extra: dict[str, Any],
                  turns: list[tuple[Any, ...]]) -> int | None:
    """The last turn of the task (`SessionContext.dialogue_end`): recorded in `extra` since
    this version; before, the protocol may tell it (`stored_dialogue_end`)."""
    if extra.get("dialogue_end") is not None:
        return int(extra["dialogue_end"])
    return ctx.protocols.get(str(row["protocol"])).stored_dialogue_end(row, turns)


# --------------------------------------------------------------------------- the judges


async def _checklist(site: RejudgeSite, stored: list[tuple[Any, ...]], messages: list[Message],
                     records: list[ToolRecord], in_task: list[ToolRecord],
                     files: dict[str, str], state: dict[str, dict[str, list[dict[str, Any]]]],
                     extra: dict[str, Any], end: int | None, initial: dict[str, str]
                     ) -> ChecklistOutcome:
    s = site.session
    kept = {str(r[0]): r for r in stored}
    results: dict[str, ItemResult] = {}
    items = []
    for item in s.checklist:
        if judged_by_rubric(item):
            items.append(rubric_item(item, in_task, files, state))
        elif item.id in kept:  # rule and python results stand: the final state is the same
            r = kept[item.id]
            results[item.id] = (r[3], str(r[6] or ""), r[7])
    if items:
        own = agent_output([m for m in messages if end is None or m.turn <= end], in_task,
                           files, initial)
        results.update(await judge_rubric_items(rubric_judge(site), items,
                                                render_transcript(messages, records), s, own))
    caps = [CapHit(str(c.get("id") or ""), float(c["cap"]), str(c.get("reason") or ""),
                   str(c.get("detail") or ""))
            for c in (extra.get("verify") or {}).get("caps") or []]
    # the gate is re-decided with the new judge's verdicts: the guards held before the agent
    # acted, whatever the judge (recorded by `bench run`)
    return checklist_outcome(s, results, caps, extra.get(GUARDS_KEY) or ())


async def _score(ctx: _Rejudge, site: RejudgeSite, messages: list[Message],
                 records: list[ToolRecord], in_task: list[ToolRecord], files: dict[str, str],
                 state: dict[str, dict[str, list[dict[str, Any]]]], replies: list[str],
                 end: int | None, guards: Sequence[str] = ()) -> ScoreOutcome | None:
    """A `score:` block graded by the code `bench run` grades it with, over the trace as it
    was at the end of the session: its deterministic items come out as they did."""
    if site.session.score is None:
        return None
    task = [m for m in messages if end is None or m.turn <= end]
    trace = grading_trace(in_task, files, state, task, replies)
    return await grade_score_block(site, ctx.plan, trace, task,
                                   render_transcript(messages, records), guards)


__all__ = ["RejudgeOptions", "RejudgeSummary", "default_run_id", "rejudge", "rejudge_async"]
