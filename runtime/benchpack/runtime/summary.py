"""The figures `bench run` (and `bench rejudge`) print at the end, read back from the store."""

from __future__ import annotations

import json
from typing import Any

from benchpack.specs.storeformat import EXACT_COST

from .graders.python import REFUSED as PYTHON_REFUSED
from .protocols.base import default_protocols
from .run_types import RunSummary
from .store import Store

_FULL = "coalesce(json_extract_string(extra, '$.context'), '') <> 'alone'"
"""Not a `--alone` session (run without the sessions it depends on)."""


def summarise(store: Store, run_id: str, total: int, stats: dict[str, int], resumed: int,
              wall: float, repeats: int = 1) -> RunSummary:
    with store.reading() as con:  # the writer may still step aside for readers meanwhile
        return _summarise(con, store, run_id, total, stats, resumed, wall, repeats)


def _summarise(con: Any, store: Store, run_id: str, total: int, stats: dict[str, int],
               resumed: int, wall: float, repeats: int) -> RunSummary:
    row = con.execute(
        # headline figures over finished sessions and those the agent errored in (stored with
        # the protocol's worst score); other errors are unknown, excluded and counted. Each
        # the mean over sessions of their repeats' mean, ablation variants left out: what
        # `bench report summary` shows (its `headline` view). `--alone` sessions lacked their
        # context: never averaged with full-context ones
        "WITH per AS (SELECT session_id, avg(coalesce(proc_group, proc)) AS proc, "
        "avg(comp) AS comp, avg(score) AS score, avg(f1) AS f1 FROM sessions WHERE "
        "run_id = ? AND ablation IS NULL AND (status = 'finished' OR error_kind = 'agent') "
        f"AND {_FULL} GROUP BY session_id) "
        "SELECT (SELECT avg(proc) FROM per), (SELECT avg(comp) FROM per), "
        "(SELECT avg(score) FROM per), coalesce(sum(judge_errors), 0), "
        "count(*) FILTER (WHERE status = 'finished'), count(*) FILTER (WHERE status='error'), "
        "count(*) FILTER (WHERE status='skipped'), (SELECT avg(f1) FROM per), "
        # ProactBench's trigger score: pooled over judged triggers, not a mean of sessions
        "(SELECT avg(t.score) FROM triggers t JOIN sessions x USING (run_id, session_id, "
        "repeat) WHERE t.run_id = ? AND t.label IN ('PASS', 'PARTIAL', 'FAIL') AND "
        "x.ablation IS NULL AND (x.status = 'finished' OR x.error_kind = 'agent') AND "
        f"{_FULL.replace('(extra', '(x.extra')}), "
        # the counts below cost a query each when asked apart: ~1 ms apiece of the run's end
        "coalesce(sum(grader_errors), 0), count(*) FILTER (WHERE status = 'finished' AND "
        "json_extract_string(extra, '$.context') = 'alone'), count(*) FILTER (WHERE status = "
        "'finished' AND ablation IS NOT NULL) "
        "FROM sessions WHERE run_id = ?", [run_id, run_id, run_id]).fetchone()
    errored = int(row[5]) > 0
    kinds = dict(con.execute(
        "SELECT coalesce(error_kind, 'unclassified'), count(*) FROM sessions WHERE run_id = ? "
        "AND status = 'error' GROUP BY ALL", [run_id]).fetchall()) if errored else {}
    # rows of an imported run (`purpose` 'imported': a release's token counts) are no call
    # benchpack made: counted apart, and their missing price is not an unknown cost
    made = "coalesce(purpose, '') <> 'imported'"
    llm = con.execute(
        f"SELECT count(*) FILTER (WHERE {made}), coalesce(sum(prompt_tokens),0), "
        f"coalesce(sum(completion_tokens),0), coalesce(sum({EXACT_COST})::DOUBLE, 0), "
        "count(*) FILTER (WHERE "
        f"cache_hit AND {made}), count(*) FILTER (WHERE cost IS NULL AND error IS NULL AND "
        f"NOT coalesce(cache_hit, false) AND {made}), count(*) FILTER (WHERE NOT ({made})) "
        "FROM llm_calls WHERE run_id = ?", [run_id]).fetchone()
    # verified outcome: per session, graded repeats and passes (a NULL `passed` is ungraded)
    # tasks as the `verified_tasks` view folds them (style variants into their base), so
    # this summary and `bench report pass-k` count the same (n, c)
    # over the protocols whose `passed` is a task outcome (`ProtocolInterpreter.pass_k`)
    pass_k = default_protocols().pass_k_protocols()
    counts = con.execute(
        "SELECT count(passed), count(*) FILTER (WHERE passed) FROM sessions WHERE run_id = ? "
        f"AND protocol IN ({', '.join('?' * len(pass_k)) or 'NULL'}) AND (status = 'finished' "
        "OR error_kind = 'agent') "
        f"AND {_FULL} GROUP BY coalesce(base_session, session_id) ORDER BY "
        "coalesce(base_session, session_id)", [run_id, *pass_k]).fetchall()
    refused = con.execute(
        "SELECT count(*) FROM checklist_results WHERE run_id = ? AND error = ?",
        [run_id, PYTHON_REFUSED]).fetchone()
    first_errors = con.execute(
        "SELECT arg_min(name, started_at), error FROM sessions WHERE run_id = ? AND "
        "status = 'error' GROUP BY error ORDER BY min(started_at) LIMIT 3",
        [run_id]).fetchall() if errored else []
    judge = con.execute("SELECT judge FROM runs WHERE run_id = ?", [run_id]).fetchone()
    # the LIKE spares the JSON parse of every session without a left-out table
    left_out = con.execute(
        "SELECT DISTINCT unnest(CAST(json_extract(extra, '$.reward.state.left_out') AS "
        "VARCHAR[])) AS t FROM sessions WHERE run_id = ? AND CAST(extra AS VARCHAR) LIKE "
        "'%\"left_out\"%' ORDER BY t", [run_id]).fetchall()
    return RunSummary(
        heuristic_judge=bool(judge and judge[0] == "rules"), alone=int(row[10]),
        run_id=run_id, db=store.path, sessions_total=total, sessions_run=stats["run"],
        sessions_skipped_resume=resumed, finished=int(row[4]), errors=int(row[5]),
        skipped_deps=int(row[6]), proc=row[0], comp=row[1], score=row[2], f1=row[7],
        trigger_score=row[8],
        judge_errors=int(row[3]), prompt_tokens=int(llm[1]), completion_tokens=int(llm[2]),
        cost=float(llm[3]), llm_calls=int(llm[0]), cache_hits=int(llm[4]), wall_s=wall,
        unpriced_calls=int(llm[5]), imported_calls=int(llm[6]),
        repeats=repeats, pass_counts=[(int(n), int(c)) for n, c in counts if n],
        grader_errors=int(row[9]),
        python_refused=int(refused[0]) if refused else 0,
        first_errors=[f"{name}: {str(error).strip().splitlines()[0][:200]}"
                      for name, error in first_errors if error],
        agent_errors=int(kinds.pop("agent", 0)),
        ablation_variants=int(row[11]),
        state_left_out=[str(t) for (t,) in left_out if t is not None],
        excluded={str(k): int(v) for k, v in sorted(kinds.items())})


def dumps_summary(summary: RunSummary) -> str:
    return json.dumps(summary.as_dict(), indent=2)
