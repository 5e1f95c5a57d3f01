"""`--timeout` covers a request, not benchpack's start-up: the first request of a fresh process
with `--timeout 1` reaches a server that answers in 0.2 s and succeeds (litellm's import, ~2 s
on a busy machine, happens before the clock starts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
from fake_openai import FakeOpenAI, FakeReply, completion_body, fake_openai_fixture  # noqa: F401

from benchpack.compiler import compile_pack, init_pack


def test_the_first_request_of_a_fresh_process_is_not_cut_by_the_import(
        fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    init_pack(tmp_path / "pack", "p")
    assert compile_pack(tmp_path / "pack", tmp_path / "build", use_cache=False).ok
    served: list[float] = []

    def slow(body: dict[str, Any]) -> FakeReply:
        served.append(time.monotonic())
        return FakeReply(body=completion_body(str(body.get("model")), {
            "role": "assistant", "content": "Done."}, "stop", 10, 2, len(served)), delay_s=0.2)

    fake_openai.route("agent-model", slow)
    db = tmp_path / "bench.duckdb"
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-a-key",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run(
        [sys.executable, "-m", "benchpack.cli", "run", str(tmp_path / "build"), "--agent",
         "litellm:openai/agent-model", "--simulator", "rules", "--judge", "rules",
         "--api-base", fake_openai.base_url, "--timeout", "1", "--max-retries", "0",
         "--no-cache", "--db", str(db), "--quiet", "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert served, f"no request reached the server\n{proc.stderr}"
    con = duckdb.connect(str(db), read_only=True)
    try:
        calls = con.execute("SELECT session_id, seq, error, attempts FROM llm_calls "
                            "WHERE role = 'agent' ORDER BY started_at, seq").fetchall()
    finally:
        con.close()
    assert calls and calls[0][2] is None, (calls[:3], proc.stderr)
    assert all(c[2] is None for c in calls), calls
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["errors"] == 0
