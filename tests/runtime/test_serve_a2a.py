"""Issue 26: `bench serve-a2a`, benchpack as an A2A assessor. An A2A client (the official SDK)
sends it a plan and the A2A agent to assess; it runs the plan and answers with the scores as
an artifact, equal to what `bench run --agent a2a:…` stores for the same agent. A request
naming a plan outside the served directory, or a non-A2A agent, is rejected with the reason."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_agents_a2a import a2a_url  # noqa: F401  (the clinic agent's A2A server)

from benchpack.compiler import compile_pack
from benchpack.runtime.a2a_assessor import AssessRequestError, parse_request, session_rows
from benchpack.runtime.runner import RunOptions, run_plan

pytest.importorskip("a2a.client")

ROOT = Path(__file__).resolve().parents[2]
BENCH = str(Path(sys.executable).with_name("bench"))


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plans")
    assert compile_pack(ROOT / "taskpacks" / "pharmacist-week", root / "build",
                        use_cache=False).ok
    return root


@pytest.fixture(scope="module")
def assessor(plans: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("assessor")
    proc = subprocess.Popen(
        [BENCH, "serve-a2a", "--plans", str(plans), "--simulator", "rules", "--judge", "rules",
         "--db", str(tmp / "assessor.duckdb"), "--cache-dir", str(tmp / "cache")],
        stderr=subprocess.PIPE, text=True, cwd=tmp, env={**os.environ, "NO_COLOR": "1"})
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"assessor at (http://\S+) ", line)
        assert found, line + (proc.stderr.read() if proc.poll() is not None else "")
        yield found.group(1)
    finally:
        proc.terminate()
        proc.wait(15)
    assert proc.returncode in (0, -15), proc.returncode


def _ask(url: str, request: dict[str, Any]) -> Any:
    async def go() -> Any:
        import httpx
        from a2a.client import ClientConfig, create_client
        from a2a.helpers import new_data_message
        from a2a.types import Role, SendMessageRequest

        async with httpx.AsyncClient(timeout=300) as http:
            client = await create_client(url, client_config=ClientConfig(
                streaming=False, httpx_client=http))
            last = None
            async for response in client.send_message(SendMessageRequest(
                    message=new_data_message(request, role=Role.ROLE_USER))):
                last = response
            await client.close()
            return last.task

    return asyncio.run(go())


def test_the_assessor_answers_with_the_runs_scores(assessor: str, a2a_url: str,  # noqa: F811
                                                   plans: Path, tmp_path: Path) -> None:
    from a2a.types import TaskState
    from google.protobuf.json_format import MessageToDict

    started = time.monotonic()
    task = _ask(assessor, {"plan": "build", "agent": a2a_url,
                           "sessions": ["inr-clinic-review"], "alone": True})
    assert TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED", task.status
    [artifact] = task.artifacts
    scores = MessageToDict(artifact.parts[0].data)
    assert artifact.name == "scores" and artifact.parts[1].text.startswith("run ")
    assert (scores["finished"], scores["errors"], scores["sessions_total"]) == (1, 0, 1)
    assert scores["agent"] == f"a2a:{a2a_url}"
    [row] = scores["sessions"]
    assert row["status"] == "finished" and row["tool_calls"] >= 6
    # the same agent run directly: the same scores
    direct = run_plan(RunOptions(
        plan=plans / "build", agent=f"a2a:{a2a_url}", simulator="rules", judge="rules",
        db=tmp_path / "direct.duckdb", progress=False, cache_dir=tmp_path / "cache",
        sessions=["inr-clinic-review"], alone=True, run_id="direct"))
    [want] = session_rows(tmp_path / "direct.duckdb", "direct")
    keys = ("session_id", "status", "turns", "tool_calls", "proc", "comp")
    assert {k: row[k] for k in keys} == {k: want[k] for k in keys}
    assert scores["comp"] == direct.comp and scores["proc"] == direct.proc
    assert time.monotonic() - started < 120


@pytest.mark.parametrize("request_, says", [
    ({"plan": "../elsewhere", "agent": "http://127.0.0.1:9"}, "outside the served plans"),
    ({"plan": "build", "agent": "cmd:rm -rf /"}, "A2A URL"),
    ({"plan": "nothing-here", "agent": "http://x"}, "no plan.json"),
    ({"plan": "build", "agent": "http://x", "shell": "ls"}, "unknown field"),
])
def test_requests_it_cannot_run_are_rejected_with_the_reason(
        assessor: str, plans: Path, request_: dict[str, Any], says: str) -> None:
    from a2a.helpers import get_message_text
    from a2a.types import TaskState

    with pytest.raises(AssessRequestError, match=says):
        parse_request(request_, plans)
    task = _ask(assessor, request_)
    assert TaskState.Name(task.status.state) == "TASK_STATE_REJECTED"
    assert says in get_message_text(task.status.message)


def test_an_agent_card_names_the_agent(plans: Path) -> None:
    got = parse_request({"plan": "build", "agent_card": {
        "name": "x", "supportedInterfaces": [{"url": "http://h:1/", "protocolBinding": "JSONRPC"}]}},
        plans)
    assert got["agent"] == "a2a:http://h:1/" and got["plan"] == (plans / "build").resolve()
