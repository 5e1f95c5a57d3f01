"""Issue 12 §2 wired: a pack's HTTP service and HTTP tools from YAML to the store.

The fixture pack (`tests/fixtures/http_service`) ships a stdlib CRM service; a scripted or
Python agent calls its endpoints through `bench run`. Each test copies the pack and adds a
marker argument to the service's command so it can look for leftover processes of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pytest

from benchpack.compiler import compile_pack
from benchpack.runtime.sandbox import find_bwrap
from conftest import bench_run

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "http_service"

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="needs bubblewrap")

SCRIPT = {"sessions": {
    "find": [{"tool_calls": [{"name": "crm__search_customers", "args": {"query": "ana"}},
                             {"name": "crm__add_note",
                              "args": {"customer_id": "C-1", "text": "call back"}}],
              "say": "Noted."}],
    "follow": [{"tool_calls": [{"name": "crm__add_note",
                                "args": {"customer_id": "C-2", "text": "renewal"}},
                               {"name": "crm__list_notes", "args": {}}],
                "say": "Done."}],
    "check": [{"tool_calls": [{"name": "crm__get_customer", "args": {"customer_id": "C-1"}},
                              {"name": "crm__get_customer", "args": {"customer_id": "C-9"}}],
               "say": "Done."}],
}}

SLOW_AGENT = '''
import asyncio, os

CALLS = {
    "Ana": [("crm__search_customers", {"query": "ana"}),
            ("crm__add_note", {"customer_id": "C-1", "text": "call back"})],
    "Ben": [("crm__add_note", {"customer_id": "C-2", "text": "renewal"}),
            ("crm__list_notes", {})],
    "C-9": [("crm__get_customer", {"customer_id": "C-1"}),
            ("crm__get_customer", {"customer_id": "C-9"})],
}

async def agent(brief, message, event):
    key = next(k for k in CALLS if k in (message or ""))
    for name, args in CALLS[key]:
        await brief.tools.call(name, args)
    with open("progress.txt", "a") as f:
        f.write(key + "\\n")
    await asyncio.sleep(float(os.environ.get("AGENT_PAUSE", "0")) if key == "Ben" else 0)
    return "Done."
'''


def _pack(tmp: Path, *, state: bool = True, extra_env: str = "") -> tuple[Path, str]:
    """A copy of the fixture whose service command carries a unique marker."""
    marker = f"bp-http-wiring-{uuid.uuid4().hex[:10]}"
    pack = tmp / "pack"
    shutil.copytree(FIXTURE, pack)
    os.chmod(pack, 0o755)
    text = (pack / "pack.yaml").read_text(encoding="utf-8")
    text = text.replace("command: [python, services/crm.py]",
                        f"command: [python, services/crm.py, {marker}]")
    if not state:
        text = text.replace("      state: {get: /state, put: /state}\n", "")
    if extra_env:
        text = text.replace('env: {DATA_DIR: "{{ vars.data }}"}',
                            'env: {DATA_DIR: "{{ vars.data }}", ' + extra_env + "}")
    (pack / "pack.yaml").write_text(text, encoding="utf-8")
    return pack, marker


def _compile(pack: Path, out: Path) -> Path:
    res = compile_pack(pack, out, use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    return out


def _leftovers(marker: str) -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if marker.encode() in (d / "cmdline").read_bytes():
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


def _wait_gone(marker: str, timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := _leftovers(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _query(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [tuple(r) for r in con.execute(sql, list(params)).fetchall()]
    finally:
        con.close()


def _run(plan: Path, tmp: Path, **kw: Any) -> Any:
    script = tmp / "agent.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    return bench_run(plan, tmp, **{"agent": f"scripted:{script}", "judge": "rules",
                                   "simulator": "rules", "allow_python": True, **kw})[1]


def test_http_tool_calls_are_recorded_like_any_tool(tmp_path: Path) -> None:
    pack, marker = _pack(tmp_path)
    plan = _compile(pack, tmp_path / "plan")
    summary = _run(plan, tmp_path)
    assert (summary.finished, summary.errors, summary.score) == (3, 0, 1.0)
    rows = _query(tmp_path / "bench.duckdb",
                  "SELECT s.name, t.tool_name, t.effect, t.call, t.result, t.error FROM tool_calls t "
                  "JOIN sessions s USING (run_id, session_id, repeat) ORDER BY s.started_at, t.seq")
    by = [(r[0], r[1], r[2], json.loads(r[3]), json.loads(r[4]) if r[4] else None, r[5])
          for r in rows]
    assert [(n, t, e) for n, t, e, *_ in by] == [
        ("find", "crm__search_customers", "read"), ("find", "crm__add_note", "write"),
        ("follow", "crm__add_note", "write"), ("follow", "crm__list_notes", "read"),
        ("check", "crm__get_customer", "read"), ("check", "crm__get_customer", "read")]
    search = by[0][4]
    assert search["request"] == {"method": "GET", "path": "/customers", "query": {"q": "ana"},
                                 "body": None}  # `limit` left out: max_results not given
    assert search["response"]["status"] == 200
    assert search["response"]["body"] == [{"id": "C-1", "name": "Ana Lopez",
                                           "email": "ana@example.com"}]
    # the service keeps its state across the episode's sessions
    assert by[2][4]["response"]["body"]["id"] == "N-2"
    assert [n["id"] for n in by[3][4]["response"]["body"]] == ["N-1", "N-2"]
    # a non-2xx answer is a tool error that keeps the request and the response
    assert by[5][5] == ('GET /customers/C-9 on service `crm` answered HTTP 404: '
                        '{"error": "no customer C-9"}')
    assert by[5][4]["request"]["path"] == "/customers/C-9"
    assert by[5][4]["response"]["status"] == 404
    assert _wait_gone(marker) == []  # stopped at the end of the run


def test_each_repeat_starts_from_the_initial_state(tmp_path: Path) -> None:
    pack, marker = _pack(tmp_path)
    plan = _compile(pack, tmp_path / "plan")
    summary = _run(plan, tmp_path, repeats=3, max_concurrency=1)
    assert (summary.finished, summary.errors) == (9, 0)
    notes = _query(tmp_path / "bench.duckdb",
                   "SELECT repeat, result FROM tool_calls WHERE tool_name = 'crm__list_notes' "
                   "ORDER BY repeat")
    # without the reset between repeats the second repeat would list four notes
    assert [(r, [n["id"] for n in json.loads(res)["response"]["body"]]) for r, res in notes] \
        == [(0, ["N-1", "N-2"]), (1, ["N-1", "N-2"]), (2, ["N-1", "N-2"])]
    assert _wait_gone(marker) == []


def test_without_allow_python_nothing_runs(tmp_path: Path) -> None:
    pack, marker = _pack(tmp_path)
    plan = _compile(pack, tmp_path / "plan")
    db = tmp_path / "bench.duckdb"
    proc = subprocess.run([sys.executable, "-m", "benchpack.cli", "run", str(plan), "--agent",
                           f"scripted:{tmp_path / 'none.yaml'}", "--db", str(db)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "✗ HTTP service `crm`: it runs the pack's own code (a process, in the sandbox), which "
        "needs --allow-python (pass it to run it)")
    assert "Traceback" not in proc.stderr
    assert not db.exists() and _leftovers(marker) == []


def test_a_service_that_does_not_start_names_itself_and_its_log(tmp_path: Path) -> None:
    pack, marker = _pack(tmp_path, extra_env="CRM_CRASH: '1'")
    plan = _compile(pack, tmp_path / "plan")
    summary = _run(plan, tmp_path)
    # each session tries to start it (none depends on another), each is an infrastructure
    # error: excluded from the figures, rerun by --resume
    assert (summary.errors, summary.finished, summary.score) == (3, 0, None)
    rows = _query(tmp_path / "bench.duckdb",
                  "SELECT name, status, error_kind, error FROM sessions ORDER BY started_at")
    assert [r[:3] for r in rows] == [(n, "error", "infrastructure")
                                     for n in ("find", "follow", "check")]
    first = rows[0]
    assert first[3].startswith("ServiceStartError: service `crm` did not start: it exited with "
                               "code 4 before its health check passed; last lines of its log (")
    assert "crm: cannot open the customer index (CRM_CRASH set)" in first[3]
    assert summary.first_errors[0].startswith("find: ServiceStartError: service `crm`")
    assert _wait_gone(marker) == []


def _bench(tmp: Path, *args: str, pause: str = "0") -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(tmp), "AGENT_PAUSE": pause}
    return subprocess.Popen([sys.executable, "-m", "benchpack.cli", *args], cwd=tmp, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _outcome(db: Path, run_id: str) -> tuple[list[Any], list[Any]]:
    sessions = _query(db, "SELECT name, repeat, status, score, passed, comp, tool_calls FROM "
                          "sessions WHERE run_id = ? ORDER BY name, repeat", run_id)
    calls = _query(db, "SELECT s.name, t.repeat, t.seq, t.tool_name, t.result, t.error FROM "
                       "tool_calls t JOIN sessions s USING (run_id, session_id, repeat) WHERE "
                       "run_id = ? ORDER BY s.name, t.repeat, t.seq", run_id)
    return sessions, calls


@pytest.mark.parametrize("state", [True, False], ids=["state-endpoints", "replay"])
def test_sigkill_mid_run_leaves_no_service_and_resume_is_exact(tmp_path: Path,
                                                               state: bool) -> None:
    pack, marker = _pack(tmp_path, state=state)
    plan = _compile(pack, tmp_path / "plan")
    (tmp_path / "slow_agent.py").write_text(SLOW_AGENT)
    common = ["run", str(plan), "--agent", "python:slow_agent:agent", "--judge", "rules",
              "--repeats", "2", "--max-concurrency", "1", "--allow-python", "--quiet",
              "--cache-dir", str(tmp_path / "cache")]
    ref = _bench(tmp_path, *common, "--db", str(tmp_path / "ref.duckdb"), "--run-id", "r")
    assert ref.wait(timeout=120) == 0, ref.stderr.read() if ref.stderr else ""
    expected = _outcome(tmp_path / "ref.duckdb", "r")
    assert len(expected[0]) == 6 and all(r[2] == "finished" for r in expected[0])
    (tmp_path / "progress.txt").unlink()

    db = tmp_path / "killed.duckdb"
    proc = _bench(tmp_path, *common, "--db", str(db), "--run-id", "k", pause="30")
    progress = tmp_path / "progress.txt"
    deadline = time.monotonic() + 60
    while "Ben" not in (progress.read_text() if progress.exists() else ""):
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended early"
        time.sleep(0.05)
    assert _leftovers(marker), "the service should be running mid-session"
    time.sleep(0.3)  # the first session's commit
    os.kill(proc.pid, signal.SIGKILL)  # bench run only: its sandboxes must follow by themselves
    proc.wait()
    assert _wait_gone(marker) == [], "a service outlived the killed runner"
    before = _query(db, "SELECT name, repeat, started_at FROM sessions WHERE status = "
                        "'finished' ORDER BY name")
    assert [r[:2] for r in before] == [("find", 0)]

    resumed = _bench(tmp_path, *common, "--db", str(db), "--run-id", "k", "--resume", "k")
    assert resumed.wait(timeout=120) == 0, resumed.stderr.read() if resumed.stderr else ""
    got = _outcome(db, "k")
    assert got == expected  # every (session, repeat) once, same scores, same service answers
    after = _query(db, "SELECT started_at FROM sessions WHERE name = 'find' AND repeat = 0")
    # with state endpoints the finished session is kept and the CRM's notes restored; without,
    # the episode re-ran from its start (and replaced the session's rows)
    assert (after[0][0] == before[0][2]) is state
    assert _wait_gone(marker) == []
