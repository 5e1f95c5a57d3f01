"""The HTML page's sessions section is kept once per state of the store file (`html_cache`):
the next page over the same runs reads it instead of the store and is the same page; a write
to the file, another selection of runs, other code or a damaged kept file builds it again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from store_fixture import build_store

from benchpack.reports import drilldown, html, html_cache
from benchpack.reports.api import ReportOptions, build_reports, render_report
from benchpack.reports.render import render
from benchpack.runtime.store import SessionRows, Store


def _stamp(page: str) -> str:  # the generation time is the one thing allowed to differ
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", "T", page)


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return build_store(tmp_path / "bench.duckdb")


def _loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the drill-downs read from the store."""
    calls: list[int] = []
    real = drilldown.load_drilldown

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(html, "load_drilldown", spy)
    return calls


def _page(db: Path, names: list[str], runs: list[str] | None = None) -> str:
    return _stamp(render_report(ReportOptions(db=db, names=names, runs=runs or ["all"]),
                                "html"))


def test_the_next_page_reads_the_kept_section_and_is_the_same(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loads = _loads(monkeypatch)
    first = _page(db, ["summary"])
    assert loads == [1] and "transcripts</span>" in first
    again = _page(db, ["summary"])
    assert loads == [1] and again == first
    # another report over the same runs shares the section
    status = _page(db, ["status"])
    assert loads == [1]
    section = first[first.index('<section id="sessions"'):first.index("</main>")]
    assert section in status
    # built again without the cache: the very same page
    monkeypatch.setattr(html_cache, "load_section", lambda store, key: None)
    assert _page(db, ["summary"]) == first and loads == [1, 1]


def test_a_page_over_a_kept_section_does_not_open_the_store(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The header's run descriptions are kept with the section: `render(result, "html")`
    opened the store again only to read them (0.1 s of each page on 1 M turns)."""
    (res,) = build_reports(ReportOptions(db=db, names=["status"], runs=["all"]))
    first = _stamp(render(res, "html"))
    assert "run-a" in first and '<table class="runs">' in first

    def refused(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the store was opened")

    monkeypatch.setattr(html, "open_store", refused)
    monkeypatch.setattr(drilldown, "load_runs", refused)
    assert _stamp(render(res, "html")) == first
    # a kept header of another shape is not trusted: the page is built again, the same
    path = html_cache._path(db)
    magic, key, count, _, section = path.read_text(encoding="utf-8").split("\n", 4)
    path.write_text(f"{magic}\n{key}\n{count}\n[{{\"run\": 1}}]\n{section}",
                    encoding="utf-8")
    monkeypatch.undo()
    loads = _loads(monkeypatch)
    assert _stamp(render(res, "html")) == first and loads == [1]


def test_a_write_to_the_store_builds_the_section_again(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loads = _loads(monkeypatch)
    before = _page(db, ["summary"])
    store = Store(db)
    store.upsert_run({"run_id": "run-late", "created_at": 99.0, "agent": "model-late",
                      "judge": "rules", "repeats": 1, "config": {}, "status": "finished"})
    store.write_now(SessionRows("run-late", "late-1", 0, {
        "run_id": "run-late", "session_id": "late-1", "repeat": 0, "fingerprint": "f",
        "name": "late-session", "protocol": "intent_tracking", "agent": "model-late",
        "status": "finished", "proc": 0.5, "comp": 0.5, "judge_errors": 0}))
    store.close()
    after = _page(db, ["summary"])
    assert loads == [1, 1] and after != before
    assert "late-session" in after and "late-session" not in before


def test_other_runs_other_code_or_a_damaged_kept_file_build_it_again(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loads = _loads(monkeypatch)
    everything = _page(db, ["summary"])
    one = _page(db, ["summary"], ["run-a"])
    assert loads == [1, 1] and one != everything
    assert _page(db, ["summary"], ["run-a"]) == one and loads == [1, 1]
    # an edited renderer: another code digest, the kept section is not read
    monkeypatch.setattr(html_cache, "code_digest", lambda: "edited")
    assert _page(db, ["summary"], ["run-a"]) == one and loads == [1, 1, 1]
    # a kept file whose key line is damaged, or that is not a kept section at all, is not
    # read
    path = html_cache._path(db)
    text = path.read_text(encoding="utf-8")
    magic, key, rest = text.split("\n", 2)
    path.write_text(f"{magic}\n{key[:-1]}x\n{rest}", encoding="utf-8")
    assert _page(db, ["summary"], ["run-a"]) == one and loads == [1, 1, 1, 1]
    path.write_text("not a kept section", encoding="utf-8")
    assert _page(db, ["summary"], ["run-a"]) == one and loads == [1, 1, 1, 1, 1]
