"""`bench view` (issue 17): the routes over a store made by real `bench run`s of the reference
packs, one per protocol (and a "Done."-only agent on the trigger pack), the hand-made store for
hostile text, and the pages in headless Chromium (skipped without one)."""

from __future__ import annotations

import contextlib
import csv
import html as htmllib
import io
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import duckdb
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient
from store_fixture import HOSTILE, build_store
from test_view_calls import calls_store, long_store
from view_client import local_client, run_sql

from benchpack.cli.main import cli
from benchpack.compiler import compile_pack
from benchpack.reports.view import queries
from benchpack.reports.view.app import create_app
from conftest import TASKPACKS

PACKS = {  # protocol → (pack, run id, agent, simulator)
    "intent_tracking": ("pharmacist-week", "pharm", "demo/agent.yaml", "rules"),
    "staged_disclosure": ("mussel-genome-search", "mussel", "demo/agent.yaml",
                          "scripted:demo/simulator.yaml"),
    "trigger_rubric": ("proact-quilt-show", "quilt", "demo/proactive_agent.yaml", "rules"),
    "verified_outcome": ("claw-lab-ops", "claw", "demo/agent.yaml", "rules"),
}


def _bench(*args: str | Path) -> tuple[int, str]:
    res = CliRunner().invoke(cli, [str(a) for a in args])
    return res.exit_code, res.output


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("view")
    db = tmp / "bench.duckdb"
    done = tmp / "done.yaml"
    done.write_text("default:\n" + '  - say: "Done."\n' * 12)
    for pack, run_id, agent, sim in PACKS.values():
        src = TASKPACKS / pack
        plan = tmp / pack
        assert compile_pack(src, plan, use_cache=False).ok
        sim = f"scripted:{src / sim.split(':', 1)[1]}" if sim.startswith("scripted:") else sim
        agents = [(run_id, f"scripted:{src / agent}")]
        if pack == "proact-quilt-show":
            agents.append(("quilt-done", f"scripted:{done}"))
        for rid, spec in agents:
            repeats = "3" if pack == "claw-lab-ops" else "1"
            code, out = _bench("run", plan, "--quiet", "--db", db, "--judge", "rules",
                               "--simulator", sim, "--agent", spec, "--run-id", rid,
                               "--repeats", repeats)
            assert code == 0, out
    return db


@pytest.fixture(scope="module")
def client(store: Path) -> TestClient:
    return local_client(create_app(store))


def _sql(db: Path, sql: str, params: list[object] | None = None) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def _session_links(html: str) -> list[str]:
    return [h.replace("&amp;", "&") for h in re.findall(r'href="(/session\?[^"]+)"', html)]


# --------------------------------------------------------------------------- runs


def test_runs_page_lists_every_run_with_counts(client: TestClient, store: Path) -> None:
    res = client.get("/")
    assert res.status_code == 200
    for run_id, sessions, turns in _sql(store, "SELECT run_id, count(*), sum(turns) FROM "
                                               "sessions GROUP BY run_id"):
        row = re.search(rf'<tr>\s*<td class="txt"><input[^>]*value="{run_id}"[^>]*></td>\s*'
                        rf'<td class="txt"><a [^>]*href="/runs/{run_id}"[^>]*>.*?</tr>', res.text, re.S)
        assert row, run_id
        nums = re.findall(r'<td class="num">([\d,—]+)</td>', row.group(0))
        # repeats, sessions, finished, errors, turns (no run skipped any: no skipped column)
        assert nums[1] == str(sessions) and nums[4] == f"{turns:,}", (run_id, nums)
    assert "<th class=\"num\">skipped</th>" not in res.text


def test_runs_filter_by_agent_and_date(client: TestClient, store: Path) -> None:
    agent = _sql(store, "SELECT agent FROM runs WHERE run_id = 'quilt-done'")[0][0]
    res = client.get("/?" + urlencode({"agent": agent}))
    assert 'href="/runs/quilt-done"' in res.text and 'href="/runs/pharm"' not in res.text
    assert "1 run." in res.text
    assert "No runs match these filters" in client.get("/?until=2000-01-01").text
    assert client.get("/?since=2000-01-01").text.count('href="/runs/') == 5
    bad = client.get("/?since=yesterday")
    assert bad.status_code == 400 and "since: 'yesterday' is not a date (YYYY-MM-DD)" in htmllib.unescape(bad.text)


def test_headline_is_the_summary_reports(client: TestClient, store: Path) -> None:
    from benchpack.reports.api import ReportOptions, build_reports
    from benchpack.reports.html import table_html

    page = client.get("/").text
    runs = [r[0] for r in _sql(store, "SELECT run_id FROM runs ORDER BY created_at DESC, "
                                      "run_id")]
    summary = build_reports(ReportOptions(store, ["summary"], runs=runs))[0]
    headline = next(t for t in summary.tables if t.title.startswith("Headline"))
    # not computed with the page (~0.1 s a run at 1 M turns): fetched after it, for its runs
    assert table_html(headline, "headline") not in page
    src = re.search(r'data-fragment="(/headline\?[^"]+)"', page)
    assert src, page[-2000:]
    frag = client.get(htmllib.unescape(src.group(1)), headers={"X-Fragment": "1"})
    assert frag.status_code == 200 and "<html" not in frag.text
    assert frag.text == table_html(headline, "headline")
    assert table_html(headline, "headline") in client.get(htmllib.unescape(src.group(1))).text
    assert client.get("/headline").status_code == 400
    # the "Done." agent: trigger score 0 (every trigger FAIL), shown as 0.0, not left out
    done = _sql(store, "SELECT count(*), sum(score) FROM triggers WHERE run_id = 'quilt-done'")
    assert done[0][0] > 0 and done[0][1] == 0.0
    row = next(r for r in headline.rows if "Done" in r[0] or r[0].endswith("done.yaml)")
               or "done" in r[0])
    trigger = row[[c.key for c in headline.columns].index("trigger")]
    assert trigger.value == 0.0 and trigger.n == done[0][0]


# --------------------------------------------------------------------------- sessions


def _column(html: str, title: str) -> list[str]:
    """The text of the cell under header `title` in every row of the sessions table (a
    protocol's columns are there only when a session of the page has the figure)."""
    body = html.split('<table class="sessions"', 1)[1].split("</tbody>", 1)[0]
    heads = [re.sub(r"<[^>]+>", "", h).rstrip(" ▲▼")
             for h in re.findall(r"<th[ >][^>]*>(.*?)</th>", body, re.S)]
    k = heads.index(title)
    rows = body.split("<tr>")[2:]  # the header row, then one per session
    return [re.sub(r"<[^>]+>", "", re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)[k]).strip()
            for r in rows]


def test_sessions_sorted_filtered_paginated(client: TestClient, store: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    total = _sql(store, "SELECT count(*) FROM sessions WHERE run_id = 'pharm'")[0][0]
    page = client.get("/runs/pharm?sort=comp&desc=1").text
    assert f"{total} session runs" in page
    expected = [r[0] for r in _sql(store, "SELECT comp FROM sessions WHERE run_id = 'pharm' "
                                          "ORDER BY comp DESC NULLS LAST, name, session_id, "
                                          "repeat")]
    assert _column(page, "COMP") == [f"{100 * v:.1f}" for v in expected]
    assert "<th" in page and ">F1" not in page  # no staged-disclosure session here
    # a score range in percent: only sessions inside it
    inside = [v for v in expected if 0.5 <= v <= 0.9]
    assert f"{len(inside)} session run" in client.get("/runs/pharm?metric=comp&min=50&max=90"
                                                      ).text
    monkeypatch.setattr(queries, "SESSIONS_PER_PAGE", 3)
    seen: list[str] = []
    for p in range(-(-total // 3)):
        html = client.get(f"/runs/pharm?page={p}").text
        seen += _session_links(html)
        assert f"page {p + 1} of {-(-total // 3)}" in html
    assert len(seen) == total == len(set(seen))  # every session once, none twice
    bad = client.get("/runs/pharm?sort=drop%20table")
    assert bad.status_code == 400 and "sort: 'drop table' is not one of" in htmllib.unescape(bad.text)
    assert client.get("/runs/pharm?page=-1").status_code == 400
    assert client.get("/runs/nope").status_code == 404


def test_sessions_filter_by_status_and_repeat(client: TestClient, store: Path) -> None:
    n = _sql(store, "SELECT count(*) FROM sessions WHERE run_id = 'claw' AND repeat = 0")[0][0]
    assert f"{n} session run" in client.get("/runs/claw?repeat=0").text
    html = client.get("/runs/claw?status=error").text
    assert "No session of this run matches these filters" in html


# --------------------------------------------------------------------------- transcripts


def _first_session(client: TestClient, run: str) -> str:
    return client.get(_session_links(client.get(f"/runs/{run}").text)[0]).text


def test_transcript_of_each_protocol_has_its_annotations(client: TestClient,
                                                         store: Path) -> None:
    pharm = _first_session(client, "pharm")
    assert 'class="ann intent"' in pharm and 'class="ann turn-meta"' in pharm
    mussel = _first_session(client, "mussel")
    assert 'class="ann stage"' in mussel
    claw = _first_session(client, "claw")
    assert 'class="checklist"' in claw and 'class="tool"' in claw
    quilt = _first_session(client, "quilt")
    assert quilt.count('class="ann trigger"') >= 1
    evidence, rationale = _sql(store, "SELECT evidence, rationale FROM triggers WHERE run_id = "
                                      "'quilt' AND quote_found ORDER BY session_id, turn")[0]
    # the quote marked inside the response itself, the rationale beside it
    assert re.search(r'<div class="msg assistant">.*?<mark>', quilt, re.S)
    assert f"<mark>{evidence}</mark>" in htmllib.unescape(quilt)
    assert rationale.split(":")[0] in quilt


def test_session_with_repeats_and_side_by_side(client: TestClient, store: Path) -> None:
    sid = _sql(store, "SELECT min(session_id) FROM sessions WHERE run_id = 'quilt'")[0][0]
    html = client.get("/session?" + urlencode({"run": "quilt", "session": sid,
                                               "repeat": 0})).text
    assert '<option>quilt-done</option>' in html  # the other run with this session
    pair = client.get("/pair?" + urlencode({"a": "quilt", "b": "quilt-done", "session": sid,
                                            "repeat": 0}))
    assert pair.status_code == 200
    assert pair.text.count('class="side"') == 2
    assert "Done." in pair.text and pair.text.count('class="ann trigger"') >= 2
    missing = client.get("/pair?" + urlencode({"a": "quilt", "b": "claw", "session": sid,
                                               "repeat": 0}))
    assert "Run claw has no repeat 0 of this session." in missing.text
    assert client.get("/session?run=quilt").status_code == 400
    assert client.get("/session?" + urlencode({"run": "quilt", "session": "x"})
                      ).status_code == 404


def test_stored_text_is_escaped(tmp_path: Path) -> None:
    db = build_store(tmp_path / "h.duckdb")
    client = local_client(create_app(db))
    html = client.get("/session?run=run-a&session=s1&repeat=1").text
    assert "Check the INR log please." in html
    assert '<script>alert("x")</script>' not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html or \
        "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    # a run id and a query that look like HTML come back escaped too
    page = client.get("/runs/" + "%3Cscript%3Ex").text
    assert "<script>x" not in page and "&lt;script&gt;x" in page
    sql = run_sql(client, f"SELECT '{HOSTILE}' AS x").text
    assert "<b>not bold</b>" not in sql and "&lt;b&gt;not bold&lt;/b&gt;" in sql


# --------------------------------------------------------------------------- SQL


def test_sql_box_table_csv_and_guard(client: TestClient, store: Path, tmp_path: Path) -> None:
    q = "SELECT run_id, count(*) AS n FROM sessions GROUP BY run_id ORDER BY run_id"
    html = run_sql(client, q).text
    assert '<table id="result">' in html and "5 rows" in html
    res = run_sql(client, q, "/sql.csv")
    assert res.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(res.text)))
    assert rows == [["run_id", "n"], *[[str(a), str(b)] for a, b in _sql(store, q)]]
    drop = run_sql(client, "DROP TABLE runs").text
    assert "✗ query failed:" in drop and "read-only" in drop
    target = tmp_path / "leak.csv"
    copy = run_sql(client, f"COPY runs TO '{target}'").text
    assert "✗ query failed" in copy and not target.exists()
    assert _sql(store, "SELECT count(*) FROM runs")[0][0] == 5


# --------------------------------------------------------------------------- live, CLI


WRITER = """
import sys, time
from pathlib import Path
from benchpack.runtime.store import SessionRows, Store
db, go = Path(sys.argv[1]), Path(sys.argv[2])
store = Store(db)
store.upsert_run({"run_id": "live", "created_at": time.time(), "agent": "a",
                  "status": "running", "config": {}})
store.start()
print("ready", flush=True)
while not go.exists():
    time.sleep(0.02)
store.submit(SessionRows("live", "s1", 0, {
    "run_id": "live", "session_id": "s1", "repeat": 0, "name": "first", "status": "finished",
    "agent": "a", "protocol": "trigger_rubric"}))
store.flush()
print("written", store.yields, flush=True)
sys.stdin.read()  # holds the store (as a running `bench run` does) until the test ends
store.close()
"""


def test_sessions_appear_while_a_run_writes(tmp_path: Path) -> None:
    """Another process writes the store as `bench run` does: each page asks it to step aside,
    and a session committed after the first request shows on the next."""
    import subprocess
    import sys

    db, go = tmp_path / "live.duckdb", tmp_path / "go"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(go)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        client = local_client(create_app(db, wait_s=10))
        first = client.get("/runs/live")
        assert first.status_code == 200 and "0 session runs" in first.text
        go.touch()
        line = writer.stdout.readline().split()
        assert line[0] == "written" and int(line[1]) >= 1  # it stepped aside for the page
        again = client.get("/runs/live")
        assert "1 session run " in again.text and ">first</a>" in again.text
    finally:
        writer.communicate("", timeout=20)
    assert writer.returncode == 0


def test_cli_errors_are_one_line(tmp_path: Path, store: Path) -> None:
    code, out = _bench("view", "--db", tmp_path / "none.duckdb", "--no-browser")
    assert code == 1 and out.startswith("✗ ") and "no such store" in out
    assert len(out.strip().splitlines()) == 1
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, out = _bench("view", "--db", store, "--port", port, "--no-browser")
    assert code == 1 and out.strip() == (f"✗ --port {port}: is in use (pass another --port, "
                                         "or --port 0 for any free one)")


# --------------------------------------------------------------------------- browser


@contextlib.contextmanager
def _serve(app: object) -> Iterator[str]:
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,  # type: ignore[arg-type]
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


LONG_TASKS = """window.__longTasks = [];
try { new PerformanceObserver((list) => { for (const e of list.getEntries())
  window.__longTasks.push(Math.round(e.duration)); }).observe({type: "longtask", buffered: true});
} catch (e) {}"""
PAGE_TIMING = """() => { const n = performance.getEntriesByType("navigation")[0];
  return {dom_interactive_ms: Math.round(n.domInteractive),
          loaded_ms: Math.round(n.loadEventEnd), long_tasks_ms: window.__longTasks,
          turns_in_dom: document.querySelectorAll("li.turn").length}; }"""


@pytest.fixture
def served(store: Path) -> Iterator[str]:
    with _serve(create_app(store)) as url:
        yield url


@pytest.mark.slow
def test_pages_in_chromium(served: str, store: Path, tmp_path: Path) -> None:
    from test_html import BROWSER_FLAGS, find_chromium

    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium (install one, or set BENCHPACK_CHROMIUM)")
    sync_api = pytest.importorskip("playwright.sync_api")
    shots = Path(os.environ.get("BENCHPACK_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=BROWSER_FLAGS)
        try:
            tab = browser.new_page(viewport={"width": 1400, "height": 900})
            tab.add_init_script(LONG_TASKS)
            tab.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                   if m.type in ("error", "warning") else None)
            tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            tab.goto(served + "/")
            assert tab.locator("#runs tbody tr").count() == 5
            tab.wait_for_selector("#headline table")  # fetched after the page
            tab.screenshot(path=str(shots / "view-runs.png"), full_page=True)
            # a filter drop-down submits itself
            agent = _sql(store, "SELECT agent FROM runs WHERE run_id = 'claw'")[0][0]
            with tab.expect_navigation():
                tab.select_option("select[name=agent]", agent)
            assert tab.locator("#runs tbody tr").count() == 1
            tab.click("#runs a[href='/runs/claw']")
            tab.wait_for_selector("#sessions")
            with tab.expect_navigation():
                tab.select_option("select[name=repeat]", "1")
            assert tab.locator("#sessions tbody tr").count() == 2
            with tab.expect_navigation():
                tab.click("#sessions th a:has-text('verified')")
            tab.screenshot(path=str(shots / "view-sessions.png"), full_page=True)
            for run, css in (("pharm", ".ann.intent"), ("mussel", ".ann.stage"),
                             ("quilt", ".ann.trigger"), ("claw", "table.checklist")):
                tab.goto(f"{served}/runs/{run}")
                tab.click("#sessions tbody tr:first-child a")
                tab.wait_for_selector(css)
                assert tab.locator(css).first.is_visible()
                tab.screenshot(path=str(shots / f"view-transcript-{run}.png"), full_page=False)
                if run == "quilt":
                    assert tab.locator(".msg.assistant mark").count() >= 1
                    tab.screenshot(path=str(shots / "view-transcript.png"), full_page=False)
                    with tab.expect_navigation():
                        tab.click("form[action='/pair'] button")
                    assert tab.locator(".side").count() == 2
                    tab.screenshot(path=str(shots / "view-pair.png"), full_page=False)
            # two runs picked on the runs page: their comparison, bench compare's table fetched
            tab.goto(served + "/")
            assert tab.locator("[data-pick]").is_disabled()
            tab.check("input[name=run][value=quilt-done]")
            tab.check("input[name=run][value=quilt]")
            assert tab.locator("[data-pick]").is_enabled()
            with tab.expect_navigation():
                tab.click("[data-pick]")
            assert "/compare?a=quilt&b=quilt-done" in tab.url
            tab.wait_for_selector("#compare table")
            assert tab.locator("#pairs tbody tr").count() >= 1
            tab.screenshot(path=str(shots / "view-compare.png"), full_page=True)
            with tab.expect_navigation():
                tab.click("#pairs tbody tr:first-child a:has-text('open')")
            assert tab.locator(".side").count() == 2
            tab.goto(served + "/sql")
            tab.fill("textarea[name=q]", "SELECT run_id, agent FROM runs ORDER BY run_id")
            with tab.expect_navigation():
                tab.click("form.sql button")
            assert tab.locator("#result tbody tr").count() == 5
            assert tab.locator("#csv").is_visible()
            tab.screenshot(path=str(shots / "view-sql.png"), full_page=True)
            # a 500-turn transcript and a model call's prompt, from their own stores
            for name, build in (("long", long_store), ("calls", calls_store)):
                app = create_app(build(tmp_path / f"{name}.duckdb"))
                with _serve(app) as url:
                    if name == "long":
                        t = time.monotonic()
                        tab.goto(f"{url}/session?run=r&session=long&repeat=0")
                        tab.wait_for_selector("ol.transcript")
                        assert time.monotonic() - t < 5
                        assert tab.locator("li.turn").count() <= 101
                        # reported, not asserted (no timed assertions): how soon the page
                        # answers, and any main-thread task over 50 ms while it loads
                        timing = tab.evaluate(PAGE_TIMING)
                        print(f"\n500-turn transcript, turns 1–100: {timing}")
                        (shots / "view-long-timing.txt").write_text(f"{timing}\n")
                        with tab.expect_navigation():
                            tab.click("p.pager.turns a:has-text('401–500')")
                        assert tab.locator("text=question 500 第500轮").count() == 1
                        tab.screenshot(path=str(shots / "view-long.png"), full_page=False)
                    else:
                        tab.goto(f"{url}/session?run=r&session=s&repeat=0")
                        tab.click("details.calls > summary")
                        tab.locator("details.calltext > summary").nth(1).click()
                        tab.wait_for_selector("div.calltext")
                        assert "帮我订票 ***" in tab.locator("div.calltext").first.inner_text()
                        tab.screenshot(path=str(shots / "view-call.png"), full_page=False)
        finally:
            browser.close()
    assert problems == []
