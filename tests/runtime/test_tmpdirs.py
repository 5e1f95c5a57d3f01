"""Temporary directories of runs killed by SIGKILL are removed by the next run (`tmpdirs`),
and nothing else is: not a live process's, not another machine's or PID namespace's, not a
name without an owner, not a file, never through a symlink."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchpack.runtime import tmpdirs

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def _made_by_a_process_that_ended(root: Path, prefix: str) -> Path:
    out = subprocess.run([sys.executable, "-c", "import sys\nfrom benchpack.runtime.tmpdirs "
                          f"import temp_dir\nprint(temp_dir({prefix!r}, dir=sys.argv[1]))",
                          str(root)], capture_output=True, text=True, check=True)
    made = Path(out.stdout.strip())
    (made / "home").mkdir()
    (made / "home" / "notes.txt").write_text("left by a killed run")
    return made


def test_sweep_removes_what_ended_processes_made_and_nothing_else(tmp_path: Path) -> None:
    ended = [_made_by_a_process_that_ended(tmp_path, p)
             for p in ("benchpack-", "benchpack-harness-", "benchpack-tools-", "bp-svc-")]
    mine = tmpdirs.temp_dir("benchpack-acp-", dir=tmp_path)
    tag = tmpdirs.owner_tag()
    assert tag is not None and mine.name.startswith(f"benchpack-acp-{tag}-")
    pid, start, machine = tag[1:].split(".")
    # our pid with another start time: the pid was reused, its maker is gone
    reused = tmp_path / f"benchpack-o{pid}.{tmpdirs._base36(int(start, 36) + 1)}.{machine}-x1"
    reused.mkdir()
    elsewhere = tmp_path / f"benchpack-o{pid}.{tmpdirs._base36(int(start, 36) + 1)}.000000-x2"
    elsewhere.mkdir()  # another boot or PID namespace: its pids mean nothing here
    untagged = tmp_path / "benchpack-olderstyle"
    untagged.mkdir()
    other_name = tmp_path / f"myapp-o{pid}.1.{machine}-x3"
    other_name.mkdir()
    a_file = tmp_path / f"benchpack-o{pid}.1.{machine}-x4"
    a_file.write_text("not a directory")
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep.txt").write_text("reached only through a link")
    link = tmp_path / f"benchpack-o{pid}.1.{machine}-x5"
    link.symlink_to(target, target_is_directory=True)

    removed = tmpdirs.sweep(tmp_path)

    assert sorted(removed) == sorted([*ended, reused])
    assert not any(p.exists() for p in [*ended, reused])
    for kept in (mine, elsewhere, untagged, other_name, a_file, link, target / "keep.txt"):
        assert os.path.lexists(kept), kept
    assert tmpdirs.sweep(tmp_path) == []


def test_a_forked_child_names_its_own_directories(tmp_path: Path) -> None:
    """Ray and multiprocessing fork: the tag is the child's, not the parent's it inherited."""
    parent = tmpdirs.owner_tag()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(write, str(tmpdirs.owner_tag()).encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 200).decode()
    os.waitpid(pid, 0)
    assert child != parent and child.startswith(f"o{tmpdirs._base36(pid)}.")


def test_scratch_directories_of_a_killed_process_are_swept(tmp_path: Path) -> None:
    """Issue 27: the scratch directories of one sandboxed call (python graders and tools, the
    shell) and of a replayed state check are named after their maker too: a SIGKILL in the
    middle of a call left them for good (`bench-replay-*`: 14 of 15 killed trials)."""
    script = ("import os, signal, sys\nfrom benchpack.runtime import tmpdirs\n"
              "with tmpdirs.temporary('benchpack-sandbox-', dir=sys.argv[1]) as d:\n"
              "    (d / 'args.json').write_text('{}')\n"
              "    os.kill(os.getpid(), signal.SIGKILL)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)])
    assert done.returncode == -9
    left = list(tmp_path.iterdir())
    assert len(left) == 1 and left[0].name.startswith("benchpack-sandbox-o")
    assert tmpdirs.sweep(tmp_path) == left and not left[0].exists()
    with tmpdirs.temporary("benchpack-replay-", dir=tmp_path) as mine:
        assert mine.is_dir() and tmpdirs.sweep(tmp_path) == []  # a live maker's: kept
    assert not mine.exists()  # removed on the way out, like TemporaryDirectory


def test_every_scratch_directory_is_made_with_an_owner() -> None:
    """No module of the runtime makes an untagged temporary directory (they cannot be swept):
    `tempfile.mkdtemp`/`TemporaryDirectory` appear only where a tagged name would not fit."""
    import re

    root = Path(__file__).resolve().parents[2] / "runtime" / "benchpack" / "runtime"
    allowed = {"tmpdirs.py", "processes.py"}  # processes.py: inside the run's work directory,
    # and a fallback for a TMPDIR too long for a socket path
    found = [f"{p.relative_to(root)}:{n}" for p in root.rglob("*.py") if p.name not in allowed
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"tempfile\.(mkdtemp|TemporaryDirectory)\(", line)]
    assert found == [], found


def test_a_coroutines_scratch_directory_is_removed_off_the_event_loop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`atemporary` (issue 31): named like `temporary`'s (swept after a SIGKILL), removed on
    the way out, in another thread than the loop's, and the way out waits for it."""
    import asyncio
    import threading

    removed_on: list[threading.Thread] = []
    real = tmpdirs.shutil.rmtree

    def rmtree(path: Path, ignore_errors: bool = False) -> None:
        removed_on.append(threading.current_thread())
        real(path, ignore_errors)
    monkeypatch.setattr(tmpdirs.shutil, "rmtree", rmtree)

    async def use() -> tuple[Path, threading.Thread]:
        async with tmpdirs.atemporary("benchpack-test-", tmp_path) as path:
            (path / "sub").mkdir()
            (path / "sub" / "f.txt").write_text("x", encoding="utf-8")
            assert tmpdirs.owner_tag() is None or tmpdirs.owner_tag() in path.name
        assert not path.exists()
        return path, threading.current_thread()

    path, loop_thread = asyncio.run(use())
    assert path.parent == tmp_path and path.name.startswith("benchpack-test-")
    assert len(removed_on) == 1 and removed_on[0] is not loop_thread
