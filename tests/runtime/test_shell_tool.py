"""The opt-in shell tool: bash in the sandbox, the workspace read-write as its working
directory (handed back to the runner's user afterwards), no network, time and output limits."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from benchpack.runtime.env import ToolError, Workspace
from benchpack.runtime.env.shell import run_shell


def sh(ws: Workspace, command: str, **kw: Any) -> dict[str, Any]:
    kw.setdefault("allow_python", True)
    return asyncio.run(run_shell(ws, command, **kw))


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    w = Workspace(tmp_path / "ws", clear=True)
    w.write_file("notes/in.txt", "alpha\nbeta\n")
    return w


def owners(root: Path) -> set[tuple[int, int]]:
    out = {(root.lstat().st_uid, root.lstat().st_gid)}
    for p in root.rglob("*"):
        st = p.lstat()
        out.add((st.st_uid, st.st_gid))
    return out


def test_commands_read_and_write_the_workspace_with_the_runners_owner(ws: Workspace) -> None:
    out = sh(ws, "wc -l < notes/in.txt; mkdir -p made && echo 你好 > made/out.txt; "
                 "touch notes/in.txt; echo oops >&2; exit 3")
    assert out == {"exit_code": 3, "stdout": "2\n", "stderr": "oops\n", "truncated": False}
    assert (ws.root / "made/out.txt").read_text(encoding="utf-8") == "你好\n"
    assert ws.read_file("made/out.txt")["content"] == "你好\n"
    assert owners(ws.root) == {(os.geteuid(), os.getegid())}


@pytest.mark.skipif(os.geteuid() != 0, reason="the hand-off only happens for a root runner")
def test_the_hand_back_never_follows_a_link(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("not the workspace's")
    os.chown(outside, 4321, 4321)
    out = sh(ws, f"ln -s {outside} evil; ln -s /usr/bin bindir; chmod u+s notes/in.txt; echo ok")
    assert out["exit_code"] == 0, out
    assert (outside.stat().st_uid, outside.stat().st_gid) == (4321, 4321)
    assert Path("/usr/bin").stat().st_uid == 0
    assert not (ws.root / "notes/in.txt").stat().st_mode & 0o4000  # chown cleared set-uid
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.read_file("evil")


def test_no_network_and_no_runner_files(ws: Workspace, tmp_path: Path,
                                        monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-runner-secret")
    secret = tmp_path / "secret.txt"
    secret.write_text("runner's file")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    accepted: list[Any] = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    try:
        out = sh(ws, f"env; cat {secret}; (echo hi > /dev/tcp/127.0.0.1/{port}) 2>&1 "
                     "&& echo CONNECTED; ls /root /home 2>&1 | head -3")
    finally:
        server.close()
    text = out["stdout"] + out["stderr"]
    assert "sk-runner-secret" not in text and "runner's file" not in text
    assert "CONNECTED" not in text and accepted == []


def test_time_limit_is_a_tool_error_with_the_output_so_far(ws: Workspace) -> None:
    t0 = time.monotonic()
    with pytest.raises(ToolError, match="timed out after 1 s; output so far: started"):
        sh(ws, "echo started; sleep 100", timeout_s=1.0)
    assert time.monotonic() - t0 < 6


def test_output_limit_stops_the_command_and_says_truncated(ws: Workspace) -> None:
    out = sh(ws, "yes 汉字", max_output=1000)
    assert out["truncated"] is True and out["exit_code"] is None
    assert len(out["stdout"].encode("utf-8", "replace")) <= 1000 + 3
    assert out["stdout"].startswith("汉字\n汉字\n")


def test_refusals(ws: Workspace) -> None:
    with pytest.raises(ToolError, match="needs --allow-python"):
        sh(ws, "echo hi", allow_python=False)
    with pytest.raises(ToolError, match="give `command`"):
        sh(ws, "   ")
    with pytest.raises(ToolError, match="give `command`"):
        sh(ws, ["echo", "hi"])  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="NUL"):
        sh(ws, "echo \x00")
