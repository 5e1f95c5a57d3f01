"""Issue 26: real CLI harnesses, installed from npm, run by the README's recipe scripts (as
written there) against the fake model server: Codex CLI (OpenAI's Responses API) and Claude
Code (Anthropic's Messages API) and Gemini CLI (Gemini's generateContent), each translated by
the proxy, opencode (Chat Completions)
through `cmd2:`, and Codex's ACP adapter through `acp:`. Every model call the server saw is one `llm_calls` row with the server's tokens, every MCP call of the
session's tools is a `tool_calls` row, each answer is the harness's reply, and later turns
continue the harness's own conversation. Skipped without the CLI (on PATH or in
`$BENCH_HARNESS_BIN`)."""

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

# Real agent CLIs from npm, each set up per case: `make test-slow` (CI runs it after the suite).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PROMPT, COMPLETION = 37, 11
FINAL = "I checked the clinic log and wrote my notes to notes/复核.md. 需要我通知医生吗？"
HARNESSES = {"codex": ("codex.sh", "@openai/codex", "cmd2"),
             "claude": ("claude.sh", "@anthropic-ai/claude-code", "cmd2"),
             "codex-acp": ("codex-acp.sh", "@zed-industries/codex-acp", "acp"),
             "opencode": ("opencode.sh", "opencode-ai", "cmd2"),
             "gemini": ("gemini.sh", "@google/gemini-cli", "cmd2")}


def model(body: dict[str, Any]) -> Any:
    """The pydantic-ai test's script, under the harness's tool names; a call offering no
    tools is a harness's side call (Claude Code and opencode title their sessions) and gets
    a title."""
    if not body.get("tools"):
        return '{"title": "Clinic log review"}'
    return renamed(scripted_model(body), body)


@pytest.fixture(scope="module", params=sorted(HARNESSES))
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
        ) -> dict[str, Any]:
    name = request.param
    script_name, package, scheme = HARNESSES[name]
    bindir = cli_or_skip(name, package)
    tmp = tmp_path_factory.mktemp(name)
    plan = tmp / "plan"
    assert compile_pack(ROOT / "taskpacks" / "pharmacist-week", plan, use_cache=False).ok
    script = recipe(script_name, tmp)
    with pytest.MonkeyPatch.context() as mp, FakeOpenAI() as fake:
        mp.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
        fake.route("agent-model", model, prompt_tokens=PROMPT, completion_tokens=COMPLETION)
        summary = run_plan(RunOptions(
            plan=plan, agent=f"{scheme}:--model openai/agent-model sh {script}",
            simulator="rules", judge="rules", db=tmp / "run.duckdb", progress=False,
            cache_dir=tmp / "cache", api_base=fake.base_url, max_retries=0,
            sessions=[SESSION], alone=True, run_id=name, work_dir=tmp / "work"))
        requests = list(fake.requests)
    con = duckdb.connect(str(tmp / "run.duckdb"), read_only=True)
    try:
        rows = {
            "llm": con.execute("SELECT turn, prompt_tokens, completion_tokens, cache_hit, error "
                               "FROM llm_calls WHERE role = 'agent' ORDER BY seq").fetchall(),
            "tools": con.execute("SELECT turn, step, tool_name, call, error FROM tool_calls "
                                 "ORDER BY seq").fetchall(),
            "session": con.execute("SELECT status, error, turns, tool_calls, prompt_tokens, "
                                   "completion_tokens FROM sessions").fetchone(),
            "answers": con.execute("SELECT turn, content FROM messages WHERE role = "
                                   "'assistant' AND content <> '' ORDER BY seq").fetchall(),
            "harness": [json.loads(r[0]) for r in con.execute(
                "SELECT content FROM messages WHERE name = 'harness' ORDER BY seq").fetchall()],
        }
    finally:
        con.close()
    return {"name": name, "summary": summary, "requests": requests, **rows}


def test_every_model_call_is_recorded_with_the_servers_tokens(run: dict[str, Any]) -> None:
    status, error, turns, _, prompt, completion = run["session"]
    assert (status, error) == ("finished", None)
    requests = run["requests"]
    n = len(requests)
    # per user turn: three tool calls, then the answer = four model calls with tools
    assert sum(1 for r in requests if r.get("tools")) == 4 * turns and turns >= 2
    assert len(run["llm"]) == n
    assert all(r[1:] == (PROMPT, COMPLETION, False, None) for r in run["llm"])
    assert (prompt, completion) == (PROMPT * n, COMPLETION * n)
    assert sorted({r[0] for r in run["llm"]}) == list(range(1, turns + 1))


def test_mcp_tool_calls_are_recorded_and_allowed(run: dict[str, Any]) -> None:
    tools = run["tools"]
    turns = run["session"][2]
    assert [(t[0], t[1], t[2], json.loads(t[3])["path"], t[4] is not None) for t in tools] == [
        row for turn in range(1, turns + 1) for row in (
            (turn, 1, "read_file", "anticoag/inr-log.csv", False),
            (turn, 2, "read_file", "anticoag/missing.md", True),
            (turn, 3, "write_file", "notes/复核.md", False))]
    assert run["session"][3] == len(tools)
    # offered under the harness's MCP prefix; the file's content went back to the model
    with_tools = [r for r in run["requests"] if r.get("tools")]
    offered = [t["function"]["name"] for t in with_tools[0]["tools"]]
    assert {"mcp__benchpack__read_file", "mcp_benchpack_read_file",
            "benchpack_read_file"} & set(offered)
    assert "P-1042" in json.dumps(with_tools[1]["messages"], ensure_ascii=False)


def test_answers_are_the_replies_and_later_turns_continue_the_conversation(
        run: dict[str, Any]) -> None:
    assert [a[1] for a in run["answers"]] == [FINAL] * run["session"][2]
    last = json.dumps(run["requests"][-1]["messages"], ensure_ascii=False)
    assert "Clinic log's updated" in last  # the first turn's message, seen at the last turn
    assert last.count(FINAL) == run["session"][2] - 1



def test_harness_warnings_are_stored_apart_not_answered(run: dict[str, Any]) -> None:
    notices = [h["text"] for h in run["harness"] if h.get("kind") == "notice"]
    if run["name"] != "codex-acp":
        assert notices == []  # cmd2: the answer is stdout, and Codex/Claude Code print none
        return
    # Codex's ACP adapter sends its fallback-metadata warning as a message chunk every turn
    assert len(notices) == run["session"][2]
    assert all("fallback metadata" in n for n in notices)
    assert not any("fallback" in a[1] for a in run["answers"])
