"""Issue 11, hangs: no tool call, pack regex or agent pattern can stall a run.

Probes (each ran for seconds to minutes before the fix): a glob with five `**` over a 40-level
tree (55 s), grep `(a+)+$` over 26 a's (9.9 s), a reply rule `^(a+)+$` on 40 a's and `!`
(minutes), and a slow tool blocking every other chain on the event loop.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

from benchpack.runtime.env import ToolBox, ToolError, Workspace
from benchpack.runtime.env import confined as confined_module
from benchpack.runtime.graders.rule import evaluate
from benchpack.runtime.graders.trace import Trace
from conftest import bare_toolbox


def _deep(root: Path, levels: int) -> None:
    d = root
    for i in range(levels):
        d = d / f"d{i}"
    d.mkdir(parents=True)
    (d / "leaf.txt").write_text("leaf\n", encoding="utf-8")


def test_glob_with_many_double_stars_over_a_deep_tree_is_fast(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    _deep(ws.root, 40)
    t0 = time.perf_counter()
    try:
        out = ws.glob("**/**/**/**/**/*.txt")
        assert out["matches"] and out["matches"][0].endswith("leaf.txt")
    except ToolError as exc:  # refusing the pattern is as good as answering it
        assert "glob" in str(exc)
    assert time.perf_counter() - t0 < 1.0


def test_glob_work_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = Workspace(tmp_path / "ws")
    for i in range(30):
        (ws.root / f"f{i}.txt").write_text("x", encoding="utf-8")
    monkeypatch.setattr(confined_module, "MAX_WALK_ENTRIES", 10)
    out = ws.glob("*.txt")
    assert out["truncated"] is True and len(out["matches"]) <= 10


def test_glob_semantics_survive(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    (ws.root / "notes" / "sub").mkdir(parents=True)
    (ws.root / "notes" / "a.md").write_text("a", encoding="utf-8")
    (ws.root / "notes" / "sub" / "b.md").write_text("b", encoding="utf-8")
    (ws.root / "top.md").write_text("t", encoding="utf-8")
    (ws.root / "笔记.md").write_text("中文", encoding="utf-8")
    assert ws.glob("**/*.md")["matches"] == ["notes/a.md", "notes/sub/b.md", "top.md", "笔记.md"]
    assert ws.glob("*.md")["matches"] == ["top.md", "笔记.md"]
    assert ws.glob("notes/*")["matches"] == ["notes/a.md", "notes/sub/"]
    assert ws.glob("notes/s?b/[ab].md")["matches"] == ["notes/sub/b.md"]


def test_grep_with_a_catastrophic_pattern_is_fast(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    (ws.root / "a.txt").write_text("a" * 26 + "!\n" + "aaa\n", encoding="utf-8")
    t0 = time.perf_counter()
    out = ws.grep("(a+)+$", ".")
    assert time.perf_counter() - t0 < 1.0
    assert [m["line"] for m in out["matches"]] == [2]  # line 1 ends with `!`
    t0 = time.perf_counter()
    assert [m["line"] for m in ws.grep("^(a+)+$", ".")["matches"]] == [2]
    assert time.perf_counter() - t0 < 1.0


def test_grep_refuses_what_re2_cannot_do_and_keeps_chinese(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    (ws.root / "a.txt").write_text("abab\n你好 世界\n", encoding="utf-8")
    for bad in (r"(ab)\1", r"a(?=b)", r"(?<!x)a"):
        with pytest.raises(ToolError, match="RE2"):
            ws.grep(bad)
    assert [m["line"] for m in ws.grep(r"\w+好")["matches"]] == [2]
    assert [m["line"] for m in ws.grep(r"世界$")["matches"]] == [2]


def _reply_trace(reply: str) -> Trace:
    return Trace(tool_records=[], state={}, files={}, messages=[], reply=reply)


def test_reply_regex_rule_with_nested_quantifiers_is_fast() -> None:
    t0 = time.perf_counter()
    res = evaluate({"reply": True, "regex": "^(a+)+$"}, _reply_trace("a" * 40 + "!"))
    assert time.perf_counter() - t0 < 1.0
    assert res.passed is False
    assert evaluate({"reply": True, "regex": "^(a+)+$"}, _reply_trace("a" * 40)).passed is True
    assert evaluate({"reply": True, "regex": r"\w+已经"}, _reply_trace("报告已经发出")).passed


# ---------------------------------------------------------------------- the event loop

class _Box(ToolBox):
    """A ToolBox without a plan: only the built-ins it is told about."""

    def __init__(self, ws: Workspace, timeout_s: float) -> None:
        from benchpack.runtime.env.builtin_specs import BUILTIN_EFFECTS, BUILTIN_SPECS
        from benchpack.runtime.env.toolbox import ToolDef

        class _Env:
            workspace = ws
            services: ClassVar[dict[str, Any]] = {}
        bare_toolbox(_Env(), {n: ToolDef(n, BUILTIN_SPECS[n]["description"],
                                         BUILTIN_SPECS[n]["parameters"], BUILTIN_EFFECTS[n],
                                         None, n) for n in ("glob", "grep")},
                     timeout_s, box=self)


def test_a_slow_tool_times_out_and_other_chains_keep_going(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = Workspace(tmp_path / "ws")

    def slow_glob(self: Workspace, pattern: Any, **kw: Any) -> Any:
        time.sleep(4.0)  # far past the 0.3 s timeout, so a loaded machine cannot blur the two
        return {"pattern": pattern, "matches": [], "truncated": False}

    monkeypatch.setattr(Workspace, "glob", slow_glob)
    box = _Box(ws, timeout_s=0.3)
    ticks = 0

    async def other_chain() -> None:
        nonlocal ticks
        for _ in range(20):
            await asyncio.sleep(0.01)
            ticks += 1

    async def main() -> Any:
        t0 = time.perf_counter()
        rec, _ = await asyncio.gather(box.call("glob", {"pattern": "**"}), other_chain())
        return rec, time.perf_counter() - t0

    rec, elapsed = asyncio.run(main())
    assert rec.error is not None and "timed out after 0.3 s" in rec.error, rec.error
    assert elapsed < 3.5  # the timeout answered, not the 4 s call
    assert ticks == 20
    assert box.records[-1] is rec  # the session keeps going: the call is a recorded tool error


@pytest.mark.parametrize("pattern,text,hit", [
    (r"^\ufeff?item", "\ufeffitem,ndc", True), (r"^\ufeff?item", "item,ndc", True),
    (r"\U0001F600", "ok 😀", True), (r"done\Z", "done", True), (r"done\Z", "done.", False),
    (r"[\w-]+已发", "报告-x已发", True), (r"\W", "你好", False), (r"(?i)\binr\b", "INR 2.1", True),
])
def test_python_spellings_packs_use_keep_their_meaning(pattern: str, text: str, hit: bool) -> None:
    # the reference packs use `\ufeff` and `\b`; RE2 spells some of these differently
    res = evaluate({"reply": True, "regex": pattern}, _reply_trace(text))
    assert res.passed is hit, res.detail
