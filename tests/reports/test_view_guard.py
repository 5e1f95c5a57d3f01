"""Issue 27: `bench view` cannot be driven from another site, and its SQL box cannot take it
down. Before: any Host was served (a DNS-rebinding page could read every transcript), no
Origin was checked and `GET /sql?q=…` ran any page's query; a query had no time limit and ran
on after its client left; while one SQL request ran every other answered 500; SIGTERM did not
stop the viewer."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from starlette.testclient import TestClient
from store_fixture import build_store
from view_client import local_client, run_sql

from benchpack.reports.view.app import create_app

SLOW = "SELECT count(*) FROM range(10000000000000)"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_store(tmp_path_factory.mktemp("guard") / "h.duckdb")


@pytest.fixture(scope="module")
def client(db: Path) -> TestClient:
    return local_client(create_app(db))


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "[::1]:8765",
                                  "localhost"])
def test_localhost_names_are_served(db: Path, host: str) -> None:
    app = create_app(db)
    res = TestClient(app, base_url=f"http://{host}").get("/")
    assert res.status_code == 200


@pytest.mark.parametrize("host", ["evil.example:8765", "127.0.0.1.evil.example", "attacker",
                                  ""])
def test_a_rebinding_host_is_refused(db: Path, host: str) -> None:
    app = create_app(db)
    res = TestClient(app).get("/runs/run-a", headers={"host": host})
    assert res.status_code == 403
    assert "is not a name this viewer is served under" in res.text
    assert "run-a" not in res.text.split("Host", 1)[0]  # nothing of the store


def test_a_cross_origin_request_is_refused(client: TestClient) -> None:
    res = client.get("/runs/run-a", headers={"origin": "http://evil.example"})
    assert res.status_code == 403 and "another site" in res.text
    res = client.get("/runs/run-a", headers={"origin": "null"})
    assert res.status_code == 403
    # a script of another site (fetch metadata, no Origin: a no-cors image, say)
    res = client.get("/compare?a=run-a&b=run-b", headers={"sec-fetch-site": "cross-site",
                                                          "sec-fetch-mode": "no-cors",
                                                          "sec-fetch-dest": "image"})
    assert res.status_code == 403
    # the page's own requests, and a link followed from elsewhere, are served
    assert client.get("/runs/run-a", headers={"origin": "http://127.0.0.1"}).status_code == 200
    assert client.get("/runs/run-a", headers={"sec-fetch-site": "cross-site",
                                              "sec-fetch-mode": "navigate"}).status_code == 200


def test_sql_runs_only_from_its_form(client: TestClient) -> None:
    page = client.get("/sql?" + urlencode({"q": "SELECT 41 + 1 AS answer"})).text
    assert "SELECT 41 + 1 AS answer" in page and '<table id="result">' not in page
    assert 'id="not-run"' in page
    forged = client.post("/sql", data={"q": "SELECT 41 + 1 AS answer", "token": "guess"})
    assert forged.status_code == 403 and "42" not in forged.text
    cross = client.post("/sql", data={"q": "SELECT 1", "token": "x"},
                        headers={"origin": "http://evil.example"})
    assert cross.status_code == 403
    assert client.get("/sql.csv?" + urlencode({"q": "SELECT 1"})).status_code == 405
    ran = run_sql(client, "SELECT 41 + 1 AS answer").text
    assert '<table id="result">' in ran and "<td class=\"txt\">42</td>" in ran


def test_a_query_has_a_time_limit(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHPACK_LIMIT_VIEW_QUERY_SECONDS", "1")
    client = local_client(create_app(db))
    started = time.monotonic()
    page = run_sql(client, SLOW).text
    assert time.monotonic() - started < 10
    assert "✗ query stopped: it ran past 1 s, the viewer&#39;s limit" in page or \
        "✗ query stopped: it ran past 1 s, the viewer's limit" in page, page[-600:]


def test_csv_rows_are_limited(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHPACK_LIMIT_VIEW_CSV_ROWS", "10")
    client = local_client(create_app(db))
    assert run_sql(client, "SELECT * FROM range(10)", "/sql.csv").status_code == 200
    big = run_sql(client, "SELECT * FROM range(11)", "/sql.csv")
    assert big.status_code == 413 and "bench query" in big.text


def test_other_requests_answer_while_a_query_runs(db: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """One slow query, meanwhile a page, a second query and a CSV: all answer (each request
    has its own connection with the same fixed settings; a `SET` on one had locked the others
    out: 500)."""
    monkeypatch.setenv("BENCHPACK_LIMIT_VIEW_QUERY_SECONDS", "4")
    client = local_client(create_app(db))
    slow = threading.Thread(target=run_sql, args=(client, SLOW))
    slow.start()
    time.sleep(0.5)
    try:
        assert client.get("/").status_code == 200
        other = run_sql(client, "SELECT count(*) AS n FROM runs")
        assert other.status_code == 200 and '<table id="result">' in other.text
        assert run_sql(client, "SELECT 1 AS one", "/sql.csv").text == "one\n1\n"
    finally:
        slow.join(20)


def test_the_access_token_with_host(db: Path) -> None:
    """`--host`: any name, but only with the printed token (kept in a cookie)."""
    app = create_app(db, hosts=frozenset({"*"}), token="s3cret-token")
    client = TestClient(app, base_url="http://benchbox.lan:8765")
    assert client.get("/").status_code == 403
    first = client.get("/?token=s3cret-token", follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/"
    assert "bench_view_token=s3cret-token" in first.headers["set-cookie"]
    assert client.get("/").status_code == 200  # the cookie, from now on
    other = TestClient(app, base_url="http://benchbox.lan:8765")
    assert other.get("/?token=wrong").status_code == 403
    link = other.get("/runs/run-a?status=finished&token=s3cret-token", follow_redirects=False)
    assert link.headers["location"] == "/runs/run-a?status=finished"  # the rest kept


# --------------------------------------------------------------------------- a real server


@contextlib.contextmanager
def _bench_view(db: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "benchpack.cli", "view", "--db", str(db),
                             "--port", str(port), "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("bench view: http://127.0.0.1:")
        deadline = time.monotonic() + 30
        while True:  # printed before it listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        yield proc, f"127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def _post_sql(address: str, token: str, q: str) -> socket.socket:
    """Send the SQL form as a browser would, leaving the socket open (no answer read)."""
    body = urlencode({"q": q, "token": token}).encode()
    sock = socket.create_connection(tuple(address.split(":")))  # type: ignore[arg-type]
    sock.sendall(b"POST /sql HTTP/1.1\r\nHost: " + address.encode() + b"\r\nContent-Type: "
                 b"application/x-www-form-urlencoded\r\nContent-Length: "
                 + str(len(body)).encode() + b"\r\n\r\n" + body)
    return sock


def _token(address: str) -> str:
    import urllib.request

    with urllib.request.urlopen(f"http://{address}/sql", timeout=10) as page:
        found = re.search(r'name="token" value="([^"]+)"', page.read().decode())
    assert found
    return found.group(1)


def _busy_cpu(pid: int, seconds: float = 1.0) -> float:
    """CPU seconds `pid` used over `seconds` of wall time."""
    def ticks() -> int:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    before = ticks()
    time.sleep(seconds)
    return (ticks() - before) / os.sysconf("SC_CLK_TCK")


def test_a_query_stops_when_its_client_leaves(db: Path) -> None:
    with _bench_view(db) as (proc, address):
        sock = _post_sql(address, _token(address), SLOW)
        time.sleep(1.0)
        assert _busy_cpu(proc.pid) > 0.3  # the query runs
        sock.close()  # the page was closed
        time.sleep(1.0)
        assert _busy_cpu(proc.pid) < 0.2  # and stopped with it


def test_sigterm_stops_the_viewer_during_a_query(db: Path) -> None:
    with _bench_view(db) as (proc, address):
        sock = _post_sql(address, _token(address), SLOW)
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        finally:
            sock.close()
        assert proc.returncode is not None
