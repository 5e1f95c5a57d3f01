"""Every score explains itself (issue 29): `explain.load` over real runs of the reference packs
(one per protocol, the demo agent and a "Done."-only agent), checked against the stored figures
— every formula's arithmetic redone here from the parts the explanation lists, so an
explanation that misreads the store fails — and by hand on small cases; the "why this score"
panel on `bench view`'s session page and in `bench report explain --format json`."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import duckdb
import pytest
from click.testing import CliRunner
from view_client import local_client

from benchpack.cli.main import cli
from benchpack.compiler import compile_pack
from benchpack.reports.explain import explain, load, load_many, substitute
from benchpack.reports.view.app import create_app
from benchpack.runtime.runner import RunOptions, run_plan
from benchpack.specs.formula import Formula, parse
from conftest import TASKPACKS

LONG_RUN = "nightly-regression-of-the-lab-ops-assistant-against-gpt-4o-mini-2024-07-18"
"""A run id and agent path longer than any column should be (the layout test)."""
RUNS = {  # run id → (pack, agent (None: "Done." only), simulator, sessions)
    "book": ("bookshop-service", "demo/agent.yaml", "scripted:demo/simulator.yaml",
             ["order-address", "cancel-by-mistake"]),
    "book-done": ("bookshop-service", None, "scripted:demo/simulator.yaml",
                  ["order-address", "cancel-by-mistake"]),
    "desk": ("claw-ops-desk", "demo/agent.yaml", "rules", []),
    "desk-done": ("claw-ops-desk", None, "rules", []),
    "claw": ("claw-lab-ops", "demo/agent.yaml", "rules", []),
    "claw-done": ("claw-lab-ops", None, "rules", []),
    "mussel": ("mussel-genome-search", "demo/agent.yaml", "scripted:demo/simulator.yaml", []),
    "pharm": ("pharmacist-week", "demo/agent.yaml", "rules", []),
    "quilt": ("proact-quilt-show", "demo/proactive_agent.yaml", "rules", []),
    "quilt-done": ("proact-quilt-show", None, "rules", []),
    LONG_RUN: ("claw-lab-ops", "LONG", "rules", []),
}
CLOSE = 1e-9


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("explain")
    db = tmp / "bench.duckdb"
    done = tmp / "done.yaml"
    done.write_text("default:\n" + '  - say: "Done."\n' * 12)
    deep = tmp / "agents" / "nightly" / "lab-ops" / "an-agent-that-only-ever-says-done.yaml"
    deep.parent.mkdir(parents=True)
    deep.write_text(done.read_text())
    plans: dict[str, Path] = {}
    for run_id, (pack, agent, sim, sessions) in RUNS.items():
        src = TASKPACKS / pack
        if pack not in plans:
            plans[pack] = tmp / pack
            res = compile_pack(src, plans[pack], use_cache=False)
            assert res.ok, [d.format() for d in res.diagnostics]
        simulator = f"scripted:{src / sim.split(':', 1)[1]}" if sim.startswith("scripted:") \
            else sim
        summary = run_plan(RunOptions(
            plan=plans[pack], judge="rules",
            agent=f"scripted:{deep if agent == 'LONG' else src / agent if agent else done}",
            db=db, progress=False, simulator=simulator, run_id=run_id, allow_python=True,
            cache_dir=tmp / "cache", sessions=sessions))
        assert summary.errors == 0, (run_id, summary)
    return db


def _all(db: Path) -> list[dict[str, Any]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        keys = con.execute("SELECT run_id, session_id, repeat FROM sessions ORDER BY ALL"
                           ).fetchall()
        out = [load(con, *k) for k in keys]
    finally:
        con.close()
    assert all(x is not None for x in out)
    return out  # type: ignore[return-value]


def _one(db: Path, run: str, name: str) -> dict[str, Any]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        sid = con.execute("SELECT session_id FROM sessions WHERE run_id = ? AND name = ?",
                          [run, name]).fetchone()[0]
        x = load(con, run, sid, 0)
    finally:
        con.close()
    assert x is not None
    return x


def _part(x: dict[str, Any], kind: str) -> dict[str, Any]:
    found = [p for p in x["parts"] if p["kind"] == kind]
    assert found, (kind, [p["kind"] for p in x["parts"]])
    return found[0]


def _near(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), abs_tol=CLOSE)


def _wmean(pairs: list[tuple[float, float]]) -> float | None:
    total = sum(w for w, _ in pairs)
    return sum(w * v for w, v in pairs) / total if total else None


# --------------------------------------------------------------------------- by hand


def test_substitute_replaces_whole_component_names_only() -> None:
    values = {"completion": 0.5, "completion2": 1, "安全": 0, "robustness": None}
    assert substitute("安全 * max(0.8 * completion + 0.2 * robustness, completion2)", values) \
        == "0 * max(0.8 * 0.5 + 0.2 * unknown, 1)"
    assert substitute("if(x > 0.5, x, 0)", {"x": 2 / 3}) == "if(0.6667 > 0.5, 0.6667, 0)"


def test_hand_made_rows_give_hand_computed_formulas() -> None:
    s = {"run_id": "r", "session_id": "s", "repeat": 0, "protocol": "verified_outcome",
         "status": "finished", "score": 0.5, "passed": False, "comp": 0.5,
         "extra": json.dumps({"verify": {"outcome": 0.6, "process": 1.0, "uncapped": 0.72,
                                         "unscored": 0, "outcome_weight": 0.7,
                                         "pass_threshold": 0.75,
                                         "caps": [{"id": "no-delete", "cap": 0.5,
                                                   "reason": "deleted", "detail": "1 call"}]}})}
    items = [{"item_id": "a", "text": "A", "grader": "rule", "score": 1.0, "weight": 3.0,
              "aspect": "outcome", "detail": "ok", "error": None},
             {"item_id": "b", "text": "B", "grader": "rule", "score": 0.0, "weight": 2.0,
              "aspect": "outcome", "detail": "no", "error": None},
             {"item_id": "c", "text": "C", "grader": "rubric", "score": 1.0, "weight": 1.0,
              "aspect": "process", "detail": "yes", "error": None},
             {"item_id": "d", "text": "D", "grader": "rubric", "score": None, "weight": 1.0,
              "aspect": "process", "detail": "", "error": "judge error"}]
    x = explain(s, checklist=items)
    v = _part(x, "verify")
    # outcome (3·1 + 2·0)/5 = 0.6; 0.7·0.6 + 0.3·1 = 0.72; capped at 0.5; 0.5 < 0.75
    assert v["formula"].splitlines() == [
        "outcome = (3·1 + 2·0) / 5 = 0.6", "process = (1·1) / 1 = 1",
        "soft score = 0.7·outcome + 0.3·process = 0.7·0.6 + 0.3·1 = 0.72",
        "capped: min(0.72, 0.5) = 0.5"]
    assert v["verdict"] == "0.5 < 0.75: failed"
    c = _part(x, "checklist")
    # COMP: mean of the three scored items (1 + 0 + 1)/3, the judge error left out
    assert c["formula"].startswith("COMP = mean of 3 scored items = (1 + 0 + 1) / 3 = 0.5")
    assert "1 unscored item left out" in c["formula"]


def test_unknown_reward_is_unknown_never_zero() -> None:
    s = {"run_id": "r", "session_id": "s", "repeat": 0, "status": "finished", "score": None,
         "passed": None, "extra": json.dumps({"reward": {
             "basis": ["state", "assertions"], "components": {"state": 1.0, "assertions": None},
             "score": None, "passed": None, "pass_threshold": 1.0,
             "assertions": [{"text": "polite", "score": None, "detail": "",
                             "error": "judge error"}]}})}
    p = _part(explain(s), "reward")
    assert p["formula"] == "reward = state × assertions = 1 × unknown = unknown"
    assert p["verdict"] == "pass unknown"


# --------------------------------------------------------------------------- real runs


def test_every_explanation_redoes_the_stored_figures(store: Path) -> None:
    """Each formula's result is the stored figure, and the parts listed give it."""
    kinds: set[str] = set()
    for x in _all(store):
        assert x["parts"], x["session_id"]
        for p in x["parts"]:
            kinds.add(p["kind"])
            if p["kind"] == "reward":
                comps = {c["name"]: c["value"] for c in p["components"]}
                basis = [c["name"] for c in p["components"] if c["counts"]]
                assert _near(math.prod(comps[b] for b in basis), x["score"])
                assert p["passed"] == (x["score"] >= p["pass_threshold"])
            elif p["kind"] == "score":
                values = {i["id"]: i["value"] for i in p["items"]}
                values |= {d["name"]: d["value"] for d in p["dimensions"]}
                for d in p["dimensions"]:
                    ws = dict(zip(d["items"], d["weights"], strict=True))
                    assert _near(_wmean([(ws[i], values[i]) for i in d["items"]]), d["value"])
                formula = parse(p["expression"])
                assert isinstance(formula, Formula)
                assert _near(formula.evaluate(values), p["uncapped"])
                final = 0.0 if p["gates"] else min([p["uncapped"], *(c["cap"]
                                                                     for c in p["caps"])])
                assert _near(final, x["score"]) and p["passed"] == x["passed"]
            elif p["kind"] == "verify":
                ow = p["outcome_weight"]
                assert _near(ow * p["outcome"] + (1 - ow) * p["process"], p["uncapped"])
                assert _near(min([p["uncapped"], *(c["cap"] for c in p["caps"])]), x["score"])
                assert p["passed"] == (x["score"] >= p["pass_threshold"])
            elif p["kind"] == "checklist":
                counted = [i["counted"] for i in p["items"] if i["counted"] is not None]
                assert _near(sum(counted) / len(counted), p["value"])
            elif p["kind"] == "intents":
                c = p["counts"]
                own = [i for i in p["intents"] if not i["pooled_from"]]
                assert _near((c["completed"] + c["inferred"]) / len(own), p["value"])
            elif p["kind"] == "graph":
                gt, pred = p["ground_truth"], p["predicted"]
                assert _near(sum(bool(g["matched"]) for g in gt) / len(gt), p["recall"])
                if pred:
                    assert _near(sum(x_["supports"] for x_ in pred) / len(pred),
                                 p["precision"])
                P, R = p["precision"], p["recall"]
                if P and R:
                    assert _near(2 * P * R / (P + R), p["value"])
            elif p["kind"] == "triggers":
                scores = [t["score"] for t in p["triggers"] if t["score"] is not None]
                assert _near(sum(scores) / len(scores), p["value"])
    assert kinds == {"reward", "score", "verify", "checklist", "intents", "graph", "triggers"}


def test_tau2_reward_shows_the_state_diff_and_unmatched_gold_actions(store: Path) -> None:
    done = _part(_one(store, "book-done", "order-address"), "reward")
    assert done["value"] == 0.0 and done["passed"] is False
    assert done["formula"] == "reward = state × actions = 0 × 0 = 0"
    assert done["verdict"] == "0 < 1: failed"
    # the pack's data: the order's address the customer asked for vs the one left in place
    change = {c["path"]: (c["expected"], c["got"]) for c in done["state"]["changes"]}
    assert change["address.address1"] == ("48 Cedar Hollow Road", "649 Harbor Avenue")
    assert [(a["tool"], a["passed"]) for a in done["actions"]] == [
        ("find_user_id_by_name_zip", False), ("modify_pending_order_address", False)]
    good = _part(_one(store, "book", "order-address"), "reward")
    assert good["formula"] == "reward = state × actions = 1 × 1 = 1"
    assert good["state"]["passed"] is True and good["state"]["changes"] == []
    assert all(a["passed"] for a in good["actions"])


def test_score_block_substitutes_its_formula_and_names_item_rationales(store: Path) -> None:
    done = _part(_one(store, "desk-done", "invoice-scam"), "score")
    assert done["formula"].splitlines()[0] == (
        "safety * max(0.8 * completion + 0.2 * robustness, completion) = "
        "1 * max(0.8 * 0 + 0.2 * 0, 0) = 0")
    assert done["verdict"] == "0 < 0.7: failed"
    items = {i["id"]: i for i in done["items"]}
    assert items["no-iban-forwarded"]["gate"] is True and items["no-iban-forwarded"]["value"] == 1
    assert items["reply-quality"]["rationale"].startswith("rules (keyword heuristic)")
    assert items["fraud-ticket"]["text"].startswith("A high or urgent ticket")
    good = _part(_one(store, "desk", "invoice-scam"), "score")
    assert good["value"] == 1.0 and good["passed"] is True


# --------------------------------------------------------------------------- surfaces


def test_session_page_has_the_panel_for_every_protocol(store: Path) -> None:
    client = local_client(create_app(store))
    con = duckdb.connect(str(store), read_only=True)
    try:
        rows = con.execute("SELECT run_id, min(session_id) FROM sessions GROUP BY 1").fetchall()
    finally:
        con.close()
    want = {"book-done": ["reward", "state-diff", "actions"], "desk-done": ["score", "items"],
            "claw": ["verify", "checklist-xp"], "mussel": ["graph", "triples-gt"],
            "pharm": ["intents", "checklist-xp"], "quilt": ["triggers", "triggers-xp"]}
    for run, sid in rows:
        if run not in want:
            continue
        html = client.get("/session?" + urlencode({"run": run, "session": sid,
                                                   "repeat": 0})).text
        assert '<details class="explain" id="explain" open>' in html, run
        kind, *tables = want[run]
        assert f'data-part="{kind}"' in html, run
        for table in tables:
            assert f'class="xp {table}"' in html, (run, table)


def test_report_explain_json_and_session_filter(store: Path) -> None:
    res = CliRunner().invoke(cli, ["report", "explain", "--db", str(store), "--run", "desk-done",
                                   "--session", "invoice-*", "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    [x] = data["explanations"]
    assert x["name"] == "invoice-scam" and x["score"] == 0.0
    assert _part(x, "score")["items"]
    assert [r["part"] for r in data["tables"][0]["rows"]] == ["score"]
    table = CliRunner().invoke(cli, ["report", "explain", "--db", str(store), "--run",
                                     "book-done"])
    assert table.exit_code == 0 and "state × actions" in table.output


# --------------------------------------------------------------------------- browser


@pytest.mark.slow
def test_panel_in_chromium_for_every_protocol(store: Path, tmp_path: Path) -> None:
    """Each protocol's session page answers "why" on screen: the panel open, its formula and
    its items visible (screenshots in $BENCHPACK_SCREENSHOTS when set)."""
    import os

    from test_html import BROWSER_FLAGS, find_chromium
    from test_view import _serve

    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium (install one, or set BENCHPACK_CHROMIUM)")
    sync_api = pytest.importorskip("playwright.sync_api")
    shots = Path(os.environ.get("BENCHPACK_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    visible = {  # run → the elements that must be on screen
        "book-done": ["[data-part=reward] pre.xp-formula", "table.state-diff",
                      "table.actions .xp-no"],
        "desk-done": ["[data-part=score] pre.xp-formula", "table.dimensions", "table.items"],
        "claw": ["[data-part=verify] pre.xp-formula", "table.checklist-xp"],
        "mussel": ["[data-part=graph] pre.xp-formula", "table.triples-gt"],
        "pharm": ["[data-part=intents] pre.xp-formula", "table.intents"],
        "quilt": ["[data-part=triggers] pre.xp-formula", "table.triggers-xp"],
    }
    con = duckdb.connect(str(store), read_only=True)
    try:
        first = dict(con.execute("SELECT run_id, min(session_id) FROM sessions GROUP BY 1"
                                 ).fetchall())
    finally:
        con.close()
    problems: list[str] = []
    with _serve(create_app(store)) as url, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=BROWSER_FLAGS)
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            for run, css in visible.items():
                tab.goto(url + "/session?" + urlencode({"run": run, "session": first[run],
                                                        "repeat": 0}))
                for sel in css:
                    el = tab.locator(f"details.explain {sel}").first
                    el.scroll_into_view_if_needed()
                    assert el.is_visible(), (run, sel)
                tab.locator("details.explain").screenshot(path=str(shots /
                                                                   f"explain-{run}.png"))
            # navigation: next in the sorted list, a transcript search, the timeline
            tab.goto(url + "/runs/pharm?sort=comp&desc=1")
            with tab.expect_navigation():
                tab.click("#sessions tbody tr:first-child a")
            assert "session run 1 of 8" in tab.locator("#session-nav").inner_text()
            with tab.expect_navigation():
                tab.click("#session-nav a[rel=next]")
            assert "session run 2 of 8" in tab.locator("#session-nav").inner_text()
            tab.fill("#session-nav input[name=q]", "brennan")
            with tab.expect_navigation():
                tab.click("#session-nav button")
            assert tab.locator("#hits ol.hits li").count() >= 1
            with tab.expect_navigation():
                tab.click("#hits ol.hits li:first-child a")
            assert tab.locator("li.turn:target").count() == 1
            assert tab.locator("li.turn:target").is_visible()
            tab.click("details.timeline > summary")
            assert tab.locator("table.timeline tr.ev-turn").first.is_visible()
            tab.screenshot(path=str(shots / "nav-timeline.png"), full_page=False)
        finally:
            browser.close()
    assert problems == [], "\n".join(problems)


OFF_SCREEN = """(sel) => { const w = document.documentElement.clientWidth; const out = [];
  for (const t of document.querySelectorAll(sel)) {
    const wrap = t.closest('.table-wrap');
    if (wrap && wrap.scrollWidth > wrap.clientWidth + 1)
      out.push(`${sel}: scrolls ${wrap.scrollWidth} > ${wrap.clientWidth}`);
    for (const th of t.querySelectorAll('th')) {
      const r = th.getBoundingClientRect();
      if (r.right > w + 1) out.push(`${sel}: column "${th.textContent.trim()}" ends at ${r.right} > ${w}`);
    }
  }
  return out; }"""


def test_no_headline_column_off_screen_at_1280_and_1920(store: Path, tmp_path: Path) -> None:
    """The runs, sessions and run-pair pages at 1280 and 1920 px: every column header within the
    window and no table scrolling sideways (a long run id and agent path included); long text is
    cut with its whole in the title. Screenshots: $BENCHPACK_SCREENSHOTS or the test's tmp."""
    import os

    from test_html import BROWSER_FLAGS, find_chromium
    from test_view import _serve

    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium (install one, or set BENCHPACK_CHROMIUM)")
    sync_api = pytest.importorskip("playwright.sync_api")
    shots = Path(os.environ.get("BENCHPACK_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    pages = {"runs": ("/", ["#runs", "#headline table"], "#headline table"),
             "sessions": (f"/runs/{LONG_RUN}", ["#sessions"], None),
             "compare": (f"/compare?a=claw&b={LONG_RUN}", ["#compare table", "#pairs"],
                         "#compare table")}
    problems: list[str] = []
    with _serve(create_app(store)) as url, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=BROWSER_FLAGS)
        try:
            for width in (1280, 1920):
                tab = browser.new_page(viewport={"width": width, "height": 900})
                for name, (path, tables, wait) in pages.items():
                    tab.goto(url + path)
                    if wait:
                        tab.wait_for_selector(wait)
                    for sel in tables:
                        assert tab.locator(sel).count() >= 1, (name, sel)
                        problems += [f"{width}px {name} {p}" for p in
                                     tab.evaluate(OFF_SCREEN, sel)]
                    tab.screenshot(path=str(shots / f"layout-{name}-{width}.png"),
                                   full_page=True)
                # cut text keeps its whole in the title
                tab.goto(url + "/")
                cell = tab.locator(f"#runs a[title='{LONG_RUN}']")
                assert cell.count() == 1
                assert "an-agent-that-only-ever-says-done.yaml" in tab.locator(
                    "#runs td.agent .clip").first.get_attribute("title")  # type: ignore[operator]
                tab.close()
        finally:
            browser.close()
    assert problems == [], "\n".join(problems)


# --------------------------------------------------------------------------- navigation


def _links(html: str) -> list[str]:
    import html as htmllib
    import re

    return [htmllib.unescape(h) for h in re.findall(r'href="(/session\?[^"]+)"', html)]


def test_next_and_previous_walk_the_filtered_sorted_list(store: Path) -> None:
    """From the first session of a filtered, sorted list, `next →` visits every session run of
    that list once, in the list's order, and `← previous` walks back."""
    import html as htmllib
    import re

    client = local_client(create_app(store))
    listing = client.get("/runs/pharm?sort=comp&desc=1&status=finished").text
    order = _links(listing)
    assert len(order) == 8 and all("l.sort=comp" in h and "l.desc=1" in h for h in order)
    key = re.compile(r"session=([^&]+)&repeat=(\d+)")
    want = [key.search(h).groups() for h in order]  # type: ignore[union-attr]
    seen, page = [], client.get(order[0]).text
    for k in range(len(order)):
        here = re.search(r'name="session" value="([^"]+)"', page)
        assert here is not None
        seen.append(here.group(1))
        assert f"session run {k + 1} of 8 in the filtered list" in page
        nxt = re.search(r'<a rel="next"[^>]*href="([^"]+)"', page)
        if k == len(order) - 1:
            assert nxt is None and '<span class="dim">next →</span>' in page
            break
        assert nxt is not None
        page = client.get(htmllib.unescape(nxt.group(1))).text
    assert [(s, "0") for s in seen] == want
    back = re.search(r'<a rel="prev"[^>]*href="([^"]+)"', page)
    assert back is not None and key.search(htmllib.unescape(back.group(1))).groups() \
        == want[-2]  # type: ignore[union-attr]
    # the run's crumb goes back to the same list
    assert 'href="/runs/pharm?status=finished&amp;sort=comp&amp;desc=1"' in page
    # opened directly (no list): the run's sessions by name
    direct = client.get("/session?" + urlencode({"run": "pharm", "session": want[0][0],
                                                 "repeat": 0})).text
    assert "of 8 in this run" in direct


def test_transcript_search_finds_every_message_and_links_its_turn(store: Path,
                                                                  tmp_path: Path) -> None:
    from test_view_calls import long_store

    client = local_client(create_app(long_store(tmp_path / "long.duckdb")))
    # Chinese and case-insensitive; a hit on a later page links to that page and turn
    page = client.get("/session?run=r&session=long&repeat=0&q=第250轮").text
    assert "1 message contains “第250轮”" in page
    assert "turns=2&amp;q=" in page and "#t-250" in page
    assert 'id="t-1"' in page  # every turn of the page has its anchor
    assert '<mark>第250轮</mark>' in page
    many = client.get("/session?run=r&session=long&repeat=0&q=QUESTION").text
    assert "500 messages contain “QUESTION” (the first 50 listed)" in many
    none = client.get("/session?run=r&session=long&repeat=0&q=nowhere").text
    assert "0 messages contain “nowhere”" in none
    con = duckdb.connect(str(store), read_only=True)
    try:
        sid, want = con.execute(
            "SELECT session_id, count(*) FROM messages WHERE run_id = 'book-done' AND "
            "strpos(lower(content), 'order') > 0 GROUP BY 1 ORDER BY 1 LIMIT 1").fetchone()
    finally:
        con.close()
    hit = local_client(create_app(store)).get("/session?" + urlencode(
        {"run": "book-done", "session": sid, "repeat": 0, "q": "ORDER"})).text
    assert f"{want} message{'s' * (want != 1)} contain{'s' * (want == 1)} “ORDER”" in hit


def test_timeline_lists_every_timed_event_in_order(store: Path) -> None:
    import re

    con = duckdb.connect(str(store), read_only=True)
    try:
        sid = con.execute("SELECT min(session_id) FROM sessions WHERE run_id = 'book'"
                          ).fetchone()[0]
        counts = {t: con.execute(f"SELECT count(*) FROM {t} WHERE run_id = 'book' AND "
                                 "session_id = ? AND started_at IS NOT NULL", [sid]
                                 ).fetchone()[0] for t in ("turns", "tool_calls", "llm_calls")}
    finally:
        con.close()
    page = local_client(create_app(store)).get("/session?" + urlencode(
        {"run": "book", "session": sid, "repeat": 0})).text
    rows = re.findall(r'<tr class="ev-(\w+)"><td class="num">([\d.]+)</td>', page)
    kinds = [k for k, _ in rows]
    assert kinds.count("turn") == counts["turns"] > 0
    assert kinds.count("tool") == counts["tool_calls"] > 0
    assert kinds.count("model") == counts["llm_calls"]
    at = [float(x) for _, x in rows]
    assert at == sorted(at) and at[0] == 0.0


def test_html_report_drilldown_has_the_same_panel(store: Path) -> None:
    """`bench report --format html`: each drilled-down session carries the panel `bench view`
    shows for it (the same HTML but its id: the page holds many sessions)."""
    import re

    from benchpack.reports.api import ReportOptions, render_report
    from benchpack.reports.html_explain import panel_html

    runs = ["book-done", "desk-done", "claw", "mussel", "pharm", "quilt"]
    page = render_report(ReportOptions(db=store, names=["summary"], runs=runs), "html")
    panels = re.findall(r'<details class="explain"( open)?><summary>Why this score', page)
    con = duckdb.connect(str(store), read_only=True)
    try:
        n = con.execute("SELECT count(*) FROM sessions WHERE list_contains(?, run_id)",
                        [runs]).fetchone()[0]
        sid = con.execute("SELECT session_id FROM sessions WHERE run_id = 'book-done' AND "
                          "name = 'order-address'").fetchone()[0]
        x = load(con, "book-done", sid, 0)
    finally:
        con.close()
    assert len(panels) == n
    assert x is not None and panel_html(x, anchor=None) in page
    for kind in ("reward", "score", "verify", "checklist", "intents", "graph", "triggers"):
        assert f'data-part="{kind}"' in page, kind
    assert 'id="explain"' not in page


def test_a_run_imported_from_tau2_explains_with_its_own_checks() -> None:
    """`bench import-run tau2` keeps τ²'s reward_info: the explanation lists its action,
    communicate and assertion checks (our own record in that shape, hand-made)."""
    info = {"reward": 0.0, "db_check": {"db_match": False, "db_reward": 0.0},
            "action_checks": [{"action": {"action_id": "x1", "name": "book_table",
                                          "arguments": {"party": 4}},
                               "action_match": False, "action_reward": 0.0}],
            "communicate_checks": [{"info": "18:30", "met": True, "justification": "said"}],
            "nl_assertions": [{"nl_assertion": "Offers the terrace", "met": False,
                               "justification": "never mentioned"}],
            "reward_basis": ["DB", "COMMUNICATE"]}
    s = {"run_id": "r", "session_id": "s", "repeat": 0, "status": "finished", "score": 0.0,
         "passed": False, "extra": json.dumps({
             "tau2": {"reward_info": info},
             "reward": {"basis": ["state", "communicate"],
                        "components": {"state": 0.0, "communicate": 1.0}, "score": 0.0,
                        "passed": False}})}
    p = _part(explain(s), "reward")
    assert p["formula"] == "reward = state × communicate = 0 × 1 = 0"
    assert p["state"]["passed"] is False and p["state"]["changes"] == []
    assert p["actions"] == [{"id": "x1", "tool": "book_table", "passed": False,
                             "detail": '{"party": 4}'}]
    assert p["communicate"][0]["passed"] is True
    assert p["assertions"][0]["score"] == 0.0 and p["source"] == "imported from τ²-bench"
    from benchpack.reports.html_explain import panel_html

    html = panel_html(explain(s))
    assert "book_table" in html and "never mentioned" in html and "not how" in html


def test_explanations_read_in_one_pass_equal_those_read_one_by_one(store: Path) -> None:
    """`load_many` (the explain report: each table read once for all sessions) gives, for
    every session attempt of every protocol here, what `load` reads for it alone; a key with
    no such attempt is None, in its place."""
    con = duckdb.connect(str(store), read_only=True)
    try:
        keys = [(str(r), str(s), int(k)) for r, s, k in con.execute(
            "SELECT run_id, session_id, repeat FROM sessions ORDER BY ALL DESC").fetchall()]
        missing = (keys[0][0], "no-such-session", 0)
        many = load_many(con, [*keys[:3], missing, *keys[3:]])
        alone = [load(con, *k) for k in keys]
        assert load_many(con, []) == []
    finally:
        con.close()
    assert many[3] is None and len(keys) > 5
    assert [*many[:3], *many[4:]] == alone
    assert {x["protocol"] for x in alone if x} >= {"intent_tracking", "trigger_rubric"}
