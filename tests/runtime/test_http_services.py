"""Issue 12, HTTP services and tools: a pack's service runs in the sandbox with no network, is
reached over a Unix socket, answers tool calls, resets, fails loudly, and leaves no process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from benchpack.runtime.env.errors import ToolError
from benchpack.runtime.env.http_tools import HttpToolError, build_request, call_http
from benchpack.runtime.env.processes import (
    PidRegistry,
    ServiceProcess,
    ServiceStartError,
    process_start_time,
)
from benchpack.runtime.sandbox import SandboxProcess
from benchpack.specs.services import HttpImpl, ProcessService

MARKER = "benchpack-http-probe-5c1e"

SERVICE = textwrap.dedent('''
    # test service (the marker below lets the tests find its processes): MARKER
    import json, os, socket, sys, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import urlsplit, parse_qs

    STATE = {"count": 0}
    print("crm service booting", flush=True)
    if os.environ.get("CRASH"):
        print("Traceback: KeyError: 'customers' (fixtures missing)", file=sys.stderr, flush=True)
        sys.exit(3)

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def send(self, status, payload, ctype="application/json"):
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def body(self):
            n = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(n)) if n else None

        def route(self, method):
            url = urlsplit(self.path)
            q = parse_qs(url.query)
            if url.path == "/health":
                if os.environ.get("NEVER_HEALTHY"):
                    return self.send(503, {"status": "warming up"})
                return self.send(200, {"ok": True})
            if url.path == "/reset" and method == "POST":
                STATE["count"] = 0
                return self.send(200, {"reset": True})
            if url.path == "/state":
                if method == "GET":
                    return self.send(200, dict(STATE))
                STATE.update(self.body())
                return self.send(200, {"restored": True})
            if url.path == "/counter":
                if method == "POST":
                    STATE["count"] += int((self.body() or {}).get("by", 1))
                return self.send(200, {"count": STATE["count"]})
            if url.path.startswith("/echo"):
                return self.send(200, {"method": method, "path": url.path, "raw_path": self.path,
                                       "query": q, "body": self.body(),
                                       "env": os.environ.get("GREETING")})
            if url.path == "/fail":
                return self.send(500, {"error": "database is on fire"})
            if url.path == "/teapot":
                return self.send(418, b"short and stout", "text/plain")
            if url.path == "/big":
                return self.send(200, ("é" * 50_000).encode(), "text/plain; charset=utf-8")
            if url.path == "/slow":
                time.sleep(float(q.get("s", ["5"])[0]))
                return self.send(200, {"slept": True})
            if url.path == "/netcheck":
                out = {"interfaces": [n for _, n in socket.if_nameindex()]}
                for name, addr in (("host", ("127.0.0.1", int(q["port"][0]))),
                                   ("outside", ("10.255.255.1", 80))):
                    try:
                        socket.create_connection(addr, timeout=1).close()
                        out[name] = "connected"
                    except OSError as exc:
                        out[name] = type(exc).__name__
                return self.send(200, out)
            return self.send(404, {"error": "no such endpoint " + url.path})

        def do_GET(self):
            self.route("GET")

        def do_POST(self):
            self.route("POST")

        def do_PUT(self):
            self.route("PUT")

        def do_DELETE(self):
            self.route("DELETE")

    ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
''').replace("MARKER", MARKER)


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    root = tmp_path / "pack"
    (root / "services").mkdir(parents=True)
    (root / "services" / f"{MARKER}.py").write_text(SERVICE, encoding="utf-8")
    # the pack is read by `nobody` inside the sandbox when tests run as root
    for p in (root, root / "services"):
        os.chmod(p, 0o755)
    return root


def spec(**kw: Any) -> ProcessService:
    base: dict[str, Any] = {"command": ["python", f"services/{MARKER}.py"],
                            "health": {"path": "/health", "timeout_s": 15},
                            "reset": {"method": "POST", "path": "/reset"},
                            "stop_grace_s": 1}
    return ProcessService.model_validate({**base, **kw})


def impl(**kw: Any) -> HttpImpl:
    return HttpImpl.model_validate({"kind": "http", "service": "crm", **kw})


def probes() -> list[int]:
    """Host pids of processes running the test service (its file name holds the marker)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if MARKER.encode() in (d / "cmdline").read_bytes():
                    found.append(int(d.name))
            except OSError:
                pass
    return found


def service_pids(svc: ServiceProcess) -> list[int]:
    """bwrap, the sandbox's first process and everything under it (host pids)."""
    assert svc.pids is not None
    roots = {p for p in svc.pids if p}
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
                ppid = int(stat[stat.rfind(")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), list(roots)
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo += children.get(p, [])
    return sorted(out)


def gone(pids: list[int], within: float = 5.0) -> list[int]:
    """The pids still alive after waiting up to `within` seconds (zombies count as gone)."""
    deadline = time.monotonic() + within
    while True:
        alive = []
        for p in pids:
            try:
                state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                alive.append(p)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def run(pack: Path, work: Path, body: Callable[[ServiceProcess], Awaitable[Any]],
        **kw: Any) -> Any:
    async def main() -> Any:
        async with ServiceProcess("crm", spec(**kw), pack_dir=pack, work_dir=work) as svc:
            return await body(svc)

    return asyncio.run(main())


# --------------------------------------------------------------------------- requests


def test_requests_are_filled_from_templates_and_escaped() -> None:
    req = build_request(impl(method="GET", path="/orders/{order_id}/items",
                             query={"q": "{query}", "limit": "{max_results}",
                                    "tag": "x-{tag}"}),
                        {"order_id": "#W1/../2 3", "query": "Zoë", "max_results": 5})
    assert req == {"method": "GET", "path": "/orders/%23W1%2F..%2F2%203/items",
                   "query": {"q": "Zoë", "limit": 5}, "body": None}  # absent `tag` left out
    req = build_request(impl(method="POST", path="/notes",
                             body={"text": "{text}", "tags": "{tags}", "who": "by {user}",
                                   "fixed": 1}),
                        {"text": "买牛奶", "tags": ["a", "b"], "user": "ana"})
    assert req["body"] == {"text": "买牛奶", "tags": ["a", "b"], "who": "by ana", "fixed": 1}
    # no query, no body: the other arguments go where the method expects them
    assert build_request(impl(method="GET", path="/c/{id}"), {"id": 7, "q": "x"})["query"] == \
        {"q": "x"}
    assert build_request(impl(method="PUT", path="/c/{id}"), {"id": 7, "q": "x"})["body"] == \
        {"q": "x"}
    with pytest.raises(ToolError, match=r"missing argument `order_id`.*/orders/\{order_id\}"):
        build_request(impl(path="/orders/{order_id}"), {})


def test_start_call_count_reset_and_state(pack: Path, tmp_path: Path) -> None:
    async def body(svc: ServiceProcess) -> Any:
        inc = impl(method="POST", path="/counter", body={"by": "{by}"})
        got = [await call_http(svc, inc, {"by": 2}), await call_http(svc, inc, {"by": 3})]
        echo = await call_http(svc, impl(method="GET", path="/echo/{name}",
                                         query={"q": "{q}", "flag": "{flag}", "ids": "{ids}"}),
                               {"name": "a b/c", "q": "咖啡 café & co", "flag": True, "ids": [1, 2]})
        snap = await svc.snapshot()
        await svc.reset()
        after_reset = await call_http(svc, impl(path="/counter"), {})
        await svc.restore(snap)
        restored = await call_http(svc, impl(path="/counter"), {})
        return got, echo, snap, after_reset, restored

    got, echo, snap, after_reset, restored = run(pack, tmp_path / "run", body,
                                                 env={"GREETING": "hola"},
                                                 state={"get": "/state", "put": "/state"})
    assert [g["response"]["body"] for g in got] == [{"count": 2}, {"count": 5}]
    assert got[0]["request"] == {"method": "POST", "path": "/counter", "query": {},
                                 "body": {"by": 2}}
    assert got[0]["response"]["status"] == 200
    assert got[0]["response"]["headers"] == {"content-type": "application/json"}
    assert got[0]["response"]["truncated"] is False
    e = echo["response"]["body"]
    assert e["path"] == "/echo/a%20b%2Fc"  # one segment: the slash cannot climb out
    assert e["query"] == {"q": ["咖啡 café & co"], "flag": ["true"], "ids": ["1", "2"]}
    assert e["env"] == "hola" and e["method"] == "GET"
    assert snap == {"count": 5}
    assert after_reset["response"]["body"] == {"count": 0}
    assert restored["response"]["body"] == {"count": 5}


def test_errors_are_tool_errors_with_status_and_body(pack: Path, tmp_path: Path) -> None:
    async def body(svc: ServiceProcess) -> list[Any]:
        out: list[Any] = []
        for i, args in ((impl(path="/fail"), {}), (impl(path="/teapot"), {}),
                        (impl(path="/nowhere"), {}),
                        (impl(path="/slow", query={"s": "{s}"}, timeout_s=0.5), {"s": 3})):
            try:
                out.append(await call_http(svc, i, args))
            except HttpToolError as exc:
                out.append(exc)
        big = await call_http(svc, impl(path="/big", max_response_chars=1000), {})
        # the slow handler is still sleeping in its thread: the service goes on answering
        out.append(big)
        out.append(await call_http(svc, impl(path="/counter"), {}))
        return out

    fail, teapot, missing, slow, big, ok = run(pack, tmp_path / "run", body)
    assert str(fail) == ("GET /fail on service `crm` answered HTTP 500: "
                         '{"error": "database is on fire"}')
    assert fail.response["status"] == 500 and fail.request["path"] == "/fail"
    assert str(teapot) == "GET /teapot on service `crm` answered HTTP 418: short and stout"
    assert "HTTP 404" in str(missing) and "no such endpoint /nowhere" in str(missing)
    assert str(slow) == "GET /slow on service `crm` timed out after 0.5 s"
    assert slow.response is None
    assert big["response"]["truncated"] is True and big["response"]["body"] == "é" * 1000
    assert ok["response"]["body"] == {"count": 0}


def test_a_call_to_a_dead_service_says_it_exited_and_quotes_its_log(pack: Path,
                                                                   tmp_path: Path) -> None:
    async def body(svc: ServiceProcess) -> HttpToolError:
        assert svc.pids is not None
        os.kill(svc.pids[1] or svc.pids[0], signal.SIGKILL)
        for _ in range(100):
            if not svc.running:
                break
            await asyncio.sleep(0.05)
        with pytest.raises(HttpToolError) as err:
            await call_http(svc, impl(path="/counter"), {})
        return err.value

    err = run(pack, tmp_path / "run", body)
    assert str(err).startswith("GET /counter on service `crm` failed: service `crm` exited "
                               "with code")
    assert "crm service booting" in str(err)


# --------------------------------------------------------------------------- start-up failures


def test_a_crashing_service_is_named_with_its_log_tail(pack: Path, tmp_path: Path) -> None:
    t0 = time.monotonic()
    with pytest.raises(ServiceStartError) as err:
        run(pack, tmp_path / "run", lambda svc: asyncio.sleep(0), env={"CRASH": "1"})
    msg = str(err.value)
    assert msg.startswith("service `crm` did not start: it exited with code 3 before its "
                          "health check passed; last lines of its log (")
    assert "crm service booting | Traceback: KeyError: 'customers' (fixtures missing)" in msg
    assert "\n" not in msg and time.monotonic() - t0 < 10  # no waiting for the health timeout
    assert gone(probes()) == []


def test_an_unhealthy_service_times_out_and_is_killed(pack: Path, tmp_path: Path) -> None:
    with pytest.raises(ServiceStartError) as err:
        run(pack, tmp_path / "run", lambda svc: asyncio.sleep(0),
            env={"NEVER_HEALTHY": "1"}, health={"path": "/health", "timeout_s": 1.5})
    assert "GET /health gave no 2xx answer within 1.5 s (last: HTTP 503)" in str(err.value)
    assert "crm service booting" in str(err.value)
    assert gone(probes()) == []


def test_a_missing_program_and_a_cwd_outside_the_pack_are_clear(pack: Path,
                                                                tmp_path: Path) -> None:
    with pytest.raises(ServiceStartError) as err:
        run(pack, tmp_path / "run", lambda svc: asyncio.sleep(0),
            command=["/nonexistent/crm-server"])
    assert "it exited with code 127" in str(err.value)
    assert "cannot start the service" in str(err.value)
    with pytest.raises(ServiceStartError, match=r"its cwd `\.\./\.\.` is outside the pack"):
        run(pack, tmp_path / "run", lambda svc: asyncio.sleep(0), cwd="../..")


def test_a_pack_only_root_can_read_is_refused_before_starting(pack: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only a runner started as root drops the service to an unprivileged user")
    os.chmod(pack, 0o700)
    with pytest.raises(ServiceStartError, match=r"not readable by other users.*chmod o\+rx"):
        run(pack, tmp_path / "run", lambda svc: asyncio.sleep(0))


def test_a_long_work_directory_gets_a_short_socket_that_is_removed(pack: Path,
                                                                   tmp_path: Path) -> None:
    work = tmp_path / ("w" * 120)
    seen: dict[str, Any] = {}

    async def body(svc: ServiceProcess) -> Any:
        seen["socket"] = svc.socket_path
        return await call_http(svc, impl(path="/counter"), {})

    assert run(pack, work, body)["response"]["body"] == {"count": 0}
    assert len(str(seen["socket"])) < 100 and not seen["socket"].parent.exists()


# --------------------------------------------------------------------------- isolation


def test_the_service_has_no_network(pack: Path, tmp_path: Path) -> None:
    host = socket.socket()
    host.bind(("127.0.0.1", 0))
    host.listen()
    port = host.getsockname()[1]
    socket.create_connection(("127.0.0.1", port), timeout=1).close()  # reachable from here
    try:
        got = run(pack, tmp_path / "run", lambda svc: call_http(
            svc, impl(path="/netcheck", query={"port": "{port}"}), {"port": port}))
    finally:
        host.close()
    assert got["response"]["body"] == {"interfaces": ["lo"], "host": "ConnectionRefusedError",
                                       "outside": "OSError"}


# --------------------------------------------------------------------------- nothing left behind


def test_stop_leaves_no_process_and_the_log_is_kept(pack: Path, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    async def main() -> None:
        svc = ServiceProcess("crm", spec(port=18123), pack_dir=pack, work_dir=tmp_path / "run")
        await svc.start()
        seen["pids"] = service_pids(svc)
        await svc.stop()
        await svc.stop()  # idempotent
        seen["log"] = svc.log_path

    asyncio.run(main())
    assert len(seen["pids"]) >= 4  # bwrap, its init, the supervisor, the service
    assert gone(seen["pids"]) == []
    log = Path(seen["log"]).read_text()
    assert "crm service booting" in log and "PORT=18123" in log
    assert json.loads((tmp_path / "run" / "services" / "pids.json").read_text()) == []


RUNNER = textwrap.dedent("""
    import asyncio, json, subprocess, sys
    from pathlib import Path
    from benchpack.runtime.env.processes import ServiceProcess
    from benchpack.specs.services import ProcessService

    async def main():
        spec = ProcessService(command=["python", "services/MARKER.py"], stop_grace_s=1)
        svc = ServiceProcess("crm", spec, pack_dir=Path(sys.argv[1]), work_dir=Path(sys.argv[2]))
        await svc.start()
        keeper = None
        if sys.argv[3] == "keep-stdin-open":
            # a process outliving this runner holds the supervisor's stdin open, so only
            # bwrap's --die-with-parent can end the sandbox
            keeper = subprocess.Popen(["sleep", "600"], pass_fds=[svc._proc.popen.stdin.fileno()],
                                      start_new_session=True).pid
        print(json.dumps([*svc.pids, keeper]), flush=True)
        await asyncio.sleep(600)

    asyncio.run(main())
""").replace("MARKER", MARKER)


def _runner(pack: Path, work: Path, mode: str) -> tuple[subprocess.Popen[str], list[int],
                                                         int | None]:
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(pack), str(work), mode],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, "the runner did not start its service"
    bwrap, child, keeper = json.loads(line)
    return proc, [bwrap, child], keeper


def _tree(roots: list[int]) -> list[int]:
    fake = ServiceProcess.__new__(ServiceProcess)
    fake._proc = SandboxProcess(None, roots[0], roots[1])  # type: ignore[arg-type]
    return service_pids(fake)


@pytest.mark.parametrize("mode", ["keep-stdin-open", "plain"])
def test_sigkill_of_the_runner_leaves_no_service_process(pack: Path, tmp_path: Path,
                                                        mode: str) -> None:
    """Two independent ways down: bwrap's --die-with-parent (alone when something keeps the
    control pipe open), and the supervisor stopping the service when its stdin closes."""
    proc, roots, keeper = _runner(pack, tmp_path / "run", mode)
    try:
        tree = _tree(roots)
        assert len(tree) >= 4 and probes()
        proc.kill()
        proc.wait()
        assert gone(tree) == [] and gone(probes()) == []
        registry = PidRegistry(tmp_path / "run" / "services" / "pids.json")
        entries = json.loads(registry.path.read_text())
        assert [e["service"] for e in entries] == ["crm"]
        assert registry.reap() == []  # --die-with-parent already did it: nothing to kill
        assert json.loads(registry.path.read_text()) == []
        assert all(not Path(e["socket_dir"]).exists() for e in entries if e["socket_dir"])
    finally:
        if keeper:
            os.kill(keeper, signal.SIGKILL)


def test_the_supervisor_stops_the_service_when_its_stdin_closes(pack: Path,
                                                                tmp_path: Path) -> None:
    async def main() -> list[int]:
        svc = ServiceProcess("crm", spec(), pack_dir=pack, work_dir=tmp_path / "run")
        await svc.start()
        assert svc._proc is not None and svc._proc.popen.stdin is not None
        tree = service_pids(svc)
        svc._proc.popen.stdin.close()  # what the kernel does when the runner dies
        for _ in range(100):
            if not svc.running:
                break
            await asyncio.sleep(0.05)
        assert not svc.running
        await svc.stop()
        return tree

    tree = asyncio.run(main())
    assert gone(tree) == []
    log = next((tmp_path / "run" / "services").glob("crm-*/service.log")).read_text()
    assert "the service exited by itself" not in log


def test_the_pid_registry_kills_leftovers_of_a_dead_runner(pack: Path, tmp_path: Path) -> None:
    work = tmp_path / "run"
    # a leftover: a process group a runner registered, then died without killing it
    owner = subprocess.Popen([sys.executable, "-c", "pass"])
    owner.wait()
    left = subprocess.Popen(["sleep", "300"], start_new_session=True)
    other = subprocess.Popen(["sleep", "300"], start_new_session=True)  # a recycled pid
    registry = PidRegistry(work / "services" / "pids.json")
    registry.path.parent.mkdir(parents=True)
    dead = {"owner": owner.pid, "owner_start": 1, "service": "crm", "child": None,
            "child_start": None}
    live = {"owner": os.getpid(), "owner_start": process_start_time(os.getpid()),
            "service": "live", "child": None, "child_start": None,
            "pid": other.pid, "pid_start": process_start_time(other.pid)}
    registry.path.write_text(json.dumps([
        {**dead, "pid": left.pid, "pid_start": process_start_time(left.pid)},
        {**dead, "pid": other.pid, "pid_start": (process_start_time(other.pid) or 0) - 1},
        live]))
    try:
        run(pack, work, lambda svc: asyncio.sleep(0))
        assert left.wait(timeout=5) == -signal.SIGKILL
        assert other.poll() is None  # wrong start time, or a live owner: never killed
        kept = json.loads(registry.path.read_text())
        assert [e["service"] for e in kept] == ["live"]
        assert "killed leftovers of a dead runner: crm" in \
            next((work / "services").glob("crm-*/service.log")).read_text()
    finally:
        for p in (left, other):
            p.kill()
            p.wait()


def test_reaping_a_real_sandbox_of_a_dead_runner_kills_all_of_it(pack: Path,
                                                                  tmp_path: Path) -> None:
    owner = subprocess.Popen([sys.executable, "-c", "pass"])
    owner.wait()

    async def main() -> tuple[list[int], list[str], list[int]]:
        # a long work directory: the socket lives in a temporary directory the reaper removes
        svc = ServiceProcess("crm", spec(), pack_dir=pack, work_dir=tmp_path / ("w" * 120))
        await svc.start()
        try:
            assert svc.socket_path is not None
            sock_dir = svc.socket_path.parent
            assert sock_dir.exists() and not sock_dir.is_relative_to(tmp_path)
            tree = service_pids(svc)
            entries = json.loads(svc.registry.path.read_text())
            for e in entries:  # as if a runner that is gone now had started it
                e["owner"], e["owner_start"] = owner.pid, 1
            svc.registry.path.write_text(json.dumps(entries))
            killed = svc.registry.reap()
            assert not sock_dir.exists()
            return tree, killed, gone(tree)
        finally:
            await svc.stop()

    tree, killed, alive = asyncio.run(main())
    assert len(tree) >= 4 and killed == ["crm"] and alive == []
