"""`bench view`'s run-pair page (`/compare`, issue 17) and `bench compare`'s links to it: the
page shows the figures `bench compare` prints (its own table, not a second computation), every
session run of a metric with each run's value, discordant first, linked side by side; the
not-comparable banner; a pair without common sessions says so."""

from __future__ import annotations

import html as htmllib
import json
import re
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import duckdb
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient
from view_client import local_client

from benchpack.cli.main import cli
from benchpack.compiler import compile_pack
from benchpack.reports.view.app import create_app
from conftest import TASKPACKS

BASE = "http://127.0.0.1:8765"


def _bench(*args: str | Path) -> tuple[int, str]:
    res = CliRunner().invoke(cli, [str(a) for a in args])
    return res.exit_code, res.output


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """claw-lab-ops (2 tasks × 3 repeats) with its demo agent and a "Done." agent, and
    proact-quilt-show (trigger rubrics) with both: real `bench run`s, rules judge."""
    tmp = tmp_path_factory.mktemp("view-compare")
    db = tmp / "bench.duckdb"
    done = tmp / "done.yaml"
    done.write_text("default:\n" + '  - say: "Done."\n' * 12)
    for pack, repeats, demo in (("claw-lab-ops", "3", "demo/agent.yaml"),
                                ("proact-quilt-show", "1", "demo/proactive_agent.yaml")):
        src, plan = TASKPACKS / pack, tmp / pack
        assert compile_pack(src, plan, use_cache=False).ok
        short = pack.split("-")[0] if pack.startswith("claw") else "quilt"
        for run_id, agent in ((f"{short}-demo", src / demo), (f"{short}-done", done)):
            code, out = _bench("run", plan, "--quiet", "--db", db, "--judge", "rules",
                               "--simulator", "rules", "--agent", f"scripted:{agent}",
                               "--run-id", run_id, "--repeats", repeats)
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


def _rows(html: str) -> list[list[str]]:
    """The cells' text of the page's session-run table."""
    body = html.split('<table class="pairs"', 1)[1].split("</tbody>", 1)[0]
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r,
                                                                   re.S)]
            for r in body.split("<tr")[2:]]


def _pair_links(html: str) -> list[str]:
    return [htmllib.unescape(h) for h in re.findall(r'href="(/pair\?[^"]+)"', html)]


def test_page_shows_the_figures_bench_compare_prints(client: TestClient, store: Path) -> None:
    from benchpack.reports.compare import CompareOptions, build
    from benchpack.reports.html import table_html

    page = client.get("/compare?a=claw-demo&b=claw-done")
    assert page.status_code == 200, page.text
    from benchpack.reports.access import open_store

    with open_store(store) as con:
        expected = table_html(build(con, CompareOptions(["claw-demo", "claw-done"])
                                     ).tables[0], "compare")
    # bench compare's own table, not a second computation: fetched once the page shows (its
    # bootstrap takes seconds on a large store)
    assert expected not in page.text
    src = re.search(r'data-fragment="(/compare/table\?[^"]+)"', page.text)
    assert src, page.text
    frag = client.get(htmllib.unescape(src.group(1)), headers={"X-Fragment": "1"})
    assert frag.status_code == 200 and "<html" not in frag.text and expected in frag.text
    assert expected in client.get(htmllib.unescape(src.group(1))).text  # without JS: a page
    assert "NOT COMPARABLE" not in page.text + frag.text
    # the session runs of the first metric (verified score), by hand from the store
    rows = _rows(page.text)
    scores = {(sid, rep, run): v for sid, rep, run, v in _sql(
        store, "SELECT name, repeat, run_id, score FROM sessions WHERE run_id LIKE 'claw-%'")}
    assert len(rows) == 6  # 2 tasks × 3 repeats, each once
    for name, rep, a, b, delta, differs, link in rows:
        va, vb = scores[(name, int(rep), "claw-demo")], scores[(name, int(rep), "claw-done")]
        assert (a, b) == (f"{100 * va:.1f}", f"{100 * vb:.1f}")
        assert delta == f"{100 * (vb - va):+.1f}" and differs == "differs" and link == "open"
    # discordant first, then the largest |Δ|
    deltas = [abs(float(r[4])) for r in rows]
    assert deltas == sorted(deltas, reverse=True)
    # the two means bench compare pairs (repeats averaged, then over tasks), from the rows
    doc = json.loads(_bench("compare", "claw-demo", "claw-done", "--db", store, "--format",
                            "json")[1])
    row = next(r for r in doc["tables"][0]["rows"] if r["metric"] == "verified score")
    by_task: dict[str, list[tuple[float, float]]] = {}
    for name, _, a, b, *_ in rows:
        by_task.setdefault(name, []).append((float(a), float(b)))
    mean_a = sum(sum(x for x, _ in v) / len(v) for v in by_task.values()) / len(by_task)
    mean_b = sum(sum(y for _, y in v) / len(v) for v in by_task.values()) / len(by_task)
    assert mean_a == pytest.approx(100 * row["a"]["value"], abs=0.1)
    assert mean_b == pytest.approx(100 * row["b"]["value"], abs=0.1)
    assert "6 session runs in both runs, 6 scored differently" in page.text
    # pass/fail: McNemar's b = 6 (passed in the baseline only): all six discordant
    pass_ = client.get("/compare?a=claw-demo&b=claw-done&metric=pass").text
    assert "6 discordant (passed in one run only)" in pass_
    assert [r[5] for r in _rows(pass_)] == ["discordant"] * 6


def test_sorting_and_every_link_resolves(client: TestClient) -> None:
    page = client.get("/compare?a=claw-demo&b=claw-done&sort=label").text
    names = [r[0] for r in _rows(page)]
    assert names == sorted(names)
    desc = client.get("/compare?a=claw-demo&b=claw-done&sort=delta&desc=1").text
    deltas = [float(r[4]) for r in _rows(desc)]
    assert deltas == sorted(deltas, reverse=True)
    links = _pair_links(page)
    assert len(links) == 6
    for link in links:
        res = client.get(link)
        assert res.status_code == 200 and res.text.count('class="side"') == 2
        assert "has no repeat" not in res.text
    assert client.get("/compare?a=claw-demo&b=claw-done&sort=x").status_code == 400
    assert client.get("/compare?a=claw-demo&b=claw-done&metric=f1").status_code == 400
    assert client.get("/compare?a=claw-demo").status_code == 400
    assert client.get("/compare?a=claw-demo&b=claw-demo").status_code == 400
    assert client.get("/compare?a=claw-demo&b=nope").status_code == 404
    assert client.get("/compare/table?a=claw-demo&b=nope").status_code == 404
    assert client.get("/compare/table?a=claw-demo").status_code == 400


def test_runs_page_picks_two_runs(client: TestClient) -> None:
    runs = client.get("/").text
    assert 'action="/compare"' in runs and 'name="run" value="claw-done"' in runs
    # the older run is the baseline, whichever was ticked first
    res = client.get("/compare?run=claw-done&run=claw-demo", follow_redirects=False)
    assert res.status_code == 303
    assert res.headers["location"] == "/compare?a=claw-demo&b=claw-done"
    gone = client.get("/compare?run=claw-done&run=nope")  # deleted since the page was shown
    assert gone.status_code == 404 and "no run 'nope'" in htmllib.unescape(gone.text)
    one = client.get("/compare?run=claw-done")
    assert one.status_code == 400 and "pick exactly two runs to compare (1 picked)" in \
        htmllib.unescape(one.text)


def test_trigger_metric_session_means(client: TestClient, store: Path) -> None:
    page = client.get("/compare?a=quilt-demo&b=quilt-done&metric=trigger_score").text
    rows = _rows(page)
    means = {(n, r): v for n, r, v in _sql(
        store, "SELECT split_part(t.session_id, '.', -1), t.repeat, avg(t.score) FROM "
               "triggers t JOIN sessions s USING (run_id, session_id, repeat) WHERE t.run_id = "
               "'quilt-demo' AND s.ablation IS NULL AND t.label IN ('PASS', 'PARTIAL', 'FAIL') "
               "GROUP BY ALL")}
    assert len(rows) == len(means) > 1
    assert len({r[0] for r in rows}) == len(rows)  # variants of one name told apart
    for name, rep, a, b, *_ in rows:
        assert a == f"{100 * means[(name, int(rep))]:.1f}"
        assert b == "0.0"  # "Done." fails every trigger: 0, not left out
    assert "mean over its judged triggers" in page


def test_incomparable_pair_is_bannered_and_no_common_session_said(client: TestClient,
                                                                 store: Path) -> None:
    page = client.get("/compare?a=claw-demo&b=quilt-demo").text
    assert "⚠ NOT COMPARABLE" in page and 'class="note banner"' in page
    code, out = _bench("compare", "claw-demo", "quilt-demo", "--db", store,
                       "--allow-incomparable", "--format", "md", "--view-url", "")
    assert code == 0, out
    banner = next(line[2:] for line in out.splitlines() if "NOT COMPARABLE" in line)
    assert htmllib.escape(banner, quote=False) in page.replace("&#39;", "'")  # compare's words
    frag = client.get("/compare/table?a=claw-demo&b=quilt-demo", headers={"X-Fragment": "1"})
    assert frag.status_code == 200 and "NOT COMPARABLE" not in frag.text  # said once
    assert "pack: claw-demo claw-lab-ops" in htmllib.unescape(page)
    assert ("Runs claw-demo and quilt-demo have no session run in common with a verified "
            "score: nothing to pair (the rows below are in one run only)") in page
    rows = _rows(page)
    assert len(rows) == 6 and {r[5] for r in rows} == {"only in the baseline"}
    assert {r[3] for r in rows} == {"—"}


def test_bench_compare_names_the_view_addresses(client: TestClient, store: Path) -> None:
    code, out = _bench("compare", "claw-demo", "claw-done", "--db", store, "--format", "md")
    assert code == 0, out
    assert f"> bench view: {BASE}/compare?a=claw-demo&b=claw-done" in out
    table = out.split("## Sessions that differ most", 1)[1]
    links = re.findall(rf"{re.escape(BASE)}(/pair\?\S+?) \|", table)
    assert len(links) == 6  # every session run differs; each listed once
    for link in links:
        res = client.get(link)
        assert res.status_code == 200 and "has no repeat" not in res.text
    assert client.get("/compare?a=claw-demo&b=claw-done").status_code == 200
    # terminal: the line too; HTML: real links
    code, out = _bench("compare", "claw-demo", "claw-done", "--db", store,
                       "--view-url", "http://view.example:9000/")
    assert code == 0 and "bench view: http://view.example:9000/compare?a=claw-demo&b=" \
                         "claw-done" in out
    code, out = _bench("compare", "claw-demo", "claw-done", "--db", store, "--format", "html")
    assert f'<a href="{BASE}/compare?a=claw-demo&amp;b=claw-done">' in out
    hrefs = [htmllib.unescape(h) for h in re.findall(rf'<a href="({re.escape(BASE)}/pair[^"]+)"',
                                                     out)]
    assert len(hrefs) == 6
    assert all(client.get(urlsplit(h).path + "?" + urlsplit(h).query).status_code == 200
               for h in hrefs)
    # no links asked for: neither the line nor the list
    code, out = _bench("compare", "claw-demo", "claw-done", "--db", store, "--view-url", "",
                       "--format", "md")
    assert code == 0 and "bench view" not in out and "differ most" not in out


def test_runs_that_do_not_differ_say_so(tmp_path: Path, store: Path) -> None:
    import shutil

    db = tmp_path / "same.duckdb"
    shutil.copy(store, db)
    con = duckdb.connect(str(db))
    for table in ("runs", "sessions", "checklist_results"):
        cols = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
        sel = ", ".join("'claw-copy'" if c == "run_id" else f'"{c}"' for c in cols)
        con.execute(f"INSERT INTO {table} SELECT {sel} FROM {table} WHERE run_id = 'claw-demo'")
    con.close()
    code, out = _bench("compare", "claw-demo", "claw-copy", "--db", db, "--format", "md")
    assert code == 0, out
    assert "no session run differs from the baseline" in out
    page = local_client(create_app(db)).get("/compare?" + urlencode({"a": "claw-demo",
                                                                   "b": "claw-copy"})).text
    assert "6 session runs in both runs, 0 scored differently" in page


def test_terminal_prints_each_address_whole(client: TestClient, store: Path) -> None:
    """A folded address is no address: in the terminal table the link column holds a
    reference, and each address follows on a line of its own, never cut (the terminal wraps
    it, and still recognises it)."""
    res = CliRunner().invoke(cli, ["compare", "claw-demo", "claw-done", "--db", str(store)],
                             env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    pair_lines = [ln for ln in lines if "/pair?" in ln]
    assert len(pair_lines) == 6
    for ln in pair_lines:
        url = ln[ln.index("http"):].strip()
        assert url.endswith(("repeat=0", "repeat=1", "repeat=2")), ln
        assert client.get(url[len(BASE):]).status_code == 200
    assert any(ln.strip().startswith("bench view: " + BASE + "/compare?a=claw-demo&b=claw-done")
               for ln in lines)


def test_a_page_installs_only_the_views_it_reads(store: Path) -> None:
    from benchpack.reports.access import open_store

    with open_store(store, views=("session_results", "trigger_results")) as con:
        names = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() "
                                           "WHERE temporary AND NOT internal").fetchall()}
        assert names == {"session_results", "trigger_results"}
        assert con.execute("SELECT count(*) FROM trigger_results").fetchone()[0] > 0
    with open_store(store) as con:  # every view, as before
        assert con.execute("SELECT count(*) FROM duckdb_views() WHERE temporary AND NOT "
                           "internal").fetchone()[0] > 10
