"""Issue 14, part 1: a session's tools over MCP, proved with the official MCP client
(`mcp.ClientSession`) over streamable HTTP and over stdio. The tools listed are the ones native
agents get; calls are validated and recorded by the same `ToolBox`, so a run whose harness
calls over MCP stores the same `tool_calls` rows as one calling natively."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import duckdb
import mcp_agents
import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters, stdio_client

from benchpack.cli import cli
from benchpack.compiler import compile_pack
from benchpack.runtime.env import EpisodeEnvironment, ToolBox
from benchpack.runtime.mcp import mcp_session, start_mcp_server, text_of
from benchpack.runtime.planfile import load_plan
from benchpack.runtime.runner import RunOptions, run_plan
from benchpack.specs.plan import Plan

ROOT = Path(__file__).resolve().parents[2]
BENCH = Path(sys.executable).with_name("bench")

CHINESE = "激光切割机 LC-1 停机：请通知客户，周五前改用手工标牌。"


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for pack in ("pharmacist-week", "claw-ops-desk", "bookshop-service"):
        dest = tmp_path_factory.mktemp(pack)
        res = compile_pack(ROOT / "taskpacks" / pack, dest, use_cache=False)
        assert res.ok, [d.format() for d in res.diagnostics]
        out[pack] = dest
    return out


def _processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains `text` (zombies excluded)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmd and state != "Z":
            pids.append(int(proc.name))
    return pids


def _toolbox(plan: Plan, root: Path, name: str | None = None) -> ToolBox:
    s = next(s for s in plan.sessions.values() if name in (None, s.name))
    env = EpisodeEnvironment.create(plan, s.environment, root)
    env.add_session_files(s.files)
    box = ToolBox(plan, s, env)
    box.turn = 1
    return box


# ---------------------------------------------------------------------- listing and calling


def test_the_tools_listed_are_what_native_agents_get(plans: dict[str, Path],
                                                     tmp_path: Path) -> None:
    box = _toolbox(load_plan(plans["pharmacist-week"]), tmp_path / "ws")

    async def go() -> list[Any]:
        async with await start_mcp_server(box) as endpoint, mcp_session(endpoint) as client:
            return list((await client.list_tools()).tools)

    tools = asyncio.run(go())
    assert len(tools) == len(box.specs) == 23
    for tool, spec in zip(tools, box.specs, strict=True):
        fn = spec["function"]
        assert tool.name == fn["name"]
        assert (tool.description or "") == fn["description"]
        assert tool.input_schema == fn["parameters"]
    assert {"read_file", "write_file", "ask_user", "records__get_patient"} <= \
        {t.name for t in tools}
    assert box.records == []  # listing is not a call


def test_calls_validation_errors_and_chinese_over_http(plans: dict[str, Path],
                                                       tmp_path: Path) -> None:
    box = _toolbox(load_plan(plans["pharmacist-week"]), tmp_path / "ws")

    async def go() -> list[Any]:
        async with await start_mcp_server(box) as endpoint, mcp_session(endpoint) as client:
            return [
                await client.call_tool("write_file", {"path": "笔记/停机.md", "content": CHINESE}),
                await client.call_tool("read_file", {"path": "笔记/停机.md"}),
                await client.call_tool("read_file", {"pathx": "笔记/停机.md"}),
                await client.call_tool("read_fil", {"path": "a"}),
                await client.call_tool("list_files", {"path": "../.."}),
            ]

    wrote, read, invalid, unknown, escape = asyncio.run(go())
    assert not wrote.is_error and not read.is_error
    assert json.loads(text_of(read))["content"] == CHINESE          # round trip, not \u escapes
    assert (box.env.workspace.root / "笔记" / "停机.md").read_text(encoding="utf-8") == CHINESE
    # argument validation: an MCP tool error carrying the native error text, and recorded
    assert invalid.is_error
    assert text_of(invalid) == ("Error: invalid arguments for `read_file`: 'path' is a required "
                                "property; Additional properties are not allowed ('pathx' was "
                                "unexpected)")
    assert unknown.is_error and "did you mean `read_file`" in text_of(unknown)
    assert escape.is_error
    recs = box.records
    assert [(r.tool_name, r.turn, r.step, r.call_id) for r in recs] == [
        ("write_file", 1, 1, "call-1"), ("read_file", 1, 2, "call-2"),
        ("read_file", 1, 3, "call-3"), ("read_fil", 1, 4, "call-4"),
        ("list_files", 1, 5, "call-5")]
    assert recs[0].call == {"path": "笔记/停机.md", "content": CHINESE}
    assert recs[0].error is None and recs[2].error == text_of(invalid)[len("Error: "):]
    assert all(r.error for r in recs[2:])


def test_stdio_bridge_calls_run_in_the_serving_process(plans: dict[str, Path],
                                                       tmp_path: Path) -> None:
    """A harness that only launches MCP servers as commands gets `stdio_command`; the calls
    are still executed and recorded by the runtime's toolbox."""
    box = _toolbox(load_plan(plans["pharmacist-week"]), tmp_path / "ws")

    async def go() -> tuple[list[str], Any, Any]:
        endpoint = await start_mcp_server(box, transport="stdio")
        try:
            cmd = endpoint.stdio_command
            assert endpoint.harness_config()["mcpServers"]["benchpack"] == \
                {"command": cmd[0], "args": cmd[1:]}
            params = StdioServerParameters(command=cmd[0], args=cmd[1:])
            async with stdio_client(params) as (read, write), \
                    ClientSession(read, write) as client:
                await client.initialize()
                names = [t.name for t in (await client.list_tools()).tools]
                ok = await client.call_tool("ask_user", {"question": "周五几点到店？"})
                bad = await client.call_tool("ask_user", {})
            return names, ok, bad
        finally:
            await endpoint.close()

    names, ok, bad = asyncio.run(go())
    assert not _processes_mentioning("benchpack.runtime.mcp.bridge"), "bridge left running"
    assert names == [s["function"]["name"] for s in box.specs]
    assert not ok.is_error and bad.is_error
    assert "'question' is a required property" in text_of(bad)
    assert [(r.tool_name, r.call, r.error is None) for r in box.records] == [
        ("ask_user", {"question": "周五几点到店？"}, True), ("ask_user", {}, False)]
    assert box.env.asked == ["周五几点到店？"]


def test_nothing_is_left_after_close(plans: dict[str, Path], tmp_path: Path) -> None:
    box = _toolbox(load_plan(plans["pharmacist-week"]), tmp_path / "ws")

    async def go() -> None:
        await box.call("list_files", {})  # the tools' own worker thread exists before
        threads = set(threading.enumerate())
        sigint = signal.getsignal(signal.SIGINT)
        endpoint = await start_mcp_server(box)
        # embedded: Ctrl-C still belongs to the run, not to the session's server
        assert signal.getsignal(signal.SIGINT) is sigint
        port = int(endpoint.url.rsplit(":", 1)[1].split("/")[0])
        async with mcp_session(endpoint) as client:
            assert not (await client.call_tool("list_files", {})).is_error
        await endpoint.close()
        await endpoint.close()  # idempotent
        assert set(threading.enumerate()) == threads
        assert asyncio.all_tasks() == {asyncio.current_task()}
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()

    asyncio.run(go())
    assert len(box.records) == 2


# ---------------------------------------------------------------------- the store


def _run(plan: Path, agent: str, session: str, tmp_path: Path, name: str) -> list[Any]:
    db = tmp_path / f"{name}.duckdb"
    summary = run_plan(RunOptions(
        plan=plan, agent=f"python:mcp_agents:{agent}", simulator="rules", judge="rules", db=db,
        progress=False, cache_dir=tmp_path / "cache", allow_python=True,
        sessions=[session], alone=True, run_id=name, work_dir=tmp_path / f"work-{name}"))
    assert summary.errors == 0 and summary.finished == 1, summary
    con = duckdb.connect(str(db), read_only=True)
    try:
        cols = [c[0] for c in con.execute("DESCRIBE tool_calls").fetchall()]
        keep = [c for c in cols if c not in ("run_id", "started_at", "duration_s")]
        rows = con.execute(f"SELECT {', '.join(keep)} FROM tool_calls ORDER BY seq").fetchall()
        sess = con.execute("SELECT tool_calls, comp, score, passed, status FROM sessions"
                           ).fetchall()
        return [rows, sess]
    finally:
        con.close()


CALLS = {
    "claw-ops-desk": ("laser-outage", [           # HTTP tools (a sandboxed service process)
        ("desk__get_ticket", {"ticket_id": "TCK-412"}),
        ("desk__update_event", {"event_id": "EV-501", "status": "cancelled"}),
        ("desk__get_ticket", {"ticket": "TCK-412"}),
        ("write_file", {"path": "notes/停机.md", "content": CHINESE}),
        ("read_file", {"path": "notes/停机.md"})]),
    "bookshop-service": ("cancel-by-mistake", [   # python toolsets (the sandbox worker)
        ("find_user_id_by_email", {"email": "lena.fischer72@mailbox.example"}),
        ("get_order_details", {"order_id": "#B20417"}),
        ("get_order_details", {}),
        ("cancel_pending_order", {"order_id": "#B20417", "reason": "ordered by mistake"}),
        ("nope", {"x": "测试"})]),
}


@pytest.mark.parametrize("pack", sorted(CALLS))
def test_store_rows_of_mcp_calls_equal_native_calls(pack: str, plans: dict[str, Path],
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    session, calls = CALLS[pack]
    monkeypatch.setattr(mcp_agents, "CALLS", calls)
    monkeypatch.setattr(mcp_agents, "SEEN", [])
    native = _run(plans[pack], "native", f"*{session}*", tmp_path, "native")
    over = _run(plans[pack], "over_mcp", f"*{session}*", tmp_path, "mcp")
    rows = native[0]
    assert len(rows) == len(calls)
    assert over == native  # every column but the run id and the timings, and the session
    errors = [r[10] for r in rows]   # `error`
    assert [e is not None for e in errors] == [s["is_error"] for s in mcp_agents.SEEN]
    # the invalid call (and bookshop's unknown tool) and nothing else
    assert [e is not None for e in errors] == [
        name == "nope" or ("ticket_id" not in a and "order_id" not in a and name.startswith(
            ("desk__get", "get_order"))) for name, a in calls]
    # what the harness read is what a native LLM agent reads
    assert all(s["text"].startswith("Error: ") == s["is_error"] for s in mcp_agents.SEEN)


# ---------------------------------------------------------------------- bench mcp


def test_bench_mcp_over_stdio(plans: dict[str, Path], tmp_path: Path) -> None:
    """`bench mcp --transport stdio` launched by the official client, as a harness would —
    with an API key in its environment, as a user's shell has (the CLI then masks secrets in
    what it prints, which must not take the protocol's stdout away)."""
    params = StdioServerParameters(
        command=str(BENCH), cwd=str(tmp_path),
        env={**os.environ, "NO_COLOR": "1", "OPENAI_API_KEY": "sk-test-0123456789abcdef"},
        args=["mcp", str(plans["pharmacist-week"]), "--session", "inr-clinic-review",
              "--transport", "stdio"])

    async def go() -> tuple[int, Any, Any, Any]:
        with (tmp_path / "err.txt").open("w", encoding="utf-8") as errlog:
            return await talk(errlog)

    async def talk(errlog: Any) -> tuple[int, Any, Any, Any]:
        async with stdio_client(params, errlog=errlog) as (r, w), \
                ClientSession(r, w) as client:
            await client.initialize()
            n = len((await client.list_tools()).tools)
            wrote = await client.call_tool("write_file", {"path": "备忘.md", "content": CHINESE})
            read = await client.call_tool("read_file", {"path": "备忘.md"})
            bad = await client.call_tool("write_file", {"path": "x.md"})
            return n, wrote, read, bad

    try:
        n, wrote, read, bad = asyncio.run(go())
    except BaseException:  # the server's stderr says why it went away
        print((tmp_path / "err.txt").read_text(encoding="utf-8"))
        raise
    assert n == 23 and not wrote.is_error
    assert json.loads(text_of(read))["content"] == CHINESE
    assert bad.is_error and "'content' is a required property" in text_of(bad)
    log = (tmp_path / "err.txt").read_text(encoding="utf-8")
    assert "write_file(" in log and "备忘.md" in log   # each call on stderr, stdout is MCP


def test_bench_mcp_over_http_stops_its_services_on_sigterm(plans: dict[str, Path],
                                                           tmp_path: Path) -> None:
    """`bench mcp` on claw-ops-desk (an HTTP service in the sandbox): the printed URL serves
    the HTTP tools; SIGTERM (a supervisor, or Ctrl-C) stops the server and the service."""
    import subprocess
    import time

    work = tmp_path / "tmp"
    work.mkdir()
    proc = subprocess.Popen(
        [str(BENCH), "mcp", str(plans["claw-ops-desk"]), "--session", "laser-outage",
         "--allow-python"], stderr=subprocess.PIPE, text=True, encoding="utf-8",
        env={**os.environ, "TMPDIR": str(work)})
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        assert first.startswith("serving `laser-outage` (23 tools) at http://127.0.0.1:"), first
        url = first.split(" at ", 1)[1].strip()
        assert _processes_mentioning(str(work)), "the HTTP service is not running"

        async def go() -> Any:
            from mcp.client.streamable_http import streamable_http_client

            async with streamable_http_client(url) as (r, w), ClientSession(r, w) as client:
                await client.initialize()
                return await client.call_tool("desk__get_ticket", {"ticket_id": "TCK-412"})

        out = asyncio.run(go())
        assert not out.is_error and json.loads(text_of(out))["response"]["status"] == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        rest = proc.stderr.read()
        assert "desk__get_ticket(" in rest and rest.rstrip().endswith("stopped")
        deadline = time.monotonic() + 5
        while _processes_mentioning(str(work)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _processes_mentioning(str(work)), "a service process outlived bench mcp"
        # its temporary environment is removed (the services' pid registry is shared, stays)
        assert not list(work.glob("bench-mcp-*"))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(("args", "message"), [
    (["--session", "nope"], "✗ --session nope: no session has this id or name"),
    (["--session", "*"], "✗ --session *: 8 sessions match"),
    (["--session", "inr-clinic-review", "--transport", "stdio", "--port", "9"],
     "--host and --port are for --transport http"),
])
def test_bench_mcp_mistakes_are_one_line(plans: dict[str, Path], args: list[str],
                                         message: str) -> None:
    out = CliRunner().invoke(cli, ["mcp", str(plans["pharmacist-week"]), *args])
    assert out.exit_code in (1, 2), out.output
    assert message in out.output and "Traceback" not in out.output


def test_bench_mcp_missing_plan_and_python_refusal(plans: dict[str, Path],
                                                   tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["mcp", str(tmp_path / "none"), "--session", "x"])
    assert out.exit_code == 1 and out.output.startswith("✗ ") and "no plan here" in out.output
    out = CliRunner().invoke(cli, ["mcp", str(plans["bookshop-service"]), "--session",
                                   "cancel-by-mistake"])
    assert out.exit_code == 1 and "--allow-python" in out.output
    assert len(out.output.strip().splitlines()) == 1


def test_a_taken_port_is_one_line(plans: dict[str, Path]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        out = CliRunner().invoke(cli, ["mcp", str(plans["pharmacist-week"]), "--session",
                                       "inr-clinic-review", "--port", str(port)])
    assert out.exit_code == 1, out.output
    assert out.output.strip() == (f"✗ cannot serve MCP on 127.0.0.1:{port}: the port is in use "
                                  "(hint: choose another --port, or 0 for any free one)")
