"""Issue 11, workspace hangs and escapes: FIFOs, a symlink swapped in mid-call, host paths in
tool errors."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from benchpack.runtime.env import ToolError, Workspace
from conftest import bare_toolbox


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "a.md").write_text("TOP SECRET\n", encoding="utf-8")
    return d


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    w = Workspace(tmp_path / "ws")
    (w.root / "notes").mkdir()
    (w.root / "notes" / "a.md").write_text("alpha\n", encoding="utf-8")
    return w


def _bounded(fn: Any, seconds: float = 3.0) -> Any:
    """Run fn in a thread; fail (instead of hanging the suite) if it does not finish."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        pytest.fail(f"still blocked after {seconds} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_read_file_on_a_fifo_is_refused_not_a_hang(ws: Workspace) -> None:
    os.mkfifo(ws.root / "pipe")
    try:
        with pytest.raises(ToolError, match="not a regular file"):
            _bounded(lambda: ws.read_file("pipe"))
        with pytest.raises(ToolError, match="not a regular file"):
            _bounded(lambda: ws.edit_file("pipe", "a", "b"))
        with pytest.raises(ToolError, match="not a regular file"):
            _bounded(lambda: ws.write_file("pipe", "x"))
        assert _bounded(lambda: ws.grep("x", "pipe"))["matches"] == []
        assert "pipe" not in _bounded(lambda: ws.list_files())["files"]
    finally:  # unblock any reader left behind
        with contextlib.suppress(OSError):
            os.close(os.open(ws.root / "pipe", os.O_WRONLY | os.O_NONBLOCK))


def _swap_after_resolve(monkeypatch: pytest.MonkeyPatch, ws: Workspace, outside: Path) -> None:
    """The race, made deterministic: the path checks pass, then `notes` becomes a link out."""
    real_resolve = Workspace.resolve

    def resolve(self: Workspace, path: Any, **kw: Any) -> Any:
        out = real_resolve(self, path, **kw)
        if (self.root / "notes").is_dir() and not (self.root / "notes").is_symlink():
            shutil.rmtree(self.root / "notes")
            os.symlink(outside, self.root / "notes")
        return out

    monkeypatch.setattr(Workspace, "resolve", resolve)


def test_a_symlink_swapped_in_after_the_check_leaks_nothing(
        ws: Workspace, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _swap_after_resolve(monkeypatch, ws, outside)
    with pytest.raises(ToolError) as err:
        ws.read_file("notes/a.md")
    assert "TOP SECRET" not in str(err.value)


def test_a_symlink_swapped_in_before_a_write_writes_nothing_outside(
        ws: Workspace, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _swap_after_resolve(monkeypatch, ws, outside)
    with pytest.raises(ToolError):
        ws.write_file("notes/a.md", "pwned")
    with pytest.raises(ToolError):
        ws.write_file("notes/new.md", "pwned")
    assert (outside / "a.md").read_text(encoding="utf-8") == "TOP SECRET\n"
    assert sorted(p.name for p in outside.iterdir()) == ["a.md"]


FLIPPER = """
import os, sys, time
root, link, spare = sys.argv[1:4]
stop = time.monotonic() + float(sys.argv[4])
notes, tmp = os.path.join(root, "notes"), os.path.join(root, "notes.tmp")
while time.monotonic() < stop:
    os.rename(link, tmp)      # tmp is the link out
    os.rename(notes, spare)   # the real directory steps aside
    os.rename(tmp, notes)     # notes -> outside
    os.rename(notes, link)
    os.rename(spare, notes)   # notes is the real directory again
"""


def test_swap_race_probe(ws: Workspace, outside: Path) -> None:
    """The original probe: another process (a command-line agent, say) flips `notes` between
    the real directory and a link out while the agent reads `notes/a.md`; not one read may
    return the outside text."""
    import subprocess
    import sys

    link = ws.root.parent / "link"
    os.symlink(outside, link)
    proc = subprocess.Popen([sys.executable, "-c", FLIPPER, str(ws.root), str(link),
                             str(ws.root.parent / "spare"), "1.5"])
    tried = leaked = 0
    while proc.poll() is None:
        tried += 1
        try:
            if "TOP SECRET" in ws.read_file("notes/a.md")["content"]:
                leaked += 1
        except ToolError:
            pass
    assert proc.returncode == 0
    assert tried > 200 and leaked == 0, (tried, leaked)


def test_tool_errors_never_show_the_host_path(ws: Workspace) -> None:
    os.symlink("loop", ws.root / "loop")
    (ws.root / "file.txt").write_text("x", encoding="utf-8")
    root = str(ws.root)
    probes = [lambda: ws.read_file("loop"), lambda: ws.read_file("nothing/here.md"),
              lambda: ws.write_file("file.txt/child.md", "x"), lambda: ws.list_files("loop"),
              lambda: ws.grep("x", "loop"), lambda: ws.edit_file("loop", "a", "b")]
    for probe in probes:
        try:
            probe()
        except ToolError as exc:
            assert root not in str(exc) and str(ws.root.parent) not in str(exc), str(exc)


def test_toolbox_scrubs_the_host_path_from_internal_errors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchpack.runtime.env.builtin_specs import BUILTIN_EFFECTS, BUILTIN_SPECS
    from benchpack.runtime.env.toolbox import ToolDef
    ws = Workspace(tmp_path / "ws")

    def broken(self: Workspace, *a: Any, **kw: Any) -> Any:
        raise OSError(f"disk trouble at {self.root}/notes/a.md")

    monkeypatch.setattr(Workspace, "glob", broken)
    box = bare_toolbox(type("E", (), {"workspace": ws, "services": {}})(),
                       {"glob": ToolDef("glob", "", BUILTIN_SPECS["glob"]["parameters"],
                                        BUILTIN_EFFECTS["glob"], None, "glob")})
    rec = asyncio.run(box.call("glob", {"pattern": "*"}))
    assert rec.error and str(ws.root) not in rec.error and "notes/a.md" in rec.error, rec.error
