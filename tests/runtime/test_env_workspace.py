"""The episode workspace: path confinement for every file tool, the tools themselves, I/O
tracking, snapshots."""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchpack.runtime.env import MAX_FILE_BYTES, ToolError, Workspace
from benchpack.specs.plan import PlanFile


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("TOP SECRET\n", encoding="utf-8")
    return d


@pytest.fixture
def ws(tmp_path: Path, outside: Path) -> Workspace:
    w = Workspace(tmp_path / "ws")
    (w.root / "notes").mkdir()
    (w.root / "notes" / "a.md").write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
    (w.root / "top.txt").write_text("top line\n", encoding="utf-8")
    os.symlink(outside / "secret.txt", w.root / "leak.txt")
    os.symlink(outside, w.root / "leakdir")
    os.symlink(outside / "nothing-yet.txt", w.root / "dangling.txt")
    return w


BAD_PATHS = ["../x", "/etc/passwd", "a/../../x", "notes/../../x", "x\x00y", "",
             "leak.txt", "leakdir/secret.txt", "leakdir/new.txt", "dangling.txt",
             "leakdir"]

FILE_TOOLS: dict[str, Callable[[Workspace, str], Any]] = {
    "read_file": lambda w, p: w.read_file(p),
    "write_file": lambda w, p: w.write_file(p, "pwned"),
    "edit_file": lambda w, p: w.edit_file(p, "TOP", "pwned"),
    "list_files": lambda w, p: w.list_files(p),
    "grep": lambda w, p: w.grep("SECRET", p),
}


@pytest.mark.parametrize("tool,path", [
    (tool, path) for tool in sorted(FILE_TOOLS) for path in BAD_PATHS
    # for the directory tools an empty path means the root
    if not (path == "" and tool in ("list_files", "grep"))])
def test_every_file_tool_refuses_paths_outside_the_root(ws: Workspace, outside: Path,
                                                        tool: str, path: str) -> None:
    with pytest.raises(ToolError) as err:
        FILE_TOOLS[tool](ws, path)
    assert str(err.value)
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "TOP SECRET\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert not (ws.root.parent / "x").exists()


@pytest.mark.parametrize("path,needle", [
    ("../x", "leaves the workspace"), ("/etc/passwd", "absolute"),
    ("a/../../x", "leaves the workspace"), ("x\x00y", "NUL"),
    ("leak.txt", "outside the workspace"), ("leakdir/secret.txt", "outside the workspace"),
    ("", "empty"),
])
def test_refusals_say_why(ws: Workspace, path: str, needle: str) -> None:
    with pytest.raises(ToolError, match=needle):
        ws.read_file(path)


def test_non_string_path_and_symlink_loop(ws: Workspace) -> None:
    with pytest.raises(ToolError, match="string"):
        ws.read_file(42)
    os.symlink(ws.root / "loop", ws.root / "loop")
    with pytest.raises(ToolError):
        ws.read_file("loop")


def test_glob_and_listing_never_show_outside_files(ws: Workspace) -> None:
    for pat in ["../*", "/etc/*", "leakdir/*", "**/*", "*", "**/secret.txt"]:
        try:
            found = ws.glob(pat)["matches"]
        except ToolError:
            continue
        assert not any("secret" in m for m in found), (pat, found)
    listed = ws.list_files()["files"]
    assert listed == ["notes/a.md", "top.txt"]
    assert ws.grep("SECRET")["matches"] == []
    assert "leak.txt" not in ws.files() and "dangling.txt" not in ws.files()


def test_paths_that_stay_inside_are_fine(ws: Workspace) -> None:
    assert ws.read_file("notes/../top.txt")["content"] == "top line\n"
    assert ws.read_file("./notes//a.md")["path"] == "notes/a.md"
    os.symlink(ws.root / "top.txt", ws.root / "alias.txt")
    assert ws.read_file("alias.txt")["content"] == "top line\n"


def test_read_file_plain_text_with_line_window(ws: Workspace) -> None:
    whole = ws.read_file("notes/a.md")
    assert whole == {"path": "notes/a.md", "content": "alpha\nbeta\ngamma\n", "start_line": 1,
                     "end_line": 3, "total_lines": 3}
    part = ws.read_file("notes/a.md", offset=1, limit=1)
    assert (part["content"], part["start_line"], part["end_line"]) == ("beta\n", 2, 2)
    with pytest.raises(ToolError, match="past the end"):
        ws.read_file("notes/a.md", offset=5)
    with pytest.raises(ToolError, match="limit"):
        ws.read_file("notes/a.md", limit=0)


def test_read_file_errors(ws: Workspace) -> None:
    with pytest.raises(ToolError, match=re.escape("did you mean `notes/a.md`")):
        ws.read_file("notes/a.txt")
    with pytest.raises(ToolError, match="directory"):
        ws.read_file("notes")
    (ws.root / "blob.bin").write_bytes(b"\xff\xfe\x00\x01")
    # binary files are described, not refused (tests/runtime/test_binary_files.py)
    assert ws.read_file("blob.bin")["kind"] == "binary"
    (ws.root / "big.txt").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    with pytest.raises(ToolError, match="too large"):
        ws.read_file("big.txt")


def test_write_file(ws: Workspace) -> None:
    out = ws.write_file("deep/er/new.md", "héllo")
    assert out == {"path": "deep/er/new.md", "bytes": 6, "created": True}
    assert (ws.root / "deep/er/new.md").read_text(encoding="utf-8") == "héllo"
    assert ws.write_file("deep/er/new.md", "again")["created"] is False
    with pytest.raises(ToolError, match="parent path is a file"):
        ws.write_file("top.txt/child.md", "x")
    with pytest.raises(ToolError, match="directory"):
        ws.write_file("notes", "x")
    with pytest.raises(ToolError, match="too large"):
        ws.write_file("huge.txt", "x" * (MAX_FILE_BYTES + 1))
    with pytest.raises(ToolError, match="content"):
        ws.write_file("x.txt", None)


def test_edit_file(ws: Workspace) -> None:
    assert ws.edit_file("notes/a.md", "beta", "BETA") == {"path": "notes/a.md", "replaced": 1}
    assert ws.read_file("notes/a.md")["content"] == "alpha\nBETA\ngamma\n"
    with pytest.raises(ToolError, match="not found"):
        ws.edit_file("notes/a.md", "delta", "x")
    ws.write_file("r.txt", "a a a")
    with pytest.raises(ToolError, match="occurs 3 times"):
        ws.edit_file("r.txt", "a", "b")
    with pytest.raises(ToolError, match="not 2"):
        ws.edit_file("r.txt", "a", "b", count=2)
    assert ws.edit_file("r.txt", "a", "b", count=3)["replaced"] == 3
    assert ws.edit_file("r.txt", "b", "c", count=0)["replaced"] == 3
    assert ws.read_file("r.txt")["content"] == "c c c"
    with pytest.raises(ToolError, match="empty"):
        ws.edit_file("r.txt", "", "x")


def test_list_glob_grep(ws: Workspace) -> None:
    ws.write_file("notes/sub/b.md", "beta two\n")
    assert ws.list_files("notes")["files"] == ["notes/a.md", "notes/sub/b.md"]
    assert ws.list_files("top.txt")["files"] == ["top.txt"]
    with pytest.raises(ToolError):
        ws.list_files("nope")
    assert ws.glob("**/*.md")["matches"] == ["notes/a.md", "notes/sub/b.md"]
    assert ws.glob("notes/*")["matches"] == ["notes/a.md", "notes/sub/"]
    hits = ws.grep(r"^beta")["matches"]
    assert hits == [{"path": "notes/a.md", "line": 2, "text": "beta"},
                    {"path": "notes/sub/b.md", "line": 1, "text": "beta two"}]
    for pattern in ("notes/sub/*.md", "**/sub/*.md", "b.*"):
        assert [m["path"] for m in ws.grep("beta", glob=pattern)["matches"]] == ["notes/sub/b.md"]
    assert [m["path"] for m in ws.grep("beta", glob="**/*.md")["matches"]] == [
        "notes/a.md", "notes/sub/b.md"]
    assert ws.grep("line", glob="*.md")["matches"] == []
    assert ws.grep("beta", path="notes/sub")["files_searched"] == 1
    with pytest.raises(ToolError, match="invalid regular expression"):
        ws.grep("(unclosed")


def test_grep_caps_results(ws: Workspace) -> None:
    ws.write_file("many.txt", "hit\n" * 500)
    out = ws.grep("hit")
    assert out["truncated"] is True and len(out["matches"]) == 200


def test_take_io_tracks_reads_and_writes(ws: Workspace) -> None:
    ws.read_file("notes/a.md")
    ws.write_file("out.md", "x")
    ws.edit_file("top.txt", "top", "TOP")
    ws.list_files()
    ws.glob("*")
    assert ws.take_io() == ({"notes/a.md"}, {"out.md", "top.txt"})
    assert ws.take_io() == (set(), set())
    ws.grep("alpha")
    assert ws.take_io() == ({"notes/a.md"}, set())
    with pytest.raises(ToolError):
        ws.read_file("../x")
    assert ws.take_io() == (set(), set())


def test_snapshot_restore_round_trip(tmp_path: Path) -> None:
    w = Workspace(tmp_path / "w")
    w.write_file("a/b.md", "text ✓\n")
    w.write_file("tricky.txt", "base64:not really")
    (w.root / "img.bin").write_bytes(b"\x89PNG\x00\xff")
    snap = w.snapshot()
    assert snap["a/b.md"] == "text ✓\n"
    assert snap["img.bin"] == "base64:" + base64.b64encode(b"\x89PNG\x00\xff").decode()
    assert w.files()["tricky.txt"] == "base64:not really"
    snap = json.loads(json.dumps(snap))
    w.write_file("a/b.md", "changed")
    w.write_file("extra.txt", "gone after restore")
    w2 = Workspace(tmp_path / "w2")
    w2.write_file("stale.txt", "x")
    for target in (w, w2):
        target.restore(snap)
        assert target.snapshot() == snap
        assert (target.root / "img.bin").read_bytes() == b"\x89PNG\x00\xff"
        assert (target.root / "tricky.txt").read_text(encoding="utf-8") == "base64:not really"
        assert not (target.root / "extra.txt").exists()
        assert not (target.root / "stale.txt").exists()


def test_materialise_plan_files(tmp_path: Path) -> None:
    w = Workspace(tmp_path / "w")
    files = [
        PlanFile(path="notes/x.md", encoding="utf-8", content="hi\n", sha256="0"),
        PlanFile(path="data/blob.bin", encoding="base64",
                 content=base64.b64encode(b"\x00\x01").decode(), sha256="0"),
    ]
    w.materialise(files)
    assert (w.root / "notes/x.md").read_text(encoding="utf-8") == "hi\n"
    assert (w.root / "data/blob.bin").read_bytes() == b"\x00\x01"
    assert w.take_io() == (set(), set())
    assert w.read_text("notes/x.md") == "hi\n"
    assert w.read_text("../nope") is None
    with pytest.raises(ToolError):
        w.materialise([PlanFile(path="../evil.md", encoding="utf-8", content="x", sha256="0")])
    assert not (tmp_path / "evil.md").exists()


def test_clear_keeps_outside_files(tmp_path: Path, outside: Path) -> None:
    w = Workspace(tmp_path / "w")
    os.symlink(outside, w.root / "link")
    w.write_file("x.txt", "x")
    Workspace(tmp_path / "w", clear=True)
    assert list(w.root.iterdir()) == []
    assert (outside / "secret.txt").exists()


def test_workspace_is_made_at_first_use_and_an_existing_one_is_cleared(tmp_path: Path) -> None:
    lazy = Workspace(tmp_path / "ep-r0", clear=True)
    assert not (tmp_path / "ep-r0").exists()  # nobody used it: no directory
    assert lazy.files() == {} and lazy.snapshot() == {}
    lazy.clear()
    assert not (tmp_path / "ep-r0").exists()
    lazy.write_file("notes/a.txt", "甲")  # first use makes it
    assert (tmp_path / "ep-r0" / "notes" / "a.txt").read_text(encoding="utf-8") == "甲"
    assert lazy.files() == {"notes/a.txt": "甲"}
    again = Workspace(tmp_path / "ep-r0", clear=True)  # an existing directory: emptied now
    assert list((tmp_path / "ep-r0").iterdir()) == [] and again.files() == {}
