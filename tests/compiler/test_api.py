"""api: the compile cache, validate vs compile, graph_pack, internal failures."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchpack.compiler import api, compile_pack, graph_pack, init_pack, validate_pack
from benchpack.compiler.build import Builder


@pytest.fixture
def starter(tmp_path: Path) -> Path:
    init_pack(tmp_path / "p")
    return tmp_path / "p"


def test_validate_writes_nothing(starter: Path, tmp_path: Path) -> None:
    before = sorted(p for p in tmp_path.rglob("*"))
    result = validate_pack(starter)
    assert result.plan is not None and result.plan_bytes is None
    assert sorted(p for p in tmp_path.rglob("*")) == before
    assert not api.cache_dir().exists() or not any(api.cache_dir().iterdir())


def test_cache_keys_data_files_and_options(starter: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert not compile_pack(starter, out).cached
    assert compile_pack(starter, out).cached
    assert not compile_pack(starter, out, ablation=True).cached  # options are part of the key
    assert not compile_pack(starter, out, strict=True).cached
    (starter / "files" / "refills.md").write_text("# Refill queue\n\nnothing today\n")
    changed = compile_pack(starter, out)  # a workspace source is an input too
    assert not changed.cached
    assert "nothing today" in (out / "plan.json").read_text()


def test_cache_is_keyed_by_the_compilers_own_code(starter: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An editable install keeps its version when its code changes: a plan cached by older
    compiler code (another plan format) must not be served. `make demo` once got a stale
    claw-ops-desk plan with `pack_dir` the current plan schema refuses."""
    out = tmp_path / "out"
    assert not compile_pack(starter, out).cached
    assert compile_pack(starter, out).cached
    monkeypatch.setattr(api, "_CODE", ["older-code"])
    assert not compile_pack(starter, out).cached
    code = api.__file__
    if not os.access(code, os.W_OK):
        pytest.skip("benchpack is installed read-only here")
    monkeypatch.setattr(api, "_CODE", [])
    first = api.compiler_code()
    monkeypatch.setattr(api, "_CODE", [])
    st = os.stat(code)
    try:
        os.utime(code, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        assert api.compiler_code() != first  # a compiler source file changed
    finally:
        os.utime(code, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_broken_cache_is_ignored(starter: Path, tmp_path: Path) -> None:
    cold = compile_pack(starter, tmp_path / "o")
    for f in api.cache_dir().glob("*.json"):
        f.write_text("{not json")
    again = compile_pack(starter, tmp_path / "o")
    assert not again.cached and again.plan_bytes == cold.plan_bytes


def test_an_unwritable_cache_does_not_fail_the_compile(starter: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("BENCHPACK_CACHE_DIR", str(blocker / "cache"))
    result = compile_pack(starter, tmp_path / "o")
    assert result.plan_bytes is not None and (tmp_path / "o" / "plan.json").exists()


def test_cache_dir_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("BENCHPACK_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert api.cache_dir() == tmp_path / "benchpack" / "compile"


def test_compile_without_out_writes_no_plan_file(starter: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = compile_pack(starter, None, use_cache=False)
    assert result.plan_bytes is not None and json.loads(result.plan_bytes)
    assert not list(tmp_path.rglob("plan.json"))


def test_graph_pack_formats(starter: Path) -> None:
    text, _ = graph_pack(starter)
    assert text is not None and text.startswith("episode monday\n")
    mermaid, _ = graph_pack(starter, "mermaid", ablation=True)
    assert mermaid is not None and "(without dependencies)" in mermaid
    dot, _ = graph_pack(starter, "dot")
    assert dot is not None and dot.startswith("digraph benchpack {")
    (starter / "pack.yaml").write_text("name: [broken\n")
    missing, result = graph_pack(starter)
    assert missing is None and [d.code for d in result.errors] == ["E001"]


def test_internal_failures(starter: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: Builder) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(Builder, "world", boom)
    with pytest.raises(RuntimeError):  # a clean pack: a compiler bug must surface
        validate_pack(starter)
    text = (starter / "pack.yaml").read_text().replace("- id: dana", "- id: dana\n    idd: 1")
    (starter / "pack.yaml").write_text(text)
    result = validate_pack(starter)  # a broken pack: its errors, and the failure on record
    assert [d.code for d in result.errors] == ["E101"]
    assert result.internal_error is not None and result.internal_error.startswith(
        "RuntimeError: boom (test_api.py:")


def test_content_hash_ignores_location(starter: Path, tmp_path: Path) -> None:
    first = validate_pack(starter).content_hash
    moved = starter.rename(tmp_path / "moved")
    assert validate_pack(moved).content_hash == first
    assert os.fspath(tmp_path) not in json.dumps(validate_pack(moved).plan)
