"""`bench run` end to end through litellm against a local OpenAI-compatible server.

The agent, the user simulator and the judges are three model names on one fake server, each
answered by a route that plays its part in the right format. Checks: a whole intent-tracking
episode runs, every LLM call is recorded with its role, and re-running with the same cache makes
no request at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fake_openai import FakeOpenAI, fake_openai_fixture, list_files_agent  # noqa: F401

from benchpack.runtime.runner import RunOptions, run_plan

ROOT = Path(__file__).resolve().parents[2]
IDS = re.compile(r"- id `([^`]+)`")


def _prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"]) if body.get("messages") else ""


def judge(body: dict[str, Any]) -> str:
    text = _prompt(body)
    ids = IDS.findall(text)
    if '"scores"' in text:  # checklist rubric: everything met
        return json.dumps({"scores": [{"id": i, "score": "YES", "reason": "ok"} for i in ids]})
    # completion and clarification checks: never (a generic question never counts)
    return json.dumps({"decisions": [{"id": i, "decision": "NO"} for i in ids]})


def simulator(body: dict[str, Any]) -> str:
    return "<message>\nOne more thing you should know before you go on.\n</message>"


@pytest.fixture(scope="module")
def plan_dir(compiled: Callable[..., Path]) -> Path:
    return compiled(ROOT / "taskpacks" / "pharmacist-week")


def test_whole_episode_through_litellm_then_cache(fake_openai: FakeOpenAI, plan_dir: Path,
                                                   tmp_path: Path) -> None:
    fake_openai.route("agent-model", list_files_agent).route("judge-model", judge) \
        .route("sim-model", simulator)
    db = tmp_path / "bench.duckdb"
    opts: dict[str, Any] = dict(
        plan=plan_dir, agent="litellm:openai/agent-model", simulator="litellm:openai/sim-model",
        judge="litellm:openai/judge-model", api_base=fake_openai.base_url, db=db,
        progress=False, cache_dir=tmp_path / "cache", max_retries=0)
    first = run_plan(RunOptions(**opts, run_id="first"))
    assert first.errors == 0 and first.finished == 8
    requests = len(fake_openai.requests)
    assert requests > 0 and first.cache_hits == 0

    con = duckdb.connect(str(db), read_only=True)
    # nobody asked a targeted question and nothing was done unasked: every intent provided
    rows = con.execute("SELECT intents, provided, proc, comp, turns FROM sessions "
                       "WHERE run_id='first'").fetchall()
    assert all(r[1] == r[0] and r[2] == 0.0 and r[3] is not None and r[4] == r[0] + 1
               for r in rows), rows
    roles = dict(con.execute("SELECT role, count(*) FROM llm_calls WHERE run_id='first' "
                             "GROUP BY role").fetchall())
    assert set(roles) == {"agent", "simulator", "judge"}
    assert sum(roles.values()) == requests
    assert con.execute("SELECT count(*) FROM llm_calls WHERE run_id='first' AND "
                       "(prompt_hash IS NULL OR prompt_tokens <= 0)").fetchone() == (0,)
    tools = con.execute("SELECT count(*) FROM tool_calls WHERE run_id='first' "
                        "AND tool_name='list_files' AND error IS NULL").fetchone()
    assert tools is not None and tools[0] == roles["agent"] // 2
    con.close()

    # the same run again, under a new id, is served entirely from the response cache
    second = run_plan(RunOptions(**opts, run_id="second"))
    assert len(fake_openai.requests) == requests
    assert second.llm_calls == first.llm_calls and second.cache_hits == second.llm_calls
    # the same scores; float sums may add up in another order (DuckDB aggregates in parallel)
    assert (second.proc, second.comp) == pytest.approx((first.proc, first.comp), abs=1e-12)
