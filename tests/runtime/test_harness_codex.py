"""Issue 26: Codex CLI, installed from npm, run by the README's `codex.sh` recipe through
`cmd2:` against the fake model server. Codex speaks only the Responses API: the proxy
translates it, so every model call the server saw is one `llm_calls` row with the server's
tokens, and every MCP call of the session's tools is a `tool_calls` row. Skipped without
`codex` (on PATH or in `$BENCH_HARNESS_BIN`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fake_openai import FakeOpenAI
from harness_recipes import cli_or_skip, recipe, renamed
from test_harness_pydantic_ai import SESSION, scripted_model

from benchpack.compiler import compile_pack
from benchpack.runtime.runner import RunOptions, run_plan

ROOT = Path(__file__).resolve().parents[2]
PROMPT, COMPLETION = 37, 11
FINAL = "I checked the clinic log and wrote my notes to notes/复核.md. 需要我通知医生吗？"


@pytest.fixture(scope="module")
def codex_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    bindir = cli_or_skip("codex", "@openai/codex")
    tmp = tmp_path_factory.mktemp("codex")
    plan = tmp / "plan"
    assert compile_pack(ROOT / "taskpacks" / "pharmacist-week", plan, use_cache=False).ok
    script = recipe("codex.sh", tmp)
    with pytest.MonkeyPatch.context() as mp, FakeOpenAI() as fake:
        mp.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
        fake.route("agent-model", lambda body: renamed(scripted_model(body), body),
                   prompt_tokens=PROMPT, completion_tokens=COMPLETION)
        summary = run_plan(RunOptions(
            plan=plan, agent=f"cmd2:--model openai/agent-model sh {script}",
            simulator="rules", judge="rules", db=tmp / "codex.duckdb", progress=False,
            cache_dir=tmp / "cache", api_base=fake.base_url, max_retries=0,
            sessions=[SESSION], alone=True, run_id="codex", work_dir=tmp / "work"))
        requests = list(fake.requests)
    con = duckdb.connect(str(tmp / "codex.duckdb"), read_only=True)
    try:
        rows = {
            "llm": con.execute("SELECT turn, prompt_tokens, completion_tokens, cache_hit, error "
                               "FROM llm_calls WHERE role = 'agent' ORDER BY seq").fetchall(),
            "tools": con.execute("SELECT turn, step, tool_name, call, error FROM tool_calls "
                                 "ORDER BY seq").fetchall(),
            "session": con.execute("SELECT status, error, turns, tool_calls, prompt_tokens, "
                                   "completion_tokens FROM sessions").fetchone(),
            "answers": con.execute("SELECT turn, content FROM messages WHERE role = "
                                   "'assistant' ORDER BY seq").fetchall(),
        }
    finally:
        con.close()
    return {"summary": summary, "requests": requests, **rows}


def test_codex_model_calls_are_recorded_with_the_servers_count_and_tokens(
        codex_run: dict[str, Any]) -> None:
    status, error, turns, _, prompt, completion = codex_run["session"]
    assert (status, error) == ("finished", None)
    n = len(codex_run["requests"])
    # per user turn: three tool calls, then the answer = four model calls
    assert n == 4 * turns and turns >= 2
    assert len(codex_run["llm"]) == n
    assert all(r[1:] == (PROMPT, COMPLETION, False, None) for r in codex_run["llm"])
    assert (prompt, completion) == (PROMPT * n, COMPLETION * n)
    assert [r[0] for r in codex_run["llm"]] == [t for t in range(1, turns + 1)
                                                 for _ in range(4)]


def test_codex_mcp_tool_calls_are_recorded_and_approved(codex_run: dict[str, Any]) -> None:
    tools = codex_run["tools"]
    turns = codex_run["session"][2]
    assert [(t[0], t[1], t[2], json.loads(t[3])["path"], t[4] is not None) for t in tools] == [
        row for turn in range(1, turns + 1) for row in (
            (turn, 1, "read_file", "anticoag/inr-log.csv", False),
            (turn, 2, "read_file", "anticoag/missing.md", True),
            (turn, 3, "write_file", "notes/复核.md", False))]
    assert codex_run["session"][3] == len(tools)
    # Codex offered them under its MCP prefix, and the results went back to the model
    first = codex_run["requests"][1]
    assert "mcp__benchpack__read_file" in [t["function"]["name"] for t in first["tools"]]
    assert "P-1042" in first["messages"][-1]["content"]


def test_codex_answers_are_its_replies_and_later_turns_resume_the_conversation(
        codex_run: dict[str, Any]) -> None:
    assert [a[1] for a in codex_run["answers"]] == [FINAL] * codex_run["session"][2]
    users = [sum(m["role"] == "user" and "<environment_context>" not in str(m["content"])
                 for m in r["messages"]) for r in codex_run["requests"]]
    # one more user message every turn (4 model calls a turn): `resume --last` works
    assert users == [t for t in range(1, codex_run["session"][2] + 1) for _ in range(4)]
