"""Issue 27: sizes have named limits (`benchpack.specs.limits`), and exceeding one is a recorded,
typed outcome. Before: a refused 512 MB `write_file` argument was stored whole (541 MB store,
5.9 GB peak), a 2 GB one killed the store writer (exit 3, the run left `running`), a 64 MB
streamed reply grew `bench run` past 8 GB in ten minutes without ending, and 10,000 tool
calls in one model reply were all executed."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fake_openai import FakeOpenAI, FakeReply, completion_body, fake_openai_fixture  # noqa: F401

from benchpack.compiler import compile_pack
from benchpack.runtime.limits import CLIP_PREFIX, clip_json, clip_text
from benchpack.runtime.llm import FakeBackend, LLMClient, LLMConfig, LLMError
from benchpack.runtime.store import SessionRows, Store
from benchpack.specs.limits import (
    LIMITS,
    MODEL_REPLY_BYTES,
    STORED_TEXT_BYTES,
    TOOL_ARGUMENT_BYTES,
    markdown_table,
)
from conftest import bench_run

ROOT = Path(__file__).resolve().parents[2]


def test_the_table_is_the_one_the_runtime_readme_shows() -> None:
    readme = (ROOT / "runtime" / "README.md").read_text(encoding="utf-8")
    assert markdown_table() in readme
    assert len({x.name for x in LIMITS}) == len(LIMITS)


def test_an_override_is_read_and_a_bad_one_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHPACK_LIMIT_MODEL_REPLY_BYTES", "1_000")
    assert MODEL_REPLY_BYTES.value == 1000
    for bad in ("0", "-5", "lots"):  # never switched off by a typo
        monkeypatch.setenv("BENCHPACK_LIMIT_MODEL_REPLY_BYTES", bad)
        assert MODEL_REPLY_BYTES.value == MODEL_REPLY_BYTES.default


def test_clipping_keeps_a_prefix_and_the_digest() -> None:
    small = "é" * 1000
    assert clip_text(small, STORED_TEXT_BYTES) == small
    big = "é" * (STORED_TEXT_BYTES.value // 2 + 1)  # 2 bytes a character: just over
    out = clip_text(big, STORED_TEXT_BYTES)
    digest = hashlib.sha256(big.encode()).hexdigest()
    assert out.startswith("é" * 100) and len(out.encode()) < CLIP_PREFIX + 300
    assert f"{len(big.encode()):,} bytes, sha256 {digest}" in out
    assert "limit stored_text_bytes" in out
    doc = json.dumps({"path": "a.txt", "content": "x" * (TOOL_ARGUMENT_BYTES.value + 1)})
    clipped = json.loads(clip_json(doc, TOOL_ARGUMENT_BYTES))["_clipped"]
    assert clipped["bytes"] == len(doc) and clipped["sha256"] == hashlib.sha256(
        doc.encode()).hexdigest()
    assert clipped["limit"] == "tool_argument_bytes" and doc.startswith(clipped["prefix"])


def test_the_store_writes_clipped_cells(tmp_path: Path) -> None:
    """Rows over their limits are stored clipped (JSON columns stay JSON); the rest whole."""
    store = Store(tmp_path / "s.duckdb")
    store.upsert_run({"run_id": "r", "created_at": 0.0, "agent": "a", "status": "running",
                      "config": {}})
    args = json.dumps({"path": "big.txt", "content": "A" * (3 << 20)})
    result = json.dumps("B" * (2 << 20))
    rows = SessionRows("r", "s", 0, {"run_id": "r", "session_id": "s", "repeat": 0,
                                     "name": "s", "status": "finished", "agent": "a",
                                     "error": "E" * (5 << 20)})
    rows.tables["tool_calls"] = [("r", "s", 0, 0, 1, 0, "c1", "write_file", "write", args,
                                  result, "refused: too large", 0.0, 0.01, None, "agent")]
    rows.tables["messages"] = [("r", "s", 0, 0, 1, "assistant", "ok", json.dumps(
        [{"id": "c1", "function": {"name": "write_file", "arguments": args}}]), None, None)]
    store.write_now(rows)
    con = store.con
    call, res = con.execute("SELECT call, result FROM tool_calls").fetchone()
    assert json.loads(call)["_clipped"]["bytes"] == len(args)
    assert json.loads(res)["_clipped"]["limit"] == "tool_result_bytes"
    (tc,) = con.execute("SELECT tool_calls FROM messages").fetchone()
    assert "_clipped" in json.loads(tc)
    (error,) = con.execute("SELECT error FROM sessions").fetchone()
    assert error.startswith("EEE") and "limit stored_text_bytes" in error
    assert (tmp_path / "s.duckdb").stat().st_size < 4 << 20
    store.close()


def _client(reply: Any) -> LLMClient:
    return LLMClient(LLMConfig(max_retries=3), backend=FakeBackend([reply] * 5))


async def _complete(client: LLMClient) -> Any:
    return await client.complete(role="agent", model="m", messages=[
        {"role": "user", "content": "go"}], recorder=lambda r: None)


def test_a_reply_asking_for_too_many_tool_calls_is_refused() -> None:
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "list_files",
                                                               "arguments": "{}"}}
             for i in range(10_000)]
    client = _client({"role": "assistant", "content": None, "tool_calls": calls})
    with pytest.raises(LLMError) as err:
        asyncio.run(_complete(client))
    assert "limit tool_calls_per_reply: the reply asks for 10,000 tool calls" in err.value.message
    assert not err.value.retryable and err.value.attempts == 1  # asked once, not again


def test_a_reply_over_model_reply_bytes_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHPACK_LIMIT_MODEL_REPLY_BYTES", "1000")
    with pytest.raises(LLMError) as err:
        asyncio.run(_complete(_client("x" * 1001)))
    assert err.value.message.startswith("limit model_reply_bytes: the reply is 1,001 bytes")


# --------------------------------------------------------------------------- a whole run


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    out = tmp_path / "plan"
    assert compile_pack(ROOT / "taskpacks" / "pharmacist-week", out, use_cache=False).ok
    return out


def _run(plan: Path, tmp: Path, url: str) -> Any:
    return bench_run(plan, tmp, db=tmp / "b.duckdb", agent="litellm:openai/agent-model",
                     api_base=url,
                     simulator="rules", judge="rules", max_retries=0,
                     sessions=["inr-clinic-review"])[1]


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_ten_thousand_tool_calls_run_none(fake_openai: FakeOpenAI, plan: Path,
                                          tmp_path: Path) -> None:
    calls = [{"id": f"c{i}", "type": "function",
              "function": {"name": "write_file",
                           "arguments": json.dumps({"path": f"f{i}.txt", "content": "x"})}}
             for i in range(10_000)]
    fake_openai.route("agent-model", lambda body: {"role": "assistant", "content": None,
                                                   "tool_calls": calls})
    summary = _run(plan, tmp_path, fake_openai.base_url)
    assert summary.errors == 1 and summary.agent_errors == 1
    db = tmp_path / "b.duckdb"
    assert _rows(db, "SELECT count(*) FROM tool_calls") == [(0,)]
    (error,) = _rows(db, "SELECT error FROM sessions")[0]
    assert "limit tool_calls_per_reply" in error


def test_a_streamed_reply_is_read_up_to_the_limit(fake_openai: FakeOpenAI, plan: Path,
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The direct HTTP path stops reading at `model_reply_bytes` (the endpoint announces no
    size); the session ends in the agent's error naming the limit, nothing runs."""
    monkeypatch.setenv("BENCHPACK_LIMIT_MODEL_REPLY_BYTES", str(1 << 20))
    body = completion_body("agent-model", {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "write_file", "arguments":
                                                      json.dumps({"path": "big.txt",
                                                                  "content": "A" * (4 << 20)})}}]},
        "tool_calls", 10, 10, 1)
    fake_openai.route("agent-model", lambda b: FakeReply(200, raw=json.dumps(body).encode()))
    summary = _run(plan, tmp_path, fake_openai.base_url)
    assert summary.agent_errors == 1
    db = tmp_path / "b.duckdb"
    (error,) = _rows(db, "SELECT error FROM sessions")[0]
    assert re.search(r"limit model_reply_bytes: the reply is (larger than the )?[0-9,]+ bytes",
                     error), error
    assert _rows(db, "SELECT count(*) FROM tool_calls") == [(0,)]


def test_the_benchmark_smoke(tmp_path: Path) -> None:
    """benchmarks/big_reply_bench.py at 32 MB (the measured run is at 2 GB): a chunked reply
    with no announced size, refused at the limit; peak RSS far under 1 GB."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from big_reply_bench import measure
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    row = measure(32, tmp_path)
    assert row["exit"] == 1 and row["tool_calls"] == 0, row
    assert any("model_reply_bytes" in str(s) for s in row["session"]), row
    assert row["peak_rss_mb"] < 1024, row
    assert row["run_status"] == [("partial",)], row
