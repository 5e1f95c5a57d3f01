"""The HTML report on the hand-made store (`store_fixture.py`): structure, escaping, the
drill-down's placement of what was judged at each turn, the size caps, and — when a Chromium is
available — that the page renders its charts in a real browser without console errors."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from store_fixture import HOSTILE, build_store

from benchpack.cli import cli
from benchpack.reports.access import open_store
from benchpack.reports.api import ReportOptions, build_reports, render_report
from benchpack.reports.html import (
    Drilldown,
    load_drilldown,
    session_html,
    to_html,
)
from benchpack.reports.model import Chart, Column, Estimate, ReportResult, Table
from benchpack.reports.registry import NOT_ON_THE_PAGE, default_reports
from benchpack.reports.render import render
from benchpack.runtime.store import SessionRows, Store

# ----------------------------------------------------------------------------- a tiny DOM

VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "source"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find_all(self, tag: str | None = None, cls: str | None = None) -> list[Node]:
        out = []
        for c in self.children:
            if isinstance(c, Node):
                if (tag is None or c.tag == tag) and (cls is None or cls in c.classes):
                    out.append(c)
                out += c.find_all(tag, cls)
        return out


class Dom(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = self.cur = Node("#root", {}, None)
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), self.cur)
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.cur
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None and node.parent is not None, f"stray </{tag}>"
        self.cur = node.parent

    def handle_data(self, data: str) -> None:
        self.cur.children.append(data)

    def by_id(self, ident: str) -> Node:
        (hit,) = [n for n in self.root.find_all() if n.attrs.get("id") == ident]
        return hit


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_store(tmp_path_factory.mktemp("store") / "bench.duckdb")


@pytest.fixture(scope="module")
def page(db: Path) -> str:
    options = ReportOptions(db=db, names=[n for n in default_reports().names()
                                          if n not in NOT_ON_THE_PAGE], runs=["all"])
    return render_report(options, "html")


@pytest.fixture(scope="module")
def dom(page: str) -> Dom:
    return Dom(page)


def _charts(dom: Dom) -> list[dict[str, Any]]:
    specs: list[dict[str, Any]] = json.loads(dom.by_id("bp-charts").text())
    return specs


def _session(dom: Dom, key: tuple[str, str, int]) -> Node:
    from benchpack.reports.html import session_anchor

    return dom.by_id(session_anchor(key))


def _turns(session: Node) -> dict[int, Node]:
    return {int(li.attrs["data-turn"] or 0): li for li in session.find_all("li", "turn")}


# ----------------------------------------------------------------------------- structure


def test_every_report_is_in_the_page_and_the_contents(dom: Dom, db: Path) -> None:
    results = build_reports(ReportOptions(db=db, names=[n for n in default_reports().names()
                                                       if n not in NOT_ON_THE_PAGE], runs=["all"]))
    titles = [h.text() for h in dom.root.find_all("h2")]
    toc = [a.text() for a in dom.root.find_all("nav")[0].find_all("a")]
    for res in results:
        assert res.title in titles and res.title in toc
        for table in res.tables:
            assert table.title in [h.text() for h in dom.root.find_all("h3")]
    assert "Sessions" in titles and toc[-1] == "Sessions"
    header = dom.root.find_all("header")[0].text()
    assert "model-a" in header and "run-b" in header and "fixture 1" in header


def test_charts_have_canvases_and_hand_computed_data(dom: Dom) -> None:
    specs = {s["canvas"]: s for s in _charts(dom)}
    canvases = {c.attrs["id"] for c in dom.root.find_all("canvas")}
    assert canvases == set(specs) and len(specs) == 4
    scatter = specs["chart-proc-comp-proc-comp"]
    assert scatter["kind"] == "scatter" and scatter["diagonal"] is True
    assert scatter["x_pct"] and scatter["y_pct"]  # PROC and COMP are percentage columns
    b = {d["label"]: d for d in scatter["datasets"]}["model-b"]
    # model-b PROC per session/repeat: s1 1/4, 1/4; s2 1/1, 1/1; COMP 0.5 everywhere: two spots
    # of two sessions each
    assert sorted((p["x"], p["y"], p["n"], tuple(p["labels"])) for p in b["points"]) == [
        (25, 50, 2, ("s1", "s1")), (100, 50, 2, ("s2", "s2"))]
    turns = specs["chart-proc-comp-turns-proc"]
    assert not turns["x_pct"] and turns["y_pct"]  # turns are counts, not rates
    status = specs["chart-status-status"]
    assert status["labels"] == ["model-a", "model-b"]
    shares = {d["label"]: d["values"] for d in status["datasets"]}
    # micro shares (fixture): model-a 6/12 completed, 2/12 inferred, 4/12 provided
    assert shares["completed"][0] == pytest.approx(50)
    assert shares["inferred"][0] == pytest.approx(100 * 2 / 12, abs=1e-3)
    assert shares["unresolved"] == [0, 10]
    bars = specs["chart-triggers-trigger-pass"]
    (a,) = bars["datasets"]
    assert bars["labels"] == ["emergent", "critical", "recovery", "overall"]
    assert a["values"] == [50, 50, 100, 60]
    # recovery rests on one trigger: no whisker (the table shows no CI either)
    assert (a["low"][2], a["high"][2]) == (None, None)
    assert all(lo <= v <= hi for v, lo, hi in zip(a["values"], a["low"], a["high"], strict=True)
               if lo is not None)


def test_estimates_show_value_std_and_ci_right_aligned(dom: Dom) -> None:
    table = dom.by_id("proc-comp-0").parent
    assert table is not None
    row = next(tr for tr in table.find_all("tr") if "model-a" in tr.text())
    cell = row.find_all("td")[2]
    assert "num" in cell.classes
    # model-a PROC by session: s1 (0.75 + 0.5)/2, s2 (0 + 1)/2, s3 1.0 → 0.7083; per repeat:
    # r0 (0.75 + 0 + 1)/3 = 0.5833, r1 (0.5 + 1)/2 = 0.75 → std |0.75 − 0.5833|/√2 = 0.1179
    assert cell.find_all("span", "v")[0].text() == "70.8"
    assert cell.find_all("span", "sd")[0].text() == "± 11.8"
    assert re.fullmatch(r"\[\d+\.\d, \d+\.\d\]", cell.find_all("span", "ci")[0].text())


def test_charts_without_data_get_a_placeholder_not_a_canvas() -> None:
    res = ReportResult("r", "R", "d", ["run"], charts=[
        Chart("empty", "Nothing", "errorbar", {"categories": ["a"], "series": {}}),
        Chart("sc", "Scatter", "scatter", {"series": {"x": [{"x": None, "y": 1},
                                                            {"x": float("nan"), "y": 1}]}})])
    doc = Dom(to_html([res]))
    assert not doc.root.find_all("canvas")
    assert len(doc.root.find_all("figure", "no-data")) == 2
    assert json.loads(doc.by_id("bp-charts").text()) == []


def test_errorbar_drops_cis_resting_on_one_unit() -> None:
    res = ReportResult("r", "R", "d", ["run"], charts=[Chart("e", "E", "errorbar", {
        "categories": ["a", "b", "never"], "series": {"m": {
            "a": {"value": 0.5, "low": 0.2, "high": 0.8, "n": 4},
            "b": {"value": 1.0, "low": 1.0, "high": 1.0, "n": 1}}}})])
    (spec,) = json.loads(Dom(to_html([res])).by_id("bp-charts").text())
    assert spec["labels"] == ["a", "b"]  # a category no series has is left out
    assert spec["datasets"][0] == {"label": "m", "values": [50, 100], "low": [20, None],
                                   "high": [80, None]}


# ----------------------------------------------------------------------------- escaping


def test_stored_text_is_escaped_everywhere(page: str, dom: Dom) -> None:
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    # the only scripts are ours: chart data, Chart.js, report.js
    scripts = dom.root.find_all("script")
    assert len(scripts) == 3 and scripts[0].attrs.get("type") == "application/json"
    assert not dom.root.find_all("b", None) or all(
        "not bold" not in b.text() for b in dom.root.find_all("b"))
    # user message, checklist text, stage detail and trigger rationale all show it as text
    assert sum(HOSTILE in n.text() for n in dom.root.find_all("div", "text")) >= 1
    assert any(HOSTILE in td.text() for td in dom.root.find_all("td"))
    assert any(HOSTILE in n.text() for n in dom.root.find_all("div", "rationale"))


def test_chart_labels_cannot_close_the_data_script() -> None:
    res = ReportResult("r", "R", "d", ["run"], charts=[Chart(
        "s", "S", "scatter", {"series": {HOSTILE: [{"x": 1, "y": 2, "label": "</script>"}]}})],
        tables=[Table("T", [Column("a", "a")], [[HOSTILE]])])
    text = to_html([res])
    blob = text.split('id="bp-charts">', 1)[1].split("</script>", 1)[0]
    assert "<" not in blob and ">" not in blob
    (spec,) = json.loads(blob)
    assert spec["datasets"][0]["label"] == HOSTILE
    assert spec["datasets"][0]["points"][0]["labels"] == ["</script>"]


def test_page_is_self_contained(page: str, dom: Dom) -> None:
    assert not dom.root.find_all("link")
    for node in dom.root.find_all():
        for attr in ("src", "href"):
            value = node.attrs.get(attr)
            assert value is None or value.startswith("#"), (node.tag, attr, value)
    assert "sourceMappingURL" not in page
    assert "@import" not in page and "url(" not in page.split("<style>")[1].split("</style>")[0]


def test_digest_leaves_the_generation_time_out() -> None:
    res = ReportResult("r", "R", "d", ["run"], tables=[Table("T", [Column("a", "a", "pct")],
                                                             [[Estimate(0.5, 0.1, 0.3, 0.7, 4)]])])
    first = to_html([res], generated_at=datetime(2026, 1, 1, tzinfo=UTC))
    second = to_html([res], generated_at=datetime(2027, 6, 6, tzinfo=UTC))
    assert "2026-01-01 00:00:00 UTC" in first and "2027-06-06" in second
    assert first.replace("2026-01-01", "2027-06-06") == second
    digest = re.search(r"content digest <code>([0-9a-f]{16})</code>", first)
    assert digest is not None
    # the digest is the sha256 of the page with the places of the digest and the time kept
    # (written into the page's parts since issue 31, not replaced over the whole page)
    placed = first.replace(digest.group(1), "\x00digest\x00").replace(
        "2026-01-01 00:00:00 UTC", "\x00generated\x00")
    assert hashlib.sha256(placed.encode()).hexdigest()[:16] == digest.group(1)


# ----------------------------------------------------------------------------- drill-down


def test_intent_statuses_sit_at_the_turn_they_were_decided(dom: Dom) -> None:
    turns = _turns(_session(dom, ("run-a", "s1", 1)))
    assert sorted(turns) == [1, 2]

    def intents(li: Node) -> dict[str, str]:
        return {ann.find_all("code")[0].text(): ann.find_all("span", "badge")[0].text()
                for ann in li.find_all("div", "intent")}

    # INTENT_TURNS: i0 at 2, i1 at 1, i2 at 1, i3 at 2
    assert intents(turns[1]) == {"i1": "inferred", "i2": "provided"}
    assert intents(turns[2]) == {"i0": "completed", "i3": "provided"}
    # the annotations follow that turn's messages
    li = turns[1]
    kinds = [c.attrs.get("class") for c in li.children if isinstance(c, Node)]
    assert kinds[-1] == "at-turn" and "msg user" in kinds


def test_tool_call_is_shown_once_with_its_result(dom: Dom) -> None:
    li = _turns(_session(dom, ("run-a", "s1", 1)))[1]
    (tool,) = li.find_all("div", "tool")
    assert tool.find_all("span", "tool-name")[0].text() == "read_file"
    assert '"path": "log.csv"' in tool.text() and "P-1,4.6" in tool.text()


def test_checklist_is_graded_at_the_end(dom: Dom) -> None:
    session = _session(dom, ("run-a", "s1", 1))
    (table,) = session.find_all("table", "checklist")
    verdicts = {tr.find_all("code")[0].text(): tr.find_all("span", "badge")[0].text()
                for tr in table.find_all("tbody")[0].find_all("tr")}
    assert verdicts == {"email": "no", "note": "yes"}  # COMP 0.5 for this session
    assert not any(table in li.find_all("table") for li in session.find_all("li", "turn"))


def test_trigger_scores_and_evidence_at_their_turns(dom: Dom) -> None:
    session = _session(dom, ("run-a", "tr", 0))
    assert "flagged" in session.classes  # it has a judge error
    turns = _turns(session)
    labels = {t: [b.text() for a in li.find_all("div", "trigger")
                  for b in a.find_all("span", "badge")[:1]] for t, li in turns.items()}
    assert labels == {1: ["PASS"], 2: ["PARTIAL"], 3: ["FAIL"], 4: ["PASS"],
                      5: ["judge error"], 6: ["PASS"]}
    # the quote is marked inside the reply of its turn ...
    reply = turns[1].find_all("div", "assistant")[0]
    assert [m.text() for m in reply.find_all("mark")] == ["quote 1"]
    # ... and where the judged reply was regenerated, that reply is shown with the trigger
    regenerated = turns[3].find_all("div", "trigger")[0]
    assert "response judged" in regenerated.text()
    assert "Reply 3: here is quote 3" in regenerated.text()
    assert "response judged" not in turns[2].text()


def test_stage_events_at_their_turns(dom: Dom) -> None:
    turns = _turns(_session(dom, ("run-a", "sd", 0)))
    assert [a.find_all("code")[0].text() for a in turns[1].find_all("div", "stage")] == ["area"]
    assert [a.find_all("code")[0].text() for a in turns[2].find_all("div", "stage")] == ["budget"]


def test_long_messages_are_folded_then_cut(dom: Dom) -> None:
    li = _turns(_session(dom, ("run-a", "s1", 1)))[2]
    (more,) = li.find_all("details", "more")
    # LONG_REPLY is 6 + 5 × 1200 = 6006 characters: 1200 shown, 4800 folded, 6 cut
    assert more.find_all("summary")[0].text() == "show 4,806 more characters"
    assert "6 more characters not shown" in more.text()


def _ten_sessions(path: Path) -> Path:
    """Run `run-x`: ten intent-tracking attempts s0–s9 started in that order (one episode),
    PROC and COMP 0.9, except s7 errored and s3 has COMP 0.1; and a skipped one. Run `run-y`:
    the same ten in two episodes, even ones in `ep-b` (starting first), odd ones in `ep-a`."""
    store = Store(path)
    for created, run in enumerate(("run-x", "run-y")):
        store.upsert_run({"run_id": run, "created_at": float(created), "agent": "model-x",
                          "judge": "rules", "repeats": 1, "config": {}, "status": "finished"})
        for k in [*range(10), 10]:
            session = {"run_id": run, "session_id": f"s{k}", "repeat": 0, "fingerprint": "f",
                       "name": f"s{k}", "protocol": "intent_tracking", "agent": "model-x",
                       "episode": "ep" if run == "run-x" else ("ep-b", "ep-a")[k % 2],
                       "status": "error" if k == 7 else "skipped" if k == 10 else "finished",
                       "proc": 0.9, "comp": 0.1 if k == 3 else 0.9, "judge_errors": 0,
                       "started_at": float(k)}
            store.write_now(SessionRows(run, f"s{k}", 0, session))
    store.close()
    return path


def test_drilldown_keeps_the_worst_and_a_spread(tmp_path: Path) -> None:
    path = _ten_sessions(tmp_path / "bench.duckdb")
    with open_store(path) as con:
        d = load_drilldown(con, ["run-x", "run-y"], per_run=4)
        full = load_drilldown(con, ["run-x", "run-y"], per_run=10)
    # worst half: the error (s7), then the lowest score (s3); the rest [0,1,2,4,5,6,8,9] spread
    # over 2 picks: positions 0 and 4 → s0 and s5; shown in run order
    assert [t.key[1] for t in d.sessions if t.key[0] == "run-x"] == ["s0", "s3", "s5", "s7"]
    assert [t.flagged for t in d.sessions if t.key[0] == "run-x"] == [False, False, False,
                                                                        True]
    note = d.notes["run-x"]
    assert "Showing 4 of 10" in note and "1 with errors" in note
    assert "the 1 lowest-scoring" in note and "2 others" in note
    # run order: episodes by their first start (ep-b, then ep-a), then start time; the rest
    # [s0 s2 s4 s6 s8 s1 s5 s9] spread over 2 picks: s0 and s8
    assert [t.key[1] for t in full.sessions if t.key[0] == "run-y"] == [
        "s0", "s2", "s4", "s6", "s8", "s1", "s3", "s5", "s7", "s9"]
    assert [t.key[1] for t in d.sessions if t.key[0] == "run-y"] == ["s0", "s8", "s3", "s7"]
    assert not full.notes and len(full.sessions) == 20  # all but the skipped ones
    assert 'class="session flagged"' in session_html(d.sessions[3])


def test_drilldown_caps_sessions_and_messages(db: Path) -> None:
    with open_store(db) as con:
        d = load_drilldown(con, ["run-a", "run-b"], per_run=3, messages_per_session=2)
    assert [len([t for t in d.sessions if t.key[0] == r]) for r in ("run-a", "run-b")] == [3, 3]
    assert "Showing 3 of 13" in d.notes["run-a"]  # 13 session attempts ran in run-a
    assert "run-a" in d.notes and "run-b" in d.notes
    doc = to_html([], d)
    assert doc.count('class="note"') == 2
    with open_store(db) as con:
        full = load_drilldown(con, ["run-a"], messages_per_session=2)
    (s1,) = [t for t in full.sessions if t.key == ("run-a", "s1", 1)]
    assert (len(s1.messages), s1.messages_total) == (2, 6)
    assert "4 later messages not shown" in session_html(s1)


def test_transcripts_stop_when_a_run_used_its_share_of_the_budget(db: Path) -> None:
    with open_store(db) as con:
        d = load_drilldown(con, ["run-a", "run-b"])
    doc = Dom(to_html([], d, budget=2))  # each run's share is 1 character: only the first
    for run in ("run-a", "run-b"):       # session of each run gets its transcript
        sessions = [_session(doc, t.key) for t in d.sessions if t.key[0] == run]
        left_out = ["Transcript left out" in s.text() for s in sessions]
        assert left_out == [False] + [True] * (len(sessions) - 1)
        assert all(s.find_all("summary") for s in sessions)


def test_one_report_rendered_alone_is_the_page_bench_report_writes(db: Path) -> None:
    """`render(result, "html")` and `render_report(..., "html")` are one path: the same page,
    drill-down included, whichever way a report is rendered."""
    options = ReportOptions(db=db, names=["summary"], runs=["all"])
    (result,) = build_reports(options)
    assert result.store == str(db)

    def stamp(page: str) -> str:  # the generation time is the one thing allowed to differ
        return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", "T", page)

    alone = render(result, "html")
    assert stamp(alone) == stamp(render_report(options, "html"))
    assert Dom(alone).by_id("sessions").find_all("details", "session")


def test_reports_without_a_store_render_without_drilldown() -> None:
    res = ReportResult("r", "R", "desc", ["run-1"])
    doc = Dom(to_html([res]))
    assert [h.text() for h in doc.root.find_all("h2")] == ["Contents", "R"]
    assert not doc.root.find_all("section", None) or all(
        s.attrs.get("id") != "sessions" for s in doc.root.find_all("section"))
    empty = Drilldown([], [])
    assert "No sessions" not in to_html([res], empty)


def test_cli_writes_every_report_with_html(db: Path, dom: Dom, tmp_path: Path) -> None:
    out = tmp_path / "r" / "report.html"
    result = CliRunner().invoke(cli, ["report", "--format", "html", "--db", str(db), "--run",
                                      "all", "-o", str(out)])
    assert result.exit_code == 0, result.output
    titles = [h.text() for h in Dom(out.read_text(encoding="utf-8")).root.find_all("h2")]
    # with html and no names: every report, as `page` renders them by name
    assert titles == [h.text() for h in dom.root.find_all("h2")]
    # + contents, sessions
    assert len(titles) == len(default_reports().names()) - len(NOT_ON_THE_PAGE) + 2


# ----------------------------------------------------------------------------- packaging


@pytest.mark.slow
def test_installed_wheel_carries_the_assets(tmp_path: Path) -> None:
    pytest.importorskip("hatchling")
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp_path), str(root)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("benchpack-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for asset in ("chart.umd.min.js", "chart.js.LICENSE.md", "report.css", "report.js"):
        assert f"benchpack/reports/assets/{asset}" in names
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(target), str(wheel)], check=True, capture_output=True)
    code = ("import benchpack.reports.html as h; from benchpack.reports.model import "
            "ReportResult as R; t = h.to_html([R('r', 'R', 'd', [])]); "
            "print(h.__file__); print('Chart.js v4' in t and 'bp-charts' in t)")
    import sysconfig

    deps = sysconfig.get_paths()["purelib"]
    out = subprocess.run([sys.executable, "-S", "-c", code], check=True, capture_output=True,
                         text=True, cwd=tmp_path,
                         env={"PYTHONPATH": f"{target}:{deps}"}).stdout.split()
    assert out == [str(target / "benchpack" / "reports" / "html.py"), "True"]


# ----------------------------------------------------------------------------- in a browser

BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def find_chromium() -> str | None:
    """`$BENCHPACK_CHROMIUM`, else a system Chromium or Chrome on the PATH."""
    env = os.environ.get("BENCHPACK_CHROMIUM")
    if env:
        return env if Path(env).exists() else shutil.which(env)
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


CANVAS_STATE = """() => Array.from(document.querySelectorAll('canvas')).map(c => {
  const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let painted = 0;
  for (let i = 3; i < px.length; i += 4) { if (px[i] > 0) painted++; }
  return {id: c.id, chart: !!Chart.getChart(c), w: c.width, h: c.height, painted};
})"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_page_renders_in_chromium(page: str, tmp_path: Path, scheme: str) -> None:
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium (install one, or set BENCHPACK_CHROMIUM)")
    sync_api = pytest.importorskip("playwright.sync_api")
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    problems: list[str] = []
    requests: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=BROWSER_FLAGS)
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
            tab.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                   if m.type in ("error", "warning") else None)
            tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            tab.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
            tab.on("request", lambda r: requests.append(r.url))
            tab.goto(path.as_uri())
            tab.wait_for_function("document.documentElement.dataset.charts !== undefined",
                                  timeout=15_000)
            drawn = tab.evaluate("document.documentElement.dataset.charts")
            canvases = tab.evaluate(CANVAS_STATE)
            # open every session: a transcript is laid out without script errors
            tab.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            shots = os.environ.get("BENCHPACK_SCREENSHOTS")
            if shots:
                Path(shots).mkdir(parents=True, exist_ok=True)
                tab.screenshot(path=str(Path(shots) / f"report-{scheme}.png"), full_page=True)
        finally:
            browser.close()
    assert problems == []
    assert requests == [path.as_uri()]  # nothing fetched but the file itself
    assert len(canvases) == 4 and drawn == "4"
    for c in canvases:
        assert c["chart"], c
        # a drawn chart paints a good part of its canvas (axes, grid, marks)
        assert c["painted"] > 0.02 * c["w"] * c["h"], c
